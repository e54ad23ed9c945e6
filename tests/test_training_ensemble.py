"""Ensembles of cv runs: fit per fold on validation predictions, applied to test; the test labels never reach the
fit."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from readgaze.errors import ConfigError
from readgaze.models.training.ensemble import LogisticEnsemble, MajorityVote, fit_predict_fold, main, run_ensembles

REGIMES = ("new_item", "new_participant", "new_item_participant")


def _run(root: Path, model: str, noise: float, seed: int, flip: bool = False, classes: int = 2) -> Path:
    """A fake cv run folder: 2 folds x (60 val + 60 test) trials; P(class 1) = label + noise."""
    rng = np.random.default_rng(seed)
    label_rng = np.random.default_rng(0)  # same trials and labels in every run
    rows = []
    for fold in (0, 1):
        for split in ("val", "test"):
            labels = label_rng.integers(0, classes, 60)
            for i, y in enumerate(labels):
                if classes == 2:
                    signal = (1 - y if flip else y) - 0.5
                    prob = float(1 / (1 + np.exp(-(4 * signal + rng.normal(0, noise)))))
                else:
                    logits = rng.normal(0, noise, classes)
                    logits[y] += 2.0
                    prob = list(np.exp(logits) / np.exp(logits).sum())
                rows.append({"trial_id": f"{split}{fold}_{i}", "fold_index": fold, "split": split, "label": int(y),
                             "regime": REGIMES[i % 3], "participant_id": f"p{i % 7}", "item_id": f"i{i % 5}",
                             "model": model, "prediction_prob": prob})
    run = root / model
    run.mkdir(parents=True)
    pl.DataFrame(rows).write_parquet(run / "predictions.parquet")
    (run / "run.json").write_text(json.dumps({"model": model}))
    return run


@pytest.fixture
def runs(tmp_path) -> list[Path]:
    return [_run(tmp_path, "A", 3.0, 1), _run(tmp_path, "B", 3.0, 2, flip=True), _run(tmp_path, "C", 6.0, 3)]


def _with_labels(runs: list[Path], tmp_path: Path, split: str, how) -> list[Path]:
    changed = []
    for run in runs:
        out = tmp_path / f"{split}_changed" / run.name
        out.mkdir(parents=True)
        frame = pl.read_parquet(run / "predictions.parquet")
        frame.with_columns(pl.when(pl.col("split") == split).then(how(pl.col("label"))).otherwise(pl.col("label"))
                           .alias("label")).write_parquet(out / "predictions.parquet")
        (out / "run.json").write_text((run / "run.json").read_text())
        changed.append(out)
    return changed


def _ensemble_test_probs(path: Path) -> pl.DataFrame:
    frame = pl.read_parquet(path / "predictions.parquet")
    return (frame.filter(pl.col("model").is_in(["MajorityVote", "LogisticEnsemble"]) & (pl.col("split") == "test"))
            .sort("model", "fold_index", "trial_id").select("model", "fold_index", "trial_id", "prediction_prob"))


def test_test_labels_never_reach_the_fit(runs, tmp_path):
    run_ensembles(runs, tmp_path / "original")
    flipped = _with_labels(runs, tmp_path, "test", lambda label: 1 - label)
    run_ensembles(flipped, tmp_path / "flipped")
    # flipping every test label leaves every ensemble test prediction unchanged ...
    assert _ensemble_test_probs(tmp_path / "original").equals(_ensemble_test_probs(tmp_path / "flipped"))
    # ... while the validation labels do drive the fit
    shuffled = _with_labels(runs, tmp_path, "val", lambda label: label.shuffle(seed=5))
    run_ensembles(shuffled, tmp_path / "shuffled")
    assert not _ensemble_test_probs(tmp_path / "original").equals(_ensemble_test_probs(tmp_path / "shuffled"))


def test_fit_predict_fold_gets_no_test_label(runs):
    frame = pl.concat([pl.read_parquet(r / "predictions.parquet") for r in runs]).filter(pl.col("fold_index") == 0)
    val, test = frame.filter(pl.col("split") == "val"), frame.filter(pl.col("split") == "test")
    out = fit_predict_fold(LogisticEnsemble, val, test.with_columns(pl.lit(None, pl.Int64).alias("label")),
                           ["A", "B", "C"])
    assert out["test"].height == 60 and "label" not in out["test"].columns
    assert sorted(out["test"]["trial_id"]) == sorted(test["trial_id"].unique())


def test_ensembles_score_out_of_sample_and_the_stacker_uses_a_flipped_member(runs, tmp_path):
    paths = run_ensembles(runs, tmp_path / "ens")
    results = pl.read_csv(paths["csv"]).filter(pl.col("regime") == "all")
    score = dict(zip(results["model"], results["balanced_accuracy_mean"]))
    assert set(score) == {"A", "B", "C", "MajorityVote", "LogisticEnsemble"}
    assert score["B"] < 0.3  # anti-correlated member
    assert score["LogisticEnsemble"] > max(score["A"], 0.75)  # learns B's sign on validation, adds it
    assert set(pl.read_parquet(paths["predictions"])["split"]) == {"test"}
    val = pl.read_parquet(paths["predictions"].parent / "predictions_val.parquet").filter(
        pl.col("model") == "LogisticEnsemble")
    assert val.height == 120  # cross-fitted validation predictions, for the validation threshold
    assert "BA @ val threshold" in paths["markdown"].read_text()


def test_majority_vote_uses_each_members_validation_threshold():
    y = np.array([0, 0, 1, 1])
    x = np.array([[0.6, 0.1], [0.62, 0.2], [0.8, 0.9], [0.9, 0.8]])  # member 0 never below 0.5
    vote = MajorityVote().fit(x, y)
    assert vote.thresholds[0] > 0.62 and vote.thresholds[0] < 0.8
    np.testing.assert_allclose(vote.predict_proba(x), [0.0, 0.0, 1.0, 1.0])


def test_multiclass_members(tmp_path):
    runs = [_run(tmp_path, name, noise, seed, classes=3) for name, noise, seed in (("A", 1.0, 1), ("B", 2.0, 2))]
    paths = run_ensembles(runs, tmp_path / "ens")
    predictions = pl.read_parquet(paths["predictions"])
    assert isinstance(predictions.schema["prediction_prob"], pl.List)
    assert "## Goal selection" in paths["markdown"].read_text()


def test_cli_writes_the_cv_format_and_needs_two_members(runs, tmp_path, capsys):
    out = tmp_path / "cli"
    assert main(["ensemble", *map(str, runs), "--out", str(out)]) == 0
    table = pl.read_csv(out / "results.csv")
    assert {"balanced_accuracy_mean", "balanced_accuracy_tuned_mean", "auroc_mean", "regime"} <= set(table.columns)
    assert "LogisticEnsemble" in capsys.readouterr().out
    with pytest.raises(ConfigError, match="at least two"):
        run_ensembles(runs[:1], tmp_path / "one")
    assert main(["ensemble", str(runs[0]), "--out", str(tmp_path / "x")]) == 2


def test_the_ensembles_validation_rows_are_cross_fitted_out_of_sample(runs):
    """A validation trial's own ensemble prediction does not move when its own label changes (the notebook's
    in-sample validation ensemble did)."""
    frame = pl.concat([pl.read_parquet(r / "predictions.parquet") for r in runs]).filter(pl.col("fold_index") == 0)
    val, test = frame.filter(pl.col("split") == "val"), frame.filter(pl.col("split") == "test")
    trial = val["trial_id"].sort()[0]
    flipped = val.with_columns(pl.when(pl.col("trial_id") == trial).then(1 - pl.col("label"))
                               .otherwise(pl.col("label")).alias("label"))
    for ensemble in (LogisticEnsemble, MajorityVote):
        before = fit_predict_fold(ensemble, val, test, ["A", "B", "C"])["val"]
        after = fit_predict_fold(ensemble, flipped, test, ["A", "B", "C"])["val"]
        own = lambda f: f.filter(pl.col("trial_id") == trial)["prediction_prob"][0]  # noqa: E731
        assert own(before) == own(after), ensemble.name
