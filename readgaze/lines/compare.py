"""``compare``: match each gaze line to one of the nearest text lines by DTW on x (Lima Sanches et al. 2015).

As implemented by Carr et al. (2022); not in eyekit.
"""

from __future__ import annotations

import numpy as np

from readgaze.lines._common import break_points, segment_ids, word_lines
from readgaze.lines.warp import dtw_cost_matrix


def compare(xy: np.ndarray, line_y_px: np.ndarray, *, word_xy: np.ndarray | None = None,
            word_line: np.ndarray | None = None, x_thresh: float = 512.0, n_nearest_lines: int = 3) -> np.ndarray:
    """Assign whole gaze lines to text lines by comparing their x sequences with the words' x sequences.

    The sequence is cut into gaze lines after every saccade with ``dx < -x_thresh`` (a return sweep). For
    each gaze line the ``n_nearest_lines`` text lines nearest to its mean y are candidates; the candidate
    whose word-centre x sequence has the smallest DTW distance to the gaze line's x sequence wins (the
    nearest on ties).

    Parameters
    ----------
    xy : ndarray, float64, shape (n_fixations, 2)
        Fixation positions in px, temporal order.
    line_y_px : ndarray, float64, shape (n_lines,)
        Line midlines in px, top to bottom.
    word_xy : ndarray, float64, shape (n_words, 2)
        Word centres in px, reading order (required).
    word_line : ndarray, int, shape (n_words,), optional
        0-based line of each word (default: nearest line to the word's y).
    x_thresh : float
        Leftward saccade length in px that starts a new gaze line (default 512).
    n_nearest_lines : int
        Number of candidate lines (default 3; clipped to the number of lines).

    Returns
    -------
    ndarray, int64, shape (n_fixations,)
        0-based line index per fixation.

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
    k = max(1, min(int(n_nearest_lines), len(line_y_px)))
    ids = segment_ids(break_points(np.diff(xy[:, 0]) < -x_thresh), len(xy))
    lines = np.empty(ids[-1] + 1, dtype=np.int64)
    for g in range(len(lines)):
        gaze = xy[ids == g]
        candidates = np.argsort(np.abs(line_y_px - gaze[:, 1].mean()), kind="stable")[:k]
        costs = [_line_cost(gaze[:, :1], word_xy[word_line == c, :1]) for c in candidates]
        lines[g] = candidates[int(np.argmin(costs))]
    return lines[ids]


def _line_cost(gaze_x: np.ndarray, word_x: np.ndarray) -> float:
    """DTW distance between gaze x positions and a text line's word-centre x positions (inf if no words)."""
    if len(word_x) == 0:
        return np.inf
    return float(dtw_cost_matrix(gaze_x, word_x)[-1, -1])
