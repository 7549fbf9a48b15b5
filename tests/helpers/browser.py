"""Start the app headless and drive it in Debian's Chromium with Playwright (for tests and screenshots)."""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--no-first-run",
]


def chromium_executable(nice: int = 0) -> str:
    """Debian's Chromium, started the way a normal user's browser runs (``nice``: at that
    scheduling priority, e.g. to stand for browsers on other machines in a benchmark).

    As root, Chromium raises the priority of its GPU (software compositing), IO and
    compositor threads to nice -8, above the Streamlit server and the training processes
    it is supposed to be watching; a normal user cannot do that. The tests and benchmarks
    run as root here, so the browser is started without that right (``CAP_SYS_NICE``).
    """
    as_root = os.geteuid() == 0 and Path("/usr/bin/setpriv").exists()
    if not as_root and not nice:
        return CHROMIUM
    command = f"/usr/bin/setpriv --inh-caps=-sys_nice --bounding-set=-sys_nice {CHROMIUM}" if as_root else CHROMIUM
    if nice:
        command = f"/usr/bin/nice -n {int(nice)} {command}"
    wrapper = Path(tempfile.gettempdir()) / f"attention-playground-chromium{f'-nice{int(nice)}' if nice else ''}"
    text = f'#!/bin/sh\nexec {command} "$@"\n'
    if not wrapper.exists() or wrapper.read_text() != text:
        tmp = wrapper.with_suffix(f".{os.getpid()}")
        tmp.write_text(text)
        tmp.chmod(0o755)
        tmp.replace(wrapper)
    return str(wrapper)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def app_server(runs_dir: Path, port: int | None = None, timeout: float = 60.0,
               env: dict[str, str] | None = None, root: Path = ROOT) -> Iterator[str]:
    """``streamlit run app.py`` on 127.0.0.1 (``env``: added to its environment) from the checkout at ``root``;
    yields its URL once /_stcore/health answers ok."""
    with app_process(runs_dir, port, timeout, env, root) as (url, _proc):
        yield url


@contextlib.contextmanager
def app_process(runs_dir: Path, port: int | None = None, timeout: float = 60.0,
                env: dict[str, str] | None = None, root: Path = ROOT) -> Iterator[tuple[str, subprocess.Popen]]:
    """:func:`app_server`, yielding its process too (e.g. to kill it as a machine dying would)."""
    port = port or free_port()
    env = {**os.environ, "ATTENTION_PLAYGROUND_RUNS": str(runs_dir), **(env or {})}
    cmd = [sys.executable, "-m", "streamlit", "run", "app.py", "--server.address", "127.0.0.1", "--server.port",
           str(port), "--server.headless", "true", "--browser.gatherUsageStats", "false",
           "--server.fileWatcherType", "none"]
    proc = subprocess.Popen(cmd, cwd=root, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    log: list[bytes] = []  # drained all along: a full pipe would block the server (and its jobs) on their next log line
    threading.Thread(target=lambda: log.extend(iter(proc.stdout.readline, b"")), daemon=True).start()
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + timeout
        while True:
            try:
                with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as r:
                    if r.read().strip() == b"ok":
                        break
            except OSError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"streamlit did not start:\n{b''.join(log).decode(errors='replace')[-3000:]}")
            time.sleep(0.2)
        yield url, proc
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()


@contextlib.contextmanager
def browser_page(width: int = 1400, height: int = 1000):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw, launch_chromium(pw) as browser:
        yield learner_page(browser, width=width, height=height)


@contextlib.contextmanager
def launch_chromium(pw):
    """Chromium for several learners (``learner_page``: a context each), closed at the end."""
    browser = pw.chromium.launch(executable_path=chromium_executable(), args=CHROMIUM_ARGS)
    try:
        yield browser
    finally:
        browser.close()


def learner_page(browser, timeout_ms: float = 60_000, width: int = 1400, height: int = 1000):
    """A page in a browser context of its own: its own cookies and session, as another learner's laptop."""
    page = browser.new_context(viewport={"width": width, "height": height}).new_page()
    page.set_default_timeout(timeout_ms)
    return page


def open_as_new_learner(page, url: str, path: str = "") -> str:
    """Open the page ``path`` (default: Home) of a shared server without a link: a new workspace.
    Returns the workspace's private link to Home (``<url>/?w=<token>``)."""
    page.goto(f"{url}/{path}")
    page.wait_for_url(re.compile(r"[?&]w="))
    return f"{url}/?w={re.search(r'[?&]w=([^&]+)', page.url)[1]}"


