"""Imports only point down: kernels -> torch; readgaze -> no project package; data_prep -> readgaze;
models -> readgaze, kernels (and data_prep for the demo only). Walks every module's import statements.

Also: no module imports another package's private names (``_x``, or anything from a ``_module``), the ``readgaze``
command table names modules that exist, offer the command protocol and respect the layers, and the
``readgaze.line_assigners`` entry points name functions that exist; no two modules import each other, directly or
round a loop (imports inside functions and under TYPE_CHECKING count); inside ``readgaze`` every module has a layer
(:data:`LAYERS`) and imports only its own or lower ones."""

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


# ---- no import loop; inside readgaze, imports point down its layers ----

LAYERS = (
    ("readgaze", "errors", "fingerprint", "_jit", "_pairwise", "_grid"),  # the package root imports errors only
    ("schema", "qc"),
    ("io", "dataset", "splits", "word_features"),
    ("text", "simulate", "layout_checks"),
    ("lines", "scanpath", "events", "_align_search", "_measures_pass"),
    ("align", "measures"),
    ("features", "metrics", "tasks", "predictions", "corrections", "metrics_regression", "reader_aggregation",
     "eyebench_tables"),
    ("_baseline_folds", "_figure_style"),
    ("generation_metrics", "baselines", "plots", "inspect", "inspect_tasks", "baselines_regression", "eyebench_copco",
     "plots_regression"),
    ("cli", "review"),
)
"""The library's modules (and subpackages) from the bottom up: a module imports its own layer or lower ones only.
``io`` reads files into frames and knows nothing of text layout; ``dataset`` (a folder's tables) sits beside it;
text, lines, alignment and measures build on them; features, tasks and metrics on those; the commands on top (a
subpackage's ``cli`` module, e.g. ``readgaze.lines.cli``, is a command: the top layer)."""
KNOWN_LOOPS: set[frozenset[str]] = set()
"""Loops left for now: none since the method table moved to ``readgaze.lines.registry`` (``vote`` and ``frame``
import it, not the package that re-exports them)."""


def _module_names(root: Path, parts: dict[str, str]) -> dict[str, Path]:
    """Dotted module name -> file, for every module of the parts under ``root`` (a package by its __init__)."""
    out = {}
    for folder, prefix in parts.items():
        for path in sorted((root / folder).rglob("*.py")):
            rel = list(path.relative_to(root / folder).with_suffix("").parts)
            rel = rel[:-1] if rel[-1] == "__init__" else rel
            out[".".join([prefix, *rel])] = path
    return out


def import_graph(root: Path = REPO, parts: dict[str, str] = PARTS) -> dict[str, set[str]]:
    """Module -> the project modules it imports anywhere (top level, in a function, under TYPE_CHECKING):
    ``from a.b import c`` is an edge to ``a.b.c`` when that is a module, else to ``a.b``."""
    modules = _module_names(root, parts)
    top = {p.split(".")[0] for p in parts.values()}

    def resolve(name: str) -> str | None:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, set[str]] = {m: set() for m in modules}
    for module, path in modules.items():
        package = module if path.name == "__init__.py" else module.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    up = package.split(".")[:len(package.split(".")) - node.level + 1]
                    base = ".".join([*up, *([base] if base else [])])
                names = [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in node.names]
            else:
                continue
            for name in names:
                target = resolve(name) if name.split(".")[0] in top else None
                if target and target != module:
                    graph[module].add(target)
    return graph


