"""Private workspaces (attention_core.workspaces): isolation, tokens, publishing, caps, traversal."""

from __future__ import annotations

import json
import math
import os
import shutil
from pathlib import Path

import pytest

from attention_core.errors import InputError, RunError
from attention_core.run_folders import delete_run, list_runs, rename_run
from attention_core.runs import load_run
from attention_core.workspaces import (
    KEY_LENGTH,
    LOCAL_KEY,
    WorkspaceError,
    WorkspaceStore,
    is_teacher,
    is_teacher_email,
    is_token,
    new_token,
    published_name,
    teacher_emails,
    token_key,
    user_key,
    verified_email,
)

BUNDLED = Path(__file__).resolve().parents[2] / "data" / "default_run"


def put_run(folder: Path, name: str) -> Path:
    """A real run (the bundled one's files) saved as ``folder/name``."""
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / name
    shutil.copytree(BUNDLED, target)
    (target / "preview.json").unlink()
    return target


def names(paths) -> set[str]:
    return {p.name for p in paths}


def two_workspaces(root: Path):
    """A shared store over ``root`` and two new visitors' workspaces."""
    store = WorkspaceStore(root, shared=True)
    return store, store.for_token(None)[0], store.for_token(None)[0]


def disk_text(root: Path) -> list[str]:
    """Every path under ``root`` and the text of every JSON file there."""
    return [str(p) for p in root.rglob("*")] + [p.read_text(errors="ignore") for p in root.rglob("*.json")]


def test_local_mode_is_the_runs_root_as_today(tmp_path):
    store = WorkspaceStore.from_env("unused", {"ATTENTION_PLAYGROUND_RUNS": str(tmp_path)})
    assert not store.shared
    ws = store.local()
    assert ws.key == LOCAL_KEY and ws.runs_dir == tmp_path
    put_run(tmp_path, "mine")
    assert names(list_runs(ws.runs_dir)) == {"mine"}
    assert not (tmp_path / "workspaces").exists() and not (tmp_path / "published").exists()
    assert WorkspaceStore.from_env(tmp_path / "default", {}).root == tmp_path / "default"


@pytest.mark.parametrize("value, shared", [("1", True), ("true", True), ("0", False), ("", False)])
def test_shared_mode_is_turned_on_by_the_environment_or_the_config(tmp_path, value, shared):
    assert WorkspaceStore.from_env(tmp_path, {"ATTENTION_PLAYGROUND_SHARED": value}).shared is shared
    assert WorkspaceStore.from_env(tmp_path, {}, shared=True).shared


def test_tokens_are_128_random_bits_in_a_strict_form():
    tokens = {new_token() for _ in range(200)}
    assert len(tokens) == 200 and all(is_token(t) for t in tokens)
    assert all(len(t) == 22 for t in tokens)  # 22 base64 characters: 132 bits ≥ 128
    for bad in (None, "", "abc", "../../etc/passwd", "a" * 21, "a" * 23, "a" * 21 + "/", "a" * 21 + ".",
                "ä" * 22, "a" * 21 + "\0", 12345, "a" * 10_000):
        assert not is_token(bad), bad


def test_a_malformed_or_missing_token_gives_a_new_empty_workspace(tmp_path):
    store = WorkspaceStore(tmp_path, shared=True)
    a, token_a = store.for_token(None)
    put_run(a.runs_dir, "a-run")
    for bad in (None, "", "../..", "x" * 500, token_a + "x", token_a[:-1]):
        ws, token = store.for_token(bad)
        assert is_token(token) and token != bad and token != token_a
        assert ws.key != a.key and list_runs(ws.runs_dir) == []
    unknown, token = store.for_token(new_token())  # well-formed but never seen: empty, not an error
    assert list_runs(unknown.runs_dir) == []


def test_a_token_keeps_its_workspace_and_never_reaches_the_disk(tmp_path):
    store = WorkspaceStore(tmp_path, shared=True)
    a, token = store.for_token(None)
    put_run(a.runs_dir, "kept")
    again, same = WorkspaceStore(tmp_path, shared=True).for_token(token)  # a reload, or a server restart
    assert same == token and again == a and names(list_runs(again.runs_dir)) == {"kept"}
    assert len(a.key) == KEY_LENGTH and a.key == token_key(token) and all(c in "0123456789abcdef" for c in a.key)
    assert a.runs_dir == tmp_path / "workspaces" / a.key
    assert not any(token in s for s in disk_text(tmp_path))


