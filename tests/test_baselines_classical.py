"""Classical baselines: feature sets counted by hand, planted signals separated, grids chosen on validation."""

from __future__ import annotations

import json

import numpy as np
import polars as pl
import pytest
from synthetic import write_synthetic_dataset

from readgaze.baselines import BASELINES, CLASSICAL, run_baseline, run_baselines, with_baseline_features
from readgaze.features import FEATURE_SETS, compute_feature_sets, word_classes
from readgaze.metrics import evaluate, evaluate_folds
from readgaze.splits import assign_fold, make_splits

SMALL_GRIDS = {"random_forest": {"n_estimators": [60], "max_depth": [6]},  # the full grids take ~25 s and ~50 s here
               "gradient_boosting": {"learning_rate": [0.1], "max_depth": [3], "min_samples_leaf": [5, 20]}}


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """16 participants x 8 items; information seekers regress 30 % of the time, ordinary readers 5 %."""
    path = write_synthetic_dataset(tmp_path_factory.mktemp("classical"), n_participants=16, n_items=8, n_words=30)
    trials = with_baseline_features(pl.read_parquet(path / "trials.parquet"), path)
    splits = make_splits(trials, n_folds=4, seed=0, stratify_by="reading_goal")
    return trials, pl.concat([assign_fold(trials, splits, k) for k in range(4)])


def _tiny_tables():
    """One trial reading 3 words: fixations on words 0, 1, 0 (a regression), 2, then one off text."""
    fixations = pl.DataFrame({"trial_id": ["t"] * 5, "fixation_index": [0, 1, 2, 3, 4],
                              "start_ms": [0.0, 250.0, 500.0, 800.0, 1100.0],
                              "duration_ms": [200.0, 200.0, 250.0, 250.0, 100.0],
                              "x_px": [10.0, 40.0, 10.0, 70.0, 70.0], "y_px": [0.0, 0.0, 0.0, 0.0, 40.0],
                              "word_index": [0, 1, 0, 2, None]}, schema_overrides={"word_index": pl.Int32})
    words = pl.DataFrame({"text_id": ["x"] * 3, "ia_index": [0, 1, 2], "word_index": [0, 1, 2],
                          "word": ["The", "cat", "sat"], "universal_pos": ["DET", "NOUN", "VERB"]})
    measures = pl.DataFrame({"trial_id": ["t"] * 3, "word_index": [0, 1, 2],
                             "first_fixation_duration_ms": [200.0, 200.0, 250.0],
                             "gaze_duration_ms": [200.0, 200.0, 250.0],
                             "total_fixation_duration_ms": [450.0, 200.0, 250.0],
                             "regression_path_duration_ms": [200.0, 450.0, 250.0],
                             "fixation_count": [2, 1, 1], "skipped": [False, False, False],
                             "regression_in": [True, False, False], "regression_out": [False, True, False]})
    trials = pl.DataFrame({"trial_id": ["t"], "text_id": ["x"], "PARAGRAPH_RT": [1500.0]})
    return fixations, words, measures, trials


def test_feature_sets_match_hand_counts():
    row = compute_feature_sets(*_tiny_tables()).row(0, named=True)
    assert row["paragraph_words_per_minute"] == pytest.approx(3 / 1500 * 60_000)  # PARAGRAPH_RT, not the span
    assert row["mean_total_fixation_duration_ms"] == pytest.approx(300.0)  # (450 + 200 + 250) / 3
    assert row["mean_regression_path_duration_ms"] == pytest.approx(300.0)
    assert row["mean_fixation_duration_ms"] == pytest.approx(200.0)  # 1000 ms / 5 fixations, off-text included
    # in-word steps: +1, -1, +2 (the step onto the off-text fixation is null): 1 regression of 3
    assert row["fixation_regression_rate"] == pytest.approx(1 / 3)
    assert row["mean_forward_word_saccade_amplitude_px"] == pytest.approx((30.0 + 60.0) / 2)
    assert row["max_next_saccade_duration_ms"] == pytest.approx(50.0)  # 800 - 750
    assert row["fixations_on_words_count"] == 4.0 and row["never_fixated_rate"] == 0.0
    assert row["fixation_count"] == 5.0 and row["word_count"] == 3.0
    assert row["max_duration_ms"] == 250.0 and row["min_x_px"] == 10.0
    # grouped means: the one function word (DET) and the two content words
    assert row["mean_total_fixation_duration_ms__content_word_function"] == pytest.approx(450.0)
    assert row["mean_total_fixation_duration_ms__content_word_content"] == pytest.approx(225.0)
    assert row["mean_fixation_count__reduced_pos_noun"] == 1.0
    assert row["mean_fixation_count__universal_pos_det"] == 2.0
    assert row["mean_fixation_count__entity_type_none"] == pytest.approx(4 / 3)
    assert row["mean_fixation_count__reduced_pos_adj"] is None  # no adjective in the text
    assert len(FEATURE_SETS["beyelstm_global"]) == 43 * 16 + 4


