"""``readgaze cv -c CONFIG --data.path DIR``: train and test one config on every fold, then score it.

For each fold k (``--folds``, default all K of the config's ``data.n_folds`` or of ``data.fold_files``): fit with the
config (validation fold k, test fold k+1), restore the checkpoint with the lowest validation loss, and predict the
test trials; the classical baselines (majority class, reading-speed logistic regression, :mod:`readgaze.baselines`)
are fit on the same training trials. Written under ``OUT/RUN`` (``--out results``, ``--run`` default
``<task>_<config stem>``):

* ``fold_k/``: the fold's logs, checkpoint and ``predictions_test.parquet``;
* ``predictions.parquet``: every fold's test predictions, the model's and the baselines';
* ``results.csv`` and ``results.md``: balanced accuracy and AUROC per regime, mean ± SEM over folds, "all" pooled
  per fold (:func:`readgaze.metrics.evaluate`); the regimes where the label cannot be read off a seen participant
  or item come first;
* ``roc.png``: one ROC panel per regime (:func:`readgaze.plots.plot_roc`).

Folds run in ``--workers`` parallel processes (each with its share of the CPU threads). Multi-GPU or multi-node
training of one fold is Lightning's own business: set ``trainer.strategy``/``devices``/``num_nodes`` in the YAML.
Any other argument (``--trainer.max_epochs 5``) is passed to every fold's LightningCLI.
"""

from __future__ import annotations

import argparse
import concurrent.futures as futures
import logging
import multiprocessing
import os
import sys
from pathlib import Path

import polars as pl
import yaml

from readgaze.baselines import run_baseline
from readgaze.errors import ConfigError, ReadgazeError
from readgaze.metrics import evaluate, write_results
from readgaze.plots import plot_roc
from readgaze.splits import describe

log = logging.getLogger(__name__)


def main(argv: list[str] | None = None) -> int:
    """Entry point; ``argv[0]`` is ``"cv"``."""
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = argparse.ArgumentParser(prog="readgaze cv", description=__doc__.split("\n")[0])
    parser.add_argument("-c", "--config", required=True, help="YAML of one task x model")
    parser.add_argument("--data.path", dest="data_path", required=True, help="dataset folder")
    parser.add_argument("--folds", type=int, nargs="+", help="folds to run (default: all)")
    parser.add_argument("--workers", type=int, default=1, help="folds trained in parallel processes")
    parser.add_argument("--threads", type=int, help="torch CPU threads per fold (default: CPUs / workers)")
    parser.add_argument("--out", default="results", help="results root folder")
    parser.add_argument("--run", help="run name (default <task>_<config stem>)")
    parser.add_argument("--no-baselines", action="store_true", help="skip the majority and reading-speed rows")
    args, overrides = parser.parse_known_args(argv[1:])
    try:
        paths = cross_validate(args.config, args.data_path, overrides, folds=args.folds, workers=args.workers,
                               out=args.out, run=args.run, baselines=not args.no_baselines, threads=args.threads)
    except ReadgazeError as error:
        print(f"readgaze cv: error: {error}", file=sys.stderr)
        return 2
    print(paths["markdown"].read_text(encoding="utf-8"))
    print(f"written to {paths['run']}")
    return 0