def test_workspaces_are_isolated(tmp_path):
    store, a, b = two_workspaces(tmp_path)
    put_run(a.runs_dir, "a-secret")
    put_run(b.runs_dir, "b-own")
    assert names(list_runs(a.runs_dir)) == {"a-secret"}
    assert names(list_runs(b.runs_dir)) == {"b-own"}
    assert list_runs(store.root) == []  # the root holds workspaces, not runs
    with pytest.raises(RunError):  # B's runs folder has no A run to rename or delete, by any name
        delete_run(b.runs_dir, "a-secret")
    for sneaky in ("../" + a.key + "/a-secret", f"../../workspaces/{a.key}/a-secret", "/" + str(a.runs_dir / "a-secret")):
        with pytest.raises(RunError):
            delete_run(b.runs_dir, sneaky)
        with pytest.raises(RunError):
            rename_run(b.runs_dir, sneaky, "mine")
    assert (a.runs_dir / "a-secret" / "config.json").is_file()


def test_signed_in_users_have_a_workspace_by_issuer_and_subject(tmp_path):
    store = WorkspaceStore(tmp_path, shared=True)
    ada = store.for_user("https://accounts.example", "123", "ada@example.org")
    assert ada.label == "ada@example.org" and len(ada.key) == KEY_LENGTH
    assert store.for_user("https://accounts.example", "123", "Ada").key == ada.key
    assert store.for_user("https://other.example", "123", "x").key != ada.key
    assert user_key("a", "bc") != user_key("ab", "c")  # the parts are kept apart
    assert user_key("iss", "sub") != token_key(new_token())


def test_a_published_run_shows_the_authors_label_and_never_the_token(tmp_path):
    store = WorkspaceStore(tmp_path, shared=True)
    teacher, token = store.for_token(None)
    put_run(teacher.runs_dir, "demo")
    published = store.publish(teacher, "demo")
    assert published.label == teacher.label and published.path == store.published_dir / "demo"
    [listed] = store.published_runs()
    assert (listed.name, listed.label) == ("demo", teacher.label)
    load_run(listed.path)  # a whole run, which loads
    assert store.is_published(listed.path) and not store.is_published(teacher.runs_dir / "demo")
    assert not any(token in s for s in disk_text(tmp_path))
    assert (teacher.runs_dir / "demo").is_dir()  # a copy: the author keeps theirs


def test_learners_cannot_change_a_published_run(tmp_path):
    store, teacher, learner = two_workspaces(tmp_path)
    put_run(teacher.runs_dir, "demo")
    store.publish(teacher, "demo")
    assert list_runs(learner.runs_dir) == []  # not in their own runs, where rename and delete act
    for attempt in ("demo", "../../published/demo", "../published/demo"):
        with pytest.raises(RunError):
            delete_run(learner.runs_dir, attempt)
        with pytest.raises(RunError):
            rename_run(learner.runs_dir, attempt, "taken")
    assert names(list_runs(store.published_dir)) == {"demo"}


def test_publishing_refuses_a_name_taken_a_link_or_a_missing_run(tmp_path):
    store, a, b = two_workspaces(tmp_path)
    put_run(a.runs_dir, "demo")
    put_run(b.runs_dir, "demo")
    store.publish(a, "demo")
    with pytest.raises(WorkspaceError, match="published already"):
        store.publish(b, "demo")
    assert store.published_runs()[0].label == a.label  # the first publication unchanged
    with pytest.raises(WorkspaceError, match="no run named"):
        store.publish(b, "missing")
    os.symlink(a.runs_dir / "demo", b.runs_dir / "linked")  # B's link to A's run
    with pytest.raises(WorkspaceError, match="no run named"):
        store.publish(b, "linked")
    leaky = put_run(b.runs_dir, "leaky")
    (leaky / "vocab.json").unlink()
    os.symlink("/etc/passwd", leaky / "vocab.json")
    with pytest.raises(WorkspaceError, match="link"):
        store.publish(b, "leaky")
    assert names(list_runs(store.published_dir)) == {"demo"}
    assert not [p for p in store.published_dir.iterdir() if p.name.startswith(".run-copying")]


