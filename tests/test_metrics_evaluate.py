"""evaluate(): balanced accuracy, AUROC and accuracy per regime and fold, against hand-computed values."""

from __future__ import annotations

import math

import polars as pl
import pytest

from readgaze.errors import DataError, SchemaError
from readgaze.metrics import evaluate, evaluate_folds, results_table, write_results
from readgaze.splits import describe

# fold 0 new_item: labels 1 1 0 0, probs .9 .4 .6 .1 -> predicted 1 0 1 0: recalls 1/2, 1/2 -> BA 0.5;
#   AUROC: (.9>.6) (.9>.1) (.4<.6) (.4>.1) -> 3/4
# fold 1 new_item: labels 1 0 0, probs .7 .2 .8 -> predicted 1 0 1: recalls 1, 1/2 -> BA 0.75; AUROC (.7>.2)(.7<.8) 1/2
# fold 0 new_participant: labels 1 0, probs .3 .6 -> BA 0, AUROC 0
# fold 0 all (pooled): positives .9 .4 .3, negatives .6 .1 .6 -> BA (1/3 + 1/3)/2 = 1/3, AUROC 5/9
PREDICTIONS = pl.DataFrame({
    "label": [1, 1, 0, 0, 1, 0, 0, 1, 0],
    "prediction_prob": [0.9, 0.4, 0.6, 0.1, 0.7, 0.2, 0.8, 0.3, 0.6],
    "regime": ["new_item"] * 7 + ["new_participant"] * 2,
    "fold_index": [0, 0, 0, 0, 1, 1, 1, 0, 0],
    "participant_id": ["a"] * 9, "item_id": ["x"] * 9,
    "trial_id": [f"t{k}" for k in range(9)],
})


def _cell(frame: pl.DataFrame, **keys) -> dict:
    rows = frame.filter(*[pl.col(k) == v for k, v in keys.items()]).to_dicts()
    assert len(rows) == 1
    return rows[0]


def test_per_fold_values_by_hand():
    per_fold = evaluate_folds(PREDICTIONS)
    assert _cell(per_fold, regime="new_item", fold_index=0)["balanced_accuracy"] == pytest.approx(0.5)
    assert _cell(per_fold, regime="new_item", fold_index=0)["auroc"] == pytest.approx(0.75)
    assert _cell(per_fold, regime="new_item", fold_index=1)["balanced_accuracy"] == pytest.approx(0.75)
    assert _cell(per_fold, regime="new_item", fold_index=1)["accuracy"] == pytest.approx(2 / 3)
    assert _cell(per_fold, regime="new_participant", fold_index=0)["auroc"] == pytest.approx(0.0)
    pooled = _cell(per_fold, regime="all", fold_index=0)
    assert pooled["balanced_accuracy"] == pytest.approx(1 / 3)  # not the regime mean (0.5 + 0) / 2
    assert pooled["auroc"] == pytest.approx(5 / 9)
    assert (pooled["n_trials"], pooled["n_positive"]) == (6, 3)


def test_mean_and_sem_over_folds():
    evaluation = evaluate(PREDICTIONS)
    new_item = _cell(evaluation, regime="new_item")
    assert new_item["balanced_accuracy_mean"] == pytest.approx(0.625)
    assert new_item["balanced_accuracy_sem"] == pytest.approx(0.125)  # std([.5, .75], ddof=1) / sqrt(2)
    assert new_item["auroc_mean"] == pytest.approx(0.625)
    assert (new_item["n_folds"], new_item["n_trials"], new_item["auroc_n_folds"]) == (2, 7, 2)
    alls = _cell(evaluation, regime="all")
    assert alls["auroc_mean"] == pytest.approx((5 / 9 + 0.5) / 2)
    assert alls["auroc_sem"] == pytest.approx(abs(5 / 9 - 0.5) / 2)
    assert _cell(evaluation, regime="new_participant")["balanced_accuracy_sem"] is None  # one fold
    assert evaluation["regime"].to_list() == ["new_item", "new_participant", "all"]
    assert "pools" in evaluation["aggregation"][0]


def test_single_class_fold_skips_auroc_and_counts_it():
    extra = pl.DataFrame({"label": [1, 1], "prediction_prob": [0.8, 0.2], "regime": ["new_participant"] * 2,
                          "fold_index": [1, 1], "participant_id": ["b"] * 2, "item_id": ["y"] * 2,
                          "trial_id": ["u0", "u1"]})
    evaluation = evaluate(pl.concat([PREDICTIONS, extra]))
    cell = _cell(evaluation, regime="new_participant")
    assert (cell["auroc_n_folds"], cell["auroc_folds_skipped"]) == (1, 1)
    assert cell["auroc_mean"] == pytest.approx(0.0) and cell["auroc_sem"] is None
    assert cell["balanced_accuracy_mean"] == pytest.approx((0.0 + 0.5) / 2)  # fold 1: recall of class 1 = 1/2
    assert "skipped in 1 fold cells" in results_table(evaluation)


