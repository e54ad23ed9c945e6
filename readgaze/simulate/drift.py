"""Vertical drift and extra regressions, after Carr et al.'s simulator (combinable).

Carr, Pescuma, Furlan, Ktori & Crepaldi (2022), Algorithms for the automated correction of vertical
drift in eye-tracking data, *Behavior Research Methods* 54:287-310, doi:10.3758/s13428-021-01554-0
(``code/simulation.py``). Their five phenomena, one factor at a time there, any mix here:

* **noise**: ``y ~ N(line_y, noise_px)``, measurement error or imprecise targeting;
* **slope**: ``+ slope * x``, px of downward drift per px rightwards;
* **shift**: ``+ shift * line_y``, extra px per px of intended downward movement (accumulates down
  the page); x and line_y are measured from the text block's top-left corner, as in Carr;
* **within-line regressions** (``p_within`` per first-pass word fixation after a line's first):
  an extra fixation at ``x ~ triangular(line left, word left, word left)``, back on the same line;
* **between-line regressions** (``p_between`` per line after the first): line ``r =
  int(triangular(0, i, i))`` is partly reread from a start x uniform in the first half of the text
  width to an end x uniform in the second half; those fixations are inserted, in order, at a random
  point of line ``i``'s fixations (before the last ``k``, ``k ~ U{1, n-1}``).

Departures from Carr: the shift term uses the fixation's own intended line (Carr uses the line being
read when a between-line regression was inserted), and an extra constant ``offset_px`` models a
calibration offset. Regressed-to fixations land inside word boxes (Carr: on word centres' spans).

Two drifts that change during a trial, which none of Carr's factors can make (a tracker's calibration
wanders with head movement and pupil size over minutes, so the error is a function of time, not of
the line): a **wave**, an extra vertical offset that rises and recedes over the trial (knots
``(time share, px)``, linear in between; time = the share of the trial's fixation time elapsed at the
fixation's midpoint), and a **tilt**, a difference between the drift at the text's right and left
edges (px, also knots over time), so the slope itself changes while the reader moves down the page.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from readgaze.simulate.reader import Scanpath


@dataclass(frozen=True)
class Drift:
    """Drift phenomena of one trial (all zero = perfect calibration, no inserted regressions)."""

    noise_px: float = 0.0
    slope: float = 0.0
    shift: float = 0.0
    offset_px: float = 0.0
    p_within: float = 0.0
    p_between: float = 0.0
    wave_px: tuple[tuple[float, float], ...] = ()
    tilt_px: tuple[tuple[float, float], ...] = ()

    def wave_at(self, time_share: np.ndarray) -> np.ndarray:
        """The wave's extra vertical offset (px, + = down) at each time share in [0, 1]; 0 without a wave."""
        return _knots(self.wave_px, time_share)

    def tilt_at(self, time_share: np.ndarray) -> np.ndarray:
        """Right-edge minus left-edge drift (px) at each time share; 0 without a tilt."""
        return _knots(self.tilt_px, time_share)


def _knots(knots: tuple, at: np.ndarray) -> np.ndarray:
    if not knots:
        return np.zeros(len(at))
    t, v = np.asarray(knots, dtype=np.float64).T
    return np.interp(at, t, v)


def time_share(duration_ms: np.ndarray) -> np.ndarray:
    """Share of the trial's fixation time elapsed at each fixation's midpoint, float64 in (0, 1)."""
    d = np.asarray(duration_ms, dtype=np.float64)
    total = d.sum()
    return (np.cumsum(d) - d / 2) / total if total > 0 else np.zeros(len(d))


