"""Shared fixtures: where the real data lives, and a skip when it is absent."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = Path(os.environ.get("READGAZE_SHARED_DATA", REPO.parent / "shared" / "data"))


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """Path to ``../shared/data`` (real public data); skips the test when it is absent."""
    if not SHARED_DATA.is_dir():
        pytest.skip(f"real data folder {SHARED_DATA} is absent (set READGAZE_SHARED_DATA)")
    return SHARED_DATA


@pytest.fixture
def one_torch_thread():
    """One torch thread for the test: the CI box has 2 shared cores, and two spin-waiting threads run 5-10x slower."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)



def pytest_terminal_summary(terminalreporter, config):
    """Print what the ``learns`` tests measured (each appends a line to ``config.learns_results``)."""
    lines = getattr(config, "learns_results", [])
    if lines:
        terminalreporter.section("learns: validation AUROC on the planted corpus (new participants)")
        for line in lines:
            terminalreporter.write_line(line)
