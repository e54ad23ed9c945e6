"""``slice`` for many trials at once: :func:`slice_batch` runs :func:`readgaze.lines.slice.slice`'s steps for every
trial of a :class:`~readgaze.lines.batch.Batch` in the same whole-array steps (or one compiled pass,
:mod:`readgaze.lines._slice_jit`), giving bit for bit the lines of the one-trial definition (tested on simulated,
noise and the gold trials). :func:`slice_many` takes the list of trials :func:`readgaze.lines.assign_trials` holds.

The algorithm and its source (Glandorf & Schroeder 2021) are described in :mod:`readgaze.lines.slice`; this module
only reorganises the same arithmetic so that no Python loop runs over trials or fixations: the array form of slice's
steps 1-4, in their order (runs, growth, leftovers); steps 5-7 (folding and placing) are in
:mod:`readgaze.lines.slice_fold`.
"""

from __future__ import annotations

import sys

import numpy as np

from readgaze.lines._common import line_pitch, pitch_scale, scaled_px
from readgaze.lines.batch import Batch, segment_sums
from readgaze.lines.slice_fold import expand, fold_and_place, segments

KERNEL_MIN_FIXATIONS = 1_000_000
"""From this many fixations :func:`slice_batch` runs compiled (:mod:`readgaze.lines._slice_jit`, the same lines).
Below it, unless numba is loaded already, the array steps cost less than loading numba: about 0.7 CPU s once
per process, against 0.1 CPU s per million fixations compiled and 0.8 for the array steps (``readgaze prep``
at 0.6 M fixations: 3.3-3.9 CPU s with the array steps, 4.5-4.6 compiled). From a million on, the word
measures load numba anyway (:data:`readgaze.measures.COMPILED_FROM`)."""


def slice_many(trials: list[tuple], *, x_thresh: float | None = None, y_thresh: float | None = None,
               w_thresh: float | None = None, n_thresh: float | None = None,
               edge_phantoms: bool = False, compiled: bool | None = None) -> list[np.ndarray]:
    """:func:`slice` for many trials at once (see :func:`slice_batch`), one array of lines per trial.

    ``trials`` is a list of ``(xy, line_y_px, word_xy, word_line)`` as :func:`readgaze.lines.assign_trials`
    takes (the word arrays are not used); ``compiled`` is :func:`slice_batch`'s, the others :func:`slice`'s.
    """
    batch = Batch.from_trials([(xy, ly, None, None) for xy, ly, *_ in trials])
    return batch.split(slice_batch(batch, x_thresh=x_thresh, y_thresh=y_thresh, w_thresh=w_thresh,
                                   n_thresh=n_thresh, edge_phantoms=edge_phantoms, compiled=compiled))


class _Clash(Exception):
    """Two distinct x of one group share a search key (closer than the keys' resolution)."""


def _nearest_in_x(ref_k: np.ndarray, ref_rank: np.ndarray, ref_pos: np.ndarray, q_k: np.ndarray,
                  q_x: np.ndarray, ref_x: np.ndarray, ref_group: np.ndarray, q_group: np.ndarray,
                  sort_all: bool = True) -> np.ndarray:
    """Index (into the ref arrays) of the point of each query's group nearest in x.

    ``*_k`` are keys ordering points by (group, x) (see :func:`slice_batch`); ties in distance go to the point
    that joined first (``rank``, then ``pos``), as ``argmin`` over a proto-line in join order does. With
    ``sort_all=False`` the refs must come in (group, rank, pos) order already. Raises ``_Clash`` where two
    different x share a key.
    """
    order = np.lexsort((ref_pos, ref_rank, ref_k)) if sort_all else np.argsort(ref_k, kind="stable")
    rk, rx, rg = ref_k[order], ref_x[order], ref_group[order]
    same_k = rk[1:] == rk[:-1]
    if (same_k & (rx[1:] != rx[:-1]) & (rg[1:] == rg[:-1])).any():
        raise _Clash
    first = np.maximum.accumulate(np.where(np.r_[True, ~same_k], np.arange(len(rk)), 0))   # earliest of equal x
    p = np.searchsorted(rk, q_k, side="left")
    right = np.minimum(p, len(rk) - 1)
    if ((rk[right] == q_k) & (rx[right] != q_x) & (p < len(rk))).any():
        raise _Clash
    left = first[np.maximum(p - 1, 0)]
    right = first[right]
    d_l = np.where((p > 0) & (rg[left] == q_group), np.abs(q_x - rx[left]), np.inf)
    d_r = np.where((p < len(rk)) & (rg[right] == q_group), np.abs(q_x - rx[right]), np.inf)
    pick = np.where(d_l < d_r, left, right)
    tie = np.flatnonzero((d_l == d_r) & (left != right))       # equally near: the one that joined first
    if len(tie):
        lo, ro = order[left[tie]], order[right[tie]]
        earlier = (ref_rank[lo] < ref_rank[ro]) | ((ref_rank[lo] == ref_rank[ro]) & (ref_pos[lo] < ref_pos[ro]))
        pick[tie] = np.where(earlier, left[tie], right[tie])
    return order[pick]