def import_loops(graph: dict[str, set[str]]) -> list[frozenset[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    loops = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.add(member)
                    if member == node:
                        break
                if len(component) > 1:
                    loops.append(frozenset(component))
    return loops


def test_no_import_loop_between_modules():
    loops = set(import_loops(import_graph()))
    assert loops <= KNOWN_LOOPS, "import loops:\n" + "\n".join(" <-> ".join(sorted(c)) for c in loops - KNOWN_LOOPS)
    assert KNOWN_LOOPS <= loops, f"known loops that are gone (remove them from KNOWN_LOOPS): {KNOWN_LOOPS - loops}"


def _layer_of(module: str) -> int | None:
    """The layer of a ``readgaze`` library module (None for models, data_prep, kernels)."""
    parts = module.split(".")
    if len(parts) > 1 and parts[1] in ("models", "data_prep", "kernels"):
        return None
    if parts[-1] == "cli":
        return len(LAYERS) - 1
    name = parts[1] if len(parts) > 1 else "readgaze"
    return next((i for i, layer in enumerate(LAYERS) if name in layer), -1)


def test_every_library_module_has_a_layer_and_imports_point_down():
    graph = import_graph()
    unplaced = sorted({m.split(".")[1] for m in graph if _layer_of(m) == -1})
    assert not unplaced, f"readgaze modules without a layer (add them to LAYERS): {unplaced}"
    upward = [f"{m} (layer {_layer_of(m)}) imports {t} (layer {_layer_of(t)})"
              for m in sorted(graph) for t in sorted(graph[m])
              if _layer_of(m) is not None and _layer_of(t) is not None and _layer_of(t) > _layer_of(m)]
    assert not upward, "upward imports inside readgaze:\n" + "\n".join(upward)


def test_the_loop_and_layer_checks_catch_a_made_up_loop_and_an_upward_import(tmp_path):
    """The checks on a made-up package (they must not pass by seeing nothing): a loop through a function-level
    import and a TYPE_CHECKING import is found; io importing text is upward."""
    package = tmp_path / "readgaze"
    (package / "io").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "io" / "__init__.py").write_text("")
    (package / "io" / "keys.py").write_text("def f():\n    from readgaze.text import clean\n")
    (package / "text.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                                     "    from readgaze.io import keys\n")
    (package / "errors.py").write_text("")
    graph = import_graph(tmp_path, {"readgaze": "readgaze"})
    assert graph["readgaze.io.keys"] == {"readgaze.text"} and graph["readgaze.text"] == {"readgaze.io.keys"}
    assert import_loops(graph) == [frozenset({"readgaze.io.keys", "readgaze.text"})]
    assert _layer_of("readgaze.io.keys") < _layer_of("readgaze.text")  # so keys -> text is upward
    assert import_loops({"a": {"b"}, "b": {"c"}, "c": set()}) == []


# ---- file size: one idea per file ----

MAX_LINES = 400
MAX_LONG_FILES = 5
"""Issue #35: at most this many library files over :data:`MAX_LINES` lines, each saying why in its first lines."""


def long_files(root: Path = REPO) -> dict[str, bool]:
    """Library file (readgaze/, data_prep/, models/, kernels/) over :data:`MAX_LINES` lines -> whether its first 10
    lines give the reason (the words "Over 400 lines")."""
    out = {}
    for folder in PARTS:
        for path in sorted((root / folder).rglob("*.py")):
            lines = path.read_text(encoding="utf-8").splitlines()
            if len(lines) > MAX_LINES:
                out[str(path.relative_to(root))] = any("Over 400 lines" in line for line in lines[:10])
    return out


def test_few_library_files_are_over_400_lines_and_each_says_why():
    found = long_files()
    silent = sorted(f for f, says_why in found.items() if not says_why)
    assert not silent, f"over {MAX_LINES} lines without 'Over 400 lines: <reason>' in the first 10 lines: {silent}"
    assert len(found) <= MAX_LONG_FILES, (f"{len(found)} library files over {MAX_LINES} lines (at most "
                                          f"{MAX_LONG_FILES}): {sorted(found)}")


def test_the_file_size_check_sees_a_long_file(tmp_path):
    """The check on a made-up tree (it must not pass by seeing nothing)."""
    (tmp_path / "readgaze").mkdir()
    (tmp_path / "readgaze" / "short.py").write_text("x = 1\n" * MAX_LINES)
    (tmp_path / "readgaze" / "long.py").write_text("x = 1\n" * (MAX_LINES + 1))
    (tmp_path / "readgaze" / "said.py").write_text('"""Over 400 lines: one table."""\n' + "x = 1\n" * MAX_LINES)
    assert long_files(tmp_path) == {"readgaze/long.py": False, "readgaze/said.py": True}
