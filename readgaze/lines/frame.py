"""Frame-level line assignment: canonical ``fixations`` + ``words`` (+ ``trials``) in, ``line_index`` out.

The frames become one :class:`~readgaze.lines.batch.Batch` (every trial's fixations and every text's lines as
flat arrays with offsets, no Python step per trial or row), which :func:`readgaze.lines.assign_batch` assigns
(across all trials at once for ``slice`` and ``attach``); the lines, the nearest-line moves and each trial's
median drift are written back with array operations, in the input's row order.
"""

from __future__ import annotations

import sys
from collections.abc import Callable

import numpy as np
import polars as pl

from readgaze.lines.frame_batch import (  # noqa: F401  (the frame helpers, re-exported here)
    FIXATION_COLUMNS,
    WORD_COLUMNS,
    Layout,
    _by_trial,
    _checked_inputs,
    _framed,
    _line_series,
    _require,
    _right_to_left,
    _trial_texts,
    text_layout,
)
from readgaze.qc import QCLog

STEP = "assign_lines"
COMPILED_FROM = 50_000
"""From this many assigned fixations, and only when numba is loaded already, the nearest-line moves and the
drift medians run compiled (:mod:`readgaze.lines._frame_jit`, the same numbers)."""
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
    from readgaze.lines.batch import segment_medians
    from readgaze.lines.protocol import Method
    from readgaze.lines.registry import METHODS, get_method
    from readgaze.lines.vote import vote_many

    _checked_inputs(fixations, words)
    fn = get_method(method)
    is_vote = fn is METHODS["vote"]
    f = _framed(fixations, words, trials, direction)
    layout, order, names, n, n_trials, sizes, row_text, ok, sel, kept, batch = (
        f.layout, f.order, f.names, f.n, len(f.names), f.sizes, f.row_text, f.ok, f.sel, f.kept, f.batch)
    fixations = f.fixations
    agreement = flags = None
    if is_vote or not (isinstance(fn, Method) and fn.batch is not None):
        # the method's many-trial entry point (its own batching over a list): trials in trial id order
        by_name, inputs = f.listed()
        if is_vote:
            got, agree = vote_many(inputs, return_agreement=True, **params)
        else:
            got, flags = assign_trials_reported(inputs, fn, **params)
        lines = f.flat(got)
        if is_vote:
            back = np.empty(len(by_name), dtype=np.int64)
            back[by_name] = np.arange(len(by_name))
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
    extra = {"line_index": _line_series(line),
             "vertical_drift_px": pl.Series(drift, dtype=pl.Float64, nan_to_null=True)}
    if is_vote:
        extra["line_agreement"] = pl.Series(agreement, dtype=pl.Float64, nan_to_null=True)
    return fixations.drop("line_index", "vertical_drift_px", "line_agreement", strict=False).with_columns(**extra), qc