def cross_validate(config: str, data_path: str, overrides: list[str] | None = None, *, folds: list[int] | None = None,
                   workers: int = 1, out: str = "results", run: str | None = None,
                   baselines: bool = True, threads: int | None = None) -> dict[str, Path]:
    """Run every fold of ``config`` on ``data_path`` and write predictions, table and figure.

    Returns ``{"run", "predictions", "csv", "markdown", "roc"}`` paths. Raises :class:`ConfigError` on a
    config without ``model``/``data`` sections.
    """
    overrides = list(overrides or [])
    settings = _settings(config, overrides)
    _check_design(data_path, settings["n_folds"])
    run_dir = Path(out) / (run or f"{settings['task']}_{Path(config).stem}")
    run_dir.mkdir(parents=True, exist_ok=True)
    folds = list(range(settings["n_folds"])) if folds is None else folds
    threads = threads or max(1, (os.cpu_count() or 1) // workers)
    jobs = [(config, data_path, fold, overrides, str(run_dir), baselines, threads) for fold in folds]
    if workers <= 1:
        results = [_run_fold(*job) for job in jobs]
    else:
        context = multiprocessing.get_context("spawn")
        with futures.ProcessPoolExecutor(max_workers=workers, mp_context=context) as pool:
            results = list(pool.map(_run_fold, *zip(*jobs)))
    predictions = pl.concat([pl.read_parquet(p) for r in results for p in r["predictions"]], how="diagonal_relaxed")
    predictions_path = run_dir / "predictions.parquet"
    predictions.write_parquet(predictions_path)
    trials = pl.concat([pl.read_parquet(r["trials"]) for r in results], how="diagonal_relaxed")
    description = describe(trials.unique("trial_id"), trials.select("trial_id", "fold_index", "split", "regime"),
                           label="label")
    evaluation = evaluate(predictions)
    paths = write_results(evaluation, run_dir, description=description)
    roc = plot_roc(predictions, run_dir / "roc.png")
    return {"run": run_dir, "predictions": predictions_path, "csv": paths["csv"], "markdown": paths["markdown"],
            "roc": roc}


def _check_design(data_path: str, n_folds: int) -> None:
    """Refuse, before any fold starts, a dataset with fewer participants or items than folds."""
    path = Path(data_path) / "trials.parquet"
    if not path.is_file():
        raise ConfigError("not a dataset folder (no trials.parquet); make one with readgaze prep", file=path)
    counts = pl.scan_parquet(path).select(pl.col("participant_id").n_unique(), pl.col("item_id").n_unique()).collect()
    participants, items = counts.row(0)
    if min(participants, items) < n_folds:
        fix = (f"use --data.n_folds {min(participants, items)} or fewer (at least 3)" if min(participants, items) >= 3
               else "cv needs at least 3 participants and 3 items (readgaze fit can smoke-run smaller data)")
        raise ConfigError(f"readgaze cv holds out participants and items in {n_folds} folds, but this dataset has "
                          f"{participants} participants and {items} items; {fix}", file=path)


def _settings(config: str, overrides: list[str]) -> dict:
    """``task`` and ``n_folds`` of a config after overrides (``--data.X v`` or ``--data.X=v``)."""
    try:
        data = (yaml.safe_load(Path(config).read_text(encoding="utf-8")) or {}).get("data") or {}
    except (OSError, yaml.YAMLError) as error:
        raise ConfigError(f"cannot read config: {error}", file=config) from error
    pairs = {}
    for i, arg in enumerate(overrides):
        if arg.startswith("--data."):
            key, _, value = arg[len("--data."):].partition("=")
            pairs[key] = value if value else (overrides[i + 1] if i + 1 < len(overrides) else "")
    data.update(pairs)
    if data.get("fold_files"):
        n_folds = len(list((Path(data["fold_files"]) / "items").glob("fold_*.csv")))
    else:
        n_folds = int(data.get("n_folds", 10))
    if data.get("split_unit", "auto") not in ("auto", "participant_item"):
        raise ConfigError("cv scores the participant x item regimes; data.split_unit must be participant_item",
                          file=config)
    if n_folds < 3:
        raise ConfigError(f"data.n_folds: got {n_folds}, expected at least 3", file=config)
    return {"task": data.get("task", "reading_goal"), "n_folds": n_folds}


def _run_fold(config: str, data_path: str, fold: int, overrides: list[str], run_dir: str, baselines: bool,
              threads: int) -> dict:
    """Fit, test (best checkpoint) and baseline one fold; returns the paths of its prediction and trial files."""
    import torch

    from models.cli import make_cli

    torch.set_num_threads(threads)
    fold_dir = Path(run_dir) / f"fold_{fold}"
    cli = make_cli(["-c", config, "--data.path", data_path, "--data.fold", str(fold),
                    "--data.split_unit", "participant_item",  # cv never falls back to trial folds
                    "--trainer.default_root_dir", str(fold_dir), "--model.init_args.predictions_dir", str(fold_dir),
                    *overrides], run=False)
    cli.trainer.fit(cli.model, datamodule=cli.datamodule)
    best = cli.trainer.checkpoint_callback.best_model_path if cli.trainer.checkpoint_callback else ""
    cli.trainer.test(cli.model, datamodule=cli.datamodule, ckpt_path=best or None, weights_only=False)
    predictions = [fold_dir / "predictions_test.parquet"]
    datamodule = cli.datamodule
    trials = datamodule.trials
    if "reading_speed_wpm" not in trials.columns:
        trials = trials.join(datamodule.trial_features_raw.select("trial_id", "reading_speed_wpm"), on="trial_id")
    if baselines:
        assignment = trials.select("trial_id", "fold_index", "split", "regime")
        for kind in ("majority", "reading_speed"):
            path = fold_dir / f"predictions_test_{kind}.parquet"
            run_baseline(trials, assignment, datamodule.task, kind).write_parquet(path)
            predictions.append(path)
    trial_path = fold_dir / "trials.parquet"
    trials.select("trial_id", "participant_id", "item_id", "label", "fold_index", "split", "regime").write_parquet(
        trial_path)
    return {"predictions": predictions, "trials": trial_path}
