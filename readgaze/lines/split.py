"""``split``: two-cluster k-means on horizontal saccade lengths finds the return sweeps (Carr et al. 2022).

Saccades in the cluster with the more negative centre are return sweeps; they cut the sequence into
segments, and each segment goes to the line nearest to its mean y.
"""

from __future__ import annotations

import numpy as np

from readgaze.lines._common import (
    _chains_to_lines_kernel,
    break_points,
    chains_to_nearest_line,
    flat_trials,
    pairwise,
    saccades_ranked,
)
from readgaze.lines._jit import njit  # numba, imported on first call


def two_means_1d(values: np.ndarray) -> np.ndarray:
    """Exact (global optimum) two-cluster k-means of 1-D values; True marks the lower cluster.

    k-means with k = 2 in one dimension splits the sorted values at one point; every split between two
    distinct values is tried with prefix sums and the one with the smallest within-cluster sum of squares
    wins (the first on ties). With fewer than two distinct values every entry is False.
    """
    values = np.asarray(values, dtype=np.float64)
    order = np.argsort(values, kind="stable")
    v = values[order]
    n = len(v)
    if n < 2 or v[0] == v[-1]:
        return np.zeros(n, dtype=bool)
    k = np.arange(1, n)                                    # size of the lower cluster
    c1, c2 = np.cumsum(v)[:-1], np.cumsum(v * v)[:-1]
    t1, t2 = v.sum(), (v * v).sum()
    sse = (c2 - c1 ** 2 / k) + ((t2 - c2) - (t1 - c1) ** 2 / (n - k))
    sse[v[1:] == v[:-1]] = np.inf                          # cannot split between equal values
    lower = np.zeros(n, dtype=bool)
    lower[order[: int(k[np.argmin(sse)])]] = True
    return lower


def split(xy: np.ndarray, line_y_px: np.ndarray) -> np.ndarray:
    """Assign fixations by cutting the sequence at the saccades k-means labels as return sweeps.

    Parameters
    ----------
    xy : ndarray, float64, shape (n_fixations, 2)
        Fixation positions in px, temporal order.
    line_y_px : ndarray, float64, shape (n_lines,)
        Line midlines in px, top to bottom.

    Returns
    -------
    ndarray, int64, shape (n_fixations,)
        0-based line index per fixation.

    Notes
    -----
    Carr et al. and eyekit run a randomly initialised k-means; readgaze computes the exact optimum of the
    same objective, which is deterministic (a random start can only find it or a worse local optimum).

    References
    ----------
    Carr et al. (2022), Behavior Research Methods 54(1), doi:10.3758/s13428-021-01554-0.

    Examples
    --------
    >>> xy = np.array([[10, 98], [60, 104], [110, 99], [12, 160], [70, 155]], dtype=float)
    >>> split(xy, np.array([100.0, 150.0]))
    array([0, 0, 0, 1, 1])
    """
    sweeps = two_means_1d(np.diff(xy[:, 0]))
    return chains_to_nearest_line(xy, line_y_px, break_points(sweeps))


def split_many(trials: list[tuple]) -> list[np.ndarray]:
    """:func:`split` for ``[(xy, line_y_px, ...), ...]`` in one compiled pass; the same lines, trial by trial.

    Each trial's two-means split repeats :func:`two_means_1d`'s arithmetic: a stable sort, running sums,
    NumPy's pairwise totals (``_common.pairwise``), the first smallest sum of squares.
    """
    if not trials:
        return []
    x, y, start, line_y, line_start = flat_trials(trials)
    out = np.zeros(len(x), dtype=np.int64)
    _split_kernel(x, y, start, line_y, line_start, out)
    return np.split(out, start[1:-1])


@njit(cache=True)
def _split_kernel(x, y, start, line_y, line_start, out):
    """Return sweeps of every trial by :func:`two_means_1d` on its dx, then each segment's nearest line."""
    cut = np.zeros(len(x), dtype=np.bool_)
    for t in range(len(start) - 1):
        lo, n = start[t], start[t + 1] - start[t] - 1                  # n saccades
        if n < 2:
            continue
        dx, order = saccades_ranked(x, lo, n)
        v = dx[order]
        if v[0] == v[-1]:
            continue
        sq = v * v
        t1, t2 = pairwise(v, 0, n), pairwise(sq, 0, n)
        c1, c2, best, best_sse = 0.0, 0.0, 0, np.inf
        for k in range(1, n):                                          # size of the lower cluster
            c1 += v[k - 1]
            c2 += sq[k - 1]
            if v[k] == v[k - 1]:
                continue                                               # cannot split between equal values
            sse = (c2 - c1 * c1 / k) + ((t2 - c2) - (t1 - c1) * (t1 - c1) / (n - k))
            if sse < best_sse:
                best, best_sse = k, sse
        for i in range(best):
            cut[lo + order[i] + 1] = True
    _chains_to_lines_kernel(y, start, cut, line_y, line_start, out)


