"""Regression end to end for the neural models (issue 37): a reader-level score planted in simulated readers is
learnt by BEyeLSTM through ``readgaze cv`` below the chance row's RMSE, the run writes regression metrics, paired
tests and the predicted-vs-true figure, and a fold's bundle predicts the same values through ``readgaze predict``.

The planted target (:func:`synthetic.add_reader_skill`): each reader's ``reading_comprehension_skill`` is
5 + 1.5 z + N(0, 0.2), z the reader's standardised mean log reading speed; 2 of the 30 readers have no score (CopCo
has such readers), so the task drops their trials.
"""

from __future__ import annotations

import json
import math

import numpy as np
import polars as pl
import pytest
import torch
from synthetic import add_reader_skill, write_synthetic_dataset

from readgaze.cli import main
from readgaze.errors import ConfigError, LeakageError
from readgaze.models.ahn_cnn import AhnCNN
from readgaze.models.data import ReadingDataModule
from readgaze.models.training.bundle import load_model
from readgaze.models.training.cv import main as cv_main
from readgaze.predictions import is_regression

pytestmark = pytest.mark.usefixtures("one_torch_thread")
TASK = "reading_comprehension_skill"
QUIET = ["--trainer.enable_progress_bar", "false", "--trainer.enable_model_summary", "false"]


@pytest.fixture(scope="module")
def skill_dataset(tmp_path_factory):
    path = write_synthetic_dataset(tmp_path_factory.mktemp("skill"), n_participants=30, n_items=6, n_words=20)
    readers = add_reader_skill(path, unscored=2)
    return path, readers


def test_the_datamodule_gives_float_labels_and_the_training_mean_and_std(skill_dataset):
    path, readers = skill_dataset
    datamodule = ReadingDataModule(str(path), task=TASK, n_folds=5, split_unit="participant_item", batch_size=8)
    datamodule.setup("fit")
    assert (datamodule.task_kind, datamodule.num_classes) == ("regression", 1)
    assert datamodule.trials["label"].dtype == pl.Float64
    assert datamodule.trials.height == 28 * 6 - datamodule.trials.filter(pl.col("split").is_null()).height
    train = datamodule.trials.filter(pl.col("split") == "train").join(readers, on="participant_id")
    mean, std = datamodule.label_stats
    assert mean == pytest.approx(train["reading_comprehension_skill"].mean(), abs=1e-12)
    assert std == pytest.approx(train["reading_comprehension_skill"].std(ddof=0), abs=1e-12)
    batch = next(iter(datamodule.train_dataloader()))
    assert batch.label.dtype == torch.float32
    expected = dict(zip(readers["participant_id"], readers["reading_comprehension_skill"]))
    trial_reader = dict(zip(datamodule.trials["trial_id"], datamodule.trials["participant_id"]))
    np.testing.assert_allclose(batch.label.numpy(), [expected[trial_reader[t]] for t in batch.trial_id], rtol=1e-6)
    with pytest.raises(ConfigError, match="regression"):
        datamodule.class_counts  # noqa: B018 (a property that must refuse)


