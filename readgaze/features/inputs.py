"""Model inputs from a dataset folder: word-level, fixation-level and trial-level feature matrices (Polars).

Every feature is computed from one trial's own rows (never filled from another trial: the lab code's
``ffill().bfill()`` over the concatenated split copied values between trials, EyeBench ``prepare_data``). A missing
value (a never-fixated word's first fixation duration, the saccade after the last fixation, a frequency the corpus
lacks, a column the dataset does not have) stays NaN here; :class:`RobustScaler` turns it into 0 plus a 1 in the
feature's ``*_missing`` indicator column. Off-text fixations keep their row (``word_index`` null →
:data:`readgaze.models.data.batch.OFF_TEXT`) and get NaN word features, so no later fixation is shifted (EyeBench's
``get_text_features`` dropped off-word fixations before indexing the word positions, shifting every later one).

The published feature sets (the 24 word-level eye and 10 linguistic features and the 16 fixation features of
EyeBench and Shubi et al. 2024) and the readgaze column standing for each, or its absence, are one table:
:data:`PUBLISHED_FEATURES`; :func:`feature_set` gives a set's readgaze columns. Counts: :data:`WORD_FEATURES` 30,
:data:`FIXATION_FEATURES` 54, :data:`TRIAL_FEATURE_NAMES` 14.
"""

from __future__ import annotations

import warnings

import numpy as np
import polars as pl

from readgaze.errors import DataError
from readgaze.features.sets import REDUCED_POS, word_classes
from readgaze.features.trial import (
    TRIAL_FEATURES,
    reading_speed_wpm,
    trial_fixation_aggregates,
    trial_word_aggregates,
)

WORD_MEASURES = ("first_fixation_duration_ms", "gaze_duration_ms", "total_fixation_duration_ms",
                 "regression_path_duration_ms", "fixation_count", "skipped", "regression_in", "regression_out",
                 "run_count", "regression_in_count", "regression_out_count", "selective_regression_path_duration_ms",
                 "first_fixation_progressive", "dwell_time_share", "fixation_count_share")
WORD_LEXICAL = ("word_length", "frequency_zipf", "surprisal_bits", "relative_word_position", "start_of_line",
                "end_of_line", "left_px", "top_px")
FIXATION_OWN = ("duration_ms", "x_px", "y_px", "pupil", "time_since_trial_start_ms", "relative_fixation_position",
                "next_saccade_dx_px", "next_saccade_dy_px", "next_saccade_amplitude_px", "previous_saccade_dx_px",
                "previous_saccade_dy_px", "next_word_step", "is_off_text", "next_saccade_duration_ms",
                "previous_saccade_duration_ms")

NULLABLE = frozenset({"first_fixation_duration_ms", "gaze_duration_ms", "regression_path_duration_ms",
                      "frequency_zipf", "surprisal_bits", "pupil", "next_saccade_dx_px", "next_saccade_dy_px",
                      "next_saccade_amplitude_px", "previous_saccade_dx_px", "previous_saccade_dy_px",
                      "next_word_step", "mean_first_fixation_duration_ms", "mean_gaze_duration_ms",
                      "mean_saccade_amplitude_px", "selective_regression_path_duration_ms",
                      "first_fixation_progressive", "next_saccade_duration_ms", "previous_saccade_duration_ms",
                      "fixation_regression_rate"})
"""Features that may be missing by definition; each gets a ``<name>_missing`` indicator column."""
SHARES = {"dwell_time_share": "total_fixation_duration_ms", "fixation_count_share": "fixation_count"}
"""Word measures derived in :func:`trial_word_table`: the word's share of the trial's total (Data Viewer
``IA_DWELL_TIME_%``, ``IA_FIXATION_%``)."""
CONTENT_POS = ("NOUN", "PROPN", "VERB", "ADJ", "ADV")
"""Universal Dependencies tags counted as content words."""
BINARY = frozenset({"skipped", "regression_in", "regression_out", "start_of_line", "end_of_line", "is_off_text",
                    "first_fixation_progressive"})
"""0/1 features, left unscaled."""


def with_indicators(names: tuple[str, ...]) -> tuple[str, ...]:
    """Feature names followed by the ``*_missing`` indicators of the nullable ones."""
    return (*names, *(f"{n}_missing" for n in names if n in NULLABLE))


