"""Compiled sorted search for :mod:`readgaze.align`: ``np.searchsorted(keys, q, side="right")`` within groups.

Every query's answer lies in its group's run of the sorted keys (the ``align._key`` ranges of two groups
never meet), so a binary search over that run (about 4 probes for a text's lines or a line's boxes, against
about 16 over all keys) returns exactly the sorted search's position. Compiled with numba on first use
(:mod:`readgaze.lines._jit`); used when numba is loaded already or the word measures will load it.
"""

from __future__ import annotations

import numpy as np

from readgaze._jit import njit


def search_right(keys: np.ndarray, start: np.ndarray, q: np.ndarray, group: np.ndarray) -> np.ndarray:
    """``np.searchsorted(keys, q, side="right")`` where query ``i``'s answer lies in
    ``[start[group[i]], start[group[i] + 1]]``; ``group[i] < 0`` gives 0.

    ``keys`` float64 sorted, ``start`` int64 (n_groups + 1,), ``q`` float64 and ``group`` int64 (n_queries,).
    Returns int64, shape (n_queries,).
    """
    from readgaze._jit import load_numba

    load_numba()
    out = np.empty(len(q), dtype=np.int64)
    _search_right(np.ascontiguousarray(keys, np.float64), np.ascontiguousarray(start, np.int64),
                  np.ascontiguousarray(q, np.float64), np.ascontiguousarray(group, np.int64), out)
    return out


@njit(cache=True)
def _search_right(keys, start, q, group, out):
    for i in range(len(q)):
        g = group[i]
        if g < 0:
            out[i] = 0
            continue
        lo, hi = start[g], start[g + 1]
        v = q[i]
        while lo < hi:
            mid = (lo + hi) // 2
            if keys[mid] <= v:
                lo = mid + 1
            else:
                hi = mid
        out[i] = lo
