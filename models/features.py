"""Model inputs from a dataset folder: word-level, fixation-level and trial-level feature matrices (Polars).

Every feature is computed from one trial's own rows (never filled from another trial: the lab code's
``ffill().bfill()`` over the concatenated split copied values between trials, REFERENCE.md §7.6). A missing value
(a never-fixated word's first fixation duration, the saccade after the last fixation, a frequency the corpus lacks,
a column the dataset does not have) stays NaN here; :class:`RobustScaler` turns it into 0 plus a 1 in the feature's
``*_missing`` indicator column. Off-text fixations keep their row (``word_index`` null → :data:`models.batch.OFF_TEXT`)
and get NaN word features, so no later fixation is shifted (the lab's drop-then-index bug, §7.2).
"""

from __future__ import annotations

import warnings

import numpy as np
import polars as pl

from readgaze.errors import DataError

WORD_MEASURES = ("first_fixation_duration_ms", "gaze_duration_ms", "total_fixation_duration_ms",
                 "regression_path_duration_ms", "fixation_count", "skipped", "regression_in", "regression_out")
WORD_LEXICAL = ("word_length", "frequency_zipf", "surprisal_bits", "relative_word_position", "start_of_line",
                "end_of_line")
FIXATION_OWN = ("duration_ms", "x_px", "y_px", "pupil", "time_since_trial_start_ms", "relative_fixation_position",
                "next_saccade_dx_px", "next_saccade_dy_px", "next_saccade_amplitude_px", "previous_saccade_dx_px",
                "previous_saccade_dy_px", "next_word_step", "is_off_text")
TRIAL_FEATURES = ("fixation_count", "word_count", "reading_speed_wpm", "mean_fixation_duration_ms", "skip_rate",
                  "regression_rate", "mean_first_fixation_duration_ms", "mean_gaze_duration_ms",
                  "mean_total_fixation_duration_ms", "mean_saccade_amplitude_px")

NULLABLE = frozenset({"first_fixation_duration_ms", "gaze_duration_ms", "regression_path_duration_ms",
                      "frequency_zipf", "surprisal_bits", "pupil", "next_saccade_dx_px", "next_saccade_dy_px",
                      "next_saccade_amplitude_px", "previous_saccade_dx_px", "previous_saccade_dy_px",
                      "next_word_step", "mean_first_fixation_duration_ms", "mean_gaze_duration_ms",
                      "mean_saccade_amplitude_px"})
"""Features that may be missing by definition; each gets a ``<name>_missing`` indicator column."""
CONTENT_POS = ("NOUN", "PROPN", "VERB", "ADJ", "ADV")
"""Universal Dependencies tags counted as content words."""
BINARY = frozenset({"skipped", "regression_in", "regression_out", "start_of_line", "end_of_line", "is_off_text"})
"""0/1 features, left unscaled."""


def with_indicators(names: tuple[str, ...]) -> tuple[str, ...]:
    """Feature names followed by the ``*_missing`` indicators of the nullable ones."""
    return (*names, *(f"{n}_missing" for n in names if n in NULLABLE))


WORD_FEATURES = with_indicators(WORD_MEASURES + WORD_LEXICAL)
FIXATION_FEATURES = with_indicators(FIXATION_OWN) + WORD_FEATURES
"""A fixation's vector: its own features (+ indicators), then its word's ``WORD_FEATURES`` (NaN off text)."""
TRIAL_FEATURE_NAMES = with_indicators(TRIAL_FEATURES)


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
    category = (pl.when(pl.col("word_length") <= 1).then(1).when(pl.col("word_length") <= 4).then(2)
                .when(pl.col("word_length") <= 10).then(3).otherwise(4))
    return per_word.select("text_id", "word_index", "word", *_float_columns(per_word, WORD_LEXICAL),
                           category.cast(pl.Int64).alias("word_category"),
                           (is_content.cast(pl.Int64) + 1).alias("word_is_content"))


