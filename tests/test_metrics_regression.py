"""Regression metrics per regime and fold, mean ± SEM over folds, against values computed by hand."""

import math

import numpy as np
import polars as pl
import pytest

from readgaze.errors import DataError, SchemaError
from readgaze.metrics_regression import (
    evaluate_regression,
    evaluate_regression_folds,
    regression_results_table,
    write_regression_results,
)


def _predictions() -> pl.DataFrame:
    """Two folds, two regimes; fold 1's new_participant cell has one reader (all labels 5.0)."""
    return pl.DataFrame({
        "trial_id": ["a", "b", "c", "d", "e", "f", "g", "h"],
        "fold_index": [0, 0, 0, 0, 1, 1, 1, 1],
        "regime": ["new_item", "new_item", "new_participant", "new_participant"] * 2,
        "label": [1.0, 3.0, 2.0, 6.0, 4.0, 8.0, 5.0, 5.0],
        "prediction_value": [2.0, 2.0, 3.0, 3.0, 5.0, 5.0, 4.0, 7.0],
        "split": ["test"] * 8,
    })


def test_cells_by_hand():
    folds = evaluate_regression_folds(_predictions())
    cell = {(r["regime"], r["fold_index"]): r for r in folds.rows(named=True)}
    assert cell[("new_item", 0)]["rmse"] == pytest.approx(1.0)
    assert cell[("new_item", 0)]["r2"] == pytest.approx(0.0)  # predicting the cell mean
    assert cell[("new_participant", 0)]["rmse"] == pytest.approx(math.sqrt((1 + 9) / 2))
    assert cell[("new_participant", 0)]["r2"] == pytest.approx(1 - 10 / 8)
    assert cell[("new_item", 1)]["mae"] == pytest.approx(2.0)
    # all labels equal: R² undefined, skipped and marked
    assert cell[("new_participant", 1)]["r2"] is None and cell[("new_participant", 1)]["r2_skipped"]
    # 'all' pools the fold's trials: not the mean of the regime rows
    labels, predicted = np.array([1.0, 3.0, 2.0, 6.0]), np.array([2.0, 2.0, 3.0, 3.0])
    assert cell[("all", 0)]["rmse"] == pytest.approx(np.sqrt(np.mean((labels - predicted) ** 2)))
    assert cell[("all", 0)]["r2"] == pytest.approx(1 - 12 / np.sum((labels - labels.mean()) ** 2))
    assert folds["regime"].unique(maintain_order=True).to_list() == ["new_item", "new_participant", "all"]


def test_mean_and_sem_over_folds():
    evaluation = evaluate_regression(_predictions())
    row = evaluation.filter(pl.col("regime") == "new_item").row(0, named=True)
    values = np.array([1.0, math.sqrt((1 + 9) / 2)])  # fold 0, fold 1 RMSE
    assert row["rmse_mean"] == pytest.approx(values.mean())
    assert row["rmse_sem"] == pytest.approx(values.std(ddof=1) / math.sqrt(2))
    assert row["n_folds"] == 2 and row["n_trials"] == 4
    participant = evaluation.filter(pl.col("regime") == "new_participant").row(0, named=True)
    assert participant["r2_n_folds"] == 1 and participant["r2_folds_skipped"] == 1
    assert participant["r2_mean"] == pytest.approx(-0.25) and participant["r2_sem"] is None
    assert participant["small_sample"]


def test_table_layout_and_files(tmp_path):
    evaluation = evaluate_regression(_predictions().with_columns(pl.lit("ridge").alias("model")))
    table = regression_results_table(evaluation, unit="score points")
    lines = table.splitlines()
    assert lines[0] == ("| Model | Metric | New item | New participant | New item & participant "
                        "| All (pooled per fold) |")
    assert lines[2].startswith("| ridge | RMSE | 1.62 ± 0.62 † | ")
    assert "| ridge | trials (folds) | 4 (2) | 4 (2) | – | 8 (2) |" in lines
    assert "R² was undefined (all labels equal) and skipped in 1 fold cells." in table
    paths = write_regression_results(evaluation, tmp_path)
    assert pl.read_csv(paths["csv"]).height == evaluation.height
    assert paths["markdown"].read_text() == table.replace(" (score points)", "")


def test_bad_predictions_named():
    frame = _predictions()
    with pytest.raises(SchemaError, match=r"lack column\(s\) \['prediction_value'\]"):
        evaluate_regression(frame.drop("prediction_value"))
    broken = frame.with_columns(pl.when(pl.col("trial_id") == "c").then(float("nan"))
                                .otherwise(pl.col("prediction_value")).alias("prediction_value"))
    with pytest.raises(DataError, match=r"row 2: prediction_value nan, expected a finite number \(1 rows\)"):
        evaluate_regression(broken)
    with pytest.raises(DataError, match=r"row 0: regime 'seen'"):
        evaluate_regression(frame.with_columns(pl.when(pl.col("trial_id") == "a").then(pl.lit("seen"))
                                               .otherwise(pl.col("regime")).alias("regime")))
    with pytest.raises(DataError, match=r"trial 'a' is predicted more than once"):
        evaluate_regression(pl.concat([frame, frame.head(1)]))
    with pytest.raises(DataError, match=r"no rows to score \(split == 'test'\)"):
        evaluate_regression(frame.with_columns(pl.lit("val").alias("split")))
    with pytest.raises(SchemaError, match=r"column label: got dtype String"):
        evaluate_regression(frame.with_columns(pl.col("label").cast(pl.String)))
