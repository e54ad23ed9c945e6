"""``compare``: match each gaze line to one of the nearest text lines by DTW on x (Lima Sanches et al. 2015).

As implemented by Carr et al. (2022); not in eyekit.
"""

from __future__ import annotations

import numpy as np

from readgaze.lines._common import break_points, pitch_scale, scaled_px, segment_ids, word_lines


def compare(xy: np.ndarray, line_y_px: np.ndarray, *, word_xy: np.ndarray | None = None,
            word_line: np.ndarray | None = None, x_thresh: float | None = None,
            n_nearest_lines: int = 3) -> np.ndarray:
    """Assign whole gaze lines to text lines by comparing their x sequences with the words' x sequences.

    The sequence is cut into gaze lines after every saccade with ``dx < -x_thresh`` (a return sweep). For
    each gaze line the ``n_nearest_lines`` text lines nearest to its mean y are candidates; the candidate
    whose word-centre x sequence has the smallest DTW distance to the gaze line's x sequence wins (the
    nearest on ties). All gaze lines and candidates are warped in one batched DTW pass.

    Parameters
    ----------
    xy : ndarray, float64, shape (n_fixations, 2)
        Fixation positions in px, temporal order.
    line_y_px : ndarray, float64, shape (n_lines,)
        Line midlines in px, top to bottom; their median spacing ``P`` scales the default threshold.
    word_xy : ndarray, float64, shape (n_words, 2)
        Word centres in px, reading order (required).
    word_line : ndarray, int, shape (n_words,), optional
        0-based line of each word (default: nearest line to the word's y).
    x_thresh : float, optional
        Leftward saccade length in px that starts a new gaze line (default ``None``: 512 px times ``P / 64``).
    n_nearest_lines : int
        Number of candidate lines (default 3; clipped to the number of lines).

    Returns
    -------
    ndarray, int64, shape (n_fixations,)
        0-based line index per fixation.

    Notes
    -----
    Departure from Carr et al.'s code: thresholds scale with line pitch. Their 512 px suits their 64-px pitch,
    so the default equals it there; a number passed explicitly is taken as px.

    References
    ----------
    Lima Sanches, C., Kise, K., & Augereau, O. (2015). Eye gaze and text line matching for reading analysis.
    UbiComp/ISWC Adjunct. Carr et al. (2022), doi:10.3758/s13428-021-01554-0.

    Examples
    --------
    >>> words = np.array([[10, 100], [300, 100], [10, 150], [100, 150], [200, 150]], dtype=float)
    >>> xy = np.array([[12, 140], [290, 141], [9, 146], [95, 147], [210, 149]], dtype=float)
    >>> compare(xy, np.array([100.0, 150.0]), word_xy=words, x_thresh=200)
    array([0, 0, 1, 1, 1])
    """
    word_xy, word_line = word_lines(word_xy, word_line, line_y_px, "compare")
    x_thresh = scaled_px(x_thresh, 512.0, pitch_scale(line_y_px))
    k = max(1, min(int(n_nearest_lines), len(line_y_px)))
    ids = segment_ids(break_points(np.diff(xy[:, 0]) < -x_thresh), len(xy))
    n_gaze = ids[-1] + 1
    mean_y = np.bincount(ids, weights=xy[:, 1]) / np.bincount(ids)
    candidates = np.argsort(np.abs(line_y_px[None, :] - mean_y[:, None]), axis=1, kind="stable")[:, :k]
    gaze_x = [xy[ids == g, 0] for g in range(n_gaze)]
    line_x = [word_xy[word_line == c, 0] for c in range(len(line_y_px))]
    costs = batched_dtw_costs([gaze_x[g] for g in range(n_gaze) for _ in range(k)],
                              [line_x[c] for c in candidates.ravel()]).reshape(n_gaze, k)
    return candidates[np.arange(n_gaze), costs.argmin(axis=1)][ids]


def batched_dtw_costs(seqs_a: list[np.ndarray], seqs_b: list[np.ndarray]) -> np.ndarray:
    """DTW distance of each pair ``(seqs_a[p], seqs_b[p])`` of 1-D sequences, all pairs in one pass.

    Sequences are padded to a common length with infinite local cost; a cell ``(i, j)`` only depends on
    cells with smaller ``i`` and ``j``, so padding never changes the cost read at ``(len(a), len(b))``. The
    recursion is the one of :func:`readgaze.lines.warp.dtw_cost_matrix`. A pair with an empty sequence
    costs ``inf``. Returns float64, shape (n_pairs,).
    """
    n_a = np.array([len(a) for a in seqs_a])
    n_b = np.array([len(b) for b in seqs_b])
    a = np.full((len(seqs_a), max(n_a.max(), 1)), np.nan)
    b = np.full((len(seqs_b), max(n_b.max(), 1)), np.nan)
    for p, (sa, sb) in enumerate(zip(seqs_a, seqs_b)):
        a[p, :len(sa)], b[p, :len(sb)] = sa, sb
    local = np.sqrt((a[:, :, None] - b[:, None, :]) ** 2)
    local[np.isnan(local)] = np.inf
    n, m = a.shape[1], b.shape[1]
    acc = np.full((len(a), n + 1, m + 1), np.inf)
    acc[:, 0, 0] = 0.0
    for s in range(2, n + m + 1):
        i = np.arange(max(1, s - m), min(n, s - 1) + 1)
        j = s - i
        best = np.minimum(np.minimum(acc[:, i - 1, j], acc[:, i, j - 1]), acc[:, i - 1, j - 1])
        acc[:, i, j] = local[:, i - 1, j - 1] + best
    cost = acc[np.arange(len(a)), n_a, n_b]
    return np.where((n_a == 0) | (n_b == 0), np.inf, cost)
