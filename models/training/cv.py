"""``readgaze cv -c CONFIG [CONFIG ...] --data.path DIR``: train and test configs on every fold, then score them.

For each fold k (``--folds``, default all K of the config's ``data.n_folds`` or of ``data.fold_files``) and each
grid point (``--grid model.init_args.learning_rate=1e-5,3e-5`` and/or a ``grid:`` block in the YAML mapping a key
to a list; the cartesian product), fit with the config (validation fold k, test fold k+1), restore the checkpoint
with the lowest validation loss (the config's ``ModelCheckpoint`` must monitor ``loss/val``), and predict the
validation and test trials from it. The grid point with the lowest validation loss (mean over ``--seeds``) is the
fold's choice (EyeBench's selection, Shubi et al., 2025: lowest ``loss/val_all``). The classical baselines
(:mod:`readgaze.baselines`) are fit on the same training trials. Written under ``OUT/RUN`` (``--out results``,
``--run`` default ``<task>_<config stem>``):

* ``fold_k/`` (or ``fold_k/grid_i/seed_s/`` with a grid or several seeds): logs, checkpoint, ``qc.json``,
  ``predictions_{val,test}.parquet`` of each trial and the fold model's bundle (``bundle/``, what ``readgaze
  predict`` scores new data with: :mod:`readgaze.models.training.bundle`);
* ``predictions.parquet`` and ``predictions_val.parquet``: every fold's test and validation predictions (the
  chosen grid point, seed 0) and the baselines'; ``grid.csv``: every grid trial's validation loss and the choice
  per fold;
* ``results_per_fold.csv``: every (model, regime, fold) cell with the fold's validation-chosen threshold;
* ``results.csv`` and ``results.md``: balanced accuracy at 0.5, balanced accuracy at the threshold chosen on
  validation, and AUROC per regime, mean ± SEM over folds (:func:`readgaze.metrics.evaluate`), a cell whose
  per-fold scores come from fewer than 30 trials marked (``small_sample``); for goal_question
  also All / Different spans / Same span with their chance levels (``goal_selection.{csv,md}``);
* ``seeds.csv`` (``--seeds N`` > 1): each seed's scores and their spread (standard deviation over seeds);
* ``qc.json``: the datamodule's QC records per fold (non-zero ones are printed);
* ``roc.png``: one ROC panel per regime (:func:`readgaze.plots.plot_roc`);
* a **regression** task (``reading_comprehension_skill``; :mod:`readgaze.tasks` kind ``regression``): the same
  files with RMSE, MAE and R² per regime instead (:func:`readgaze.metrics_regression.evaluate_regression`, target
  units), the classical regressors as baselines (:mod:`readgaze.baselines_regression`: ``chance`` = the training
  mean, reading speed, ridge by default; ``--baselines all`` adds SVR, random forest, kNN, gradient boosting),
  ``paired.csv`` (the model against each baseline: paired RMSE difference per regime, t-test over folds and a
  permutation test that swaps whole readers, ``group = participant_id``:
  :func:`readgaze.metrics_regression.paired_regression_comparison`, also under ``results.md``) and
  ``regression.png`` (predicted against true values per regime with the chance line,
  :func:`readgaze.plots.plot_regression`) in place of ``roc.png``; the grid choice is the lowest validation loss,
  the standardised MSE, i.e. the lowest validation RMSE;
* with ``--ablate text gaze text_only gaze_only`` (any of them): each twin's run in ``OUT/RUN_ablate_<kind>`` and
  ``ablation.{csv,md}`` in ``OUT/RUN``: the model against each twin and each baseline, per regime, with the paired
  difference across folds and its tests (:mod:`readgaze.models.training.ablation`).

With several configs, each is a run of its own, and the ensembles of :mod:`readgaze.models.training.ensemble` (fit per
fold on the
runs' validation predictions, applied to their test predictions) are written to ``OUT/<task>_ensemble`` (or
``OUT/RUN`` with ``--run``, the configs' runs then in ``OUT/RUN/<stem>``); ``--no-ensemble`` skips them.

Folds run on ``--workers`` Ray workers (each with its share of the CPU threads; :mod:`readgaze.models.training.runner`,
the mechanism ``readgaze bench`` uses; one worker runs them in this process). Multi-GPU or multi-node training of one
fold is Lightning's own business: set ``trainer.strategy``/``devices``/``num_nodes`` in the YAML (docs/benchmark.md).
Any other argument (``--trainer.max_epochs 5``) is passed to every fold's LightningCLI.
"""

from __future__ import annotations

import argparse
import itertools
import json
import logging
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import polars as pl

