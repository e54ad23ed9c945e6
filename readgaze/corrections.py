"""The reviewer's corrections log: hand-made line assignments and trial exclusions, kept as data.

``readgaze review`` appends one row per correction to ``corrections.parquet`` in the dataset folder;
``readgaze prep`` and ``readgaze assign-lines`` re-apply the log on top of the automatic line assignment, so a
dataset is reproducible from its raw files plus this log. Nothing here imports the web stack.

The log (:data:`SCHEMA`), one row per correction, in the order they were made:

* ``correction_id`` (Int64): 1, 2, ... in order; a later correction of the same fixation wins.
* ``trial_id`` (String), ``kind`` (String): ``move`` (a run of fixations moved to other lines), ``method`` (a
  line-assignment method accepted for the whole trial), ``exclude`` (the trial is dropped, with a ``reason``),
  ``include`` (an exclusion undone).
* ``fixation_index``, ``line_before``, ``line_after`` (List[Int32]): the fixations changed and their 0-based lines
  before and after (empty for ``exclude`` / ``include``).
* ``method`` (String, null unless ``kind == "method"``), ``reason`` (String), ``time_utc`` (String, ISO 8601),
  ``reviewer`` (String).
* ``fingerprint`` (String): :func:`trial_fingerprint` of the trial's fixations when the correction was made. A
  correction whose trial no longer has that fingerprint (the raw data changed) is refused, never applied.

Writes are atomic: under a lock file, the whole log is written to a temporary file, flushed to disk
(``fsync``) and renamed over ``corrections.parquet``; a process killed at any point leaves the log as it was
before or after the correction, never half written, and two writers (two browser tabs, two servers) are
serialised.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import os
from pathlib import Path

import numpy as np
import polars as pl
from filelock import FileLock

from readgaze.errors import ConfigError, ParseError
from readgaze.qc import QCLog

FILE = "corrections.parquet"
KINDS = ("move", "method", "exclude", "include")
SCHEMA = {"correction_id": pl.Int64, "trial_id": pl.String, "kind": pl.String,
          "fixation_index": pl.List(pl.Int32), "line_before": pl.List(pl.Int32), "line_after": pl.List(pl.Int32),
          "method": pl.String, "reason": pl.String, "time_utc": pl.String, "reviewer": pl.String,
          "fingerprint": pl.String}
STEP = "review"


def log_path(folder: str | Path) -> Path:
    return Path(folder) / FILE


def read_log(folder: str | Path) -> pl.DataFrame:
    """The corrections of a dataset folder (:data:`SCHEMA`, in ``correction_id`` order); empty when there is none.

    Raises
    ------
    ParseError
        ``corrections.parquet`` exists but is not a log (unreadable, or a column of :data:`SCHEMA` is missing).
    """
    path = log_path(folder)
    if not path.is_file():
        return pl.DataFrame(schema=SCHEMA)
    try:
        log = pl.read_parquet(path)
    except Exception as e:  # a foreign or damaged file: say which
        raise ParseError(f"not a corrections log ({type(e).__name__}: {e})", file=path) from e
    missing = [c for c in SCHEMA if c not in log.columns]
    if missing:
        raise ParseError(f"missing column(s) {missing}; expected a readgaze corrections log", file=path)
    return log.select([pl.col(c).cast(t) for c, t in SCHEMA.items()]).sort("correction_id")


def append(folder: str | Path, rows: list[dict]) -> pl.DataFrame:
    """Append corrections to the folder's log, atomically, and return them with their ``correction_id``.

    Each row holds the :data:`SCHEMA` columns but ``correction_id`` (given here) and ``time_utc`` (now, if absent).
    When this returns, the rows are on disk (written, fsynced, renamed into place).

    Raises
    ------
    ConfigError
        A row's ``kind`` is not one of :data:`KINDS`.
    """
    for row in rows:
        if row.get("kind") not in KINDS:
            raise ConfigError(f"correction kind: got {row.get('kind')!r}, expected one of {list(KINDS)}")
    folder = Path(folder)
    path = log_path(folder)
    with FileLock(str(path) + ".lock", timeout=30):
        log = read_log(folder)
        start = int(log["correction_id"].max() or 0) + 1
        now = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="milliseconds")
        new = pl.DataFrame([{**{c: None for c in SCHEMA}, "time_utc": now, **row,
                             "correction_id": start + k} for k, row in enumerate(rows)], schema=SCHEMA)
        tmp = path.with_name(f".{FILE}.{os.getpid()}.tmp")
        pl.concat([log, new]).write_parquet(tmp)
        with open(tmp, "rb+") as f:
            os.fsync(f.fileno())
        os.replace(tmp, path)
        _fsync_dir(folder)
    return new


def _fsync_dir(folder: Path) -> None:
    """Make the rename durable (a no-op where directories cannot be opened, e.g. Windows)."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def trial_fingerprint(fixations: pl.DataFrame) -> str:
    """SHA-256 (first 16 hex digits) of one trial's fixations as recorded: ``fixation_index`` (int64) and
    ``x_px``, ``y_px``, ``duration_ms`` (float64), in ``fixation_index`` order. Line and word assignments are not
    part of it, so re-running prep with another assigner keeps it; changed raw data changes it."""
    f = fixations.select(pl.col("fixation_index").cast(pl.Int64),
                         pl.col("x_px", "y_px", "duration_ms").cast(pl.Float64)).sort("fixation_index")
    h = hashlib.sha256()
    for c in f.columns:
        h.update(np.ascontiguousarray(f[c].fill_null(np.nan if c != "fixation_index" else -1).to_numpy()).tobytes())
    return h.hexdigest()[:16]