def trial_word_table(trials: pl.LazyFrame, words: pl.LazyFrame, word_measures: pl.LazyFrame) -> pl.LazyFrame:
    """Every (trial, word of its text) with the trial's measures for that word and the word's lexical features.

    ``trials`` needs ``trial_id``, ``text_id`` and ``trial_row`` (0-based position in the datamodule's trial
    table). A word without a ``word_measures`` row gets NaN measures (not zeros: "not measured" is not 0 ms).
    """
    measures = word_measures.select("trial_id", "word_index", *_float_columns(word_measures, WORD_MEASURES))
    return (trials.select("trial_row", "trial_id", "text_id")
            .join(words, on="text_id", how="inner")
            .join(measures, on=["trial_id", "word_index"], how="left")
            .with_columns(pl.col(WORD_MEASURES).fill_null(np.nan))
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
               pl.col("word_index").is_null().cast(pl.Float64).alias("is_off_text"),
               *([] if "pupil" in have else [pl.lit(None, pl.Float64).alias("pupil")])))
    word = trial_words.select("trial_row", "word_index", *WORD_MEASURES, *WORD_LEXICAL, "word_category",
                              "word_is_content")
    return (fix.select("trial_row", "fixation_index", "word_index", *_float_columns(fix, FIXATION_OWN))
            .join(word, on=["trial_row", "word_index"], how="left", maintain_order="left")
            .with_columns(pl.col("word_category").is_not_null().alias("on_known_word"))
            .with_columns(pl.col(*WORD_MEASURES, *WORD_LEXICAL).fill_null(np.nan),
                          pl.col("word_category", "word_is_content").fill_null(0)))


def trial_feature_table(trials: pl.LazyFrame, fixations: pl.LazyFrame, trial_words: pl.LazyFrame) -> pl.LazyFrame:
    """One row per trial (by ``trial_row``) of :data:`TRIAL_FEATURES`, each from that trial's rows only.

    Reading speed = words / (last fixation end − first fixation start) in words per minute; regression rate =
    share of fixations followed by one on an earlier word.
    """
    fix = fixations.group_by("trial_row").agg(
        pl.len().cast(pl.Float64).alias("fixation_count"),
        pl.col("duration_ms").mean().alias("mean_fixation_duration_ms"),
        (pl.col("next_word_step") < 0).mean().alias("regression_rate"),
        pl.col("next_saccade_amplitude_px").filter(pl.col("next_saccade_amplitude_px").is_not_nan()).mean()
        .alias("mean_saccade_amplitude_px"),
        (pl.col("time_since_trial_start_ms").max() + pl.col("duration_ms").last()).alias("reading_time_ms"))
    nan_mean = [pl.col(c).filter(pl.col(c).is_not_nan()).mean().alias(f"mean_{c}")
                for c in ("first_fixation_duration_ms", "gaze_duration_ms", "total_fixation_duration_ms")]
    words = trial_words.group_by("trial_row").agg(
        pl.len().cast(pl.Float64).alias("word_count"),
        pl.col("skipped").filter(pl.col("skipped").is_not_nan()).mean().alias("skip_rate"), *nan_mean)
    table = (trials.select("trial_row").join(fix, on="trial_row", how="left").join(words, on="trial_row", how="left")
             .with_columns((pl.col("word_count") / pl.col("reading_time_ms") * 60000.0).alias("reading_speed_wpm")))
    return table.sort("trial_row").select("trial_row", *_float_columns(table, TRIAL_FEATURES))


class RobustScaler:
    """Median/IQR scaling fit on training rows only, NaN → 0 with a missing-value indicator column.

    ``fit`` ignores NaN; a feature with IQR 0 (or all NaN) is only centred. Binary features are left as they are.
    Follows sklearn's ``RobustScaler`` (quantile range 25–75) as EyeBench uses it (REFERENCE.md §3.4).
    """

    def __init__(self, names: tuple[str, ...]) -> None:
        self.names = names
        self.center: np.ndarray | None = None
        self.scale: np.ndarray | None = None

    def fit(self, values: np.ndarray) -> "RobustScaler":
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

    def transform(self, values: np.ndarray) -> np.ndarray:
        """Scaled values (float32) with NaN → 0, followed by the indicator columns of the nullable features."""
        if self.center is None:
            raise RuntimeError("RobustScaler.transform before fit")
        scaled = (values - self.center) / self.scale
        missing = np.isnan(values[:, [i for i, n in enumerate(self.names) if n in NULLABLE]])
        return np.concatenate([np.nan_to_num(scaled, nan=0.0), missing], axis=1).astype(np.float32)
