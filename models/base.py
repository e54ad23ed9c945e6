"""``ReadingModel``: the one LightningModule base every readgaze model extends.

It owns what no model file should repeat: the class-weighted cross-entropy (inverse training-class frequency,
``sum(counts) / counts`` as EyeBench), balanced accuracy (threshold 0.5 on P(class 1), i.e. the argmax) and AUROC
per evaluation regime and pooled ("all") with torchmetrics, and the optimiser (AdamW, optional linear warm-up and
decay). It computes only: after each evaluation epoch it leaves the trials' logits, labels, regimes and ids in
``evaluation_outputs[split]`` (gathered from every process and de-duplicated under DDP), and
:class:`readgaze.models.training.callbacks.RunWriter` (added by ``readgaze fit``/``cv``/``bench``) writes them as
``predictions_{val,test,predict}.parquet`` and the datamodule's ``qc.json``.

Several processes (DDP, ``--trainer.strategy ddp --trainer.devices N``): each process trains on its share of every
batch; the class-weighted loss is normalised by the weights of the *global* batch (an all-reduce of one number), so
the averaged gradient is the one-process gradient of the same global batch. Evaluation outputs are gathered from
every process before the metrics, so every process logs the same values (``sync_dist`` then averages equal numbers).

Regression (a task of kind ``regression`` in :mod:`readgaze.tasks`, e.g. ``reading_comprehension_skill``; the
datamodule's ``task_kind`` and ``num_classes`` 1 reach the model through LightningCLI links, as ``num_classes`` does):
the same ``forward`` gives ``(B, 1)``, the *standardised* prediction. The loss is the mean squared error against the
standardised target ``(y - mean) / std``, mean and std of the training labels (set at ``setup`` from the datamodule's
:attr:`~readgaze.models.data.ReadingDataModule.label_stats`, saved in the checkpoint), so a prediction is
``output * std + mean`` in the target's units wherever the model is loaded. Metrics are RMSE, MAE and R² per regime
and pooled, in the target's units (:func:`readgaze.metrics_regression.regression_scores`, scikit-learn; R² only where
the labels vary). ``loss/val`` is then ``(RMSE_all / std)²``, a strictly increasing function of the pooled validation
RMSE, so the configs' checkpoint and early-stopping monitor ``loss/val`` (min) and ``readgaze cv``'s grid choice on
the validation loss select by validation RMSE (``rmse_all/val``, also logged) without a second config per task.

A subclass implements ``forward(batch) -> logits (B, num_classes)`` and nothing else. Its ``__init__`` names its own
arguments, and of the seven training arguments below only those whose default is its paper's (``learning_rate: float =
1e-5``); it passes the rest on unnamed (``def __init__(self, ..., **training)``, ``super().__init__(...,
**training)``): LightningCLI (jsonargparse) follows ``**training`` to this class's signature, so every config key
``model.init_args.num_classes`` ... ``task_kind`` keeps its name, and :func:`init_arguments` lists them all.
"""

from __future__ import annotations

import inspect
import logging
from typing import Literal

import lightning as L
import torch
import torch.nn.functional as F
from torchmetrics.functional.classification import binary_auroc, multiclass_accuracy, multiclass_auroc

from readgaze.errors import ConfigError
from readgaze.models.data.batch import REGIMES, ReadingBatch

log = logging.getLogger(__name__)


