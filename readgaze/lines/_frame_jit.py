"""Compiled write-back of :func:`readgaze.lines.frame.assign_lines`: nearest-line moves and each trial's median drift.

One pass over the assigned fixations, the same numbers as the array functions it replaces
(``frame._off_nearest`` and :func:`readgaze.lines.batch.segment_medians`): a fixation counts as moved unless the
line above is strictly farther and the line below at least as far (``argmin``'s first-of-ties); a trial's drift
is ``np.median`` of its fixations' ``y - midline`` (the middle value, or the two middle values' sum halved).
Used once numba is loaded (the compiled ``slice`` loads it); compiled with numba on first use
(:mod:`readgaze.lines._jit`).
"""

from __future__ import annotations

import numpy as np

from readgaze.lines._jit import njit


def moved_and_drift(y: np.ndarray, lines: np.ndarray, text: np.ndarray, trial_start: np.ndarray,
                    line_y: np.ndarray, line_start: np.ndarray) -> tuple[int, np.ndarray]:
    """Moves off the nearest midline and per-trial median drift of a batch's assigned fixations.

    Parameters
    ----------
    y : ndarray, float64, shape (n_fixations,)
        Finite fixation y in px, trial after trial.
    lines : ndarray, int64, shape (n_fixations,)
        Assigned 0-based line within the trial's text.
    text, trial_start : ndarray, int64
        Each trial's text (shape (n_trials,)) and its rows ``trial_start[t]:trial_start[t + 1]``.
    line_y, line_start : ndarray
        Midlines in px (float64), text ``k`` owning ``line_start[k]:line_start[k + 1]`` (int64).

    Returns
    -------
    (int, ndarray float64 shape (n_trials,))
        Fixations not on their nearest midline; each trial's median of ``y - midline`` (NaN when empty).
    """
    drift = np.empty(len(trial_start) - 1)
    moved = _moved_and_drift(np.ascontiguousarray(y, np.float64), np.ascontiguousarray(lines, np.int64),
                             np.ascontiguousarray(text, np.int64), np.ascontiguousarray(trial_start, np.int64),
                             np.ascontiguousarray(line_y, np.float64), np.ascontiguousarray(line_start, np.int64),
                             drift)
    return int(moved), drift


@njit(cache=True)
def _moved_and_drift(y, lines, text, trial_start, line_y, line_start, drift):
    moved = 0
    m = 1
    for t in range(len(trial_start) - 1):
        m = max(m, trial_start[t + 1] - trial_start[t])
    buf = np.empty(m)
    for t in range(len(trial_start) - 1):
        s, e = trial_start[t], trial_start[t + 1]
        first, end = line_start[text[t]], line_start[text[t] + 1]
        for i in range(s, e):
            at = first + lines[i]
            d = abs(y[i] - line_y[at])
            up_ok = at == first or abs(y[i] - line_y[at - 1]) > d
            down_ok = at == end - 1 or abs(y[i] - line_y[at + 1]) >= d
            if not (up_ok and down_ok):
                moved += 1
            buf[i - s] = y[i] - line_y[at]
        n = e - s
        if n == 0:
            drift[t] = np.nan
            continue
        v = np.sort(buf[:n])
        h = n // 2
        drift[t] = v[h] if n % 2 == 1 else (v[h - 1] + v[h]) / 2
    return moved