WORD_FEATURES = with_indicators(WORD_MEASURES + WORD_LEXICAL)
FIXATION_FEATURES = with_indicators(FIXATION_OWN) + WORD_FEATURES
"""A fixation's vector: its own features (+ indicators), then its word's ``WORD_FEATURES`` (NaN off text)."""
TRIAL_FEATURE_NAMES = with_indicators(TRIAL_FEATURES)

# ---- the published feature sets and what readgaze feeds instead: ONE table ----
# (set, published column, readgaze column or None when readgaze lacks it, how readgaze differs)
# Sets: "word_eye" (the 24 word-level eye features of EyeBench / Shubi et al. 2024), "word_lexical" (their 10
# linguistic features), "fixation" (their 16 fixation features; the goal-decoding code used 14, without the two
# *_INTEREST_AREA_INDEX columns). A fixation's published vector is fixation + word_eye + word_lexical (49 / 47).
PUBLISHED_FEATURES: tuple[tuple[str, str, str | None, str], ...] = (
    ("word_eye", "IA_DWELL_TIME", "total_fixation_duration_ms", ""),
    ("word_eye", "IA_DWELL_TIME_%", "dwell_time_share", ""),
    ("word_eye", "IA_FIXATION_%", "fixation_count_share", ""),
    ("word_eye", "IA_FIXATION_COUNT", "fixation_count", ""),
    ("word_eye", "IA_REGRESSION_IN_COUNT", "regression_in_count", ""),
    ("word_eye", "IA_REGRESSION_OUT_FULL_COUNT", "regression_out_count", "one regression-out count for both"),
    ("word_eye", "IA_RUN_COUNT", "run_count", ""),
    ("word_eye", "IA_FIRST_FIXATION_DURATION", "first_fixation_duration_ms", "missing (flagged) when unfixated"),
    ("word_eye", "IA_FIRST_FIXATION_VISITED_IA_COUNT", None, "not computed"),
    ("word_eye", "IA_FIRST_RUN_DWELL_TIME", "gaze_duration_ms", "missing (flagged) when unfixated"),
    ("word_eye", "IA_FIRST_RUN_FIXATION_COUNT", None, "not computed"),
    ("word_eye", "IA_SKIP", "skipped", ""),
    ("word_eye", "IA_REGRESSION_PATH_DURATION", "regression_path_duration_ms", ""),
    ("word_eye", "IA_REGRESSION_OUT_COUNT", "regression_out", "as a 0/1 flag"),
    ("word_eye", "IA_SELECTIVE_REGRESSION_PATH_DURATION", "selective_regression_path_duration_ms", ""),
    ("word_eye", "IA_LAST_FIXATION_DURATION", None, "not computed"),
    ("word_eye", "IA_LAST_RUN_DWELL_TIME", None, "not computed"),
    ("word_eye", "IA_LAST_RUN_FIXATION_COUNT", None, "not computed"),
    ("word_eye", "IA_TOP", "top_px", ""),
    ("word_eye", "IA_LEFT", "left_px", ""),
    ("word_eye", "IA_FIRST_FIX_PROGRESSIVE", "first_fixation_progressive", ""),
    ("word_eye", "normalized_ID", "relative_word_position", ""),
    ("word_eye", "PARAGRAPH_RT", None, "a trial-level number; in TRIAL_FEATURES as reading_speed_wpm"),
    ("word_eye", "total_skip", None, "= fixation_count == 0, which the vector already holds"),
    ("word_lexical", "gpt2_surprisal", "surprisal_bits", "only when prep ran a language model; else flagged"),
    ("word_lexical", "wordfreq_frequency", "frequency_zipf", ""),
    ("word_lexical", "word_length", "word_length", ""),
    ("word_lexical", "start_of_line", "start_of_line", ""),
    ("word_lexical", "end_of_line", "end_of_line", ""),
    ("word_lexical", "is_content_word", None, "an embedding input of BEyeLSTM, not in the numeric vector"),
    ("word_lexical", "ptb_pos", None, "categorical, dropped from the numeric vector as in EyeBench"),
    ("word_lexical", "left_dependents_count", None, "no dependency parse in the canonical words table"),
    ("word_lexical", "right_dependents_count", None, "no dependency parse in the canonical words table"),
    ("word_lexical", "distance_to_head", None, "no dependency parse in the canonical words table"),
    ("fixation", "CURRENT_FIX_INDEX", "relative_fixation_position", "index / (n - 1), not the raw index"),
    ("fixation", "CURRENT_FIX_DURATION", "duration_ms", ""),
    ("fixation", "CURRENT_FIX_PUPIL", "pupil", "missing (flagged) when the recording has none"),
    ("fixation", "CURRENT_FIX_X", "x_px", ""),
    ("fixation", "CURRENT_FIX_Y", "y_px", ""),
    ("fixation", "NEXT_FIX_ANGLE", None, "the next saccade's dx, dy are given instead"),
    ("fixation", "CURRENT_FIX_INTEREST_AREA_INDEX", None, "the word index enters as relative_word_position"),
    ("fixation", "NEXT_FIX_INTEREST_AREA_INDEX", "next_word_step", "as the step to the next word"),
    ("fixation", "PREVIOUS_FIX_ANGLE", None, "the previous saccade's dx, dy are given instead"),
    ("fixation", "NEXT_FIX_DISTANCE", "next_saccade_amplitude_px", "centre-to-centre, px"),
    ("fixation", "PREVIOUS_FIX_DISTANCE", None, "previous_saccade_dx_px, previous_saccade_dy_px instead"),
    ("fixation", "NEXT_SAC_AMPLITUDE", "next_saccade_amplitude_px", "px, not degrees"),
    ("fixation", "NEXT_SAC_ANGLE", None, "next_saccade_dx_px, next_saccade_dy_px instead"),
    ("fixation", "NEXT_SAC_AVG_VELOCITY", None, "no saccade samples in the fixations table"),
    ("fixation", "NEXT_SAC_DURATION", "next_saccade_duration_ms", "the gap to the next fixation's start"),
    ("fixation", "NEXT_SAC_PEAK_VELOCITY", None, "no saccade samples in the fixations table"),
)
"""Every published feature, the readgaze column that stands for it (None: readgaze lacks it) and how it differs.
readgaze also feeds what the published sets lack: ``time_since_trial_start_ms``, ``is_off_text``,
``previous_saccade_duration_ms``, ``regression_in`` and every ``*_missing`` indicator."""


