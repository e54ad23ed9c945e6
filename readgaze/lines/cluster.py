"""``cluster``: k-means on fixation y with one cluster per line; clusters ordered by mean y (popEye).

As Carr et al. (2022) ran it (scikit-learn ``KMeans(n_init=100)``): k-means++ seeding (Arthur & Vassilvitskii
2007), ``n_init`` restarts, the restart with the lowest within-cluster sum of squares wins; deterministic from
``seed``. ``init="midlines"`` keeps eyekit 0.7.1's variant: one start at the line midlines.

In one dimension every k-means partition is a set of intervals of the sorted y, so a Lloyd step is a
``searchsorted`` of the midpoints between centres plus prefix sums: all restarts run at once in
``O(n_init * k * log n)`` per step instead of ``O(n_init * k * n)``. :func:`cluster_many` runs the same
arithmetic for many trials in one compiled pass (same lines, bit for bit).
"""

from __future__ import annotations

import numpy as np

from readgaze.errors import ConfigError
from readgaze.lines._cluster_jit import cluster_kernel
from readgaze.lines._common import in_parts


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
    d2 = np.square(y[None, :] - chosen[:, :1])                                  # (n_init, n)
    cum, gap = np.empty(n_init * n), np.empty((n_init, n))
    for c in range(1, k):
        np.cumsum(d2, out=cum)                              # one running sum over all starts, row after row
        total = d2.sum(axis=1)
        before = cum[rows * n] - d2[:, 0]                   # sum of the rows above each start
        u = rng.random(n_init)
        pick = np.searchsorted(cum, before + u * total, side="left") - rows * n
        pick = np.minimum(np.maximum(pick, 0), n - 1)
        if not (total > 0).all():
            pick = np.where(total > 0, pick, (u * n).astype(np.int64))
        chosen[:, c] = y[pick]
        np.square(np.subtract(y[None, :], chosen[:, c:c + 1], out=gap), out=gap)
        np.minimum(d2, gap, out=d2)
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
    bounds, new = np.zeros((r, k + 1), dtype=np.int64), np.zeros((r, k + 1), dtype=np.int64)
    bounds[:, -1] = new[:, -1] = n
    for step in range(max_iter):
        new[:, 1:-1] = np.searchsorted(y_sorted, (centres[:, 1:] + centres[:, :-1]) / 2, side="right")
        if step and np.array_equal(new, bounds):
            break
        bounds, new = new, bounds
        count = bounds[:, 1:] - bounds[:, :-1]
        total = s1[bounds[:, 1:]] - s1[bounds[:, :-1]]
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


def cluster_many(trials: list[tuple], *, init: str = "kmeans++", n_init: int = 100, seed: int = 0) -> list[np.ndarray]:
    """:func:`cluster` for many trials: the k-means++ starts and Lloyd runs of all trials in one compiled pass.

    Parameters
    ----------
    trials : list of (xy, line_y_px, word_xy, word_line)
        As :func:`readgaze.lines.assign_trials` (only ``xy`` and the number of lines are used).
    init, n_init, seed
        As :func:`cluster`; each trial draws its starts from its own ``np.random.default_rng(seed)``.

    Returns
    -------
    list of ndarray, int64, shape (n_fixations,)
        Exactly :func:`cluster`'s lines for each trial.

    Notes
    -----
    The compiled kernel (numba) repeats :func:`kmeans_plus_plus` and :func:`lloyd_intervals` number by
    number: the running sum over all starts, NumPy's pairwise row sums (:func:`readgaze.lines._common.pairwise`),
    the same sorted searches, so every start, every restart's sum of squares and the chosen restart are bit-identical.
    It does so in one pass per start and centre (distance update, running sum and row sum together), searches each
    draw in its start's row of the running sum only (the sum never decreases), and moves each Lloyd bound from the
    last step's (the same first index above the midpoint as a bisection finds).
    """
    if init != "kmeans++":
        return [cluster(t[0], t[1], init=init, n_init=n_init, seed=seed) for t in trials]
    if n_init < 1:
        raise ConfigError(f"cluster n_init: got {n_init}, expected at least 1 start")
    if not trials:
        return []
    y = [np.asarray(t[0], dtype=np.float64)[:, 1] for t in trials]
    n = np.array([len(v) for v in y], dtype=np.int64)
    k = np.array([len(t[1]) for t in trials], dtype=np.int64)
    start = np.concatenate([[0], np.cumsum(n)]).astype(np.int64)
    y_all = np.concatenate([np.zeros(0), *y])
    trial = np.repeat(np.arange(len(trials)), n)
    order = np.lexsort((y_all, trial))                       # each trial's stable argsort of y, offset
    # each trial's own generator, as cluster() draws; the draws depend on (n, k) only: drawn once per pair, and
    # the trials of one pair read the same uniform draws (u_start points each trial at its pair's block)
    pair = n * (int(k.max()) + 1) + k
    pairs, which = np.unique(pair, return_inverse=True)
    first_of, u_of = [], []
    for p in pairs.tolist():
        n_t, k_t = divmod(p, int(k.max()) + 1)
        rng = np.random.default_rng(seed)
        first_of.append(rng.integers(max(n_t, 1), size=n_init) if n_t else np.zeros(n_init, np.int64))
        u_of.append(rng.random((max(k_t - 1, 0), n_init)).ravel())
    u = np.concatenate([np.zeros(0), *u_of])
    u_start = np.concatenate([[0], np.cumsum([len(v) for v in u_of])]).astype(np.int64)[which]
    first = np.stack(first_of).astype(np.int64)[which].ravel()
    y_sorted = y_all[order]

    def part(a: int, b: int) -> np.ndarray:                   # trials a..b-1 (nogil: parts run side by side)
        return cluster_kernel(y_sorted[start[a]:start[b]], start[a:b + 1] - start[a], k[a:b],
                              first[a * n_init:b * n_init], u, u_start[a:b], n_init)

    sorted_label = in_parts(part, n * k * n_init)            # about the k-means++ passes' work per trial
    labels = np.empty(len(y_all), dtype=np.int64)
    labels[order] = sorted_label
    # clusters ranked by the mean y of their fixations (empty ones last), as cluster() does per trial
    offset = np.concatenate([[0], np.cumsum(k)[:-1]])
    group = offset[trial] + labels
    count = np.bincount(group, minlength=int(k.sum()))
    means = np.where(count > 0, np.bincount(group, weights=y_all, minlength=int(k.sum())) / np.maximum(count, 1),
                     np.inf)
    group_trial = np.repeat(np.arange(len(trials)), k)
    rank = np.empty(int(k.sum()), dtype=np.int64)
    by_mean = np.lexsort((means, group_trial))
    rank[by_mean] = np.arange(len(by_mean)) - offset[group_trial[by_mean]]
    return np.split(rank[group], start[1:-1])
