"""``readgaze fit|validate|test``: LightningCLI over :class:`~readgaze.models.data.ReadingDataModule` and any
model.

The YAML picks the model by ``model.class_path`` (any :class:`~readgaze.models.base.ReadingModel` subclass; no
registry).
Values the data determines reach the model through links, so a YAML never sets them:

* ``data.text_encoder`` → ``model.init_args.text_encoder`` (the encoder matches the tokenizer);
* ``data.n_fixation_features``, ``data.n_trial_features``, ``data.num_classes``, ``data.task_kind`` → the model
  argument of the same name, after the datamodule is built (a regression task: ``num_classes`` 1 and
  ``task_kind`` regression, so the model's head gives one standardised value).

A model without such an argument (BEyeLSTM has no text encoder) is left alone;
:class:`readgaze.models.base.ReadingModel`
keeps only its own arguments in a checkpoint's hyperparameters, so ``--ckpt_path`` reloads every model.

Loggers default to CSV and TensorBoard under ``trainer.default_root_dir`` (predictions go to the CSV run folder); W&B
is used (and imported) only when a
YAML names ``lightning.pytorch.loggers.WandbLogger``.

``-c`` takes a file or the name of a packaged config (``reading_goal/roberteye_f``, or the model's own ``roberteye_f``
with ``--data.task``; ``readgaze configs`` lists them).
``readgaze fit`` then restores the best checkpoint (lowest validation loss), validates and tests it on the fold's
test split (``--no-test`` skips the test), writes ``predictions_val.parquet`` and ``predictions_test.parquet`` to the
run folder, writes the model bundle (``<run>/bundle``: :mod:`readgaze.models.training.bundle`, what ``readgaze
predict`` scores new data with) and ends with a summary: where it wrote, balanced accuracy and AUROC per regime
(a score from fewer than 30 trials marked), and a warning when the predictions are constant. While it trains it
prints the expected time after the first epoch and, off a terminal, a line per epoch
(:mod:`readgaze.models.training.epochs`). With ``--data.text_encoder tiny`` (randomly initialised, 32 wide) a
config written for a pretrained encoder gets the tiny encoder's recipe (:func:`tiny_recipe`: learning rate, warm-up, no
gradient accumulation), and the run says so; values given on the command line win.

A bad key or value is one line: the key, the closest valid ones, and ``readgaze fit --help`` for the full usage.

Example::

    readgaze fit -c reading_goal/roberteye_f --data.path DIR --data.fold 0 --data.text_encoder tiny
"""

from __future__ import annotations

import contextlib
import inspect
import io
import logging
import os
import re
import sys
import time
import warnings
from pathlib import Path
from typing import Optional

from lightning.pytorch.cli import LightningCLI
from lightning.pytorch.loggers import CSVLogger, TensorBoardLogger

from readgaze.errors import ConfigError, ReadgazeError
from readgaze.models.base import ReadingModel
from readgaze.models.data import ReadingDataModule
from readgaze.models.training.registry import TINY_LEARNING_RATE, tiny_recipe  # noqa: F401 (cli's names)

LINKED = ("n_fixation_features", "n_word_features", "n_trial_features", "num_classes", "task_kind")