def slice_batch(batch: Batch, *, x_thresh: float | None = None, y_thresh: float | None = None,
                w_thresh: float | None = None, n_thresh: float | None = None,
                edge_phantoms: bool = False, compiled: bool | None = None) -> np.ndarray:
    """:func:`slice` for every trial of a :class:`~readgaze.lines.batch.Batch` in the same vectorized steps.

    Parameters
    ----------
    batch : Batch
        The trials (texts of at least one line).
    x_thresh, y_thresh, w_thresh, n_thresh, edge_phantoms
        As :func:`slice` (a ``None`` threshold scales with each trial's own pitch).
    compiled : bool, optional
        ``True``: the compiled pass (:func:`readgaze.lines._slice_jit._slice_kernel`, numba); ``False``: the
        array steps below; ``None`` (default): compiled from :data:`KERNEL_MIN_FIXATIONS` fixations on, or when
        numba is loaded already. Both give the same lines.

    Returns
    -------
    ndarray, int64, shape (n_fixations,)
        :func:`slice`'s 0-based lines, trial after trial (bit-identical to calling :func:`slice` per trial).

    Notes
    -----
    Runs are the unit: one growth step (one direction of one round of step 3) handles every trial still
    growing. Only the runs that can join are searched: a run whose y range, against the y range of the
    edge proto-line, keeps its mean offset outside the joining band (with a margin far above rounding error)
    is skipped; the others' fixations find their nearest edge point in x by one sorted search over keys
    ``trial * span + x`` (exact; else ranks of x). Leftover runs (step 4) are placed one per trial at a time,
    across trials. Sums and means follow NumPy's order (sequential per run, pairwise for a proto-line's
    mean, :func:`~readgaze.lines.batch.segment_sums`), so every comparison sees the per-trial numbers.
    The compiled pass instead runs :func:`slice`'s steps trial after trial on the same numbers.
    """
    if compiled is None:
        compiled = len(batch.xy) >= KERNEL_MIN_FIXATIONS or "numba" in sys.modules
    sizes = batch.sizes
    if not compiled and (sizes == 0).any():
        batch = batch.select(sizes > 0)
        sizes = batch.sizes
    n_trials, xy = batch.n_trials, batch.xy
    if n_trials == 0 or len(xy) == 0:
        return np.zeros(0, dtype=np.int64)
    x, y = np.ascontiguousarray(xy[:, 0], dtype=np.float64), np.ascontiguousarray(xy[:, 1], dtype=np.float64)
    n = len(x)
    # Per text: thresholds and pitch, as slice computes them.
    n_texts = len(batch.line_start) - 1
    texts = np.flatnonzero(np.bincount(batch.text, minlength=n_texts))
    per_text = np.zeros((n_texts, 5))
    for k in texts.tolist():                                 # one step per text, not per trial
        ly = batch.line_y[batch.line_start[k]:batch.line_start[k + 1]]
        s = pitch_scale(ly)
        per_text[k] = (scaled_px(x_thresh, 192.0, s), scaled_px(y_thresh, 32.0, s), scaled_px(w_thresh, 32.0, s),
                       scaled_px(n_thresh, 90.0, s), line_pitch(ly))
    x_t, y_t, w_t, n_t, pitch = np.ascontiguousarray(per_text[batch.text].T)
    n_lines = batch.n_lines
    if compiled:                                             # one pass, trial after trial
        from readgaze.lines._slice_jit import slice_trials

        return slice_trials(x, y, batch.trial_start, x_t, y_t, w_t, n_t, pitch, batch.line_y,
                            batch.line_start[batch.text], n_lines, edge_phantoms)
    trial = batch.trial
    # Step 1: runs (never across trials).
    next_t = trial[1:]
    cut = (next_t != trial[:-1]) | (np.abs(np.diff(x)) > x_t[next_t]) | (np.abs(np.diff(y)) > y_t[next_t])
    run_first = np.flatnonzero(np.r_[True, cut])
    n_runs = len(run_first)
    run_len = np.diff(np.r_[run_first, n])
    run_last = run_first + run_len - 1
    run_trial = trial[run_first]
    run_ymean = np.add.reduceat(y, run_first) / run_len      # for bounds only (see the margin below)
    trial_run = segments(run_trial, n_trials)               # runs of trial t: trial_run[t]:trial_run[t+1]
    # Step 2: the widest run of each trial (the first on ties) is proto-line 0.
    width = x[run_last] - x[run_first]
    widest = width == np.maximum.reduceat(width, trial_run[:-1])[run_trial]
    seed = np.minimum.reduceat(np.where(widest, np.arange(n_runs), n_runs), trial_run[:-1])
    free = np.iinfo(np.int64).min


    # Keys ordering (trial, x): trial * span + x, span a power of two far above |x|. Rounding keeps the order;
    # should two x of a trial come closer than the keys' resolution, grow again on exact ranks of x.
    big = max(float(np.abs(x).max()), 1.0)
    span = 2.0 ** (np.ceil(np.log2(big)) + 2)
    state = (x, y, trial, run_first, run_len, run_trial, run_ymean, seed, w_t, n_t, pitch, free)
    try:
        run_key, run_rank, top, bottom, phantom_log, step = _grow_batch(trial * span + x, span, *state)
    except _Clash:
        rank = np.unique(x, return_inverse=True)[1].reshape(-1)
        span = float(rank.max() + 2)
        run_key, run_rank, top, bottom, phantom_log, step = _grow_batch(trial * span + rank, span, *state)
    _place_leftovers(x, y, trial, run_first, run_len, run_trial, run_key, run_rank, top, bottom,
                     phantom_log, step, free)
    return fold_and_place(y, batch, run_first, run_len, run_trial, run_key, run_rank, top, bottom, n_lines,
                           edge_phantoms, sizes)


