"""Line-assignment trials with gold labels: for training learned assigners and testing classical ones.

Extends Carr et al.'s (2022) generator (see :mod:`readgaze.simulate.drift`) with what it lacks:
the simulated reader's durations, skips, refixations and regressions, return-sweep undershoot,
off-text fixations, combined noise/slope/shift/offset/regressions, and layouts of varying line
pitch, character width, line count and line length, monospace or proportional, with occasional
long trials (15-30 lines).

Every layout or drift parameter is either a number (fixed) or a ``(low, high)`` pair drawn
uniformly per trial. ``None`` (the default for ``noise_px`` and ``offset_px``) draws relative to the
trial's line pitch: noise SD ``U(0, 0.2) * pitch``, offset ``U(-0.2, 0.2) * pitch``.

Off by default (the defaults give the same trials as before they existed), for stress tests
(:mod:`readgaze.simulate.stress`): drift that rises and recedes within a trial and drift that differs
between a line's ends and changes over the trial (:class:`readgaze.simulate.drift.Drift`'s wave and
tilt), and skipped lines, re-read lines, end-of-trial look-backs and return sweeps landing between the
lines (:mod:`readgaze.simulate.line_events`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from readgaze.simulate.drift import Drift, add_regressions, measured_y
from readgaze.simulate.line_events import LineEvents, apply_line_events
from readgaze.simulate.reader import ReadingParams, draw_readers, read_text
from readgaze.simulate.text import layout_words, sample_words, simulated_surprisal
from readgaze.text import TextLayout

Range = float | tuple[float, float]


@dataclass(frozen=True)
class LineTrial:
    """One simulated trial for line assignment.

    Attributes
    ----------
    xy : numpy.ndarray, (n_fixations, 2) float64
        Recorded fixation positions, px, temporal order.
    line_y_px : numpy.ndarray, (n_lines,) float64
        Line midlines, px, top to bottom.
    true_line : numpy.ndarray, (n_fixations,) int64
        Gold 0-based line the reader aimed at; -1 for fixations aimed at no line (a look below the
        text, a blink artefact): exclude those from scoring, as the fixations Carr et al.'s (2022) human
        correctors discarded.
    duration_ms : numpy.ndarray, (n_fixations,) float64
    layout : readgaze.text.TextLayout
    drift : Drift
        The drift applied.
    """

    xy: np.ndarray
    line_y_px: np.ndarray
    true_line: np.ndarray
    duration_ms: np.ndarray
    layout: TextLayout
    drift: Drift

    @property
    def word_xy(self) -> np.ndarray:
        """Word-box centres in reading order, (n_words, 2) px (for ``warp`` and ``compare``)."""
        w = self.layout.words
        return np.column_stack([((w["left_px"] + w["right_px"]) / 2).to_numpy(),
                                ((w["top_px"] + w["bottom_px"]) / 2).to_numpy()])

    @property
    def word_line(self) -> np.ndarray:
        """0-based line of each word, (n_words,) int64."""
        return self.layout.words["line_index"].to_numpy().astype(np.int64)


def _draw(rng: np.random.Generator, value: Range | None, integer: bool = False):
    if value is None or np.isscalar(value):
        return value
    lo, hi = value
    return int(rng.integers(lo, hi + 1)) if integer else float(rng.uniform(lo, hi))


def simulate_line_trials(n_trials: int, seed: int = 0, *, n_lines: Range = (3, 14),
                         line_pitch_px: Range = (40.0, 120.0), char_width_px: Range = (8.0, 24.0),
                         chars_per_line: Range = (45, 100), proportional_probability: float = 0.5,
                         long_trial_probability: float = 0.1, noise_px: Range | None = None,
                         slope: Range = (-0.03, 0.03), shift: Range = (-0.05, 0.05),
                         offset_px: Range | None = None, p_within: Range = (0.0, 0.2),
                         p_between: Range = (0.0, 0.2), regression_scale: float = 1.0,
                         child_probability: float = 0.0, off_text: bool = True, wave_pitch: Range | None = None,
                         wave_knots: tuple[tuple[float, float], ...] | None = None, tilt_pitch: Range | None = None,
                         events: LineEvents | None = None, undershoot_probability: float | None = None
                         ) -> list[LineTrial]:
    """Simulate ``n_trials`` reading trials with gold line labels.

    Parameters
    ----------
    n_trials : int
    seed : int
        Trials are a deterministic function of all arguments.
    n_lines, line_pitch_px, char_width_px, chars_per_line : number or (low, high)
        Layout: lines of text, distance between midlines (px), mean character advance (px),
        maximum characters per line.
    proportional_probability : float
        Probability that a trial uses a proportional font.
    long_trial_probability : float
        Probability that a trial has 15-30 lines instead of ``n_lines``.
    noise_px, slope, shift, offset_px : number, (low, high) or None
        Vertical drift (Carr et al. 2022): noise SD px; px down per px right; px down per px of
        intended downward movement; constant px offset. ``None``: relative to pitch (module doc).
    p_within, p_between : number or (low, high)
        Carr's extra within-line (per word fixation) and between-line (per line) regressions.
    regression_scale : float
        Multiplies the odds of the reader's own regressions (0 = none).
    child_probability : float
        Probability that a trial is read like a beginning reader: the reader's regression odds times
        ``U(2, 5)``, Carr's within- and between-line regressions at ``U(1, 2.5)`` times the drawn rates, and
        noise SD up to 0.3 pitch (children regress and refixate more, and their calibration is poorer;
        Blythe & Joseph 2011, in Liversedge et al., Oxford Handbook of Eye Movements).
    off_text : bool
        Allow off-text fixations (trial start left of the text, end below it, blink artefacts).
    wave_pitch : number or (low, high), optional
        Drift that rises and recedes within the trial: its peak size in line pitches (sign drawn at
        random, up or down). The wave starts at U(0, 0.4) x the peak, peaks at a time share U(0.2, 0.8)
        and recedes to U(0.2, 0.6) x the peak (:attr:`Drift.wave_px`).
    wave_knots : tuple of (time share, pitches), optional
        A fixed wave instead (+ = down), e.g. ``((0, -0.3), (0.5, -1.05), (1, -0.5))``.
    tilt_pitch : number or (low, high), optional
        Drift that differs between a line's left and right ends: the right-minus-left difference, in
        pitches, at the start, middle and end of the trial, each drawn with a random sign
        (:attr:`Drift.tilt_px`).
    events : LineEvents, optional
        Skipped lines, re-read lines, look-backs, vertical undershoot (:mod:`readgaze.simulate.line_events`).
    undershoot_probability : float, optional
        Probability that a return sweep lands short of the line start (the reader's default: 0.45).

    Returns
    -------
    list of LineTrial

    Examples
    --------
    >>> trials = simulate_line_trials(2, seed=1, noise_px=0.0, slope=0.0, shift=0.0, offset_px=0.0)
    >>> t = trials[0]
    >>> t.xy.shape[1], bool((t.true_line < t.line_y_px.size).all())
    (2, True)
    """
    rng = np.random.default_rng(seed)
    stress = dict(wave_pitch=wave_pitch, wave_knots=wave_knots, tilt_pitch=tilt_pitch, events=events,
                  undershoot_probability=undershoot_probability)
    return [_one_trial(rng, n_lines, line_pitch_px, char_width_px, chars_per_line, proportional_probability,
                       long_trial_probability, noise_px, slope, shift, offset_px, p_within, p_between,
                       regression_scale, child_probability, off_text, **stress) for _ in range(n_trials)]


def _wave(rng, pitch: float, wave_pitch, wave_knots) -> tuple:
    """The wave's knots in px (see :func:`simulate_line_trials`); () without one."""
    if wave_knots is not None:
        return tuple((float(t), float(v) * pitch) for t, v in wave_knots)
    if wave_pitch is None:
        return ()
    peak = _draw(rng, wave_pitch) * pitch * (1.0 if rng.random() < 0.5 else -1.0)
    return ((0.0, peak * float(rng.uniform(0.0, 0.4))), (float(rng.uniform(0.2, 0.8)), peak),
            (1.0, peak * float(rng.uniform(0.2, 0.6))))


def _one_trial(rng, n_lines, pitch, char_w, cpl, prop_p, long_p, noise, slope, shift, offset, p_within,
               p_between, regression_scale, child_p, off_text, wave_pitch=None, wave_knots=None, tilt_pitch=None,
               events=None, undershoot_probability=None) -> LineTrial:
    child = bool(child_p > 0 and rng.random() < child_p)
    lines = int(rng.integers(15, 31)) if rng.random() < long_p else _draw(rng, n_lines, integer=True)
    pitch, char_w, cpl = _draw(rng, pitch), _draw(rng, char_w), _draw(rng, cpl, integer=True)
    proportional = bool(rng.random() < prop_p)
    words, zipf = sample_words(rng, int(lines * cpl / 5.5) + 10)
    layout = layout_words(words, left_px=float(rng.uniform(20, 300)), top_px=float(rng.uniform(20, 200)),
                          width_px=cpl * char_w, line_pitch_px=pitch, char_width_px=char_w,
                          proportional=proportional)
    keep = layout.words.filter(layout.words["line_index"] < lines)
    layout = TextLayout.from_words(keep)
    n = keep.height
    left, right = keep["left_px"].to_numpy(), keep["right_px"].to_numpy()
    line = keep["line_index"].to_numpy()
    length = np.array([len(w) for w in words[:n]])
    box = (left.min(), layout.lines["top_px"].min(), right.max(), layout.lines["bottom_px"].max())
    reader = draw_readers(rng, 1, drift_scale=0.0)[0]
    path = read_text(rng, reader, left_px=left, right_px=right, line_index=line, length=length, zipf=zipf[:n],
                     surprisal_bits=simulated_surprisal(rng, zipf[:n]), char_width_px=char_w, text_box=box,
                     engagement=float(rng.normal()),
                     regression_scale=regression_scale * (float(rng.uniform(2, 5)) if child else 1.0),
                     off_text=off_text, params=ReadingParams() if undershoot_probability is None else
                     ReadingParams(undershoot_probability=undershoot_probability))
    if events is not None:
        path = apply_line_events(rng, path, events, line_y_px=layout.line_y_px, left_px=left, right_px=right,
                                 line_index=line)
    extra = float(rng.uniform(1.0, 2.5)) if child else 1.0
    noise_max = 0.3 if child else 0.2
    drift = Drift(noise_px=_draw(rng, noise) if noise is not None else float(rng.uniform(0, noise_max)) * pitch,
                  slope=_draw(rng, slope), shift=_draw(rng, shift),
                  offset_px=_draw(rng, offset) if offset is not None else float(rng.uniform(-0.2, 0.2)) * pitch,
                  p_within=min(_draw(rng, p_within) * extra, 1.0), p_between=min(_draw(rng, p_between) * extra, 1.0),
                  wave_px=_wave(rng, pitch, wave_pitch, wave_knots),
                  tilt_px=() if tilt_pitch is None else tuple(
                      (t, _draw(rng, tilt_pitch) * pitch * (1.0 if rng.random() < 0.5 else -1.0))
                      for t in (0.0, 0.5, 1.0)))
    path = add_regressions(rng, path, drift, left_px=left, right_px=right, line_index=line)
    y = measured_y(rng, path, layout.line_y_px, text_left_px=box[0], text_top_px=box[1], drift=drift,
                   text_width_px=box[2] - box[0])
    x = path.x_px + rng.normal(0.0, 2.0, len(y))
    return LineTrial(np.column_stack([x, y]), layout.line_y_px.astype(np.float64), path.true_line.astype(np.int64),
                     path.duration_ms.astype(np.float64), layout, drift)
