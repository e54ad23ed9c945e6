"""readgaze: eye tracking in reading, from lab exports to reading-goal and comprehension decoding.

The top level offers a few verbs; everything else is reached through its module. Every verb is imported on first
use (even the readers, which import polars), so ``import readgaze`` and ``readgaze.errors`` stay fast and the
``readgaze`` command can start its first file pass before polars is imported.
"""

__version__ = "0.2.0"

import importlib  # noqa: E402

from readgaze.errors import ReadgazeError  # noqa: E402

_LAZY = {
    "read_fixation_report": "readgaze.io",
    "read_ia_report": "readgaze.io",
    "validate": "readgaze.schema",
    "read_asc": "readgaze.io.asc",
    "read_gaze_csv": "readgaze.io.samples",
    "load_onestop": "readgaze.io.onestop",
    "assign_lines": "readgaze.lines",
    "align_words": "readgaze.align",
    "compute_word_measures": "readgaze.measures",
    "make_splits": "readgaze.splits",
    "assign_fold": "readgaze.splits",
    "evaluate": "readgaze.metrics",
    "simulate_corpus": "readgaze.simulate",
    "load_model": "readgaze.models.training.bundle",  # torch, imported only when called
    "Dataset": "readgaze.dataset",  # a dataset folder: its tables (lazy), manifest and fingerprint
    "prepare": "readgaze.data_prep.api",  # lab data -> a dataset folder (what `readgaze prep` runs)
}


def __getattr__(name: str):
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'readgaze' has no attribute {name!r}")


__all__ = ["ReadgazeError", "__version__", *_LAZY]
