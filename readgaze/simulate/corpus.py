"""A OneStop-shaped simulated corpus: items (articles) of paragraphs at two levels, participants
with a constant reading goal, one trial per participant and paragraph, one question per trial.

Comprehension depends on how the trial's critical span was read (see :func:`span_processing`):
``P(correct) = sigmoid(base + participant ability + comprehension_effect * processing)``.

Two planted tasks (``planted``) isolate one modality each, for the modality ablations (``--data.ablate``):

* ``"question_span"`` needs the text. Every participant reads for information seeking. On each trial the reader
  either finds the span that answers the question (the critical span; probability 1/2) or is drawn to the
  question's distractor span, as long as the critical one, and reads that one span as information seekers read
  their span (:func:`readgaze.simulate.reader.goal_shifts`, ``goal_effect``). The answer is correct with
  probability :data:`P_CORRECT_FOUND` after finding the span, :data:`P_CORRECT_MISLED` after the distractor.
  Both branches slow down on an equally long span, so overall reading speed carries no signal, and the question is
  "What does the text say about {keyword}?" (:func:`readgaze.simulate.text.make_paragraph` ``keyword_questions``):
  the keyword is written into the critical span, and the distractor span holds none. Which span was read slowly
  is in the gaze; which span answers the question is only in the text. A model must find the keyword in the
  paragraph and check the gaze there; with the paragraph's words permuted (the text ablation) or without the text
  (gaze-only models) it is at chance.
  Task ``comprehension`` with ``reading_regime`` ``information_seeking`` (or ``all``).
* ``"reading_speed"`` needs only the gaze. Half the participants are information seekers, who read faster
  everywhere (:func:`readgaze.simulate.reader.speed_shifts`) and do nothing special on the span: the reading goal
  is carried by overall speed alone, and the text ablation loses nothing. Task ``reading_goal``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import polars as pl

from readgaze.simulate.drift import Drift, measured_y
from readgaze.simulate.reader import (
    Reader,
    ReadingParams,
    Scanpath,
    draw_readers,
    goal_shifts,
    read_text,
    speed_shifts,
)
from readgaze.simulate.text import Paragraph, layout_words, make_paragraph
from readgaze.text import TextLayout

SCREEN_PX = (2560, 1440)
PX_PER_DEG = 72.0  # OneStop sample: a 90 px saccade is reported as 1.24 deg
BASE_CORRECT_LOGIT = 1.7
P_CORRECT_FOUND, P_CORRECT_MISLED = 0.9, 0.1
"""``planted="question_span"``: P(correct) after reading the critical span / the distractor span."""
PLANTED = (None, "question_span", "reading_speed")


@dataclass(frozen=True)
class SimCorpus:
    """A simulated corpus in the canonical tables, plus what the report writer needs.

    Attributes
    ----------
    trials : polars.DataFrame
        Canonical ``trials`` columns plus ``onestopqa_question_id`` (Int32, 0-2),
        ``critical_span_start_index`` / ``critical_span_end_index`` and the distractor pair
        (List(Int32), end exclusive), ``article_batch``, ``article_id``, ``paragraph_id``,
        ``trial_index`` (Int32, 1-based), ``difficulty_level`` ('Adv'/'Ele') and the generating
        latents ``latent_span_processing`` and ``latent_p_correct`` (Float64; never model inputs), and with
        ``planted="question_span"`` ``latent_found_span`` (Boolean: the reader read the critical span, not the
        distractor).
    words : polars.DataFrame
        Canonical ``words`` columns of every text, plus ``in_critical_span_q0..q2`` (Boolean).
    fixations : polars.DataFrame
        Canonical ``fixations`` columns (``line_index``/``word_index`` null: not yet assigned) plus the
        gold ``true_line_index`` and ``true_word_index`` (Int32, null when the fixation aims at no
        line / no word), before drift.
    layouts : dict of str to TextLayout
        By ``text_id``.
    paragraphs : dict of str to Paragraph
        By ``text_id``.
    settings : dict
        The arguments that made the corpus, plus ``screen_px`` and ``px_per_deg``.
    """

    trials: pl.DataFrame
    words: pl.DataFrame
    fixations: pl.DataFrame
    layouts: dict[str, TextLayout]
    paragraphs: dict[str, Paragraph]
    settings: dict = field(default_factory=dict)


def span_processing(path: Scanpath, span: tuple[int, int]) -> float:
    """How thoroughly a critical span was read: mean of two standardised terms.

    ``coverage`` is the share of span words fixated at least once (ordinary reading: ~0.75),
    ``dwell`` the log of total fixation time on the span per span word relative to 200 ms.
    Returns ``((coverage - 0.75) / 0.12 + log(dwell / 200) / 0.3) / 2``.
    """
    s0, s1 = span
    on = (path.true_word >= s0) & (path.true_word < s1)
    coverage = np.unique(path.true_word[on]).size / (s1 - s0)
    dwell = path.duration_ms[on].sum() / (s1 - s0)
    return float(((coverage - 0.75) / 0.12 + np.log(max(dwell, 1.0) / 200.0) / 0.3) / 2)


def _texts(rng, n_items, paragraphs_per_item, levels, words_per_paragraph, layout_kwargs, question_span=False):
    paragraphs, layouts, keys = {}, {}, []
    for a in range(n_items):
        for pid in range(1, paragraphs_per_item + 1):
            n_adv = int(rng.integers(words_per_paragraph[0], words_per_paragraph[1] + 1))
            for level in levels:
                n = n_adv if level == "Adv" else max(20, int(0.8 * n_adv))
                text_id = f"1_{a + 1}_{level}_{pid}"
                par = make_paragraph(rng, n, easy=level == "Ele", keyword_questions=question_span)
                paragraphs[text_id] = par
                layouts[text_id] = layout_words(par.words, text_id=text_id, **layout_kwargs)
            keys.append((a + 1, pid))
    return paragraphs, layouts, keys


def simulate_corpus(n_participants: int = 24, n_items: int = 4, paragraphs_per_item: int = 3, *,
                    seed: int = 0, goal_effect: float = 1.0, comprehension_effect: float = 1.0,
                    drift_scale: float = 1.0, levels: tuple[str, ...] = ("Adv", "Ele"),
                    words_per_paragraph: tuple[int, int] = (60, 130), line_pitch_px: float = 114.0,
                    char_width_px: float = 19.0, proportional: bool = False, left_px: float = 358.0,
                    top_px: float = 154.0, width_px: float = 1806.0,
                    params: ReadingParams = ReadingParams(),  # noqa: B008 (frozen)
                    planted: str | None = None) -> SimCorpus:
    """Simulate a OneStop-shaped corpus: every participant reads every paragraph once.

    Parameters
    ----------
    n_participants : int
        Half read for information seeking (question shown first), half ordinarily; the goal is
        constant per participant, as in OneStop.
    n_items, paragraphs_per_item : int
        Articles and paragraphs per article. Each paragraph exists at each of ``levels``; a
        participant sees each paragraph at one level (counterbalanced).
    seed : int
        Everything is a deterministic function of the arguments.
    goal_effect : float
        Scales how differently information seekers read inside vs outside the critical span
        (0 = no goal signal; 1 = default).
    comprehension_effect : float
        Weight of span processing on the logit of a correct answer (0 = no eye-movement signal).
    drift_scale : float
        Scales every participant's calibration drift (0 = fixations on their lines' midlines).
    words_per_paragraph : (int, int)
        Range of the advanced version's length (OneStop: 50-165 words).
    line_pitch_px, char_width_px, proportional, left_px, top_px, width_px
        Screen layout (see :func:`readgaze.simulate.text.layout_words`); the defaults copy OneStop's
        2560 x 1440 px screen (text from x = 358 to 2164 px, first line top at 154 px).
    params : ReadingParams
        Base rates of the reading model.
    planted : {None, "question_span", "reading_speed"}
        A task that needs the text, or one that needs only the gaze (module docstring); ``None``: the default
        corpus (goal on the critical span, comprehension from span processing).

    Returns
    -------
    SimCorpus

    Examples
    --------
    >>> c = simulate_corpus(n_participants=2, n_items=1, paragraphs_per_item=3, seed=1)
    >>> c.trials.height, sorted(set(c.trials["reading_goal"]))
    (6, ['information_seeking', 'ordinary'])
    >>> c.fixations.select("true_line_index", "true_word_index").dtypes
    [Int32, Int32]
    """
    if planted not in PLANTED:
        raise ValueError(f"planted: got {planted!r}, expected one of {PLANTED}")
    rng = np.random.default_rng(seed)
    layout_kwargs = dict(line_pitch_px=line_pitch_px, char_width_px=char_width_px, proportional=proportional,
                         left_px=left_px, top_px=top_px, width_px=width_px)
    paragraphs, layouts, keys = _texts(rng, n_items, paragraphs_per_item, levels, words_per_paragraph,
                                       layout_kwargs, planted == "question_span")
    readers = draw_readers(rng, n_participants, drift_scale=drift_scale, line_pitch_px=line_pitch_px)
    goals = np.array(["ordinary", "information_seeking"])[rng.permutation(np.arange(n_participants) % 2)]
    if planted == "question_span":
        goals[:] = "information_seeking"
    trial_rows, fix_parts = [], []
    for k, reader in enumerate(readers):
        pid = f"l{k % 60 + 1}_{k + 1001}"
        for t, (article, par_id) in enumerate(keys):
            level = levels[(k + t) % len(levels)]
            text_id = f"1_{article}_{level}_{par_id}"
            q = (k + t) % 3
            row, fix = _trial(rng, reader, str(goals[k]), paragraphs[text_id], layouts[text_id], q,
                              goal_effect, comprehension_effect, drift_scale, params, planted)
            trial_id = f"{pid}_{text_id}_r0"
            row.update(trial_id=trial_id, participant_id=pid, item_id=f"1_{article}", text_id=text_id,
                       article_batch=1, article_id=article, paragraph_id=par_id, difficulty_level=level,
                       trial_index=t + 1)
            trial_rows.append(row)
            fix["trial_id"] = np.full(len(fix["x_px"]), trial_id)
            fix_parts.append(fix)
    settings = dict(seed=seed, goal_effect=goal_effect, comprehension_effect=comprehension_effect,
                    drift_scale=drift_scale, planted=planted, screen_px=SCREEN_PX, px_per_deg=PX_PER_DEG,
                    **layout_kwargs)
    return SimCorpus(_trials_frame(trial_rows), _words_frame(paragraphs, layouts), _fixations_frame(fix_parts),
                     layouts, paragraphs, settings)


def _trial(rng, reader: Reader, goal, par: Paragraph, layout: TextLayout, q, goal_effect,
           comprehension_effect, drift_scale, params, planted=None):
    w = layout.words
    left, right = w["left_px"].to_numpy(), w["right_px"].to_numpy()
    line = w["line_index"].to_numpy()
    length = np.array([len(s.strip(".,")) for s in par.words])
    span = par.critical_spans[q]
    read_span, shifts = span, goal_shifts(par.n_words, span, goal, goal_effect)
    found = None
    if planted == "question_span":  # the reader finds the answer's span, or is drawn to the distractor's
        found = bool(rng.random() < 0.5)
        read_span = span if found else par.distractor_spans[q]
        shifts = goal_shifts(par.n_words, read_span, goal, goal_effect)
    elif planted == "reading_speed":
        shifts = speed_shifts(par.n_words, goal, goal_effect)
    box = (left.min(), layout.lines["top_px"].min(), right.max(), layout.lines["bottom_px"].max())
    engagement = float(rng.normal())
    path = read_text(rng, reader, left_px=left, right_px=right, line_index=line, length=length,
                     zipf=par.zipf, surprisal_bits=par.surprisal_bits,
                     char_width_px=float(np.median((right - left) / (length + 1))), text_box=box,
                     shifts=shifts, span=read_span,
                     engagement=engagement, params=params)
    drift = Drift(noise_px=reader.noise_px, slope=reader.slope + rng.normal(0, 0.003) * drift_scale,
                  shift=reader.shift, offset_px=reader.offset_px
                  + rng.normal(0, 0.03) * layout.line_height_px * drift_scale)
    y = measured_y(rng, path, layout.line_y_px, text_left_px=box[0], text_top_px=box[1], drift=drift)
    x = np.round(path.x_px + rng.normal(0, 3.0, len(y)))
    y = np.round(y)
    amp_deg = np.hypot(np.diff(x), np.diff(y)) / PX_PER_DEG
    saccade_ms = np.round(20 + 2.5 * amp_deg)
    start = np.round(rng.uniform(50, 300)) + np.concatenate([[0.0], np.cumsum(path.duration_ms[:-1] + saccade_ms)])
    processing = span_processing(path, span)
    p_correct = 1 / (1 + np.exp(-(BASE_CORRECT_LOGIT + reader.comprehension_logit
                                  + comprehension_effect * processing)))
    if found is not None:
        p_correct = P_CORRECT_FOUND if found else P_CORRECT_MISLED
    correct = bool(rng.random() < p_correct)
    d0, d1 = par.distractor_spans[q]
    row = dict(reading_goal=goal, question=par.questions[q], is_correct=correct,
               selected_answer="A" if correct else str(rng.choice(["B", "C", "D"])),
               repeated_reading=False, practice=False, onestopqa_question_id=q,
               critical_span_start_index=[span[0]], critical_span_end_index=[span[1]],
               distractor_span_start_index=[d0], distractor_span_end_index=[d1],
               latent_span_processing=processing, latent_p_correct=float(p_correct))
    if found is not None:
        row["latent_found_span"] = found
    fix = dict(fixation_index=np.arange(len(x)), start_ms=start, duration_ms=path.duration_ms, x_px=x, y_px=y,
               true_line_index=path.true_line, true_word_index=path.true_word)
    return row, fix


def _trials_frame(rows) -> pl.DataFrame:
    int_cols = ("onestopqa_question_id", "article_batch", "article_id", "paragraph_id", "trial_index")
    span_cols = ("critical_span_start_index", "critical_span_end_index", "distractor_span_start_index",
                 "distractor_span_end_index")
    frame = pl.DataFrame(rows)
    first = ["trial_id", "participant_id", "item_id", "text_id", "reading_goal", "question", "selected_answer",
             "is_correct", "repeated_reading", "practice"]
    return frame.select(first + [c for c in frame.columns if c not in first]).with_columns(
        [pl.col(c).cast(pl.Int32) for c in int_cols] + [pl.col(c).cast(pl.List(pl.Int32)) for c in span_cols])


def _words_frame(paragraphs, layouts) -> pl.DataFrame:
    parts = []
    for text_id, par in paragraphs.items():
        idx = np.arange(par.n_words)
        parts.append(layouts[text_id].words.with_columns(
            pl.lit(text_id).alias("text_id"),
            pl.Series("word_length", [len(s) for s in par.words], dtype=pl.Int32),
            pl.Series("frequency_zipf", par.zipf), pl.Series("surprisal_bits", par.surprisal_bits),
            *[pl.Series(f"in_critical_span_q{q}", (idx >= s0) & (idx < s1))
              for q, (s0, s1) in enumerate(par.critical_spans)]))
    words = pl.concat(parts)
    return words.select(["text_id"] + [c for c in words.columns if c != "text_id"])


def _fixations_frame(parts) -> pl.DataFrame:
    cols = {c: np.concatenate([p[c] for p in parts]) for c in parts[0]}
    return pl.DataFrame({
        "trial_id": cols["trial_id"],
        "fixation_index": cols["fixation_index"].astype(np.int32),
        "start_ms": cols["start_ms"].astype(np.float64),
        "duration_ms": cols["duration_ms"].astype(np.float64),
        "x_px": cols["x_px"], "y_px": cols["y_px"],
    }).with_columns(
        pl.lit(None, dtype=pl.Int32).alias("line_index"), pl.lit(None, dtype=pl.Int32).alias("word_index"),
        pl.Series("true_line_index", cols["true_line_index"]).cast(pl.Int32).replace(-1, None),
        pl.Series("true_word_index", cols["true_word_index"]).cast(pl.Int32).replace(-1, None))
