"""``cluster``: k-means on fixation y with one cluster per line; clusters ordered by mean y (popEye).

As Carr et al. (2022) ran it (scikit-learn ``KMeans(n_init=100)``): k-means++ seeding (Arthur & Vassilvitskii
2007), ``n_init`` restarts, the restart with the lowest within-cluster sum of squares wins; deterministic from
``seed``. ``init="midlines"`` keeps eyekit 0.7.1's variant: one start at the line midlines.

In one dimension every k-means partition is a set of intervals of the sorted y, so a Lloyd step is a
``searchsorted`` of the midpoints between centres plus prefix sums: all restarts run at once in
``O(n_init * k * log n)`` per step instead of ``O(n_init * k * n)``.
"""

from __future__ import annotations

import numpy as np

from readgaze.errors import ConfigError


def lloyd_1d(y: np.ndarray, centres: np.ndarray, max_iter: int = 100) -> tuple[np.ndarray, np.ndarray]:
    """Lloyd's k-means iterations in one dimension from the given centres.

    An empty cluster keeps its previous centre; a point half-way between two centres joins the first.
    Returns ``(labels int64 (n,), centres float64 (k,))``.
    """
    centres = np.asarray(centres, dtype=np.float64).copy()
    k = len(centres)
    labels = np.abs(y[:, None] - centres).argmin(axis=1)
    for _ in range(max_iter):
        count = np.bincount(labels, minlength=k)
        total = np.bincount(labels, weights=y, minlength=k)
        centres = np.where(count > 0, total / np.maximum(count, 1), centres)
        new = np.abs(y[:, None] - centres).argmin(axis=1)
        if np.array_equal(new, labels):
            break
        labels = new
    return labels, centres


def kmeans_plus_plus(y: np.ndarray, k: int, n_init: int, rng: np.random.Generator) -> np.ndarray:
    """``n_init`` independent k-means++ seedings of ``k`` centres from the values ``y``, shape (n_init, k), sorted.

    Each next centre is a point drawn with probability proportional to its squared distance to the nearest
    centre chosen so far (uniformly when every point already sits on a centre).
    """
    n = len(y)
    rows = np.arange(n_init)
    chosen = np.empty((n_init, k))
    chosen[:, 0] = y[rng.integers(n, size=n_init)]
    d2 = (y[None, :] - chosen[:, :1]) ** 2                                      # (n_init, n)
    for c in range(1, k):
        cum = np.cumsum(d2)                                 # one running sum over all starts, row after row
        total = d2.sum(axis=1)
        before = cum[rows * n] - d2[:, 0]                   # sum of the rows above each start
        u = rng.random(n_init)
        pick = np.searchsorted(cum, before + u * total, side="left") - rows * n
        pick = np.where(total > 0, np.clip(pick, 0, n - 1), (u * n).astype(np.int64))
        chosen[:, c] = y[pick]
        d2 = np.minimum(d2, (y[None, :] - chosen[:, c:c + 1]) ** 2)
    return np.sort(chosen, axis=1)