def feature_set(name: str) -> tuple[str, ...]:
    """The readgaze columns standing for published set ``name`` ("word_eye", "word_lexical", "fixation"), in the
    published order, each once (None entries skipped).

    Raises ``KeyError`` for an unknown set name."""
    if name not in {row[0] for row in PUBLISHED_FEATURES}:
        raise KeyError(f"unknown feature set {name!r}; known: word_eye, word_lexical, fixation")
    return tuple(dict.fromkeys(r[2] for r in PUBLISHED_FEATURES if r[0] == name and r[2] is not None))


def _float_columns(frame: pl.LazyFrame, names: tuple[str, ...]) -> list[pl.Expr]:
    """Each name as Float64; a column the frame lacks becomes all-NaN (then all 'missing')."""
    have = set(frame.collect_schema().names())
    return [(pl.col(n).cast(pl.Float64) if n in have else pl.lit(None, pl.Float64)).fill_null(np.nan).alias(n)
            for n in names]


def word_table(words: pl.LazyFrame) -> pl.LazyFrame:
    """One row per (text_id, word_index): the word string and its lexical features.

    A word split over two interest areas (a hyphenated line break) is one word: its labels are joined in
    ``ia_index`` order and it lies on its first part's line.
    """
    have = set(words.collect_schema().names())
    length = pl.col("word").str.len_chars() if "word_length" not in have else pl.col("word_length")
    per_word = (words.sort("text_id", "ia_index")
                .group_by("text_id", "word_index", maintain_order=True)
                .agg(pl.col("word").str.join(""), pl.col("line_index").first(),
                     *[pl.col(c).first() for c in ("left_px", "top_px") if c in have],
                     *[pl.col(c).first() for c in ("frequency_zipf", "surprisal_bits") if c in have],
                     *[pl.col(c).max().alias("is_content_word") for c in ("is_content_word",) if c in have],
                     *[pl.col(c).first() for c in ("universal_pos",) if c in have],
                     length.sum().alias("word_length"))
                .sort("text_id", "word_index"))
    line = pl.col("line_index")
    n_words = pl.len().over("text_id")
    per_word = per_word.with_columns(
        (pl.col("word_index") / (n_words - 1).clip(lower_bound=1)).alias("relative_word_position"),
        (line != line.shift(1).over("text_id")).fill_null(True).cast(pl.Float64).alias("start_of_line"),
        (line != line.shift(-1).over("text_id")).fill_null(True).cast(pl.Float64).alias("end_of_line"))
    if "is_content_word" in have:
        is_content = pl.col("is_content_word").cast(pl.Boolean)
    elif "universal_pos" in have:  # content words as in EyeBench's is_content_word: open-class UD tags
        is_content = pl.col("universal_pos").is_in(list(CONTENT_POS)).fill_null(False)
    else:  # no part of speech in the corpus: long words stand in for content words
        is_content = pl.col("word_length") > 3
    # word class: the reduced part of speech (1 FUNC, 2 NOUN, 3 VERB, 4 ADJ, 5 UNKNOWN), see word_classes
    codes = {c.lower(): i + 1 for i, c in enumerate(REDUCED_POS)}
    per_word = per_word.join(word_classes(words).select("text_id", "word_index", "reduced_pos"),
                             on=["text_id", "word_index"], how="left", maintain_order="left")
    category = pl.col("reduced_pos").replace_strict(codes, default=len(REDUCED_POS), return_dtype=pl.Int64)
    return per_word.select("text_id", "word_index", "word", *_float_columns(per_word, WORD_LEXICAL),
                           category.cast(pl.Int64).alias("word_category"),
                           (is_content.cast(pl.Int64) + 1).alias("word_is_content"))


