"""The test suite's own rules (README.md, "Tests"): every test module lies in the folder of what it tests, a test
module imports no other test module (what two of them share lives in tests/helpers/), and a fixture is defined
once (tests/conftest.py, or the one module that uses it).

Read from the source, as tests/project/test_layers.py reads the app's imports.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
FOLDERS = {"core", "runner", "ui", "pages", "browser", "project"}  # README.md, "Tests": what each holds


def suite_files(root: Path = TESTS) -> list[Path]:
    return sorted(p for p in root.rglob("*.py") if "__pycache__" not in p.parts)


def is_test_module(name: str) -> bool:
    """A module pytest collects (``test_*.py``), as a dotted name or a file name's stem."""
    return name.split(".")[-1].startswith("test_")


def imported_test_modules(path: Path) -> set[str]:
    """The test modules that ``path`` imports, also inside functions: ``from tests.x.test_y import …``,
    ``import tests.test_y``, ``from tests import test_y``."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.startswith("tests.") and is_test_module(a.name))
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "tests":
            if is_test_module(node.module):
                found.add(node.module)
            found.update(f"{node.module}.{a.name}" for a in node.names if is_test_module(a.name))
    return found


def fixtures_defined(path: Path) -> set[str]:
    """The names of the fixtures ``path`` defines (``@pytest.fixture``, with or without arguments)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            for decorator in node.decorator_list:
                target = decorator.func if isinstance(decorator, ast.Call) else decorator
                if ast.unparse(target) in ("pytest.fixture", "fixture"):
                    found.add(node.name)
    return found


def test_every_test_module_lies_in_one_of_the_folders():
    modules = [f.relative_to(TESTS) for f in suite_files() if is_test_module(f.stem)]
    assert len(modules) > 60
    assert [str(m) for m in modules if len(m.parts) != 2 or m.parts[0] not in FOLDERS] == []
    assert {m.parts[0] for m in modules} == FOLDERS
    assert all((TESTS / folder / "__init__.py").exists() for folder in FOLDERS)  # same-named files in two folders


def test_no_test_module_imports_another():
    files = suite_files()
    assert len(files) > 60
    wrong = {str(f.relative_to(TESTS)): sorted(imported_test_modules(f)) for f in files}
    assert {f: names for f, names in wrong.items() if names} == {}, "move what they share to tests/helpers/"


def test_no_fixture_is_defined_twice():
    where = defaultdict(list)
    for f in suite_files():
        for name in fixtures_defined(f):
            where[name].append(str(f.relative_to(TESTS)))
    assert {"bundled", "server", "runs_dir"} <= set(where)
    assert {name: files for name, files in where.items() if len(files) > 1} == {}, "define it once, in tests/conftest.py"


def test_the_checks_see_what_they_look_for(tmp_path):
    sample = tmp_path / "test_sample.py"
    sample.write_text(
        "import pytest\nfrom pytest import fixture\nfrom tests.helpers.apptest import chart\n"
        "from tests import test_seeds, conftest\nimport tests.core.test_model as m\n\n"
        "@pytest.fixture(scope='module')\ndef a():\n    pass\n\n@fixture\ndef b():\n    pass\n\n"
        "@pytest.mark.parametrize('x', [1])\ndef test_c(x):\n    from tests.pages.test_train import start\n"
    )
    assert imported_test_modules(sample) == {"tests.test_seeds", "tests.core.test_model", "tests.pages.test_train"}
    assert fixtures_defined(sample) == {"a", "b"}
