"""Imports only point down: kernels -> torch; readgaze -> no project package; data_prep -> readgaze;
models -> readgaze, kernels (and data_prep for the demo only). Walks every module's import statements.

Also: no module imports another package's private names (``_x``, or anything from a ``_module``), the ``readgaze``
command table names modules that exist, offer the command protocol and respect the layers, and the
``readgaze.line_assigners`` entry points name functions that exist."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PARTS = {"readgaze": "readgaze", "data_prep": "readgaze.data_prep", "models": "readgaze.models",
         "kernels": "readgaze.kernels"}
"""Repository folder -> the import name it is installed under (setup.py)."""
ALLOWED = {
    "kernels": {"kernels"},
    "readgaze": {"readgaze"},
    "data_prep": {"readgaze", "data_prep"},
    "models": {"readgaze", "kernels", "models", "data_prep"},
}
PROJECT = set(ALLOWED)
# third-party packages a layer must not import at module level (torch stays out of the library and the prep tool)
FORBIDDEN_THIRD_PARTY = {"readgaze": {"torch", "lightning", "transformers", "pandas"},
                         "data_prep": {"torch", "lightning", "pandas"}, "kernels": {"polars", "pandas"},
                         "models": {"pandas"}}


def _layer(module: str) -> str:
    """The layer of a dotted module name: ``readgaze.models.x`` -> ``models``; other ``readgaze.*`` -> ``readgaze``;
    a third-party module -> its top-level name."""
    parts = module.split(".")
    if parts[0] == "readgaze" and len(parts) > 1 and parts[1] in ("models", "kernels", "data_prep"):
        return parts[1]
    return parts[0]


def _imports(path: Path, top_level_only: bool = False):
    tree = ast.parse(path.read_text(), filename=str(path))
    for node in (tree.body if top_level_only else ast.walk(tree)):
        if isinstance(node, ast.Import):
            for a in node.names:
                yield node.lineno, _layer(a.name)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module == "readgaze":  # from readgaze import models, kernels, ...
                for a in node.names:
                    yield node.lineno, _layer(f"readgaze.{a.name}")
            else:
                yield node.lineno, _layer(node.module)


@pytest.mark.parametrize("package", sorted(ALLOWED))
def test_imports_point_down(package):
    bad = []
    for path in sorted((REPO / package).rglob("*.py")):
        for lineno, top in _imports(path):
            if top in PROJECT and top not in ALLOWED[package]:
                bad.append(f"{path.relative_to(REPO)}:{lineno} imports {top}")
        # heavy optional dependencies may be imported inside a function (e.g. surprisal from a local LM)
        for lineno, top in _imports(path, top_level_only=True):
            if top in FORBIDDEN_THIRD_PARTY[package]:
                bad.append(f"{path.relative_to(REPO)}:{lineno} imports {top}")
    assert not bad, "imports that point up or pull a forbidden dependency:\n" + "\n".join(bad)


# ---- private names stay in their package ----

PRIVATE_ALLOWED: set[tuple[str, str, str]] = set()
"""(file, package, name) imports of another package's private names allowed for now; none since the line-assignment
method protocol (readgaze.lines.protocol) made what dist needs public."""


def _module_file(name: str) -> Path | None:
    """The file or package folder of a ``readgaze...`` module name in this checkout (None outside the project)."""
    for folder, prefix in sorted(PARTS.items(), key=lambda kv: -len(kv[1])):
        if name == prefix or name.startswith(prefix + "."):
            rest = name[len(prefix):].lstrip(".")
            base = REPO / folder / Path(*rest.split(".")) if rest else REPO / folder
            if (base / "__init__.py").is_file():
                return base
            if base.with_suffix(".py").is_file():
                return base.with_suffix(".py")
            return None
    return None


def _package_of(path: Path) -> str:
    """The dotted package a file belongs to (``models/dist/inputs.py`` -> ``readgaze.models.dist``)."""
    rel = path.relative_to(REPO).parent.parts
    return ".".join([PARTS[rel[0]], *rel[1:]])


def _owner(module: str, name: str) -> str | None:
    """The package that owns a private name imported as ``from module import name``: the package above the first
    private module of ``module``, else the package ``module`` is or lies in; None when nothing is private."""
    parts = module.split(".")
    for i, part in enumerate(parts):
        if part.startswith("_") and not part.startswith("__"):
            return ".".join(parts[:i])
    if not (name.startswith("_") and not name.startswith("__")):
        return None
    found = _module_file(module)
    if found is None:
        return None
    return module if found.is_dir() else module.rpartition(".")[0]


def test_no_module_imports_another_packages_private_names():
    """A private name (``_x``, or anything of a ``_module``) is imported only inside the package that owns it and its
    subpackages: ``readgaze.lines`` may use ``readgaze._jit``; ``readgaze.models.dist`` may not use
    ``readgaze.lines._assign``, and ``readgaze`` may not use ``readgaze.lines._common``."""
    bad, allowed_seen = [], set()
    for folder in PARTS:
        for path in sorted((REPO / folder).rglob("*.py")):
            package = _package_of(path)
            for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
                if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    imported = [(node.module, a.name) for a in node.names]
                elif isinstance(node, ast.Import):
                    imported = [(a.name, "") for a in node.names]
                else:
                    continue
                for module, name in imported:
                    owner = _owner(module, name) if module.split(".")[0] == "readgaze" else None
                    if owner is None or package == owner or package.startswith(owner + "."):
                        continue
                    key = (str(path.relative_to(REPO)), module, name)
                    if key in PRIVATE_ALLOWED:
                        allowed_seen.add(key)
                        continue
                    bad.append(f"{key[0]}:{node.lineno} imports {name or module} of {owner} from {package}")
    assert not bad, "private names used outside their package:\n" + "\n".join(bad)
    assert allowed_seen == PRIVATE_ALLOWED, f"allow-listed imports that are gone: {PRIVATE_ALLOWED - allowed_seen}"


def test_the_private_name_check_catches_a_private_import(tmp_path):
    """The rule above on made-up imports (it must not pass by seeing nothing)."""
    assert _owner("readgaze.lines", "_assign") == "readgaze.lines"
    assert _owner("readgaze.lines._common", "pairwise") == "readgaze.lines"
    assert _owner("readgaze._jit", "njit") == "readgaze"
    assert _owner("readgaze.lines", "assign_lines") is None
    assert _owner("readgaze.models.dist.inputs", "_x") == "readgaze.models.dist"


# ---- the command table and the entry points ----

def _top_level_names(path: Path) -> set[str]:
    """Names a module defines or imports at its top level (functions, classes, assignments, imports)."""
    names = set()
    for node in ast.parse(path.read_text(), filename=str(path)).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
    return names


def _file(module: str) -> Path:
    found = _module_file(module)
    assert found is not None, f"{module} is not a module of this checkout"
    return found / "__init__.py" if found.is_dir() else found


def test_every_command_names_a_module_that_offers_the_command_protocol():
    from readgaze.cli import COMMANDS

    for command, (module, help_text) in COMMANDS.items():
        names = _top_level_names(_file(module))
        assert "main" in names or {"add_arguments", "run"} <= names, (
            f"readgaze {command}: {module} has neither main(argv) nor add_arguments(parser) + run(args)")
        assert help_text and not help_text.endswith("."), command


def test_commands_of_the_library_and_prep_do_not_import_torch():
    """The layers hold at run time too: importing the modules of ``inspect``, ``prep``, ``assign-lines`` and
    ``eval-lines`` (with everything they import) pulls in neither torch nor readgaze.models."""
    from readgaze.cli import COMMANDS

    light = sorted({m for m, _ in COMMANDS.values() if not m.startswith(("readgaze.models", "readgaze.kernels"))})
    assert {"readgaze.inspect", "readgaze.data_prep.cli"} <= set(light)
    code = ("import importlib, sys\n"
            f"for m in {light!r}: importlib.import_module(m)\n"
            "heavy = sorted(m for m in sys.modules if m.split('.')[0] in ('torch', 'lightning', 'transformers')"
            " or m.startswith(('readgaze.models', 'readgaze.kernels')))\n"
            "print(heavy[:5])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]", f"the light commands import {out.strip()}"


def test_line_assigner_entry_points_name_functions_that_exist():
    tomllib = pytest.importorskip("tomllib")
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    plugins = project["entry-points"]["readgaze.line_assigners"]
    assert plugins, "no readgaze.line_assigners entry point"
    from readgaze.lines import METHODS

    for name, target in plugins.items():
        module, _, attr = target.partition(":")
        assert attr in _top_level_names(_file(module)), f"entry point {name}: {module} has no {attr}"
        assert name not in METHODS, f"entry point {name} shadows the classical method of that name"
