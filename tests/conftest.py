"""Shared fixtures: where the real data lives, and a skip when it is absent."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = Path(os.environ.get("READGAZE_SHARED_DATA", REPO.parent / "shared" / "data"))
SMALL_DATA = REPO / "tests" / "files"


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """Path to ``../shared/data`` (real public data); skips the test when it is absent."""
    if not SHARED_DATA.is_dir():
        pytest.skip(f"real data folder {SHARED_DATA} is absent (set READGAZE_SHARED_DATA)")
    return SHARED_DATA


@pytest.fixture(scope="session")
def small_data() -> Path:
    """``tests/files``: small excerpts of ``../shared/data`` in the same layout (``small_data / "bad_inputs"`` is a
    copy of ``shared_data / "bad_inputs"``), in every clone. ``tests/files/README.md`` gives each file's source, cut
    and SHA-256."""
    return SMALL_DATA


@pytest.fixture(scope="session")
def line_gold(shared_data):
    """The gold-labelled line-assignment trials of ``../shared/data/line_assignment`` (``GoldTrial`` list, read
    once)."""
    from readgaze.lines.gold import load_gold

    return load_gold(shared_data / "line_assignment")


@pytest.fixture(scope="session")
def line_gold_small(small_data):
    """Four of the gold trials (``tests/files/line_assignment``: trial_1, trial_9, trial_15, trial_38), in every
    clone."""
    from readgaze.lines.gold import load_gold

    return load_gold(small_data / "line_assignment")


@pytest.fixture(scope="session")
def line_gold_tuples(line_gold):
    """:func:`line_gold` as the ``(xy, line_y_px, word_xy, word_line)`` tuples the batched assigners take."""
    return [(t.xy, t.line_y_px, t.word_xy, t.word_line) for t in line_gold]


@pytest.fixture(scope="session")
def line_gold_small_tuples(line_gold_small):
    """:func:`line_gold_small` as ``(xy, line_y_px, word_xy, word_line)`` tuples."""
    return [(t.xy, t.line_y_px, t.word_xy, t.word_line) for t in line_gold_small]


@pytest.fixture
def one_torch_thread():
    """One torch thread for the test: the CI box has 2 shared cores, and two spin-waiting threads run 5-10x slower."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)



def pytest_configure(config):
    """Each test process gets its own parse cache (``READGAZE_CACHE_DIR``, unless set): the suite neither reads
    nor fills the user's ``~/.cache/readgaze``, and two workers never share one. Under pytest-xdist (``-n 2``),
    each worker gets one thread per pool: two workers share the 2 CI cores."""
    if "READGAZE_CACHE_DIR" not in os.environ:
        config._readgaze_cache = tempfile.mkdtemp(prefix="readgaze-test-cache-")
        os.environ["READGAZE_CACHE_DIR"] = config._readgaze_cache
    if os.environ.get("PYTEST_XDIST_WORKER"):
        for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS", "POLARS_MAX_THREADS"):
            os.environ.setdefault(name, "1")
        import torch

        torch.set_num_threads(1)


def pytest_unconfigure(config):
    cache = getattr(config, "_readgaze_cache", None)
    if cache:
        shutil.rmtree(cache, ignore_errors=True)
        os.environ.pop("READGAZE_CACHE_DIR", None)


def pytest_runtest_logreport(report):
    """Collect the ``learns`` lines (``("learns", line)`` user properties): they reach the controller under xdist."""
    if report.when == "call":
        _LEARNS.extend(value for key, value in report.user_properties if key == "learns")


_LEARNS: list[str] = []


def pytest_terminal_summary(terminalreporter, config):
    """Print what the ``learns`` tests measured (each records a ``("learns", line)`` user property)."""
    lines = _LEARNS
    if lines:
        terminalreporter.section("learns: validation AUROC on the planted corpus (new participants)")
        for line in lines:
            terminalreporter.write_line(line)
