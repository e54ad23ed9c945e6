"""The simulated reader: participants with individual differences and their eye movements.

A first pass moves through the words in order. Each word is skipped, fixated once, or refixated;
after a word the reader may regress 1-5 words back (1-2 fixations) before going on. Return sweeps
undershoot the start of the next line with a corrective leftward saccade. A trial may open with a
fixation left of the text (the fixation-cross position) and end with a look below the text (the
"continue" button); rarely a blink artefact lands anywhere on the screen.

Fixation durations are log-normal. Their log mean grows as word frequency falls and surprisal
rises (frequency and predictability effects); skipping falls with length and rises with frequency;
refixations rise with length; regressions rise with surprisal (Rayner 1998, Psychol. Bull. 124:372;
Reichle et al. 2003, E-Z Reader, BBS 26:445). All effects are additive on the log / logit scale, and
a trial's goal enters the same way, word by word (:func:`goal_shifts`).

Information seekers (OneStop's question-preview regime; Berzak et al. 2025, *Scientific Data*,
doi:10.1038/s41597-025-06272-2) skim outside the critical span
(shorter fixations, more skips, fewer regressions) and slow down inside it (longer fixations, fewer
skips, more refixations and regressions), and sometimes look back at the span after the first pass.
``goal_effect`` scales all these shifts (0 = information seekers read like ordinary readers).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Reader:
    """Individual differences of one simulated participant (log / logit shifts and drift).

    Attributes
    ----------
    speed_log : float
        Added to every log fixation duration (> 0: slower reader).
    skip_logit, regression_logit, refixation_logit : float
        Added to the logit of skipping a word, regressing after it, refixating it.
    comprehension_logit : float
        Added to the logit of answering correctly.
    noise_px, slope, shift, offset_px : float
        Calibration drift (Carr et al. 2022): vertical noise SD (px), px down per px rightwards,
        px down per px of downward movement, constant vertical offset (px).
    """

    speed_log: float
    skip_logit: float
    regression_logit: float
    refixation_logit: float
    comprehension_logit: float
    noise_px: float
    slope: float
    shift: float
    offset_px: float


def draw_readers(rng: np.random.Generator, n: int, *, drift_scale: float = 1.0,
                 line_pitch_px: float = 114.0) -> list[Reader]:
    """Draw ``n`` participants. Drift sizes scale with ``line_pitch_px`` and ``drift_scale``."""
    sd = rng.normal(size=(n, 5)) * np.array([0.15, 0.45, 0.45, 0.35, 0.7])
    pitch = line_pitch_px * drift_scale
    noise = rng.uniform(0.04, 0.12, n) * pitch
    slope = rng.normal(0.0, 0.012, n) * drift_scale
    shift = rng.normal(0.0, 0.025, n) * drift_scale
    offset = rng.normal(0.0, 0.08, n) * pitch
    return [Reader(*map(float, sd[k]), float(noise[k]), float(slope[k]), float(shift[k]),
                   float(offset[k])) for k in range(n)]


@dataclass(frozen=True)
class ReadingParams:
    """Base rates of the reading model (defaults give OneStop-like statistics).

    Durations in ms are medians of log-normals; probabilities are for an average reader and word
    (length 4-6 letters, Zipf 5, surprisal 8 bits).
    """

    fixation_ms: float = 235.0
    fixation_log_sd: float = 0.33
    refixation_ms: float = 185.0
    regression_ms: float = 205.0
    corrective_ms: float = 140.0
    frequency_log_per_zipf: float = 0.045
    surprisal_log_per_bit: float = 0.012
    skip_logit: float = -1.15
    skip_logit_per_letter: float = -0.55
    skip_logit_per_zipf: float = 0.35
    refixation_logit: float = -2.0
    refixation_logit_per_letter: float = 0.35
    regression_logit: float = -2.0
    regression_logit_per_bit: float = 0.08
    undershoot_probability: float = 0.45
    start_off_text_probability: float = 0.5
    end_off_text_probability: float = 0.4
    blink_artefact_probability: float = 0.004


@dataclass(frozen=True)
class Scanpath:
    """Intended fixations of one trial, before calibration drift.

    ``true_word`` is -1 off words; ``true_line`` is -1 when the fixation aims at no line (a look
    below the text, a blink artefact). ``y_px`` is NaN except for off-text fixations, whose y is
    not a line midline.
    """

    x_px: np.ndarray
    y_px: np.ndarray
    true_word: np.ndarray
    true_line: np.ndarray
    duration_ms: np.ndarray


def goal_shifts(n_words: int, span: tuple[int, int] | None, goal: str, goal_effect: float) -> dict:
    """Per-word log/logit shifts of an information seeker; zeros for ordinary reading."""
    inside = np.zeros(n_words, dtype=bool)
    if span is not None:
        inside[span[0]:span[1]] = True
    g = goal_effect if goal == "information_seeking" else 0.0
    return {
        "duration": g * np.where(inside, 0.12, -0.08),
        "skip": g * np.where(inside, -0.45, 0.4),
        "refixation": g * np.where(inside, 0.35, -0.25),
        "regression": g * np.where(inside, 0.45, -0.35),
        "lookback": 0.35 * min(g, 1.0),
    }


def speed_shifts(n_words: int, goal: str, goal_effect: float) -> dict:
    """Per-word shifts of an information seeker who only reads faster: the same everywhere, no span, no look back.

    The planted ``reading_speed`` task (:func:`readgaze.simulate.simulate_corpus`): the goal is then carried by
    overall speed alone (shorter fixations, more skips, fewer refixations), so the text adds nothing to decoding it.
    Zeros for ordinary reading.
    """
    g = goal_effect if goal == "information_seeking" else 0.0
    ones = np.ones(n_words)
    return {"duration": -0.1 * g * ones, "skip": 0.35 * g * ones, "refixation": -0.25 * g * ones,
            "regression": -0.2 * g * ones, "lookback": 0.0}


def read_text(rng: np.random.Generator, reader: Reader, *, left_px: np.ndarray,
              right_px: np.ndarray, line_index: np.ndarray, length: np.ndarray, zipf: np.ndarray,
              surprisal_bits: np.ndarray, char_width_px: float, text_box: tuple[float, float, float, float],
              shifts: dict | None = None, span: tuple[int, int] | None = None,
              engagement: float = 0.0, regression_scale: float = 1.0, off_text: bool = True,
              params: ReadingParams = ReadingParams()) -> Scanpath:
    """Simulate the intended fixations of one reading of one text.

    Parameters
    ----------
    rng : numpy.random.Generator
    reader : Reader
    left_px, right_px : numpy.ndarray, (n_words,) float
        Interest-area box edges.
    line_index : numpy.ndarray, (n_words,) int
        0-based line of each word.
    length, zipf, surprisal_bits : numpy.ndarray, (n_words,)
        Letters (without punctuation), Zipf frequency, surprisal.
    char_width_px : float
        Mean character advance, px (sets return-sweep landing distances).
    text_box : (left, top, right, bottom)
        Text block, px (for off-text fixations).
    shifts : dict, optional
        Output of :func:`goal_shifts`; ``None`` = ordinary reading.
    span : (int, int), optional
        The critical span (for the information seeker's look back).
    engagement : float
        Trial-level attention (standard normal): fewer skips and longer fixations when high.
    regression_scale : float
        Multiplies the odds of regressing (0 = no regressions at all).
    off_text : bool
        Allow start/end off-text fixations and blink artefacts.

    Returns
    -------
    Scanpath
    """
    n = len(left_px)
    sh = shifts or {"duration": 0.0, "skip": 0.0, "refixation": 0.0, "regression": 0.0, "lookback": 0.0}
    p = params
    mu = (np.log(p.fixation_ms) + reader.speed_log + 0.04 * engagement
          + p.frequency_log_per_zipf * (5.0 - zipf) + p.surprisal_log_per_bit * (surprisal_bits - 8.0)
          + sh["duration"])
    p_skip = _sigmoid(p.skip_logit + p.skip_logit_per_letter * (length - 5) + p.skip_logit_per_zipf
                      * (zipf - 5.0) + reader.skip_logit - 0.25 * engagement + sh["skip"])
    p_refix = _sigmoid(p.refixation_logit + p.refixation_logit_per_letter * (length - 5)
                       + reader.refixation_logit + sh["refixation"])
    p_reg = regression_scale * _sigmoid(p.regression_logit + p.regression_logit_per_bit
                                        * (surprisal_bits - 8.0) + reader.regression_logit
                                        + sh["regression"])
    words = dict(left=left_px, right=right_px, line=line_index, mu=mu, p_skip=p_skip,
                 p_refix=p_refix, p_reg=p_reg)
    out: list[tuple[float, float, int, int, float]] = []
    left, top, right, bottom = text_box
    if off_text and rng.random() < p.start_off_text_probability:
        y0 = (top + (bottom - top) / max(1, line_index.max() + 1) / 2)
        out.append((left - rng.uniform(30, 200), y0, -1, 0, float(rng.lognormal(np.log(250), 0.3))))
    _pass(rng, words, 0, n, char_width_px, reader, p, out)
    if span is not None and rng.random() < sh["lookback"]:
        _pass(rng, words, span[0], span[1], char_width_px, reader, p, out)
    if off_text and rng.random() < p.end_off_text_probability:
        out.append((rng.uniform(left, right), bottom + rng.uniform(60, 250), -1, -1,
                    float(rng.lognormal(np.log(220), 0.3))))
    x, y, w, line, d = (np.array(c) for c in zip(*out))
    if off_text:
        blink = rng.random(len(x)) < p.blink_artefact_probability
        x = np.where(blink, rng.uniform(0, right + left, len(x)), x)
        y = np.where(blink, rng.uniform(0, bottom + top, len(x)), y)
        w, line = np.where(blink, -1, w), np.where(blink, -1, line)
    return Scanpath(x.astype(np.float64), y.astype(np.float64), w.astype(np.int64),
                    line.astype(np.int64), np.maximum(np.round(d), 50.0))


def _pass(rng, wd, i0, i1, char_w, reader, p, out):
    """One left-to-right pass over words ``i0 .. i1-1``, appending (x, y, word, line, ms) to ``out``."""
    m = i1 - i0
    u = rng.random((m, 5))
    land = np.clip(rng.normal(0.42, 0.16, m), 0.03, 0.97)
    land2 = np.clip(rng.normal(0.72, 0.12, m), 0.05, 0.98)
    dur = rng.lognormal(wd["mu"][i0:i1], p.fixation_log_sd)
    refix_dur = rng.lognormal(np.log(p.refixation_ms) + reader.speed_log, p.fixation_log_sd, m)
    reg_dur = rng.lognormal(np.log(p.regression_ms) + reader.speed_log, p.fixation_log_sd, (m, 2))
    back = np.minimum(rng.geometric(0.5, m), 6)
    under_chars = rng.uniform(4.0, 12.0, m)
    left, right, line = wd["left"], wd["right"], wd["line"]
    nan = float("nan")
    skipped_prev = False
    for k in range(m):
        i = i0 + k
        first_of_line = i == i0 or line[i] != line[i - 1]
        p_skip = wd["p_skip"][i] * (0.4 if skipped_prev else 1.0)
        if not first_of_line and i < i1 - 1 and u[k, 0] < p_skip:
            skipped_prev = True
            continue
        skipped_prev = False
        if first_of_line and i > i0 and u[k, 1] < p.undershoot_probability:
            x_land = left[i] + under_chars[k] * char_w
            on_line = np.flatnonzero((line == line[i]) & (left <= x_land) & (x_land < right))
            if on_line.size and on_line[0] != i:
                out.append((x_land, nan, int(on_line[0]), int(line[i]),
                            float(rng.lognormal(np.log(p.corrective_ms), 0.25))))
        width = right[i] - left[i]
        out.append((left[i] + land[k] * width, nan, i, int(line[i]), float(dur[k])))
        if u[k, 2] < wd["p_refix"][i]:
            out.append((left[i] + land2[k] * width, nan, i, int(line[i]), float(refix_dur[k])))
        if i > i0 and u[k, 3] < wd["p_reg"][i]:
            j = i - min(int(back[k]), i - i0)
            for r in range(1 + int(u[k, 4] < 0.35 and j + 1 < i)):
                jj = j + r
                out.append((left[jj] + land[(jj - i0)] * (right[jj] - left[jj]), nan, jj,
                            int(line[jj]), float(reg_dur[k, r])))


def _sigmoid(z):
    return 1.0 / (1.0 + np.exp(-z))
