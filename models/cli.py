"""``readgaze fit|validate|test|predict``: LightningCLI over :class:`~models.data.ReadingDataModule` and any model.

The YAML picks the model by ``model.class_path`` (any :class:`~models.base.ReadingModel` subclass; no registry).
Values the data determines reach the model through links, so a YAML never sets them:

* ``data.text_encoder`` → ``model.init_args.text_encoder`` (the encoder matches the tokenizer);
* ``data.n_fixation_features``, ``data.n_trial_features``, ``data.num_classes`` → the model argument of the same
  name, after the datamodule is built.

A model without such an argument (BEyeLSTM has no text encoder) is left alone; :class:`models.base.ReadingModel`
keeps only its own arguments in a checkpoint's hyperparameters, so ``--ckpt_path`` reloads every model.

Loggers default to CSV and TensorBoard under ``trainer.default_root_dir`` (predictions go to the CSV run folder); W&B is used (and imported) only when a
YAML names ``lightning.pytorch.loggers.WandbLogger``.

Example::

    readgaze fit -c experiments/configs/reading_goal/roberteye_f.yaml --data.path DIR --data.fold 0
"""

from __future__ import annotations

import os
import sys
import warnings

from lightning.pytorch.cli import LightningCLI
from lightning.pytorch.loggers import CSVLogger, TensorBoardLogger

from models.base import ReadingModel
from models.data import ReadingDataModule
from readgaze.errors import ReadgazeError

LINKED = ("n_fixation_features", "n_trial_features", "num_classes")


class ReadgazeCLI(LightningCLI):
    """LightningCLI with readgaze's links between datamodule and model."""

    def add_arguments_to_parser(self, parser) -> None:
        parser.link_arguments("data.text_encoder", "model.init_args.text_encoder")
        for name in LINKED:
            parser.link_arguments(f"data.{name}", f"model.init_args.{name}", apply_on="instantiate")

    def instantiate_trainer(self, **kwargs):
        """Default loggers: CSV (``<root>/csv/version_N``, the run's log_dir) and TensorBoard (``<root>/tensorboard``)."""
        config = self._get(self.config_init, "trainer", default={})
        if config.get("logger") in (None, True):
            root = config.get("default_root_dir") or os.getcwd()
            kwargs["logger"] = [CSVLogger(root, name="csv"), TensorBoardLogger(root, name="tensorboard")]
        return super().instantiate_trainer(**kwargs)




def make_cli(args: list[str], run: bool = True) -> ReadgazeCLI:
    """Build (and with ``run`` execute) the CLI on ``args`` (subcommand first when ``run``)."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # nothing is downloaded at run time
    warnings.filterwarnings("ignore", message="LightningCLI's args parameter")  # args are always explicit here
    return ReadgazeCLI(ReadingModel, ReadingDataModule, subclass_mode_model=True, args=args, run=run,
                       save_config_kwargs={"overwrite": True})


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``readgaze fit|validate|test|predict``; ``argv[0]`` is the subcommand."""
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        make_cli(argv)
    except Exception as error:  # jsonargparse wraps errors raised while building the model or data
        cause = _readgaze_cause(error)
        if cause is None:
            raise
        print(f"readgaze {argv[0] if argv else ''}: error: {cause}", file=sys.stderr)
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
