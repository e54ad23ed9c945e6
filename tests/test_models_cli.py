"""Every YAML config builds; ``readgaze fit`` trains and writes predictions; ``readgaze cv`` writes table and figure."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest
from synthetic import write_synthetic_dataset

from readgaze.models.base import ReadingModel
from readgaze.models.training.cli import main as cli_main
from readgaze.models.training.cli import make_cli
from readgaze.models.training.configs import find_config, list_configs
from readgaze.models.training.cv import main as cv_main

REPO = Path(__file__).resolve().parents[1]
CONFIGS = [name for name in list_configs()  # each model's YAML for each task its card lists (TASK/MODEL)
           if not name.startswith("goal_reconstruction/")]  # generators: tests/test_models_daleye.py
TINY = ["--data.text_encoder", "tiny", "--data.n_folds", "3", "--trainer.enable_progress_bar", "false",
        "--trainer.enable_model_summary", "false"]


pytestmark = pytest.mark.usefixtures("one_torch_thread")


@pytest.fixture(scope="module")
def dataset(tmp_path_factory) -> Path:
    return write_synthetic_dataset(tmp_path_factory.mktemp("tiny"), n_participants=6, n_items=6, n_words=16)


def test_there_is_a_config_per_task_and_model():
    names = set(CONFIGS)
    for task in ("reading_goal", "comprehension"):
        assert {f"{task}/{m}" for m in ("roberteye_f", "postfusion_eye", "beyelstm", "text_only")} <= names
    assert "goal_question/roberteye_f" in names


@pytest.mark.parametrize("name", CONFIGS)
def test_every_config_builds_model_and_datamodule(name, dataset, tmp_path):
    cli = make_cli(["-c", str(find_config(name)), "--data.path", str(dataset), "--trainer.default_root_dir",
                    str(tmp_path), *TINY], run=False)
    assert isinstance(cli.model, ReadingModel)
    assert cli.datamodule.task == name.split("/")[0]
    assert cli.model.num_classes == cli.datamodule.num_classes
    if hasattr(cli.model.hparams, "text_encoder") or "text_encoder" in cli.model.hparams:
        assert cli.model.hparams["text_encoder"] == "tiny"  # linked from the datamodule
    cli.datamodule.setup("fit")
    batch = next(iter(cli.datamodule.train_dataloader()))
    assert cli.model(batch).shape == (len(batch), cli.datamodule.num_classes)


def test_fit_trains_validates_and_writes_predictions(dataset, tmp_path):
    config = REPO / "experiments/configs/reading_goal/roberteye_f.yaml"
    code = cli_main(["fit", "-c", str(config), "--data.path", str(dataset), "--trainer.max_epochs", "2",
                     "--trainer.default_root_dir", str(tmp_path), "--model.init_args.learning_rate", "1e-3", *TINY])
    assert code == 0
    run = tmp_path / "csv" / "version_0"
    metrics = pl.read_csv(run / "metrics.csv")
    assert metrics["loss/val"].drop_nulls().len() == 2
    assert {"balanced_accuracy_new_participant/val", "auroc_all/val"} <= set(metrics.columns)
    predictions = pl.read_parquet(run / "predictions_val.parquet")
    assert {"label", "prediction_prob", "regime", "fold_index", "participant_id", "item_id", "trial_id"} <= set(
        predictions.columns)
    assert predictions["regime"].is_in(["new_item", "new_participant", "new_item_participant"]).all()
    assert predictions["prediction_prob"].is_between(0, 1).all() and predictions["participant_id"].null_count() == 0
    assert (tmp_path / "tensorboard").is_dir() and (run / "checkpoints" / "best.ckpt").is_file()

    for command in ("test", "predict"):
        out = tmp_path / command
        assert cli_main([command, "-c", str(config), "--data.path", str(dataset), "--ckpt_path",
                         str(run / "checkpoints" / "best.ckpt"), "--trainer.default_root_dir", str(out), *TINY]) == 0
        written = pl.read_parquet(out / "csv" / "version_0" / f"predictions_{command}.parquet")
        assert written["split"].unique().to_list() == [command]
        assert set(written["regime"]) == {"new_item", "new_participant", "new_item_participant"}


def test_goal_question_writes_class_probabilities_that_evaluate_reads(dataset, tmp_path):
    from readgaze.metrics import evaluate

    config = REPO / "experiments/configs/goal_question/roberteye_f.yaml"
    assert cli_main(["fit", "-c", str(config), "--data.path", str(dataset), "--trainer.max_epochs", "1",
                     "--trainer.default_root_dir", str(tmp_path), *TINY]) == 0
    predictions = pl.read_parquet(tmp_path / "csv" / "version_0" / "predictions_val.parquet")
    probs = predictions["prediction_prob"].to_list()
    assert all(len(p) == 3 and abs(sum(p) - 1) < 1e-5 for p in probs)
    assert predictions["label"].is_in([0, 1, 2]).all()
    assert set(evaluate(predictions, split="val")["regime"]) >= {"all"}


def test_fit_reports_a_missing_dataset_file(tmp_path, capsys):
    config = REPO / "experiments/configs/reading_goal/beyelstm.yaml"
    code = cli_main(["fit", "-c", str(config), "--data.path", str(tmp_path), "--trainer.max_epochs", "1",
                     "--trainer.default_root_dir", str(tmp_path), *TINY])
    assert code == 2
    assert "not a dataset folder (no trials.parquet); make one with readgaze prep" in capsys.readouterr().err


@pytest.mark.slow
def test_cv_writes_predictions_table_and_roc_per_regime(dataset, tmp_path):
    config = REPO / "experiments/configs/reading_goal/beyelstm.yaml"
    code = cv_main(["cv", "-c", str(config), "--data.path", str(dataset), "--out", str(tmp_path), "--run", "r",
                    "--folds", "0", "1", "--workers", "2", "--threads", "1", "--trainer.max_epochs", "2",
                    "--baselines", "majority", "reading_speed", *TINY])
    assert code == 0
    run = tmp_path / "r"
    predictions = pl.read_parquet(run / "predictions.parquet")
    assert set(predictions["model"]) == {"BEyeLSTM", "majority", "reading_speed_logistic_regression"}
    assert sorted(predictions["fold_index"].unique()) == [0, 1]
    # within a regime, every trial is a test trial in at most one fold (REFERENCE.md §3.2)
    per_model = predictions.group_by("model", "regime").agg(pl.col("trial_id").n_unique(), pl.len())
    assert (per_model["trial_id"] == per_model["len"]).all()
    table = pl.read_csv(run / "results.csv")
    assert set(table["regime"]) == {"new_item", "new_participant", "new_item_participant", "all"}
    assert "New participant" in (run / "results.md").read_text()
    assert (run / "roc.png").stat().st_size > 10_000


@pytest.mark.slow
def test_fit_on_the_prepared_onestop_sample(small_data, tmp_path):
    from readgaze.cli import main as readgaze_main

    sample = small_data / "onestop_sample"
    prepared = tmp_path / "onestop"
    assert readgaze_main(["prep", "onestop", "--fixation-report", str(sample / "fixations.csv"),
                          "--ia-report", str(sample / "ia.csv"), "--out", str(prepared)]) == 0
    config = REPO / "experiments/configs/reading_goal/roberteye_f.yaml"
    # 2 participants x 2 articles cannot be split by participant and item: the trial split is a smoke run.
    code = cli_main(["fit", "-c", str(config), "--data.path", str(prepared), "--data.split_unit", "trial",
                     "--trainer.max_epochs", "2", "--trainer.default_root_dir", str(tmp_path / "run"), *TINY])
    assert code == 0
    predictions = pl.read_parquet(tmp_path / "run" / "csv" / "version_0" / "predictions_val.parquet")
    assert predictions.height == 6 and predictions["label"].to_list() == [1] * 6  # all information seeking
    assert predictions["participant_id"].is_in(["l37_1129", "l7_1090"]).all()


def test_readgaze_help_lists_one_command_per_line(capsys):
    from readgaze.cli import COMMANDS
    from readgaze.cli import main as readgaze_main

    with pytest.raises(SystemExit):
        readgaze_main(["--help"])
    lines = capsys.readouterr().out.splitlines()
    for name, (_, about) in COMMANDS.items():  # a table a user can scan, not one wrapped paragraph
        assert any(line.split() == [name, *about.split()] for line in lines), name
