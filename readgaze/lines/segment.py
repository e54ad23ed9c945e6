"""``segment``: the ``n_lines - 1`` most leftward saccades are the return sweeps (Abdulin & Komogortsev 2015).

The method ignores y entirely: the reading is cut into ``n_lines`` chronological segments which go to lines
0, 1, ... in order.
"""

from __future__ import annotations

import numpy as np

from readgaze.lines._common import flat_trials, saccades_ranked
from readgaze.lines._jit import njit  # numba, imported on first call


def segment(xy: np.ndarray, line_y_px: np.ndarray) -> np.ndarray:
    """Assign fixations to lines by cutting the sequence at the most negative horizontal saccades.

    Parameters
    ----------
    xy : ndarray, float64, shape (n_fixations, 2)
        Fixation positions in px, temporal order.
    line_y_px : ndarray, float64, shape (n_lines,)
        Line midlines in px, top to bottom (only their number is used).

    Returns
    -------
    ndarray, int64, shape (n_fixations,)
        0-based line index, non-decreasing in time. Equal saccade lengths are ranked by time (stable sort),
        so the earlier of two equally long sweeps is taken first.

    References
    ----------
    Abdulin, E. R., & Komogortsev, O. V. (2015). Person verification via eye movement-driven text reading
    model. IEEE BTAS. As implemented by Carr et al. (2022), doi:10.3758/s13428-021-01554-0.

    Examples
    --------
    >>> xy = np.array([[10, 0], [90, 0], [12, 0], [80, 0], [15, 0]], dtype=float)
    >>> segment(xy, np.array([0.0, 50.0, 100.0]))
    array([0, 0, 1, 1, 2])
    """
    dx = np.diff(xy[:, 0])
    sweeps = np.argsort(dx, kind="stable")[: len(line_y_px) - 1]
    step = np.zeros(len(xy), dtype=np.int64)
    step[sweeps + 1] = 1
    return np.cumsum(step)


def segment_many(trials: list[tuple]) -> list[np.ndarray]:
    """:func:`segment` for ``[(xy, line_y_px, ...), ...]`` in one compiled pass; the same lines, trial by trial."""
    if not trials:
        return []
    x, _y, start, _line_y, line_start = flat_trials(trials)
    out = np.zeros(len(x), dtype=np.int64)
    _segment_kernel(x, start, line_start, out)
    return np.split(out, start[1:-1])


@njit(cache=True)
def _segment_kernel(x, start, line_start, out):
    """Each trial's ``n_lines - 1`` most negative dx (stable ranking) start lines 1, 2, ...; ``out`` zeroed."""
    for t in range(len(start) - 1):
        lo, n = start[t], start[t + 1] - start[t] - 1
        if n < 1:
            continue
        _, order = saccades_ranked(x, lo, n)
        for i in range(min(line_start[t + 1] - line_start[t] - 1, n)):
            out[lo + order[i] + 1] = 1
        for i in range(lo + 1, start[t + 1]):
            out[i] += out[i - 1]