def trial_word_table(trials: pl.LazyFrame, words: pl.LazyFrame, word_measures: pl.LazyFrame) -> pl.LazyFrame:
    """Every (trial, word of its text) with the trial's measures for that word and the word's lexical features.

    ``trials`` needs ``trial_id``, ``text_id`` and ``trial_row`` (0-based position in the datamodule's trial
    table). A word without a ``word_measures`` row gets NaN measures (not zeros: "not measured" is not 0 ms).
    """
    measured = tuple(m for m in WORD_MEASURES if m not in SHARES)
    measures = word_measures.select("trial_id", "word_index", *_float_columns(word_measures, measured))
    shares = [(pl.col(of).fill_nan(0.0) / pl.col(of).fill_nan(0.0).sum().over("trial_row")).alias(name)
              for name, of in SHARES.items()]
    return (trials.select("trial_row", "trial_id", "text_id")
            .join(words, on="text_id", how="inner")
            .join(measures, on=["trial_id", "word_index"], how="left")
            .with_columns(pl.col(measured).fill_null(np.nan))
            .with_columns(shares).with_columns(pl.col(list(SHARES)).fill_null(np.nan))
            .sort("trial_row", "word_index"))


def fixation_table(trials: pl.LazyFrame, fixations: pl.LazyFrame, trial_words: pl.LazyFrame) -> pl.LazyFrame:
    """Every fixation of the kept trials, in order, with its own features and its word's features.

    Saccade features are differences to the next and previous fixation *of the same trial* (``over``), so the
    first and last fixations get NaN (missing), never a neighbour trial's value. ``next_word_step`` is the next
    fixation's word index minus this one's (negative = regression); NaN when either is off text.
    ``on_known_word`` is False for an off-text fixation and for a word index the text does not have.
    """
    have = set(fixations.collect_schema().names())
    x, y, t = pl.col("x_px"), pl.col("y_px"), pl.col("trial_row")
    fix = (trials.select("trial_row", "trial_id").join(fixations, on="trial_id", how="inner")
           .sort("trial_row", "fixation_index")
           .with_columns(
               (pl.col("start_ms") - pl.col("start_ms").first().over(t)).alias("time_since_trial_start_ms"),
               (pl.int_range(pl.len()).over(t) / (pl.len().over(t) - 1).clip(lower_bound=1))
               .alias("relative_fixation_position"),
               (x.shift(-1).over(t) - x).alias("next_saccade_dx_px"),
               (y.shift(-1).over(t) - y).alias("next_saccade_dy_px"),
               ((x.shift(-1).over(t) - x) ** 2 + (y.shift(-1).over(t) - y) ** 2).sqrt()
               .alias("next_saccade_amplitude_px"),
               (x - x.shift(1).over(t)).alias("previous_saccade_dx_px"),
               (y - y.shift(1).over(t)).alias("previous_saccade_dy_px"),
               (pl.col("word_index").shift(-1).over(t) - pl.col("word_index")).alias("next_word_step"),
               (pl.col("start_ms").shift(-1).over(t) - pl.col("start_ms") - pl.col("duration_ms"))
               .alias("next_saccade_duration_ms"),
               (pl.col("start_ms") - (pl.col("start_ms") + pl.col("duration_ms")).shift(1).over(t))
               .alias("previous_saccade_duration_ms"),
               pl.col("word_index").is_null().cast(pl.Float64).alias("is_off_text"),
               *([] if "pupil" in have else [pl.lit(None, pl.Float64).alias("pupil")])))
    word = trial_words.select("trial_row", "word_index", *WORD_MEASURES, *WORD_LEXICAL, "word_category",
                              "word_is_content")
    return (fix.select("trial_row", "fixation_index", "word_index", pl.col("start_ms").cast(pl.Float64),
                       *_float_columns(fix, FIXATION_OWN))
            .join(word, on=["trial_row", "word_index"], how="left", maintain_order="left")
            .with_columns(pl.col("word_category").is_not_null().alias("on_known_word"))
            .with_columns(pl.col(*WORD_MEASURES, *WORD_LEXICAL).fill_null(np.nan),
                          pl.col("word_category", "word_is_content").fill_null(0)))


