"""Readers for lab exports: Data Viewer reports (OneStop, SB-SAT, generic), CSV scanning, EyeLink ASC.

Public entry points (each returns ``polars.LazyFrame`` in the canonical schema of :mod:`readgaze.schema`):

* :func:`read_fixation_report`, :func:`read_ia_report`: Data Viewer reports, any source with a column map;
* :func:`readgaze.io.onestop.load_onestop`: OneStop reports -> trials, words, fixations, IA rows;
* :func:`readgaze.io.sbsat.read_sbsat_fixations`, :func:`readgaze.io.sbsat.read_sbsat_trials`,
  :func:`readgaze.io.sbsat.read_sbsat_windows` (the authors' book-wise windowed fixation arrays);
* :func:`scan_csv`: the robust scanner underneath (separator, ``.`` nulls, whole-file dtypes).
"""

from readgaze.io.csv import scan_csv
from readgaze.io.dataviewer import read_fixation_report, read_ia_report, word_measures_from_ia_report

__all__ = ["read_fixation_report", "read_ia_report", "scan_csv", "word_measures_from_ia_report"]
