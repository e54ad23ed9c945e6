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
from readgaze.lines._common import pairwise, pairwise_stack
from readgaze.lines._jit import njit  # numba, imported on first call


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
    first, u, drawn = [], [], {}
    for n_t, k_t in zip(n.tolist(), k.tolist()):            # each trial's own generator, as cluster() draws
        if (n_t, k_t) not in drawn:                          # the draws depend on (n, k) only: drawn once each
            rng = np.random.default_rng(seed)
            drawn[n_t, k_t] = (rng.integers(max(n_t, 1), size=n_init) if n_t else np.zeros(n_init, np.int64),
                               rng.random((max(k_t - 1, 0), n_init)).ravel())
        first.append(drawn[n_t, k_t][0])
        u.append(drawn[n_t, k_t][1])
    u_start = np.concatenate([[0], np.cumsum((np.maximum(k - 1, 0)) * n_init)]).astype(np.int64)
    sorted_label = _cluster_kernel(y_all[order], start, k, np.concatenate(first).astype(np.int64),
                                   np.concatenate([np.zeros(0), *u]), u_start, n_init)
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


@njit(cache=True)
def _same_rows(a, b):
    """``np.array_equal`` of two int64 arrays of one shape, stopping at the first difference."""
    for i in range(a.shape[0]):
        for j in range(a.shape[1]):
            if a[i, j] != b[i, j]:
                return False
    return True


@njit(cache=True)
def _same_row(a, b):
    """True when the int64 rows ``a`` and ``b`` are equal and ``a`` is strictly increasing (no empty interval)."""
    for j in range(len(a)):
        if a[j] != b[j] or (j > 0 and a[j] <= a[j - 1]):
            return False
    return True


@njit(cache=True)
def _insertion_sort(v):
    """Sort a short float64 row in place (ascending; the values ``np.sort`` gives)."""
    for i in range(1, len(v)):
        x, j = v[i], i - 1
        while j >= 0 and v[j] > x:
            v[j + 1] = v[j]
            j -= 1
        v[j + 1] = x


