"""What readers do between lines that a line assigner must survive: skipped lines, re-read lines, look-backs
at the end of a trial, and return sweeps that land between two lines.

Each event edits a simulated scanpath (:class:`readgaze.simulate.reader.Scanpath`, intended fixations before
drift) and keeps every fixation's gold line:

* **skipped line** (``p_skip_line`` per inner line): the first pass has no fixation on the line (a reader
  who lost the place, or a return sweep that overshot by a line; Hofmeister, Heller & Radach 1999, in
  Becker et al. (eds.), *Current Oculomotor Research*, report line skips and repeats after return sweeps);
* **re-read line** (``p_reread_line`` per line): right after finishing a line the reader sweeps back to its
  start and reads part of it again (at least half, each word fixated with probability 0.7);
* **look-backs** (``lookbacks`` at the end of the trial): short runs of 2-5 fixations on consecutive words of
  an earlier line (checking something before pressing "continue"), inserted before any final off-text look;
* **vertical undershoot** (``p_undershoot`` per return sweep): the landing fixation of a return sweep sits
  ``undershoot_pitch`` line pitches above its line (the eye has not yet come down the whole pitch; its
  gold line is still the new line). Horizontal undershoot (landing a few characters into the line, then a
  corrective saccade) is the reader's own (:class:`readgaze.simulate.reader.ReadingParams`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from readgaze.simulate.reader import Scanpath


@dataclass(frozen=True)
class LineEvents:
    """Rates of the between-line events of one trial (all zero: none)."""

    p_skip_line: float = 0.0
    p_reread_line: float = 0.0
    lookbacks: int = 0
    p_undershoot: float = 0.0
    undershoot_pitch: tuple[float, float] = (0.25, 0.5)


def apply_line_events(rng: np.random.Generator, path: Scanpath, events: LineEvents, *, line_y_px: np.ndarray,
                      left_px: np.ndarray, right_px: np.ndarray, line_index: np.ndarray) -> Scanpath:
    """Edit ``path`` with ``events`` (see the module docstring); words are given by their boxes (px) and lines.

    Returns a new Scanpath; ``y_px`` is set (not NaN) only on the undershooting landings.
    """
    if events.p_skip_line > 0:
        path = _skip_lines(rng, path, events.p_skip_line)
    if events.p_reread_line > 0:
        path = _reread_lines(rng, path, events.p_reread_line, left_px, right_px, line_index)
    for _ in range(int(events.lookbacks)):
        path = _look_back(rng, path, left_px, right_px, line_index)
    if events.p_undershoot > 0:
        path = _undershoot(rng, path, events.p_undershoot, events.undershoot_pitch, line_y_px, left_px, right_px)
    return path


def _take(path: Scanpath, keep: np.ndarray) -> Scanpath:
    return Scanpath(path.x_px[keep], path.y_px[keep], path.true_word[keep], path.true_line[keep],
                    path.duration_ms[keep])


def _insert(path: Scanpath, at: int, x, word, line, duration) -> Scanpath:
    return Scanpath(np.insert(path.x_px, at, x), np.insert(path.y_px, at, np.full(len(x), np.nan)),
                    np.insert(path.true_word, at, word), np.insert(path.true_line, at, line),
                    np.insert(path.duration_ms, at, duration))


def _skip_lines(rng, path: Scanpath, p: float) -> Scanpath:
    last = int(path.true_line.max())
    skipped = [i for i in range(1, last) if rng.random() < p]
    return _take(path, ~np.isin(path.true_line, skipped)) if skipped else path


def _words_read(rng, words: np.ndarray, left_px, right_px, p_fixate: float = 0.7):
    """x (px), word and duration (ms) of a left-to-right reading of ``words`` (each fixated with ``p_fixate``)."""
    words = words[rng.random(len(words)) < p_fixate] if len(words) > 1 else words
    x = left_px[words] + np.clip(rng.normal(0.42, 0.16, len(words)), 0.05, 0.95) * (right_px[words] - left_px[words])
    return x, words, np.maximum(np.round(rng.lognormal(np.log(200), 0.3, len(words))), 50.0)


def _reread_lines(rng, path: Scanpath, p: float, left_px, right_px, line_index) -> Scanpath:
    for i in range(int(path.true_line.max()), -1, -1):       # bottom-up: earlier positions stay valid
        on = np.flatnonzero(path.true_line == i)
        if on.size < 2 or rng.random() >= p:
            continue
        words = np.flatnonzero(line_index == i)
        n = int(rng.integers((len(words) + 1) // 2, len(words) + 1))
        x, w, d = _words_read(rng, words[:n], left_px, right_px)
        path = _insert(path, int(on[-1]) + 1, x, w, np.full(len(w), i), d)
    return path


def _look_back(rng, path: Scanpath, left_px, right_px, line_index) -> Scanpath:
    on_text = np.flatnonzero(path.true_line >= 0)
    last_line = int(line_index.max())
    if on_text.size == 0 or last_line < 1:
        return path
    r = int(rng.integers(0, last_line))                      # an earlier line than the last
    words = np.flatnonzero(line_index == r)
    k = int(min(rng.integers(2, 6), len(words)))
    start = int(rng.integers(0, len(words) - k + 1))
    x, w, d = _words_read(rng, words[start:start + k], left_px, right_px, p_fixate=1.0)
    return _insert(path, int(on_text[-1]) + 1, x, w, np.full(len(w), r), d)


def _undershoot(rng, path: Scanpath, p: float, pitches: tuple[float, float], line_y_px, left_px, right_px
                ) -> Scanpath:
    line, x = path.true_line, path.x_px
    width = float(right_px.max() - left_px.min())
    sweep = np.flatnonzero((line[1:] == line[:-1] + 1) & (line[:-1] >= 0) & (np.diff(x) < -0.3 * width)) + 1
    sweep = sweep[rng.random(len(sweep)) < p]
    if not len(sweep):
        return path
    pitch = float(np.median(np.diff(line_y_px))) if len(line_y_px) > 1 else 0.0
    y = path.y_px.copy()
    y[sweep] = line_y_px[line[sweep]] - rng.uniform(*pitches, len(sweep)) * pitch
    return Scanpath(path.x_px, y, path.true_word, path.true_line, path.duration_ms)
