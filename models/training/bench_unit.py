"""One unit of ``readgaze bench``, as a worker runs it (a Ray task, or the driver's own process).

A *model* unit fits one (task, model, fold, seed, grid point), restores its best-on-validation checkpoint and
predicts the validation and test trials (:func:`readgaze.models.training.cv._fit_and_predict`, what ``readgaze cv``
does per fold). A *baselines* unit fits the classical baselines of one (task, fold) on the same training trials and
writes the fold's trial assignment (``trials.parquet``: split and regime of every trial).

The unit works in its own folder, ``<bench>/units/<id>/``, when this worker sees the benchmark folder (the same
machine, or shared storage: ``.bench-id`` holds the run's token); otherwise in a temporary folder whose files come
back to the driver in the result. An attempt first removes what an interrupted attempt left (everything but
``spec.json`` and ``train.log``; the log keeps a header line per attempt), and records itself in ``running.json``.
Every output of Lightning goes to ``train.log``. An exception is caught, its traceback appended to the log, and
returned as ``status: failed`` with its one-line reason: the driver records it and the other units go on.
"""

from __future__ import annotations

import contextlib
import inspect
import json
import os
import shutil
import socket
import tempfile
import time
import traceback
from pathlib import Path

KEEP = ("spec.json", "train.log")


