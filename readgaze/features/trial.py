"""Trial-level reading features: speed, skipping, regressions, saccades and gaze entropies.

All features are computed from the aligned fixations and the word measures, one row per trial. A feature that
several sets share (the models' :data:`TRIAL_FEATURES`, the baselines' sets, what prep writes) is computed by the
one expression here: :func:`trial_fixation_aggregates`, :func:`trial_word_aggregates` and
:func:`reading_speed_wpm`, with one rule for missing values (:func:`nan_mean`: null and NaN are left out; nothing
left: null). Definitions (each in plain words):

* ``reading_speed_wpm``: words of the text / reading time in minutes, where the reading time runs
  from the first fixation's start to the last fixation's end (``start_ms + duration_ms``).
* ``mean_first_fixation_duration_ms``: mean first-fixation duration over the fixated words.
* ``skip_rate``: share of the text's words skipped in first pass (never-fixated words count as
  skipped, as ``IA_SKIP`` does).
* ``regression_rate``: share of word-to-word saccades (consecutive in-word fixations on different
  words; off-text fixations left out, refixations of the same word not counted) that land on an earlier word:
  the share of regressive saccades of the reading literature (about 10-15 % of saccades in skilled reading;
  Rayner 1998, *Eye movements in reading and information processing: 20 years of research*, Psychological
  Bulletin 124(3):372-422, doi:10.1037/0033-2909.124.3.372). Written to ``trials.parquet`` by prep.
* ``mean_forward_saccade_amplitude_px``: mean Euclidean distance between consecutive fixations
  (off-text ones included) whose ``x`` increases.
* ``fixation_count``: all fixations of the trial, off-text ones included (``TRIAL_FIXATION_COUNT``).
* ``stationary_entropy_bits`` and ``gaze_transition_entropy_bits``: Krejtz et al. (2015), *ACM
  Transactions on Applied Perception* 13(1):4, doi:10.1145/2834121, with words as areas of
  interest: ``H_s = -sum_i p_i log2 p_i`` over the share of in-word fixations on word ``i``, and
  ``H_t = -sum_i p_i sum_j p_ij log2 p_ij`` over transitions between consecutive in-word
  fixations (refixations included), ``p_i`` the share of transitions leaving ``i``.

* ``word_count``: words of the text (rows of the trial's word measures); ``mean_fixation_duration_ms``: mean over
  all fixations; ``mean_gaze_duration_ms``, ``mean_total_fixation_duration_ms``: means over the text's words
  (never-fixated words: gaze duration missing, total 0 ms); ``mean_saccade_amplitude_px``: mean Euclidean distance
  to the next fixation of the trial, every direction.

A second, different quantity has its own name, :func:`fixation_regression_rate`: the share of *fixations* (not
saccades) followed by a fixation on an earlier word, the "regression rate" feature of Mézière et al. (2023) as
EyeBench's logistic-regression baseline computes it. Refixations count in its denominator, so it is lower than
``regression_rate`` on the same trial (OneStop sample, mean over 24 trials: 0.218 against 0.242). The classical
baselines (:mod:`readgaze.features`) and the models' trial features (``readgaze.features``) take it
from this one expression.
"""

from __future__ import annotations

import numpy as np
import polars as pl

SUMMARY_FEATURES = ("reading_speed_wpm", "mean_first_fixation_duration_ms", "skip_rate", "regression_rate",
                    "mean_forward_saccade_amplitude_px", "fixation_count", "gaze_transition_entropy_bits",
                    "stationary_entropy_bits")
"""What :func:`compute_trial_features` returns and ``readgaze prep`` writes into ``trials.parquet`` (the feature
set ``trial_summary``)."""
TRIAL_FEATURES = ("fixation_count", "word_count", "reading_speed_wpm", "mean_fixation_duration_ms", "skip_rate",
                  "fixation_regression_rate", "mean_first_fixation_duration_ms", "mean_gaze_duration_ms",
                  "mean_total_fixation_duration_ms", "mean_saccade_amplitude_px")
"""readgaze's trial features (the feature set ``readgaze``): what the neural models' trial vector holds and what
the kNN and gradient-boosting baselines are fit on."""


def nan_mean(column: str | pl.Expr) -> pl.Expr:
    """Mean with the one missing-value rule of the features: null and NaN left out; nothing left: null.

    Written as a filter, not ``fill_nan(None).mean()``: polars may add up a plain mean in parts per thread, in an
    order that changes from run to run (the last bits of the mean with it); a filtered mean is added up over the
    whole group, in row order, the same on every run."""
    c = (pl.col(column) if isinstance(column, str) else column).cast(pl.Float64)
    return c.filter(c.is_not_nan()).mean()


def reading_speed_wpm(words: pl.Expr, time_ms: pl.Expr) -> pl.Expr:
    """Words per minute: ``words / (time_ms / 60 000)``, named ``reading_speed_wpm``."""
    return (words / (time_ms / 60_000)).alias("reading_speed_wpm")


