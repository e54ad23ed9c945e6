"""``readgaze fit|validate|test|predict``: LightningCLI over :class:`~models.data.ReadingDataModule` and any model.

The YAML picks the model by ``model.class_path`` (any :class:`~models.base.ReadingModel` subclass; no registry).
Two links tie model and datamodule together, so a YAML never states a value twice:

* ``model.init_args.text_encoder`` → ``data.text_encoder`` (the tokenizer matches the encoder; a model without a
  text encoder, such as BEyeLSTM, leaves the datamodule's default tokenizer);
* ``data.num_classes`` → ``model.init_args.num_classes`` (computed from the data, e.g. questions per paragraph).

Feature sizes are not linked: the feature vectors are fixed by :mod:`models.features` (a column the dataset lacks
becomes "missing", not a narrower vector), and each model's default is the size of that vector. Only link targets
that every model accepts are linked, so checkpoints reload (LightningCLI stores linked values as hyperparameters).

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

class ReadgazeCLI(LightningCLI):
    """LightningCLI with readgaze's links between datamodule and model."""

    def add_arguments_to_parser(self, parser) -> None:
        parser.link_arguments("model.init_args.text_encoder", "data.text_encoder")
        parser.link_arguments("data.num_classes", "model.init_args.num_classes", apply_on="instantiate")

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
    except ReadgazeError as error:
        print(f"readgaze {argv[0] if argv else ''}: error: {error}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