class ReadingModel(L.LightningModule):
    """Loss, metrics and optimiser shared by every model.

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
        Where :class:`~readgaze.models.training.callbacks.RunWriter` writes this model's predictions and
        ``qc.json``; default the logger's ``log_dir`` (or ``trainer.default_root_dir``). The model itself writes
        nothing.
    task_kind : {"classification", "regression"}
        Linked from the datamodule (the task's kind in :mod:`readgaze.tasks`). ``regression`` needs
        ``num_classes`` 1: the one output is the standardised predicted value (module docstring);
        ``class_weighted_loss`` is then ignored.
    """

    adam_betas: tuple[float, float] = (0.9, 0.999)
    """AdamW betas; EyeBench's RoBERTa-based models use (0.9, 0.98) and eps 1e-6 (their classes set them)."""
    adam_eps: float = 1e-8

    def __init__(self, num_classes: int = 2, learning_rate: float = 1e-3, weight_decay: float = 0.0,
                 warmup_ratio: float = 0.0, class_weighted_loss: bool = True,
                 predictions_dir: str | None = None,
                 task_kind: Literal["classification", "regression"] = "classification") -> None:
        super().__init__()
        if task_kind not in ("classification", "regression"):
            raise ConfigError(f"model.init_args.task_kind: got {task_kind!r}, expected classification or regression")
        if (task_kind == "regression") != (num_classes == 1):
            raise ConfigError(f"model.init_args.num_classes: got {num_classes} for a {task_kind} task, expected "
                              f"{'1 (one predicted value)' if task_kind == 'regression' else 'at least 2 classes'}")
        self.num_classes, self.learning_rate, self.weight_decay = num_classes, learning_rate, weight_decay
        self.warmup_ratio, self.class_weighted_loss, self.predictions_dir = (warmup_ratio, class_weighted_loss,
                                                                             predictions_dir)
        self.task_kind = task_kind
        self.register_buffer("class_weights", torch.ones(num_classes), persistent=False)
        self.target_mean, self.target_std = 0.0, 1.0
        """Regression: the training labels' mean and standard deviation (target units; plain floats, saved in the
        checkpoint under ``regression_target``, so no precision setting or device move changes them)."""
        self._target_scale_set = False
        self._outputs: list[dict] = []
        self.evaluation_outputs: dict[str, dict] = {}
        """split -> ``{"logits" (N, C) float32, "label" (N,), "regime" (N,) codes, "trial_id" [N]}`` of the last
        evaluation epoch, one entry per trial (read and removed by the RunWriter callback); regression adds
        ``"value"`` (N,) float64, the de-standardised prediction in the target's units."""

    @property
    def is_regression(self) -> bool:
        """Whether the model predicts one value (``task_kind`` regression) rather than class logits."""
        return self.task_kind == "regression"

    def forward(self, batch: ReadingBatch) -> torch.Tensor:
        raise NotImplementedError

    # ---- training ----
    def setup(self, stage: str) -> None:
        datamodule = getattr(self.trainer, "datamodule", None) if self._trainer is not None else None
        if self.is_regression:
            if getattr(datamodule, "trials", None) is not None and stage == "fit":
                self.set_target_scale(*datamodule.label_stats)
            elif stage == "fit" and not self._target_scale_set:
                raise ConfigError("a regression model standardises its target by the training labels' mean and "
                                  "standard deviation, but the trainer has no readgaze datamodule with training "
                                  "trials; pass datamodule=ReadingDataModule(...) or call set_target_scale first")
            return
        if self.class_weighted_loss and getattr(datamodule, "trials", None) is not None:
            self.set_class_weights(datamodule.class_counts)
        elif self.class_weighted_loss and stage == "fit":
            raise ConfigError("class_weighted_loss is on but the trainer has no readgaze datamodule with training "
                              "trials to count the classes from; pass datamodule=ReadingDataModule(...) or set "
                              "model.init_args.class_weighted_loss false")

    def set_class_weights(self, counts: torch.Tensor) -> torch.Tensor:
        """Set the loss weights from training class counts ``(num_classes,)``: ``sum / count``, 0 for absent classes."""
        counts = torch.as_tensor(counts, dtype=torch.float32)
        weights = torch.where(counts > 0, counts.sum() / counts.clamp(min=1), torch.zeros_like(counts))
        self.class_weights = weights.to(self.class_weights.device)
        log.info("class weights %s from training counts %s", weights.tolist(), counts.tolist())
        return weights

    def set_target_scale(self, mean: float, std: float) -> None:
        """Standardise the regression target by the training labels' ``mean`` and ``std`` (target units; a std of
        0, one training value, counts as 1)."""
        self.target_mean = float(mean)
        self.target_std = float(std) if std and float(std) > 0 else 1.0
        self._target_scale_set = True
        log.info("regression target standardised by the training mean %.4g and standard deviation %.4g",
                 self.target_mean, self.target_std)

    def on_load_checkpoint(self, checkpoint: dict) -> None:
        """Restore a regression model's target mean and standard deviation (``regression_target``)."""
        if not self.is_regression:
            return
        scale = checkpoint.get("regression_target")
        if scale is None:
            raise ConfigError("this regression checkpoint has no regression_target (the training labels' mean and "
                              "standard deviation): it was not written by a readgaze ReadingModel")
        self.set_target_scale(scale["mean"], scale["std"])

    def standardised(self, label: torch.Tensor) -> torch.Tensor:
        """``(B,)`` target values → ``(B,)`` float32 ``(y - mean) / std``."""
        return ((label.double() - self.target_mean) / self.target_std).float()

    def predicted_value(self, output: torch.Tensor) -> torch.Tensor:
        """``(B, 1)`` standardised output → ``(B,)`` float64 predicted value in the target's units."""
        return output[:, 0].double() * self.target_std + self.target_mean

    def on_save_checkpoint(self, checkpoint: dict) -> None:
        """Keep only this class's own arguments in the checkpoint's hyperparameters (and, for a regression, save the
        target's mean and standard deviation).

        LightningCLI also records link targets the class does not take (e.g. ``n_trial_features`` for RoBERTEye-F);
        ``--ckpt_path`` would pass them back to ``__init__``.
        """
        if self.is_regression:
            checkpoint["regression_target"] = {"mean": self.target_mean, "std": self.target_std}
        accepted = set(init_arguments(type(self)))
        hparams = checkpoint.get("hyper_parameters", {})
        for key in [k for k in hparams if not k.startswith("_") and k not in accepted]:
            del hparams[key]

    def loss(self, logits: torch.Tensor, label: torch.Tensor) -> torch.Tensor:
        """Class-weighted cross-entropy, ``sum(w_y * nll) / sum(w_y)`` over the batch.

        Training under DDP, the denominator is the sum over every process's share of the global batch (an
        all-reduce), times the number of processes (DDP averages the gradients), so the gradient equals the
        one-process gradient of the global batch; a per-process weighted mean would weight the processes' shares
        equally whatever their class mix.
        """
        if self.is_regression:  # MSE on the standardised target; DDP averages each process's mean (equal shares)
            return F.mse_loss(logits[:, 0], self.standardised(label).to(device=logits.device, dtype=logits.dtype))
        weight = self.class_weights.to(logits.dtype)
        if not (self.training and self._trainer is not None and self.trainer.world_size > 1
                and torch.distributed.is_available() and torch.distributed.is_initialized()):
            return F.cross_entropy(logits, label, weight=weight)
        total = weight[label].sum().detach().clone()
        torch.distributed.all_reduce(total)
        return F.cross_entropy(logits, label, weight=weight, reduction="sum") * self.trainer.world_size / total

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
        """``(B, C)`` class probabilities; regression: ``(B,)`` predicted values in the target's units."""
        output = self._collect(batch)
        return self.predicted_value(output) if self.is_regression else torch.softmax(output, dim=-1)

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
        self.evaluation_outputs.pop(split, None)
        if not outputs or self.trainer.sanity_checking:
            return
        logits = torch.cat([o["logits"] for o in outputs])
        label = torch.cat([o["label"] for o in outputs])
        regime = torch.cat([o["regime"] for o in outputs])
        trial_id = [t for o in outputs for t in o["trial_id"]]
        # one row per trial (DDP's sampler pads with repeats), in trial order whatever the number of processes
        first = [i for _, i in sorted({t: i for i, t in reversed(list(enumerate(trial_id)))}.items())]
        logits, label, regime, trial_id = logits[first], label[first], regime[first], [trial_id[i] for i in first]
        if self.is_regression:
            self._finish_regression(split, logits, label, regime, trial_id, log_metrics)
            return
        if log_metrics:  # the same numbers on every process (gathered above): sync_dist averages equal values
            loss = F.cross_entropy(logits, label, weight=self.class_weights.cpu())
            self.log(f"loss/{split}", loss.to(self.device), prog_bar=True, sync_dist=True)  # nccl syncs on device
            for name, value in regime_metrics(logits, label, regime, self.num_classes).items():
                self.log(f"{name}/{split}", value.to(self.device), prog_bar=name == "balanced_accuracy_all",
                         sync_dist=True)
        self.evaluation_outputs[split] = {"logits": logits, "label": label, "regime": regime, "trial_id": trial_id}

    def _finish_regression(self, split: str, output: torch.Tensor, label: torch.Tensor, regime: torch.Tensor,
                           trial_id: list[str], log_metrics: bool) -> None:
        """Regression's end of an evaluation epoch: standardised MSE as ``loss/<split>``, RMSE/MAE/R² per regime
        (target units), and the de-standardised values in :attr:`evaluation_outputs`."""
        value = self.predicted_value(output.cpu())
        if log_metrics:
            loss = F.mse_loss(output[:, 0], self.standardised(label).cpu())
            self.log(f"loss/{split}", loss.to(self.device), prog_bar=True, sync_dist=True)
            for name, number in regression_regime_metrics(value, label, regime).items():
                self.log(f"{name}/{split}", torch.tensor(number, dtype=torch.float32, device=self.device),
                         prog_bar=name == "rmse_all", sync_dist=True)
        self.evaluation_outputs[split] = {"logits": output, "value": value, "label": label, "regime": regime,
                                          "trial_id": trial_id}


