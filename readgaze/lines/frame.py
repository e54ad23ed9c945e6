"""Frame-level line assignment: canonical ``fixations`` + ``words`` (+ ``trials``) in, ``line_index`` out.

The per-trial work is :func:`readgaze.lines.assign_trial`; this module gathers each trial's arrays from the
frames (one Python step per trial, never per row), writes the result back and counts what it did.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import polars as pl

from readgaze.errors import ConfigError, SchemaError
from readgaze.qc import QCLog

STEP = "assign_lines"
FIXATION_COLUMNS = ("trial_id", "fixation_index", "x_px", "y_px")
WORD_COLUMNS = ("text_id", "line_index", "top_px", "bottom_px")


def _require(frame: pl.DataFrame | pl.LazyFrame, columns: tuple[str, ...], table: str) -> None:
    names = frame.collect_schema().names() if isinstance(frame, pl.LazyFrame) else frame.columns
    missing = [c for c in columns if c not in names]
    if missing:
        raise SchemaError(f"{table}: missing column(s) {missing}; expected at least {list(columns)}",
                          column=missing[0])


def text_arrays(words: pl.DataFrame) -> dict[str, dict[str, np.ndarray]]:
    """Per text: sorted line indices, midlines (px) and word centres in reading order.

    A line's midline is half-way between its highest word top and lowest word bottom. Word centres are
    box centres, ordered by ``ia_index`` (else ``word_index``, else row order); they need ``left_px`` and
    ``right_px`` and are left out when those are missing.
    """
    order = [c for c in ("text_id", "ia_index", "word_index") if c in words.columns]
    words = words.with_row_index("_order").sort([*order, "_order"])
    has_x = "left_px" in words.columns and "right_px" in words.columns
    out = {}
    for (text_id,), w in words.group_by("text_id", maintain_order=True):
        lines = (w.group_by("line_index").agg(pl.col("top_px").min(), pl.col("bottom_px").max())
                 .sort("line_index"))
        line_index = lines["line_index"].to_numpy().astype(np.int64)
        entry = {"line_index": line_index,
                 "line_y_px": ((lines["top_px"] + lines["bottom_px"]) / 2).to_numpy().astype(np.float64)}
        if has_x:
            entry["word_xy"] = np.column_stack([((w["left_px"] + w["right_px"]) / 2).to_numpy(),
                                                ((w["top_px"] + w["bottom_px"]) / 2).to_numpy()]).astype(np.float64)
            entry["word_line"] = np.searchsorted(line_index, w["line_index"].to_numpy())
        out[text_id] = entry
    return out


def _trial_texts(fixations: pl.DataFrame, words: pl.DataFrame, trials: pl.DataFrame | None) -> pl.DataFrame:
    """``(trial_id, text_id)`` for every trial of ``fixations``."""
    if trials is not None:
        _require(trials, ("trial_id", "text_id"), "trials")
        return trials.select(pl.col("trial_id").cast(pl.String), pl.col("text_id").cast(pl.String)).unique("trial_id")
    ids = fixations.select(pl.col("trial_id").cast(pl.String)).unique()
    if "trial_id" in words.columns:
        return words.select(pl.col("trial_id").cast(pl.String), pl.col("text_id").cast(pl.String)).unique("trial_id")
    texts = words["text_id"].unique()
    if len(texts) != 1:
        raise ConfigError(f"assign_lines: got words of {len(texts)} texts and no trials frame; pass trials "
                          "(trial_id, text_id) or words with a trial_id column")
    return ids.with_columns(pl.lit(texts[0], dtype=pl.String).alias("text_id"))


def _batched(fn, jobs: list, params: dict) -> dict[int, np.ndarray]:
    """Lines of many trials in one call, for a method that offers ``fn.assign_many`` (e.g. the learned ``dist``).

    ``fn.assign_many([(xy, line_y_px, word_xy, word_line), ...], **params) -> [lines, ...]`` batches the work
    (a neural assigner runs trials together); trials with no fixation or a one-line text keep the per-trial path.
    """
    many = getattr(fn, "assign_many", None)
    if many is None:
        return {}
    keys = [k for k, (_, _, idx, _, t) in enumerate(jobs) if len(idx) and len(t["line_y_px"]) > 1]
    out = many([(jobs[k][3], jobs[k][4]["line_y_px"], jobs[k][4].get("word_xy"), jobs[k][4].get("word_line"))
                for k in keys], **params)
    return {k: np.asarray(lines, dtype=np.int64) for k, lines in zip(keys, out)}


def assign_lines(fixations: pl.DataFrame | pl.LazyFrame, words: pl.DataFrame | pl.LazyFrame,
                 trials: pl.DataFrame | pl.LazyFrame | None = None, method: str | Callable = "slice",
                 **params) -> tuple[pl.DataFrame, QCLog]:
    """Assign each fixation to the text line it was aimed at, correcting vertical drift.

    Parameters
    ----------
    fixations : polars.DataFrame or LazyFrame
        Needs ``trial_id``, ``fixation_index``, ``x_px``, ``y_px`` (px). Any ``line_index`` is replaced.
    words : polars.DataFrame or LazyFrame
        Needs ``text_id``, ``line_index``, ``top_px``, ``bottom_px``; ``left_px``/``right_px`` for the methods
        that use word positions (``warp``, ``compare``, and plugins such as ``dist`` may).
    trials : polars.DataFrame or LazyFrame, optional
        ``trial_id`` -> ``text_id``. Without it, ``words`` must carry ``trial_id`` or hold a single text.
    method : str or callable
        See :func:`readgaze.lines.assign_trial`; ``"vote"`` with ``methods=[...]`` also adds agreement.
    **params
        Method parameters.

    Returns
    -------
    fixations : polars.DataFrame
        The input rows in their order, plus ``line_index`` (Int32, 0-based; null for a fixation without a
        position or a trial without a text layout), ``vertical_drift_px`` (Float64, px: the trial's median of
        ``y_px`` minus the assigned line's midline, repeated on each row of the trial; positive = below)
        and, for ``method="vote"``, ``line_agreement`` (Float64, share of methods that chose the line).
    qc : QCLog
        Per reason: fixations moved off their nearest line (``changed``), fixations left unassigned
        (``flagged``), and for votes the fixations where the methods disagreed (``flagged``).

    Raises
    ------
    SchemaError
        A required column is missing (named in the message).
    ConfigError
        Unknown method or parameter, or no way to find each trial's text.

    References
    ----------
    Carr et al. (2022), Behavior Research Methods 54(1), 287-310. doi:10.3758/s13428-021-01554-0.

    Examples
    --------
    >>> fix = pl.DataFrame({"trial_id": ["t"] * 3, "fixation_index": [0, 1, 2],
    ...                     "x_px": [10.0, 60.0, 12.0], "y_px": [118.0, 121.0, 170.0]})
    >>> words = pl.DataFrame({"text_id": ["a", "a"], "line_index": [0, 1], "top_px": [90.0, 140.0],
    ...                       "bottom_px": [110.0, 160.0]})
    >>> out, qc = assign_lines(fix, words, method="cluster")
    >>> out["line_index"].to_list(), out["vertical_drift_px"][0]
    ([0, 0, 1], 20.0)
    """
    from readgaze.lines import assign_trial, get_method, vote

    fixations = fixations.collect() if isinstance(fixations, pl.LazyFrame) else fixations
    words = words.collect() if isinstance(words, pl.LazyFrame) else words
    trials = trials.collect() if isinstance(trials, pl.LazyFrame) else trials
    _require(fixations, FIXATION_COLUMNS, "fixations")
    _require(words, WORD_COLUMNS, "words")
    fn = get_method(method)
    texts = text_arrays(words.with_columns(pl.col("text_id").cast(pl.String)))
    frame = (fixations.drop("line_index", "vertical_drift_px", "line_agreement", strict=False)
             .with_row_index("_row")
             .with_columns(pl.col("trial_id").cast(pl.String).alias("_trial"))
             .join(_trial_texts(fixations, words, trials).rename({"trial_id": "_trial", "text_id": "_text"}),
                   on="_trial", how="left")
             .sort("_trial", "fixation_index"))
    n = frame.height
    line = np.full(n, -1, dtype=np.int64)
    drift = np.full(n, np.nan)
    agreement = np.full(n, np.nan)
    nearest_moved = 0
    xy_all = frame.select("x_px", "y_px").to_numpy().astype(np.float64)
    ok_all = np.isfinite(xy_all).all(axis=1)
    bounds = frame.with_row_index("_pos").group_by("_trial", maintain_order=True).agg(
        pl.col("_pos").first().alias("start"), pl.len().alias("n"), pl.col("_text").first())
    jobs = []                                                     # (start, count, idx, xy, text arrays)
    for _, start, count, text_id in bounds.iter_rows():
        if text_id in texts:
            idx = np.arange(start, start + count)[ok_all[start:start + count]]
            jobs.append((start, count, idx, xy_all[idx], texts[text_id]))
    batched = _batched(fn, jobs, params)
    for j, (start, count, idx, xy, t) in enumerate(jobs):
        layout = {k: t[k] for k in ("word_xy", "word_line") if k in t}
        if fn is vote:
            got, agree = vote(xy, t["line_y_px"], return_agreement=True, **layout, **params)
            agreement[idx] = agree
        elif j in batched:
            got = batched[j]
        else:
            got = assign_trial(xy, t["line_y_px"], fn, **layout, **params)
        line[idx] = t["line_index"][got]
        nearest = np.abs(xy[:, 1:2] - t["line_y_px"]).argmin(axis=1)
        nearest_moved += int((nearest != got).sum())
        if len(idx):
            drift[start:start + count] = float(np.median(xy[:, 1] - t["line_y_px"][got]))
    qc = QCLog()
    name = method if isinstance(method, str) else getattr(fn, "__name__", str(method))
    qc.add(STEP, "fixations", f"moved off the nearest line by {name}", nearest_moved, action="changed")
    no_text = int((~frame["_text"].is_in(list(texts)).fill_null(False)).sum())
    qc.add(STEP, "fixations", "no text layout for the trial (line_index null)", no_text, action="flagged")
    qc.add(STEP, "fixations", "missing x_px/y_px (line_index null)", int((~ok_all).sum()), action="flagged")
    if fn is vote:
        qc.add(STEP, "fixations", "methods disagreed (line_agreement < 1)", int((agreement < 1).sum()),
               action="flagged")
    assigned = pl.Series(line)
    extra = {"line_index": pl.select(pl.when(assigned >= 0).then(assigned)).to_series().cast(pl.Int32),
             "vertical_drift_px": pl.Series(drift, dtype=pl.Float64, nan_to_null=True)}
    if fn is vote:
        extra["line_agreement"] = pl.Series(agreement, dtype=pl.Float64, nan_to_null=True)
    return frame.with_columns(**extra).sort("_row").drop("_row", "_trial", "_text"), qc
