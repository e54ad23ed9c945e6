"""Readers for lab exports: Data Viewer reports (OneStop, SB-SAT, generic), CSV scanning, EyeLink ASC.

Public entry points (each returns ``polars.LazyFrame`` in the canonical schema of :mod:`readgaze.schema`):

* :func:`read_fixation_report`, :func:`read_ia_report`: Data Viewer reports, any source with a column map;
* :func:`readgaze.io.onestop.load_onestop`: OneStop reports -> trials, words, fixations, IA rows;
* :func:`readgaze.io.sbsat.read_sbsat_fixations`, :func:`readgaze.io.sbsat.read_sbsat_trials`,
  :func:`readgaze.io.sbsat.read_sbsat_windows` (the authors' book-wise windowed fixation arrays);
* :func:`scan_csv`: the robust scanner underneath (separator, ``.`` nulls, whole-file dtypes).

Damaged input is never silent data (issue 29): every delimited file is checked line by line first
(:mod:`readgaze.io.faults`, :mod:`readgaze.io.ragged`), its dtypes decided and odd columns flagged on the whole file
(:mod:`readgaze.io.dtypes`), and the cells a reader uses checked (:mod:`readgaze.io.cells`); each fault is an error
naming file, row and column, or a repair counted in the QC log. See ``docs/damaged_input.md``.
"""

import importlib

_LAZY = {"scan_csv": "readgaze.io.csv", "read_fixation_report": "readgaze.io.dataviewer",
         "read_ia_report": "readgaze.io.dataviewer", "word_measures_from_ia_report": "readgaze.io.dataviewer"}
"""Imported on first use: :mod:`readgaze.io.scan` (no polars) is imported before polars by ``readgaze prep``."""


def __getattr__(name: str):
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'readgaze.io' has no attribute {name!r}")


__all__ = ["read_fixation_report", "read_ia_report", "scan_csv", "word_measures_from_ia_report"]