def test_missing_label_keeps_the_unscored_readers_at_the_value_and_counts_them(skill_dataset, tmp_path):
    """EyeBench's CopCo_RCS setting: the 2 unscored readers' 12 trials stay, labelled -1.0, counted; built before the
    default datamodule on the same dataset, so a shared array-cache entry would show in the default's trials."""
    path, readers = skill_dataset
    unscored = readers.filter(pl.col("reading_comprehension_skill").is_null())["participant_id"].to_list()
    assert len(unscored) == 2
    filled = ReadingDataModule(str(path), task=TASK, n_folds=5, split_unit="participant_item", batch_size=200,
                               missing_label=-1.0)
    filled.setup("fit")
    default = ReadingDataModule(str(path), task=TASK, n_folds=5, split_unit="participant_item", batch_size=200)
    default.setup("fit")
    theirs = filled.trials.filter(pl.col("participant_id").is_in(unscored))
    assert theirs.height == 12 and theirs["label"].to_list() == [-1.0] * 12
    reason = f"no {TASK} label, given -1.0 (data.missing_label)"
    assert filled.qc.total(table="trials", reason=reason, action="changed") == 12
    assert filled.qc.total(table="participants", reason=reason, action="changed") == 2
    assert filled.qc.total(reason=f"no {TASK} label") == 0  # nothing dropped
    assert filled.trials.height == default.trials.height + 12
    # the default is unchanged: the unscored readers' trials dropped and counted
    assert default.missing_label is None
    assert default.trials.filter(pl.col("participant_id").is_in(unscored)).height == 0
    assert default.qc.total(reason=f"no {TASK} label") == 12
    assert default.qc.total(reason=reason, action=None) == 0
    # the value enters the training mean and the batches (training split, if the fold trains on them)
    train = filled.trials.filter(pl.col("split") == "train")
    assert filled.label_stats[0] == pytest.approx(train["label"].mean(), abs=1e-12)
    labels = torch.cat([b.label for split in ("train", "val", "test")
                        for b in filled._loader(split)]).numpy()
    assert labels.size == filled.trials.height and int((labels == -1.0).sum()) == 12
    record = json.loads(filled.write_qc(tmp_path).read_text())
    assert record["missing_label"] == -1.0
    assert {(r["table"], r["count"]) for r in record["records"] if r["reason"] == reason} == {
        ("trials", 12), ("participants", 2)}


def test_missing_label_is_refused_for_a_classification_task_and_a_non_number(skill_dataset):
    path, _ = skill_dataset
    with pytest.raises(ConfigError, match=r"data\.missing_label: set to -1\.0 for task 'dyslexia', a "
                                          r"classification task.*only for a regression task"):
        ReadingDataModule(str(path), task="dyslexia", missing_label=-1.0)
    for bad in (float("nan"), "low", True):
        with pytest.raises(ConfigError, match=r"data\.missing_label: got .*expected a finite number"):
            ReadingDataModule(str(path), task=TASK, missing_label=bad)
    assert ReadingDataModule(str(path), task="dyslexia", missing_label=None).missing_label is None


def test_a_reader_in_train_and_a_new_reader_regime_is_refused(skill_dataset, monkeypatch):
    path, _ = skill_dataset
    datamodule = ReadingDataModule(str(path), task=TASK, n_folds=5, split_unit="participant_item")
    real = datamodule._assignment

    def leaking(trials):  # one trial of a new-participant test reader moved to training
        assigned = real(trials)
        victim = assigned.filter(pl.col("regime") == "new_participant")["trial_id"][0]
        reader = trials.filter(pl.col("trial_id") == victim)["participant_id"][0]
        other = trials.filter((pl.col("participant_id") == reader) & (pl.col("trial_id") != victim))["trial_id"][0]
        return assigned.with_columns(pl.when(pl.col("trial_id") == other).then(pl.lit("train"))
                                     .otherwise(pl.col("split")).alias("split"))

    monkeypatch.setattr(datamodule, "_assignment", leaking)
    with pytest.raises(LeakageError, match="reading_comprehension_skill|label"):
        datamodule.setup("fit")


