"""Frame-level line assignment: canonical ``fixations`` + ``words`` (+ ``trials``) in, ``line_index`` out.

The frames become one :class:`~readgaze.lines.batch.Batch` (every trial's fixations and every text's lines as
flat arrays with offsets, no Python step per trial or row), which :func:`readgaze.lines.assign_batch` assigns
(across all trials at once for ``slice`` and ``attach``); the lines, the nearest-line moves and each trial's
median drift are written back with array operations, in the input's row order.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import polars as pl

from readgaze.errors import ConfigError, SchemaError
from readgaze.qc import QCLog

STEP = "assign_lines"
COMPILED_FROM = 50_000
"""From this many assigned fixations, and only when numba is loaded already, the nearest-line moves and the
drift medians run compiled (:mod:`readgaze.lines._frame_jit`, the same numbers)."""
FIXATION_COLUMNS = ("trial_id", "fixation_index", "x_px", "y_px")
WORD_COLUMNS = ("text_id", "line_index", "top_px", "bottom_px")


def _require(frame: pl.DataFrame | pl.LazyFrame, columns: tuple[str, ...], table: str) -> None:
    names = frame.collect_schema().names() if isinstance(frame, pl.LazyFrame) else frame.columns
    missing = [c for c in columns if c not in names]
    if missing:
        raise SchemaError(f"{table}: missing column(s) {missing}; expected at least {list(columns)}",
                          column=missing[0])


@dataclass(frozen=True)
class Layout:
    """Every text's lines (and word centres) as flat arrays, texts in sorted ``text_id`` order.

    ``line_index``/``line_y`` (px midline: half-way between the line's highest word top and lowest word bottom)
    run text after text, top to bottom, text ``k`` owning ``line_start[k]:line_start[k + 1]``. Word centres
    (box centres, in ``ia_index`` order, else ``word_index``, else row order), their line's position within
    the text and ``x_mirror_px`` (``x -> x_mirror_px - x`` mirrors the text) need ``left_px``/``right_px``
    and are None without them.
    """

    names: list
    line_index: np.ndarray
    line_y: np.ndarray
    line_start: np.ndarray
    word_xy: np.ndarray | None
    word_line: np.ndarray | None
    word_start: np.ndarray | None
    x_mirror_px: np.ndarray | None


def text_layout(words: pl.DataFrame) -> Layout:
    """The :class:`Layout` of all texts of ``words`` (``text_id`` String), from one pass of each aggregation."""
    lines = (words.group_by("text_id", "line_index").agg(pl.col("top_px").min(), pl.col("bottom_px").max())
             .sort("text_id", "line_index"))
    per_text = lines.group_by("text_id", maintain_order=True).len()
    names = per_text["text_id"].to_list()
    line_start = np.concatenate([[0], np.cumsum(per_text["len"].to_numpy())]).astype(np.int64)
    line_index = lines["line_index"].to_numpy().astype(np.int64)
    line_y = ((lines["top_px"] + lines["bottom_px"]) / 2).to_numpy().astype(np.float64)
    if not ("left_px" in words.columns and "right_px" in words.columns):
        return Layout(names, line_index, line_y, line_start, None, None, None, None)
    order = [c for c in ("text_id", "ia_index", "word_index") if c in words.columns]
    words = words.with_row_index("_order").sort([*order, "_order"])
    counts = words.group_by("text_id", maintain_order=True).agg(
        pl.len(), (pl.col("left_px").min() + pl.col("right_px").max()).alias("m"))
    word_start = np.concatenate([[0], np.cumsum(counts["len"].to_numpy())]).astype(np.int64)
    word_xy = np.column_stack([((words["left_px"] + words["right_px"]) / 2).to_numpy(),
                               ((words["top_px"] + words["bottom_px"]) / 2).to_numpy()]).astype(np.float64)
    text = np.repeat(np.arange(len(names)), np.diff(word_start))
    # each word's line as its position among its text's lines: one search over (text, line_index) keys
    span = int(max(line_index.max(initial=0), words["line_index"].max() or 0) - min(line_index.min(initial=0), 0)) + 2
    lo = int(min(line_index.min(initial=0), 0))
    line_key = np.repeat(np.arange(len(names)), np.diff(line_start)) * span + (line_index - lo)
    word_key = text * span + (words["line_index"].to_numpy().astype(np.int64) - lo)
    word_line = np.searchsorted(line_key, word_key) - line_start[text]
    return Layout(names, line_index, line_y, line_start, word_xy, word_line, word_start,
                  counts["m"].to_numpy().astype(np.float64))


def _trial_texts(trial_names: pl.Series, words: pl.DataFrame, trials: pl.DataFrame | None) -> pl.DataFrame:
    """``(trial_id, text_id)`` (String) for the trials of ``fixations``."""
    if trials is not None:
        _require(trials, ("trial_id", "text_id"), "trials")
        return trials.select(pl.col("trial_id").cast(pl.String), pl.col("text_id").cast(pl.String)).unique("trial_id")
    if "trial_id" in words.columns:
        return words.select(pl.col("trial_id").cast(pl.String), pl.col("text_id").cast(pl.String)).unique("trial_id")
    texts = words["text_id"].unique()
    if len(texts) != 1:
        raise ConfigError(f"assign_lines: got words of {len(texts)} texts and no trials frame; pass trials "
                          "(trial_id, text_id) or words with a trial_id column")
    return pl.DataFrame({"trial_id": trial_names.drop_nulls()}).with_columns(
        pl.lit(texts[0], dtype=pl.String).alias("text_id"))


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


def _by_trial(fixations: pl.DataFrame) -> tuple[np.ndarray | None, np.ndarray, pl.Series, pl.DataFrame]:
    """Group the rows by trial, in ``fixation_index`` order within each trial.

    Returns ``(order, trial_start, trial_names, columns)``: ``order`` (None when the rows already come trial
    by trial in fixation order, as prepared data do) maps the grouped position to the input row; the
    trial ``t`` owns grouped rows ``trial_start[t]:trial_start[t + 1]``; ``columns`` are trial id, fixation
    index, x and y (Float64) in grouped order. Rows of one trial with equal ``fixation_index`` keep their order.
    """
    cols = fixations.select(pl.col("trial_id").cast(pl.String).alias("_trial"), pl.col("fixation_index"),
                            pl.col("x_px").cast(pl.Float64), pl.col("y_px").cast(pl.Float64))
    order = None
    for attempt in range(2):
        n = cols.height
        run = cols["_trial"].rle_id().to_numpy()
        first = np.flatnonzero(np.r_[True, run[1:] != run[:-1]]) if n else np.zeros(0, dtype=np.int64)
        names = cols["_trial"].gather(first)
        fi = cols["fixation_index"]
        grouped = names.n_unique() == len(names) and fi.null_count() == 0
        if grouped and n > 1:
            f = fi.to_numpy()
            grouped = bool(((f[1:] >= f[:-1]) | (run[1:] != run[:-1])).all())
        if grouped or attempt:
            return order, np.r_[first, n].astype(np.int64), names, cols
        order = (cols.with_row_index("_row").sort("_trial", "fixation_index", "_row", maintain_order=True)["_row"]
                 .to_numpy().astype(np.int64))
        cols = cols[order]
    raise AssertionError("unreachable")


def _off_nearest(y: np.ndarray, at: np.ndarray, first: np.ndarray, end: np.ndarray, line_y: np.ndarray) -> int:
    """How many ``y`` are not on their nearest midline (``np.abs(y - line_y).argmin()``, ties to the upper line).

    ``at`` is each value's assigned midline (index into ``line_y``), ``[first, end)`` its text's midlines.
    Distances to increasing midlines fall, then rise, so the neighbours decide: the line above must be
    strictly farther, the line below at least as far.
    """
    d = np.abs(y - line_y[at])
    above = at > first
    below = at < end - 1
    up = np.abs(y - line_y[np.where(above, at - 1, at)])
    down = np.abs(y - line_y[np.where(below, at + 1, at)])
    return int((~((~above | (up > d)) & (~below | (down >= d)))).sum())


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
    from readgaze.lines.assign import assign_batch, assign_trials_reported
    from readgaze.lines.batch import Batch, check_layouts, segment_medians
    from readgaze.lines.protocol import Method
    from readgaze.lines.registry import METHODS, get_method
    from readgaze.lines.vote import vote_many

    fixations = fixations.collect() if isinstance(fixations, pl.LazyFrame) else fixations
    words = words.collect() if isinstance(words, pl.LazyFrame) else words
    trials = trials.collect() if isinstance(trials, pl.LazyFrame) else trials
    _require(fixations, FIXATION_COLUMNS, "fixations")
    _require(words, WORD_COLUMNS, "words")
    fn = get_method(method)
    is_vote = fn is METHODS["vote"]
    words = words.with_columns(pl.col("text_id").cast(pl.String))
    layout = text_layout(words)
    rtl = _right_to_left(words, direction)
    order, trial_start, names, cols = _by_trial(fixations)
    n, n_trials = cols.height, len(names)
    # each trial's text (code into the layout; -1: none)
    pairs = _trial_texts(names, words, trials)
    text_name = names.replace_strict(pairs["trial_id"], pairs["text_id"], default=None, return_dtype=pl.String)
    code = text_name.replace_strict(layout.names, np.arange(len(layout.names)), default=-1,
                                    return_dtype=pl.Int64).to_numpy()
    sizes = np.diff(trial_start)
    row_text = np.repeat(code, sizes)
    x = cols["x_px"].to_numpy(allow_copy=True).astype(np.float64)
    y = cols["y_px"].to_numpy(allow_copy=True).astype(np.float64)
    ok = np.isfinite(x) & np.isfinite(y)
    has_text = code >= 0
    sel = ok & (row_text >= 0)                                # the rows a method sees
    check_layouts(layout.line_y, layout.line_start, np.bincount(code[has_text], minlength=len(layout.names)) > 0,
                  layout.names)
    mirror = np.array([t in rtl for t in layout.names], dtype=bool)
    word_xy = layout.word_xy
    if mirror.any():
        if layout.x_mirror_px is None:
            raise ConfigError("direction='rtl' needs word boxes with left_px and right_px (to mirror x about the "
                              "text)")
        word_xy = word_xy.copy()
        word_text = np.repeat(np.arange(len(layout.names)), np.diff(layout.word_start))
        flip = mirror[word_text]
        word_xy[flip, 0] = layout.x_mirror_px[word_text[flip]] - word_xy[flip, 0]
        flip_rows = sel & mirror[np.maximum(row_text, 0)]
        x = np.where(flip_rows, layout.x_mirror_px[np.maximum(row_text, 0)] - x, x)
    kept = np.flatnonzero(has_text)                          # trials with a text, in grouped order
    per_kept = np.add.reduceat(sel, trial_start[:-1])[kept] if n else np.zeros(len(kept), dtype=np.int64)
    batch = Batch(np.column_stack([x[sel], y[sel]]), np.concatenate([[0], np.cumsum(per_kept)]).astype(np.int64),
                  code[kept], layout.line_y, layout.line_start, word_xy, layout.word_line, layout.word_start)
    agreement = flags = None
    if is_vote or not (isinstance(fn, Method) and fn.batch is not None):
        # the method's many-trial entry point (its own batching over a list): trials in trial id order
        listed = batch.trials()
        by_name = names.gather(kept).arg_sort(nulls_last=False).to_numpy()
        inputs = [listed[k] for k in by_name]
        if is_vote:
            got, agree = vote_many(inputs, return_agreement=True, **params)
        else:
            got, flags = assign_trials_reported(inputs, fn, **params)
        back = np.empty(len(by_name), dtype=np.int64)
        back[by_name] = np.arange(len(by_name))
        lines = np.concatenate([np.zeros(0, dtype=np.int64), *(got[k] for k in back)])
        if is_vote:
            agreement = np.full(n, np.nan)
            agreement[sel] = np.concatenate([np.zeros(0), *(agree[k] for k in back)])
        if flags is not None:
            flagged_names = names.gather(kept).gather(by_name).filter(pl.Series(flags.flagged)).sort().to_list()
    else:
        lines = assign_batch(batch, fn, **params)
    # write back: the text's line indices, nearest-line moves, per-trial median drift
    at = np.repeat(layout.line_start[batch.text], batch.sizes) + lines
    line = np.full(n, -1, dtype=np.int64)
    line[sel] = layout.line_index[at]
    b_y = batch.xy[:, 1]
    if len(b_y) >= COMPILED_FROM and "numba" in sys.modules:   # its fixed cost paid already (compiled slice)
        from readgaze.lines._frame_jit import moved_and_drift

        moved, drift_kept = moved_and_drift(b_y, lines, batch.text, batch.trial_start, layout.line_y,
                                            layout.line_start)
    else:
        b_text = np.repeat(batch.text, batch.sizes)
        moved = _off_nearest(b_y, at, layout.line_start[b_text], layout.line_start[b_text + 1], layout.line_y)
        drift_kept = segment_medians(b_y - layout.line_y[at], batch.trial_start)
    drift_trial = np.full(n_trials, np.nan)
    drift_trial[kept] = drift_kept
    drift = np.repeat(drift_trial, sizes)
    if order is not None:                                     # back to the input's row order
        for a in (line, drift) if agreement is None else (line, drift, agreement):
            a[order] = a.copy()
    qc = QCLog()
    name = method if isinstance(method, str) else fn.name
    qc.add(STEP, "fixations", f"moved off the nearest line by {name}", moved, action="changed")
    qc.add(STEP, "fixations", "no text layout for the trial (line_index null)", int((row_text < 0).sum()),
           action="flagged")
    qc.add(STEP, "fixations", "missing x_px/y_px (line_index null)", int((~ok).sum()), action="flagged")
    if is_vote:
        qc.add(STEP, "fixations", "methods disagreed (line_agreement < 1)", int((agreement < 1).sum()),
               action="flagged")
    if flags is not None:
        shown = ", ".join(map(str, flagged_names[:10])) + (", ..." if len(flagged_names) > 10 else "")
        qc.add(STEP, "trials", f"flagged by {name}: {flags.reason}", len(flagged_names), action="flagged",
               detail=shown or None)
    extra = {"line_index": pl.Series(np.where(line >= 0, line, 0), dtype=pl.Int32).set(pl.Series(line < 0), None)
             if (line < 0).any() else pl.Series(line, dtype=pl.Int32),
             "vertical_drift_px": pl.Series(drift, dtype=pl.Float64, nan_to_null=True)}
    if is_vote:
        extra["line_agreement"] = pl.Series(agreement, dtype=pl.Float64, nan_to_null=True)
    return fixations.drop("line_index", "vertical_drift_px", "line_agreement", strict=False).with_columns(**extra), qc