def _grow_batch(key, span, x, y, trial, run_first, run_len, run_trial, run_ymean, seed, w_t, n_t, pitch, free):
    """Step 3 for all trials (see :func:`slice_batch`): returns run keys and join ranks, edges, phantoms, steps.

    Raises ``_Clash`` if two different x of a trial share a search key.
    """
    n_runs, n_trials = len(run_first), len(w_t)
    run_key = np.full(n_runs, free, dtype=np.int64)
    run_rank = np.full(n_runs, -1, dtype=np.int64)           # step at which the run joined (join order)
    run_key[seed], run_rank[seed] = 0, 0
    top = np.zeros(n_trials, dtype=np.int64)
    bottom = np.zeros(n_trials, dtype=np.int64)
    phantom = {-1: np.full((n_trials, 2), np.nan), 1: np.full((n_trials, 2), np.nan)}
    phantom_log = []                                          # (trial, key, x, y) of every phantom made
    growing = np.ones(n_trials, dtype=bool)
    live = np.arange(n_runs)                                  # runs of trials still growing
    step = 0
    # Step 3: grow all trials together, one direction at a time.
    while True:
        live = live[growing[run_trial[live]]]
        free_live = live[run_key[live] == free]
        remaining = np.bincount(run_trial[free_live], minlength=n_trials)
        growing &= remaining > 0
        if not growing.any():
            break
        merged = np.zeros(n_trials, dtype=bool)
        edges = {-1: top.copy(), 1: bottom.copy()}            # both taken at the start of the round
        for direction in (-1, 1):
            new_edge = edges[direction] + direction
            if direction == -1:
                top = np.where(growing, new_edge, top)
            else:
                bottom = np.where(growing, new_edge, bottom)
            free_live = free_live[run_key[free_live] == free]
            remaining = np.bincount(run_trial[free_live], minlength=n_trials)
            active = growing & (remaining > 0)
            if not active.any():
                break
            step += 1
            edge = edges[direction]
            # the edge proto-line: its runs in join order, expanded to fixations
            er = live[active[run_trial[live]] & (run_key[live] == edge[run_trial[live]])]
            er_t, er_r = run_trial[er], run_rank[er]
            if ((np.diff(er_r) < 0) & (np.diff(er_t) == 0)).any():
                er = er[np.lexsort((er, er_r, er_t))]
            ref = expand(run_first[er], run_len[er])
            ref_t = trial[ref]
            ref_start = segments(ref_t, n_trials)
            has_ref = np.diff(ref_start) > 0
            ph = np.flatnonzero(active & ~has_ref)             # an empty edge is its phantom point
            y_lo = np.full(n_trials, np.inf)
            y_hi = np.full(n_trials, -np.inf)
            if len(ref):
                starts = ref_start[:-1][has_ref]
                y_lo[has_ref] = np.minimum.reduceat(y[ref], starts)
                y_hi[has_ref] = np.maximum.reduceat(y[ref], starts)
            y_lo[ph] = y_hi[ph] = phantom[direction][ph, 1]
            # candidates: free runs whose mean offset can reach the joining band
            cand = free_live[active[run_trial[free_live]]]
            ct = run_trial[cand]
            # the mean offset lies in [mean y - highest ref y, mean y - lowest ref y], up to rounding,
            # which the margin (1e-9 px per fixation and px of magnitude) exceeds by orders of magnitude
            my = run_ymean[cand]
            lo, hi = my - y_hi[ct], my - y_lo[ct]
            margin = 1e-9 * (run_len[cand] + 1.0) * (np.abs(lo) + np.abs(hi) + np.abs(my) + 1.0)
            s_lo, s_hi = (lo, hi) if direction == 1 else (-hi, -lo)
            reach = np.maximum(w_t[ct], n_t[ct])
            cand = cand[(s_hi > -w_t[ct] - margin) & (s_lo < reach + margin)]
            ct = run_trial[cand]
            query = expand(run_first[cand], run_len[cand])
            q_run = np.repeat(np.arange(len(cand)), run_len[cand])
            all_ref_k = np.r_[key[ref], ph * span + phantom[direction][ph, 0]]
            all_ref_x = np.r_[x[ref], phantom[direction][ph, 0]]
            all_ref_y = np.r_[y[ref], phantom[direction][ph, 1]]
            all_ref_t = np.r_[ref_t, ph]
            all_ref_rank = np.r_[run_rank[np.repeat(er, run_len[er])], np.zeros(len(ph), dtype=np.int64)]
            all_ref_pos = np.r_[ref, np.full(len(ph), -1)]
            if len(query):
                near = _nearest_in_x(all_ref_k, all_ref_rank, all_ref_pos, key[query], x[query], all_ref_x,
                                     all_ref_t, trial[query], sort_all=False)
                offset = np.bincount(q_run, weights=y[query] - all_ref_y[near], minlength=len(cand)) / run_len[cand]
            else:
                offset = np.zeros(0)
            into_edge = np.abs(offset) < w_t[ct]
            into_next = (offset * direction >= w_t[ct]) & (offset * direction < n_t[ct])
            run_key[cand[into_edge]] = edge[ct[into_edge]]
            run_key[cand[into_next]] = new_edge[ct[into_next]]
            run_rank[cand[into_edge | into_next]] = step
            merged |= np.bincount(ct, weights=into_edge | into_next, minlength=n_trials) > 0
            no_next = active & (np.bincount(ct, weights=into_next, minlength=n_trials) == 0)
            mine = ref[no_next[ref_t]]                        # the phantom's reference points, in join order
            m_start = segments(trial[mine], n_trials)
            count = np.maximum(np.diff(m_start), 1).astype(np.float64)
            mean_x = segment_sums(x[mine], m_start) / count
            mean_y = segment_sums(y[mine], m_start) / count
            ref_mx = np.where(has_ref, mean_x, phantom[direction][:, 0])
            ref_my = np.where(has_ref, mean_y, phantom[direction][:, 1])
            made = np.column_stack([ref_mx, ref_my + pitch * direction])
            phantom[direction] = np.where(no_next[:, None], made,
                                          np.where(active[:, None], np.nan, phantom[direction]))
            t_new = np.flatnonzero(no_next)
            phantom_log.append(np.column_stack([t_new, new_edge[t_new], made[t_new]]))
        growing &= merged
    return run_key, run_rank, top, bottom, phantom_log, step


