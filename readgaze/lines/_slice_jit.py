"""Compiled ``slice`` (:func:`readgaze.lines.slice.slice`): one pass over every trial, the same numbers.

Each trial runs Glandorf & Schroeder's (2021) steps exactly as :func:`~readgaze.lines.slice.slice` writes them,
over arrays instead of lists: a proto-line is a linked list of runs in join order (so "the reference point
nearest in x" ties to the point that joined first, as ``argmin`` over the list does), a run's mean offset is a
sum in fixation order divided by its length (``np.bincount``'s order), and proto-line means use NumPy's
pairwise sum (:func:`readgaze.lines._common.pairwise`), so every comparison sees the per-trial numbers and the lines
are identical.
A run whose y range keeps its mean offset out of the joining band (with a margin far above rounding error) is
skipped without the nearest-point search. Compiled with numba on first use (:mod:`readgaze.lines._jit`).
"""

from __future__ import annotations

import numpy as np

from readgaze.lines._common import pairwise
from readgaze.lines._jit import load_numba, njit


def slice_trials(x, y, trial_start, x_t, y_t, w_t, n_t, pitch, line_y, line_first, n_lines,
                 edge_phantoms: bool) -> np.ndarray:
    """:func:`readgaze.lines.slice.slice`'s lines for every trial, compiled.

    Parameters
    ----------
    x, y : ndarray, float64, shape (n_fixations,)
        Finite fixation positions in px, trial after trial, each in temporal order.
    trial_start : ndarray, int64, shape (n_trials + 1,)
        Trial ``t`` owns fixations ``trial_start[t]:trial_start[t + 1]`` (empty trials allowed).
    x_t, y_t, w_t, n_t, pitch : ndarray, float64, shape (n_trials,)
        Each trial's ``x_thresh``, ``y_thresh``, ``w_thresh``, ``n_thresh`` and phantom line pitch, in px.
    line_y : ndarray, float64
        Midlines in px; trial ``t``'s text has ``n_lines[t]`` of them from ``line_first[t]`` (int64 arrays).
    edge_phantoms : bool
        As :func:`~readgaze.lines.slice.slice`.

    Returns
    -------
    ndarray, int64, shape (n_fixations,)
        0-based line within each trial's text.
    """
    load_numba()
    out = np.empty(len(x), dtype=np.int64)
    _slice_kernel(x, y, np.asarray(trial_start, np.int64), x_t, y_t, w_t, n_t, pitch,
                  np.ascontiguousarray(line_y, np.float64), np.asarray(line_first, np.int64),
                  np.asarray(n_lines, np.int64), bool(edge_phantoms), out)
    return out


@njit(cache=True)
def _append(r, k, head, tail, nxt, cnt, run_len):
    """Run ``r`` joins the end of proto-line ``k``."""
    nxt[r] = -1
    if head[k] < 0:
        head[k] = r
    else:
        nxt[tail[k]] = r
    tail[k] = r
    cnt[k] += run_len[r]


@njit(cache=True)
def _points(k, head, nxt, run_first, run_len, x, y, ph_x, ph_y, rx, ry):
    """Proto-line ``k``'s fixation positions in join order into ``rx``/``ry`` (its phantom point when it has none);
    returns how many."""
    n = 0
    r = head[k]
    while r >= 0:
        for j in range(run_first[r], run_first[r] + run_len[r]):
            rx[n], ry[n] = x[j], y[j]
            n += 1
        r = nxt[r]
    if n == 0:
        rx[0], ry[0] = ph_x[k], ph_y[k]
        n = 1
    return n


@njit(cache=True)
def _offset(r, run_first, run_len, x, y, rx, ry, n_ref):
    """Mean over run ``r``'s fixations of y minus the y of the reference point nearest in x (the first such)."""
    acc = 0.0
    for j in range(run_first[r], run_first[r] + run_len[r]):
        xj = x[j]
        best, pick = abs(rx[0] - xj), 0
        for i in range(1, n_ref):
            d = abs(rx[i] - xj)
            if d < best:
                best, pick = d, i
        acc += y[j] - ry[pick]
    return acc / run_len[r]


