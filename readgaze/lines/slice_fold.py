"""``slice``'s steps 5-7 for many trials at once (:func:`fold_and_place`), after
:func:`readgaze.lines.slice_arrays.slice_batch` has grown every trial's proto-lines: drop the empty edges, fold the
smaller edge inwards while there are more proto-lines than text lines, then place the block of proto-lines at its
best first line. The same whole-array
arithmetic as :func:`readgaze.lines.slice.slice` per trial (see :mod:`readgaze.lines.slice` for the definition and
its source), with the two offset helpers the array steps share.
"""

from __future__ import annotations

import numpy as np

from readgaze.lines.batch import segment_sums


def expand(first: np.ndarray, length: np.ndarray) -> np.ndarray:
    """Positions ``first[k], ..., first[k] + length[k] - 1`` for every k, concatenated (int64)."""
    total = int(length.sum())
    if total == 0:
        return np.zeros(0, dtype=np.int64)
    offset = np.repeat(np.cumsum(length) - length, length)
    return np.repeat(first, length) + (np.arange(total) - offset)


def segments(sorted_ids: np.ndarray, n: int) -> np.ndarray:
    """Start offsets (shape (n + 1,)) of ids 0..n-1 in a sorted id array."""
    return np.searchsorted(sorted_ids, np.arange(n + 1)).astype(np.int64)



def fold_and_place(y, batch, run_first, run_len, run_trial, run_key, run_rank, top, bottom, n_lines,
                   edge_phantoms, sizes) -> np.ndarray:
    """Steps 5-7 across trials from the runs' proto-lines; returns the line of every fixation."""
    n_trials = len(top)
    n_keys = bottom - top + 1
    k_start = np.r_[0, np.cumsum(n_keys)]
    local = run_key - top[run_trial]
    count = np.bincount(k_start[run_trial] + local, weights=run_len, minlength=int(k_start[-1]))
    slot = np.arange(int(k_start[-1])) - np.repeat(k_start[:-1], n_keys)
    first_key = np.zeros(n_trials, dtype=np.int64)
    last_key = n_keys - 1
    if not edge_phantoms:                                    # step 5: drop the empty edges
        nonempty = count > 0
        first_key = np.minimum.reduceat(np.where(nonempty, slot, n_keys.max()), k_start[:-1])
        last_key = np.maximum.reduceat(np.where(nonempty, slot, -1), k_start[:-1])
    while True:                                              # step 6: fold the smaller edge inwards
        fold = (last_key - first_key + 1) > n_lines
        if not fold.any():
            break
        f = np.flatnonzero(fold)
        up = count[k_start[f] + first_key[f]] < count[k_start[f] + last_key[f]]
        fu, fd = f[up], f[~up]
        count[k_start[fu] + first_key[fu] + 1] += count[k_start[fu] + first_key[fu]]
        first_key[fu] += 1
        count[k_start[fd] + last_key[fd] - 1] += count[k_start[fd] + last_key[fd]]
        last_key[fd] -= 1
    lo, hi = first_key[run_trial], last_key[run_trial]
    group = np.clip(local, lo, hi) - lo
    n_groups = last_key - first_key + 1
    start_line = np.zeros(n_trials, dtype=np.int64)
    n_free = n_lines - n_groups
    todo = np.flatnonzero(n_free > 0) if not edge_phantoms else np.zeros(0, dtype=np.int64)
    if len(todo):                                            # step 7: the block's best first line
        slot_t = np.full(n_trials, -1)
        slot_t[todo] = np.arange(len(todo))
        runs = np.flatnonzero(slot_t[run_trial] >= 0)
        order = np.where(local < lo, lo - local, np.where(local > hi, local - hi, 0))   # fold order
        runs = runs[np.lexsort((runs, run_rank[runs], order[runs], group[runs], run_trial[runs]))]
        g_start = np.r_[0, np.cumsum(n_groups[todo])]
        fix = expand(run_first[runs], run_len[runs])
        gid = np.repeat(g_start[slot_t[run_trial[runs]]] + group[runs], run_len[runs])
        seg = segments(gid, int(g_start[-1]))
        cnt = np.diff(seg).astype(np.float64)
        mean = np.where(cnt > 0, segment_sums(y[fix], seg) / np.maximum(cnt, 1.0), 0.0)
        g_trial = np.repeat(todo, n_groups[todo])
        g_index = np.arange(int(g_start[-1])) - np.repeat(g_start[:-1], n_groups[todo])
        base = batch.line_start[batch.text[g_trial]] + g_index
        cost = np.full((len(todo), int(n_free[todo].max()) + 1), np.inf)
        for k in range(cost.shape[1]):
            ok = k <= n_free[todo]
            c = segment_sums(cnt * np.abs(mean - batch.line_y[np.minimum(base + k, len(batch.line_y) - 1)]), g_start)
            cost[:, k] = np.where(ok, c, np.inf)
        start_line[todo] = cost.argmin(axis=1)
    return np.repeat(group + start_line[run_trial], run_len).astype(np.int64)
