"""readgaze.predictions is the one writer of prediction tables (every writer makes its table there, in one schema,
with the model's display name) and the one test of their kind; the regime rule and the folds' val = k / test = k + 1
are stated once, in readgaze.splits. Runs from a clone (no ../shared)."""

from __future__ import annotations

import re
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import polars as pl
import pytest

from readgaze.predictions import display_name, is_multiclass, make_predictions
from readgaze.schema import validate

REPO = Path(__file__).resolve().parents[1]
KEYS = pl.DataFrame({"trial_id": ["a", "b", "c"], "label": [1, 0, 1], "regime": ["new_item"] * 3,
                     "fold_index": [0, 0, 0]})


def test_make_predictions_writes_one_schema_for_two_classes_and_more():
    binary = make_predictions(KEYS, np.array([[0.3, 0.7], [0.9, 0.1], [0.5, 0.5]], np.float32), model="RoBERTEyeF",
                              split="test")
    assert binary["prediction_prob"].dtype == pl.Float64 and not is_multiclass(binary)
    assert binary["prediction_prob"].to_list() == pytest.approx([0.7, 0.1, 0.5])
    assert binary.schema["fold_index"] == pl.Int32 and binary.schema["label"] == pl.Int64
    assert binary.row(0, named=True)["model_display"] == "RoBERTEye-F" == display_name("RoBERTEyeF")
    validate(binary, "predictions")
    three = make_predictions(KEYS, np.full((3, 3), 1 / 3), model="knn")
    assert is_multiclass(three) and is_multiclass(three.lazy()) and three["model_display"][0] == "k nearest neighbours"
    validate(three, "predictions")
    assert make_predictions(KEYS, np.array([0.2, 0.4, 0.6]))["prediction_prob"].to_list() == [0.2, 0.4, 0.6]


def test_the_writers_make_their_tables_with_make_predictions(tmp_path):
    """The baselines, the models' RunWriter and the ensembles give the same columns and dtypes."""
    torch = pytest.importorskip("torch")
    from synthetic import write_synthetic_dataset

    from readgaze.baselines import run_baseline
    from readgaze.models.training.callbacks import prediction_frame
    from readgaze.models.training.ensemble import _frame
    from readgaze.splits import assign_fold, make_splits

    trials = pl.read_parquet(write_synthetic_dataset(tmp_path / "ds", n_participants=9, n_items=9, n_words=12)
                             / "trials.parquet")
    assignment = assign_fold(trials, make_splits(trials, n_folds=3, seed=0), 0).select(
        "trial_id", "fold_index", "split", "regime")
    baseline = run_baseline(trials, assignment, "reading_goal", "majority")
    datamodule = SimpleNamespace(trials=pl.DataFrame({"trial_id": ["y", "x"], "fold_index": [0, 0],
                                                      "participant_id": ["p", "q"], "item_id": ["i", "i"]}))
    model = prediction_frame({"logits": torch.zeros(2, 2), "label": torch.tensor([0, 1]),
                              "regime": torch.tensor([1, 2]), "trial_id": ["x", "y"]}, datamodule, "test", "BEyeLSTM")
    ensemble = _frame(KEYS, np.array([0.1, 0.2, 0.3]))
    for frame in (baseline, model, ensemble):
        validate(frame, "predictions")
        assert frame.schema["prediction_prob"] == pl.Float64
    assert baseline["model_display"].unique().to_list() == ["majority class"]
    assert model["model_display"].to_list() == ["BEyeLSTM"] * 2 and model["prediction_prob"].to_list() == [0.5, 0.5]
    assert model["participant_id"].to_list() == ["q", "p"]  # joined in the logits' order


def test_no_module_but_readgaze_predictions_tests_a_tables_kind_by_hand():
    pattern = re.compile(r"isinstance\([^)]*prediction_prob[^)]*pl\.List\)")
    found = [f"{p.relative_to(REPO)}:{i}" for part in ("readgaze", "models", "data_prep")
             for p in sorted((REPO / part).rglob("*.py")) if p.name != "predictions.py"
             for i, line in enumerate(p.read_text().splitlines(), 1) if pattern.search(line)]
    assert not found, f"use readgaze.predictions.is_multiclass: {found}"


def test_the_regime_rule_is_stated_once():
    from readgaze.splits.regimes import fold_roles, regime_expr

    flags = pl.DataFrame({"p": [True, True, False, False], "i": [True, False, True, False]})
    assert flags.select(regime_expr(pl.col("p"), pl.col("i")))["literal"].to_list() == [
        "new_item_participant", "new_participant", "new_item", "seen"]
    assert [fold_roles(k, 4) for k in (0, 3)] == [(0, 1), (3, 0)]
