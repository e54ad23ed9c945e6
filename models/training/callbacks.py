"""What a training run writes, as Lightning callbacks (the model only computes).

:class:`RunWriter` writes, into the run folder (``model.predictions_dir``, else the first logger's ``log_dir``, else
``trainer.default_root_dir``):

* ``qc.json`` (the datamodule's QC records, :meth:`readgaze.models.data.ReadingDataModule.write_qc`) when the
  datamodule is set up, and its non-zero records printed once per datamodule;
* ``predictions_{val,test,predict}.parquet`` after each evaluation: one row per trial with the columns
  ``trial_id, label, regime, prediction_prob, fold_index, participant_id, item_id, split, model`` that
  :func:`readgaze.metrics.evaluate` reads. ``prediction_prob`` is P(class 1) for two classes and the list of class
  probabilities otherwise; a regression model's rows carry ``prediction_value`` (Float64, de-standardised, the
  target's units) and a Float64 ``label`` instead (:func:`readgaze.metrics_regression.evaluate_regression`);
* ``bundle/`` (:meth:`RunWriter.write_bundle`, called by ``readgaze fit`` and each ``readgaze cv`` fold once the
  best checkpoint has been validated and tested): the model bundle that ``readgaze predict`` scores new data with
  (:mod:`readgaze.models.training.bundle`).

The model (:class:`readgaze.models.base.ReadingModel`) leaves its gathered, de-duplicated evaluation outputs in
``model.evaluation_outputs[split]`` (every process's trials under DDP); only global rank 0 writes, so a DDP run
writes each file once. ``readgaze fit``/``cv``/``bench`` add the callback; a plain ``lightning.Trainer`` needs
``callbacks=[RunWriter()]`` to write these files.
"""

from __future__ import annotations

import sys
from pathlib import Path

import lightning as L
import polars as pl
import torch

from readgaze.models.data.batch import REGIMES
from readgaze.predictions import make_predictions


def run_folder(trainer: L.Trainer, pl_module: L.LightningModule) -> Path:
    """The folder a run writes its predictions and qc.json to (see the module docstring)."""
    logger_dir = getattr(trainer.logger, "log_dir", None) if trainer.logger else None
    return Path(getattr(pl_module, "predictions_dir", None) or logger_dir or trainer.default_root_dir)


class RunWriter(L.Callback):
    """Write ``qc.json`` at setup and ``predictions_<split>.parquet`` after each evaluation (rank 0 only)."""

    def setup(self, trainer: L.Trainer, pl_module: L.LightningModule, stage: str) -> None:
        datamodule = getattr(trainer, "datamodule", None)
        if (trainer.global_rank != 0 or datamodule is None or not hasattr(datamodule, "write_qc")
                or getattr(datamodule, "trials", None) is None):
            return
        datamodule.write_qc(run_folder(trainer, pl_module))
        if getattr(datamodule, "_qc_printed", False):
            return
        datamodule._qc_printed = True
        for record in datamodule.qc_records():
            if record["count"]:
                print(f"qc: {record['step']}/{record['table']}: {record['action']} {record['count']:,} "
                      f"({record['reason']})", file=sys.stderr)

    def on_validation_end(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        if not trainer.sanity_checking:
            self.write(trainer, pl_module, "val")

    def on_test_end(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        self.write(trainer, pl_module, "test")

    def on_predict_end(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        self.write(trainer, pl_module, "predict")

    def write(self, trainer: L.Trainer, pl_module: L.LightningModule, split: str) -> Path | None:
        """``predictions_<split>.parquet`` from ``pl_module.evaluation_outputs[split]``; None when there is none or
        this is not global rank 0."""
        outputs = getattr(pl_module, "evaluation_outputs", {}).pop(split, None)
        if outputs is None or trainer.global_rank != 0:
            return None
        frame = prediction_frame(outputs, getattr(trainer, "datamodule", None), split, type(pl_module).__name__)
        directory = run_folder(trainer, pl_module)
        directory.mkdir(parents=True, exist_ok=True)
        path = directory / f"predictions_{split}.parquet"
        frame.write_parquet(path)
        return path


    def write_bundle(self, trainer: L.Trainer, pl_module: L.LightningModule, checkpoint: str | Path, *,
                     seconds: float | None = None, tested: bool = True) -> Path | None:
        """``<run folder>/bundle`` for ``checkpoint`` (:func:`readgaze.models.training.bundle.write_bundle`), from
        the run folder's ``predictions_{val,test}.parquet``, which must be the checkpoint's (validate and test it
        first); None when this is not global rank 0."""
        if trainer.global_rank != 0:
            return None
        from readgaze.models.training.bundle import write_bundle

        folder = run_folder(trainer, pl_module)
        log_dir = getattr(trainer.logger, "log_dir", None)  # not trainer.log_dir: under DDP it waits for every rank
        return write_bundle(folder / "bundle", checkpoint=checkpoint, model=pl_module, datamodule=trainer.datamodule,
                            val_predictions=folder / "predictions_val.parquet",
                            test_predictions=folder / "predictions_test.parquet" if tested else None,
                            config=Path(log_dir or folder) / "config.yaml", seconds=seconds,
                            epochs=trainer.current_epoch)


def prediction_frame(outputs: dict, datamodule, split: str, model: str) -> pl.DataFrame:
    """One row per trial from ``{"logits" (N, C), "label" (N,), "regime" (N,) codes, "trial_id" [N]}`` (and, from
    a regression model, ``"value"`` (N,) in the target's units: the row's ``prediction_value``), joined with the
    datamodule's trials for ``fold_index``, ``participant_id`` and ``item_id`` (when it has them)."""
    logits, label, regime = outputs["logits"], outputs["label"], outputs["regime"]
    keys = pl.DataFrame({"trial_id": outputs["trial_id"], "label": label.tolist(),
                         "regime": [REGIMES[r] for r in regime.tolist()]})
    trials = getattr(datamodule, "trials", None)
    if trials is not None:
        keys = keys.join(trials.select("trial_id", "fold_index", "participant_id", "item_id"), on="trial_id",
                         how="left", maintain_order="left")
    if "value" in outputs:
        return make_predictions(keys, value=outputs["value"].numpy(), split=split, model=model)
    return make_predictions(keys, torch.softmax(logits.float(), dim=-1).numpy(), split=split, model=model)