@njit(cache=True)
def _slice_kernel(x, y, trial_start, x_t, y_t, w_t, n_t, pitch, line_y, line_first, n_lines, edge_phantoms, out):
    """Lines (0-based within each trial's text) of every fixation into ``out``; per-trial thresholds in px."""
    n_trials = len(trial_start) - 1
    m = 1
    for t in range(n_trials):
        m = max(m, trial_start[t + 1] - trial_start[t])
    run_first = np.empty(m, np.int64)
    run_len = np.empty(m, np.int64)
    run_lo = np.empty(m)
    run_hi = np.empty(m)
    nxt = np.empty(m, np.int64)
    free = np.empty(m, np.int64)
    joins = np.empty(m, np.int64)                     # 0: stays free, 1: joins the edge, 2: the next proto-line
    n_keys = 2 * m + 3                                # keys -(m + 1) .. m + 1; key 0 at index m + 1
    head = np.empty(n_keys, np.int64)
    tail = np.empty(n_keys, np.int64)
    cnt = np.empty(n_keys, np.int64)
    ph_x = np.empty(n_keys)
    ph_y = np.empty(n_keys)
    rx = np.empty(m)
    ry = np.empty(m)
    term = np.empty(n_keys)
    mean = np.empty(n_keys)
    for t in range(n_trials):
        s, e = trial_start[t], trial_start[t + 1]
        if e == s:
            continue
        # Step 1: runs end at every saccade with |dx| > x_thresh or |dy| > y_thresh.
        n_runs = 0
        for j in range(s, e):
            if j == s or abs(x[j] - x[j - 1]) > x_t[t] or abs(y[j] - y[j - 1]) > y_t[t]:
                run_first[n_runs], run_len[n_runs], run_lo[n_runs], run_hi[n_runs] = j, 0, y[j], y[j]
                n_runs += 1
            r = n_runs - 1
            run_len[r] += 1
            run_lo[r], run_hi[r] = min(run_lo[r], y[j]), max(run_hi[r], y[j])
        # Step 2: the widest run (the first on ties) seeds proto-line 0.
        seed, widest = 0, x[run_first[0] + run_len[0] - 1] - x[run_first[0]]
        for r in range(1, n_runs):
            w = x[run_first[r] + run_len[r] - 1] - x[run_first[r]]
            if w > widest:
                seed, widest = r, w
        zero = m + 1
        top = bottom = zero
        head[zero], cnt[zero] = -1, 0
        _append(seed, zero, head, tail, nxt, cnt, run_len)
        n_free = 0
        for r in range(n_runs):
            if r != seed:
                free[n_free] = r
                n_free += 1
        # Step 3: grow up and down in turn until a round merges nothing.
        wt, nt = w_t[t], n_t[t]
        reach = max(wt, nt)
        while n_free > 0:
            merged = False
            edges = (top, bottom)
            for side in range(2):
                edge, direction = edges[side], -1 if side == 0 else 1
                new = edge + direction
                head[new], cnt[new], ph_x[new], ph_y[new] = -1, 0, np.nan, np.nan
                if side == 0:
                    top = new
                else:
                    bottom = new
                if n_free == 0:
                    break
                n_ref = _points(edge, head, nxt, run_first, run_len, x, y, ph_x, ph_y, rx, ry)
                y_lo, y_hi = ry[0], ry[0]
                for i in range(1, n_ref):
                    y_lo, y_hi = min(y_lo, ry[i]), max(y_hi, ry[i])
                n_next = 0
                for i in range(n_free):
                    r = free[i]
                    joins[i] = 0
                    lo, hi = run_lo[r] - y_hi, run_hi[r] - y_lo          # the mean offset lies in [lo, hi]
                    s_lo, s_hi = (lo, hi) if direction == 1 else (-hi, -lo)
                    margin = 1e-9 * (run_len[r] + 1.0) * (abs(lo) + abs(hi) + 1.0)
                    if s_hi <= -wt - margin or s_lo >= reach + margin:
                        continue
                    d = _offset(r, run_first, run_len, x, y, rx, ry, n_ref)
                    if abs(d) < wt:
                        joins[i] = 1
                    elif d * direction >= wt and d * direction < nt:
                        joins[i] = 2
                        n_next += 1
                if n_next == 0:                      # the next proto-line is a phantom one pitch out
                    ph_x[new] = pairwise(rx, 0, n_ref) / n_ref
                    ph_y[new] = pairwise(ry, 0, n_ref) / n_ref + pitch[t] * direction
                kept = 0
                for i in range(n_free):
                    r = free[i]
                    if joins[i] == 1:
                        _append(r, edge, head, tail, nxt, cnt, run_len)
                    elif joins[i] == 2:
                        _append(r, new, head, tail, nxt, cnt, run_len)
                    else:
                        free[kept] = r
                        kept += 1
                merged = merged or kept < n_free
                n_free = kept
            if not merged:
                break
        # Step 4: leftover runs, in order, join the proto-line (or phantom) with the smallest |offset|.
        for i in range(n_free):
            r = free[i]
            best, pick = np.inf, top
            for k in range(top, bottom + 1):
                n_ref = _points(k, head, nxt, run_first, run_len, x, y, ph_x, ph_y, rx, ry)
                d = abs(_offset(r, run_first, run_len, x, y, rx, ry, n_ref))
                if d < best:
                    best, pick = d, k
            _append(r, pick, head, tail, nxt, cnt, run_len)
        # Step 5: drop the empty edge phantoms.
        if not edge_phantoms:
            while top < bottom and cnt[top] == 0:
                top += 1
            while top < bottom and cnt[bottom] == 0:
                bottom -= 1
        # Step 6: fold the edge proto-line with fewer fixations inwards (the bottom one on ties).
        while bottom - top + 1 > n_lines[t]:
            if cnt[top] < cnt[bottom]:
                src, dst = top, top + 1
                top += 1
            else:
                src, dst = bottom, bottom - 1
                bottom -= 1
            if head[src] >= 0:
                if head[dst] < 0:
                    head[dst] = head[src]
                else:
                    nxt[tail[dst]] = head[src]
                tail[dst] = tail[src]
                cnt[dst] += cnt[src]
        # Step 7: the block's first line: the shift with the least count-weighted |mean y - midline|.
        first = 0
        n_groups = bottom - top + 1
        if not edge_phantoms and n_lines[t] > n_groups:
            for g in range(n_groups):                # each proto-line's mean y (0 when empty)
                k = top + g
                mean[g] = 0.0
                if cnt[k] > 0:
                    n = _points(k, head, nxt, run_first, run_len, x, y, ph_x, ph_y, rx, ry)
                    mean[g] = pairwise(ry, 0, n) / n
            best = np.inf
            for shift in range(n_lines[t] - n_groups + 1):
                for g in range(n_groups):
                    term[g] = cnt[top + g] * abs(mean[g] - line_y[line_first[t] + shift + g])
                c = pairwise(term, 0, n_groups)
                if c < best:
                    best, first = c, shift
        for g in range(n_groups):
            r = head[top + g]
            while r >= 0:
                for j in range(run_first[r], run_first[r] + run_len[r]):
                    out[j] = first + g
                r = nxt[r]
