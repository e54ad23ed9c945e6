"""``chain``: cut the fixation sequence at long saccades and give each chain the line nearest to its mean y.

Source: popEye (Schroeder 2019), as described by Carr et al. (2022).
"""

from __future__ import annotations

import numpy as np

from readgaze.lines._common import break_points, chains_to_nearest_line, pitch_scale, scaled_px


def chain(xy: np.ndarray, line_y_px: np.ndarray, *, x_thresh: float | None = None,
          y_thresh: float | None = None) -> np.ndarray:
    """Assign fixations chain by chain.

    A new chain starts after every saccade with ``|dx| > x_thresh`` or ``|dy| > y_thresh``; every fixation of
    a chain goes to the line whose midline is nearest to the chain's mean y.

    Parameters
    ----------
    xy : ndarray, float64, shape (n_fixations, 2)
        Fixation positions in px, temporal order.
    line_y_px : ndarray, float64, shape (n_lines,)
        Line midlines in px, top to bottom; their median spacing ``P`` scales the default thresholds.
    x_thresh, y_thresh : float, optional
        Saccade amplitudes in px that end a chain (default ``None``: 192 and 32 px, eyekit's and Carr et al.'s
        values, times ``P / 64``; DIST's configuration uses ``y_thresh=55``).

    Returns
    -------
    ndarray, int64, shape (n_fixations,)
        0-based line index per fixation.

    Notes
    -----
    Departure from eyekit: thresholds scale with line pitch. The published 192/32 px suit Carr et al.'s 64-px
    pitch, so the defaults equal them there; a number passed explicitly is taken as px.

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
    scale = pitch_scale(line_y_px)
    x_thresh, y_thresh = scaled_px(x_thresh, 192.0, scale), scaled_px(y_thresh, 32.0, scale)
    d = np.abs(np.diff(xy, axis=0))
    starts = break_points((d[:, 0] > x_thresh) | (d[:, 1] > y_thresh))
    return chains_to_nearest_line(xy, line_y_px, starts)
