"""``regress``: fit one set of parallel regression lines to the fixations (Cohen 2013, FixAlign).

``n_lines`` lines share a slope ``k`` and a vertical offset ``o`` from the midlines and a spread ``s``; the
parameters maximise the summed log-likelihood of each fixation under its best line (Powell's method, with
each parameter squashed into its bounds by the normal CDF, as in Carr et al. 2022). Each fixation then goes to
its most likely line. FixAlign's run rule is not used.
"""

from __future__ import annotations

import numpy as np

from readgaze.lines._common import pitch_scale, scaled_bounds

_LOG_SQRT_2PI = 0.5 * np.log(2 * np.pi)


def _bounded(params: np.ndarray, bounds: tuple[tuple[float, float], ...]) -> list[float]:
    """Map unbounded optimiser values into ``bounds`` through the standard normal CDF."""
    from scipy.special import ndtr

    return [lo + (hi - lo) * float(ndtr(p)) for p, (lo, hi) in zip(params, bounds)]


def _log_density(xy: np.ndarray, line_y_px: np.ndarray, k: float, o: float, s: float) -> np.ndarray:
    """Log normal density of each fixation's y under each fitted line, shape (n_fixations, n_lines)."""
    fit_y = xy[:, :1] * k + (line_y_px + o)[None, :]
    z = (xy[:, 1:2] - fit_y) / s
    return -0.5 * z * z - np.log(s) - _LOG_SQRT_2PI


def regress(xy: np.ndarray, line_y_px: np.ndarray, *, slope_bounds: tuple[float, float] = (-0.1, 0.1),
            offset_bounds: tuple[float, float] | None = None,
            sd_bounds: tuple[float, float] | None = None) -> np.ndarray:
    """Assign fixations to the most likely of ``n_lines`` fitted parallel lines.

    Parameters
    ----------
    xy : ndarray, float64, shape (n_fixations, 2)
        Fixation positions in px, temporal order.
    line_y_px : ndarray, float64, shape (n_lines,)
        Line midlines in px, top to bottom; their median spacing ``P`` scales the default px bounds.
    slope_bounds : (float, float)
        Range of the shared slope (px of y per px of x; default ±0.1). The slope multiplies the screen x.
    offset_bounds : (float, float), optional
        Range of the shared vertical offset in px (default ``None``: ±50 px times ``P / 64``).
    sd_bounds : (float, float), optional
        Range of the spread of fixations around a line in px (default ``None``: 1-20 px times ``P / 64``).

    Returns
    -------
    ndarray, int64, shape (n_fixations,)
        0-based line index per fixation.

    Notes
    -----
    Departure from eyekit: thresholds scale with line pitch. Carr et al.'s ±50 and 1-20 px bounds suit their
    64-px pitch, so the defaults equal them there; bounds passed explicitly are taken as px.

    References
    ----------
    Cohen, A. L. (2013). Software for the automatic correction of recorded eye fixation locations in reading
    experiments. Behavior Research Methods, 45(3), 679-683. doi:10.3758/s13428-012-0280-3.
    Carr et al. (2022), doi:10.3758/s13428-021-01554-0.

    Examples
    --------
    >>> xy = np.array([[0, 100], [500, 125], [0, 150], [500, 175]], dtype=float)
    >>> regress(xy, np.array([100.0, 150.0]))
    array([0, 0, 1, 1])
    """
    from scipy.optimize import minimize  # SciPy comes with scikit-learn; imported here to keep imports light

    scale = pitch_scale(line_y_px)
    bounds = (slope_bounds, scaled_bounds(offset_bounds, (-50.0, 50.0), scale),
              scaled_bounds(sd_bounds, (1.0, 20.0), scale))

    def cost(params: np.ndarray) -> float:
        return -float(_log_density(xy, line_y_px, *_bounded(params, bounds)).max(axis=1).sum())

    best = minimize(cost, np.zeros(3), method="powell")
    return _log_density(xy, line_y_px, *_bounded(best.x, bounds)).argmax(axis=1).astype(np.int64)
