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


def _two_models(seed: int = 0) -> pl.DataFrame:
    """3 folds x 3 regimes x 30 trials of 6 readers; 'close' errs by N(0, 0.3), 'far' by N(0, 1.5)."""
    rng = np.random.default_rng(seed)
    n = 3 * 3 * 30
    base = pl.DataFrame({"trial_id": [f"t{i}" for i in range(n)], "fold_index": np.repeat([0, 1, 2], 90),
                         "regime": np.tile(np.repeat(["new_item", "new_participant", "new_item_participant"], 30), 3),
                         "participant_id": [f"p{i % 6}" for i in range(n)], "label": rng.normal(5, 2, n)})
    return pl.concat([base.with_columns(pl.lit(name).alias("model"),
                                        (pl.col("label") + rng.normal(0, sd, n)).alias("prediction_value"))
                      for name, sd in (("close", 0.3), ("far", 1.5))])


def test_paired_regression_comparison():
    from readgaze.metrics_regression import paired_regression_comparison

    frame = _two_models()
    result = paired_regression_comparison(frame, "close", "far", n_permutations=500)
    assert result["regime"].to_list() == ["new_item", "new_participant", "new_item_participant", "all"]
    row = result.filter(pl.col("regime") == "all").row(0, named=True)
    folds = evaluate_regression_folds(frame).filter(pl.col("regime") == "all")
    close = folds.filter(pl.col("model") == "close")["rmse"].to_numpy()
    far = folds.filter(pl.col("model") == "far")["rmse"].to_numpy()
    assert row["difference_mean"] == pytest.approx((close - far).mean()) and row["difference_mean"] < -0.8
    assert row["n_folds"] == 3 and row["n_trials"] == 270
    assert row["permutation_p"] == pytest.approx(1 / 501) and row["t_test_p"] < 0.01
    same = paired_regression_comparison(frame, "close", "close", n_permutations=100)
    assert same["difference_mean"].to_list() == [0.0] * 4 and same["t_test_p"].to_list() == [1.0] * 4
    # swapping whole readers: one fold and one reader-group per model leaves few swap patterns, so p stays large
    one = frame.filter(pl.col("fold_index") == 0).with_columns(pl.lit("r").alias("participant_id"))
    grouped = paired_regression_comparison(one, "close", "far", group="participant_id", n_permutations=200)
    assert grouped.filter(pl.col("regime") == "all")["permutation_p"][0] > 0.3
    assert grouped["t_test_p"].is_null().all()  # one fold: no t-test (readgaze.metrics.T_TEST_MIN_FOLDS)
    assert paired_regression_comparison(one, "close", "far", n_permutations=200).filter(
        pl.col("regime") == "all")["permutation_p"][0] < 0.01


def test_paired_regression_errors():
    from readgaze.errors import ConfigError
    from readgaze.metrics_regression import paired_regression_comparison

    frame = _two_models()
    with pytest.raises(ConfigError, match="metric 'r2'"):
        paired_regression_comparison(frame, "close", "far", metric="r2")
    with pytest.raises(ConfigError, match="group column 'reader'"):
        paired_regression_comparison(frame, "close", "far", group="reader")
    with pytest.raises(DataError, match="share no test trial"):
        paired_regression_comparison(frame, "close", "nobody")
