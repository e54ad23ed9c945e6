"""``readgaze bench``'s leaderboard: every model, baseline and ensemble side by side, in EyeBench's layout.

Rows: *Chance* (50 for AUROC and a binary balanced accuracy, 1/C for C classes), the baselines (*majority* first),
the models, then their ensembles (:class:`~readgaze.models.training.ensemble.MajorityVote` and
:class:`~readgaze.models.training.ensemble.LogisticEnsemble`, fit per fold on the models' validation predictions
and applied to their test predictions), each under its display name (:func:`readgaze.plots.display_name`;
``leaderboard.csv`` keeps the ids). Columns: per (dataset,) task, the regimes of :mod:`readgaze.splits` in its order
and with its titles (*New item*, *New participant*, *New item & participant*, *All (pooled per fold)*: the fold's
test trials pooled). Cells: the metric per fold, mean ± SEM over folds (:func:`readgaze.metrics.evaluate`), in %;
the best per column in bold; ``†`` on a cell whose per-fold scores come from fewer than
:data:`readgaze.metrics.SMALL_SAMPLE_TRIALS` trials on average (or where a fold held one class), as in every
results table. One table per metric: AUROC, balanced accuracy at 0.5 (EyeBench's), balanced accuracy at the
threshold chosen on validation.

Grid points are chosen per (model, fold) by the lowest validation loss, averaged over seeds (as ``readgaze cv``);
the chosen point's first seed gives the predictions (every unit's scores stay in ``units.csv``).

Significance: each model and ensemble against the column's strongest baseline (the baseline with the highest
mean in that column: the hardest reference), by the two tests of
:mod:`readgaze.models.training.bench_significance`, each Holm-adjusted over the rows of a column.

``leaderboard.csv`` has every p (``p``, ``p_holm``: t-test; ``p_permutation``, ``p_permutation_holm``).

A **regression** task (``reading_comprehension_skill``, :func:`~readgaze.models.training.bench_config.is_regression`)
gets tables of RMSE, MAE and R² instead (:func:`readgaze.metrics_regression.evaluate_regression_folds`, per regime
and the fold's test trials pooled, mean ± SEM over folds, in the target's units): its chance row is the
``chance_mean`` baseline (the training mean), no ensembles, the best is the *lowest* RMSE and MAE (the highest R²),
the reference the baseline of the lowest mean, the same corrected t-test over folds (and the same rules: no p with
fewer than :data:`MIN_T_TEST_FOLDS` folds or zero variance), and the permutation test over trials (RMSE and MAE
tables) of :func:`readgaze.metrics_regression.paired_regression_comparison`, swapping whole readers
(``group="participant_id"``: the label is a reader's).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import polars as pl

from readgaze.errors import DataError
from readgaze.metrics import SMALL_MARK, SMALL_SAMPLE_TRIALS, choose_thresholds, evaluate_folds, mean_sem
from readgaze.metrics_regression import REGRESSION_METRIC_NAMES, REGRESSION_METRICS, evaluate_regression_folds
from readgaze.models.training.bench_config import is_regression
from readgaze.models.training.bench_significance import (  # noqa: F401  (re-exported: the leaderboard's tests)
    MIN_T_TEST_FOLDS,
    N_PERMUTATIONS,
    corrected_t_test,
    holm,
    significance_note,
    stars,
)
from readgaze.models.training.ensemble import ENSEMBLES, fit_predict_fold
from readgaze.predictions import is_multiclass
from readgaze.splits import REGIME_ORDER as REGIMES
from readgaze.splits import regime_title

METRICS = {"auroc": "AUROC", "balanced_accuracy": "Balanced accuracy @ 0.5",
           "balanced_accuracy_tuned": "Balanced accuracy @ validation threshold"}
REGRESSION = {m: REGRESSION_METRIC_NAMES[m] for m in REGRESSION_METRICS}
"""The regression task's tables (target units; RMSE and MAE: lower is better)."""
LOWER_IS_BETTER = ("rmse", "mae")
KIND_ORDER = {"chance": 0, "baseline": 1, "model": 2, "ensemble": 3}