def fingerprints(fixations: pl.DataFrame, trial_ids) -> dict[str, str]:
    """:func:`trial_fingerprint` of each of ``trial_ids`` (the few trials a log names; absent ids are left out)."""
    ids = pl.Series(list(trial_ids), dtype=pl.String)
    part = fixations.filter(pl.col("trial_id").is_in(ids.implode()))
    return {str(k[0]): trial_fingerprint(g) for k, g in part.group_by("trial_id")}


def current(log: pl.DataFrame, fixations: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Split the log into the corrections that still fit the data and those that do not (``(valid, stale)``).

    Stale: the trial is absent from ``fixations`` or its :func:`trial_fingerprint` differs from the one recorded.
    """
    if not log.height:
        return log, log
    prints = fingerprints(fixations, log["trial_id"].unique())
    now = log["trial_id"].replace_strict(prints, default=None, return_dtype=pl.String)
    ok = now.eq_missing(log["fingerprint"]) & now.is_not_null()
    return log.filter(ok), log.filter(~ok)


def exclusions(log: pl.DataFrame) -> pl.DataFrame:
    """Trials excluded by the log (their last ``exclude`` / ``include`` is an ``exclude``): ``trial_id``, ``reason``."""
    return (log.filter(pl.col("kind").is_in(["exclude", "include"]))
            .group_by("trial_id", maintain_order=True).agg(pl.all().sort_by("correction_id").last())
            .filter(pl.col("kind") == "exclude").select("trial_id", "reason").sort("trial_id"))


def line_overrides(log: pl.DataFrame) -> pl.DataFrame:
    """Each corrected fixation's line, the latest correction winning: ``trial_id``, ``fixation_index``,
    ``line_after`` (Int32)."""
    moves = log.filter(pl.col("kind").is_in(["move", "method"])).select(
        "correction_id", "trial_id", "fixation_index", "line_after")
    if not moves.height:
        return pl.DataFrame(schema={"trial_id": pl.String, "fixation_index": pl.Int32, "line_after": pl.Int32})
    flat = moves.explode("fixation_index", "line_after").drop_nulls("fixation_index")
    return (flat.sort("correction_id").group_by("trial_id", "fixation_index", maintain_order=True).last()
            .select("trial_id", "fixation_index", "line_after"))


def effective_lines(fixations: pl.DataFrame, log: pl.DataFrame) -> pl.Series:
    """``fixations["line_index"]`` with the log's line overrides applied (Int32, same rows and order)."""
    over = line_overrides(log)
    joined = fixations.select("trial_id", pl.col("fixation_index").cast(pl.Int32), "line_index").join(
        over, on=["trial_id", "fixation_index"], how="left", maintain_order="left")
    return joined.select(pl.coalesce("line_after", pl.col("line_index").cast(pl.Int32)).alias("line_index"))[
        "line_index"]


def drop_excluded(trials: pl.DataFrame, fixations: pl.DataFrame, log: pl.DataFrame, qc: QCLog
                  ) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Drop the trials the log excludes, and their fixations, counted per reason in ``qc`` (step ``review``)."""
    out = exclusions(log)
    gone = out["trial_id"].implode()
    for (reason,), group in out.group_by("reason", maintain_order=True):
        ids = group["trial_id"].to_list()
        qc.add(STEP, "trials", f"excluded by reviewer: {reason or 'no reason given'}", len(ids),
               detail=", ".join(ids[:10]) + (", ..." if len(ids) > 10 else ""))
    n = fixations.height
    fixations = fixations.filter(~pl.col("trial_id").is_in(gone))
    qc.add(STEP, "fixations", "trial excluded by reviewer", n - fixations.height)
    return trials.filter(~pl.col("trial_id").is_in(gone)), fixations


def apply_lines(fixations: pl.DataFrame, log: pl.DataFrame, qc: QCLog) -> tuple[pl.DataFrame, list[str]]:
    """Set the line of each fixation the log corrects; returns the fixations and the ids of the trials changed.

    The changed fixations are counted in ``qc`` (``changed``), the corrected trials flagged with their ids.
    ``word_index`` / ``ia_index`` are not touched here (:func:`readgaze.align.words_on_lines` redoes them).
    """
    lines = effective_lines(fixations, log)
    differ = lines.ne_missing(fixations["line_index"].cast(pl.Int32))
    trials = fixations.filter(differ)["trial_id"].unique().sort().to_list()
    qc.add(STEP, "fixations", "line corrected by reviewer", int(differ.sum()), action="changed")
    qc.add(STEP, "trials", "line assignment corrected by reviewer", len(trials), action="flagged",
           detail=", ".join(trials[:10]) + (", ..." if len(trials) > 10 else "") or None)
    return fixations.with_columns(lines.cast(pl.Int32)), trials


def count_stale(stale: pl.DataFrame, qc: QCLog) -> None:
    """Record the refused corrections (their trial's fixations changed since the review, or it is gone)."""
    ids = stale["trial_id"].unique(maintain_order=True).to_list()
    qc.add(STEP, "corrections", "refused: the trial's fixations changed since the review (fingerprint) or it is gone",
           stale.height, action="flagged", detail=", ".join(ids[:10]) + (", ..." if len(ids) > 10 else "") or None)


def reapply(trials: pl.DataFrame, words: pl.DataFrame, fixations: pl.DataFrame, log: pl.DataFrame, qc: QCLog
            ) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The log re-applied on top of the automatic assignment: what ``readgaze prep`` does after line assignment.

    Refuses (counts, never applies) the stale corrections (:func:`current`), drops the excluded trials and their
    fixations (per reason), sets the corrected lines and redoes the word of the fixations of the corrected trials
    only (:func:`readgaze.align.words_on_lines`). Everything is counted in ``qc`` under step ``review``, zero
    counts included when a log exists.

    Returns
    -------
    (trials, fixations) : polars.DataFrame
        Same columns; the excluded trials' rows dropped, the corrected fixations' ``line_index``, ``word_index``
        and ``ia_index`` changed.
    """
    from readgaze.align import words_on_lines

    valid, stale = current(log, fixations)
    count_stale(stale, qc)
    trials, fixations = drop_excluded(trials, fixations, valid, qc)
    fixations, changed = apply_lines(fixations, valid, qc)
    if changed:
        redo = pl.col("trial_id").is_in(pl.Series(changed, dtype=pl.String).implode())
        part = fixations.with_row_index("_row").filter(redo)
        fresh = words_on_lines(part, words, trials)
        word = fixations["word_index"].clone().scatter(part["_row"], fresh["word_index"])
        ia = fixations["ia_index"].clone().scatter(part["_row"], fresh["ia_index"]) if "ia_index" in fixations.columns \
            else None
        fixations = fixations.with_columns(word, *([ia] if ia is not None else []))
    return trials, fixations
