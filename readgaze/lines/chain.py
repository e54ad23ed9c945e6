"""``chain``: cut the fixation sequence at long saccades and give each chain the line nearest to its mean y.

Source: popEye (Schroeder 2019), as described by Carr et al. (2022).
"""

from __future__ import annotations

import numpy as np

from readgaze.lines._common import break_points, chains_to_nearest_line


def chain(xy: np.ndarray, line_y_px: np.ndarray, *, x_thresh: float = 192.0, y_thresh: float = 32.0) -> np.ndarray:
    """Assign fixations chain by chain.

    A new chain starts after every saccade with ``|dx| > x_thresh`` or ``|dy| > y_thresh``; every fixation of
    a chain goes to the line whose midline is nearest to the chain's mean y.

    Parameters
    ----------
    xy : ndarray, float64, shape (n_fixations, 2)
        Fixation positions in px, temporal order.
    line_y_px : ndarray, float64, shape (n_lines,)
        Line midlines in px, top to bottom.
    x_thresh, y_thresh : float
        Saccade amplitudes in px that end a chain (defaults 192 and 32 as in eyekit and Carr et al. 2022;
        DIST's configuration uses ``y_thresh=55``).

    Returns
    -------
    ndarray, int64, shape (n_fixations,)
        0-based line index per fixation.

    References
    ----------
    Schroeder, S. (2019). popEye - An R package to analyse eye movement data from reading experiments.
    Carr et al. (2022), Behavior Research Methods 54(1), doi:10.3758/s13428-021-01554-0.

    Examples
    --------
    >>> xy = np.array([[10, 108], [40, 95], [70, 104], [10, 140], [50, 160]], dtype=float)
    >>> chain(xy, np.array([100.0, 150.0]))
    array([0, 0, 0, 1, 1])
    """
    d = np.abs(np.diff(xy, axis=0))
    starts = break_points((d[:, 0] > x_thresh) | (d[:, 1] > y_thresh))
    return chains_to_nearest_line(xy, line_y_px, starts)