@pytest.mark.parametrize("name", ["..", "../x", "a/b", "/etc", ".hidden", "", "x" * 81, "a\0b", "a\\b"])
def test_names_from_a_visitor_go_through_the_run_name_checks(tmp_path, name):
    store = WorkspaceStore(tmp_path, shared=True)
    a, _ = store.for_token(None)
    put_run(a.runs_dir, "demo")
    with pytest.raises(InputError):
        store.publish(a, name)
    with pytest.raises(InputError):
        store.unpublish(name)
    assert not store.published_dir.exists() or list_runs(store.published_dir) == []


def test_unpublish_removes_only_the_copy(tmp_path):
    store = WorkspaceStore(tmp_path, shared=True)
    a, _ = store.for_token(None)
    put_run(a.runs_dir, "demo")
    store.publish(a, "demo")
    store.unpublish("demo")
    assert store.published_runs() == [] and [p.name for p in store.published_dir.iterdir()] == []
    assert names(list_runs(a.runs_dir)) == {"demo"}
    with pytest.raises(WorkspaceError, match="no published run"):
        store.unpublish("demo")
    store.publish(a, "demo")  # and again
    assert [p.name for p in store.published_runs()] == ["demo"]


def test_a_published_run_is_labelled_as_the_teachers(tmp_path):
    """Only the teacher publishes: learners read "by the teacher", not the label of the teacher's link's workspace."""
    store = WorkspaceStore(tmp_path, shared=True)
    teacher, _ = store.for_token(None)
    ada = store.for_user("https://idp.example", "1", "Ada")
    put_run(teacher.runs_dir, "demo")
    put_run(ada.runs_dir, "hers")
    assert teacher.label.startswith("learner ")
    assert store.publish(teacher, "demo").choice == "📌 demo — by the teacher"
    assert store.publish(ada, "hers").choice == "📌 hers — by the teacher (Ada)"
    assert sorted(r.choice for r in store.published_runs()) == ["📌 demo — by the teacher", "📌 hers — by the teacher (Ada)"]
    assert [published_name(r.choice) for r in store.published_runs()] == [r.name for r in store.published_runs()]
    assert published_name("demo") is None and published_name(None) is None


def test_a_link_to_another_workspaces_run_is_answered_as_a_run_that_does_not_exist(tmp_path):
    store, alice, bob = two_workspaces(tmp_path)
    put_run(bob.runs_dir, "mine")
    with pytest.raises(RunError) as nobody_has_it:
        store.run_from_link(bob, "alice-run")
    put_run(alice.runs_dir, "alice-run")
    with pytest.raises(RunError) as alice_has_it:
        store.run_from_link(bob, "alice-run")
    answer = str(alice_has_it.value)
    assert answer == str(nobody_has_it.value)
    assert "mine" not in answer and alice.key not in answer  # no name of any workspace's
    assert store.run_from_link(alice, "alice-run") == "alice-run"


def test_a_workspace_is_empty_until_something_is_saved_in_it(tmp_path):
    store = WorkspaceStore(tmp_path, shared=True)
    a, _ = store.for_token(None)
    assert store.is_empty(a)
    a.runs_dir.mkdir(parents=True)
    assert store.is_empty(a)
    put_run(a.runs_dir, "demo")
    assert not store.is_empty(a)


def test_a_published_label_that_cannot_be_read_shows_as_unknown(tmp_path):
    store = WorkspaceStore(tmp_path, shared=True)
    a, _ = store.for_token(None)
    put_run(a.runs_dir, "demo")
    store.publish(a, "demo")
    (store.published_dir / ".demo.json").write_text(json.dumps(["not", "a", "dict"]))
    assert store.published_runs()[0].label == "unknown author"


def test_the_teacher_token_is_compared_exactly_and_required():
    assert is_teacher("s3cret-teacher", "s3cret-teacher")
    assert not is_teacher("s3cret-teache", "s3cret-teacher")
    assert not is_teacher("", "") and not is_teacher(None, None) and not is_teacher("x", None)
    assert not is_teacher("", "s3cret-teacher")


