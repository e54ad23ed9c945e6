"""Regression baselines learn a planted reader-level signal, choose on validation only, and keep readers apart."""

import numpy as np
import polars as pl
import pytest

from readgaze.baselines_regression import REGRESSORS, run_regressor, run_regressors
from readgaze.errors import ConfigError, SchemaError
from readgaze.metrics_regression import evaluate_regression
from readgaze.qc import QCLog
from readgaze.simulate import simulate_corpus, trial_features
from readgaze.splits import assign_fold, check_reader_label, make_splits

FEATURES = ("reading_speed_wpm", "mean_log_duration", "skip_out", "fix_per_word_out", "log_dwell_out")


@pytest.fixture(scope="module")
def planted():
    """24 simulated readers x 8 paragraphs; each reader's score = 5 + 1.5 z(mean log reading speed) + N(0, 0.3).

    Reading speed is words per minute of total fixation time (simulated, gold word indices). Four readers have no
    score (null), as CopCo's readers without a comprehension test.
    """
    corpus = simulate_corpus(n_participants=24, n_items=4, paragraphs_per_item=2, seed=0)
    features = trial_features(corpus).with_columns(
        (pl.col("n_words") / (pl.col("dwell_in") + pl.col("dwell_out")) * 60_000).alias("reading_speed_wpm"))
    speed = (features.group_by("participant_id").agg(pl.col("reading_speed_wpm").log().mean().alias("speed"))
             .sort("participant_id"))
    z = (pl.col("speed") - pl.col("speed").mean()) / pl.col("speed").std()
    noise = pl.Series(np.random.default_rng(7).normal(0, 0.3, speed.height))
    readers = speed.with_columns((5 + 1.5 * z + noise).alias("skill"))
    readers = readers.with_columns(pl.when(pl.int_range(pl.len()) % 6 == 5).then(None).otherwise("skill")
                                   .alias("skill"))
    trials = corpus.trials.select("trial_id", "participant_id", "item_id").join(
        features.select("trial_id", *FEATURES), on="trial_id").join(
        readers.select("participant_id", "skill"), on="participant_id")
    splits = make_splits(trials, n_folds=4, seed=0)
    assignment = pl.concat([assign_fold(trials, splits, k) for k in range(4)])
    return trials, assignment


def test_planted_reader_signal_beats_chance(planted):
    trials, assignment = planted
    qc = QCLog()
    predictions = pl.concat([
        run_regressors(trials, assignment, "skill", ("chance",), qc=qc),
        run_regressor(trials, assignment, "skill", "ridge", features=FEATURES, qc=qc),
        run_regressor(trials, assignment, "skill", "random_forest", features=FEATURES, qc=qc,
                      grid={"max_depth": [6], "max_features": [0.3], "n_estimators": [100]}),
        run_regressor(trials, assignment, "skill", "reading_speed", qc=qc),
    ], how="diagonal_relaxed")
    assert predictions["model"].unique().sort().to_list() == [
        "chance_mean", "random_forest_regressor_custom_features", "reading_speed_linear_regression",
        "ridge_custom_features"]
    # 4 readers x 8 paragraphs without a score, counted by each of the 4 runs
    assert qc.total(reason="no skill value (dropped; 4 readers)") == 4 * (4 * 8)
    rmse = {(r["model"], r["regime"]): r["rmse_mean"] for r in evaluate_regression(predictions).rows(named=True)}
    for regime in ("new_participant", "new_item_participant", "all"):
        chance = rmse[("chance_mean", regime)]
        assert chance > 1.0  # the score's spread: the chance row knows nothing
        for model in ("ridge_custom_features", "random_forest_regressor_custom_features",
                      "reading_speed_linear_regression"):
            assert rmse[(model, regime)] < 0.75 * chance, (model, regime, rmse[(model, regime)], chance)
    # the chance row predicts the training mean of the fold, nothing else
    fold0 = predictions.filter((pl.col("model") == "chance_mean") & (pl.col("fold_index") == 0))
    train = assignment.filter((pl.col("fold_index") == 0) & (pl.col("split") == "train")).join(trials, on="trial_id")
    assert fold0["prediction_value"].unique().to_list() == pytest.approx([train["skill"].drop_nulls().mean()])


def test_no_signal_no_gain(planted):
    """The same readers with scores shuffled over readers: no baseline beats chance by much in new readers."""
    trials, assignment = planted
    readers = trials.select("participant_id", "skill").unique("participant_id").sort("participant_id")
    shuffled = readers.with_columns(pl.col("skill").shuffle(seed=3))
    trials = trials.drop("skill").join(shuffled, on="participant_id")
    predictions = pl.concat([run_regressor(trials, assignment, "skill", "chance"),
                             run_regressor(trials, assignment, "skill", "ridge", features=FEATURES)])
    rmse = {(r["model"], r["regime"]): r["rmse_mean"] for r in evaluate_regression(predictions).rows(named=True)}
    assert rmse[("ridge_custom_features", "new_participant")] > 0.9 * rmse[("chance_mean", "new_participant")]


