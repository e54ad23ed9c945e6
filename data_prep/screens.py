"""Trials whose first fixations land on a later line before reading starts.

A reader sometimes looks at a later line (the middle of the screen, where the previous screen's fixation cross or
question was) before moving to the first line and starting to read. Those early fixations enter first-pass
measures as first-pass fixations of later words (and make the words between look skipped). CopCo: 161 of 321
trials of three readers.

:func:`flag_early_later_line` counts them per trial (``early_later_line_fixations``) and flags the trials in the
QC log; with ``leave_out=True`` it drops those fixations (counted), so first-pass measures start at the first
fixation on the first line. Off by default: Data Viewer's measures and the corpus authors' keep them.
"""

from __future__ import annotations

import polars as pl

from readgaze.qc import QCLog

__all__ = ["flag_early_later_line"]


def flag_early_later_line(trials: pl.DataFrame, fixations: pl.DataFrame, words: pl.DataFrame, qc: QCLog, *,
                          leave_out: bool = False) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Flag (and optionally drop) the fixations a trial makes on a later line before its first on line 0.

    Parameters
    ----------
    trials : polars.DataFrame
        ``trial_id``, ``text_id``.
    fixations : polars.DataFrame
        ``trial_id``, ``fixation_index``, ``report_ia_index`` (the word's ``ia_index``; null off text).
    words : polars.DataFrame
        ``text_id``, ``ia_index`` and ``line_index`` or ``top_px`` (the lines are the distinct tops, top to bottom).
    qc : QCLog
        Receives the flagged trials (and the dropped fixations with ``leave_out``).
    leave_out : bool
        Drop those fixations (they then count in no measure).

    Returns
    -------
    (trials, fixations)
        ``trials`` with ``early_later_line_fixations`` (UInt32: fixations on a later line before the first on the
        first line; 0 where none), ``fixations`` with ``before_reading`` (Boolean) or without those rows.

    Examples
    --------
    >>> words = pl.DataFrame({"text_id": "t", "ia_index": [0, 1, 2], "top_px": [100.0, 100.0, 200.0]})
    >>> fx = pl.DataFrame({"trial_id": "a", "fixation_index": [0, 1, 2, 3], "report_ia_index": [2, None, 0, 2]})
    >>> tr, fx2 = flag_early_later_line(pl.DataFrame({"trial_id": ["a"], "text_id": ["t"]}), fx, words, QCLog())
    >>> tr["early_later_line_fixations"].to_list(), fx2["before_reading"].to_list()
    ([1], [True, False, False, False])
    """
    if "line_index" in words.columns and not words["line_index"].null_count():
        lines = words.select("text_id", "ia_index", "line_index")
    else:
        lines = words.select("text_id", "ia_index", (pl.col("top_px").rank("dense").over("text_id") - 1)
                             .cast(pl.Int32).alias("line_index"))
    line = (fixations.select("trial_id", "fixation_index", pl.col("report_ia_index").alias("ia_index"))
            .join(trials.select("trial_id", "text_id"), on="trial_id", how="left")
            .join(lines, on=["text_id", "ia_index"], how="left", maintain_order="left"))
    first_line = (pl.col("line_index") == 0).fill_null(False)
    started = first_line.cast(pl.Int32).cum_sum().over("trial_id", order_by="fixation_index") > 0
    early = ~started & (pl.col("line_index") > 0).fill_null(False)
    flags = line.select(early.alias("before_reading"))["before_reading"]
    fixations = fixations.with_columns(flags)
    per_trial = (fixations.group_by("trial_id").agg(pl.col("before_reading").sum()
                                                     .alias("early_later_line_fixations")))
    trials = (trials.join(per_trial, on="trial_id", how="left", maintain_order="left")
              .with_columns(pl.col("early_later_line_fixations").fill_null(0).cast(pl.UInt32)))
    n = int((trials["early_later_line_fixations"] > 0).sum())
    qc.add("screens", "trials", "first fixations on a later line before the first line was fixated", n,
           action="flagged", detail="trials.early_later_line_fixations; prep copco --first-pass-from-first-line "
                                    "leaves them out")
    if leave_out:
        before = fixations.height
        fixations = fixations.filter(~pl.col("before_reading"))
        qc.add("screens", "fixations", "on a later line before the first line was fixated (--first-pass-from-"
               "first-line)", before - fixations.height)
    return trials, fixations
