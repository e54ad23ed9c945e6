"""Data Viewer interest-area measures of one trial, for the simulated IA report (private).

Definitions as verified on the OneStop sample (the rules of :mod:`readgaze.measures`; SR Research, *EyeLink
Data Viewer User's Manual* 4.2, "Interest Area Report"):
the sequence is the trial's in-word fixations in time order with off-word fixations removed (so an
off-word fixation neither splits a run nor adds to a regression path); a run is a maximal stretch
of consecutive fixations on one word. Never-fixated words get 0 for first-fixation, first-run,
last-run and regression-path durations and for the regression counts, and null for the
regression flags and the second run, as in the sample.
"""

from __future__ import annotations

import numpy as np


def ia_measures(word: np.ndarray, duration_ms: np.ndarray, n_words: int) -> dict[str, np.ndarray]:
    """Per-word Data Viewer measures of one trial.

    Parameters
    ----------
    word : numpy.ndarray, (n_fixations,) int
        0-based interest area hit by each fixation, -1 off all words.
    duration_ms : numpy.ndarray, (n_fixations,)
    n_words : int

    Returns
    -------
    dict of numpy.ndarray, each (n_words,): integer columns, and float columns with NaN for null
    (``IA_REGRESSION_IN``, ``IA_REGRESSION_OUT``, ``IA_SECOND_RUN_DWELL_TIME``).
    """
    keep = word >= 0
    w, d = word[keep].astype(np.int64), duration_ms[keep].astype(np.float64)
    count = np.bincount(w, minlength=n_words)
    fixated = count > 0
    dwell = np.bincount(w, weights=d, minlength=n_words)
    run_start = np.r_[True, w[1:] != w[:-1]] if w.size else np.zeros(0, bool)
    run_id = np.cumsum(run_start) - 1
    run_word = w[run_start]
    run_dur = np.bincount(run_id, weights=d) if w.size else np.zeros(0)
    first_run, second_run, last_run = np.zeros(n_words), np.full(n_words, np.nan), np.zeros(n_words)
    order = np.argsort(run_word, kind="stable")
    rank = np.empty_like(order)
    sorted_words = run_word[order]
    starts = np.r_[0, np.flatnonzero(np.diff(sorted_words)) + 1] if w.size else np.zeros(0, int)
    rank[order] = np.arange(order.size) - np.repeat(starts, np.diff(np.r_[starts, order.size]))
    first_run[run_word[rank == 0]] = run_dur[rank == 0]
    second_run[run_word[rank == 1]] = run_dur[rank == 1]
    is_last = rank == np.bincount(run_word, minlength=n_words)[run_word] - 1
    last_run[run_word[is_last]] = run_dur[is_last]
    first_pos = np.full(n_words, -1)
    seen, at = np.unique(w, return_index=True)
    first_pos[seen] = at
    first_fix = np.where(fixated, d[np.maximum(first_pos, 0)] if w.size else 0, 0)
    reached_before = np.r_[-1, np.maximum.accumulate(w)[:-1]] if w.size else np.zeros(0, int)
    skip = np.ones(n_words, dtype=np.int64)
    skip[fixated] = (reached_before[first_pos[fixated]] > np.flatnonzero(fixated)).astype(np.int64)
    path = np.zeros(n_words)
    for v in np.flatnonzero(fixated):  # regression path: first fixation up to the first to the right
        f = first_pos[v]
        later = np.flatnonzero(w[f + 1:] > v)
        end = f + 1 + later[0] if later.size else w.size
        path[v] = d[f:end].sum()
    prev, cur = w[:-1], w[1:]
    reg_in = np.bincount(cur[prev > cur], minlength=n_words)
    reached = np.maximum.accumulate(w)[:-1] if w.size else np.zeros(0, int)
    out_mask = (cur < prev) & (reached == prev)
    reg_out = np.bincount(prev[out_mask], minlength=n_words)
    flag = lambda c: np.where(fixated, (c > 0).astype(np.float64), np.nan)  # noqa: E731
    return {
        "IA_DWELL_TIME": np.round(dwell).astype(np.int64),
        "IA_FIRST_FIXATION_DURATION": np.round(first_fix).astype(np.int64),
        "IA_FIRST_RUN_DWELL_TIME": np.round(first_run).astype(np.int64),
        "IA_FIXATION_COUNT": count.astype(np.int64),
        "IA_LAST_RUN_DWELL_TIME": np.round(last_run).astype(np.int64),
        "IA_REGRESSION_IN": flag(reg_in),
        "IA_REGRESSION_IN_COUNT": reg_in.astype(np.int64),
        "IA_REGRESSION_OUT": flag(reg_out),
        "IA_REGRESSION_OUT_COUNT": reg_out.astype(np.int64),
        "IA_REGRESSION_PATH_DURATION": np.round(path).astype(np.int64),
        "IA_SECOND_RUN_DWELL_TIME": second_run,
        "IA_SKIP": skip,
    }
