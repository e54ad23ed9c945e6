"""The README's commands run as written.

Every fenced ``bash`` or ``python`` block of README.md is preceded by a marker: ``<!-- readme-test: run -->``
(run here, in order, in one fresh folder beside a ``../shared`` that points at the public data),
``<!-- readme-test: slow -->`` (run by the slow test, after the ``run`` blocks) or ``<!-- readme-test: skip
(reason) -->`` (installs packages or takes minutes; the reason says what covers it). A block without a marker
fails the test, so a command cannot join the README untested by accident.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
BLOCK = re.compile(r"(?:<!-- readme-test: (?P<mark>run|slow|skip[^>]*?) -->\n)?"
                   r"```(?P<lang>bash|python)\n(?P<body>.*?)```", re.DOTALL)


def readme_blocks() -> list[tuple[str, str, str]]:
    """``(mark, language, body)`` of each fenced bash/python block, in order (mark ``""`` when unmarked)."""
    text = (REPO / "README.md").read_text(encoding="utf-8")
    return [(m["mark"] or "", m["lang"], m["body"]) for m in BLOCK.finditer(text)]


def test_the_readme_is_short_and_every_command_block_is_marked():
    lines = (REPO / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 230, f"README.md has {len(lines)} lines; move detail to docs/"
    blocks = readme_blocks()
    assert [b for b in blocks if not b[0]] == [], "a README command block without a readme-test marker"
    assert sum(mark == "run" for mark, _, _ in blocks) >= 3
    assert all(re.fullmatch(r"skip \(.+\)", mark) for mark, _, _ in blocks if mark.startswith("skip"))


@pytest.fixture(scope="module")
def workdir(tmp_path_factory, shared_data):
    """A fresh folder ``work/`` with ``../shared/data`` beside it (the README's relative paths)."""
    root = tmp_path_factory.mktemp("readme")
    (root / "shared").symlink_to(shared_data.parent.resolve(), target_is_directory=True)
    (root / "work").mkdir()
    return root / "work"


def _run(block: tuple[str, str, str], cwd: Path) -> None:
    _, lang, body = block
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
           "READGAZE_CACHE_DIR": str(cwd / ".cache"), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
           "MPLBACKEND": "Agg"}
    command = ["bash", "-euo", "pipefail", "-c", body] if lang == "bash" else [sys.executable, "-c", body]
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True)
    assert done.returncode == 0, f"README block failed:\n{body}\n--- stdout\n{done.stdout[-3000:]}\n" \
                                 f"--- stderr\n{done.stderr[-3000:]}"


def test_the_readme_commands_run(workdir):
    for block in (b for b in readme_blocks() if b[0] == "run"):
        _run(block, workdir)
    assert (workdir / "sample_ds" / "manifest.json").is_file() and (workdir / "sample_py" / "trials.parquet").is_file()
    assert (workdir / "mystudy" / "ds" / "word_measures.parquet").is_file()


@pytest.mark.slow
def test_the_readme_slow_commands_run(workdir):
    """The demo's smoke run and one brief fit on the lab export (about 2-4 minutes on 2 busy cores)."""
    if not (workdir / "mystudy" / "ds").is_dir():
        for block in (b for b in readme_blocks() if b[0] == "run"):
            _run(block, workdir)
    for block in (b for b in readme_blocks() if b[0] == "slow"):
        _run(block, workdir)
    assert (workdir / "demo" / "results.md").is_file()