from readgaze.baselines import BASELINES, run_baseline, with_baseline_features
from readgaze.baselines_regression import REGRESSORS, run_regressor
from readgaze.dataset import Dataset
from readgaze.errors import ConfigError, ReadgazeError
from readgaze.metrics import (
    evaluate,
    write_results,
)
from readgaze.metrics_regression import (
    evaluate_regression,
    evaluate_regression_folds,
    write_regression_results,
)
from readgaze.models.training.cv_settings import (
    DEFAULT_BASELINES,
    PARAGRAPH_TIME_BASELINE,
    baseline_kinds,
    check_design,
    config_without_grid,
    parse_grid,
    run_settings,
)
from readgaze.models.training.cv_tables import (
    per_fold_results,
    write_goal_selection,
    write_paired_regression,
    write_seed_spread,
)
from readgaze.models.training.runner import QUIET_TRAINER, auroc_of, fold_log, rmse_of, run_folds
from readgaze.models.training.summary import constant_warnings
from readgaze.plots import plot_regression, plot_roc
from readgaze.splits import describe
from readgaze.tasks import TASKS as REGISTRY

log = logging.getLogger(__name__)


def main(argv: list[str] | None = None) -> int:
    """Entry point; ``argv[0]`` is ``"cv"``."""
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = argparse.ArgumentParser(
        prog="readgaze cv", description=__doc__.split("\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="Any other --KEY VALUE is passed to every fold's config, with LightningCLI's names, e.g.\n"
               "  --data.n_folds 5 --data.text_encoder tiny --data.reading_regime all\n"
               "  --model.init_args.learning_rate 3e-5 --trainer.max_epochs 10\n"
               "A key that is in no config stops the run with the closest keys named.")
    parser.add_argument("-c", "--config", required=True, nargs="+", help="YAML of one task x model (several: "
                        "each is cross-validated, then their ensembles)")
    parser.add_argument("--data.path", dest="data_path", required=True, help="dataset folder")
    parser.add_argument("--folds", type=int, nargs="+", help="folds to run (default: all)")
    parser.add_argument("--workers", type=int, default=1,
                        help="folds trained at once, on a local Ray (1: in this process)")
    parser.add_argument("--threads", type=int, help="torch CPU threads per fold (default: CPUs / workers)")
    parser.add_argument("--out", default="results", help="results root folder")
    parser.add_argument("--run", help="run name (default <task>_<config stem>)")
    parser.add_argument("--no-baselines", action="store_true", help="skip the classical baseline rows")
    parser.add_argument("--baselines", nargs="+", metavar="KIND",
                        help=f"classical baselines fit on each fold's training trials (default: "
                             f"{' '.join(DEFAULT_BASELINES)}; 'all' = every one of {', '.join(BASELINES)})")
    parser.add_argument("--grid", action="append", default=[], metavar="KEY=V1,V2,...",
                        help="hyperparameter values tried per fold, chosen on validation (repeatable)")
    parser.add_argument("--seeds", type=int, default=1, help="seeds per configuration (spread in seeds.csv)")
    parser.add_argument("--no-ensemble", action="store_true", help="with several configs: skip the ensembles")
    parser.add_argument("--ablate", nargs="+", metavar="KIND", default=[],
                        help="also cross-validate the model's ablated twins and write ablation.md: text (words "
                             "permuted), gaze (another trial's gaze), text_only (TextOnly), gaze_only (FSE)")
    parser.add_argument("--format", default="parquet", choices=("parquet", "csv", "both"),
                        help="predictions table format (csv/both add predictions.csv; results are CSV anyway)")
    args, overrides = parser.parse_known_args(argv[1:])
    try:
        from readgaze.models.training.configs import find_config

        args.config = [str(find_config(c)) for c in args.config]  # files, or packaged names (reading_goal/beyelstm)
        grid = parse_grid(args.grid)
        tasks = [run_settings(config, overrides)["task"] for config in args.config]
        if args.ablate and any(_is_regression(task) for task in tasks):
            raise ConfigError("--ablate: the ablation table compares balanced accuracy and AUROC; a regression task "
                              "has neither (cross-validate the twins' configs and compare their results.csv)")
        runs = []
        for config in args.config:
            run = args.run if len(args.config) == 1 else (f"{args.run}/{Path(config).stem}" if args.run else None)
            paths = cross_validate(config, args.data_path, overrides, folds=args.folds, workers=args.workers,
                                   out=args.out, run=run,
                                   baselines=False if args.no_baselines else (args.baselines or True),
                                   threads=args.threads,
                                   grid=grid, seeds=args.seeds)
            print(paths["markdown"].read_text(encoding="utf-8"))
            if args.format != "parquet":  # for R users; the parquet stays (ensembles read it)
                from readgaze.data_prep.dataset import csv_ready

                csv_ready(pl.read_parquet(paths["predictions"])).write_csv(paths["run"] / "predictions.csv")
            print(f"written to {paths['run']}")
            if args.ablate:
                _run_ablations(config, args, overrides, grid, paths["run"], paths["headline_regimes"])
            runs.append(paths["run"])
        if len(runs) > 1 and not args.no_ensemble:
            from readgaze.models.training.ensemble import run_ensembles

            task = run_settings(args.config[0], overrides)["task"]
            out = Path(args.out) / (args.run or f"{task}_ensemble")
            written = run_ensembles(runs, out)
            print(written["markdown"].read_text(encoding="utf-8"))
            print(f"ensembles written to {out}")
    except ReadgazeError as error:
        print(f"readgaze cv: error: {error}", file=sys.stderr)
        return 2
    return 0


def _run_ablations(config: str, args, overrides: list[str], grid: dict, run_dir: Path,
                   headline: tuple[str, ...]) -> None:
    """Cross-validate each ``--ablate`` twin of ``config``, then write and print ``ablation.md`` in ``run_dir``
    (its regimes in the order of the run's ``results.md``: ``headline`` first)."""
    from readgaze.models.training.ablation import check_kinds, twin_run, write_ablation

    twins = {}
    for kind in check_kinds(args.ablate):
        twin_config, twin_overrides, twin_grid = twin_run(config, kind, overrides, grid, run_dir / "twins")
        name = f"{run_dir.relative_to(Path(args.out))}_ablate_{kind}"
        print(f"readgaze cv: ablation twin {kind} -> {Path(args.out) / name}", file=sys.stderr)
        paths = cross_validate(twin_config, args.data_path, twin_overrides, folds=args.folds, workers=args.workers,
                               out=args.out, run=name, baselines=False, threads=args.threads, grid=twin_grid,
                               seeds=args.seeds)
        twins[kind] = paths["run"]
    written = write_ablation(run_dir, twins, headline=headline)
    print(written["markdown"].read_text(encoding="utf-8"))


def cross_validate(config: str, data_path: str, overrides: list[str] | None = None, *, folds: list[int] | None = None,
                   workers: int = 1, out: str = "results", run: str | None = None,
                   baselines: bool | Sequence[str] = True, threads: int | None = None,
                   grid: dict[str, list] | None = None,
                   seeds: int = 1) -> dict[str, Path]:
    """Run every fold of ``config`` on ``data_path`` and write predictions, tables, grid choices and figure.

    ``grid`` (key -> values) is merged over the YAML's ``grid:`` block; ``seeds`` trains each configuration with
    ``seed_everything`` 0 .. seeds-1. Returns ``{"run", "predictions", "csv", "markdown", "roc", "grid", "qc"}``
    paths and ``"headline_regimes"`` (the task's headline regimes, first in the tables). Raises
    :class:`ConfigError` on a config that cannot be read, too-small data, or a bad grid.
    """
    overrides = list(overrides or [])
    settings = run_settings(config, overrides)
    check_design(data_path, settings["n_folds"])
    if settings["task"] == "goal_reconstruction":  # generated questions, not class probabilities
        from readgaze.models.training.goal_cv import cross_validate_generation

        return cross_validate_generation(config, data_path, overrides, n_folds=settings["n_folds"], folds=folds,
                                         out=out, run=run, threads=threads, baselines=baselines)
    if seeds < 1:
        raise ConfigError(f"--seeds: got {seeds}, expected at least 1")
    regression = _is_regression(settings["task"])
    default = baselines is True
    baselines = baseline_kinds(baselines, regression=regression)
    if default and "PARAGRAPH_RT" in Dataset(data_path).columns("trials"):
        baselines = (*baselines, PARAGRAPH_TIME_BASELINE)  # a paragraph time of its own: not reading_speed again
    run_dir = Path(out) / (run or f"{settings['task']}_{Path(config).stem}")
    run_dir.mkdir(parents=True, exist_ok=True)
    grid = {**settings["grid"], **(grid or {})}
    points = [dict(zip(grid, values)) for values in itertools.product(*grid.values())] or [{}]
    fit_config = config_without_grid(config, run_dir) if settings["grid"] else config
    folds = list(range(settings["n_folds"])) if folds is None else folds
    threads = threads or max(1, (os.cpu_count() or 1) // workers)
    jobs = [(fit_config, data_path, fold, overrides, str(run_dir), baselines, threads, points, seeds)
            for fold in folds]
    results = run_folds(_run_fold, jobs, workers)  # one progress line per finished fold
    predictions = pl.concat([pl.read_parquet(p) for r in results for p in r["predictions"]], how="diagonal_relaxed")
    predictions_path = run_dir / "predictions.parquet"
    predictions.filter(pl.col("split") == "test").write_parquet(predictions_path)
    predictions.filter(pl.col("split") == "val").write_parquet(run_dir / "predictions_val.parquet")
    grid_path = run_dir / "grid.csv"
    pl.concat([pl.DataFrame(r["grid"]) for r in results], how="diagonal_relaxed").write_csv(grid_path)
    qc_path = run_dir / "qc.json"
    qc_path.write_text(json.dumps({str(r["fold"]): r["qc"] for r in results}, indent=2, default=str),
                       encoding="utf-8")
    trials = pl.concat([pl.read_parquet(r["trials"]) for r in results], how="diagonal_relaxed")
    description = describe(trials.unique("trial_id"), trials.select("trial_id", "fold_index", "split", "regime"),
                           label="label")
    regime = results[0]["reading_regime"]
    notes = (f"Trials: task {settings['task']}, reading regime {regime} (data.reading_regime).",
             f"Model selection per fold on validation loss: {len(points)} grid point(s) x {seeds} seed(s); "
             f"choices in grid.csv.")
    for warning in constant_warnings(predictions):  # a balanced accuracy of 50 that measures nothing, said aloud
        print(f"readgaze cv: {warning}", file=sys.stderr)
    (run_dir / "run.json").write_text(json.dumps({
        "config": str(config), "task": settings["task"], "reading_regime": regime,
        "model": results[0]["model"], "folds": folds, "grid": grid, "seeds": seeds}, indent=2), encoding="utf-8")
    headline = tuple(description.headline_regimes)
    test = predictions.filter(pl.col("split") == "test")
    if regression:
        evaluate_regression_folds(predictions).write_csv(run_dir / "results_per_fold.csv")
        paths = write_regression_results(evaluate_regression(predictions), run_dir,
                                         notes=(*notes, *description.notes))
        write_paired_regression(predictions, results[0]["model"], run_dir, paths["markdown"])
        figure = plot_regression(test, run_dir / "regression.png", task=settings["task"], headline=headline)
    else:
        per_fold_results(predictions).write_csv(run_dir / "results_per_fold.csv")
        paths = write_results(evaluate(predictions), run_dir, description=description, notes=notes)
        if settings["task"] == "goal_question":
            write_goal_selection(predictions, run_dir, paths["markdown"])
        figure = plot_roc(test, run_dir / "roc.png", task=settings["task"], headline=headline)
    if seeds > 1:
        write_seed_spread([r["seed_predictions"] for r in results], run_dir, paths["markdown"], regression)
    return {"run": run_dir, "predictions": predictions_path, "csv": paths["csv"], "markdown": paths["markdown"],
            "roc": None if regression else figure, "figure": figure, "grid": grid_path, "qc": qc_path,
            "headline_regimes": headline}


def _is_regression(task: str) -> bool:
    """Whether ``task`` is a regression in :data:`readgaze.tasks.TASKS` (goal_reconstruction is not registered)."""
    return task in REGISTRY and REGISTRY[task].kind == "regression"


def _run_fold(config: str, data_path: str, fold: int, overrides: list[str], run_dir: str, baselines: tuple[str, ...],
              threads: int, points: list[dict] | None = None, seeds: int = 1) -> dict:
    """Fit every grid point and seed of one fold, choose on validation loss, add the baselines.

    Returns the fold's prediction files (chosen point, seed 0, val and test; baselines), its trials, the grid
    rows, the other seeds' test predictions, and the datamodule's QC records.
    """
    import torch

    torch.set_num_threads(threads)
    points = points or [{}]
    fold_dir = Path(run_dir) / f"fold_{fold}"
    rows, fitted = [], {}
    started = time.perf_counter()
    with fold_log(fold_dir / "train.log"):  # Lightning's banners, tips and warnings: not the terminal
        for index, point in enumerate(points):
            for seed in range(seeds):
                directory = fold_dir
                if len(points) > 1:
                    directory = directory / f"grid_{index}"
                if seeds > 1:
                    directory = directory / f"seed_{seed}"
                extra = [f"--{key}={value}" for key, value in point.items()]
                extra += ["--seed_everything", str(seed)] if seeds > 1 else []
                trial = _fit_and_predict(config, data_path, fold, [*overrides, *extra], directory)
                fitted[(index, seed)] = trial
                rows.append({"fold_index": fold, "grid_trial": index, "seed": seed, "params": json.dumps(point),
                             "val_loss": trial["val_loss"], "checkpoint": trial["checkpoint"]})
    losses = {i: sum(r["val_loss"] for r in rows if r["grid_trial"] == i) / seeds for i in range(len(points))}
    chosen = min(losses, key=losses.get)
    for row in rows:
        row["chosen"] = row["grid_trial"] == chosen
    best = fitted[(chosen, 0)]
    predictions = [best["val"], best["test"]]
    seed_predictions = []
    for seed in range(seeds):
        path = fold_dir / f"predictions_seed{seed}.parquet"
        both = [pl.read_parquet(fitted[(chosen, seed)][split]) for split in ("val", "test")]
        pl.concat(both, how="diagonal_relaxed").with_columns(pl.lit(seed, pl.Int64).alias("seed")).write_parquet(path)
        seed_predictions.append(path)
    datamodule = best["datamodule"]
    trials = datamodule.trials
    if "reading_speed_wpm" not in trials.columns:
        trials = trials.join(datamodule.trial_features_raw.select("trial_id", "reading_speed_wpm"), on="trial_id")
    if baselines:
        regression = datamodule.task_kind == "regression"
        specs = REGRESSORS if regression else BASELINES
        assignment = trials.select("trial_id", "fold_index", "split", "regime")
        wanted = {c for kind in baselines for c in specs[kind].features}
        table = with_baseline_features(trials, datamodule.path) if wanted - set(trials.columns) else trials
        for kind in baselines:  # val and test in one call: each grid is searched once
            path = fold_dir / f"predictions_{kind}.parquet"
            fitted = (run_regressor(table, assignment, "label", kind, split=("val", "test")) if regression else
                      run_baseline(table, assignment, datamodule.task, kind, split=("val", "test")))
            fitted.write_parquet(path)
            predictions.append(path)
    trial_path = fold_dir / "trials.parquet"
    trials.select("trial_id", "participant_id", "item_id", "label", "fold_index", "split", "regime").write_parquet(
        trial_path)
    qc = datamodule.qc_records()
    for record in qc:
        if record["count"]:
            print(f"fold {fold} qc: {record['step']}/{record['table']}: {record['action']} {record['count']:,} "
                  f"({record['reason']})", file=sys.stderr)
    return {"fold": fold, "predictions": predictions, "trials": trial_path, "grid": rows, "qc": qc,
            "seed_predictions": seed_predictions, "reading_regime": datamodule.effective_reading_regime,
            "model": best["model"], "seconds": time.perf_counter() - started,
            "val_auroc": auroc_of(best["val"]), "test_auroc": auroc_of(best["test"]),
            "val_rmse": rmse_of(best["val"]), "test_rmse": rmse_of(best["test"])}


def _fit_and_predict(config: str, data_path: str, fold: int, overrides: list[str], directory: Path) -> dict:
    """Fit one configuration, then predict validation and test from its best-on-validation checkpoint."""
    from readgaze.models.training.cli import make_cli

    cli = make_cli(["-c", config, "--data.path", data_path, "--data.fold", str(fold),
                    "--data.split_unit", "participant_item",  # cv never falls back to trial folds
                    "--trainer.default_root_dir", str(directory), "--model.init_args.predictions_dir",
                    str(directory), *QUIET_TRAINER, *overrides], run=False)
    callback = cli.trainer.checkpoint_callback
    if callback is None or getattr(callback, "monitor", None) != "loss/val":
        raise ConfigError("readgaze cv tests the best-on-validation checkpoint: the config's trainer.callbacks need "
                          "a lightning.pytorch.callbacks.ModelCheckpoint with monitor: loss/val, mode: min")
    cli.trainer.fit(cli.model, datamodule=cli.datamodule)
    best = callback.best_model_path
    if not best:
        raise ConfigError(f"fold {fold}: no best-on-validation checkpoint was saved (did validation run?)")
    validated = cli.trainer.validate(cli.model, datamodule=cli.datamodule, ckpt_path=best, weights_only=False)
    cli.trainer.test(cli.model, datamodule=cli.datamodule, ckpt_path=best, weights_only=False)
    from readgaze.models.training.callbacks import RunWriter

    writer = next(c for c in cli.trainer.callbacks if isinstance(c, RunWriter))
    writer.write_bundle(cli.trainer, cli.model, best)
    return {"val": directory / "predictions_val.parquet", "test": directory / "predictions_test.parquet",
            "val_loss": float(validated[0]["loss/val"]), "checkpoint": best, "datamodule": cli.datamodule,
            "model": type(cli.model).__name__}