def trial_feature_table(trials: pl.LazyFrame, fixations: pl.LazyFrame, trial_words: pl.LazyFrame) -> pl.LazyFrame:
    """One row per trial (by ``trial_row``) of :data:`TRIAL_FEATURES`, each from that trial's rows only.

    Each feature is the one definition of :mod:`readgaze.features.trial` (:func:`~readgaze.features.trial.
    trial_fixation_aggregates`, :func:`~readgaze.features.trial.trial_word_aggregates`,
    :func:`~readgaze.features.trial.reading_speed_wpm`), the same expressions the baselines' feature sets use:
    reading speed = words / (last fixation end − first fixation start) in words per minute;
    ``fixation_regression_rate`` = share of fixations followed by one on an earlier word, among those with a known
    next word (not prep's ``regression_rate``, a share of saccades).
    """
    fix = fixations.group_by("trial_row").agg(*trial_fixation_aggregates("next_word_step",
                                                                         "next_saccade_amplitude_px"))
    words = trial_words.group_by("trial_row").agg(*trial_word_aggregates())
    table = (trials.select("trial_row").join(fix, on="trial_row", how="left").join(words, on="trial_row", how="left")
             .with_columns(reading_speed_wpm(pl.col("word_count"), pl.col("_end_ms") - pl.col("_start_ms"))))
    return table.sort("trial_row").select("trial_row", *_float_columns(table, TRIAL_FEATURES))


class RobustScaler:
    """Median/IQR scaling fit on training rows only, NaN → 0 with a missing-value indicator column.

    ``fit`` ignores NaN; a feature with IQR 0 (or all NaN) is only centred. Binary features are left as they are.
    Follows sklearn's ``RobustScaler`` (quantile range 25–75) as EyeBench uses it (Shubi et al., 2025).
    """

    def __init__(self, names: tuple[str, ...]) -> None:
        self.names = names
        self.center: np.ndarray | None = None
        self.scale: np.ndarray | None = None

    def fit(self, values: np.ndarray) -> RobustScaler:
        """``values`` (n_rows, n_features) float, training rows only."""
        if len(values) == 0:
            raise DataError(f"no training rows to fit the scaler of {self.names[0]}, ... ({len(self.names)} features)")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # an all-NaN column: median NaN, handled below
            q25, median, q75 = np.nanpercentile(values, [25, 50, 75], axis=0)
        binary = np.array([n in BINARY for n in self.names])
        iqr = q75 - q25
        self.center = np.where(binary | np.isnan(median), 0.0, median)
        self.scale = np.where(binary | ~(iqr > 0), 1.0, iqr)
        return self

    def to_dict(self) -> dict:
        """``{"names", "center", "scale"}`` as JSON-ready lists (a model bundle stores its fitted scalers so)."""
        if self.center is None:
            raise RuntimeError("RobustScaler.to_dict before fit")
        return {"names": list(self.names), "center": self.center.tolist(), "scale": self.scale.tolist()}

    @classmethod
    def from_dict(cls, saved: dict) -> RobustScaler:
        """The scaler :meth:`to_dict` wrote, fitted as it was."""
        scaler = cls(tuple(saved["names"]))
        scaler.center = np.asarray(saved["center"], dtype=np.float64)
        scaler.scale = np.asarray(saved["scale"], dtype=np.float64)
        return scaler

    def transform(self, values: np.ndarray) -> np.ndarray:
        """Scaled values (float32) with NaN → 0, followed by the indicator columns of the nullable features."""
        if self.center is None:
            raise RuntimeError("RobustScaler.transform before fit")
        scaled = (values - self.center) / self.scale
        missing = np.isnan(values[:, [i for i, n in enumerate(self.names) if n in NULLABLE]])
        return np.concatenate([np.nan_to_num(scaled, nan=0.0), missing], axis=1).astype(np.float32)
