"""Baselines: fit on training trials only, predict test trials, scored by evaluate()."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from readgaze.baselines import run_baseline
from readgaze.errors import ConfigError, DataError
from readgaze.metrics import evaluate
from readgaze.qc import QCLog
from readgaze.splits import assign_fold, make_splits


def _trials(seed: int = 0) -> pl.DataFrame:
    """12 participants x 6 items; information seekers (odd participants) read faster (300 vs 200 wpm)."""
    rng = np.random.default_rng(seed)
    rows = []
    for p in range(12):
        goal = "information_seeking" if p % 2 else "ordinary"
        for i in range(6):
            rows.append({"trial_id": f"p{p:02d}-i{i}", "participant_id": f"p{p:02d}", "item_id": f"i{i}",
                         "reading_goal": goal, "is_correct": bool((p + i) % 4),
                         "reading_speed_wpm": (300.0 if p % 2 else 200.0) + rng.normal(0, 20)})
    return pl.DataFrame(rows)


def _assignment(trials: pl.DataFrame) -> pl.DataFrame:
    splits = make_splits(trials, n_folds=3, seed=0, stratify_by="reading_goal")
    return pl.concat([assign_fold(trials, splits, k) for k in range(3)])


def test_reading_speed_separates_planted_goal_signal():
    trials = _trials()
    assignment = _assignment(trials)
    predictions = run_baseline(trials, assignment, "reading_goal", "reading_speed")
    assert predictions.height == assignment.filter(pl.col("split") == "test").height
    assert set(predictions["split"]) == {"test"}
    evaluation = evaluate(predictions)
    new_participant = evaluation.filter(pl.col("regime") == "new_participant").row(0, named=True)
    assert new_participant["balanced_accuracy_mean"] == pytest.approx(1.0)  # 5 SD apart: no overlap
    assert predictions["model"].unique().to_list() == ["reading_speed_logistic_regression"]


def test_majority_predicts_training_frequency():
    trials = _trials()
    assignment = _assignment(trials)
    predictions = run_baseline(trials, assignment, "comprehension", "majority")
    fold0 = assignment.filter(pl.col("fold_index") == 0, pl.col("split") == "train").join(trials, on="trial_id")
    rate = fold0["is_correct"].mean()
    assert predictions.filter(pl.col("fold_index") == 0)["prediction_prob"].unique().to_list() == [pytest.approx(rate)]
    evaluation = evaluate(predictions)
    assert evaluation["auroc_mean"].drop_nulls().to_list() == pytest.approx([0.5] * 4)
    assert evaluation["balanced_accuracy_mean"].to_list() == pytest.approx([0.5] * 4)


def test_test_labels_never_reach_the_fit():
    trials = _trials()
    assignment = _assignment(trials)
    test_ids = assignment.filter(pl.col("split") == "test", pl.col("fold_index") == 1)["trial_id"].implode()
    flipped = trials.with_columns(pl.when(pl.col("trial_id").is_in(test_ids))
                                  .then(pl.lit("ordinary")).otherwise(pl.col("reading_goal")).alias("reading_goal"))
    one_fold = assignment.filter(pl.col("fold_index") == 1)
    a = run_baseline(trials, one_fold, "reading_goal")
    b = run_baseline(flipped, one_fold, "reading_goal")
    assert a["prediction_prob"].to_list() == b["prediction_prob"].to_list()
    assert a["label"].to_list() != b["label"].to_list()


def test_missing_feature_uses_training_median_and_is_counted():
    trials = _trials().with_columns(pl.when(pl.col("trial_id") == "p00-i0").then(None)
                                    .otherwise(pl.col("reading_speed_wpm")).alias("reading_speed_wpm"))
    qc = QCLog()
    predictions = run_baseline(trials, _assignment(trials), "reading_goal", qc=qc)
    assert predictions["prediction_prob"].null_count() == 0
    # one imputation per fold in which the trial is a training or test trial (validation is not touched)
    expected = _assignment(trials).filter(pl.col("trial_id") == "p00-i0", pl.col("split").is_in(["train",
                                                                                                 "test"])).height
    assert qc.total(action="changed") == expected > 0


def test_goal_question_multiclass_and_errors():
    trials = _trials().with_columns((pl.col("item_id").str.slice(1).cast(pl.Int64) % 3).alias("label"))
    predictions = run_baseline(trials, _assignment(trials), "goal_question", "majority")
    assert predictions.schema["prediction_prob"] == pl.List(pl.Float64)
    assert evaluate(predictions)["accuracy_mean"].is_not_null().all()
    with pytest.raises(ConfigError, match="needs a 'label' column"):
        run_baseline(_trials(), _assignment(_trials()), "goal_question")
    with pytest.raises(ConfigError, match="kind 'no_such_baseline'"):
        run_baseline(_trials(), _assignment(_trials()), "reading_goal", "no_such_baseline")
    single = _trials().with_columns(pl.lit("ordinary").alias("reading_goal"))
    with pytest.raises(DataError, match="1 class"):
        run_baseline(single, _assignment(single), "reading_goal")
