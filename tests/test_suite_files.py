"""The test suite runs from a clone: ``tests/files`` holds what the unit tests read (listed, with SHA-256s, in its
README), and at most a tenth of the test files need ``../shared/data`` for every one of their tests."""

from __future__ import annotations

import ast
import hashlib
import importlib.util
import re
from pathlib import Path

TESTS = Path(__file__).resolve().parent
FILES = TESTS / "files"
NOT_DATA = {"README.md", "make_excerpts.py"}
SHARED_FIXTURE = "shared_data"
ROW = re.compile(r"^\| `([^`]+)` \| [\d,]+ \| [^|]+ \| `([0-9a-f]{64})` \| (same|`[0-9a-f]{64}`) \|$")
HAND_ROW = re.compile(r"^\| `([^`]+)` \| [\d,]+ \| `[^`]+` \| `([0-9a-f]{64})` \|$")  # cut by hand


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _listed() -> dict[str, tuple[str, str]]:
    """``{file: (SHA-256 of its source, SHA-256 of the file)}`` of the files ``make_excerpts.py`` cuts."""
    rows = {}
    for line in (FILES / "README.md").read_text(encoding="utf-8").splitlines():
        hit = ROW.match(line)
        if hit:
            name, source, own = hit.groups()
            rows[name] = (source, source if own == "same" else own.strip("`"))
    return rows


def _cut_by_hand() -> dict[str, str]:
    """``{file: SHA-256}`` of the files cut by hand (the README's second table)."""
    lines = (FILES / "README.md").read_text(encoding="utf-8").splitlines()
    return dict(hit.groups() for line in lines if (hit := HAND_ROW.match(line)))


def _data_files() -> list[str]:
    return sorted(str(p.relative_to(FILES)) for p in FILES.rglob("*")
                  if p.is_file() and p.name not in NOT_DATA and "__pycache__" not in p.parts)


def test_every_file_is_listed_with_its_sha256_and_the_folder_stays_small():
    listed = {name: own for name, (_, own) in _listed().items()} | _cut_by_hand()
    assert sorted(listed) == _data_files(), "list every file of tests/files, with its SHA-256, in its README"
    changed = [name for name, own in listed.items() if _sha256(FILES / name) != own]
    assert not changed, f"edited since the README was written (rebuild with make_excerpts.py): {changed}"
    assert sum((FILES / name).stat().st_size for name in listed) < 3_000_000


def test_excerpts_rebuild_byte_for_byte_from_shared_data(shared_data, tmp_path):
    spec = importlib.util.spec_from_file_location("make_excerpts", FILES / "make_excerpts.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    made = module.build(shared_data, tmp_path)
    listed = _listed()
    assert sorted(made) == sorted(listed)
    for name, source in made.items():
        assert _sha256(shared_data / source) == listed[name][0], f"{source} is not the source the README names"
        assert (tmp_path / name).read_bytes() == (FILES / name).read_bytes(), name


# ---- which test files run without ../shared/data: a static reading of the fixtures each test asks for ----

def _fixtures(tree: ast.Module) -> dict[str, list[str]]:
    """``{fixture: the fixtures it asks for}`` of a module's ``@pytest.fixture`` functions."""
    found = {}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and any("fixture" in ast.unparse(d) for d in node.decorator_list):
            found[node.name] = [a.arg for a in node.args.args]
    return found


def _uses(decorators: list[ast.expr]) -> list[str]:
    """Fixture names of ``pytest.mark.usefixtures(...)`` decorators or marks."""
    return [a.value for d in decorators if "usefixtures" in ast.unparse(d) and isinstance(d, ast.Call)
            for a in d.args if isinstance(a, ast.Constant)]


def _needs_shared(name: str, local: dict, common: dict, seen: frozenset = frozenset()) -> bool:
    if name == SHARED_FIXTURE:
        return True
    if name in seen:
        return False
    args = local.get(name, common.get(name, []))
    return any(_needs_shared(a, local, common, seen | {name}) for a in args)


def needs_shared_data(path: Path, common: dict[str, list[str]]) -> bool:
    """Whether every test of ``path`` asks, directly or through fixtures, for ``shared_data`` (or reads
    ``SHARED_DATA`` itself)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    local = _fixtures(tree)
    module_uses = [u for node in tree.body if isinstance(node, ast.Assign)
                   and any(getattr(t, "id", "") == "pytestmark" for t in node.targets) for u in _uses([node.value])]
    tests = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name.startswith("test")]
    tests += [m for c in tree.body if isinstance(c, ast.ClassDef) and c.name.startswith("Test") for m in c.body
              if isinstance(m, ast.FunctionDef) and m.name.startswith("test")]
    if not tests:
        return False
    for test in tests:
        asked = [a.arg for a in test.args.args if a.arg != "self"] + _uses(test.decorator_list) + module_uses
        if not any(_needs_shared(a, local, common) for a in asked) and "SHARED_DATA" not in ast.unparse(test):
            return False
    return True


def files_needing_shared_data(folder: Path = TESTS) -> tuple[list[str], int]:
    common = _fixtures(ast.parse((folder / "conftest.py").read_text(encoding="utf-8")))
    files = sorted(folder.glob("test_*.py"))
    return [p.name for p in files if needs_shared_data(p, common)], len(files)


def test_at_least_nine_in_ten_test_files_run_without_shared_data():
    """A fresh clone has no ``../shared``: at most 10 % of the test files may skip every test."""
    need, total = files_needing_shared_data()
    assert len(need) <= total // 10, f"{len(need)} of {total} test files need ../shared/data for every test: {need}"


def test_the_static_reading_sees_a_file_whose_every_test_needs_shared_data(tmp_path):
    (tmp_path / "conftest.py").write_text("import pytest\n\n@pytest.fixture\ndef shared_data():\n    pass\n\n"
                                          "@pytest.fixture\ndef gold(shared_data):\n    pass\n")
    (tmp_path / "test_a.py").write_text("import pytest\n\n@pytest.fixture\ndef sample(gold):\n    pass\n\n"
                                        "def test_x(sample):\n    pass\n\n"
                                        "@pytest.mark.usefixtures('shared_data')\ndef test_y(tmp_path):\n    pass\n")
    (tmp_path / "test_b.py").write_text("def test_x(tmp_path):\n    pass\n\ndef test_y(shared_data):\n    pass\n")
    (tmp_path / "test_c.py").write_text("import pytest\n\npytestmark = pytest.mark.usefixtures('gold')\n\n"
                                        "def test_x(tmp_path):\n    pass\n")
    assert files_needing_shared_data(tmp_path) == (["test_a.py", "test_c.py"], 3)
