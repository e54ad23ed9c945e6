"""Frame-level line assignment: canonical ``fixations`` + ``words`` (+ ``trials``) in, ``line_index`` out.

The per-trial work is :func:`readgaze.lines.assign_trials` (batched where the method batches); this module
gathers each trial's arrays from the frames (one Python step per trial, never per row), writes the result back
and counts what it did.
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
    ``right_px`` and are left out when those are missing. All texts are computed in one pass of each
    aggregation, then cut into per-text arrays.
    """
    order = [c for c in ("text_id", "ia_index", "word_index") if c in words.columns]
    words = words.with_row_index("_order").sort([*order, "_order"])
    has_x = "left_px" in words.columns and "right_px" in words.columns
    lines = (words.group_by("text_id", "line_index").agg(pl.col("top_px").min(), pl.col("bottom_px").max())
             .sort("text_id", "line_index"))
    per_text = lines.group_by("text_id", maintain_order=True).len()
    text_ids = per_text["text_id"].to_list()
    cut_lines = np.cumsum(per_text["len"].to_numpy())[:-1]
    line_index = np.split(lines["line_index"].to_numpy().astype(np.int64), cut_lines)
    line_y = np.split(((lines["top_px"] + lines["bottom_px"]) / 2).to_numpy().astype(np.float64), cut_lines)
    out = {t: {"line_index": li, "line_y_px": ly} for t, li, ly in zip(text_ids, line_index, line_y)}
    if has_x:
        cut_words = np.cumsum(words.group_by("text_id", maintain_order=True).len()["len"].to_numpy())[:-1]
        mirror = words.group_by("text_id", maintain_order=True).agg(
            (pl.col("left_px").min() + pl.col("right_px").max()).alias("m"))["m"].to_list()
        word_xy = np.split(np.column_stack([((words["left_px"] + words["right_px"]) / 2).to_numpy(),
                                            ((words["top_px"] + words["bottom_px"]) / 2).to_numpy()]
                                           ).astype(np.float64), cut_words)
        word_line_index = np.split(words["line_index"].to_numpy(), cut_words)
        for t, m, wxy, wli in zip(text_ids, mirror, word_xy, word_line_index):
            entry = out[t]
            entry["x_mirror_px"] = float(m)  # x -> this - x mirrors the text
            entry["word_xy"] = wxy
            entry["word_line"] = np.searchsorted(entry["line_index"], wli)
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


def _right_to_left(words: pl.DataFrame, direction: str | None) -> set:
    """Text ids read right to left: all texts when ``direction == "rtl"``, else those a ``direction`` column marks."""
    from readgaze.text import check_direction

    texts = words["text_id"].cast(pl.String)
    if direction is not None:
        return set(texts.unique()) if check_direction(direction) == "rtl" else set()
    if "direction" not in words.columns:
        return set()
    for d in words["direction"].drop_nulls().unique():
        check_direction(d)
    return set(words.filter(pl.col("direction") == "rtl")["text_id"].cast(pl.String).unique())


def _mirrored(text: dict) -> dict:
    """The text's arrays with word x mirrored (see ``direction`` in :func:`assign_lines`)."""
    if "x_mirror_px" not in text:
        raise ConfigError("direction='rtl' needs word boxes with left_px and right_px (to mirror x about the text)")
    out = dict(text)
    out["word_xy"] = text["word_xy"].copy()
    out["word_xy"][:, 0] = text["x_mirror_px"] - out["word_xy"][:, 0]
    return out


def _write_back(jobs: list, assigned: list[np.ndarray], texts: dict, xy_all: np.ndarray, line: np.ndarray,
                n_trials: int) -> tuple[int, np.ndarray]:
    """Write every job's lines into ``line`` (as the text's line indices) in one vectorized pass.

    Returns the number of fixations not on their nearest midline and, per trial (row of ``bounds``), the median
    of ``y - assigned midline`` in px (NaN for a trial without text or without a positioned fixation).
    """
    drift = np.full(n_trials, np.nan)
    if not jobs:
        return 0, drift
    sizes = np.array([len(j[1]) for j in jobs])
    idx = np.concatenate([j[1] for j in jobs])
    got = np.concatenate([np.zeros(0, np.int64), *assigned])
    names = list(texts)
    code = {t: k for k, t in enumerate(names)}
    offset = np.concatenate([[0], np.cumsum([len(texts[t]["line_y_px"]) for t in names])])
    all_index = np.concatenate([texts[t]["line_index"] for t in names])
    all_y = np.concatenate([texts[t]["line_y_px"] for t in names])
    job_text = np.array([code[j[3]] for j in jobs])
    at = np.repeat(offset[job_text], sizes) + got
    line[idx] = all_index[at]
    y = xy_all[idx, 1]
    moved = 0
    fix_text = np.repeat(job_text, sizes)
    by_text = np.argsort(fix_text, kind="stable")
    cuts = np.cumsum(np.bincount(fix_text, minlength=len(names)))[:-1]
    for k, rows in enumerate(np.split(by_text, cuts)):           # one step per text, not per trial
        if len(rows):
            nearest = np.abs(y[rows, None] - texts[names[k]]["line_y_px"]).argmin(axis=1)
            moved += int((nearest != got[rows]).sum())
    # per-trial median of y minus the assigned midline (np.median's rule: mean of the two middle values)
    off = y - all_y[at]
    job = np.repeat(np.arange(len(jobs)), sizes)
    ranked = off[np.lexsort((off, job))]
    first = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    has = sizes > 0
    half = sizes // 2
    hi = ranked[np.minimum(first + half, len(ranked) - 1)] if len(ranked) else np.zeros(len(jobs))
    lo = ranked[np.maximum(first + half - 1, 0)] if len(ranked) else np.zeros(len(jobs))
    median = np.where(sizes % 2 == 1, hi, (lo + hi) / 2)
    drift[np.array([j[0] for j in jobs])[has]] = median[has]
    return moved, drift


