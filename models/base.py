"""``ReadingModel``: the one LightningModule base every readgaze model extends.

It owns what no model file should repeat: the class-weighted cross-entropy (inverse training-class frequency,
``sum(counts) / counts`` as EyeBench), balanced accuracy (threshold 0.5 on P(class 1), i.e. the argmax) and AUROC
per evaluation regime and pooled ("all") with torchmetrics, the optimiser (AdamW, optional linear warm-up and decay),
and the per-trial predictions written to parquet (``predictions_{val,test,predict}.parquet`` in the logger's
folder) with the columns ``label, prediction_prob, regime, fold_index, participant_id, item_id, trial_id, split,
model`` that :func:`readgaze.metrics.evaluate` reads. ``prediction_prob`` is P(class 1) for two classes and the
list of class probabilities otherwise.

A subclass implements ``forward(batch) -> logits (B, num_classes)`` and nothing else.
"""

from __future__ import annotations

import inspect
import logging
import sys
from pathlib import Path

import lightning as L
import polars as pl
import torch
import torch.nn.functional as F
from torchmetrics.functional.classification import binary_auroc, multiclass_accuracy, multiclass_auroc

from readgaze.errors import ConfigError
from readgaze.models.data.batch import REGIMES, ReadingBatch

log = logging.getLogger(__name__)