def test_selection_reads_validation_only(planted):
    """Scrambling the test trials' targets changes neither the chosen grid point nor any prediction."""
    trials, assignment = planted
    fold = assignment.filter(pl.col("fold_index") == 1)
    test_ids = fold.filter(pl.col("split") == "test")["trial_id"].implode()
    scrambled = trials.with_columns(pl.when(pl.col("trial_id").is_in(test_ids)).then(-pl.col("skill") * 7 + 3)
                                    .otherwise(pl.col("skill")).alias("skill"))
    for kind in ("ridge", "knn"):
        a = run_regressor(trials, fold, "skill", kind, features=FEATURES)
        b = run_regressor(scrambled, fold, "skill", kind, features=FEATURES)
        assert a["hyperparameters"].to_list() == b["hyperparameters"].to_list()
        assert np.array_equal(a["prediction_value"].to_numpy(), b["prediction_value"].to_numpy())
        assert not np.array_equal(a["label"].to_numpy(), b["label"].to_numpy())
    # validation changes do move the choice: ridge's alpha is chosen on validation RMSE
    val_ids = fold.filter(pl.col("split") == "val")["trial_id"].implode()
    noisy = trials.with_columns(pl.when(pl.col("trial_id").is_in(val_ids)).then(pl.lit(5.0))
                                .otherwise(pl.col("skill")).alias("skill"))
    chosen = {run_regressor(t, fold, "skill", "ridge", features=FEATURES)["hyperparameters"][0]
              for t in (trials, noisy)}
    assert len(chosen) == 2


def test_reader_level_label_never_splits_a_reader(planted):
    """In the new-reader regimes no reader of a val/test trial has a training trial, in every fold."""
    trials, assignment = planted
    assigned = assignment.join(trials.select("trial_id", "participant_id", "skill"), on="trial_id")
    counts = check_reader_label(assigned, "skill")
    held = counts.filter(pl.col("regime") != "new_item")
    assert held.height == 4 * 2 * 2 and held["n_readers_in_train"].sum() == 0 and held["n_readers"].min() >= 1
    for fold in range(4):
        part = assigned.filter(pl.col("fold_index") == fold)
        train = set(part.filter(pl.col("split") == "train")["participant_id"])
        unseen = set(part.filter(pl.col("regime").is_in(["new_participant", "new_item_participant"]))
                     ["participant_id"])
        assert unseen and not unseen & train


def test_every_kind_runs_on_its_features_and_errors_are_named(planted):
    trials, assignment = planted
    columns = {f for spec in REGRESSORS.values() for f in spec.features}
    rng = np.random.default_rng(0)
    wide = trials.with_columns(pl.Series(c, rng.normal(size=trials.height)) for c in columns if c not in trials.columns)
    fold = assignment.filter(pl.col("fold_index") == 0)
    small = {"random_forest": {"max_depth": [6], "n_estimators": [50]},  # one grid point: keep the test fast
             "gradient_boosting": {"max_iter": [20], "max_depth": [3]}}
    out = pl.concat([run_regressor(wide, fold, "skill", kind, grid=small.get(kind)) for kind in REGRESSORS])
    assert out["model"].n_unique() == len(REGRESSORS)
    assert out["prediction_value"].is_finite().all() and out.filter(pl.col("split") != "test").height == 0
    with pytest.raises(ConfigError, match="got kind 'lasso'"):
        run_regressor(trials, fold, "skill", "lasso")
    with pytest.raises(SchemaError, match=r"missing column\(s\) \['paragraph_words_per_minute'\]"):
        run_regressor(trials, fold, "skill", "words_per_paragraph_time")
    with pytest.raises(SchemaError, match="column participant_id: got dtype String, expected a number"):
        run_regressor(trials, fold, "participant_id", "chance")


def test_predictions_clipped_to_the_training_range(planted):
    """A test trial read at an absurd speed gets the most extreme training score, not an extrapolation (counted)."""
    trials, assignment = planted
    fold = assignment.filter(pl.col("fold_index") == 0)
    scored = trials.filter(pl.col("skill").is_not_null())
    outlier = fold.filter(pl.col("split") == "test").join(scored, on="trial_id")["trial_id"][0]
    wild = trials.with_columns(pl.when(pl.col("trial_id") == outlier).then(1e6).otherwise(pl.col("reading_speed_wpm"))
                               .alias("reading_speed_wpm"))
    qc = QCLog()
    out = run_regressor(wild, fold, "skill", "reading_speed", qc=qc)
    train = fold.filter(pl.col("split") == "train").join(scored, on="trial_id")["skill"]
    value = out.filter(pl.col("trial_id") == outlier)["prediction_value"][0]
    assert value in (train.min(), train.max())
    assert out["prediction_value"].is_between(train.min(), train.max()).all()
    assert qc.total(reason="reading_speed_linear_regression fold 0: prediction outside the training targets' range, "
                           "clipped to it", action="changed") >= 1
