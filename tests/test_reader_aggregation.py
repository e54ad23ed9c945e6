"""Reader-level aggregation: each trial's prediction becomes its reader's mean within (model, fold, split, regime)."""

import polars as pl
import pytest

from readgaze.errors import ConfigError, SchemaError
from readgaze.metrics import evaluate
from readgaze.reader_aggregation import aggregate_by_reader


def _frame() -> pl.DataFrame:
    return pl.DataFrame({
        "model": ["rf"] * 6, "trial_id": list("abcdef"), "fold_index": [0] * 6, "split": ["test"] * 6,
        "regime": ["new_participant"] * 4 + ["new_item"] * 2, "participant_id": ["p1", "p1", "p2", "p2", "p1", "p2"],
        "label": [1, 1, 0, 0, 1, 0], "prediction_prob": [0.9, 0.2, 0.4, 0.3, 0.6, 0.7]})


def test_means_per_reader_and_cell():
    out = aggregate_by_reader(_frame())
    assert out["trial_id"].to_list() == list("abcdef") and out["model"].unique().to_list() == ["rf_reader_mean"]
    assert out["prediction_prob"].to_list() == pytest.approx([0.55, 0.55, 0.35, 0.35, 0.6, 0.7])  # regimes apart
    assert out["n_reader_trials"].to_list() == [2, 2, 2, 2, 1, 1]
    # trial b alone ranks below both negative trials; its reader's mean ranks above them
    before = evaluate(_frame()).filter(pl.col("regime") == "new_participant")["auroc_mean"][0]
    after = evaluate(out).filter(pl.col("regime") == "new_participant")["auroc_mean"][0]
    assert (before, after) == (0.5, 1.0)


def test_regression_column_and_errors():
    frame = _frame().rename({"prediction_prob": "prediction_value"})
    assert aggregate_by_reader(frame)["prediction_value"].to_list() == pytest.approx([0.55, 0.55, 0.35, 0.35, 0.6, 0.7])
    with pytest.raises(SchemaError, match=r"lack column\(s\) \['participant_id'\]"):
        aggregate_by_reader(_frame().drop("participant_id"))
    multi = _frame().with_columns(pl.col("prediction_prob").map_elements(lambda p: [1 - p, p],
                                                                           return_dtype=pl.List(pl.Float64)))
    with pytest.raises(ConfigError, match="class-probability lists"):
        aggregate_by_reader(multi)