def lloyd_intervals(y_sorted: np.ndarray, centres: np.ndarray, max_iter: int = 100) -> tuple[np.ndarray, np.ndarray]:
    """Lloyd's iterations for many starts at once on sorted 1-D data.

    Parameters
    ----------
    y_sorted : ndarray, float64, shape (n,)
        The data, ascending.
    centres : ndarray, float64, shape (r, k)
        Start centres of each of ``r`` runs, ascending per row.

    Returns
    -------
    bounds : ndarray, int64, shape (r, k + 1)
        Cluster ``j`` of run ``i`` holds ``y_sorted[bounds[i, j]:bounds[i, j + 1]]`` (a point half-way between
        two centres joins the lower one; an empty cluster keeps its centre).
    sse : ndarray, float64, shape (r,)
        Within-cluster sum of squares of each run at convergence.
    """
    r, k = centres.shape
    n = len(y_sorted)
    s1 = np.concatenate([[0.0], np.cumsum(y_sorted)])
    s2 = np.concatenate([[0.0], np.cumsum(y_sorted ** 2)])
    edge = np.broadcast_to(np.array([0, n]), (r, 2))
    bounds = None
    for _ in range(max_iter):
        mid = (centres[:, 1:] + centres[:, :-1]) / 2
        new = np.concatenate([edge[:, :1], np.searchsorted(y_sorted, mid, side="right"), edge[:, 1:]], axis=1)
        if bounds is not None and np.array_equal(new, bounds):
            break
        bounds = new
        count = np.diff(bounds, axis=1)
        total = np.diff(s1[bounds], axis=1)
        centres = np.sort(np.where(count > 0, total / np.maximum(count, 1), centres), axis=1)
    count = np.diff(bounds, axis=1)
    total, square = np.diff(s1[bounds], axis=1), np.diff(s2[bounds], axis=1)
    sse = (square - total ** 2 / np.maximum(count, 1)).sum(axis=1)
    return bounds, sse


def cluster(xy: np.ndarray, line_y_px: np.ndarray, *, init: str = "kmeans++", n_init: int = 100,
            seed: int = 0) -> np.ndarray:
    """Assign fixations by k-means clustering of their y positions, one cluster per line.

    Clusters are ranked by the mean y of their fixations; the r-th cluster from the top goes to line r
    (empty clusters rank last).

    Parameters
    ----------
    xy : ndarray, float64, shape (n_fixations, 2)
        Fixation positions in px, temporal order (only y is used).
    line_y_px : ndarray, float64, shape (n_lines,)
        Line midlines in px, top to bottom.
    init : {"kmeans++", "midlines"}
        ``"kmeans++"`` (default, Carr et al. 2022): ``n_init`` seeded k-means++ starts, keep the lowest
        within-cluster sum of squares (the first such start on ties). ``"midlines"`` (eyekit 0.7.1): start
        once at the midlines.
    n_init : int
        Number of starts for ``init="kmeans++"`` (Carr et al.: 100).
    seed : int
        Seed of the k-means++ starts.

    Returns
    -------
    ndarray, int64, shape (n_fixations,)
        0-based line index per fixation.

    Raises
    ------
    ConfigError
        If ``init`` is not one of the two values above, or ``n_init < 1``.

    References
    ----------
    Carr et al. (2022), Behavior Research Methods 54(1), doi:10.3758/s13428-021-01554-0. Arthur, D., &
    Vassilvitskii, S. (2007). k-means++: the advantages of careful seeding. Proc. SODA, 1027-1035.

    Examples
    --------
    >>> xy = np.array([[0, 95], [9, 120], [0, 190], [9, 185]], dtype=float)
    >>> cluster(xy, np.array([100.0, 150.0]))
    array([0, 0, 1, 1])
    """
    y = xy[:, 1]
    k = len(line_y_px)
    if init == "midlines":
        labels, _ = lloyd_1d(y, line_y_px)
    elif init == "kmeans++":
        if n_init < 1:
            raise ConfigError(f"cluster n_init: got {n_init}, expected at least 1 start")
        order = np.argsort(y, kind="stable")
        y_sorted = y[order]
        bounds, sse = lloyd_intervals(y_sorted, kmeans_plus_plus(y_sorted, k, n_init, np.random.default_rng(seed)))
        best = bounds[int(np.argmin(sse)), 1:-1]
        labels = np.empty(len(y), dtype=np.int64)
        labels[order] = np.searchsorted(best, np.arange(len(y)), side="right")
    else:
        raise ConfigError(f"cluster init: got {init!r}, expected 'kmeans++' or 'midlines'")
    count = np.bincount(labels, minlength=k)
    means = np.where(count > 0, np.bincount(labels, weights=y, minlength=k) / np.maximum(count, 1), np.inf)
    rank = np.empty(k, dtype=np.int64)
    rank[np.argsort(means, kind="stable")] = np.arange(k)
    return rank[labels]
