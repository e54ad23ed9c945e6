"""``warp``: dynamic time warping between the fixation sequence and the words in reading order (Carr et al. 2022).

Each fixation goes to the line that most of the words it is warped onto lie on. The DTW helpers here are
also used by ``compare``; :func:`warp_many` warps many trials in one pass (same lines).
"""

from __future__ import annotations

import numpy as np

from readgaze.lines._common import in_parts, word_lines
from readgaze.lines._jit import njit  # numba, imported on first call


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


def warp_many(trials: list[tuple]) -> list[np.ndarray]:
    """:func:`warp` for many trials at once, in one compiled pass over all of them.

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
    Each trial's accumulated cost matrix is filled cell by cell with the textbook recursion (the same local
    cost ``sqrt(dx**2 + dy**2)``, the same minimum), and walked back with :func:`dtw_path`'s rule, so the lines
    are bit-identical to :func:`warp` (numba; the whole-array NumPy version of the sweep is
    :func:`dtw_cost_matrix`).
    """
    if not trials:
        return []
    fix, n_lines, text_of, texts = [], [], [], {}
    words, word_line = [], []
    for xy, line_y_px, word_xy, wl in trials:
        key = (id(word_xy), id(wl), id(line_y_px))              # the trials of a text share its arrays: once each
        if key not in texts:
            texts[key] = len(words)
            w, l_ = word_lines(word_xy, wl, line_y_px, "warp")
            words.append(w)
            word_line.append(l_)
        text_of.append(texts[key])
        fix.append(np.asarray(xy, dtype=np.float64).reshape(-1, 2))
        n_lines.append(len(line_y_px))
    fix_start = np.concatenate([[0], np.cumsum([len(f) for f in fix])]).astype(np.int64)
    text_start = np.concatenate([[0], np.cumsum([len(w) for w in words])]).astype(np.int64)
    text_of = np.asarray(text_of, dtype=np.int64)
    word_lo, word_n = text_start[text_of], np.diff(text_start)[text_of]
    fix, words = np.concatenate(fix), np.concatenate(words)
    word_line, n_lines = np.concatenate(word_line).astype(np.int64), np.asarray(n_lines, dtype=np.int64)
    finite = bool(np.isfinite(fix).all() and np.isfinite(words).all())
    sizes = np.diff(fix_start) * word_n                         # cells of each trial's cost matrix

    def part(a: int, b: int) -> np.ndarray:                   # trials a..b-1 (nogil: parts run side by side)
        return _warp_kernel(fix[fix_start[a]:fix_start[b]], fix_start[a:b + 1] - fix_start[a], words,
                            word_lo[a:b], word_n[a:b], word_line, n_lines[a:b], finite)

    lines = in_parts(part, sizes)
    return np.split(lines, fix_start[1:-1])


@njit(cache=True, nogil=True)
def _warp_kernel(fix, fix_start, words, word_lo, word_n, word_line, n_lines, finite):
    """Lines of every trial (see :func:`warp_many`): fixations flat, trial ``k`` at ``fix_start[k]:``; its text's
    words (and their lines) at ``word_lo[k]:word_lo[k] + word_n[k]`` (trials of one text share them).

    Each row's local costs are computed first (independent of each other), then the recursion runs along the row
    with the cell to the left held in a register. With every coordinate finite (``finite``) no cost is NaN, so the
    order of the three-way minimum does not change it, and ``min(left, min(up, diagonal))`` keeps the one
    comparison with the left cell on the row's dependency chain; else the textbook order."""
    out = np.zeros(len(fix), dtype=np.int64)
    for k in range(len(fix_start) - 1):
        f0, n = fix_start[k], fix_start[k + 1] - fix_start[k]
        w0, m = word_lo[k], word_n[k]
        if n == 0:
            continue
        acc = np.full((n + 1, m + 1), np.inf)
        acc[0, 0] = 0.0
        local = np.empty(m + 1)
        wx, wy = words[w0:w0 + m, 0].copy(), words[w0:w0 + m, 1].copy()
        for i in range(1, n + 1):
            fx, fy = fix[f0 + i - 1, 0], fix[f0 + i - 1, 1]
            for j in range(m):
                dx = fx - wx[j]
                dy = fy - wy[j]
                local[j + 1] = np.sqrt(dx * dx + dy * dy)
            up_row, row = acc[i - 1], acc[i]
            left = row[0]
            if finite:
                for j in range(1, m + 1):
                    left = local[j] + min(left, min(up_row[j], up_row[j - 1]))
                    row[j] = left
            else:
                for j in range(1, m + 1):
                    left = local[j] + min(min(up_row[j], left), up_row[j - 1])
                    row[j] = left
        votes = np.zeros((n, n_lines[k]), dtype=np.int64)
        i, j = n, m
        votes[i - 1, word_line[w0 + j - 1]] += 1
        while i > 1 or j > 1:
            diagonal, up, left = acc[i - 1, j - 1], acc[i - 1, j], acc[i, j - 1]
            if diagonal <= up and diagonal <= left:
                i -= 1
                j -= 1
            elif up <= left:
                i -= 1
            else:
                j -= 1
            votes[i - 1, word_line[w0 + j - 1]] += 1
        for i in range(n):
            out[f0 + i] = np.argmax(votes[i])
    return out


