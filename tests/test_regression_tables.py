"""Readers of regression prediction tables (``prediction_value``): the predicted-vs-true figure, the ensembles, the
end-of-run summaries. Hand-made tables, no training: each number is computed here from the rows."""

from __future__ import annotations

import json
import math

import numpy as np
import polars as pl
import pytest

import readgaze.plots as plots
from readgaze.errors import SchemaError
from readgaze.metrics_regression import evaluate_regression
from readgaze.models.training.ensemble import run_ensembles
from readgaze.models.training.summary import (
    constant_warnings,
    metric_table,
    regression_regime_scores,
    score_table,
)
from readgaze.predictions import make_predictions

REGIMES = ("new_item", "new_participant", "new_item_participant")


def _table(rng: np.random.Generator, model: str, noise: float, split: str = "test", labels=None) -> pl.DataFrame:
    """2 folds x 3 regimes x 12 trials; ``label`` from ``labels`` (else drawn), prediction = label + noise."""
    n = 2 * 3 * 12
    keys = pl.DataFrame({"trial_id": [f"t{i:03d}" for i in range(n)],
                         "fold_index": np.repeat([0, 1], n // 2), "regime": np.tile(np.repeat(REGIMES, 12), 2),
                         "participant_id": [f"p{i // 4}" for i in range(n)], "item_id": [f"i{i % 6}" for i in range(n)],
                         "split": split})
    labels = rng.normal(5.0, 1.5, n) if labels is None else labels
    return make_predictions(keys.with_columns(pl.Series("label", labels)),
                            value=labels + rng.normal(0.0, noise, n), model=model)


def test_plot_regression_names_each_model_with_its_table_rmse_and_draws_chance_as_a_line(tmp_path, monkeypatch):
    rng = np.random.default_rng(0)
    model = _table(rng, "ridge", 0.5)
    chance = model.with_columns(pl.col("fold_index").replace_strict({0: 4.8, 1: 5.3}, return_dtype=pl.Float64)
                                .alias("prediction_value"), pl.lit("chance_mean").alias("model"))
    frame = pl.concat([model, chance])
    figures = []
    monkeypatch.setattr(plots.plt, "close", figures.append)
    path = plots.plot_regression(frame, tmp_path / "fig" / "regression.png", task="reading_comprehension_skill")
    assert path.stat().st_size > 10_000
    rmse = {(r["model"], r["regime"]): (r["rmse_mean"], r["rmse_sem"])
            for r in evaluate_regression(frame).iter_rows(named=True)}
    axes = figures[0].axes
    assert [a.get_title().split("\n")[0] for a in axes] == ["New item", "New participant",
                                                            "New item & participant", "All regimes"]
    texts = [t.get_text() for t in axes[3].get_legend().get_texts()]
    mean, sem = rmse[("ridge", "all")]
    assert f"ridge (Mézière et al.): RMSE {mean:.2f} ± {sem:.2f}" in texts
    mean, sem = rmse[("chance_mean", "all")]
    assert texts[-1].startswith(f"chance (training mean): RMSE {mean:.2f} ± {sem:.2f}")  # the worse one last
    assert texts[-1].endswith("predicts 5.05 for every trial (dashed line)")  # (4.8 + 5.3) / 2 over equal folds
    # "chance" once (it was twice: the name and the line)
    assert texts[-1].count("chance") == 1
    horizontal = [line for line in axes[3].get_lines() if len(set(line.get_ydata())) == 1]
    assert len(horizontal) == 1 and horizontal[0].get_ydata()[0] == pytest.approx(5.05)
    assert "reading comprehension skill" in figures[0]._suptitle.get_text()
    with pytest.raises(SchemaError, match="prediction_value"):
        plots.plot_regression(frame.drop("prediction_value").with_columns(pl.lit(0.5).alias("prediction_prob")),
                              tmp_path / "x.png")


def test_regression_runs_get_mean_and_ridge_ensembles_fit_on_validation_only(tmp_path):
    rng = np.random.default_rng(1)
    runs = []
    labels = {split: rng.normal(5.0, 1.5, 72) for split in ("val", "test")}
    for name, noise in (("A", 0.4), ("B", 0.8)):
        run = tmp_path / name
        run.mkdir()
        _table(rng, name, noise, "test", labels["test"]).write_parquet(run / "predictions.parquet")
        _table(rng, name, noise, "val", labels["val"]).write_parquet(run / "predictions_val.parquet")
        (run / "run.json").write_text(json.dumps({"model": name}))
        runs.append(run)
    paths = run_ensembles(runs, tmp_path / "ensemble")
    test = pl.read_parquet(paths["predictions"])
    assert set(test["model"]) == {"A", "B", "MeanEnsemble", "RidgeEnsemble"}
    wide = (test.filter(pl.col("model").is_in(["A", "B"])).pivot("model", index=["trial_id", "label"],
                                                                 values="prediction_value"))
    mean = test.filter(pl.col("model") == "MeanEnsemble").join(wide, on="trial_id")
    np.testing.assert_allclose(mean["prediction_value"], (mean["A"] + mean["B"]) / 2, atol=1e-12)
    results = {(r["model"], r["regime"]): r["rmse_mean"] for r in pl.read_csv(paths["csv"]).iter_rows(named=True)}
    assert results[("RidgeEnsemble", "all")] < results[("B", "all")]  # stacking weighs the better member up
    assert "RMSE" in paths["markdown"].read_text()


def test_the_classification_metrics_send_a_regression_table_to_its_own():
    from readgaze.metrics import evaluate

    with pytest.raises(SchemaError, match="evaluate_regression"):
        evaluate(_table(np.random.default_rng(3), "ridge", 0.5))


def test_summaries_of_a_regression_run_give_rmse_mae_r2_and_warn_on_constant_values():
    rng = np.random.default_rng(2)
    frame = _table(rng, "BEyeLSTM", 0.5)
    scores = regression_regime_scores(frame, chance=5.0)
    everything = scores.filter(pl.col("regime") == "all").row(0, named=True)
    residual = (frame["label"] - frame["prediction_value"]).to_numpy()
    assert everything["rmse"] == pytest.approx(math.sqrt(np.mean(residual ** 2)))
    assert everything["mae"] == pytest.approx(np.mean(np.abs(residual)))
    assert everything["chance_rmse"] == pytest.approx(math.sqrt(np.mean((frame["label"].to_numpy() - 5.0) ** 2)))
    assert scores["regime"].to_list() == ["all", *REGIMES]
    text = score_table(scores)
    assert "RMSE" in text and f"{everything['chance_rmse']:.3f}" in text
    logged = {"rmse_all/val": 0.61, "mae_all/val": 0.5, "r2_all/val": 0.8, "rmse_new_item/val": 0.7}
    table = metric_table(logged, {"rmse_all/test": 0.66}, {("val", "all"): 40})
    assert "val RMSE" in table and "0.610" in table and "0.660" in table and "AUROC" not in table
    constant = frame.with_columns(pl.lit(5.1).alias("prediction_value"))
    chance = constant.with_columns(pl.lit("chance_mean").alias("model"))
    warnings = constant_warnings(pl.concat([constant, chance]))
    assert len(warnings) == 1 and "BEyeLSTM test predictions are constant" in warnings[0]
    assert "every predicted value lies in 5.100-5.100" in warnings[0]
    assert constant_warnings(frame) == []