def assign_lines(fixations: pl.DataFrame | pl.LazyFrame, words: pl.DataFrame | pl.LazyFrame,
                 trials: pl.DataFrame | pl.LazyFrame | None = None, method: str | Callable = "slice",
                 direction: str | None = None, **params) -> tuple[pl.DataFrame, QCLog]:
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
    direction : {"ltr", "rtl"}, optional
        Reading direction. For ``"rtl"`` (Hebrew, Arabic) every trial's fixation and word x are mirrored
        about the text's centre before the method runs, so each method that reads x (return sweeps as the
        most negative Δx in ``segment`` and ``split``, progressive runs in ``merge``/``chain``/``slice``,
        word order in ``warp``/``compare``) sees a left-to-right text; lines come back unchanged. Default:
        a ``direction`` column of ``words`` (per text) if present, else ``"ltr"``.
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
    from readgaze.lines import assign_trials, get_method, vote
    from readgaze.lines.vote import vote_many

    fixations = fixations.collect() if isinstance(fixations, pl.LazyFrame) else fixations
    words = words.collect() if isinstance(words, pl.LazyFrame) else words
    trials = trials.collect() if isinstance(trials, pl.LazyFrame) else trials
    _require(fixations, FIXATION_COLUMNS, "fixations")
    _require(words, WORD_COLUMNS, "words")
    fn = get_method(method)
    texts = text_arrays(words.with_columns(pl.col("text_id").cast(pl.String)))
    rtl = _right_to_left(words, direction)
    frame = (fixations.drop("line_index", "vertical_drift_px", "line_agreement", strict=False)
             .with_row_index("_row")
             .with_columns(pl.col("trial_id").cast(pl.String).alias("_trial"))
             .join(_trial_texts(fixations, words, trials).rename({"trial_id": "_trial", "text_id": "_text"}),
                   on="_trial", how="left")
             .sort("_trial", "fixation_index"))
    n = frame.height
    line = np.full(n, -1, dtype=np.int64)
    agreement = np.full(n, np.nan)
    xy_all = frame.select("x_px", "y_px").to_numpy().astype(np.float64)
    ok_all = np.isfinite(xy_all).all(axis=1)
    bounds = frame.with_row_index("_pos").group_by("_trial", maintain_order=True).agg(
        pl.col("_pos").first().alias("start"), pl.len().alias("n"), pl.col("_text").first())
    mirrored = {t: _mirrored(texts[t]) for t in rtl if t in texts}
    jobs = []                                                 # (trial's row in bounds, idx, xy, text id, text)
    for b, (_, start, count, text_id) in enumerate(bounds.iter_rows()):
        if text_id in texts:
            idx = np.arange(start, start + count)[ok_all[start:start + count]]
            if text_id in mirrored:
                text = mirrored[text_id]
                xy = xy_all[idx].copy()
                xy[:, 0] = text["x_mirror_px"] - xy[:, 0]
            else:
                text = texts[text_id]
                xy = xy_all[idx]
            jobs.append((b, idx, xy, text_id, text))
    trials_in = [(xy, t["line_y_px"], t.get("word_xy"), t.get("word_line")) for _, _, xy, _, t in jobs]
    if fn is vote:
        assigned_lines, agreements = vote_many(trials_in, return_agreement=True, **params)
    else:
        assigned_lines = assign_trials(trials_in, fn, **params)
    nearest_moved, drift_per_trial = _write_back(jobs, assigned_lines, texts, xy_all, line, bounds.height)
    if fn is vote and jobs:
        agreement[np.concatenate([j[1] for j in jobs])] = np.concatenate(agreements)
    drift = np.repeat(drift_per_trial, bounds["n"].to_numpy())
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
