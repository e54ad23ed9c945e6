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