def upload_csv(page, csv_path: Path, epochs: int) -> None:
    """On the Train page (opened from the learner's address, ``page.url``, if another is shown),
    upload ``csv_path`` and set the epochs."""
    if "/Train?" not in page.url:
        page.goto(page.url.replace("/?", "/Train?", 1))
    main = page.get_by_test_id("stMain")
    main.get_by_text("Upload a CSV").click()
    main.get_by_text("CSV with a text column").wait_for()
    # The CSV's box, not the runs list's "Upload a run (.zip …)" further down (drawn too once the page is whole)
    page.locator("[data-testid=stFileUploaderDropzoneInput][accept*='.csv']").set_input_files(str(csv_path))
    main.get_by_text(f"{csv_path.name}: utf-8").wait_for()
    box = main.get_by_label("Epochs", exact=True)
    box.fill(str(epochs))
    box.press("Tab")


def custom_without_patience(page, epochs: int) -> None:
    """On the Train page: the Custom preset (the default's values, every field open), ``epochs`` epochs and
    patience off, so that the training lasts all its epochs (the default preset stops by patience, after
    as few as 5 epochs on a small CSV). Its run is named custom-<data>."""
    main = page.get_by_test_id("stMain")
    main.get_by_test_id("stRadio").get_by_text("Custom", exact=True).click()
    patience = main.get_by_label("Patience (epochs, 0 = none)", exact=True)
    patience.and_(page.locator(":enabled")).wait_for()  # the form redrawn with Custom's fields open
    for label, value in (("Epochs", epochs), ("Patience (epochs, 0 = none)", 0)):
        box = main.get_by_label(label, exact=True)
        box.fill(str(value))
        box.press("Tab")


def settled(page, timeout_ms: float = 60_000) -> None:
    """Wait until the page's script has finished its run (Streamlit marks the app's root)."""
    page.locator("[data-testid=stApp][data-test-script-state=notRunning]").wait_for(timeout=timeout_ms)


def start_training(page) -> None:
    page.get_by_test_id("stMain").get_by_role("button", name="Start training").click()


def picker_options(page, combobox=None, timeout: float = 30.0) -> list[str]:
    """The choices of a selectbox or multiselect as the learner sees them when opening it (default: the
    sidebar's model picker); the dropdown is closed again. Clicked again until it opens: a click while
    the page's script is still drawing may open a dropdown that the next redraw closes."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    box = combobox or page.get_by_test_id("stSidebar").get_by_role("combobox", name="Model", exact=True)
    listbox = page.get_by_role("listbox").or_(page.get_by_text("No options to select"))
    deadline = time.monotonic() + timeout
    while True:
        if box.get_attribute("aria-expanded") != "true":
            box.click()
        try:
            listbox.first.wait_for(timeout=3_000)
            break
        except PlaywrightTimeout:
            if time.monotonic() > deadline:
                raise
    if not page.get_by_text("No options to select").count():  # a listbox: its options may come a moment after it
        page.get_by_role("option").first.wait_for(timeout=10_000)  # (seen once: [] read from an opened listbox)
    options = [o.strip() for o in page.get_by_role("option").all_inner_texts()]
    page.keyboard.press("Escape")
    listbox.first.wait_for(state="detached")
    return options


E2E = [  # the marks of a browser test module: `pytestmark = E2E`
    pytest.mark.e2e,
    pytest.mark.skipif(
        not Path(CHROMIUM).exists() and not os.environ.get("CI"),
        reason="needs Debian's chromium (scripts/test.sh installs it; CI always runs this)",
    ),
]
SHOTS = os.environ.get("E2E_SCREENSHOTS")  # a folder for screenshots of the browser tests (the README's pictures)


def shot(page, name: str) -> None:
    """A full-page screenshot ``name.png`` in ``$E2E_SCREENSHOTS``, when it is set."""
    if SHOTS:
        Path(SHOTS).mkdir(parents=True, exist_ok=True)
        page.wait_for_timeout(800)  # let plotly finish its transition before the picture
        page.screenshot(path=str(Path(SHOTS) / f"{name}.png"), full_page=True)


def learner_csv(folder: Path, name: str) -> Path:
    """small.csv (the seed's 39 reviews) under the learner's name: their run is named after it."""
    path = folder / f"{name}.csv"
    shutil.copyfile(ROOT / "data" / "small.csv", path)
    return path


def no_traceback(page) -> None:
    error = page.get_by_test_id("stException")
    assert not error.count(), error.first.inner_text()


@contextlib.contextmanager
def screenshots_on_failure(folder: Path, pages: dict):
    """On an exception, a full-page screenshot of each page in ``folder``, while the server still runs."""
    try:
        yield
    except BaseException:
        folder.mkdir(parents=True, exist_ok=True)
        for name, page in pages.items():
            with contextlib.suppress(Exception):
                page.screenshot(path=str(folder / f"{name}.png"), full_page=True)
        print(f"screenshots of the learners' pages: {folder}")
        raise