def measured_y(rng: np.random.Generator, path: Scanpath, line_y_px: np.ndarray, *,
               text_left_px: float, text_top_px: float, drift: Drift,
               text_width_px: float | None = None) -> np.ndarray:
    """Recorded y of every fixation: intended midline plus noise, slope, shift and offset (and the wave and
    tilt, when the drift has them).

    Parameters
    ----------
    path : Scanpath
        ``true_line`` (-1 = aims at no line; those keep ``path.y_px`` plus noise) and ``x_px``.
    line_y_px : numpy.ndarray, (n_lines,) float
        Line midlines, px.
    text_width_px : float, optional
        Width of the text block (px), over which the tilt grows from 0 to its value; needed with a tilt.

    Returns
    -------
    numpy.ndarray, (n_fixations,) float64, px
    """
    on_line = path.true_line >= 0
    y_line = np.where(on_line, line_y_px[np.maximum(path.true_line, 0)], path.y_px)
    intended = np.where(np.isnan(path.y_px), y_line, path.y_px)
    rel_line_y = np.where(on_line, y_line - text_top_px, 0.0)
    y = (intended + rng.normal(0.0, 1.0, len(intended)) * drift.noise_px
         + drift.slope * (path.x_px - text_left_px) + drift.shift * rel_line_y + drift.offset_px)
    if drift.wave_px or drift.tilt_px:
        t = time_share(path.duration_ms)
        y = y + drift.wave_at(t)
        if drift.tilt_px:
            y = y + drift.tilt_at(t) * (path.x_px - text_left_px) / max(float(text_width_px or 1.0), 1.0)
    return y


def add_regressions(rng: np.random.Generator, path: Scanpath, drift: Drift, *, left_px: np.ndarray,
                    right_px: np.ndarray, line_index: np.ndarray) -> Scanpath:
    """Insert Carr's within- and between-line regressions into a scanpath (see module docstring)."""
    if drift.p_within > 0:
        path = _within(rng, path, drift.p_within, left_px, right_px, line_index)
    if drift.p_between > 0:
        path = _between(rng, path, drift.p_between, left_px, right_px, line_index)
    return path


def _word_at(x, line, left_px, right_px, line_index):
    hit = np.flatnonzero((line_index == line) & (left_px <= x) & (x < right_px))
    return int(hit[0]) if hit.size else -1


def _insert(path: Scanpath, at: int, x, word, line, dur) -> Scanpath:
    x, word, line, dur = (np.atleast_1d(np.asarray(v)) for v in (x, word, line, dur))
    return Scanpath(np.insert(path.x_px, at, x), np.insert(path.y_px, at, np.full(len(x), np.nan)),
                    np.insert(path.true_word, at, word), np.insert(path.true_line, at, line),
                    np.insert(path.duration_ms, at, dur))


def _within(rng, path, p, left_px, right_px, line_index):
    w, ln = path.true_word, path.true_line
    first_of_line = np.r_[True, ln[1:] != ln[:-1]]
    candidates = np.flatnonzero((w >= 0) & ~first_of_line & (rng.random(len(w)) < p))
    for at in candidates[::-1]:  # from the end so earlier indices stay valid
        line = int(ln[at])
        line_left = left_px[line_index == line].min()
        start = left_px[w[at]] + 1
        x = rng.triangular(line_left, start, start) if start > line_left else line_left
        word = _word_at(x, line, left_px, right_px, line_index)
        path = _insert(path, int(at) + 1, x, word, line, rng.lognormal(np.log(190), 0.3))
    return path


def _between(rng, path, p, left_px, right_px, line_index):
    block_left, block_right = left_px.min(), right_px.max()
    half = (block_left + block_right) / 2
    centre = (left_px + right_px) / 2
    for i in range(int(line_index.max()), 0, -1):  # bottom-up so earlier indices stay valid
        if rng.random() >= p:
            continue
        on_i = np.flatnonzero(path.true_line == i)
        if on_i.size < 2:
            continue
        r = int(rng.triangular(0, i, i))
        x0, x1 = rng.uniform(block_left, half), rng.uniform(half, block_right)
        words = np.flatnonzero((line_index == r) & (centre >= x0) & (centre <= x1))
        if words.size == 0:
            continue
        k = int(rng.integers(1, on_i.size))
        at = int(on_i[on_i.size - k])
        x = left_px[words] + rng.uniform(0.2, 0.8, words.size) * (right_px[words] - left_px[words])
        path = _insert(path, at, x, words, np.full(words.size, r),
                       rng.lognormal(np.log(190), 0.3, words.size))
    return path