def test_threshold_tie_is_negative_and_models_are_separate():
    frame = pl.DataFrame({"label": [1, 0, 1, 0], "prediction_prob": [0.5, 0.5, 0.9, 0.1],
                          "regime": ["new_item"] * 4, "fold_index": [0] * 4, "trial_id": ["a", "b", "a", "b"],
                          "model": ["tie", "tie", "good", "good"]})
    evaluation = evaluate(frame)
    assert _cell(evaluation, model="tie", regime="new_item")["balanced_accuracy_mean"] == pytest.approx(0.5)
    assert _cell(evaluation, model="tie", regime="new_item")["auroc_mean"] == pytest.approx(0.5)
    assert _cell(evaluation, model="good", regime="all")["balanced_accuracy_mean"] == pytest.approx(1.0)


def test_multiclass_accuracy_and_macro_auroc():
    # argmax 0 1 1 2 vs labels 0 1 2 2: accuracy 3/4, balanced (1 + 1 + 1/2) / 3
    # one-vs-rest AUROC: class 0 -> 1; class 1 scores .1 .5 .6 .2 (positive .5) -> 2/3;
    # class 2 scores .1 .4 .3 .7 (positives .3 .7 vs .1 .4) -> 3/4; macro (1 + 2/3 + 3/4) / 3
    frame = pl.DataFrame({"label": [0, 1, 2, 2],
                          "prediction_prob": [[0.8, 0.1, 0.1], [0.1, 0.5, 0.4], [0.1, 0.6, 0.3], [0.1, 0.2, 0.7]],
                          "regime": ["new_participant"] * 4, "fold_index": [0] * 4, "trial_id": list("abcd")})
    cell = _cell(evaluate_folds(frame), regime="new_participant")
    assert cell["accuracy"] == pytest.approx(0.75)
    assert cell["balanced_accuracy"] == pytest.approx(2.5 / 3)
    assert cell["auroc"] == pytest.approx((1 + 2 / 3 + 3 / 4) / 3)
    assert cell["n_positive"] is None
    missing_class = evaluate_folds(frame.head(3).with_columns(pl.lit(1).alias("label")))
    assert missing_class["auroc_skipped"].all()


def test_split_column_keeps_test_rows_only():
    frame = PREDICTIONS.with_columns(pl.lit("test").alias("split"))
    val = frame.with_columns(pl.lit("val").alias("split"), pl.lit(0.5).alias("prediction_prob"))
    tuned = ["balanced_accuracy_tuned_mean", "balanced_accuracy_tuned_sem"]  # val rows only choose a threshold
    assert evaluate(pl.concat([frame, val])).drop(tuned).equals(evaluate(PREDICTIONS).drop(tuned))


def test_bad_inputs_are_named():
    with pytest.raises(SchemaError, match=r"\['label'\]"):
        evaluate(PREDICTIONS.drop("label"))
    with pytest.raises(DataError, match=r"row 2: label 2"):
        evaluate(PREDICTIONS.with_columns(pl.when(pl.col("trial_id") == "t2").then(2).otherwise(pl.col("label"))
                                          .alias("label")))
    with pytest.raises(DataError, match=r"regime 'seen'"):
        evaluate(PREDICTIONS.with_columns(pl.lit("seen").alias("regime")))
    with pytest.raises(DataError, match=r"prediction_prob 1.5"):
        evaluate(PREDICTIONS.with_columns(pl.lit(1.5).alias("prediction_prob")))
    with pytest.raises(DataError, match=r"trial 't0' is predicted more than once"):
        evaluate(pl.concat([PREDICTIONS, PREDICTIONS.head(1)]))


def test_results_table_and_files(tmp_path):
    evaluation = evaluate(PREDICTIONS)
    table = results_table(evaluation)
    assert "| model | BA @ 0.5 | 62.5 ± 12.5 † | 0.0 † | – | 54.2 ± 20.8 † |" in table  # 2-7 trials: marked
    assert "| model | trials (folds) | 7 (2) | 2 (1) | – | 9 (2) |" in table
    assert "not the mean of the regime columns" in table
    trials = pl.DataFrame({"trial_id": ["1", "2"], "participant_id": ["a", "b"], "item_id": ["x", "x"],
                           "reading_goal": ["ordinary", "information_seeking"]})
    headlined = results_table(evaluation, description=describe(trials))
    assert headlined.splitlines()[0].startswith("| Model | Metric | New participant (headline) | "
                                                "New item & participant (headline) | New item |")
    paths = write_results(evaluation, tmp_path / "out", description=describe(trials))
    back = pl.read_csv(paths["csv"])
    assert back["balanced_accuracy_mean"].to_list() == pytest.approx(evaluation["balanced_accuracy_mean"].to_list())
    assert paths["markdown"].read_text() == headlined
    assert math.isclose(back.filter(pl.col("regime") == "all")["auroc_mean"][0], (5 / 9 + 0.5) / 2)