def trial_fixation_aggregates(step: str = "next_word_step", amplitude: str = "next_saccade_amplitude_px"
                              ) -> list[pl.Expr]:
    """The per-trial aggregations over a trial's fixations (use in ``group_by(...).agg``), each the one definition of
    its feature: ``fixation_count`` (Float64), ``mean_fixation_duration_ms``, ``fixation_regression_rate``,
    ``mean_saccade_amplitude_px`` and the reading span's ``_start_ms`` / ``_end_ms`` (first fixation start, last
    fixation end). Needs ``start_ms``, ``duration_ms`` and the ``step`` and ``amplitude`` columns."""
    return [pl.len().cast(pl.Float64).alias("fixation_count"),
            nan_mean("duration_ms").alias("mean_fixation_duration_ms"),
            fixation_regression_rate(step),
            nan_mean(amplitude).alias("mean_saccade_amplitude_px"),
            pl.col("start_ms").min().alias("_start_ms"),
            (pl.col("start_ms") + pl.col("duration_ms")).max().alias("_end_ms")]


def trial_word_aggregates() -> list[pl.Expr]:
    """The per-trial aggregations over a trial's word measures (one row per word of its text), each the one
    definition of its feature: ``word_count`` (Float64), ``skip_rate`` and the means of first fixation, gaze and
    total fixation duration (:func:`nan_mean`)."""
    return [pl.len().cast(pl.Float64).alias("word_count"),
            nan_mean("skipped").alias("skip_rate"),
            *[nan_mean(c).alias(f"mean_{c}") for c in ("first_fixation_duration_ms", "gaze_duration_ms",
                                                        "total_fixation_duration_ms")]]


def fixation_regression_rate(next_word_step: str | pl.Expr = "next_word_step") -> pl.Expr:
    """Share of a trial's fixations followed by a fixation on an earlier word (an aggregation: use it in ``agg``).

    Definition: over the fixations whose own word and next fixation's word are both known (``next_word_step``,
    the next fixation's ``word_index`` minus this one's, is not null or NaN), the share with ``next_word_step < 0``.
    A fixation off the text, before one off the text, or the trial's last is not counted; a refixation
    (step 0) is counted and is not a regression. NaN when no fixation counts.

    Source: the regression-rate feature of Mézière et al. (2023), *Using eye-tracking measures to predict reading
    comprehension*, Reading Research Quarterly 58(3):425-449, doi:10.1002/rrq.498, as EyeBench's
    logistic-regression baseline computes it ("share of fixations whose next ``normalized_ID`` is smaller"); its code
    also counts fixations without a next word in the denominator, readgaze does not (they carry no step).

    Parameters
    ----------
    next_word_step : str or polars.Expr
        The step column or expression (Float64 or integer; null or NaN where unknown).

    Returns
    -------
    polars.Expr
        Float64, named ``fixation_regression_rate``.

    Examples
    --------
    >>> import polars as pl
    >>> steps = pl.DataFrame({"next_word_step": [1.0, -2.0, 0.0, None, 1.0, float("nan")]})
    >>> steps.select(fixation_regression_rate()).item()  # 1 regression of 4 known steps
    0.25
    """
    step = pl.col(next_word_step) if isinstance(next_word_step, str) else next_word_step
    step = step.cast(pl.Float64).fill_nan(None)
    return ((step < 0).sum() / step.is_not_null().sum()).cast(pl.Float64).alias("fixation_regression_rate")


def _plogp(p: pl.Expr) -> pl.Expr:
    return p * p.log(2)


def _entropies(sp: pl.DataFrame) -> pl.DataFrame:
    """Both entropies and the regression rate per ``_trial`` from in-word fixations sorted by (``_trial``,
    fixation order).

    Counts come from one packed integer key per (trial, word) and (trial, word, next word); the
    sums run in key order through ``np.bincount``, so the floats are the same on every run.
    """
    trial = sp["_trial"].to_numpy().astype(np.int64)
    word = sp["word_index"].to_numpy().astype(np.int64)
    n_trials = int(trial.max()) + 1 if len(trial) else 0
    shift = np.int64(21)  # word indices below 2^21
    keys, n = np.unique((trial << shift) | word, return_counts=True)
    k_trial = keys >> shift
    p = n / np.bincount(k_trial, weights=n, minlength=n_trials)[k_trial]
    stationary = -np.bincount(k_trial, weights=p * np.log2(p), minlength=n_trials)
    same = trial[1:] == trial[:-1]
    pair = ((trial[:-1] << (2 * shift)) | (word[:-1] << shift) | word[1:])[same]
    keys, n = np.unique(pair, return_counts=True)
    src, k_trial = keys >> shift, keys >> (2 * shift)
    src_run = np.cumsum(np.r_[True, src[1:] != src[:-1]][:len(src)]) - 1  # sorted keys: a source's pairs together
    n_src = np.bincount(src_run, weights=n)[src_run]
    n_all = np.bincount(k_trial, weights=n, minlength=n_trials)[k_trial]
    transition = -np.bincount(k_trial, weights=(n / n_all) * np.log2(n / n_src), minlength=n_trials)
    has_pairs = np.bincount(k_trial, minlength=n_trials) > 0
    present = np.bincount(trial, minlength=n_trials) > 0
    step = word[1:] - word[:-1]  # word-to-word steps within a trial: the regression rate's counts
    left = np.bincount(trial[1:][same & (step < 0)], minlength=n_trials)
    steps = np.bincount(trial[1:][same & (step != 0)], minlength=n_trials)
    with np.errstate(divide="ignore", invalid="ignore"):
        rate = left.astype(np.float64) / steps.astype(np.float64)  # no word-to-word step: NaN, as 0 / 0
    return pl.DataFrame({"_trial": np.flatnonzero(present).astype(np.int64),
                         "regression_rate": rate[present],
                         "stationary_entropy_bits": stationary[present],
                         "gaze_transition_entropy_bits": np.where(has_pairs, transition, np.nan)[present]}
                        ).with_columns(pl.col("gaze_transition_entropy_bits").fill_nan(None))