def test_word_classes_fall_back_from_reduced_to_universal_to_length():
    words = pl.DataFrame({"text_id": ["x"] * 3, "ia_index": [0, 1, 2], "word_index": [0, 1, 2],
                          "word": ["a", "quickly", "run"], "universal_pos": ["DET", "ADV", "VERB"],
                          "Reduced_POS": ["FUNC", "ADJ", "VERB"]})
    assert word_classes(words.lazy()).collect()["reduced_pos"].to_list() == ["func", "adj", "verb"]
    assert word_classes(words.drop("Reduced_POS").lazy()).collect()["reduced_pos"].to_list() == ["func", "adj", "verb"]
    bare = word_classes(words.drop("Reduced_POS", "universal_pos").lazy()).collect()
    assert bare["reduced_pos"].to_list() == ["func", "unknown", "func"]
    assert bare["content_word"].to_list() == ["function", "content", "function"]


@pytest.mark.parametrize("kind", ["meziere_logistic_regression", "svm", "random_forest", "knn", "gradient_boosting"])
def test_classical_baseline_separates_planted_regression_signal(kind, corpus):
    trials, assignment = corpus
    predictions = run_baseline(trials, assignment, "reading_goal", kind, grid=SMALL_GRIDS.get(kind))
    pooled = evaluate(predictions).filter(pl.col("regime") == "all").row(0, named=True)
    assert pooled["balanced_accuracy_mean"] > 0.75, pooled
    assert pooled["auroc_mean"] > 0.85, pooled
    assert predictions["model"].unique().to_list() == [BASELINES[kind].model]


def test_reading_time_baselines_separate_planted_speed_signal():
    rng = np.random.default_rng(0)
    rows = [{"trial_id": f"p{p}-i{i}", "participant_id": f"p{p}", "item_id": f"i{i}",
             "reading_goal": "information_seeking" if p % 2 else "ordinary",
             "paragraph_words_per_minute": (300.0 if p % 2 else 200.0) + rng.normal(0, 30),
             "mean_total_fixation_duration_ms": (180.0 if p % 2 else 260.0) + rng.normal(0, 20)}
            for p in range(12) for i in range(6)]
    trials = pl.DataFrame(rows)
    splits = make_splits(trials, n_folds=3, seed=0, stratify_by="reading_goal")
    assignment = pl.concat([assign_fold(trials, splits, k) for k in range(3)])
    predictions = run_baselines(trials, assignment, "reading_goal",
                                ["words_per_paragraph_time", "mean_total_fixation_duration"])
    pooled = evaluate(predictions).filter(pl.col("regime") == "all")
    assert pooled["model"].sort().to_list() == ["mean_total_fixation_duration_logistic_regression",
                                                 "words_per_paragraph_time_logistic_regression"]
    assert (pooled["balanced_accuracy_mean"] > 0.9).all()


def test_svm_auroc_is_not_its_balanced_accuracy(corpus):
    """With hard labels (the lab's ``probability=False``) AUROC equals balanced accuracy; with scores it does not."""
    trials, assignment = corpus
    predictions = run_baseline(trials, assignment, "reading_goal", "svm")
    assert predictions["prediction_prob"].n_unique() > predictions.height // 2  # a continuous score per trial
    folds = evaluate_folds(predictions).filter(pl.col("auroc").is_not_null())
    assert (folds["auroc"] - folds["balanced_accuracy"]).abs().max() > 0.02
    hard = predictions.with_columns((pl.col("prediction_prob") > 0.5).cast(pl.Float64).alias("prediction_prob"))
    hard_folds = evaluate_folds(hard).filter(pl.col("auroc").is_not_null())
    assert hard_folds["auroc"].to_list() == pytest.approx(hard_folds["balanced_accuracy"].to_list())


def test_grid_is_chosen_on_validation_and_test_labels_never_reach_it(corpus):
    trials, assignment = corpus
    fold = assignment.filter(pl.col("fold_index") == 0)
    test_ids = fold.filter(pl.col("split") == "test")["trial_id"].implode()
    flipped = trials.with_columns(pl.when(pl.col("trial_id").is_in(test_ids)).then(pl.lit("ordinary"))
                                  .otherwise(pl.col("reading_goal")).alias("reading_goal"))
    a = run_baseline(trials, fold, "reading_goal", "meziere_logistic_regression")
    b = run_baseline(flipped, fold, "reading_goal", "meziere_logistic_regression")
    assert a["prediction_prob"].to_list() == b["prediction_prob"].to_list()
    assert a["hyperparameters"].to_list() == b["hyperparameters"].to_list()
    chosen = json.loads(a["hyperparameters"][0])
    assert set(chosen) in ({"C"}, {"penalty_off"})
    val_ids = fold.filter(pl.col("split") == "val")["trial_id"].implode()
    val_flipped = trials.with_columns(pl.when(pl.col("trial_id").is_in(val_ids)).then(pl.lit("ordinary"))
                                      .otherwise(pl.col("reading_goal")).alias("reading_goal"))
    c = run_baseline(val_flipped, fold, "reading_goal", "knn")  # one validation class: chosen by balanced accuracy
    assert c.height == a.height


def test_val_and_test_predictions_for_ensembles(corpus):
    trials, assignment = corpus
    predictions = run_baseline(trials, assignment.filter(pl.col("fold_index") == 1), "reading_goal", "knn",
                               split=("val", "test"))
    assert set(predictions["split"]) == {"val", "test"}
    assert set(CLASSICAL) <= set(BASELINES)