class ReadingModel(L.LightningModule):
    """Loss, metrics, optimiser and prediction output shared by every model.

    Parameters
    ----------
    num_classes : int
        Linked from the datamodule (2 for reading_goal and comprehension).
    learning_rate : float
        AdamW learning rate.
    weight_decay : float
        AdamW weight decay (not applied to biases and norm weights).
    warmup_ratio : float
        Share of the training steps with a linear learning-rate warm-up, followed by linear decay to 0; 0 = constant.
    class_weighted_loss : bool
        Weight the cross-entropy by inverse training-class frequency (``sum(counts) / counts``, from the
        datamodule's ``class_counts`` at ``setup``). When no datamodule with training trials is attached (e.g.
        ``trainer.fit(model, train_dataloaders=...)``), ``fit`` stops with :class:`readgaze.errors.ConfigError`
        instead of silently training unweighted; set it False to train unweighted.
    predictions_dir : str, optional
        Where to write predictions; default the logger's ``log_dir`` (or ``trainer.default_root_dir``).
    """

    adam_betas: tuple[float, float] = (0.9, 0.999)
    """AdamW betas; EyeBench's RoBERTa-based models use (0.9, 0.98) and eps 1e-6 (their classes set them)."""
    adam_eps: float = 1e-8

    def __init__(self, num_classes: int = 2, learning_rate: float = 1e-3, weight_decay: float = 0.0,
                 warmup_ratio: float = 0.0, class_weighted_loss: bool = True,
                 predictions_dir: str | None = None) -> None:
        super().__init__()
        self.num_classes, self.learning_rate, self.weight_decay = num_classes, learning_rate, weight_decay
        self.warmup_ratio, self.class_weighted_loss, self.predictions_dir = (warmup_ratio, class_weighted_loss,
                                                                             predictions_dir)
        self.register_buffer("class_weights", torch.ones(num_classes), persistent=False)
        self._outputs: list[dict] = []

    def forward(self, batch: ReadingBatch) -> torch.Tensor:
        raise NotImplementedError

    # ---- training ----
    def setup(self, stage: str) -> None:
        datamodule = getattr(self.trainer, "datamodule", None) if self._trainer is not None else None
        if self.class_weighted_loss and getattr(datamodule, "trials", None) is not None:
            self.set_class_weights(datamodule.class_counts)
        elif self.class_weighted_loss and stage == "fit":
            raise ConfigError("class_weighted_loss is on but the trainer has no readgaze datamodule with training "
                              "trials to count the classes from; pass datamodule=ReadingDataModule(...) or set "
                              "model.init_args.class_weighted_loss false")
        if datamodule is not None and hasattr(datamodule, "write_qc") and getattr(datamodule, "trials",
                                                                                  None) is not None:
            self._write_qc(datamodule)

    def set_class_weights(self, counts: torch.Tensor) -> torch.Tensor:
        """Set the loss weights from training class counts ``(num_classes,)``: ``sum / count``, 0 for absent classes."""
        counts = torch.as_tensor(counts, dtype=torch.float32)
        weights = torch.where(counts > 0, counts.sum() / counts.clamp(min=1), torch.zeros_like(counts))
        self.class_weights = weights.to(self.class_weights.device)
        log.info("class weights %s from training counts %s", weights.tolist(), counts.tolist())
        return weights

    def _write_qc(self, datamodule) -> None:
        """``qc.json`` beside the predictions; the non-zero records printed once per datamodule."""
        if self._trainer is None or self.trainer.global_rank != 0:
            return
        log_dir = getattr(self.logger, "log_dir", None) if self.logger else None
        datamodule.write_qc(self.predictions_dir or log_dir or self.trainer.default_root_dir)
        if getattr(datamodule, "_qc_printed", False):
            return
        datamodule._qc_printed = True
        for record in datamodule.qc_records():
            if record["count"]:
                print(f"qc: {record['step']}/{record['table']}: {record['action']} {record['count']:,} "
                      f"({record['reason']})", file=sys.stderr)

    def on_save_checkpoint(self, checkpoint: dict) -> None:
        """Keep only this class's own arguments in the checkpoint's hyperparameters.

        LightningCLI also records link targets the class does not take (e.g. ``n_trial_features`` for RoBERTEye-F);
        ``--ckpt_path`` would pass them back to ``__init__``.
        """
        accepted = set(inspect.signature(type(self).__init__).parameters)
        hparams = checkpoint.get("hyper_parameters", {})
        for key in [k for k in hparams if not k.startswith("_") and k not in accepted]:
            del hparams[key]

    def loss(self, logits: torch.Tensor, label: torch.Tensor) -> torch.Tensor:
        return F.cross_entropy(logits, label, weight=self.class_weights.to(logits.dtype))

    def training_step(self, batch: ReadingBatch, batch_index: int) -> torch.Tensor:
        loss = self.loss(self(batch), batch.label)
        self.log("loss/train", loss, batch_size=len(batch), prog_bar=True)
        return loss

    def configure_optimizers(self):
        decay, no_decay = [], []
        for _name, parameter in self.named_parameters():
            if parameter.requires_grad:
                (no_decay if parameter.ndim < 2 else decay).append(parameter)
        optimizer = torch.optim.AdamW([{"params": decay, "weight_decay": self.weight_decay},
                                       {"params": no_decay, "weight_decay": 0.0}], lr=self.learning_rate,
                                      betas=self.adam_betas, eps=self.adam_eps)
        if self.warmup_ratio <= 0:
            return optimizer
        total = max(int(self.trainer.estimated_stepping_batches), 1)
        warmup = max(int(total * self.warmup_ratio), 1)
        schedule = lambda step: min((step + 1) / warmup, max(total - step, 0) / max(total - warmup, 1))  # noqa: E731
        scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, schedule)
        return {"optimizer": optimizer, "lr_scheduler": {"scheduler": scheduler, "interval": "step"}}

    # ---- evaluation ----
    def validation_step(self, batch: ReadingBatch, batch_index: int) -> None:
        self._collect(batch)

    def test_step(self, batch: ReadingBatch, batch_index: int) -> None:
        self._collect(batch)

    def predict_step(self, batch: ReadingBatch, batch_index: int) -> torch.Tensor:
        return torch.softmax(self._collect(batch), dim=-1)

    def on_validation_epoch_end(self) -> None:
        self._finish("val")

    def on_test_epoch_end(self) -> None:
        self._finish("test")

    def on_predict_epoch_end(self) -> None:
        self._finish("predict", log_metrics=False)

    def _collect(self, batch: ReadingBatch) -> torch.Tensor:
        logits = self(batch).float()
        self._outputs.append({"logits": logits.detach().cpu(), "label": batch.label.cpu(),
                              "regime": batch.regime_index.cpu(), "trial_id": list(batch.trial_id)})
        return logits

    def _finish(self, split: str, log_metrics: bool = True) -> None:
        outputs, self._outputs = _gather(self._outputs, self.trainer.world_size), []
        if not outputs or self.trainer.sanity_checking:
            return
        logits = torch.cat([o["logits"] for o in outputs])
        label = torch.cat([o["label"] for o in outputs])
        regime = torch.cat([o["regime"] for o in outputs])
        trial_id = [t for o in outputs for t in o["trial_id"]]
        first = sorted({t: i for i, t in reversed(list(enumerate(trial_id)))}.values())  # DDP pads with repeats
        logits, label, regime, trial_id = logits[first], label[first], regime[first], [trial_id[i] for i in first]
        if log_metrics:
            self.log(f"loss/{split}", F.cross_entropy(logits, label, weight=self.class_weights.cpu()), prog_bar=True)
            for name, value in regime_metrics(logits, label, regime, self.num_classes).items():
                self.log(f"{name}/{split}", value, prog_bar=name == "balanced_accuracy_all")
        self._write_predictions(split, logits, label, regime, trial_id)

    def _write_predictions(self, split, logits, label, regime, trial_id) -> Path | None:
        """One row per trial; joined with the datamodule's trials for participant, item and fold."""
        probs = torch.softmax(logits, dim=-1)
        prob = pl.Series("prediction_prob", probs[:, 1].tolist() if self.num_classes == 2 else probs.tolist())
        frame = pl.DataFrame({"trial_id": trial_id, "label": label.tolist(),
                              "regime": [REGIMES[r] for r in regime.tolist()]}).with_columns(prob)
        datamodule = getattr(self.trainer, "datamodule", None)
        if datamodule is not None and getattr(datamodule, "trials", None) is not None:
            ids = datamodule.trials.select("trial_id", "fold_index", "participant_id", "item_id")
            frame = frame.join(ids, on="trial_id", how="left")
        frame = frame.with_columns(pl.lit(split).alias("split"), pl.lit(type(self).__name__).alias("model"))
        log_dir = getattr(self.logger, "log_dir", None) if self.logger else None
        directory = Path(self.predictions_dir or log_dir or self.trainer.default_root_dir)
        if self.trainer.global_rank != 0:
            return None
        directory.mkdir(parents=True, exist_ok=True)
        path = directory / f"predictions_{split}.parquet"
        frame.write_parquet(path)
        return path


