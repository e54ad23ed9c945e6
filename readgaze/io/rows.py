"""Chosen rows of a large delimited file, read without parsing the others.

A report's trial-level and text-level columns (the question, the title, a word's linguistic
features) repeat on every row of a trial or of a text, yet a loader needs them once: from each
trial's first row, or from the rows of one trial per text. Parsing such wide text columns on every
row costs most of a report's parse time. Here the file's line starts are found by one vectorised
scan for ``\\n`` bytes (no parsing), the chosen lines are copied into a small file of the same name,
and that file is read by :func:`readgaze.io.csv.read_csv` (its dtype rules, applied to the chosen
rows).

Rows and lines differ only where a quoted field holds a line break (Data Viewer never writes one):
the line count is checked against the report's row count, and the columns are then parsed whole
instead (the same values, more slowly).
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from pathlib import Path

import numpy as np
import polars as pl

from readgaze.errors import ParseError
from readgaze.io.csv import read_csv

_BLOCK = 1 << 20  # bytes read at a time by line_starts: the scan stays in the CPU cache


def line_starts(path: str | Path) -> np.ndarray:
    """Byte offset of every line's first byte (Int64; line 0 is the header), in one pass of ``_BLOCK`` reads.

    A final line break does not start a line.
    """
    parts, pos = [np.zeros(1, np.int64)], 0
    block = bytearray(_BLOCK)
    with open(path, "rb") as f:
        while n := f.readinto(block):
            parts.append(np.flatnonzero(np.frombuffer(block, np.uint8, n) == 10).astype(np.int64) + (pos + 1))
            pos += n
    starts = np.concatenate(parts)
    return starts[:-1] if len(starts) > 1 and starts[-1] == pos else starts


def read_rows(path: str | Path, rows: np.ndarray, columns: list[str], *, n_rows: int,
              starts: np.ndarray | None = None, separator: str | None = None) -> pl.DataFrame:
    """Read ``columns`` of the data rows ``rows`` (0-based, after the header) of a delimited file.

    Parameters
    ----------
    rows : numpy.ndarray
        Data row numbers, sorted ascending, without repeats.
    columns : list of str
        Columns to read (file order kept); names the file lacks are ignored.
    n_rows : int
        The file's data row count (from a parse of other columns); when the file's line count
        disagrees, the columns are parsed whole and the rows taken from them.
    starts : numpy.ndarray, optional
        :func:`line_starts` of the file, when already known.

    Returns
    -------
    polars.DataFrame
        One row per entry of ``rows``, in that order; dtypes as :func:`readgaze.io.csv.read_csv`
        decides them on these rows.

    Raises
    ------
    ParseError
        As :func:`readgaze.io.csv.read_csv`, with the row number of the original file.
    """
    path = Path(path)
    rows = np.asarray(rows, dtype=np.int64)
    starts = line_starts(path) if starts is None else starts
    if len(starts) - 1 != n_rows or not columns:
        whole = read_csv(path, columns=columns, separator=separator)
        return whole[rows] if columns else pl.DataFrame()
    size = path.stat().st_size
    ends = np.r_[starts[1:], size]
    lines = rows + 1
    cut = np.flatnonzero(np.diff(lines) != 1) + 1  # runs of consecutive lines: one read each
    runs, last = np.split(lines, cut), b""
    with open(path, "rb") as f, tempfile.TemporaryDirectory(prefix="readgaze_rows_") as tmp:
        target = Path(tmp) / path.name
        with open(target, "wb") as out:
            out.write(f.read(int(starts[1]) if len(starts) > 1 else size))
            for run in runs:
                if not len(run):
                    continue
                f.seek(int(starts[run[0]]))
                last = f.read(int(ends[run[-1]] - starts[run[0]]))
                out.write(last)
            if last and not last.endswith(b"\n"):
                out.write(b"\n")
        try:
            return read_csv(target, columns=columns, separator=separator)
        except ParseError as e:  # name the user's row: line k of the copy is line lines[k - 2] of the file
            row = int(lines[e.row - 2]) + 1 if e.row and 2 <= e.row < len(lines) + 2 else None
            raise ParseError(e.message, file=path, row=row, column=e.column) from None


def per_run(values: pl.Series, f: Callable[[pl.Series], pl.Series]) -> pl.Series:
    """``f(values)`` for an element-wise ``f`` (e.g. a ``replace_strict`` lookup), evaluated once per run of
    equal consecutive values and repeated: a report keeps each trial's rows together, so a lookup per trial
    replaces one per row. The result equals ``f(values)``."""
    if len(values) < 2:
        return f(values)
    run = values.rle_id().to_numpy()
    first = np.flatnonzero(np.r_[True, run[1:] != run[:-1]])
    return f(values.gather(first)).gather(run)
