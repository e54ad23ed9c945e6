"""The ``readgaze`` command.

Each subcommand lives in its own module, imported only when it runs (so ``readgaze inspect`` never
imports torch). A subcommand module offers either

* ``add_arguments(parser)`` and ``run(args) -> int`` (argparse), or
* ``main(argv) -> int`` (it parses its own arguments, e.g. LightningCLI).
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys

# name -> (module, one-line help). Modules in models/ and data_prep/ are imported lazily, so the
# readgaze library itself never imports them at module level.
COMMANDS: dict[str, tuple[str, str]] = {
    "inspect": ("readgaze.inspect", "summarise a report, .asc file or dataset folder"),
    "prep": ("readgaze.data_prep.cli", "build a model-ready dataset folder from lab data"),
    "assign-lines": ("readgaze.lines.cli", "assign fixations to text lines in a dataset folder"),
    "eval-lines": ("readgaze.lines.evaluate", "score line-assignment methods against gold labels"),
    "review": ("readgaze.review.cli", "a local web page to inspect trials, correct line assignment by hand and "
               "exclude trials (corrections.parquet, re-applied by prep)"),
    "fit": ("readgaze.models.training.cli", "train a model (LightningCLI)"),
    "validate": ("readgaze.models.training.cli", "validate a model (LightningCLI)"),
    "test": ("readgaze.models.training.cli", "test a model (LightningCLI)"),
    "predict": ("readgaze.models.training.predict", "score a prepared dataset with a trained model bundle"),
    "cv": ("readgaze.models.training.cv", "cross-validate a config over every fold and regime"),
    "bench": ("readgaze.models.training.bench", "the whole benchmark (tasks x models x folds x seeds) on Ray, "
              "resumable, into one leaderboard"),
    "configs": ("readgaze.models.training.configs", "list the packaged task x model configs (use as -c TASK/MODEL)"),
    "ensemble": ("readgaze.models.training.ensemble", "out-of-sample ensembles (majority vote, logistic) of cv runs"),
    "demo": ("readgaze.models.demo", "simulate, prepare, train and evaluate offline in one command"),
    "models": ("readgaze.models.training.registry", "list every model, baseline and ensemble: tasks, paper, config"),
}


def _parser() -> argparse.ArgumentParser:
    width = max(len(k) for k in COMMANDS)
    commands = "\n".join(f"  {k:<{width}}  {v[1]}" for k, v in COMMANDS.items())
    p = argparse.ArgumentParser(prog="readgaze", description="Eye tracking in reading: from lab exports "
                                "to reading measures and reading-goal / comprehension decoding.",
                                epilog=f"commands (readgaze COMMAND --help for each):\n{commands}",
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--version", action="store_true", help="print the version and exit")
    p.add_argument("command", nargs="?", choices=sorted(COMMANDS), metavar="COMMAND",
                   help="one of the commands below")
    return p


def main(argv: list[str] | None = None) -> int:
    try:
        return _main(argv)
    except BrokenPipeError:  # `readgaze models | head`: the reader has gone; stop quietly, as other commands do
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # so the exit's flush does not fail again
        return 0


def _main(argv: list[str] | None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help") or argv[0] == "--version":
        p = _parser()
        args = p.parse_args(argv)
        if args.version:
            from readgaze import __version__
            print(__version__)
            return 0
        p.print_help()
        return 0
    name, rest = argv[0], argv[1:]
    if name not in COMMANDS:
        _parser().error(f"unknown command {name!r}")
    from readgaze.errors import ReadgazeError, command_spelling

    with command_spelling():  # errors name this command's options (--ia-id-base 1), not Python keywords
        module = importlib.import_module(COMMANDS[name][0])
        if hasattr(module, "main"):
            return int(module.main([name, *rest]) or 0)
        sub = argparse.ArgumentParser(prog=f"readgaze {name}", description=COMMANDS[name][1])
        module.add_arguments(sub)
        args = sub.parse_args(rest)
        try:
            return int(module.run(args) or 0)
        except ReadgazeError as e:
            print(f"readgaze {name}: error: {e}", file=sys.stderr)
            return 2


if __name__ == "__main__":
    raise SystemExit(main())