def _read(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def collect(out: Path, plan: list[dict], ensembles: bool = True) -> tuple[dict, list[dict]]:
    """Per (dataset, task): the test and validation predictions of every row (chosen grid points, baselines,
    ensembles) and the fold facts; plus one row per finished model unit (``units.csv``)."""
    done = {}
    for unit in plan:
        record = out / "units" / unit["id"] / "unit.json"
        if record.is_file():
            result = _read(record)
            if result.get("status") == "done" and result.get("hash") == unit["hash"]:
                done[unit["id"]] = (unit, result)
    groups: dict[tuple[str, str], dict] = {}
    unit_rows = []
    for uid, (unit, result) in done.items():
        key = (unit["dataset_name"], unit["task"])
        group = groups.setdefault(key, {"frames": [], "trials": [], "n_train": {}, "models": {}, "kinds": {},
                                        "regression": is_regression(unit["task"])})
        folder = out / "units" / uid
        if unit["kind"] == "baselines":
            for path in sorted(folder.glob("predictions_*.parquet")):
                frame = pl.read_parquet(path)
                group["frames"].append(frame)
                group["kinds"][frame["model"][0]] = "baseline"
            group["trials"].append(pl.read_parquet(folder / "trials.parquet"))
            group["n_train"][unit["fold"]] = result.get("n_train")
        else:
            group["models"].setdefault(unit["model_name"], []).append((unit, result, folder))
            unit_rows.append({"dataset": key[0], "task": key[1], "model": unit["model_name"], "fold": unit["fold"],
                              "seed": unit["seed"], "grid_point": unit["point_index"],
                              "params": json.dumps(unit["point"]), "val_loss": result.get("val_loss"),
                              "val_auroc": result.get("val_auroc"), "test_auroc": result.get("test_auroc"),
                              "seconds": result.get("seconds"), "attempt": result.get("attempt"),
                              **({"val_rmse": result.get("val_rmse"), "test_rmse": result.get("test_rmse")}
                                 if group["regression"] else {})})
    if any("val_rmse" in row for row in unit_rows):  # a regression task among them: every row has the columns
        for row in unit_rows:
            row.setdefault("val_rmse", None)
            row.setdefault("test_rmse", None)
    for group in groups.values():
        _add_models(group)
        if ensembles and not group["regression"]:  # the ensembles combine class probabilities
            _add_ensembles(group)
    return groups, unit_rows


def _add_models(group: dict) -> None:
    """The chosen grid point per (model, fold): lowest validation loss averaged over its seeds; its first seed."""
    classes = {}
    for name, units in group["models"].items():
        classes.setdefault(units[0][1].get("model", name), []).append(name)
    group["chosen"] = []
    for name, units in group["models"].items():
        cls = units[0][1].get("model", name)
        display = cls if len(classes[cls]) == 1 else f"{cls} ({name})"
        group["kinds"][display] = "model"
        by_fold: dict[int, dict[int, list]] = {}
        for unit, result, folder in units:
            by_fold.setdefault(unit["fold"], {}).setdefault(unit["point_index"], []).append((unit, result, folder))
        for fold, points in by_fold.items():
            loss = {i: np.mean([r["val_loss"] for _, r, _ in runs]) for i, runs in points.items()}
            best = min(loss, key=loss.get)
            unit, _, folder = min(points[best], key=lambda run: run[0]["seed"])
            group["chosen"].append({"model": display, "fold": fold, "grid_point": best, "seed": unit["seed"]})
            for split in ("val", "test"):
                group["frames"].append(pl.read_parquet(folder / f"predictions_{split}.parquet")
                                       .with_columns(pl.lit(display).alias("model")))


def _add_ensembles(group: dict) -> None:
    names = [m for m, kind in group["kinds"].items() if kind == "model"]
    if len(names) < 2:
        return
    predictions = pl.concat(group["frames"], how="diagonal_relaxed").filter(pl.col("model").is_in(names))
    labels = predictions.select("trial_id", "fold_index", "split", "label").unique(["trial_id", "fold_index",
                                                                                     "split"])
    for (fold,), part in predictions.group_by(["fold_index"], maintain_order=True):
        if part["model"].n_unique() < len(names):  # a member's unit is not finished for this fold
            continue
        val, test = part.filter(pl.col("split") == "val"), part.filter(pl.col("split") == "test")
        for ensemble in ENSEMBLES:
            try:
                fitted = fit_predict_fold(ensemble, val, test, names)
            except DataError as error:  # e.g. a fold whose validation trials hold one class
                group.setdefault("notes", []).append(f"{ensemble.name}, fold {fold}: {error}")
                continue
            for split, frame in fitted.items():
                group["frames"].append(frame.with_columns(pl.lit(split).alias("split"),
                                                          pl.lit(ensemble.name).alias("model"))
                                       .join(labels, on=["trial_id", "fold_index", "split"], how="left"))
                group["kinds"][ensemble.name] = "ensemble"


def score(group: dict) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(summary, per_fold) of one (dataset, task): the cells of :func:`readgaze.metrics.evaluate_folds` (thresholds
    chosen on the validation predictions) and their mean ± SEM over folds, as :func:`readgaze.metrics.evaluate`."""
    predictions = pl.concat(group["frames"], how="diagonal_relaxed")
    if group.get("regression"):
        return _score_regression(predictions)
    val = predictions.filter(pl.col("split") == "val")
    binary = not is_multiclass(predictions)
    thresholds = choose_thresholds(val) if binary and val.height else None
    per_fold = evaluate_folds(predictions, thresholds=thresholds)
    summary = per_fold.group_by("model", "regime", maintain_order=True).agg(
        pl.len().cast(pl.Int64).alias("n_folds"), *mean_sem(("balanced_accuracy", "balanced_accuracy_tuned", "auroc")),
        pl.col("auroc").is_not_null().sum().cast(pl.Int64).alias("auroc_n_folds"),
        pl.col("n_trials").sum().cast(pl.Int64).alias("n_trials"),
        pl.col("auroc_skipped").any().alias("auroc_skipped"))
    small = (pl.col("n_trials") / pl.col("n_folds") < SMALL_SAMPLE_TRIALS) | pl.col("auroc_skipped")
    return summary.with_columns(small.alias("small_sample")), per_fold  # as readgaze.metrics.evaluate


def _score_regression(predictions: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(summary, per_fold) of a regression task: :func:`readgaze.metrics_regression.evaluate_regression_folds` of
    the test predictions and their mean ± SEM over folds (``<metric>_n_folds``: the folds with a value)."""
    per_fold = evaluate_regression_folds(predictions, split="test")
    summary = per_fold.group_by("model", "regime", maintain_order=True).agg(
        pl.len().cast(pl.Int64).alias("n_folds"), *mean_sem(REGRESSION_METRICS),
        *[pl.col(m).is_not_null().sum().cast(pl.Int64).alias(f"{m}_n_folds") for m in REGRESSION_METRICS],
        pl.col("n_trials").sum().cast(pl.Int64).alias("n_trials"), pl.col("r2_skipped").any().alias("r2_skipped"))
    small = (pl.col("n_trials") / pl.col("n_folds") < SMALL_SAMPLE_TRIALS) | pl.col("r2_skipped")
    return summary.with_columns(small.alias("small_sample")), per_fold


def leaderboard(groups: dict) -> pl.DataFrame:
    """Long table: one row per (dataset, task, model, regime, metric) with mean, SEM, folds, best, the reference
    baseline, the mean paired difference and the p-values."""
    rows = []
    for (dataset, task), group in groups.items():
        if not group["frames"]:
            continue
        summary, per_fold = score(group)
        permutations = _Permutations(group)
        regression = group.get("regression", False)
        n_classes = None if regression else _classes(group)
        n_train = group["n_train"]
        for metric in REGRESSION if regression else METRICS:
            lower = metric in LOWER_IS_BETTER
            for regime in REGIMES:
                cells = summary.filter(pl.col("regime") == regime)
                chance = 0.5 if metric == "auroc" else None if regression else 1 / n_classes
                column = [] if regression else [  # a regression's chance row is its chance_mean baseline
                    {"dataset": dataset, "task": task, "model": "Chance", "kind": "chance", "regime": regime,
                     "metric": metric, "mean": chance, "sem": None, "n_folds": None, "small_sample": False}]
                for row in cells.iter_rows(named=True):
                    mean = row.get(f"{metric}_mean")
                    if mean is None or (isinstance(mean, float) and math.isnan(mean)):
                        continue
                    column.append({"dataset": dataset, "task": task, "model": row["model"],
                                   "kind": group["kinds"].get(row["model"], "model"), "regime": regime,
                                   "metric": metric, "mean": mean, "sem": row.get(f"{metric}_sem"),
                                   "n_folds": row["auroc_n_folds"] if metric == "auroc" else
                                   row[f"{metric}_n_folds"] if regression else row["n_folds"],
                                   "n_trials": row["n_trials"], "small_sample": row["small_sample"]})
                _significance(column, per_fold.filter(pl.col("regime") == regime), metric, n_train, lower)
                if metric == "auroc" or lower:
                    permutations.add(column, regime, metric)
                real = [c for c in column if c["kind"] != "chance"]
                top = (min if lower else max)((c["mean"] for c in real), default=None)
                for c in column:
                    c["best"] = c["kind"] != "chance" and top is not None and c["mean"] == top
                rows += column
    schema = {"dataset": pl.String, "task": pl.String, "model": pl.String, "kind": pl.String, "regime": pl.String,
              "metric": pl.String, "mean": pl.Float64, "sem": pl.Float64, "n_folds": pl.Int64, "n_trials": pl.Int64,
              "small_sample": pl.Boolean, "best": pl.Boolean, "reference": pl.String, "difference": pl.Float64,
              "t": pl.Float64, "p": pl.Float64, "p_holm": pl.Float64, "p_permutation": pl.Float64,
              "p_permutation_holm": pl.Float64}
    frame = pl.DataFrame([{k: r.get(k) for k in schema} for r in rows], schema=schema)
    kind = pl.col("kind").replace_strict(KIND_ORDER, return_dtype=pl.Int32)
    order = {f"{d}/{t}": i for i, (d, t) in enumerate(groups)}  # datasets and tasks in the configuration's order
    column = pl.concat_str("dataset", "task", separator="/").replace_strict(order, return_dtype=pl.Int64)
    return frame.with_columns(column.alias("_column")).sort("_column", "metric", kind, "model",
                                                            maintain_order=True).drop("_column")


def _classes(group: dict) -> int:
    frame = group["frames"][0]
    return frame["prediction_prob"].list.len().max() if is_multiclass(frame) else 2


def _significance(column: list[dict], per_fold: pl.DataFrame, metric: str, n_train: dict,
                  lower: bool = False) -> None:
    baselines = [c for c in column if c["kind"] == "baseline"]
    if not baselines:
        return
    reference = (min if lower else max)(baselines, key=lambda c: c["mean"])  # the strongest baseline
    values = {(r["model"], r["fold_index"]): (r[metric], r["n_trials"]) for r in per_fold.iter_rows(named=True)}
    tested, p_values = [], []
    for cell in column:
        if cell["kind"] not in ("model", "ensemble"):
            continue
        folds = sorted(f for (m, f) in values if m == cell["model"] and values[(m, f)][0] is not None
                       and values.get((reference["model"], f), (None,))[0] is not None)
        d = np.array([values[(cell["model"], f)][0] - values[(reference["model"], f)][0] for f in folds])
        ratios = [values[(cell["model"], f)][1] / n_train[f] for f in folds if n_train.get(f)]
        t, p = corrected_t_test(d, float(np.mean(ratios)) if ratios else 0.0)
        cell.update(reference=reference["model"], difference=float(d.mean()) if len(d) else None, t=t, p=p)
        tested.append(cell)
        p_values.append(p)
    for cell, adjusted in zip(tested, holm(p_values)):
        cell["p_holm"] = adjusted


class _Permutations:
    """The paired permutation test over trials (:func:`readgaze.metrics.paired_comparison`, AUROC; for a regression
    task :func:`readgaze.metrics_regression.paired_regression_comparison`, RMSE and MAE, whole readers swapped) of
    each row against a column's reference, computed once per (row, reference, metric) for every regime."""

    def __init__(self, group: dict) -> None:
        self.test = None
        self.done: dict[tuple[str, str, str], dict[str, float]] = {}
        self.frames = group["frames"]
        self.trials = group.get("trials", [])
        self.regression = group.get("regression", False)

    def _test(self) -> pl.DataFrame:
        if self.test is None:
            self.test = pl.concat(self.frames, how="diagonal_relaxed").filter(pl.col("split") == "test")
            if self.regression and "participant_id" not in self.test.columns and self.trials:  # the readers
                readers = pl.concat(self.trials, how="diagonal_relaxed").select(
                    "trial_id", pl.col("fold_index").cast(pl.Int32), "participant_id").unique(["trial_id",
                                                                                              "fold_index"])
                self.test = self.test.with_columns(pl.col("fold_index").cast(pl.Int32)).join(
                    readers, on=["trial_id", "fold_index"], how="left")
        return self.test

    def p(self, model: str, reference: str, regime: str, metric: str = "auroc") -> float | None:
        from readgaze.metrics import paired_comparison
        from readgaze.metrics_regression import paired_regression_comparison

        if (model, reference, metric) not in self.done:
            pair = self._test().filter(pl.col("model").is_in([model, reference]))
            try:
                if self.regression:
                    group = "participant_id" if "participant_id" in pair.columns else None
                    table = paired_regression_comparison(pair, model, reference, metric=metric, group=group,
                                                         n_permutations=N_PERMUTATIONS)
                else:
                    table = paired_comparison(pair, model, reference, metric="auroc", n_permutations=N_PERMUTATIONS)
            except DataError:  # no shared test trial
                table = pl.DataFrame({"regime": [], "metric": [], "permutation_p": []})
            self.done[(model, reference, metric)] = {r["regime"]: r["permutation_p"]
                                                     for r in table.iter_rows(named=True) if r["metric"] == metric}
        return self.done[(model, reference, metric)].get(regime)

    def add(self, column: list[dict], regime: str, metric: str = "auroc") -> None:
        tested = [c for c in column if c.get("reference") is not None]
        for cell in tested:
            cell["p_permutation"] = self.p(cell["model"], cell["reference"], regime, metric)
        for cell, adjusted in zip(tested, holm([c["p_permutation"] for c in tested])):
            cell["p_permutation_holm"] = adjusted


def marks(row: dict) -> str:
    """A cell's significance marks: ``*`` (t-test over folds), then ``+`` (permutation test over trials)."""
    return stars(row.get("p_holm")) + stars(row.get("p_permutation_holm"), "+")


def small(row: dict) -> str:
    """:data:`readgaze.metrics.SMALL_MARK` (with a space) for a small-sample cell, else ``""``."""
    return f" {SMALL_MARK}" if row.get("small_sample") else ""


def markdown(board: pl.DataFrame, *, header: list[str], notes: list[str]) -> str:
    """The leaderboard as Markdown: one table per metric, rows models (display names), columns (dataset,) task x
    regime (:mod:`readgaze.splits`' titles and order); marks and notes as in the module docstring."""
    from readgaze.plots import display_name

    datasets = board["dataset"].unique(maintain_order=True).to_list()
    columns = board.select("dataset", "task").unique(maintain_order=True).rows()
    lines = [*header, ""]
    any_small = False
    for metric, title in {**METRICS, **REGRESSION}.items():
        part = board.filter(pl.col("metric") == metric)
        if part.filter(pl.col("kind") != "chance").height == 0:
            continue
        if metric in REGRESSION:  # only the regression tasks' columns
            columns = part.select("dataset", "task").unique(maintain_order=True).rows()
            title += " (target units; lower is better)" if metric in LOWER_IS_BETTER else " (higher is better)"
        else:
            columns = board.filter(~pl.col("metric").is_in(list(REGRESSION))).select("dataset", "task").unique(
                maintain_order=True).rows()
            title += " (%)"
        heads = [f"{'' if len(datasets) == 1 else d + '/'}{t}: {regime_title(r)}" for d, t in columns for r in REGIMES]
        lines += [f"## {title}", "", "| Model | " + " | ".join(heads) + " |",
                  "|---|" + "---|" * len(heads)]
        cells = {(r["dataset"], r["task"], r["model"], r["regime"]): r for r in part.iter_rows(named=True)}
        models = part.select("model", "kind").unique(maintain_order=True).rows()
        folds = {c: part.filter((pl.col("dataset") == c[0]) & (pl.col("task") == c[1]))["n_folds"].max()
                 for c in columns}
        for model, _kind in models:
            row = [_cell(cells.get((d, t, model, r)), folds[(d, t)], metric) for d, t in columns for r in REGIMES]
            lines.append(f"| {display_name(model)} | " + " | ".join(row) + " |")
        any_small |= bool(part["small_sample"].fill_null(False).any())
        references = part.filter(pl.col("reference").is_not_null()).select("dataset", "task", "regime",
                                                                            "reference").unique(maintain_order=True)
        if references["reference"].n_unique() == 1:
            lines += ["", f"Reference baseline (the strongest in every column): "
                          f"{display_name(references['reference'][0])}."]
        elif references.height:
            refs = ", ".join(f"{'' if len(datasets) == 1 else r[0] + '/'}{r[1]} {regime_title(r[2])}: "
                             f"{display_name(r[3])}" for r in references.rows())
            lines += ["", f"Reference baseline per column (the strongest): {refs}."]
        lines.append("")
    if any_small:
        notes = [*notes, f"{SMALL_MARK} marks a cell whose per-fold scores come from fewer than {SMALL_SAMPLE_TRIALS} "
                         "trials on average (or where a fold held one class): too few for the number to mean much."]
    return "\n".join(lines + ["## Notes", "", *[f"- {n}" for n in notes]]) + "\n"


def _cell(row: dict | None, folds: int | None, metric: str = "auroc") -> str:
    if row is None or row["mean"] is None:
        return "–"
    if metric in REGRESSION:  # the target's units, 3 decimals
        text = f"{row['mean']:.3f}" + ("" if row["sem"] is None else f" ± {row['sem']:.3f}")
    else:
        text = f"{100 * row['mean']:.1f}" + ("" if row["sem"] is None else f" ± {100 * row['sem']:.1f}")
    text += marks(row) + small(row)
    if row["n_folds"] is not None and folds is not None and row["n_folds"] < folds:
        text += f" [{row['n_folds']} fold{'s' if row['n_folds'] != 1 else ''}]"
    return f"**{text}**" if row["best"] else text
