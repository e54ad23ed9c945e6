"""Compiled ``cluster`` (:func:`readgaze.lines.cluster.cluster_many`): every trial's k-means++ starts and Lloyd runs
in one pass, number for number as :func:`~readgaze.lines.cluster.kmeans_plus_plus` and
:func:`~readgaze.lines.cluster.lloyd_intervals` compute them (NumPy's pairwise row sums,
:func:`readgaze.lines._common.pairwise`, the same sorted searches), so the chosen restart and the lines are identical.
Compiled with numba on first use (:mod:`readgaze.lines._jit`).
"""

from __future__ import annotations

import numpy as np

from readgaze.lines._common import pairwise, pairwise_stack
from readgaze.lines._jit import njit  # numba, imported on first call


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
def cluster_kernel(y_sorted, start, n_lines, first, u, u_start, n_init):
    """Label (cluster of the best restart, by position) of every sorted value; see
    :func:`readgaze.lines.cluster.cluster_many`."""
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


