"""``readgaze cv``: tests the best-on-validation checkpoint; writes the three-metric table per regime, qc.json, the
grid choices and the seed spread; goal_question results as All / Different spans / Same span with chance levels."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import polars as pl
import pytest
import torch
import yaml
from synthetic import write_synthetic_dataset

from readgaze.errors import ConfigError
from readgaze.models.base import ReadingModel
from readgaze.models.data import ReadingDataModule
from readgaze.models.training.cv import main as cv_main
from readgaze.models.training.cv import parse_grid

REPO = Path(__file__).resolve().parents[1]
QUIET = ["--trainer.enable_progress_bar", "false", "--trainer.enable_model_summary", "false"]

pytestmark = pytest.mark.usefixtures("one_torch_thread")


class AntiLearner(ReadingModel):
    """Gradient *ascent* on the training loss: validation loss rises every epoch, so the best checkpoint is the
    first."""

    def __init__(self, n_trial_features: int = 1, num_classes: int = 2, learning_rate: float = 0.5,
                 predictions_dir: str | None = None) -> None:
        super().__init__(num_classes=num_classes, learning_rate=learning_rate, predictions_dir=predictions_dir)
        self.linear = torch.nn.Linear(n_trial_features, num_classes)

    def forward(self, batch):
        return self.linear(batch.trial_features)

    def training_step(self, batch, batch_index):
        return -self.loss(self(batch), batch.label)


@pytest.fixture(scope="module")
def dataset(tmp_path_factory) -> Path:
    return write_synthetic_dataset(tmp_path_factory.mktemp("cv"), n_participants=6, n_items=6, n_words=16)


def _anti_config(tmp_path: Path) -> Path:
    config = {"seed_everything": 0,
              "trainer": {"max_epochs": 3, "logger": False, "callbacks": [
                  {"class_path": "lightning.pytorch.callbacks.ModelCheckpoint",
                   "init_args": {"monitor": "loss/val", "mode": "min", "save_top_k": 1, "filename": "best"}},
                  {"class_path": "lightning.pytorch.callbacks.ModelCheckpoint",  # every epoch, for the test
                   "init_args": {"save_top_k": -1, "filename": "every-{epoch}"}}]},
              "model": {"class_path": "test_training_cv.AntiLearner", "init_args": {"learning_rate": 0.5}},
              "data": {"task": "reading_goal", "n_folds": 3, "text_encoder": "tiny", "batch_size": 8}}
    path = tmp_path / "anti.yaml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    return path


def _predict(checkpoint: Path, datamodule: ReadingDataModule) -> np.ndarray:
    state = torch.load(checkpoint, weights_only=False)
    model = AntiLearner(n_trial_features=datamodule.n_trial_features)
    model.load_state_dict(state["state_dict"])
    model.eval()
    with torch.no_grad():
        probs = [torch.softmax(model(b), -1)[:, 1] for b in datamodule.test_dataloader()]
    return torch.cat(probs).numpy(), state["epoch"]


def test_cv_tests_the_best_on_validation_checkpoint_not_the_last(dataset, tmp_path):
    config = _anti_config(tmp_path)
    assert cv_main(["cv", "-c", str(config), "--data.path", str(dataset), "--out", str(tmp_path), "--run", "r",
                    "--folds", "0", "--no-baselines", *QUIET]) == 0
    fold = tmp_path / "r" / "fold_0"
    datamodule = ReadingDataModule(str(dataset), task="reading_goal", n_folds=3, fold=0,
                                   split_unit="participant_item", batch_size=8)
    datamodule.setup("test")
    best, best_epoch = _predict(next(fold.rglob("best.ckpt")), datamodule)
    last, last_epoch = _predict(next(fold.rglob("every-epoch=2.ckpt")), datamodule)
    assert best_epoch == 0 and last_epoch == 3 - 1  # validation loss rose after the first epoch
    assert np.abs(best - last).max() > 1e-3  # the two checkpoints predict differently
    written = pl.read_parquet(fold / "predictions_test.parquet")
    order = [datamodule._datasets["test"].trial_id[r] for r in datamodule._datasets["test"].rows]
    written = written.join(pl.DataFrame({"trial_id": order}).with_row_index("i"), on="trial_id").sort("i")
    np.testing.assert_allclose(written["prediction_prob"].to_numpy(), best, atol=1e-6)
    # the validation loss that chose the checkpoint is the one recorded for the grid choice
    state = torch.load(next(fold.rglob("best.ckpt")), weights_only=False)["callbacks"]
    score = next(v["best_model_score"] for k, v in state.items() if "'loss/val'" in k)
    assert pl.read_csv(tmp_path / "r" / "grid.csv")["val_loss"][0] == pytest.approx(float(score), rel=1e-5)


def test_parse_grid_and_its_errors():
    assert parse_grid(["model.init_args.learning_rate=1e-5,3e-5", "--model.init_args.dropout=0.1"]) == {
        "model.init_args.learning_rate": ["1e-5", "3e-5"], "model.init_args.dropout": ["0.1"]}
    with pytest.raises(ConfigError, match="KEY=V1,V2"):
        parse_grid(["model.init_args.learning_rate"])


def test_cv_refuses_a_config_without_a_best_on_validation_checkpoint(dataset, tmp_path):
    config = yaml.safe_load(_anti_config(tmp_path).read_text())
    config["trainer"]["callbacks"] = []
    path = tmp_path / "nockpt.yaml"
    path.write_text(yaml.safe_dump(config))
    assert cv_main(["cv", "-c", str(path), "--data.path", str(dataset), "--out", str(tmp_path), "--folds", "0",
                    "--no-baselines", *QUIET]) == 2


@pytest.fixture(scope="module")
def simulated(tmp_path_factory) -> Path:
    """A folder made by readgaze.simulate + readgaze prep onestop: 12 participants x 4 articles (both goals)."""
    from readgaze.data_prep import sources
    from readgaze.data_prep.dataset import write_dataset
    from readgaze.data_prep.pipeline import prepare
    from readgaze.simulate import simulate_corpus, write_onestop_reports

    out = tmp_path_factory.mktemp("simulated")
    corpus = simulate_corpus(12, 4, 1, seed=0)
    loaded = sources.load_onestop(*write_onestop_reports(corpus, out / "reports"))
    prepared = prepare(loaded.trials, loaded.words, loaded.fixations, loaded.qc, line_assigner="slice",
                       screen_px=(2560.0, 1440.0))
    return write_dataset(out / "dataset", prepared, sources=loaded.sources, config={"mode": "onestop"},
                         id_bases=loaded.id_bases, force=True)


@pytest.mark.slow
def test_cv_on_a_simulated_folder_writes_three_metrics_qc_and_grid_choices(simulated, tmp_path, capsys):
    config = REPO / "experiments/configs/reading_goal/beyelstm.yaml"
    assert cv_main(["cv", "-c", str(config), "--data.path", str(simulated), "--out", str(tmp_path), "--run", "c",
                    "--folds", "0", "--data.n_folds", "3", "--trainer.max_epochs", "1", "--data.max_text_tokens", "48",
                    "--grid", "model.init_args.learning_rate=0.001,0.01", *QUIET]) == 0
    run = tmp_path / "c"
    table = (run / "results.md").read_text()
    for row in ("| BEyeLSTM | BA @ 0.5 |", "| BEyeLSTM | BA @ val threshold |", "| BEyeLSTM | AUROC |"):
        assert row in table
    assert "reading regime all" in table and "2 grid point(s)" in table
    results = pl.read_csv(run / "results.csv").filter(pl.col("model") == "BEyeLSTM")
    assert set(results["regime"]) == {"new_item", "new_participant", "new_item_participant", "all"}
    assert results["balanced_accuracy_tuned_mean"].is_not_null().all()
    grid = pl.read_csv(run / "grid.csv")
    assert grid.height == 2 and grid["val_loss"].is_not_null().all() and grid["chosen"].sum() == 1
    assert grid.filter(pl.col("chosen"))["val_loss"][0] == grid["val_loss"].min()  # lowest validation loss
    assert grid["params"].to_list() == ['{"model.init_args.learning_rate": "0.001"}',
                                        '{"model.init_args.learning_rate": "0.01"}']
    qc = json.loads((run / "qc.json").read_text())
    cut = [r for r in qc["0"] if r["reason"].startswith("cut off by max_text_tokens")]
    assert cut and cut[0]["count"] > 0
    assert "cut off by max_text_tokens" in capsys.readouterr().err  # non-zero QC records are printed
    assert (run / "fold_0" / "grid_0" / "qc.json").is_file() and (run / "fold_0" / "grid_1" / "qc.json").is_file()
    assert set(pl.read_parquet(run / "predictions.parquet")["split"]) == {"test"}
    assert set(pl.read_parquet(run / "predictions_val.parquet")["split"]) == {"val"}


def test_seeds_write_each_seeds_scores_and_their_spread(dataset, tmp_path):
    config = _anti_config(tmp_path)
    assert cv_main(["cv", "-c", str(config), "--data.path", str(dataset), "--out", str(tmp_path), "--run", "s",
                    "--folds", "0", "--no-baselines", "--seeds", "2", "--trainer.max_epochs", "1", *QUIET]) == 0
    run = tmp_path / "s"
    per_seed = pl.read_csv(run / "seeds.csv")
    assert per_seed["seed"].unique().sort().to_list() == [0, 1]
    spread = pl.read_csv(run / "seeds_spread.csv").filter(pl.col("regime") == "all")
    assert spread["n_seeds"][0] == 2 and spread["auroc_seed_std"][0] is not None
    assert "## Spread over seeds" in (run / "results.md").read_text()
    assert pl.read_csv(run / "grid.csv")["seed"].to_list() == [0, 1]
    per_fold = pl.read_csv(run / "results_per_fold.csv")
    assert per_fold["threshold"].is_not_null().all() and per_fold["balanced_accuracy_tuned"].is_not_null().all()


@pytest.mark.slow
def test_goal_question_cv_reports_all_different_and_same_span_with_chance(simulated, tmp_path):
    config = REPO / "experiments/configs/goal_question/roberteye_f.yaml"
    assert cv_main(["cv", "-c", str(config), "--data.path", str(simulated), "--out", str(tmp_path), "--run", "g",
                    "--folds", "0", "--data.n_folds", "3", "--trainer.max_epochs", "1", "--data.text_encoder",
                    "tiny", "--no-baselines", *QUIET]) == 0
    table = (tmp_path / "g" / "results.md").read_text()
    assert "| Model | Regime | All (3-way) | Different spans | Same span | trials (folds) |" in table
    assert "| chance | any | 33.3 | 55.6 | 50.0 | – |" in table
    scores = pl.read_csv(tmp_path / "g" / "goal_selection.csv")
    assert set(scores["regime"]) == {"new_item", "new_participant", "new_item_participant", "all"}
    assert scores["all_accuracy_mean"].is_between(0, 1).all()


@pytest.mark.slow
def test_cv_with_several_configs_adds_the_ensembles(dataset, tmp_path):
    first = _anti_config(tmp_path)
    second = tmp_path / "anti_small_step.yaml"
    config = yaml.safe_load(first.read_text())
    config["model"]["init_args"]["learning_rate"] = 0.05
    second.write_text(yaml.safe_dump(config))
    assert cv_main(["cv", "-c", str(first), str(second), "--data.path", str(dataset), "--out", str(tmp_path),
                    "--run", "both", "--folds", "0", "--no-baselines", "--trainer.max_epochs", "1", *QUIET]) == 0
    run = tmp_path / "both"
    assert (run / "anti" / "results.md").is_file() and (run / "anti_small_step" / "results.md").is_file()
    models = set(pl.read_csv(run / "results.csv")["model"])
    assert models == {"AntiLearner@anti", "AntiLearner@anti_small_step", "MajorityVote", "LogisticEnsemble"}
    test = pl.read_parquet(run / "predictions.parquet")
    members = test.filter(pl.col("model") == "AntiLearner@anti")
    ensemble = test.filter(pl.col("model") == "LogisticEnsemble")
    assert sorted(ensemble["trial_id"]) == sorted(members["trial_id"])  # the same test trials, out of sample
