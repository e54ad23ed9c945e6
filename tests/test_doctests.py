"""Every ``>>>`` example in the package runs and prints what its docstring says (doctest, one test per module).

Modules are found by their source holding ``>>>`` and imported under their installed names (``models/base.py`` is
``readgaze.models.base``), so an example added anywhere is run without registering it here. An example that
cannot run offline or in seconds says so with ``# doctest: +SKIP``.
"""

from __future__ import annotations

import doctest
import importlib
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PARTS = {"readgaze": "readgaze", "data_prep": "readgaze.data_prep", "models": "readgaze.models",
         "kernels": "readgaze.kernels"}


def _modules() -> list[str]:
    found = []
    for folder, prefix in PARTS.items():
        for path in sorted((REPO / folder).rglob("*.py")):
            if not re.search(r"^\s*>>> ", path.read_text(encoding="utf-8"), re.MULTILINE):
                continue
            parts = list(path.relative_to(REPO / folder).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            found.append(".".join([prefix, *parts]))
    return found


MODULES = _modules()


def test_the_examples_are_found():
    assert len(MODULES) >= 25 and "readgaze.measures" in MODULES and "readgaze.lines" in MODULES


@pytest.mark.parametrize("name", MODULES)
def test_examples_run(name):
    module = importlib.import_module(name)
    flags = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
    result = doctest.testmod(module, optionflags=flags, report=False, verbose=False,
                             extraglobs={"__name__": name})
    assert result.attempted > 0, f"{name}: no example ran (all skipped?)"
    assert result.failed == 0, f"{name}: {result.failed} of {result.attempted} examples failed (run " \
                               f"python -m doctest -v on it, or pytest --doctest-modules)"
