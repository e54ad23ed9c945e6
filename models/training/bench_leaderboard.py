"""The files of a ``readgaze bench`` folder read by people: the leaderboard and its figures, from the finished units.

:func:`write_report` writes ``leaderboard.md`` and ``leaderboard.csv`` (the tables and their significance, built by
:mod:`readgaze.models.training.bench_report`), ``units.csv`` (every unit's scores), ``grid.csv`` (the grid point
chosen per model and fold), one ROC figure per dataset and task (for a regression task the predicted-against-true
figure of :func:`readgaze.plots.plot_regression` instead) and ``figures/leaderboard.png``. A benchmark with
units not finished gets a **PARTIAL** table, each cell averaging the folds finished. ``readgaze bench report DIR``
(:func:`report_command`) writes them again from the folder's ``plan.json``; ``readgaze bench`` writes them as its
units finish (:mod:`readgaze.models.training.bench`).
"""

from __future__ import annotations

import argparse
import json
import warnings
from pathlib import Path

from readgaze.errors import ConfigError
from readgaze.models.training import bench_config as bc
from readgaze.models.training.bench_status import unit_states


def write_report(out: Path, config: bc.BenchConfig | None, units, notes: list[str] = ()) -> dict:
    """``leaderboard.{md,csv}``, ``units.csv``, ``grid.csv`` and the figures from the finished units."""
    with warnings.catch_warnings():  # one-class fold cells: sklearn warns; the tables and figures say so themselves
        warnings.filterwarnings("ignore", message="A single label was found", category=UserWarning)
        return _write_report(out, config, units, notes)


def _write_report(out: Path, config: bc.BenchConfig | None, units, notes) -> dict:
    import polars as pl

    from readgaze.models.training import bench_report as report
    from readgaze.models.training.bench_figure import plot_leaderboard
    from readgaze.plots import plot_regression, plot_roc
    from readgaze.splits import describe

    plan = [u.summary() if isinstance(u, bc.Unit) else u for u in units]
    states = unit_states(out, plan)
    counts = {s: sum(1 for v in states.values() if v[0] == s) for s in ("done", "failed", "running", "left")}
    partial = counts["done"] < len(plan)
    ensembles = True if config is None else config.ensembles
    groups, unit_rows = report.collect(out, plan, ensembles=ensembles)
    board = report.leaderboard(groups)
    board.write_csv(out / "leaderboard.csv")
    if unit_rows:
        pl.DataFrame(unit_rows).sort("dataset", "task", "model", "fold", "seed", "grid_point").write_csv(
            out / "units.csv")
    chosen = [{"dataset": d, "task": t, **c} for (d, t), g in groups.items() for c in g.get("chosen", [])]
    if chosen:
        pl.DataFrame(chosen).sort("dataset", "task", "model", "fold").write_csv(out / "grid.csv")
    figures = out / "figures"
    lines = []
    for (dataset, task), group in groups.items():
        if not group["frames"]:
            continue
        frames = pl.concat(group["frames"], how="diagonal_relaxed")
        headline = ()
        if group["trials"]:
            trials = pl.concat(group["trials"], how="diagonal_relaxed")
            description = describe(trials.unique("trial_id"), trials.select("trial_id", "fold_index", "split",
                                                                          "regime"), label="label")
            headline = tuple(description.headline_regimes)
            lines += [f"{dataset}/{task}: {n}" for n in description.notes]
        if group.get("regression"):  # predicted against true values, the chance_mean line: no ROC
            plot_regression(frames.filter(pl.col("split") == "test"), figures / f"regression_{dataset}_{task}.png",
                            task=task, headline=headline)
        else:
            plot_roc(frames.filter(pl.col("split") == "test"), figures / f"roc_{dataset}_{task}.png", task=task,
                     headline=headline)
    plot_leaderboard(board, figures / "leaderboard.png")
    folds = sorted({u["fold"] for u in plan})
    kinds = {bool(g.get("regression")) for g in groups.values() if g["frames"]}
    units = ("in the target's units (RMSE, MAE, R²)" if kinds == {True} else
             "% (classification) or in the target's units (regression)" if kinds == {True, False} else "%")
    header = ["# readgaze bench leaderboard", ""]
    if partial:
        header += [f"**PARTIAL**: {counts['done']} of {len(plan)} units finished ({counts['failed']} failed, "
                   f"{counts['running']} interrupted while running, {counts['left']} not started); cells average the "
                   f"folds finished ([n folds] where fewer than the column's). `readgaze bench status {out}` lists "
                   f"them; run the same command again to finish.", ""]
    header.append(f"Datasets: {', '.join(sorted({u['dataset_name'] for u in plan}))}; folds {folds}; "
                  f"seeds {sorted({u['seed'] for u in plan if u.get('seed') is not None}) or [0]}. Values are {units} "
                  f"(mean ± SEM over folds); the best per column in **bold**.")
    notes = [*notes, "Grid points: chosen per model and fold by the lowest validation loss (mean over seeds); "
             "grid.csv. Every unit's scores: units.csv.",
             report.significance_note(board.filter(pl.col("kind").is_in(["model", "ensemble"]))["n_folds"]
                                      .drop_nulls().to_list()),
             *(["Ensembles: fit per fold on the models' validation predictions, applied to their test predictions.",
                "Figures: figures/roc_<dataset>_<task>.png (one ROC panel per regime, every row), "
                "figures/leaderboard.png."] if False in kinds or not kinds else []), *lines]
    regression = [f"{d}/{t}" for (d, t), g in groups.items() if g.get("regression") and g["frames"]]
    if regression:
        notes += [f"Regression ({', '.join(regression)}): RMSE, MAE and R² in the target's units (mean ± SEM over "
                  "folds, not %); the chance row is the chance_mean baseline (the training mean); the best is the "
                  "lowest RMSE and MAE, the highest R²; the reference the baseline of the lowest mean; no ensembles. "
                  "Over trials (RMSE and MAE tables): the paired permutation test of "
                  "readgaze.metrics_regression.paired_regression_comparison, swapping whole readers "
                  "(participant_id). Figure: figures/regression_<dataset>_<task>.png (predicted against true "
                  "values per regime), no ROC."]
    markdown = out / "leaderboard.md"
    markdown.write_text(report.markdown(board, header=header, notes=notes), encoding="utf-8")
    return {"markdown": markdown, "csv": out / "leaderboard.csv", "partial": partial}


def report_command(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="readgaze bench report", description="rewrite the leaderboard")
    parser.add_argument("out", help="benchmark folder")
    args = parser.parse_args(argv)
    out = Path(args.out)
    if not (out / "plan.json").is_file():
        raise ConfigError("not a readgaze bench folder (no plan.json)", file=out)
    plan = json.loads((out / "plan.json").read_text(encoding="utf-8"))["units"]
    written = write_report(out, None, plan)
    print(written["markdown"].read_text(encoding="utf-8"))
    return 0
