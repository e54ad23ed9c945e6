"""``stretch``: find the vertical scale and offset that bring fixations closest to the midlines (Lohmeier 2015).

Simplified as in Carr et al. (2022): minimise the summed absolute distance between ``s * y + o`` and its
nearest midline over ``s`` and ``o`` (Powell's method within bounds), then attach the transformed fixations.
"""

from __future__ import annotations

import numpy as np

from readgaze.lines._common import nearest_line, pitch_scale, scaled_bounds


def stretch(xy: np.ndarray, line_y_px: np.ndarray, *, scale_bounds: tuple[float, float] = (0.9, 1.1),
            offset_bounds: tuple[float, float] | None = None) -> np.ndarray:
    """Assign fixations after the best vertical stretch and shift of the whole trial.

    Parameters
    ----------
    xy : ndarray, float64, shape (n_fixations, 2)
        Fixation positions in px, temporal order (only y is used).
    line_y_px : ndarray, float64, shape (n_lines,)
        Line midlines in px, top to bottom; their median spacing ``P`` scales the default offset bounds.
    scale_bounds : (float, float)
        Range of the y scale factor (default 0.9-1.1).
    offset_bounds : (float, float), optional
        Range of the y offset in px (default ``None``: ±50 px times ``P / 64``).

    Returns
    -------
    ndarray, int64, shape (n_fixations,)
        0-based line index per fixation.

    Notes
    -----
    Departure from eyekit: thresholds scale with line pitch. Carr et al.'s ±50 px suits their 64-px pitch, so
    the default equals it there; bounds passed explicitly are taken as px. The scale bounds are ratios.

    References
    ----------
    Lohmeier, S. (2015). Experimental evaluation and modelling of the comprehension of indirect anaphors in
    a programming language (Master's thesis, TU Berlin). Carr et al. (2022), doi:10.3758/s13428-021-01554-0.

    Examples
    --------
    >>> xy = np.array([[0, 130], [9, 131], [0, 180], [9, 181]], dtype=float)
    >>> stretch(xy, np.array([100.0, 150.0]))
    array([0, 0, 1, 1])
    """
    from scipy.optimize import minimize  # SciPy comes with scikit-learn; imported here to keep imports light

    y = xy[:, 1]
    offset_bounds = scaled_bounds(offset_bounds, (-50.0, 50.0), pitch_scale(line_y_px))

    def cost(params: np.ndarray) -> float:
        moved = y * params[0] + params[1]
        return float(np.abs(moved - line_y_px[nearest_line(moved, line_y_px)]).sum())

    best = minimize(cost, np.array([1.0, 0.0]), method="powell", bounds=[scale_bounds, offset_bounds])
    return nearest_line(y * best.x[0] + best.x[1], line_y_px)
