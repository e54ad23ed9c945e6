"""NumPy's pairwise float64 sum as compiled kernels, for the kernels that must reproduce NumPy's rounding bit for
bit: the line assigners ``cluster`` and ``slice`` (:mod:`readgaze.lines`) and the word measures
(``readgaze._measures_pass``). Private to the ``readgaze`` package and its subpackages.

NumPy sums a run of values with ``pairwise_sum`` of its add loops (what ``np.sum`` and ``np.add.reduceat`` use);
these kernels follow the same blocking, so their sums equal NumPy's.
"""

from __future__ import annotations

import numpy as np

from readgaze._jit import njit  # numba, imported on first call

# NumPy's pairwise float64 sum (``pairwise_sum`` of its add loops, what ``np.sum`` and ``np.add.reduceat`` use for
# a run of values), for the compiled kernels that must reproduce NumPy's rounding bit for bit (cluster, slice, the
# word measures).

@njit(cache=True)
def pairwise_block(a, lo, n):
    """NumPy's pairwise sum of at most 128 values ``a[lo:lo + n]``: one by one below 8 (from -0.0, NumPy's start,
    so a sum of -0.0 values stays -0.0), else 8 interleaved accumulators combined as
    ``((r0+r1)+(r2+r3))+((r4+r5)+(r6+r7))``, then the remainder one by one."""
    if n < 8:
        res = -0.0
        for i in range(lo, lo + n):
            res += a[i]
        return res
    r0, r1, r2, r3, r4, r5, r6, r7 = a[lo], a[lo + 1], a[lo + 2], a[lo + 3], a[lo + 4], a[lo + 5], a[lo + 6], a[lo + 7]
    i = 8
    while i < n - n % 8:
        b = lo + i
        r0, r1, r2, r3 = r0 + a[b], r1 + a[b + 1], r2 + a[b + 2], r3 + a[b + 3]
        r4, r5, r6, r7 = r4 + a[b + 4], r5 + a[b + 5], r6 + a[b + 6], r7 + a[b + 7]
        i += 8
    res = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
    while i < n:
        res += a[lo + i]
        i += 1
    return res


@njit(cache=True)
def pairwise(a, lo, n):
    """NumPy's pairwise sum of the float64 values ``a[lo:lo + n]``, the same rounding.

    Longer than 128 values: the sum of two halves, the first a multiple of 8 long, recursively; the recursion
    runs on an explicit stack (numba cannot cache recursive functions).
    """
    if n <= 128:
        return pairwise_block(a, lo, n)
    return pairwise_stack(a, lo, n, np.empty(64, np.int64), np.empty(64, np.int64), np.empty(64, np.int64),
                          np.empty(64))


@njit(cache=True)
def pairwise_stack(a, lo, n, los, ns, phase, left):
    """:func:`pairwise` on caller-owned stack arrays (64 entries each), so a kernel's many sums allocate nothing."""
    if n <= 128:
        return pairwise_block(a, lo, n)
    top, ret = 0, 0.0
    los[0], ns[0], phase[0] = lo, n, 0
    while top >= 0:
        half = ns[top] // 2 - (ns[top] // 2) % 8
        if ns[top] <= 128:
            ret = pairwise_block(a, los[top], ns[top])
            top -= 1
        elif phase[top] == 0:                     # sum the first half
            phase[top] = 1
            los[top + 1], ns[top + 1], phase[top + 1] = los[top], half, 0
            top += 1
        elif phase[top] == 1:                     # then the second
            left[top], phase[top] = ret, 2
            los[top + 1], ns[top + 1], phase[top + 1] = los[top] + half, ns[top] - half, 0
            top += 1
        else:
            ret = left[top] + ret
            top -= 1
    return ret