def test_the_loss_is_mse_on_the_standardised_target_and_values_are_destandardised(skill_dataset):
    path, _ = skill_dataset
    datamodule = ReadingDataModule(str(path), task=TASK, n_folds=5, split_unit="participant_item", batch_size=8)
    datamodule.setup("fit")
    torch.manual_seed(0)
    model = AhnCNN(num_classes=1, task_kind="regression")
    model.set_target_scale(4.0, 2.0)
    batch = next(iter(datamodule.train_dataloader()))
    output = model(batch)
    assert output.shape == (len(batch), 1)
    expected = torch.mean((output[:, 0] - (batch.label - 4.0) / 2.0) ** 2)
    torch.testing.assert_close(model.loss(output, batch.label), expected)
    torch.testing.assert_close(model.predicted_value(output), output[:, 0].double() * 2.0 + 4.0)
    checkpoint = {"hyper_parameters": {}}  # the scale travels with the weights (the checkpoint)
    model.on_save_checkpoint(checkpoint)
    assert checkpoint["regression_target"] == {"mean": 4.0, "std": 2.0}
    loaded = AhnCNN(num_classes=1, task_kind="regression")
    loaded.on_load_checkpoint(checkpoint)
    assert (loaded.target_mean, loaded.target_std) == (4.0, 2.0)
    with pytest.raises(ConfigError, match="regression_target"):
        loaded.on_load_checkpoint({"state_dict": {}})
    with pytest.raises(ConfigError, match="num_classes"):
        AhnCNN(num_classes=2, task_kind="regression")


@pytest.fixture(scope="module")
def cv_run(skill_dataset, tmp_path_factory):
    """``readgaze cv`` of BEyeLSTM (readgaze's trial features, tiny recipe, 8 epochs) on fold 0 of 5, with the
    chance and reading-speed regressors: one fold trained, validated, tested and bundled, 40-90 s on the shared
    2-core machine (the tests that use it are marked slow)."""
    path, _ = skill_dataset
    out = tmp_path_factory.mktemp("cv")
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        code = cv_main(["cv", "-c", "beyelstm", "--data.path", str(path), "--data.task", TASK, "--out", str(out),
                        "--run", "skill", "--folds", "0", "--data.n_folds", "5", "--data.trial_feature_set",
                        "readgaze", "--data.batch_size", "16", "--model.init_args.learning_rate", "3e-3",
                        "--trainer.max_epochs", "8", "--baselines", "chance", "reading_speed", *QUIET])
    finally:
        torch.set_num_threads(threads)
    assert code == 0
    return path, out / "skill"


@pytest.mark.slow
@pytest.mark.learns
def test_cv_learns_the_planted_reader_score_below_chance_and_writes_regression_metrics(cv_run):
    _, run = cv_run
    predictions = pl.read_parquet(run / "predictions.parquet")
    assert is_regression(predictions)
    assert predictions.schema["label"] == pl.Float64 and predictions.schema["prediction_value"] == pl.Float64
    assert set(predictions["model"].unique()) == {"BEyeLSTM", "chance_mean", "reading_speed_linear_regression"}
    results = pl.read_csv(run / "results.csv")
    assert {"rmse_mean", "mae_mean", "r2_mean"} <= set(results.columns)
    rmse = {(r["model"], r["regime"]): r["rmse_mean"] for r in results.iter_rows(named=True)}
    for regime in ("all", "new_participant"):
        assert rmse[("BEyeLSTM", regime)] < 0.75 * rmse[("chance_mean", regime)], (regime, rmse)
    # the table's number is the RMSE of the written predictions
    model = predictions.filter(pl.col("model") == "BEyeLSTM")
    assert rmse[("BEyeLSTM", "all")] == pytest.approx(
        math.sqrt(((model["label"] - model["prediction_value"]) ** 2).mean()), rel=1e-6)
    chance = predictions.filter(pl.col("model") == "chance_mean")
    assert chance["prediction_value"].n_unique() == 1  # the training mean, one number per fold
    markdown = (run / "results.md").read_text()
    assert "| BEyeLSTM | RMSE |" in markdown and "| chance_mean | R² |" in markdown
    assert "Paired comparison (RMSE, test)" in markdown and "whole readers" in markdown
    paired = pl.read_csv(run / "paired.csv")
    assert set(paired["other"]) == {"chance_mean", "reading_speed_linear_regression"}
    difference = paired.filter((pl.col("other") == "chance_mean") & (pl.col("regime") == "all"))["difference_mean"]
    assert difference[0] == pytest.approx(rmse[("BEyeLSTM", "all")] - rmse[("chance_mean", "all")], rel=1e-6)
    assert (run / "regression.png").stat().st_size > 10_000 and not (run / "roc.png").exists()
    per_fold = pl.read_csv(run / "results_per_fold.csv")
    assert set(per_fold["regime"]) == {"new_item", "new_participant", "new_item_participant", "all"}
    # the checkpoint chosen on loss/val is the epoch of the lowest validation RMSE: loss/val = (rmse_all / std)²
    metrics = pl.read_csv(next((run / "fold_0").rglob("metrics.csv"))).filter(pl.col("loss/val").is_not_null())
    std = json.loads(next((run / "fold_0").rglob("bundle.json")).read_text())["target"]["std"]
    np.testing.assert_allclose(metrics["loss/val"], (metrics["rmse_all/val"] / std) ** 2, rtol=1e-4)