def _gather(outputs: list[dict], world_size: int) -> list[dict]:
    """Every process's evaluation outputs (DDP); the outputs themselves on one process."""
    if world_size <= 1 or not torch.distributed.is_initialized():
        return outputs
    gathered: list[list[dict]] = [[] for _ in range(world_size)]
    torch.distributed.all_gather_object(gathered, outputs)
    return [o for part in gathered for o in part]


def regime_metrics(logits: torch.Tensor, label: torch.Tensor, regime: torch.Tensor,
                   num_classes: int) -> dict[str, torch.Tensor]:
    """Balanced accuracy and AUROC per regime present and pooled (``*_all``); AUROC only with both classes.

    Balanced accuracy is the macro recall of the argmax prediction (for two classes: P(1) > 0.5).
    """
    metrics = {}
    groups = {"all": torch.ones_like(label, dtype=torch.bool)}
    groups.update({name: regime == i for i, name in enumerate(REGIMES) if bool((regime == i).any())})
    for name, keep in groups.items():
        y, z = label[keep], logits[keep]
        prob = torch.softmax(z, dim=-1)
        present = torch.unique(y)
        recall = multiclass_accuracy(z.argmax(-1), y, num_classes=num_classes, average="none")
        metrics[f"balanced_accuracy_{name}"] = recall[present].mean()
        if len(present) == num_classes:
            metrics[f"auroc_{name}"] = (binary_auroc(prob[:, 1], y) if num_classes == 2
                                        else multiclass_auroc(prob, y, num_classes=num_classes))
    return metrics
