"""Imports only point down: kernels -> torch; readgaze -> no project package; data_prep -> readgaze;
models -> readgaze, kernels (and data_prep for the demo only). Walks every module's import statements."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
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
