"""``readgaze bench`` on a regression task (``reading_comprehension_skill``): a reader-level score planted in
simulated readers (:func:`synthetic.add_reader_skill`), AhnCNN (1 epoch) and the regressors on 3 folds; the leaderboard
scores it by RMSE, MAE and R² (lower RMSE is better), with the chance (training mean) row, no AUROC, no ensembles, no
ROC figure, and the same significance rules as a classification task."""

from __future__ import annotations

import json
import math
from pathlib import Path

import polars as pl
import pytest
import yaml
from synthetic import add_reader_skill, write_synthetic_dataset

from readgaze.models.training import bench_config as bc
from readgaze.models.training.bench import run_bench
from readgaze.models.training.runner import Engine

pytestmark = pytest.mark.usefixtures("one_torch_thread")
ROOT = Path(__file__).resolve().parents[1]
TASK = "reading_comprehension_skill"


def _config(tmp_path, dataset, **more) -> bc.BenchConfig:
    """A bench of AhnCNN (1 epoch, tiny encoder, 3 folds) and the reading-speed baseline on ``dataset``'s regression
    task, through a YAML as a user writes it; ``more``: other top-level keys (e.g. ``folds``)."""
    raw = {"datasets": {"syn": str(dataset)}, "tasks": [TASK], **more,
           "models": [str(ROOT / "experiments/configs/ahn_cnn.yaml")],
           "baselines": ["reading_speed"], "data": {"n_folds": 3, "text_encoder": "tiny", "batch_size": 16},
           "trainer": {"max_epochs": 1, "logger": False, "enable_progress_bar": False,
                       "enable_model_summary": False}}
    path = tmp_path / "bench.yaml"
    path.write_text(yaml.safe_dump(raw), encoding="utf-8")
    return bc.load(str(path), {})


def test_a_regression_task_is_a_bench_task_with_regressors_for_baselines():
    assert TASK in bc.TASKS and bc.is_regression(TASK) and not bc.is_regression("dyslexia")
    assert bc.regressor_list("default") == ("chance", "reading_speed", "ridge")
    assert bc.regressor_list(["majority", "reading_speed", "svm"]) == ("chance", "reading_speed")
    assert bc.regressor_list("none") == ()
    assert bc.baseline_list(["reading_speed", "ridge"]) == ("majority", "reading_speed")  # ridge: regression only


def test_bench_scores_a_regression_task_by_rmse(tmp_path):
    dataset = write_synthetic_dataset(tmp_path / "data", n_participants=12, n_items=4, n_words=12)
    add_reader_skill(dataset)
    config = _config(tmp_path, dataset)
    assert config.regressors == ("chance", "reading_speed")
    out = tmp_path / "bench"
    assert run_bench(config, out, Engine(workers=1)) == 0

    board = pl.read_csv(out / "leaderboard.csv")
    assert set(board["metric"]) == {"rmse", "mae", "r2"}  # no AUROC, no balanced accuracy
    rmse = board.filter(pl.col("metric") == "rmse")
    everything = rmse.filter(pl.col("regime") == "all")
    assert dict(zip(everything["model"], everything["kind"])) == {
        "chance_mean": "baseline", "reading_speed_linear_regression": "baseline", "AhnCNN": "model"}  # no ensembles
    assert (rmse["n_folds"] == 3).all() and rmse["sem"].is_not_null().all()
    for (_,), column in rmse.group_by(["regime"]):  # lower is better: the best and the reference are the lowest
        assert column.filter(pl.col("best"))["mean"].to_list() == [column["mean"].min()]
        model = column.filter(pl.col("kind") == "model")
        assert model["reference"][0] == column.filter(pl.col("kind") == "baseline").sort("mean")["model"][0]
    # the cell is the per-fold RMSE of the written test predictions, averaged over folds
    chance = everything.filter(pl.col("model") == "chance_mean")["mean"][0]
    folds = [pl.read_parquet(next((out / "units/syn" / TASK / "baselines" / f"fold_{k}").glob(
        "predictions_chance.parquet"))).filter(pl.col("split") == "test") for k in range(3)]
    expected = sum(math.sqrt(((f["label"] - f["prediction_value"]) ** 2).mean()) for f in folds) / 3
    assert chance == pytest.approx(expected, rel=1e-9)
    tested = rmse.filter(pl.col("kind") == "model")
    assert tested["p_permutation"].is_not_null().all()  # whole readers swapped (metrics_regression)
    assert board.filter(pl.col("metric") == "r2")["p_permutation"].is_null().all()
    markdown = (out / "leaderboard.md").read_text()
    assert "## RMSE (target units; lower is better)" in markdown and "AUROC (%)" not in markdown
    assert "| Ahn et al. CNN |" in markdown and "| chance (training mean) |" in markdown and "not %" in markdown
    assert "Values are in the target's units" in markdown and "Regression (syn/reading_comprehension_skill)" in markdown
    assert (out / f"figures/regression_syn_{TASK}.png").is_file()
    assert not (out / f"figures/roc_syn_{TASK}.png").exists()
    assert "figures/roc_" not in markdown and "Ensembles: fit per fold" not in markdown  # its notes say what it wrote
    units = pl.read_csv(out / "units.csv")
    assert units["test_rmse"].is_not_null().all() and units["test_auroc"].is_null().all()


def test_bench_keeps_unscored_readers_at_missing_label_for_a_regression_task_only(tmp_path):
    """``--data.missing_label -1.0`` (EyeBench's CopCo_RCS setting) passes bench's checks, reaches the baselines'
    and the model's datamodules (the 2 unscored readers' 8 trials kept at -1.0, counted), and is refused up front
    when the run has a classification task."""
    from readgaze.errors import ConfigError
    from readgaze.models.training.bench import prepare

    dataset = write_synthetic_dataset(tmp_path / "data", n_participants=12, n_items=4, n_words=12)
    readers = add_reader_skill(dataset, unscored=2)
    unscored = readers.filter(pl.col(TASK).is_null())["participant_id"].to_list()
    config = _config(tmp_path, dataset, folds=[0])
    bc.apply_overrides(config, ["--data.missing_label", "-1.0"])
    assert config.data["missing_label"] == -1.0
    out = tmp_path / "bench"
    assert run_bench(config, out, Engine(workers=1)) == 0
    unit = out / "units/syn" / TASK / "baselines/fold_0"
    trials = pl.read_parquet(unit / "trials.parquet").filter(pl.col("participant_id").is_in(unscored))
    assert trials.height == 8 and trials["label"].to_list() == [-1.0] * 8
    chance = pl.read_parquet(unit / "predictions_chance.parquet")
    assert chance.filter(pl.col("participant_id").is_in(unscored))["label"].to_list() == [-1.0] * chance.filter(
        pl.col("participant_id").is_in(unscored)).height
    reason = f"no {TASK} label, given -1.0 (data.missing_label)"
    for qc_file in (unit / "qc.json", next((out / "units/syn" / TASK).glob("ahn_cnn/fold_0/seed_0/qc.json"))):
        records = json.loads(qc_file.read_text())["records"]
        assert {(r["table"], r["count"]) for r in records if r["reason"] == reason} == {
            ("trials", 8), ("participants", 2)}, qc_file
    both = bc.load(str(tmp_path / "bench.yaml"), {"tasks": ["dyslexia", TASK]})  # the YAML _config wrote
    bc.apply_overrides(both, ["--data.missing_label", "-1.0"])
    with pytest.raises(ConfigError, match=r"data\.missing_label: set to -1\.0 for task 'dyslexia'.*--tasks "
                                          r"reading_comprehension_skill"):
        prepare(both, tmp_path / "other")
