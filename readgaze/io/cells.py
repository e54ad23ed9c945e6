"""Cell rules of report columns: what a key, an id, a coordinate and a duration may hold, and the counts a reader
records so that no changed cell goes unsaid.

Choices (issue 29: each fault is an error naming the cell, or a counted repair a researcher would agree with):

* **Key cells** (participant, trial number, trial id, and the columns a source builds its trial id from) must be
  non-empty, with no leading or trailing space and no control character (TAB, NUL, CR, a byte-order mark): such a
  cell would make a trial of its own. A trial number must be a whole number >= 0 (Data Viewer's ``TRIAL_INDEX``
  counts from 1); in a column of trial numbers any other value is an error (``TRIAL_INDEX = abc``, ``-32768``).
  Errors, naming the file, the row and the column.
* **Numbers** of mapped roles (:data:`ROLE_RULES`): coordinates, times and pupil sizes must be finite (``inf`` and
  ``NaN`` are errors) and coordinates within 100,000 px (interest-area box edges, on the screen, from 0), durations
  from 0 to an hour, fixation numbers whole and
  >= 1, interest-area ids whole and >= 0 (``-32768``, EyeLink's "missing", is an error pointing at the cell; Data
  Viewer writes ``.`` for "none"). A null stays null and is counted (:func:`null_counts`).
* **Completeness flags** (counts, never errors: a report may legitimately skip them): fixation numbers of a trial
  that are not 1, 2, ..., n (a deleted or moved row?) and interest-area ids of a trial that are not consecutive,
  both with the first trial named.

Sources: SR Research (2021), *EyeLink Data Viewer User's Manual* 4.2, "Fixation Report" and "Interest Area Report"
(``TRIAL_INDEX`` and ``CURRENT_FIX_INDEX`` from 1, ``.`` for a missing value).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import polars as pl

from readgaze.errors import ParseError
from readgaze.io.csv import first_row_where, require_numeric
from readgaze.qc import QCLog

PX = 100_000.0
"""Largest absolute coordinate in px (screens are below 10,000 px; gaze off screen lies within a few thousand)."""
ROLE_RULES: dict[str, dict] = {
    "start_ms": {"finite": True, "largest": 1e13, "what": "a time in ms (a finite number)"},
    "duration_ms": {"finite": True, "minimum": 0.0, "largest": 3.6e6,
                    "what": "a duration in ms (a number from 0 to 3,600,000)"},
    "x_px": {"finite": True, "largest": PX, "what": "a coordinate in px (a finite number, |x| <= 100,000)"},
    "y_px": {"finite": True, "largest": PX, "what": "a coordinate in px (a finite number, |y| <= 100,000)"},
    "pupil": {"finite": True, "what": "a pupil size (a finite number)"},
    "left_px": {"finite": True, "minimum": 0.0, "largest": PX, "what": "a box edge in px (0 to 100,000)"},
    "right_px": {"finite": True, "minimum": 0.0, "largest": PX, "what": "a box edge in px (0 to 100,000)"},
    "top_px": {"finite": True, "minimum": 0.0, "largest": PX, "what": "a box edge in px (0 to 100,000)"},
    "bottom_px": {"finite": True, "minimum": 0.0, "largest": PX, "what": "a box edge in px (0 to 100,000)"},
    "fixation_index": {"dtype": pl.Int64, "minimum": 1.0, "what": "a fixation number (1, 2, ...)"},
    "ia_id": {"dtype": pl.Int64, "minimum": 0.0,
              "what": "an interest-area id (0, 1, 2, ...; Data Viewer writes '.' for none)"},
}
"""Per role: ``dtype`` (default Float64), ``finite``, ``minimum`` and the expectation named in errors."""
_BAD_KEY = r"^\s|\s$|[\x00-\x1f\x7f\ufeff]|^(?:-32768|nan|NaN|null|None)$"
"""An edge space, a control character, or a missing-value spelling (EyeLink's -32768, NaN, null) as a key."""


def numbers(raw: pl.LazyFrame, path, cols: dict[str, str], roles: Iterable[str]) -> pl.LazyFrame:
    """``raw`` with the mapped columns of ``roles`` checked (:data:`ROLE_RULES`) and cast (one pass per dtype).

    Raises
    ------
    ParseError
        The first offending cell: file, row, column, value and what was expected.
    """
    for role in roles:
        if role in cols:
            rule = ROLE_RULES[role]
            raw = require_numeric(raw, path, [cols[role]], rule.get("dtype", pl.Float64),
                                  finite=rule.get("finite", False), minimum=rule.get("minimum"),
                                  largest=rule.get("largest"), coded=rule.get("finite", False), what=rule["what"])
    return raw


def keys(raw: pl.LazyFrame, path, columns: Iterable[str], *, numbers_only: Iterable[str] = (),
         booleans_only: Iterable[str] = ()) -> None:
    """Check the key cells of ``columns`` (module docstring); ``numbers_only``: those that hold trial numbers,
    ``booleans_only``: those that hold ``True``/``False`` (OneStop's ``repeated_reading_trial``).

    Key columns are constant over a trial's rows, so a frame in memory is checked once per run of equal keys.

    Raises
    ------
    ParseError
        An empty key cell, one with an edge space or a control character, or a trial number that is not a whole
        number >= 0 (file, row, column, value).
    """
    have = raw.collect_schema()
    columns = [c for c in dict.fromkeys(columns) if c in have]
    numbers_only = [c for c in numbers_only if c in columns]
    booleans_only = [c for c in booleans_only if c in columns]
    if not columns:
        return

    def bad(c: str) -> pl.Expr:
        col = pl.col(c)
        if have[c] == pl.String:
            text = col.str.contains(_BAD_KEY) | (col.str.len_chars() == 0)
            if c in numbers_only:
                number = col.str.strip_chars().cast(pl.Float64, strict=False)
                text = text | number.is_null() | ~_whole(number)
            if c in booleans_only:
                text = text | ~col.str.to_lowercase().is_in(["true", "false"])
            return col.is_null() | text
        if have[c].is_numeric():
            return col.is_null() | ~_whole(col.cast(pl.Float64))
        return col.is_null()

    # key columns are constant over a trial's rows: test the first row of each run of equal keys (a report keeps a
    # trial's rows together, so a few thousand rows stand for millions), then find the first offending row whole
    frame = raw.select(columns).collect()
    from readgaze.io.rows import run_starts

    firsts = frame[run_starts(frame, columns)]
    flags = firsts.select([bad(c).any().alias(c) for c in columns]).row(0, named=True)
    for c in columns:
        if flags[c]:
            row, value = first_row_where(frame.lazy(), bad(c), c, path=path)
            what = ("a trial number (0, 1, 2, ...)" if c in numbers_only else "True or False" if c in booleans_only
                    else "a key (not empty; no edge spaces or control characters)")
            shown = "an empty cell" if value is None or value == "" else repr(value)
            raise ParseError(f"got {shown}, expected {what}: a row with this key would be a trial of its own",
                             file=path, row=row, column=c)


def boxes(raw: pl.LazyFrame, path, pairs) -> None:
    """Each ``(start, end)`` column pair of a box: the end is not before the start (Data Viewer never writes an
    inverted box: a damaged cell). One pass over the pairs; a :class:`ParseError` names the first row."""
    have = set(raw.collect_schema().names())
    pairs = [(lo, hi) for lo, hi in pairs if lo in have and hi in have]
    if not pairs:
        return
    bad = {hi: (pl.col(hi) < pl.col(lo)).fill_null(False) for lo, hi in pairs}
    found = raw.select([e.any().alias(hi) for hi, e in bad.items()]).collect().row(0, named=True)
    for lo, hi in pairs:
        if found[hi]:
            row, value = first_row_where(raw, bad[hi], hi, path=path)
            raise ParseError(f"got {value!r}, expected an edge at or after {lo} (an inverted box)", file=path,
                             row=row, column=hi)


def _whole(number: pl.Expr) -> pl.Expr:
    return number.is_finite() & (number == number.round()) & (number >= 0) & (number < 2.0 ** 53)


def null_counts(frame: pl.DataFrame | pl.LazyFrame, qc: QCLog | None, step: str, table: str, path,
                columns: Iterable[str] | None = None) -> None:
    """One flagged QC record: the nulls of each column that has any (an emptied cell is counted; Data Viewer's
    ``.`` is a null too), the count their total."""
    if qc is None:
        return
    lf = frame.lazy()
    names = lf.collect_schema().names() if columns is None else list(columns)
    if not names:
        return
    counts = lf.select([pl.col(c).null_count() for c in names]).collect().row(0, named=True)
    hit = {c: n for c, n in counts.items() if n}
    detail = f"{Path(path).name}: " + (", ".join(f"{c} {n:,}" for c, n in hit.items()) or "none")
    qc.add(step, table, "missing values (null cells), per column", sum(hit.values()), action="flagged",
           detail=detail)


def non_finite_counts(frame: pl.DataFrame, qc: QCLog | None, step: str, table: str, path) -> None:
    """One flagged QC record: the NaN and infinite values of each Float64 column that has any (OneStop's
    ``subtlex_frequency`` holds inf; a damaged cell may too), the count their total."""
    if qc is None:
        return
    floats = [c for c, t in frame.schema.items() if t == pl.Float64]
    counts = frame.select([(pl.col(c).is_nan() | pl.col(c).is_infinite()).sum().alias(c) for c in floats]).row(
        0, named=True) if floats else {}
    hit = {c: n for c, n in counts.items() if n}
    qc.add(step, table, "non-finite values (NaN, inf), per column", sum(hit.values()), action="flagged",
           detail=f"{Path(path).name}: " + (", ".join(f"{c} {n:,}" for c, n in hit.items()) or "none"))


def stray_text(frame: pl.DataFrame, qc: QCLog | None, step: str, table: str, path, *, row: str = "__row") -> None:
    """Raise :class:`ParseError` (file, row, column, value) for a text column of ``frame`` that holds numbers but for a
    few values (at most 1 in 10, and at least 5 numbers): a damaged cell would make the column text. ``row``: each
    row's data row in ``path``, for the message. ``qc``, ``step``, ``table``: kept for the callers (unused).

    For tables built from chosen rows of a report (OneStop's trial columns, from each trial's first row), whose
    columns :func:`readgaze.io.csv.read_csv` flags only on those rows."""
    from readgaze.io.dtypes import stray_number_error
    from readgaze.io.faults import text_file

    texts = [c for c, t in frame.schema.items() if t == pl.String and c != row]
    if texts:  # a column of words is ruled out on its first values; the others are counted whole
        head = frame.head(100).select([(pl.col(c).str.strip_chars().cast(pl.Float64, strict=False).is_not_null().sum()
                                        >= 0.5 * pl.col(c).is_not_null().sum()).alias(c) for c in texts]).row(0)
        texts = [c for c, numeric in zip(texts, head) if numeric]
    if not texts:
        return
    number = {c: pl.col(c).cast(pl.Float64, strict=False) for c in texts}  # unstripped: " 5 " made the column text
    got = frame.select([pl.col(c).is_not_null().sum().alias(f"m{i}") for i, c in enumerate(texts)]
                       + [(pl.col(c).is_not_null() & number[c].is_null()).sum().alias(f"k{i}")
                          for i, c in enumerate(texts)]).row(0, named=True)
    known = text_file(path)
    for i, c in enumerate(texts):
        m, k = got[f"m{i}"], got[f"k{i}"]
        if 0 < k <= 0.1 * m and m - k >= 5:
            hit = frame.filter(pl.col(c).is_not_null() & number[c].is_null()).row(0, named=True)
            line = (known.user_line(int(hit[row])) if known is not None else int(hit[row]) + 2) if row in hit else None
            raise stray_number_error(hit[c], k, m, file=path, row=line, column=c,
                                     separator=known.separator if known is not None else ",")


def out_of_order(frame: pl.DataFrame | pl.LazyFrame, qc: QCLog | None, step: str, table: str, path, *, group: str,
                 order: str | None, value: str, what: str) -> None:
    """Count the rows whose ``value`` is below the row's before it, of the same group and (``order``) an earlier
    number: fixations of a trial start one after the other, so a start out of order is a damaged cell or row.
    Flagged, the first named in the detail. One pass over consecutive rows, no sort."""
    if qc is None:
        return
    lf = frame.lazy()
    cols = [group, value] + ([order] if order else [])
    same = pl.col(group) == pl.col(group).shift(1)  # consecutive rows of one group (a report keeps them together)
    if order:
        same = same & (pl.col(order) > pl.col(order).shift(1))
    back = lf.select(cols).filter((same & (pl.col(value) < pl.col(value).shift(1))).fill_null(False)).collect()
    detail = None
    if back.height:
        r = back.row(0, named=True)
        detail = f"{Path(path).name}: {back.height} in {back[group].n_unique()} trial(s), first {group} {r[group]}"
    qc.add(step, table, what, back.height, action="flagged", detail=detail)


def split_groups(frame: pl.DataFrame | pl.LazyFrame, qc: QCLog | None, step: str, table: str, path, *,
                 group: str, what: str) -> None:
    """Flag the groups (trials, participants) whose rows are not together: an export writes a trial's rows one after
    the other, so a trial split by rows of another is a key cell changed by hand (``msd001`` to ``abc`` on one row:
    the trial split, a one-row phantom between its parts), or a file sorted by something else. Counted, the first
    named in the detail. One pass over consecutive rows (run ids), no sort."""
    if qc is None:
        return
    keys = frame.lazy().select(group).collect()[group]
    runs = keys.rle_id()
    first = keys.filter((runs != runs.shift(1)).fill_null(True))  # each run's key
    split = first.filter(first.is_duplicated()).unique(maintain_order=True)
    detail = None
    if split.len():
        detail = f"{Path(path).name}: first {group} {split[0]} (a changed key cell, or a file sorted otherwise?)"
    qc.add(step, table, what, split.len(), action="flagged", detail=detail)


def _gaps_by_runs(pair: pl.DataFrame, group: str, index: str, first: int | None) -> bool:
    """True when every group is one run of rows whose ``index`` is ``first, first + 1, ...`` (or any start): no gap.
    False: look closer (a gap, nulls, or groups split over several runs)."""
    import numpy as np

    if pair.height == 0:
        return True
    if pair[index].null_count() or pair[group].null_count():
        return False
    run = pair[group].rle_id().to_numpy()
    new = np.r_[True, run[1:] != run[:-1]]
    if pair[group].filter(pl.Series(new)).is_duplicated().any():  # a group in two runs
        return False
    idx = pair[index].cast(pl.Int64).to_numpy()
    steps_ok = bool((new[1:] | (np.diff(idx) == 1)).all())
    return steps_ok and (first is None or bool((idx[new] == first).all()))


def index_gaps(frame: pl.DataFrame | pl.LazyFrame, qc: QCLog | None, step: str, table: str, path, *,
               group: str, index: str, first: int | None, what: str) -> None:
    """Flag the groups (trials) whose ``index`` is not ``first, first + 1, ...`` without gaps (``first`` None: any
    start), counting them, the first named in the detail (a row deleted, moved or damaged?); and, apart, the rows
    whose ``index`` is not above the row's before it in the same group (rows swapped or moved: kept in file order,
    flagged)."""
    if qc is None:
        return
    lf = frame.lazy()
    if index not in lf.collect_schema().names():
        return
    pair = lf.select(group, index).collect()
    order = f"rows out of order ({index} not above the previous row's of its {group}; kept in file order)"
    if _gaps_by_runs(pair, group, index, first):  # a report in its own order: no gap, found without a group-by
        qc.add(step, table, what, 0, action="flagged")
        qc.add(step, table, order, 0, action="flagged")
        return
    back = pair.filter(((pl.col(group) == pl.col(group).shift(1)) & (pl.col(index) <= pl.col(index).shift(1)))
                       .fill_null(False))
    qc.add(step, table, order, back.height, action="flagged",
           detail=f"{Path(path).name}: first {group} {back[group][0]}, {index} {back[index][0]}" if back.height
           else None)
    per = (pair.lazy().filter(pl.col(index).is_not_null()).group_by(group)
           .agg(lo=pl.col(index).min(), hi=pl.col(index).max(), n=pl.len(), distinct=pl.col(index).n_unique()))
    start_ok = pl.lit(True) if first is None else pl.col("lo") == first
    odd = per.filter(~(start_ok & (pl.col("hi") - pl.col("lo") + 1 == pl.col("n")) & (pl.col("distinct") ==
                                                                                         pl.col("n"))))
    odd = odd.sort(group).collect()
    detail = None
    if odd.height:
        r = odd.row(0, named=True)
        detail = (f"{Path(path).name}: first {group} {r[group]}: {r['n']} rows, {index} {r['lo']}..{r['hi']} "
                  f"(a row deleted, moved or damaged?)")
    qc.add(step, table, what, odd.height, action="flagged", detail=detail)
