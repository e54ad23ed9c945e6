"""``cluster``: k-means on fixation y with one cluster per line; clusters ordered by mean y (popEye).

readgaze follows eyekit 0.7.1: the centroids start at the line midlines, which makes the method
deterministic. Carr et al. (2022) ran scikit-learn's randomly initialised KMeans (``n_init=100``) instead,
which finds other (often better) optima on drifting trials; ``init="kmeans++"`` gives that variant, seeded.
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


def _kmeans_plus_plus(y: np.ndarray, k: int, rng: np.random.Generator) -> np.ndarray:
    """k-means++ seeding of ``k`` centres from the values ``y``."""
    centres = [y[rng.integers(len(y))]]
    for _ in range(1, k):
        d2 = np.min((y[:, None] - np.array(centres)) ** 2, axis=1)
        centres.append(y[rng.choice(len(y), p=d2 / d2.sum())] if d2.sum() > 0 else y[rng.integers(len(y))])
    return np.sort(np.array(centres))


def cluster(xy: np.ndarray, line_y_px: np.ndarray, *, init: str = "midlines", n_init: int = 100,
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
    init : {"midlines", "kmeans++"}
        ``"midlines"`` (default, eyekit 0.7.1): start once at the midlines. ``"kmeans++"`` (Carr et al.
        2022): ``n_init`` seeded k-means++ starts, keep the lowest within-cluster sum of squares.
    n_init : int
        Number of starts for ``init="kmeans++"``.
    seed : int
        Seed of the k-means++ starts.

    Returns
    -------
    ndarray, int64, shape (n_fixations,)
        0-based line index per fixation.

    Raises
    ------
    ConfigError
        If ``init`` is not one of the two values above.

    References
    ----------
    Schroeder, S. (2019), popEye. Carr et al. (2022), doi:10.3758/s13428-021-01554-0.

    Examples
    --------
    >>> xy = np.array([[0, 120], [9, 125], [0, 190], [9, 185]], dtype=float)
    >>> cluster(xy, np.array([100.0, 150.0]))
    array([0, 0, 1, 1])
    """
    y = xy[:, 1]
    k = len(line_y_px)
    if init == "midlines":
        labels, _ = lloyd_1d(y, line_y_px)
    elif init == "kmeans++":
        rng = np.random.default_rng(seed)
        best = None
        for _ in range(n_init):
            lab, cen = lloyd_1d(y, _kmeans_plus_plus(y, k, rng))
            sse = float(((y - cen[lab]) ** 2).sum())
            if best is None or sse < best[0]:
                best = (sse, lab)
        labels = best[1]
    else:
        raise ConfigError(f"cluster init: got {init!r}, expected 'midlines' or 'kmeans++'")
    count = np.bincount(labels, minlength=k)
    means = np.where(count > 0, np.bincount(labels, weights=y, minlength=k) / np.maximum(count, 1), np.inf)
    rank = np.empty(k, dtype=np.int64)
    rank[np.argsort(means, kind="stable")] = np.arange(k)
    return rank[labels]
