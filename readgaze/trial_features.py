"""Trial-level reading features: speed, skipping, regressions, saccades and gaze entropies.

All features are computed from the aligned fixations and the word measures, one row per trial.
Definitions (each in plain words):

* ``reading_speed_wpm``: words of the text / reading time in minutes, where the reading time runs
  from the first fixation's start to the last fixation's end (``start_ms + duration_ms``).
* ``mean_first_fixation_duration_ms``: mean first-fixation duration over the fixated words.
* ``skip_rate``: share of the text's words skipped in first pass (never-fixated words count as
  skipped, as ``IA_SKIP`` does).
* ``regression_rate``: share of word-to-word saccades (consecutive in-word fixations on different
  words) that land on a word to the left.
* ``mean_forward_saccade_amplitude_px``: mean Euclidean distance between consecutive fixations
  (off-text ones included) whose ``x`` increases.
* ``fixation_count``: all fixations of the trial, off-text ones included (``TRIAL_FIXATION_COUNT``).
* ``stationary_entropy_bits`` and ``gaze_transition_entropy_bits``: Krejtz et al. (2015), *ACM
  Transactions on Applied Perception* 13(1):4, doi:10.1145/2834121, with words as areas of
  interest: ``H_s = -sum_i p_i log2 p_i`` over the share of in-word fixations on word ``i``, and
  ``H_t = -sum_i p_i sum_j p_ij log2 p_ij`` over transitions between consecutive in-word
  fixations (refixations included), ``p_i`` the share of transitions leaving ``i``.
"""

from __future__ import annotations

import polars as pl

FEATURES = ("reading_speed_wpm", "mean_first_fixation_duration_ms", "skip_rate", "regression_rate",
            "mean_forward_saccade_amplitude_px", "fixation_count", "gaze_transition_entropy_bits",
            "stationary_entropy_bits")


def _plogp(p: pl.Expr) -> pl.Expr:
    return p * p.log(2)


def _entropies(fixations: pl.LazyFrame) -> pl.LazyFrame:
    # eager, with explicit sorts: float sums then always run in one order (byte-identical outputs);
    # a lazy plan may drop a sort that precedes a group_by
    sp = (fixations.filter(pl.col("word_index").is_not_null()).sort("trial_id", "fixation_index")
          .select("trial_id", pl.col("word_index").alias("src"),
                  pl.col("word_index").shift(-1).over("trial_id").alias("dst")).collect())
    counts = sp.group_by("trial_id", "src").agg(pl.len().alias("n")).sort("trial_id", "src")
    counts = counts.with_columns((pl.col("n") / pl.col("n").sum().over("trial_id")).alias("p"))
    stationary = counts.group_by("trial_id", maintain_order=True).agg(
        (-_plogp(pl.col("p")).sum()).alias("stationary_entropy_bits"))
    pairs = (sp.filter(pl.col("dst").is_not_null()).group_by("trial_id", "src", "dst").agg(pl.len().alias("n"))
             .sort("trial_id", "src", "dst"))
    pairs = pairs.with_columns(pl.col("n").sum().over("trial_id", "src").alias("n_src"),
                               pl.col("n").sum().over("trial_id").alias("n_all"))
    transition = pairs.group_by("trial_id", maintain_order=True).agg(
        (-((pl.col("n_src") / pl.col("n_all")) * _plogp(pl.col("n") / pl.col("n_src"))).sum())
        .alias("gaze_transition_entropy_bits"))
    return stationary.join(transition, on="trial_id", how="left").lazy()


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
        ``trial_id`` plus the Float64 features of :data:`FEATURES` (``fixation_count`` Int32), one
        row per trial in ``trials`` sorted by ``trial_id``; a trial without fixations has
        ``fixation_count`` 0 and null rates and entropies.
    """
    fixations, words, trials = (f.lazy() for f in (fixations, words, trials))
    if word_measures is None:
        from readgaze.measures import compute_word_measures
        word_measures = compute_word_measures(fixations, words, trials)
    fx = fixations.sort("trial_id", "fixation_index").with_columns(
        pl.col("start_ms", "duration_ms", "x_px", "y_px").cast(pl.Float64)).collect()
    dx, dy = pl.col("x_px").diff(), pl.col("y_px").diff()  # within each trial's group, in time order
    per_fix = fx.group_by("trial_id", maintain_order=True).agg(
        pl.len().cast(pl.Int32).alias("fixation_count"),
        ((pl.col("start_ms") + pl.col("duration_ms")).max() - pl.col("start_ms").min()).alias("_time_ms"),
        (dx.pow(2) + dy.pow(2)).sqrt().filter(dx > 0).mean().alias("mean_forward_saccade_amplitude_px"))
    inword = fx.filter(pl.col("word_index").is_not_null())
    step = pl.col("word_index").diff()
    regress = inword.group_by("trial_id", maintain_order=True).agg(
        ((step < 0).sum() / (step != 0).sum()).alias("regression_rate"))
    per_word = word_measures.lazy().sort("trial_id", "word_index").group_by("trial_id").agg(
        pl.len().alias("_n_words"), pl.col("skipped").mean().alias("skip_rate"),
        pl.col("first_fixation_duration_ms").mean().alias("mean_first_fixation_duration_ms"))
    out = (trials.select("trial_id").unique()
           .join(per_word, on="trial_id", how="left").join(per_fix.lazy(), on="trial_id", how="left")
           .join(regress.lazy(), on="trial_id", how="left").join(_entropies(fx.lazy()), on="trial_id", how="left"))
    out = out.with_columns(
        (pl.col("_n_words") / (pl.col("_time_ms") / 60_000)).alias("reading_speed_wpm"),
        pl.col("fixation_count").fill_null(0))
    return out.select("trial_id", *[pl.col(c).cast(pl.Int32 if c == "fixation_count" else pl.Float64)
                                    for c in FEATURES]).sort("trial_id")