def test_a_disk_cap_says_what_to_delete(tmp_path):
    run_mb = sum(f.stat().st_size for f in BUNDLED.iterdir() if f.name != "preview.json") / 2**20
    cap = math.ceil(run_mb * 1.5)  # room for one run, not two
    store = WorkspaceStore.from_env(tmp_path, {"ATTENTION_PLAYGROUND_SHARED": "1", "ATTENTION_PLAYGROUND_RUNS": str(tmp_path),
                                               "ATTENTION_PLAYGROUND_WORKSPACE_MB": str(cap)})
    a, _ = store.for_token(None)
    b, _ = store.for_token(None)
    store.check_space(a)  # empty: room
    put_run(a.runs_dir, "big-one")
    store.check_space(a)  # at the cap is fine
    assert store.usage(a) == pytest.approx(run_mb * 2**20, rel=1e-6)
    with pytest.raises(WorkspaceError, match=r"limit is \d+ MB — delete runs .*'big-one'"):
        store.check_space(a, adding=int(run_mb * 2**20))
    store.check_space(b, adding=int(run_mb * 2**20))  # another workspace's space is its own


@pytest.mark.parametrize("value", ["0", "-5", "lots", "nan"])
def test_a_bad_cap_setting_is_a_clear_error(tmp_path, value):
    with pytest.raises(WorkspaceError, match="ATTENTION_PLAYGROUND_WORKSPACE_MB"):
        WorkspaceStore.from_env(tmp_path, {"ATTENTION_PLAYGROUND_WORKSPACE_MB": value})
    assert WorkspaceStore.from_env(tmp_path, {"ATTENTION_PLAYGROUND_WORKSPACE_MB": ""}).cap_bytes is None


def test_a_planted_link_to_another_workspace_is_not_listed(tmp_path):
    store, a, b = two_workspaces(tmp_path)
    put_run(a.runs_dir, "a-secret")
    b.runs_dir.mkdir(parents=True)
    os.symlink(a.runs_dir / "a-secret", b.runs_dir / "peek")
    assert list_runs(b.runs_dir) == [] and store.usage(b) == 0


def test_teacher_emails_from_the_environment_or_a_list_and_a_bad_entry_says_so():
    assert teacher_emails(" Ada@School.example,bob@school.example, ") == {"ada@school.example", "bob@school.example"}
    assert teacher_emails(["Ada@School.example"]) == {"ada@school.example"}
    assert teacher_emails(None) == teacher_emails("") == frozenset()
    for bad in ("ada", "ada@school.example, bob", ["a@b@c"], ["x y@z"], [3], 3):
        with pytest.raises(WorkspaceError, match="teacher e-mail") as err:
            teacher_emails(bad)
        assert "ATTENTION_PLAYGROUND_TEACHER_EMAILS" in err.value.hint or "teacher_emails" in err.value.hint


@pytest.mark.parametrize("claims, email", [
    ({"email": "Ada@School.example", "email_verified": True}, "ada@school.example"),
    ({"email": "ada@school.example", "email_verified": "true"}, "ada@school.example"),  # a provider that sends text
    ({"email": "ada@school.example"}, "ada@school.example"),  # no claim (e.g. Entra ID): the provider is trusted
    ({"email": "ada@school.example", "email_verified": False}, None),  # typed, never proved
    ({"email": "ada@school.example", "email_verified": "false"}, None),
    ({"email": "ada@school.example", "email_verified": None}, None),
    ({"email": "ada@school.example", "email_verified": 1}, None),
    ({"email_verified": True}, None),
    ({"email": "not-an-address", "email_verified": True}, None),
])
def test_only_an_email_the_provider_verified_or_did_not_qualify_is_trusted(claims, email):
    assert verified_email(claims) == email
    assert is_teacher_email(claims, frozenset({"ada@school.example"})) is (email is not None)


def test_a_teacher_email_is_compared_whole_and_needs_a_list():
    claims = {"email": "ada@school.example.evil", "email_verified": True}
    assert not is_teacher_email(claims, frozenset({"ada@school.example"}))
    assert not is_teacher_email({"email": "ada@school.example"}, frozenset())


