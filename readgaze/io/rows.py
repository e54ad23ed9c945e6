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
instead (the same values, more slowly). A file that :mod:`readgaze.io.faults` repaired is read through its cleaned
copy, whose data rows are the parse's rows.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from pathlib import Path

import numpy as np
import polars as pl

from readgaze.errors import ParseError
from readgaze.io.csv import read_csv
from readgaze.io.faults import check_text
from readgaze.qc import QCLog


def line_starts(path: str | Path, *, separator: str | None = None, encoding: str = "utf-8") -> np.ndarray:
    """Byte offset of every line's first byte (Int64; line 0 is the header) of the file the parser reads (``path``
    itself, or its cleaned copy: :func:`readgaze.io.faults.check_text`, which finds them in one pass of 1 MiB reads
    or takes the pass :func:`readgaze.io.scan.prefetch` made of the file).

    A final line break does not start a line.
    """
    return check_text(path, separator=separator, encoding=encoding).starts


def read_rows(path: str | Path, rows: np.ndarray, columns: list[str], *, n_rows: int,
              starts: np.ndarray | None = None, separator: str | None = None, decimal_comma: bool = False,
              rename: dict[str, str] | None = None) -> pl.DataFrame:
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
    separator, decimal_comma, rename
        As in :func:`readgaze.io.csv.read_csv` (``columns`` are ``rename``d names).

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
    user = Path(path)
    text = check_text(user, separator=separator)
    path = text.read_path
    rows = np.asarray(rows, dtype=np.int64)
    if not columns:  # nothing to read (every column wanted was parsed already)
        return pl.DataFrame()
    # the rows' own flags (a column with inf among the rows read, ...) are not the file's: the caller checks the values
    # it uses (readgaze.io.onestop) and the file was checked for damaged lines when it was parsed
    dialect = {"decimal_comma": decimal_comma, "rename": rename, "qc": QCLog()}
    if not len(rows):
        names = [(rename or {}).get(c, c) for c in text.names]
        return pl.DataFrame(schema={c: pl.String for c in names if c in set(columns)})
    starts = text.starts if starts is None else starts
    if len(starts) - 1 != n_rows:
        return read_csv(user, columns=columns, separator=separator, **dialect)[rows]
    size = path.stat().st_size
    lines = rows + 1
    cut = np.flatnonzero(np.diff(lines) != 1) + 1  # runs of consecutive lines: one read each
    begin = end = lines[:0]
    if len(lines):
        first, after = lines[np.r_[0, cut]], lines[np.r_[cut - 1, len(lines) - 1]] + 1
        begin = starts[first]  # a run ends where the line after it starts (at the file's end after the last)
        end = np.where(after < len(starts), starts[np.minimum(after, len(starts) - 1)], size)
    # unbuffered: each read is one system call of exactly the run's bytes (a buffered read after a seek
    # reads a whole buffer, several KiB, for a line of a few hundred bytes)
    with open(path, "rb", buffering=0) as f, tempfile.TemporaryDirectory(prefix="readgaze_rows_") as tmp:
        target = Path(tmp) / path.name
        parts = [_read_at(f, 0, int(starts[1]) if len(starts) > 1 else size)]
        parts += [_read_at(f, b, e - b) for b, e in zip(begin.tolist(), end.tolist())]
        if len(parts) > 1 and parts[-1] and not parts[-1].endswith(b"\n"):
            parts.append(b"\n")
        target.write_bytes(b"".join(parts))
        del parts
        try:
            return read_csv(target, columns=columns, separator=text.separator, **dialect)
        except ParseError as e:  # name the user's row: line k of the copy is line lines[k - 2] of the file
            row = text.user_line(int(lines[e.row - 2]) - 1) if e.row and 2 <= e.row < len(lines) + 2 else None
            raise ParseError(e.message, file=user, row=row, column=e.column) from None


def _read_at(f, offset: int, size: int) -> bytes:
    """``size`` bytes of the unbuffered file ``f`` from ``offset`` (fewer at the end of the file)."""
    f.seek(offset)
    parts, left = [], size
    while left > 0 and (chunk := f.read(left)):  # a raw read may return less than asked
        parts.append(chunk)
        left -= len(chunk)
    return parts[0] if len(parts) == 1 else b"".join(parts)


def per_run(values: pl.Series, f: Callable[[pl.Series], pl.Series]) -> pl.Series:
    """``f(values)`` for an element-wise ``f`` (e.g. a ``replace_strict`` lookup), evaluated once per run of
    equal consecutive values and repeated: a report keeps each trial's rows together, so a lookup per trial
    replaces one per row. The result equals ``f(values)``."""
    if len(values) < 2:
        return f(values)
    run = values.rle_id().to_numpy()
    first = np.flatnonzero(np.r_[True, run[1:] != run[:-1]])
    return f(values.gather(first)).gather(run)


def run_starts(frame: pl.DataFrame, columns: list[str]) -> np.ndarray:
    """Row numbers (Int64, ascending, row 0 first) where any of ``columns`` differs from the row before
    (null equals null); empty for an empty frame."""
    n = frame.height
    new = np.zeros(n, bool)
    if n:
        new[0] = True
    for c in columns if n > 1 else ():
        run = frame[c].rle_id().to_numpy()  # run numbers: no copy of the (string) column, unlike a rechunk
        new[1:] |= run[1:] != run[:-1]
    return np.flatnonzero(new)


def per_row_run(frame: pl.DataFrame, *exprs: pl.Expr) -> pl.DataFrame:
    """``frame.select(*exprs)`` for row-wise ``exprs`` (each value a function of its own row, e.g. a
    ``concat_str`` of id parts), evaluated once per run of consecutive rows that agree on every column the
    ``exprs`` read and repeated: a report keeps a trial's rows together, so a trial id is built once per
    trial, and the repeated strings share one buffer. The result equals ``frame.select(*exprs)``."""
    columns = list(dict.fromkeys(c for e in exprs for c in e.meta.root_names()))
    if frame.height < 2 or not columns:
        return frame.select(*exprs)
    starts = run_starts(frame, columns)
    values = frame.select(columns)[starts].select(*exprs)
    if len(starts) == frame.height:
        return values
    return values[np.repeat(np.arange(len(starts)), np.diff(np.r_[starts, frame.height]))]  # each row's run
