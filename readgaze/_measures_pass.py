"""Every word measure of :mod:`readgaze.measures` in one compiled pass over the scanpath.

The measures module defines each measure as a whole-array NumPy function (the reference, one function per
column). This module computes the same values in one pass over the trial-sorted fixations (numba), with
no sort by word: a fixation's group is its cell of the output grid (trial x word of the trial's text),
found in a table of each text's word indices. A regression path is closed by a stack of open paths
(an open path's word is never below a later one's, so a fixation closes the top ones).

The floats are the reference's, bit for bit: per-word sums follow ``np.add.reduceat``'s order (the first
value plus NumPy's pairwise sum of the others, :func:`readgaze.lines._common.pairwise`), regression-path
durations are differences of the same running sum, and nothing transcendental is computed here.
"""

from __future__ import annotations

import numpy as np

from readgaze._jit import njit  # numba, imported on first call
from readgaze._pairwise import pairwise


@njit(cache=True, nogil=True)  # the trial features of the block before run beside it (readgaze.data_prep.pipeline)
def word_pass(trial, word, duration, trial_text, table_start, table_low, table, grid_start, n_cells):
    """Per grid cell (trial x word of its text, in grid order), the scanpath aggregates of the measures.

    Parameters
    ----------
    trial : int64 (n,)
        Trial code of each scanpath fixation, sorted; fixations of one trial in time order.
    word : int64 (n,)
        ``word_index`` (-1: an off-text fixation left in the sequence, never a word to the right).
    duration : float64 (n,)
        ``duration_ms``.
    trial_text : int64 (n_trials,)
        Text code of each trial (-1: no text, no cells).
    table_start, table_low, table : int64
        Word → cell offset: word ``w`` of text ``k`` is cell ``grid_start[t] + table[table_start[k] + w -
        table_low[k]]`` of trial ``t`` when ``0 <= w - table_low[k] < table_start[k + 1] - table_start[k]``
        and that entry is not -1 (else the word is not in the text: no cell).
    grid_start : int64 (n_trials,)
        First cell of each trial; its cells follow in word order.
    n_cells : int
        Number of cells (grid rows).

    Returns
    -------
    tuple of arrays over the cells: first fixation row (-1: never fixated), fixation count, run count,
    regression-in count, regression-out count (int32), skipped in first pass, single first-pass fixation
    (bool), total, gaze, regression-path and selective regression-path durations (float64, ms).
    """
    n = len(word)
    first = np.full(n_cells, -1, np.int64)
    count = np.zeros(n_cells, np.int32)
    runs = np.zeros(n_cells, np.int32)
    reg_in = np.zeros(n_cells, np.int32)
    reg_out = np.zeros(n_cells, np.int32)
    skipped = np.zeros(n_cells, np.bool_)
    first_run = np.zeros(n_cells, np.int64)
    first_pass = np.zeros(n_cells, np.int32)  # fixations of the first run
    total = np.full(n_cells, -0.0)  # the others' sums start as NumPy's do
    gaze = np.full(n_cells, -0.0)
    sel = np.full(n_cells, -0.0)
    path = np.zeros(n_cells)
    open_ = np.zeros(n_cells, np.bool_)
    cell = np.full(n, -1, np.int64)
    in_first = np.zeros(n, np.bool_)
    in_path = np.zeros(n, np.bool_)
    cum = np.zeros(n + 1)  # running sum of all durations: the path durations are its differences
    for i in range(n):
        cum[i + 1] = cum[i] + duration[i]
    stack = np.empty(n, np.int64)  # open regression paths (cells), their words never rising to the top
    depth = 0
    run = -1
    i = 0
    while i < n:
        t = trial[i]
        end = i
        while end < n and trial[end] == t:
            end += 1
        k = trial_text[t] if t >= 0 else -1
        lo = table_start[k] if k >= 0 else 0
        span = table_start[k + 1] - lo if k >= 0 else 0
        low = table_low[k] if k >= 0 else 0
        top_word = -1  # highest word so far in this trial (-1: none)
        depth = 0
        for j in range(i, end):
            w = word[j]
            prev = word[j - 1] if j > i else -1
            nxt = word[j + 1] if j + 1 < end else -1
            prior_max = top_word
            if w > top_word:
                top_word = w
            start = j == i or prev != w
            if start:
                run += 1
            while depth and word[first[stack[depth - 1]]] < w:  # a word to the right ends these paths
                c = stack[depth - 1]
                path[c] = cum[j] - cum[first[c]]
                open_[c] = False
                depth -= 1
            r = w - low
            if w < 0 or r < 0 or r >= span or table[lo + r] < 0:
                continue  # not a word of the text: no cell
            c = grid_start[t] + table[lo + r]
            cell[j] = c
            if first[c] < 0:
                first[c] = j
                first_run[c] = run
                skipped[c] = prior_max > w
                open_[c] = True
                stack[depth] = c
                depth += 1
            count[c] += 1
            if start:
                runs[c] += 1
                if prev > w:
                    reg_in[c] += 1
            if 0 <= nxt < w and top_word == w:
                reg_out[c] += 1
            in_first[j] = run == first_run[c]
            in_path[j] = open_[c]
            if in_first[j]:
                first_pass[c] += 1
            if first[c] != j:  # the sums: first value + the others in order (reduceat's order when < 9)
                total[c] += duration[j]
                gaze[c] += duration[j] * in_first[j]
                sel[c] += duration[j] * in_path[j]
        for d in range(depth):  # paths still open run to the trial's end
            c = stack[d]
            path[c] = cum[end] - cum[first[c]]
        i = end
    # cells with 9 or more fixations: NumPy's pairwise sum of the others, in time order
    big = np.flatnonzero(count > 8)
    if len(big):
        slot = np.full(n_cells, -1, np.int64)
        offset = np.zeros(len(big) + 1, np.int64)
        for q in range(len(big)):
            slot[big[q]] = q
            offset[q + 1] = offset[q] + count[big[q]] - 1
        fill = offset[:-1].copy()
        vt = np.empty(offset[-1])
        vg = np.empty(offset[-1])
        vs = np.empty(offset[-1])
        for j in range(n):
            c = cell[j]
            if c >= 0 and slot[c] >= 0 and first[c] != j:
                q = slot[c]
                vt[fill[q]] = duration[j]
                vg[fill[q]] = duration[j] * in_first[j]
                vs[fill[q]] = duration[j] * in_path[j]
                fill[q] += 1
        for q in range(len(big)):
            c = big[q]
            total[c] = pairwise(vt, offset[q], offset[q + 1] - offset[q])
            gaze[c] = pairwise(vg, offset[q], offset[q + 1] - offset[q])
            sel[c] = pairwise(vs, offset[q], offset[q + 1] - offset[q])
    single = np.zeros(n_cells, np.bool_)
    for c in range(n_cells):
        if first[c] >= 0:
            d0 = duration[first[c]]
            total[c] = d0 + total[c] if count[c] > 1 else d0
            gaze[c] = d0 + gaze[c] if count[c] > 1 else d0
            sel[c] = d0 + sel[c] if count[c] > 1 else d0
            single[c] = first_pass[c] == 1 and not skipped[c]
    return first, count, runs, reg_in, reg_out, skipped, single, total, gaze, path, sel