def regression_regime_metrics(value: torch.Tensor, label: torch.Tensor, regime: torch.Tensor) -> dict[str, float]:
    """RMSE, MAE and R² (:func:`readgaze.metrics_regression.regression_scores`) per regime present and pooled
    (``*_all``); R² only where the labels vary.

    ``value`` and ``label`` are ``(N,)`` in the target's units, ``regime`` ``(N,)`` codes into :data:`REGIMES`.
    """
    from readgaze.metrics_regression import regression_scores

    y, predicted, codes = label.double().numpy(), value.double().numpy(), regime.numpy()
    groups = {"all": slice(None)}
    groups.update({name: codes == i for i, name in enumerate(REGIMES) if bool((codes == i).any())})
    metrics = {}
    for name, keep in groups.items():
        scores = regression_scores(y[keep], predicted[keep])
        for metric in ("rmse", "mae", "r2"):
            if scores[metric] is not None:
                metrics[f"{metric}_{name}"] = scores[metric]
    return metrics


def init_arguments(cls: type) -> list[str]:
    """The constructor arguments of a model class: its own and, when it takes ``**training``, the seven training
    arguments of :class:`ReadingModel` (what ``**training`` stands for, however many classes pass it on)."""
    parameters = inspect.signature(cls.__init__).parameters.values()
    names = [p.name for p in parameters if p.name != "self" and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
    if any(p.kind is p.VAR_KEYWORD for p in parameters):
        names += [n for n in inspect.signature(ReadingModel.__init__).parameters if n != "self"]
    return list(dict.fromkeys(names))


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
