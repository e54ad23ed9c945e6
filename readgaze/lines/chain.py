"""``chain``: cut the fixation sequence at long saccades and give each chain the line nearest to its mean y.

Source: popEye (Schroeder 2019), as described by Carr et al. (2022).
"""

from __future__ import annotations

import numpy as np

from readgaze.lines._common import (
    _chains_to_lines_kernel,
    _pitch_scale_kernel,
    break_points,
    chains_to_nearest_line,
    flat_trials,
    pitch_scale,
    scaled_px,
)
from readgaze.lines._jit import njit  # numba, imported on first call


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


def chain_many(trials: list[tuple], *, x_thresh: float | None = None, y_thresh: float | None = None
               ) -> list[np.ndarray]:
    """:func:`chain` for ``[(xy, line_y_px, ...), ...]`` in one compiled pass; the same lines, trial by trial."""
    if not trials:
        return []
    x, y, start, line_y, line_start = flat_trials(trials)
    out = np.zeros(len(x), dtype=np.int64)
    _chain_kernel(x, y, start, line_y, line_start, x_thresh is None, 0.0 if x_thresh is None else float(x_thresh),
                  y_thresh is None, 0.0 if y_thresh is None else float(y_thresh), out)
    return np.split(out, start[1:-1])


@njit(cache=True)
def _chain_kernel(x, y, start, line_y, line_start, x_default, x_px, y_default, y_px, out):
    """Chains cut where :func:`chain` cuts them (``*_default``: Carr et al.'s thresholds scaled per trial)."""
    cut = np.zeros(len(x), dtype=np.bool_)
    for t in range(len(start) - 1):
        scale = _pitch_scale_kernel(line_y, line_start[t], line_start[t + 1] - line_start[t])
        x_t = 192.0 * scale if x_default else x_px
        y_t = 32.0 * scale if y_default else y_px
        for i in range(start[t] + 1, start[t + 1]):
            cut[i] = abs(x[i] - x[i - 1]) > x_t or abs(y[i] - y[i - 1]) > y_t
    _chains_to_lines_kernel(y, start, cut, line_y, line_start, out)


