"""What a training run says while it trains: one line per epoch, and after the first epoch how long it will take.

:class:`EpochLines` is a Lightning callback (``readgaze fit`` and every ``readgaze cv`` fold get it). After the first
epoch it prints the expected time, in a terminal too::

    readgaze fit: epoch 1 took 5.1 s (training + validation); max_epochs 100: at most 8 min 25 s; early stopping
      (patience 10 on loss/val) ends it at epoch 11 at the soonest (51 s)

and where the output is not a terminal (a log file, a pipe, a batch job; Lightning's progress bar then prints
nothing per epoch) or the progress bar is off, one line per epoch::

    epoch 3/100: loss train 0.681 val 0.672, val AUROC 79.6; 5.1 s/epoch; left: at most 8 min 15 s (max_epochs),
      41 s if loss/val does not improve again (patience 10)

``train`` is the mean training loss of the epoch's batches; ``val`` and ``val AUROC`` are what the model logged
(``loss/val``, ``auroc_all/val``; see :class:`readgaze.models.base.ReadingModel`). Both time bounds count whole
epochs at the mean epoch time so far: the first is the configured ``max_epochs``, the second the epoch where early
stopping would stop if the monitored value never improves again.
"""

from __future__ import annotations

import sys
import time

import lightning as L

from readgaze.models.training.runner import _duration


class EpochLines(L.Callback):
    """Print the expected training time after the first epoch and, off a terminal, a line per epoch.

    Parameters
    ----------
    every_epoch : bool, optional
        Print the per-epoch line; default: when standard error is not a terminal or the trainer has no progress bar.
    stream : file, optional
        Where to print (default ``sys.stderr`` at print time, so a redirected ``sys.stderr`` is followed).
    prefix : str
        Put before the first-epoch line (``"readgaze fit: "``).
    """

    def __init__(self, every_epoch: bool | None = None, stream=None, prefix: str = "readgaze fit: ") -> None:
        self.every_epoch, self.stream, self.prefix = every_epoch, stream, prefix
        self._reset()

    def _reset(self) -> None:
        self.started: float | None = None
        self.epoch_started = 0.0
        self.epochs_done = 0
        self.loss_sum, self.loss_n = 0.0, 0

    def _print(self, trainer, line: str) -> None:
        bar = trainer.progress_bar_callback
        if bar is not None and getattr(bar, "is_enabled", False) and self._terminal():
            bar.print(line)  # above a live progress bar, not through it
        else:
            print(line, file=self.stream or sys.stderr, flush=True)

    def _terminal(self) -> bool:
        stream = self.stream or sys.stderr
        return bool(getattr(stream, "isatty", lambda: False)())

    def on_fit_start(self, trainer, pl_module) -> None:
        self._reset()
        self.started = time.perf_counter()

    def on_train_epoch_start(self, trainer, pl_module) -> None:
        self.epoch_started = time.perf_counter()
        self.loss_sum, self.loss_n = 0.0, 0

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx) -> None:
        loss = outputs.get("loss") if isinstance(outputs, dict) else outputs
        if loss is not None:
            self.loss_sum += float(loss.detach())
            self.loss_n += 1

    def on_train_epoch_end(self, trainer, pl_module) -> None:
        if trainer.sanity_checking or trainer.global_rank != 0 or self.started is None:
            return
        self.epochs_done += 1
        per_epoch = (time.perf_counter() - self.started) / self.epochs_done
        max_epochs = trainer.max_epochs if trainer.max_epochs and trainer.max_epochs > 0 else None
        stopping = trainer.early_stopping_callback
        if self.epochs_done == 1:
            self._print(trainer, self.prefix + first_epoch_line(time.perf_counter() - self.epoch_started,
                                                                 max_epochs, stopping))
        every = self.every_epoch
        if every is None:
            bar = trainer.progress_bar_callback
            every = not self._terminal() or bar is None or not getattr(bar, "is_enabled", False)
        if every:
            metrics = {k: float(v) for k, v in trainer.callback_metrics.items()
                       if getattr(v, "numel", lambda: 1)() == 1}
            train = self.loss_sum / self.loss_n if self.loss_n else None
            self._print(trainer, epoch_line(trainer.current_epoch + 1, max_epochs, train, metrics, per_epoch,
                                            stopping))


def first_epoch_line(seconds: float, max_epochs: int | None, stopping) -> str:
    """``epoch 1 took 5.1 s ...; max_epochs 100: at most 8 min 25 s; early stopping ... at the soonest (51 s)``."""
    line = f"epoch 1 took {seconds:.1f} s (training + validation)"
    if max_epochs:
        line += f"; max_epochs {max_epochs}: at most {_duration(seconds * max_epochs)}"
    soonest = None if stopping is None else stopping.patience + 1
    if soonest is not None and (not max_epochs or soonest < max_epochs):
        line += (f"; early stopping (patience {stopping.patience} on {stopping.monitor}) ends it at epoch {soonest} "
                 f"at the soonest ({_duration(seconds * soonest)})")
    return line


def epoch_line(epoch: int, max_epochs: int | None, train_loss: float | None, metrics: dict, per_epoch: float,
               stopping) -> str:
    """One epoch: losses, validation AUROC, mean epoch time and the time left (see the module docstring)."""
    def number(value, scale=1.0, digits=3):
        return "n/a" if value is None else f"{scale * value:.{digits}f}"

    parts = [f"epoch {epoch}" + (f"/{max_epochs}" if max_epochs else ""),
             f": loss train {number(train_loss)} val {number(metrics.get('loss/val'))}"]
    if "auroc_all/val" in metrics:
        parts.append(f", val AUROC {number(metrics['auroc_all/val'], 100, 1)}")
    parts.append(f"; {per_epoch:.1f} s/epoch")
    left = []
    if max_epochs:
        left.append(f"at most {_duration(per_epoch * max(max_epochs - epoch, 0))} (max_epochs)")
    more = None if stopping is None else max(stopping.patience - int(getattr(stopping, "wait_count", 0)), 0)
    if more is not None and (not max_epochs or more < max_epochs - epoch):
        left.append(f"{_duration(per_epoch * more)} if {stopping.monitor} does not improve again "
                    f"(patience {stopping.patience})")
    if left:
        parts.append("; left: " + ", ".join(left))
    return "".join(parts)
