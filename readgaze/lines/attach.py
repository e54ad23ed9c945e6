"""``attach``: each fixation goes to the line whose midline is nearest in y (no drift correction).

This is the "no correction" baseline of Carr et al. (2022); readgaze also names it ``nearest``.
"""

from __future__ import annotations

import numpy as np

from readgaze.lines._common import nearest_line


def attach(xy: np.ndarray, line_y_px: np.ndarray) -> np.ndarray:
    """Assign each fixation to the line with the nearest midline.

    Parameters
    ----------
    xy : ndarray, float64, shape (n_fixations, 2)
        Fixation positions in px, temporal order.
    line_y_px : ndarray, float64, shape (n_lines,)
        Line midlines in px, top to bottom.

    Returns
    -------
    ndarray, int64, shape (n_fixations,)
        0-based line index; a fixation exactly half-way between two midlines goes to the upper line.

    References
    ----------
    Carr, J. W., Pescuma, V. N., Furlan, M., Ktori, M., & Crepaldi, D. (2022). Algorithms for the automated
    correction of vertical drift in eye-tracking data. Behavior Research Methods, 54(1), 287-310.
    doi:10.3758/s13428-021-01554-0

    Examples
    --------
    >>> attach(np.array([[10.0, 98.0], [50.0, 161.0]]), np.array([100.0, 150.0]))
    array([0, 1])
    """
    return nearest_line(xy[:, 1], line_y_px)


def attach_batch(batch) -> np.ndarray:
    """:func:`attach` for every trial of a :class:`~readgaze.lines.batch.Batch` at once (same lines)."""
    from readgaze.lines.batch import nearest_midline

    return nearest_midline(batch.xy[:, 1], np.repeat(batch.text, batch.sizes), batch.line_y, batch.line_start)