class ReadgazeCLI(LightningCLI):
    """LightningCLI with readgaze's links between datamodule and model."""

    def add_arguments_to_parser(self, parser) -> None:
        if "text_encoder" in inspect.signature(self.datamodule_class).parameters:  # goal_reconstruction has none
            parser.link_arguments("data.text_encoder", "model.init_args.text_encoder")
        for name in LINKED:
            parser.link_arguments(f"data.{name}", f"model.init_args.{name}", apply_on="instantiate")
        parser.add_argument("--grid", type=Optional[dict], default=None,  # noqa: UP045 (a runtime type)
                            help="readgaze cv's hyperparameter grid (key -> list of values); fit ignores it")

    def instantiate_trainer(self, **kwargs):
        """Default loggers: CSV (``<root>/csv/version_N``, the run's log_dir) and TensorBoard
        (``<root>/tensorboard``); the :class:`~readgaze.models.training.callbacks.RunWriter` that writes
        predictions, qc.json and the model bundle, and :class:`~readgaze.models.training.epochs.EpochLines` (a line
        per epoch and the expected time), are always added."""
        from readgaze.models.training.callbacks import RunWriter
        from readgaze.models.training.epochs import EpochLines

        config = self._get(self.config_init, "trainer", default={})
        if config.get("logger") in (None, True):
            root = config.get("default_root_dir") or os.getcwd()
            kwargs["logger"] = [CSVLogger(root, name="csv"), TensorBoardLogger(root, name="tensorboard")]
        trainer = super().instantiate_trainer(**kwargs)
        if not any(isinstance(c, RunWriter) for c in trainer.callbacks):
            trainer.callbacks.append(RunWriter())
        if not any(isinstance(c, EpochLines) for c in trainer.callbacks):
            trainer.callbacks.append(EpochLines())
        return trainer

    def before_fit(self) -> None:
        """Several processes: say what the effective batch is (once)."""
        if self.trainer.world_size > 1 and self.trainer.is_global_zero:
            print(f"readgaze fit: {effective_batch(self.trainer, self.datamodule)}", file=sys.stderr)

    def parse_arguments(self, parser, args) -> None:
        """Parse; a parse error becomes one :class:`ConfigError` line instead of 55 lines of usage."""
        self._explicit = {name for name in ("learning_rate", "warmup_ratio", "batch_size", "accumulate_grad_batches")
                          if any(a.startswith("--") and name in a for a in args)}
        buffer = io.StringIO()
        try:
            with contextlib.redirect_stderr(buffer):
                super().parse_arguments(parser, args)
        except SystemExit as stop:
            if stop.code in (0, None):
                sys.stderr.write(buffer.getvalue())
                raise
            command = args[0] if args and not args[0].startswith("-") else "fit"
            raise ConfigError(config_error_line(buffer.getvalue(), command)) from None
        sys.stderr.write(buffer.getvalue())

    def before_instantiate_classes(self) -> None:
        """The tiny encoder's recipe where the config carries a pretrained encoder's (see :func:`tiny_recipe`)."""
        config = self.config.get(self.subcommand) if self.subcommand else self.config
        if config is None or config.get("data") is None or config.get("model") is None:
            return
        if config["data"].get("text_encoder") == "tiny":
            for note in tiny_recipe(config, getattr(self, "_explicit", set())):
                if _launcher_rank() == 0:  # DDP's other processes parse the same arguments
                    print(f"readgaze: --data.text_encoder tiny: {note}", file=sys.stderr)

    def after_fit(self) -> None:
        """Validate (and test) the best checkpoint, write the model bundle, then print the run's summary."""
        fit_summary(self.trainer, self.model, self.datamodule,
                    time.perf_counter() - getattr(self, "_started", time.perf_counter()),
                    test=not getattr(self, "_skip_test", False))


def _launcher_rank() -> int:
    """This process's global rank as DDP's launcher sets it in the environment (0 before any launch)."""
    return int(os.environ.get("RANK", os.environ.get("LOCAL_RANK", "0")) or 0)


def effective_batch(trainer, datamodule) -> str:
    """``effective batch 16 = 2 processes x 8 per process x 1 accumulation step(s)``: what one optimiser step sees.

    ``data.batch_size`` is per process: with N processes (``trainer.devices`` x ``trainer.num_nodes``) an optimiser
    step averages N x batch_size x accumulate_grad_batches trials, and an epoch has N times fewer steps. To train as
    one process with batch B does, set ``--data.batch_size B/N``.
    """
    per_process = getattr(datamodule, "batch_size", None)
    accumulate = getattr(trainer, "accumulate_grad_batches", 1) or 1
    world = trainer.world_size
    if per_process is None:
        return f"{world} process(es) x the per-process batch x {accumulate} accumulation step(s)"
    return (f"effective batch {world * per_process * accumulate} = {world} process(es) x {per_process} per process "
            f"(data.batch_size) x {accumulate} accumulation step(s)")


