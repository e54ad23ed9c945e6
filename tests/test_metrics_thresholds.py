"""Balanced accuracy at 0.5 and at the threshold chosen on validation; goal selection's three scores (by hand)."""

from __future__ import annotations

import polars as pl
import pytest

from readgaze.metrics import (
    choose_thresholds,
    evaluate,
    evaluate_goal_selection,
    goal_selection_folds,
    goal_selection_table,
    results_table,
)


def _frame(split: str, labels, probs, fold: int = 0) -> pl.DataFrame:
    n = len(labels)
    return pl.DataFrame({"trial_id": [f"{split}{fold}_{i}" for i in range(n)], "label": labels,
                         "prediction_prob": probs, "regime": ["new_participant"] * n, "fold_index": [fold] * n,
                         "split": [split] * n, "model": ["m"] * n})


# an 81/19-like case: every probability is above 0.5, so the fixed threshold predicts one class
VAL = _frame("val", [0, 0, 1, 1, 1, 1], [0.55, 0.6, 0.7, 0.75, 0.8, 0.9])
TEST = _frame("test", [0, 1, 0, 1, 1, 1], [0.58, 0.72, 0.61, 0.85, 0.66, 0.95])


def test_threshold_chosen_on_validation_lifts_a_one_class_fold():
    chosen = choose_thresholds(VAL)
    assert chosen["threshold"][0] == pytest.approx((0.6 + 0.7) / 2)
    assert chosen["val_balanced_accuracy"][0] == 1.0
    result = evaluate(pl.concat([VAL, TEST])).filter(pl.col("regime") == "all")
    assert result["balanced_accuracy_mean"][0] == 0.5  # at 0.5: all positive
    assert result["balanced_accuracy_tuned_mean"][0] == 1.0  # at 0.65: every test trial right


def test_the_test_labels_never_choose_the_threshold():
    flipped = TEST.with_columns((1 - pl.col("label")).alias("label"))
    a = evaluate(pl.concat([VAL, TEST]))
    b = evaluate(pl.concat([VAL, flipped]))
    assert a["balanced_accuracy_tuned_mean"].to_list() != b["balanced_accuracy_tuned_mean"].to_list()
    # same threshold, so the flipped labels score exactly 1 - the tuned BA
    assert b.filter(pl.col("regime") == "all")["balanced_accuracy_tuned_mean"][0] == pytest.approx(
        1 - a.filter(pl.col("regime") == "all")["balanced_accuracy_tuned_mean"][0])
    assert choose_thresholds(pl.concat([VAL, TEST.with_columns(pl.lit("val").alias("split"))]))["threshold"][0] != \
        choose_thresholds(VAL)["threshold"][0]  # it is the validation rows that matter


def test_without_validation_rows_there_is_no_tuned_column_in_the_table():
    table = results_table(evaluate(TEST))
    assert "BA @ 0.5" in table and "BA @ val threshold" not in table
    table = results_table(evaluate(pl.concat([VAL, TEST])))
    assert "| m | BA @ val threshold | – | 100.0 † | – | 100.0 † |" in table


def _goal(labels, probs, regime="new_item", fold=0):
    n = len(labels)
    return pl.DataFrame({"trial_id": [f"t{fold}_{i}" for i in range(n)], "label": labels,
                         "prediction_prob": probs, "regime": [regime] * n, "fold_index": [fold] * n,
                         "model": ["m"] * n}, schema_overrides={"prediction_prob": pl.List(pl.Float64)})


def test_goal_selection_scores_by_hand():
    # roles: 0 lonely, 1/2 coupled. argmax: 0, 2, 1, 0, 2 ; coupled trials 1..4 pick between p1 and p2
    frame = _goal([0, 1, 1, 2, 2], [[0.6, 0.3, 0.1], [0.2, 0.3, 0.5], [0.1, 0.6, 0.3], [0.5, 0.2, 0.3],
                                    [0.1, 0.2, 0.7]])
    row = goal_selection_folds(frame).filter(pl.col("regime") == "all").row(0, named=True)
    assert row["all_accuracy"] == pytest.approx(3 / 5)  # trials 0, 2, 4
    assert row["different_spans_accuracy"] == pytest.approx(4 / 5)  # trial 3 (coupled, predicted lonely) wrong
    assert row["same_span_accuracy"] == pytest.approx(3 / 4)  # trial 1 (p2 > p1 but q2) wrong; trial 3 right
    assert row["n_same_span"] == 4
    table = goal_selection_table(evaluate_goal_selection(frame))
    assert "| chance | any | 33.3 | 55.6 | 50.0 | – |" in table
    assert "| m | All (pooled per fold) | 60.0 | 80.0 | 75.0 | 5 (1) |" in table


def test_goal_selection_chance_of_a_uniform_guess_is_5_9_for_different_spans():
    # every trial of every role, each predicted as every role once: the uniform guess
    labels = [r for r in range(3) for _ in range(3)]
    probs = [[0.8 if c == g else 0.1 for c in range(3)] for _ in range(3) for g in range(3)]
    row = goal_selection_folds(_goal(labels, probs)).filter(pl.col("regime") == "all").row(0, named=True)
    assert row["all_accuracy"] == pytest.approx(1 / 3)
    assert row["different_spans_accuracy"] == pytest.approx(5 / 9)
    assert row["same_span_accuracy"] == pytest.approx(1 / 2)