def run_unit(spec: dict) -> dict:
    """Run the unit ``spec`` (see :func:`readgaze.models.training.bench_config.plan`); return its record."""
    from readgaze.models.training.runner import fold_log

    started = time.perf_counter()
    folder, shared = _work_folder(spec)
    attempt = _begin(folder)
    log = folder / "train.log"
    try:
        with fold_log(log):
            result = _model_unit(spec, folder) if spec["kind"] == "model" else _baselines_unit(spec, folder)
        result["status"] = "done"
    except Exception as error:  # noqa: BLE001 (recorded with its log; the benchmark goes on)
        with open(log, "a", encoding="utf-8") as handle:
            handle.write(traceback.format_exc())
        text = str(error).strip().splitlines()
        result = {"status": "failed", "error": f"{type(error).__name__}: {text[0] if text else ''}".rstrip(": ")}
    result.update(id=spec["id"], seconds=time.perf_counter() - started, attempt=attempt, host=socket.gethostname(),
                  pid=os.getpid(), finished=time.time())
    (folder / "running.json").unlink(missing_ok=True)
    if not shared:  # no shared storage: the files travel back with the result
        result["files"] = {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*") if p.is_file()}
        shutil.rmtree(folder, ignore_errors=True)
    return result


def _work_folder(spec: dict) -> tuple[Path, bool]:
    bench = Path(spec["bench_dir"])
    with contextlib.suppress(OSError):
        if (bench / ".bench-id").read_text(encoding="utf-8").strip() == spec["token"]:
            return bench / "units" / spec["id"], True
    return Path(tempfile.mkdtemp(prefix="readgaze-unit-")), False


def _begin(folder: Path) -> int:
    """Clear an interrupted attempt's files, write ``running.json`` and a log header; return the attempt number."""
    folder.mkdir(parents=True, exist_ok=True)
    attempt, note = 1, ""
    running = folder / "running.json"
    if running.is_file():  # an attempt that never finished: its worker or the driver died
        with contextlib.suppress(ValueError, OSError):
            previous = json.loads(running.read_text(encoding="utf-8"))
            attempt = int(previous.get("attempt", 1)) + 1
            note = f", after an interrupted attempt (pid {previous.get('pid')} on {previous.get('host')})"
    for child in folder.iterdir():
        if child.name not in KEEP:
            shutil.rmtree(child) if child.is_dir() else child.unlink()
    running.write_text(json.dumps({"attempt": attempt, "host": socket.gethostname(), "pid": os.getpid(),
                                   "started": time.time()}), encoding="utf-8")
    with open(folder / "train.log", "a", encoding="utf-8") as handle:
        handle.write(f"==== attempt {attempt} on {socket.gethostname()} (pid {os.getpid()}) at "
                     f"{time.strftime('%Y-%m-%d %H:%M:%S')}{note}\n")
    return attempt


def _model_unit(spec: dict, folder: Path) -> dict:
    import torch

    from readgaze.models.training.cv import _fit_and_predict
    from readgaze.models.training.runner import auroc_of

    torch.set_num_threads(int(spec.get("threads", 1)))
    config = folder / "config.yaml"
    config.write_text(spec["config_text"], encoding="utf-8")
    extra = [f"--{key}={value}" for key, value in spec["point"].items()]
    trial = _fit_and_predict(str(config), spec["dataset"], spec["fold"],
                             [*spec["args"], *extra, "--seed_everything", str(spec["seed"])], folder)
    counts = trial["datamodule"].trials.group_by("split").len()
    checkpoint = Path(trial["checkpoint"])
    if trial["datamodule"].task_kind == "regression":
        from readgaze.models.training.runner import rmse_of

        extra = {"val_rmse": rmse_of(trial["val"]), "test_rmse": rmse_of(trial["test"])}
    else:
        extra = {}
    return {"model": trial["model"], "val_loss": trial["val_loss"],
            "checkpoint": str(checkpoint.relative_to(folder)) if checkpoint.is_relative_to(folder) else str(checkpoint),
            "val_auroc": auroc_of(trial["val"]), "test_auroc": auroc_of(trial["test"]),
            **{f"n_{row['split']}": int(row["len"]) for row in counts.iter_rows(named=True)}, **extra}


def _baselines_unit(spec: dict, folder: Path) -> dict:

    from readgaze.baselines import BASELINES, CLASSICAL, run_baseline, with_baseline_features
    from readgaze.baselines_regression import REGRESSORS, run_regressor
    from readgaze.models.data import ReadingDataModule

    accepted = set(inspect.signature(ReadingDataModule.__init__).parameters)
    data = {k: v for k, v in spec["data"].items() if k in accepted and k not in ("path", "task", "fold")}
    datamodule = ReadingDataModule(spec["dataset"], task=spec["task"], fold=spec["fold"],
                                   **{**data, "split_unit": "participant_item"})
    datamodule.setup("fit")
    trials = datamodule.trials
    if "reading_speed_wpm" not in trials.columns:
        trials = trials.join(datamodule.trial_features_raw.select("trial_id", "reading_speed_wpm"), on="trial_id")
    assignment = trials.select("trial_id", "fold_index", "split", "regime")
    models = []
    if datamodule.task_kind == "regression":  # the regressors, as readgaze cv runs them
        wanted = {c for kind in spec["baselines"] for c in REGRESSORS[kind].features}
        table = with_baseline_features(trials, datamodule.path) if wanted - set(trials.columns) else trials
        for kind in spec["baselines"]:
            run_regressor(table, assignment, "label", kind, split=("val", "test")).write_parquet(
                folder / f"predictions_{kind}.parquet")
            models.append(REGRESSORS[kind].model)
    else:
        table = (with_baseline_features(trials, datamodule.path) if set(spec["baselines"]) & set(CLASSICAL)
                 else trials)
    for kind in spec["baselines"] if datamodule.task_kind != "regression" else ():  # val and test in one call
        run_baseline(table, assignment, spec["task"], kind, split=("val", "test")).write_parquet(
            folder / f"predictions_{kind}.parquet")
        models.append(BASELINES[kind].model)
    trials.select("trial_id", "participant_id", "item_id", "label", "fold_index", "split", "regime").write_parquet(
        folder / "trials.parquet")
    datamodule.write_qc(folder)
    counts = trials.group_by("split").len()
    return {"models": models, **{f"n_{row['split']}": int(row["len"]) for row in counts.iter_rows(named=True)},
            "reading_regime": datamodule.effective_reading_regime}