def fit_summary(trainer, model, datamodule, seconds: float, test: bool = True) -> None:
    """Validate and test ``trainer``'s best checkpoint, write its model bundle (the run's
    :class:`~readgaze.models.training.callbacks.RunWriter`, in ``<run>/bundle``) and print (on global rank 0 only)
    where the run wrote and how well it did. ``test=False`` (``--no-test``) skips the test. Under DDP every process
    validates and tests (they gather each other's trials)."""
    from readgaze.models.training.callbacks import run_folder
    from readgaze.models.training.summary import constant_warning, metric_table, regime_counts, written

    callback = trainer.checkpoint_callback
    best = callback.best_model_path if callback is not None else ""
    ckpt = best or None
    folder = run_folder(trainer, model)
    # the best checkpoint's predictions replace the last epoch's in the run folder (with the loggers hidden below
    # they went to default_root_dir, and the run folder kept the last epoch's validation predictions)
    model.predictions_dir = str(folder)
    loggers, trainer.loggers = trainer.loggers, []  # metrics.csv keeps one validation row per epoch
    try:
        val = trainer.validate(model, datamodule=datamodule, ckpt_path=ckpt, verbose=False, weights_only=False)
    finally:
        trainer.loggers = loggers
    tested = (trainer.test(model, datamodule=datamodule, ckpt_path=ckpt, verbose=False, weights_only=False)
              if test else [])
    if not trainer.is_global_zero:
        return
    bundle = _bundle(trainer, model, best, seconds, test)
    lines = [f"readgaze fit: done in {seconds:.0f} s ({trainer.current_epoch} epoch"
             f"{'' if trainer.current_epoch == 1 else 's'}); wrote {folder}",
             f"  files: {written(folder)}"]
    if trainer.world_size > 1:
        lines.append(f"  {trainer.world_size} processes ({trainer.strategy.__class__.__name__}): "
                     f"{effective_batch(trainer, datamodule)}; metrics over every process's trials")
    if best:
        lines.append(f"  best checkpoint: {best} (epoch {_epoch(best, trainer)}, {callback.monitor} "
                     f"{float(callback.best_model_score):.4f})")
    lines.append(bundle)
    import polars as pl

    counts, warnings = {}, []
    for split in ("val", "test") if test else ("val",):
        path = folder / f"predictions_{split}.parquet"
        if path.is_file():
            predictions = pl.read_parquet(path)
            counts.update(regime_counts(predictions, split))
            warning = constant_warning(predictions, f"{split} predictions", getattr(model, "learning_rate", None))
            if warning:
                warnings.append(warning)
    lines += [metric_table(val[0] if val else {}, tested[0] if tested else {}, counts), *warnings]
    print("\n".join(lines), file=sys.stderr)


def _bundle(trainer, model, best: str, seconds: float, tested: bool) -> str:
    """Write the run's model bundle (:meth:`RunWriter.write_bundle`); the summary line saying where (or why not)."""
    from readgaze.models.training.callbacks import RunWriter

    if not best:
        return "  model bundle: none (no best checkpoint was saved; the config needs a ModelCheckpoint)"
    datamodule = getattr(trainer, "datamodule", None)
    if getattr(datamodule, "scalers", None) is None:
        return f"  model bundle: none ({type(datamodule).__name__} has no feature scalers to save)"
    writer = next((c for c in trainer.callbacks if isinstance(c, RunWriter)), RunWriter())
    try:
        path = writer.write_bundle(trainer, model, best, seconds=seconds, tested=tested)
    except (OSError, ReadgazeError, ValueError) as error:  # a finished run keeps its checkpoint and summary
        return f"  warning: no model bundle written ({error})"
    return f"  model bundle: {path}  (score new data: readgaze predict {path} DATASET --out predictions.parquet)"