@njit(cache=True, nogil=True)
def _cluster_kernel(y_sorted, start, n_lines, first, u, u_start, n_init):
    """Label (cluster of the best restart, by position) of every sorted value; see :func:`cluster_many`."""
    out = np.zeros(len(y_sorted), dtype=np.int64)
    los, ns, phase, left = np.empty(64, np.int64), np.empty(64, np.int64), np.empty(64, np.int64), np.empty(64)
    for t in range(len(n_lines)):
        y, n, k = y_sorted[start[t]:start[t + 1]], start[t + 1] - start[t], n_lines[t]
        if n == 0:
            continue
        # k-means++ (kmeans_plus_plus). One pass per start and centre updates the squared distances to the nearest
        # centre so far, continues the running sum over all starts (row after row, as np.cumsum adds them) and
        # sums the start's row as NumPy's pairwise sum does (8 accumulators; pairwise_stack beyond 128 values).
        # A start's draw needs only its own row of the running sum: the sum never decreases, so the first index
        # at or above the target lies in the row, or before it (pick 0) or after it (pick n - 1).
        chosen = np.empty((n_init, k))
        for r in range(n_init):
            chosen[r, 0] = y[first[t * n_init + r]]
        d2 = np.full(n_init * n, np.inf)                   # min(inf, d * d) is d * d: the first centre's distances
        cum = np.empty(n)
        n8 = n - n % 8 if n >= 8 else 0
        for c in range(1, k):
            run, before = 0.0, -np.inf
            for r in range(n_init):
                centre, row = chosen[r, c - 1], r * n
                a0 = a1 = a2 = a3 = a4 = a5 = a6 = a7 = -0.0
                for b in range(0, n8, 8):
                    for j in range(8):
                        d = y[b + j] - centre
                        v = min(d2[row + b + j], d * d)
                        d2[row + b + j] = v
                        run += v
                        cum[b + j] = run
                    a0 += d2[row + b]
                    a1 += d2[row + b + 1]
                    a2 += d2[row + b + 2]
                    a3 += d2[row + b + 3]
                    a4 += d2[row + b + 4]
                    a5 += d2[row + b + 5]
                    a6 += d2[row + b + 6]
                    a7 += d2[row + b + 7]
                total = ((a0 + a1) + (a2 + a3)) + ((a4 + a5) + (a6 + a7)) if n8 else -0.0
                for i in range(n8, n):
                    d = y[i] - centre
                    v = min(d2[row + i], d * d)
                    d2[row + i] = v
                    run += v
                    cum[i] = run
                    total += v
                if n > 128:
                    total = pairwise_stack(d2, row, n, los, ns, phase, left)
                draw = u[u_start[t] + (c - 1) * n_init + r]
                if total > 0:
                    target = (cum[0] - d2[row]) + draw * total
                    lo, hi = 0, n                          # first index with cum >= target (side="left")
                    if before >= target:
                        hi = 0
                    while lo < hi:
                        mid = (lo + hi) // 2
                        if cum[mid] < target:
                            lo = mid + 1
                        else:
                            hi = mid
                    pick = min(lo, n - 1)
                else:
                    pick = int(draw * n)
                chosen[r, c] = y[pick]
                before = cum[n - 1]
        # Lloyd's iterations on intervals (lloyd_intervals)
        centres = np.empty((n_init, k))
        for r in range(n_init):
            centres[r] = chosen[r]
            _insertion_sort(centres[r])                # np.sort's values, without allocating
        s1, s2 = np.zeros(n + 1), np.zeros(n + 1)
        run, run2 = 0.0, 0.0
        for i in range(n):
            run += y[i]
            run2 += y[i] * y[i]
            s1[i + 1], s2[i + 1] = run, run2
        bounds = np.zeros((n_init, k + 1), dtype=np.int64)
        new = np.zeros((n_init, k + 1), dtype=np.int64)
        bounds[:, k] = n
        new[:, k] = n
        # A start whose intervals did not change and are all non-empty is at a fixed point (its centres are their
        # means whatever it held before), so it is not searched again; the loop still stops when no start moves.
        fixed = np.zeros(n_init, dtype=np.bool_)
        for step in range(100):
            for r in range(n_init):
                if fixed[r]:
                    new[r] = bounds[r]
                    continue
                for j in range(k - 1):
                    mid_value = (centres[r, j + 1] + centres[r, j]) / 2
                    if step == 0:
                        lo, hi = 0, n                      # first index with y > mid (side="right")
                        while lo < hi:
                            mid = (lo + hi) // 2
                            if y[mid] <= mid_value:
                                lo = mid + 1
                            else:
                                hi = mid
                    else:                                  # the same index, walked from the last step's
                        lo = bounds[r, j + 1]
                        while lo > 0 and y[lo - 1] > mid_value:
                            lo -= 1
                        while lo < n and y[lo] <= mid_value:
                            lo += 1
                    new[r, j + 1] = lo
            if step > 0 and _same_rows(new, bounds):
                break
            if step > 0:
                for r in range(n_init):
                    if not fixed[r]:
                        fixed[r] = _same_row(new[r], bounds[r])
            bounds, new = new, bounds
            for r in range(n_init):
                if fixed[r]:
                    continue
                for j in range(k):
                    count = bounds[r, j + 1] - bounds[r, j]
                    if count > 0:
                        centres[r, j] = (s1[bounds[r, j + 1]] - s1[bounds[r, j]]) / count
                _insertion_sort(centres[r])
        best, best_sse = 0, np.inf
        terms = np.empty(k)
        for r in range(n_init):
            for j in range(k):
                count = bounds[r, j + 1] - bounds[r, j]
                total = s1[bounds[r, j + 1]] - s1[bounds[r, j]]
                terms[j] = (s2[bounds[r, j + 1]] - s2[bounds[r, j]]) - total * total / max(count, 1)
            sse = pairwise(terms, 0, k)
            if sse < best_sse:
                best, best_sse = r, sse
        for j in range(1, k):
            out[start[t] + bounds[best, j]:start[t] + bounds[best, j + 1]] = j
    return out