def test_a_typed_token_or_link_is_read_strictly(tmp_path):
    from attention_core.workspaces import token_from_link

    store, token = WorkspaceStore(tmp_path, shared=True), new_token()
    for given in (token, f" {token}\n", f"http://localhost:8501/?w={token}", f"https://class.example/Train?x=1&w={token}#top"):
        assert token_from_link(given) == token
        assert store.for_link(given) == store.for_token(token)[0]
    for bad in ("", "abc", f"{token}x", f"http://h/?w={token}&w={new_token()}", f"http://h/?teacher={token}",
                f"http://h/{token}", "http://h/?w=../../etc/passwd"):
        with pytest.raises(WorkspaceError, match="neither a workspace token nor a private link"):
            store.for_link(bad)


def test_a_run_of_a_workspace_is_found_by_a_plain_name_only(tmp_path):
    store, a, b = two_workspaces(tmp_path)
    put_run(a.runs_dir, "mine")
    assert store.find_run(a, "mine") == a.runs_dir / "mine"
    with pytest.raises(WorkspaceError, match="no run named 'mine'") as err:
        store.find_run(b, "mine")
    assert "mine" not in err.value.hint  # b is not told of a's runs
    (b.runs_dir).mkdir(parents=True)
    (b.runs_dir / "link").symlink_to(a.runs_dir / "mine")
    with pytest.raises(WorkspaceError, match="no run named 'link'"):
        store.find_run(b, "link")
    for bad in ("../" + a.key, "..", "a/b", "x" * 81, ""):
        with pytest.raises(RunError):
            store.run_path(a, bad)


def _with_declared_size(data: bytes, entry: str, size: int) -> bytes:
    """``data`` (a zip) whose central directory declares ``size`` bytes for ``entry`` (a lie)."""
    import struct

    out, name = bytearray(data), entry.encode()
    at = out.find(b"PK\x01\x02")
    while at != -1:  # each central directory record: its name at +46, its uncompressed size at +24
        length = struct.unpack_from("<H", out, at + 28)[0]
        if bytes(out[at + 46:at + 46 + length]) == name:
            struct.pack_into("<I", out, at + 24, size)
        at = out.find(b"PK\x01\x02", at + 4)
    return bytes(out)


def test_a_run_zip_is_measured_unpacked_from_its_central_directory(tmp_path):
    from attention_core.run_folders import MAX_UNPACKED_BYTES, run_to_zip, zip_unpacked_size

    data = run_to_zip(BUNDLED)
    files = [f for f in os.listdir(BUNDLED) if f != "preview.json"]
    assert zip_unpacked_size(data) == sum((BUNDLED / f).stat().st_size for f in files) > len(data)
    bomb = _with_declared_size(data, "history.json", MAX_UNPACKED_BYTES)  # 800 MB declared by a 6 MB zip
    with pytest.raises(RunError, match="declares 80[0-9] MB once unpacked"):
        zip_unpacked_size(bomb)
    with pytest.raises(RunError, match="not a zip archive"):
        zip_unpacked_size(b"PK not really")


def test_a_run_zip_that_lies_about_a_size_is_refused_and_nothing_is_written(tmp_path):
    """zipfile reads an entry only up to its declared size, then checks it (BadZipFile): the upload
    says so as a RunError, never a traceback on the Train page."""
    from attention_core.run_folders import run_from_zip, run_to_zip, zip_unpacked_size

    data = _with_declared_size(run_to_zip(BUNDLED), "history.json", 1000)
    assert zip_unpacked_size(data) < zip_unpacked_size(run_to_zip(BUNDLED))
    with pytest.raises(RunError, match="the archive is damaged .*'history.json'"):
        run_from_zip(data, tmp_path / "runs", "liar")
    assert list((tmp_path / "runs").iterdir()) == []


def test_the_pretrained_encoder_s_link_is_minilm_and_says_so_when_it_is_not_installed(tmp_path):
    store, alice, _ = two_workspaces(tmp_path)
    name = "Pretrained: all-MiniLM-L6-v2 (head untrained)"
    choices = store.run_choices(alice, "Bundled", tmp_path / "bundled", {name: Path("minilm")})
    assert list(choices)[:2] == ["Bundled", name]  # right after the bundled model
    assert store.run_link_name(name, "Bundled", name) == "minilm"
    assert store.run_from_link(alice, "minilm", name) == name
    with pytest.raises(RunError, match="not installed"):
        store.run_from_link(alice, "minilm", None)