def _epoch(best: str, trainer) -> str:
    import torch

    try:
        return str(torch.load(best, map_location="cpu", weights_only=False).get("epoch", "?"))
    except Exception:  # the summary never fails a finished run
        return "?"


def config_error_line(text: str, command: str) -> str:
    """One line from jsonargparse's error output: the bad key, the closest valid keys, where the usage is."""
    import difflib

    usage, _, error = text.partition("error:")
    error = error.strip() or (text.strip().splitlines() or ["invalid arguments"])[-1]
    known = sorted(set(re.findall(r"--([A-Za-z_][\w.]*)", usage)))
    bad = re.search(r"unrecognized arguments: --?([\w.]+)|does not accept option '([\w.]+)'", error)
    option = re.search(r"Option '([\w.]+)' is not accepted", error)
    key = re.search(r'Parser key "([\w.]+)"', error)
    hint = ""
    if bad:
        name = bad.group(1) or bad.group(2)
        close = difflib.get_close_matches(name, known, n=3, cutoff=0.6)
        message = f"unknown option --{name}"
        hint = f"; did you mean {', '.join('--' + c for c in close)}?" if close else ""
    elif option:
        name = option.group(1)
        cls = re.search(r"class_path '([\w.]+)'", error)
        accepted = _init_arguments(cls.group(1)) if cls else []
        close = difflib.get_close_matches(name, accepted, n=3, cutoff=0.6)
        where = f"{cls.group(1).rsplit('.', 1)[-1]} " if cls else ""
        message = f"{where}has no argument {name!r}"
        hint = (f"; did you mean {', '.join(close)}?" if close else
                f"; it accepts {', '.join(accepted)}" if accepted else "")
    else:
        lines = [line.strip() for line in error.splitlines() if line.strip()]
        detail = next((line for line in lines[1:] if not line.startswith(("Subtypes", "Given value"))), "")
        message = lines[0] + (f" {detail}" if detail else "") if lines else "invalid arguments"
        if key:
            close = difflib.get_close_matches(key.group(1), known, n=3, cutoff=0.6)
            hint = f" (valid keys near it: {', '.join(close)})" if close and key.group(1) not in close else ""
    return f"{message}{hint} (full usage: readgaze {command} --help)"


def _init_arguments(class_path: str) -> list[str]:
    """The constructor arguments of a model class (its own and the training arguments of its base)."""
    import importlib

    from readgaze.models.base import init_arguments

    module, _, name = class_path.rpartition(".")
    try:
        cls = getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError):
        return []
    return sorted(init_arguments(cls))


def resolve_config_args(args: list[str]) -> list[str]:
    """Replace each ``-c NAME`` / ``--config NAME`` that is not a file by the packaged config of that name; a model's
    config (``-c roberteye_f``) with ``--data.task TASK`` becomes that model's config for the task, as
    ``-c TASK/roberteye_f`` (its output folder ``runs/TASK/roberteye_f``; :func:`~.configs.find_config`)."""
    from readgaze.models.training.configs import find_config

    task = None
    for i, arg in enumerate(args):
        if arg == "--data.task" and i + 1 < len(args):
            task = args[i + 1]
        elif arg.startswith("--data.task="):
            task = arg.partition("=")[2]
    out, i = [], 0
    while i < len(args):
        arg = args[i]
        if arg in ("-c", "--config") and i + 1 < len(args):
            out += [arg, str(find_config(args[i + 1], task))]
            i += 2
            continue
        if arg.startswith("--config="):
            arg = "--config=" + str(find_config(arg.split("=", 1)[1], task))
        out.append(arg)
        i += 1
    return out


