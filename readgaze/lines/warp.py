"""``warp``: dynamic time warping between the fixation sequence and the words in reading order (Carr et al. 2022).

Each fixation goes to the line that most of the words it is warped onto lie on. The DTW helpers here are
also used by ``compare``; :func:`warp_many` warps many trials in one pass (same lines).
"""

from __future__ import annotations

import numpy as np

from readgaze.lines._common import word_lines


def dtw_cost_matrix(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Accumulated dynamic-time-warping cost between two point sequences, with Euclidean local cost.

    Parameters
    ----------
    a : ndarray, float64, shape (n, d)
    b : ndarray, float64, shape (m, d)

    Returns
    -------
    ndarray, float64, shape (n + 1, m + 1)
        ``D[i, j]`` = cost of the best alignment of ``a[:i]`` with ``b[:j]``; row and column 0 are the
        boundary (``D[0, 0] = 0``, the rest infinite). ``D[n, m]`` is the DTW distance.

    Notes
    -----
    Filled one anti-diagonal at a time (all cells of a diagonal are independent). The matrix is held skewed,
    ``E[i + j, i] = D[i, j]``, so each diagonal is a contiguous row and its three predecessors are slices of
    the two rows before it. Each cell is ``cost + min(up, left, diagonal)`` exactly as in the textbook
    recursion, so results (and ties) are bit-identical to a cell-by-cell loop.
    """
    n, m = len(a), len(b)
    local = np.sqrt(((a[:, None, :] - b[None, :, :]) ** 2).sum(axis=2))
    ii, jj = np.meshgrid(np.arange(1, n + 1), np.arange(1, m + 1), indexing="ij")
    skew_local = np.full((n + m + 1, n + 1), np.inf)
    skew_local[ii + jj, ii] = local
    skew = np.full((n + m + 1, n + 1), np.inf)
    skew[0, 0] = 0.0
    for s in range(2, n + m + 1):
        lo, hi = max(1, s - m), min(n, s - 1) + 1
        best = np.minimum(np.minimum(skew[s - 1, lo - 1:hi - 1], skew[s - 1, lo:hi]), skew[s - 2, lo - 1:hi - 1])
        skew[s, lo:hi] = skew_local[s, lo:hi] + best
    acc = np.full((n + 1, m + 1), np.inf)
    acc[0, 0] = 0.0
    acc[ii, jj] = skew[ii + jj, ii]
    return acc


def dtw_path(acc: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Optimal warping path through an accumulated cost matrix from :func:`dtw_cost_matrix`.

    Walks back from the last cell; at each step it moves diagonally, up (previous element of ``a``) or left
    (previous element of ``b``), whichever cell is cheapest, preferring that order on ties.
    Returns ``(i, j)``: 0-based index pairs of the path, int64 arrays, from the end back to ``(0, 0)``.
    """
    i, j = acc.shape[0] - 1, acc.shape[1] - 1
    path_i, path_j = [i - 1], [j - 1]
    while i > 1 or j > 1:
        diagonal, up, left = acc[i - 1, j - 1], acc[i - 1, j], acc[i, j - 1]
        if diagonal <= up and diagonal <= left:
            i, j = i - 1, j - 1
        elif up <= left:
            i -= 1
        else:
            j -= 1
        path_i.append(i - 1)
        path_j.append(j - 1)
    return np.array(path_i, dtype=np.int64), np.array(path_j, dtype=np.int64)


def warp(xy: np.ndarray, line_y_px: np.ndarray, *, word_xy: np.ndarray | None = None,
         word_line: np.ndarray | None = None) -> np.ndarray:
    """Assign fixations by warping the fixation sequence onto the sequence of word centres.

    Parameters
    ----------
    xy : ndarray, float64, shape (n_fixations, 2)
        Fixation positions in px, temporal order.
    line_y_px : ndarray, float64, shape (n_lines,)
        Line midlines in px, top to bottom.
    word_xy : ndarray, float64, shape (n_words, 2)
        Word centres in px, in reading order (required).
    word_line : ndarray, int, shape (n_words,), optional
        0-based line of each word (default: the line nearest to the word's y).

    Returns
    -------
    ndarray, int64, shape (n_fixations,)
        0-based line index: the most frequent line among the words mapped to the fixation (the upper line
        on ties).

    Raises
    ------
    ConfigError
        If ``word_xy`` is missing or malformed.

    References
    ----------
    Carr et al. (2022), Behavior Research Methods 54(1), doi:10.3758/s13428-021-01554-0.

    Examples
    --------
    >>> words = np.array([[10, 100], [60, 100], [10, 150], [60, 150]], dtype=float)
    >>> xy = np.array([[12, 130], [55, 131], [8, 133], [62, 134]], dtype=float)
    >>> warp(xy, np.array([100.0, 150.0]), word_xy=words)
    array([0, 0, 1, 1])
    """
    word_xy, word_line = word_lines(word_xy, word_line, line_y_px, "warp")
    fix_i, word_j = dtw_path(dtw_cost_matrix(xy, word_xy))
    votes = np.zeros((len(xy), len(line_y_px)), dtype=np.int64)
    np.add.at(votes, (fix_i, word_line[word_j]), 1)
    return votes.argmax(axis=1)


# Cells (fixations x (fixations + words) x trials) warped in one pass of warp_many: bounds its memory
# (8 bytes a cell: about 48 MB at most, plus the local costs).
CHUNK_CELLS = 6_000_000


def warp_many(trials: list[tuple]) -> list[np.ndarray]:
    """:func:`warp` for many trials at once: one anti-diagonal sweep and one path walk for a whole chunk.

    Parameters
    ----------
    trials : list of (xy, line_y_px, word_xy, word_line)
        As the arguments of :func:`warp` (``word_line`` may be None).

    Returns
    -------
    list of ndarray, int64, shape (n_fixations,)
        Exactly :func:`warp`'s lines for each trial.

    Notes
    -----
    Trials are padded to a common size; a DTW cell depends only on cells above and to its left, so the
    padding never reaches a trial's own cells, and every cell gets the same arithmetic as in
    :func:`dtw_cost_matrix`: the results are bit-identical to one trial at a time. Trials are sorted by size
    and cut into chunks of at most :data:`CHUNK_CELLS` padded cells.
    """
    if not trials:
        return []
    prepared = []
    for xy, line_y_px, word_xy, word_line in trials:
        word_xy, word_line = word_lines(word_xy, word_line, line_y_px, "warp")
        prepared.append((np.asarray(xy, dtype=np.float64), len(line_y_px), word_xy, word_line))
    out: list[np.ndarray | None] = [None] * len(prepared)
    order = sorted(range(len(prepared)), key=lambda k: (len(prepared[k][0]), len(prepared[k][2])))
    chunk: list[int] = []
    for k in order + [None]:
        if k is not None:
            n, m = len(prepared[k][0]), len(prepared[k][2])
            if not chunk or (len(chunk) + 1) * (n + 1) * (n + m + 1) <= CHUNK_CELLS:
                chunk.append(k)
                continue
        for c, lines in zip(chunk, _warp_chunk([prepared[c] for c in chunk])):
            out[c] = lines
        chunk = [k]
        if k is None:
            break
    return out


def _warp_chunk(trials: list[tuple]) -> list[np.ndarray]:
    """Warp a few trials together (see :func:`warp_many`)."""
    b = len(trials)
    n_fix = np.array([len(t[0]) for t in trials])
    n_word = np.array([len(t[2]) for t in trials])
    n, m = int(n_fix.max()), int(n_word.max())
    if n == 0:
        return [np.zeros(0, dtype=np.int64) for _ in trials]
    local = np.zeros((b, n, m))
    for t, (xy, _, word_xy, _) in enumerate(trials):
        local[t, :len(xy), :len(word_xy)] = np.sqrt(((xy[:, None, :] - word_xy[None, :, :]) ** 2).sum(axis=2))
    local = np.ascontiguousarray(local.transpose(1, 2, 0))   # (n, m, b): trials last, so that each
    skew = np.full((n + m + 1, n + 1, b), np.inf)             # diagonal skew[i + j, i] = D[i, j] is one block
    skew[0, 0] = 0.0
    for s in range(2, n + m + 1):
        lo, hi = max(1, s - m), min(n, s - 1) + 1
        i = np.arange(lo, hi)
        best = np.minimum(np.minimum(skew[s - 1, lo - 1:hi - 1], skew[s - 1, lo:hi]), skew[s - 2, lo - 1:hi - 1])
        np.add(local[i - 1, s - i - 1], best, out=skew[s, lo:hi])
    # All trials walk back their paths together (the rule of dtw_path), each from its own last cell.
    rows = np.arange(b)
    i, j = n_fix.copy(), n_word.copy()
    path_t, path_i, path_j = [rows], [i - 1], [j - 1]
    live = (i > 1) | (j > 1)
    while live.any():
        t, ti, tj = rows[live], i[live], j[live]
        diagonal, up, left = skew[ti + tj - 2, ti - 1, t], skew[ti + tj - 1, ti - 1, t], skew[ti + tj - 1, ti, t]
        go_diag = (diagonal <= up) & (diagonal <= left)
        go_up = ~go_diag & (up <= left)
        i[live] = ti - (go_diag | go_up)
        j[live] = tj - (go_diag | ~go_up)
        path_t.append(t)
        path_i.append(i[live] - 1)
        path_j.append(j[live] - 1)
        live = (i > 1) | (j > 1)
    path_t, path_i, path_j = (np.concatenate(p) for p in (path_t, path_i, path_j))
    keep = (n_fix[path_t] > 0) & (path_i >= 0) & (path_j >= 0)
    path_t, path_i, path_j = path_t[keep], path_i[keep], path_j[keep]
    n_lines = max(t[1] for t in trials)
    word_line = np.zeros((b, m), dtype=np.int64)
    for t, tr in enumerate(trials):
        word_line[t, :len(tr[3])] = tr[3]
    votes = np.zeros((b, n, n_lines), dtype=np.int64)
    np.add.at(votes, (path_t, path_i, word_line[path_t, path_j]), 1)
    lines = votes.argmax(axis=2)
    return [lines[t, :f].astype(np.int64) for t, f in enumerate(n_fix)]


warp.assign_many = warp_many  # readgaze.lines.assign_trials / assign_lines batch the trials through this