def compute_trial_features(fixations, words, trials, word_measures=None) -> pl.LazyFrame:
    """Compute one row of reading features per trial (see the module docstring for definitions).

    Parameters
    ----------
    fixations : polars.LazyFrame or DataFrame
        Aligned fixations: ``trial_id``, ``fixation_index``, ``start_ms``, ``duration_ms`` (ms),
        ``x_px``, ``y_px`` (px), ``word_index`` (null off text).
    words : polars.LazyFrame or DataFrame
        ``text_id``, ``word_index``.
    trials : polars.LazyFrame or DataFrame
        ``trial_id``, ``text_id``.
    word_measures : polars.LazyFrame, optional
        The output of :func:`readgaze.measures.compute_word_measures`; computed when not given.

    Returns
    -------
    polars.LazyFrame
        ``trial_id`` plus the Float64 features of :data:`SUMMARY_FEATURES` (``fixation_count`` Int32), one
        row per trial in ``trials`` sorted by ``trial_id``; a trial without fixations has
        ``fixation_count`` 0 and null rates and entropies.
    """
    from readgaze._grid import ordered, trial_codes
    from readgaze.measures import compute_word_measures

    fixations, words, trials = (f.lazy() for f in (fixations, words, trials))
    if word_measures is None:
        word_measures = compute_word_measures(fixations, words, trials)
    tr = trials.select("trial_id").unique().collect().sort("trial_id")
    fx = fixations.select("trial_id", "fixation_index", "start_ms", "duration_ms", "x_px", "y_px",
                          "word_index").collect()
    fx = ordered(fx.with_columns(pl.Series("_trial", trial_codes(fx["trial_id"], tr["trial_id"])),
                                 pl.col("start_ms", "duration_ms", "x_px", "y_px").cast(pl.Float64))
                 .drop("trial_id"), "_trial", "fixation_index")
    # steps between consecutive fixations of a trial (in time order): one whole-column diff, null at each
    # trial's first fixation, the values a per-group diff gives (an aggregation of those is 4x slower)
    after_first = pl.col("_trial").eq_missing(pl.col("_trial").shift(1))
    dx, dy = (pl.when(after_first).then(pl.col(c).diff()) for c in ("x_px", "y_px"))
    fx = fx.with_columns(dx.alias("_dx"), (dx.pow(2) + dy.pow(2)).sqrt().alias("_step_px"))
    per_fix = fx.group_by("_trial", maintain_order=True).agg(
        pl.len().cast(pl.Int32).alias("fixation_count"),
        ((pl.col("start_ms") + pl.col("duration_ms")).max() - pl.col("start_ms").min()).alias("_time_ms"),
        pl.col("_step_px").filter(pl.col("_dx") > 0).mean().alias("mean_forward_saccade_amplitude_px"))
    inword = fx.select("_trial", "word_index").filter(pl.col("word_index").is_not_null())  # only what both need
    wm = word_measures.lazy().select("trial_id", "skipped", "first_fixation_duration_ms").collect()
    wm = wm.with_columns(pl.Series("_trial", trial_codes(wm["trial_id"], tr["trial_id"])))
    if not wm["_trial"].is_sorted():  # the measures come in trial order
        wm = wm.sort("_trial")
    per_word = wm.group_by("_trial", maintain_order=True).agg(
        pl.len().alias("_n_words"), nan_mean("skipped").alias("skip_rate"),
        nan_mean("first_fixation_duration_ms").alias("mean_first_fixation_duration_ms"))
    out = pl.DataFrame({"_trial": range(tr.height), "trial_id": tr["trial_id"]},
                       schema={"_trial": pl.Int64, "trial_id": pl.String})
    for part in (per_word, per_fix, _entropies(inword)):
        out = out.join(part, on="_trial", how="left", maintain_order="left")
    out = out.with_columns(
        reading_speed_wpm(pl.col("_n_words"), pl.col("_time_ms")),
        pl.col("fixation_count").fill_null(0))
    return out.select("trial_id", *[pl.col(c).cast(pl.Int32 if c == "fixation_count" else pl.Float64)
                                    for c in SUMMARY_FEATURES]).lazy()