def datamodule_class(args: list[str]) -> type:
    """:class:`ReadingDataModule`, or for ``data.task: goal_reconstruction`` (in a ``-c`` YAML or ``--data.task``)
    :class:`readgaze.models.data.goal.GoalReconstructionData` (paragraph + scanpath text -> question)."""
    import yaml

    task = None
    for i, arg in enumerate(args):
        if arg in ("-c", "--config") and i + 1 < len(args):
            with contextlib.suppress(OSError, yaml.YAMLError, AttributeError):
                task = ((yaml.safe_load(Path(args[i + 1]).read_text(encoding="utf-8")) or {}).get("data")
                        or {}).get("task", task)
        elif arg.startswith("--data.task"):
            task = arg.partition("=")[2] or (args[i + 1] if i + 1 < len(args) else task)
    if task == "goal_reconstruction":
        from readgaze.models.data.goal import GoalReconstructionData

        return GoalReconstructionData
    return ReadingDataModule


class _NoAdverts(logging.Filter):
    """Drops Lightning's "💡 Tip: ... try installing ..." lines (product suggestions, printed on every run)."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith("💡 Tip")


class ParseOnlyCLI(ReadgazeCLI):
    """Parses and checks a configuration as ``readgaze fit`` does, seeds and builds nothing (``bench``'s check
    before any unit starts, the tests of the effective configs)."""

    def _set_seed(self) -> None:
        pass

    def before_instantiate_classes(self) -> None:
        pass

    def instantiate_classes(self) -> None:
        pass


def make_cli(args: list[str], run: bool = True, cli_class: type | None = None) -> ReadgazeCLI:
    """Build (and with ``run`` execute) the CLI on ``args`` (subcommand first when ``run``); ``cli_class`` replaces
    :class:`ReadgazeCLI` (``readgaze bench`` parses configs without building them)."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # nothing is downloaded at run time
    warnings.filterwarnings("ignore", message="LightningCLI's args parameter")  # args are always explicit here
    # under DDP, evaluation gathers every process's trials and keeps each once (ReadingModel._finish): the padding
    # this warning is about never reaches a metric or a prediction file
    warnings.filterwarnings("ignore", message=r"Using `DistributedSampler` with the dataloaders")
    # Lightning 2.6 with torch 2.13: its own pytree helper trips torch's LeafSpec deprecation on every checkpoint load
    warnings.filterwarnings("ignore", message=r"`isinstance\(treespec, LeafSpec\)` is deprecated")
    # a short epoch logs once at its end anyway (readgaze prints its own line per epoch)
    warnings.filterwarnings("ignore", message=r"The number of training batches .* is smaller than the logging interval")
    for name in ("lightning.pytorch.utilities.rank_zero", "lightning.fabric.utilities.rank_zero"):
        logger = logging.getLogger(name)
        if not any(isinstance(f, _NoAdverts) for f in logger.filters):
            logger.addFilter(_NoAdverts())
    return (cli_class or ReadgazeCLI)(ReadingModel, datamodule_class(args), subclass_mode_model=True, args=args,
                                      run=run, save_config_kwargs={"overwrite": True})


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``readgaze fit|validate|test``; ``argv[0]`` is the subcommand (``readgaze predict`` is
    :mod:`readgaze.models.training.predict`, on a model bundle)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    command = argv[0] if argv else "fit"
    skip_test = "--no-test" in argv
    argv = [a for a in argv if a != "--no-test"]
    try:
        argv = resolve_config_args(argv)
        ReadgazeCLI._skip_test = skip_test
        ReadgazeCLI._started = time.perf_counter()
        make_cli(argv)
    except Exception as error:  # jsonargparse wraps errors raised while building the model or data
        cause = _readgaze_cause(error)
        if cause is None:
            raise
        print(f"readgaze {command}: error: {cause}", file=sys.stderr)
        return 2
    return 0


def _readgaze_cause(error: BaseException | None) -> ReadgazeError | None:
    """The first :class:`ReadgazeError` in an exception's cause/context chain, if any."""
    seen = set()
    while error is not None and id(error) not in seen:
        if isinstance(error, ReadgazeError):
            return error
        seen.add(id(error))
        error = error.__cause__ or error.__context__
    return None


if __name__ == "__main__":
    raise SystemExit(main())