@pytest.mark.slow
def test_a_fold_bundle_predicts_the_fold_values_and_its_card_shows_chance(cv_run, tmp_path, capsys):
    path, run = cv_run
    bundle_dir = next((run / "fold_0").rglob("bundle.json")).parent
    spec = json.loads((bundle_dir / "bundle.json").read_text())
    assert spec["task_kind"] == "regression" and spec["threshold"] is None and spec["classes"] == []
    card = (bundle_dir / "model_card.md").read_text()
    assert "a regression" in card and f"Chance: the training mean {spec['target']['mean']:.4g}" in card
    test_scores = {r["regime"]: r for r in spec["scores"]["test"]}
    assert test_scores["all"]["rmse"] < test_scores["all"]["chance_rmse"]
    assert "RMSE" in card and "chance" in card
    bundle = load_model(bundle_dir)
    frame = bundle.predict(path)
    fold = pl.read_parquet(run / "fold_0" / "predictions_test.parquet")
    joined = fold.join(frame.select("trial_id", pl.col("prediction_value").alias("again")), on="trial_id")
    assert joined.height == fold.height
    np.testing.assert_allclose(joined["again"], joined["prediction_value"], rtol=1e-5, atol=1e-5)
    out = tmp_path / "new.parquet"
    assert main(["predict", str(bundle_dir), str(path), "--out", str(out)]) == 0
    written = pl.read_parquet(out)
    assert written.schema["prediction_value"] == pl.Float64 and "prediction_prob" not in written.columns
    scores = pl.read_csv(tmp_path / "new_scores.csv")
    assert {"rmse", "mae", "r2", "chance_rmse"} <= set(scores.columns)
    assert scores.filter(pl.col("regime") == "all")["chance_rmse"][0] == pytest.approx(
        math.sqrt(((written["label"] - spec["target"]["mean"]) ** 2).drop_nulls().mean()), rel=1e-9)
    err = capsys.readouterr().err
    assert "predicted values:" in err and "chance" in err


@pytest.mark.slow
def test_fit_on_a_regression_task_prints_rmse_and_writes_a_regression_bundle(skill_dataset, tmp_path, capsys):
    path, _ = skill_dataset
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        code = main(["fit", "-c", "ahn_cnn", "--data.path", str(path), "--data.task", TASK, "--data.n_folds", "5",
                     "--data.split_unit", "participant_item", "--trainer.max_epochs", "2",
                     "--trainer.default_root_dir", str(tmp_path), *QUIET])
    finally:
        torch.set_num_threads(threads)
    assert code == 0
    err = capsys.readouterr().err
    assert "val RMSE" in err and "test RMSE" in err and "AUROC" not in err
    bundle = json.loads(next(tmp_path.rglob("bundle.json")).read_text())
    assert bundle["task_kind"] == "regression" and bundle["model"]["hyperparameters"]["task_kind"] == "regression"
    test = pl.read_parquet(next(tmp_path.rglob("predictions_test.parquet")))
    everything = next(r for r in bundle["scores"]["test"] if r["regime"] == "all")
    assert everything["rmse"] == pytest.approx(
        math.sqrt(((test["label"] - test["prediction_value"]) ** 2).mean()), rel=1e-9)
