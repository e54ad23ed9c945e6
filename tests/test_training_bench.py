"""``readgaze bench``: the plan of units, the leaderboard (chance, majority, baselines, models, ensembles; best per
column; the corrected paired t-test), resuming (a finished unit never reruns; a failed one with --retry-failed; a
changed configuration refused), a unit that raises recorded while the others go on, typos caught before any unit
starts, and ``bench status``. One unit at a time in this process (no Ray: tests/test_training_bench_ray.py)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import polars as pl
import pytest
import torch
import yaml
from synthetic import write_synthetic_dataset

from readgaze.errors import ConfigError
from readgaze.models.base import ReadingModel
from readgaze.models.training import bench_config as bc
from readgaze.models.training.bench import run_bench
from readgaze.models.training.bench_report import corrected_t_test, holm
from readgaze.models.training.bench_status import status_text
from readgaze.models.training.runner import Engine

pytestmark = pytest.mark.usefixtures("one_torch_thread")
FAIL_FOLD = "READGAZE_TEST_FAIL_FOLD"


class TrialLinear(ReadingModel):
    """Logistic regression on the trial features: a model that trains in a fraction of a second."""

    def __init__(self, n_trial_features: int = 1, num_classes: int = 2, learning_rate: float = 0.05,
                 predictions_dir: str | None = None) -> None:
        super().__init__(num_classes=num_classes, learning_rate=learning_rate, predictions_dir=predictions_dir)
        self.linear = torch.nn.Linear(n_trial_features, num_classes)

    def forward(self, batch):
        return self.linear(batch.trial_features)


class FlakyLinear(TrialLinear):
    """Raises at setup on the fold named by $READGAZE_TEST_FAIL_FOLD (a unit that fails, then is fixed)."""

    def setup(self, stage: str) -> None:
        if os.environ.get(FAIL_FOLD) == str(self.trainer.datamodule.fold):
            raise RuntimeError(f"planted failure on fold {self.trainer.datamodule.fold}")
        super().setup(stage)


def model_yaml(folder: Path, name: str, cls: str) -> Path:
    config = {"seed_everything": 0,
              "trainer": {"max_epochs": 2, "logger": False, "enable_progress_bar": False, "callbacks": [
                  {"class_path": "lightning.pytorch.callbacks.ModelCheckpoint",
                   "init_args": {"monitor": "loss/val", "mode": "min", "filename": "best"}}]},
              "model": {"class_path": f"test_training_bench.{cls}", "init_args": {"learning_rate": 0.05}},
              "data": {"task": "reading_goal", "text_encoder": "tiny", "batch_size": 16}}
    path = folder / f"{name}.yaml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    return path


def bench_config(folder: Path, dataset: Path, **changes) -> bc.BenchConfig:
    raw = {"datasets": {"syn": str(dataset)}, "tasks": ["reading_goal"],
           "models": [str(model_yaml(folder, "flaky", "FlakyLinear"))],
           "baselines": ["reading_speed"], "data": {"n_folds": 3, "text_encoder": "tiny", "max_text_tokens": 48},
           "trainer": {"max_epochs": 2}, **changes}
    path = folder / "bench.yaml"
    path.write_text(yaml.safe_dump(raw), encoding="utf-8")
    return bc.load(str(path), {})


@pytest.fixture(scope="module")
def dataset(tmp_path_factory) -> Path:
    return write_synthetic_dataset(tmp_path_factory.mktemp("bench"), n_participants=6, n_items=6, n_words=16)


def _done_times(out: Path) -> dict[str, int]:
    return {str(p.parent.relative_to(out)): p.stat().st_mtime_ns for p in out.rglob("unit.json")}


def test_bench_records_a_failed_unit_resumes_without_rerunning_and_retries_it(dataset, tmp_path, monkeypatch, capsys):
    out = tmp_path / "bench"
    config = bench_config(tmp_path, dataset)
    monkeypatch.setenv(FAIL_FOLD, "1")
    assert run_bench(config, out, Engine(workers=1)) == 1  # one unit failed; the others went on
    failed = json.loads((out / "units/syn/reading_goal/flaky/fold_1/seed_0/failed.json").read_text())
    assert failed["error"] == "RuntimeError: planted failure on fold 1"
    assert "planted failure on fold 1" in Path(failed["log"]).read_text()  # the traceback is in the unit's log
    assert len(_done_times(out)) == 3 + 2  # baselines x 3 folds, flaky x 2

    board = pl.read_csv(out / "leaderboard.csv")
    markdown = (out / "leaderboard.md").read_text()
    assert "**PARTIAL**: 5 of 6 units finished (1 failed" in markdown
    auroc = board.filter((pl.col("metric") == "auroc") & (pl.col("regime") == "all"))
    rows = dict(zip(auroc["model"], auroc["kind"]))
    assert rows == {"Chance": "chance", "majority": "baseline", "reading_speed_logistic_regression": "baseline",
                    "FlakyLinear": "model"}  # ensembles need two models: tests/test_training_bench_ray.py
    assert auroc.filter(pl.col("model") == "Chance")["mean"][0] == 0.5
    assert auroc.filter(pl.col("model") == "majority")["mean"][0] == 0.5  # constant predictions
    assert auroc.filter(pl.col("model") == "FlakyLinear")["n_folds"][0] == 2  # its fold 1 failed
    assert "[2 folds]" in markdown
    for (_, _, _), column in board.group_by(["task", "regime", "metric"]):
        real = column.filter(pl.col("kind") != "chance")
        assert column.filter(pl.col("best"))["mean"].to_list() == [real["mean"].max()] * column["best"].sum()
    tested = board.filter((pl.col("kind") == "model") & (pl.col("metric") == "auroc"))
    for row in tested.iter_rows(named=True):  # the reference is the column's strongest baseline
        column = board.filter((pl.col("metric") == "auroc") & (pl.col("regime") == row["regime"])
                              & (pl.col("kind") == "baseline"))
        assert row["reference"] == column.sort("mean")["model"][-1]
    assert tested["p"].is_null().all()  # 2 folds (fold 1 failed): no t-test over folds, no star
    assert tested["p_permutation"].is_not_null().all()  # the permutation test over trials works with any folds
    assert (tested["p_permutation_holm"] == tested["p_permutation"]).all()  # one row: Holm = p
    assert "no t-test over folds: this run has 2 fold(s)" in markdown
    assert (out / "figures/roc_syn_reading_goal.png").stat().st_size > 10_000
    assert (out / "figures/leaderboard.png").stat().st_size > 10_000

    text = status_text(out)
    assert "done     5" in text and "failed   1" in text and "left     0" in text
    assert "flaky/fold_1/seed_0: RuntimeError: planted failure on fold 1 (log: " in text

    before = _done_times(out)
    capsys.readouterr()
    assert run_bench(config, out, Engine(workers=1)) == 0  # resumed: nothing to run, the failed unit left alone
    assert "6 units: 5 finished, 1 failed (rerun with --retry-failed), 0 to run" in capsys.readouterr().err
    assert _done_times(out) == before  # no finished unit ran again

    monkeypatch.delenv(FAIL_FOLD)
    assert run_bench(config, out, Engine(workers=1), retry_failed=True) == 0
    after = _done_times(out)
    assert {k: v for k, v in after.items() if k in before} == before and len(after) == 6
    assert "PARTIAL" not in (out / "leaderboard.md").read_text()
    board = pl.read_csv(out / "leaderboard.csv")
    assert board.filter(pl.col("model") == "FlakyLinear")["n_folds"].max() == 3
    tested = board.filter((pl.col("kind") == "model") & (pl.col("metric") == "auroc"))
    assert tested["p"].is_not_null().all() and (tested["p_holm"] == tested["p"]).all()  # 3 folds: tested
    assert "over the 3 folds of this run" in (out / "leaderboard.md").read_text()

    changed = bench_config(tmp_path, dataset, trainer={"max_epochs": 3})
    with pytest.raises(ConfigError, match="made with another configuration"):
        run_bench(changed, out, Engine(workers=1))


@pytest.mark.parametrize("changes, message", [
    ({"tasks": ["reading_gaol"]}, "unknown task 'reading_gaol'; did you mean 'reading_goal'?"),
    ({"models": ["beyelstn"]}, "unknown model 'beyelstn'; did you mean 'beyelstm'?"),
    ({"baselines": ["reading_sped"]}, "unknown baseline 'reading_sped'; did you mean 'reading_speed'?"),
    ({"grid": {"beyelstn": {"model.init_args.learning_rate": [1e-3]}}}, "unknown grid model 'beyelstn'"),
    ({"grid": {"*": {"model.init_args.learning_rat": [1e-3]}}}, "did you mean learning_rate"),
    ({"folds": [0, 5]}, r"folds \[5\] do not exist"),
])
def test_a_typo_stops_the_benchmark_before_any_unit_starts(dataset, tmp_path, changes, message):
    out = tmp_path / "never"
    with pytest.raises(ConfigError, match=message):
        run_bench(bench_config(tmp_path, dataset, **{"models": ["beyelstm"], **changes}), out, Engine(workers=1))
    assert not out.exists()


def test_a_grid_for_a_zoo_model_left_out_by_models_is_a_note_not_an_error(dataset, tmp_path):
    """experiments/bench/copco.yaml grids ahn_rnn, ahn_cnn and beyelstm: `--models ahn_cnn.yaml` narrowing the run
    stopped it with "unknown grid model 'ahn_rnn'"."""
    grid = {"ahn_rnn": {"trainer.max_epochs": [8]}, "beyelstm": {"trainer.max_epochs": [8]}}
    _, notes = bc.model_configs(bench_config(tmp_path, dataset, models=["beyelstm"], grid=grid))
    assert notes == ["grid for ahn_rnn: not among this run's models, not used"]


def test_unknown_bench_config_key_names_the_closest(tmp_path):
    path = tmp_path / "b.yaml"
    path.write_text("datasets: {a: x}\nmodel: [beyelstm]\n")
    with pytest.raises(ConfigError, match="unknown bench config key 'model'; did you mean 'models'"):
        bc.load(str(path), {})


def test_plan_gives_each_unit_its_folder_and_a_hash_of_what_makes_it(dataset, tmp_path):
    grid = {"flaky": {"model.init_args.learning_rate": [0.01, 0.1]}}
    config = bench_config(tmp_path, dataset, seeds=2, grid=grid)
    configs, _ = bc.model_configs(config)
    units = bc.plan(config, configs)
    ids = [u.id for u in units]
    assert len(ids) == len(set(ids)) == 3 * (1 + 2 * 2)  # per fold: baselines, flaky 2 seeds x 2 grid points
    assert "syn/reading_goal/flaky/fold_2/seed_1/grid_1" in ids and "syn/reading_goal/baselines/fold_0" in ids
    assert len({u.hash for u in units}) == len(units)
    again = bc.plan(bench_config(tmp_path, dataset, seeds=2, grid=grid), configs)
    assert [u.hash for u in again] == [u.hash for u in units]  # the same config: the same units


def test_corrected_t_test_and_holm_by_hand():
    d = np.array([0.02, 0.05, 0.03, 0.04])
    t, p = corrected_t_test(d, ratio=0.25)
    by_hand = d.mean() / np.sqrt((1 / 4 + 0.25) * d.var(ddof=1))  # Nadeau & Bengio's variance correction
    assert t == pytest.approx(by_hand)
    from scipy import stats

    assert p == pytest.approx(2 * stats.t.sf(by_hand, 3))
    plain = stats.ttest_rel(d, np.zeros(4)).pvalue
    assert p > plain  # the correction is more conservative than the plain paired t-test
    assert corrected_t_test(np.array([0.1]), 0.2) == (None, None)
    assert holm([0.01, None, 0.04, 0.03]) == pytest.approx([0.03, None, 0.06, 0.06])


def test_a_unit_on_a_worker_without_the_benchmark_folder_sends_its_files_back(dataset, tmp_path):
    from readgaze.models.training.bench import _record
    from readgaze.models.training.bench_unit import run_unit

    config = bench_config(tmp_path, dataset)
    unit = next(u for u in bc.plan(config, bc.model_configs(config)[0]) if u.kind == "baselines")
    out = tmp_path / "driver_side"
    spec = {**unit.spec, "bench_dir": str(out), "token": "not-this-run", "threads": 1}  # no shared storage
    result = run_unit(spec)
    assert result["status"] == "done" and not out.exists()  # nothing written on the driver's side by the worker
    assert {"predictions_majority.parquet", "predictions_reading_speed.parquet", "trials.parquet",
            "train.log"} <= set(result["files"])
    record = _record(out, unit, result)  # the driver writes what came back
    folder = out / "units" / unit.id
    assert record["status"] == "done" and (folder / "unit.json").is_file()
    assert pl.read_parquet(folder / "predictions_majority.parquet")["split"].unique().sort().to_list() == [
        "test", "val"]


def test_ablate_adds_each_models_ablated_twins_as_units_and_leaderboard_rows(dataset, tmp_path):
    """``ablate: [gaze]``: a twin unit per model unit, trained with ``--data.ablate gaze`` (its QC says so), its own
    leaderboard row; the model twins are refused with the model to add instead."""
    config = bench_config(tmp_path, dataset, models=[str(model_yaml(tmp_path, "linear", "TrialLinear"))],
                          folds=[0], ablate=["gaze"], ensembles=False)
    units = bc.plan(config, bc.model_configs(config)[0])
    twin = next(u for u in units if u.spec.get("model_name") == "linear_ablate_gaze")
    assert twin.spec["args"][-2:] == ["--data.ablate", "gaze"]
    assert twin.id == "syn/reading_goal/linear_ablate_gaze/fold_0/seed_0"
    assert len({u.hash for u in units}) == len(units) == 3
    assert run_bench(config, tmp_path / "out", Engine(workers=1)) == 0
    qc = json.loads((tmp_path / "out" / "units" / twin.id / "qc.json").read_text())
    assert qc["ablate"] == "gaze" and any(r["step"] == "ablate" and r["count"] > 0 for r in qc["records"])
    board = pl.read_csv(tmp_path / "out" / "leaderboard.csv")
    assert {"TrialLinear (linear)", "TrialLinear (linear_ablate_gaze)"} <= set(board["model"])
    with pytest.raises(ConfigError, match="add fse to models"):
        bench_config(tmp_path, dataset, ablate=["gaze_only"])