def _place_leftovers(x, y, trial, run_first, run_len, run_trial, run_key, run_rank, top, bottom,
                     phantom_log, step, free) -> None:
    """Step 4 across trials: each trial's leftover runs, in order, join the proto-line (or phantom) with the
    smallest absolute mean offset (the upper one on ties); ``run_key``/``run_rank`` are updated in place."""
    left = np.flatnonzero(run_key == free)
    if not len(left):
        return
    lt = run_trial[left]
    nth = np.arange(len(left)) - np.searchsorted(lt, lt)      # the run's place among its trial's leftovers
    trials = np.unique(lt)
    n_keys = bottom[trials] - top[trials] + 1                 # proto-lines top..bottom of each such trial
    g_start = np.r_[0, np.cumsum(n_keys)]
    slot = np.full(len(top), -1)
    slot[trials] = np.arange(len(trials))
    log = np.concatenate([np.zeros((0, 4)), *phantom_log])
    log = log[slot[log[:, 0].astype(np.int64)] >= 0] if len(log) else log
    ph_g = (g_start[slot[log[:, 0].astype(np.int64)]] + log[:, 1].astype(np.int64)
            - top[log[:, 0].astype(np.int64)]) if len(log) else np.zeros(0, dtype=np.int64)
    ph_x = np.full(g_start[-1], np.nan)
    ph_y = np.full(g_start[-1], np.nan)
    ph_x[ph_g], ph_y[ph_g] = log[:, 2], log[:, 3]             # each key gets at most one phantom
    for j in range(int(nth.max()) + 1):
        now = left[nth == j]
        t_now = run_trial[now]
        s_now = slot[t_now]
        joined = np.flatnonzero((run_key != free) & (slot[run_trial] >= 0))
        jg = g_start[slot[run_trial[joined]]] + run_key[joined] - top[run_trial[joined]]
        rpos = expand(run_first[joined], run_len[joined])
        rg = np.repeat(jg, run_len[joined])
        rrank = np.repeat(run_rank[joined], run_len[joined])
        empty = np.flatnonzero(np.bincount(jg, minlength=g_start[-1]) == 0)
        # queries: every fixation of each trial's current run against every proto-line of its trial
        q_fix = expand(run_first[now], run_len[now])
        q_run = np.repeat(np.arange(len(now)), run_len[now])
        k_of = n_keys[s_now]
        q_fix_k = np.repeat(q_fix, k_of[q_run])
        q_pair = np.repeat(np.arange(len(q_fix)), k_of[q_run])
        q_key = np.arange(len(q_fix_k)) - np.repeat(np.cumsum(k_of[q_run]) - k_of[q_run], k_of[q_run])
        q_g = g_start[s_now[q_run[q_pair]]] + q_key
        # exact keys ordering (proto-line, x): ranks of x among the fixations involved
        rank = np.unique(np.r_[x[rpos], x[q_fix_k]], return_inverse=True)[1].reshape(-1)
        s = float(rank.max() + 2) if len(rank) else 1.0
        near = _nearest_in_x(np.r_[rg * s + rank[:len(rpos)], empty * s - 0.5],
                             np.r_[rrank, np.zeros(len(empty), dtype=np.int64)], np.r_[rpos, np.full(len(empty), -1)],
                             q_g * s + rank[len(rpos):], x[q_fix_k], np.r_[x[rpos], ph_x[empty]], np.r_[rg, empty], q_g)
        ref_y = np.r_[y[rpos], ph_y[empty]]
        # mean offset of each (run, proto-line) pair: sums over the run's fixations in order
        c_start = np.r_[0, np.cumsum(k_of)]
        combo = c_start[q_run[q_pair]] + q_key
        d = np.abs(np.bincount(combo, weights=y[q_fix_k] - ref_y[near], minlength=int(c_start[-1]))
                   / np.repeat(run_len[now], k_of))
        best_d = np.minimum.reduceat(d, c_start[:-1])
        pick = np.minimum.reduceat(np.where(d == np.repeat(best_d, k_of), np.arange(len(d)), len(d)),
                                   c_start[:-1]) - c_start[:-1]
        run_key[now] = top[t_now] + pick
        run_rank[now] = step + 1 + j
