"""One run on several processes (Lightning DDP, gloo on CPU) equals the one-process run of the same model, seed and
data: the same test trials, none missing or doubled, the same probabilities and metrics; the summary is printed once
and states the effective batch; no ``sync_dist`` warning.

Why the results can be equal, and the tolerance: the training batch is the whole training split (one process: batch
N; two processes: N/2 each, N even so DDP's sampler pads nothing), so every optimiser step sees the same trials; the
model (a linear layer on the trial features, no dropout) is deterministic; and the class-weighted loss is normalised
by the global batch's weights (:meth:`readgaze.models.base.ReadingModel.loss`), so the averaged gradient is the
one-process gradient. What remains is the order of floating-point sums (two partial sums and an all-reduce instead
of one sum): ~1e-7 relative per step in float32, so after a few dozen steps the probabilities agree to 1e-5 and the
rank-based AUROC exactly. With mini-batches, DDP's sampler deals a different trial order than one process's shuffle,
and the two runs differ as two seeds do: the docs say so, and that is why this test uses one full batch.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest
import yaml
from synthetic import write_synthetic_dataset
from test_training_bench import TrialLinear  # noqa: F401 -- the model both runs train (a linear layer: deterministic)

from readgaze.metrics import evaluate

TESTS = Path(__file__).resolve().parent


def _config(dataset: Path, out: Path, devices: int, batch_size: int) -> Path:
    config = {"seed_everything": 0,
              "trainer": {"max_epochs": 12, "accelerator": "cpu", "devices": devices,
                          "strategy": "ddp" if devices > 1 else "auto", "enable_progress_bar": False,
                          "enable_model_summary": False, "default_root_dir": str(out), "callbacks": [
                              {"class_path": "lightning.pytorch.callbacks.ModelCheckpoint",
                               "init_args": {"monitor": "loss/val", "mode": "min", "filename": "best"}}]},
              "model": {"class_path": "test_training_bench.TrialLinear", "init_args": {"predictions_dir": str(out)}},
              "data": {"path": str(dataset), "task": "reading_goal", "n_folds": 3, "fold": 0,
                       "split_unit": "participant_item", "text_encoder": "tiny", "batch_size": batch_size}}
    out.mkdir(parents=True, exist_ok=True)
    path = out / "config.yaml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    return path


def _fit_ddp(path: Path) -> subprocess.CompletedProcess:
    """``readgaze fit`` in a fresh process: DDP's launcher starts the other process with the same command."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(TESTS), os.environ.get("PYTHONPATH", "")]),
           "OMP_NUM_THREADS": "1", "READGAZE_TORCH_THREADS": "1", "PYTHONWARNINGS": "default"}
    return subprocess.run([sys.executable, "-m", "readgaze.cli", "fit", "-c", str(path)], env=env, cwd=path.parent,
                          capture_output=True, text=True, timeout=600)


@pytest.mark.slow  # about 60-90 s on 2 shared cores: two fresh Python processes import torch and Lightning
def test_ddp_on_two_processes_equals_one_process(tmp_path, capsys, one_torch_thread):
    from readgaze.models.data import ReadingDataModule
    from readgaze.models.training.cli import main as fit_main

    dataset = write_synthetic_dataset(tmp_path / "data", n_participants=12, n_items=6, n_words=16)
    datamodule = ReadingDataModule(str(dataset), task="reading_goal", n_folds=3, fold=0,
                                   split_unit="participant_item")
    datamodule.setup("fit")
    n_train = len(datamodule._datasets["train"])
    n_test = len(datamodule._datasets["test"])
    assert n_train % 2 == 0, "an odd training split would make DDP's sampler repeat a trial"
    assert fit_main(["fit", "-c", str(_config(dataset, tmp_path / "one", 1, n_train))]) == 0
    assert capsys.readouterr().err.count("readgaze fit: done in") == 1
    two = _fit_ddp(_config(dataset, tmp_path / "two", 2, n_train // 2))
    assert two.returncode == 0, two.stderr[-3000:]

    assert two.stderr.count("readgaze fit: done in") == 1  # the summary once (rank 0), not once per process
    assert f"effective batch {n_train} = 2 process(es) x {n_train // 2} per process" in two.stderr
    assert "sync_dist" not in two.stderr  # metrics are logged synchronised across processes

    a = pl.read_parquet(tmp_path / "one" / "predictions_test.parquet")
    b = pl.read_parquet(tmp_path / "two" / "predictions_test.parquet")
    expected = set(datamodule.trials.filter(pl.col("split") == "test")["trial_id"])
    for frame in (a, b):  # the same trials: none missing, none doubled by DDP's padding
        assert frame.height == n_test == frame["trial_id"].n_unique()
        assert set(frame["trial_id"]) == expected
    assert a["trial_id"].to_list() == b["trial_id"].to_list()
    assert a.drop("prediction_prob").equals(b.drop("prediction_prob"))
    assert (a["prediction_prob"] - b["prediction_prob"]).abs().max() < 1e-5
    assert a["prediction_prob"].std() > 1e-3  # the model learned something to compare

    scores_a, scores_b = evaluate(a), evaluate(b)
    for metric in ("balanced_accuracy_mean", "auroc_mean"):
        diff = (scores_a[metric] - scores_b[metric]).abs().max()
        assert diff < 1e-6, (metric, diff)
