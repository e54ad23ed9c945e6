"""``readgaze bench``'s leaderboard: every model, baseline and ensemble side by side, in EyeBench's layout.

Rows: *Chance* (50 for AUROC and a binary balanced accuracy, 1/C for C classes), the baselines (*majority* first),
the models, then their ensembles (:class:`~readgaze.models.training.ensemble.MajorityVote` and
:class:`~readgaze.models.training.ensemble.LogisticEnsemble`, fit per fold on the models' validation predictions
and applied to their test predictions). Columns: per (dataset,) task, the regimes *new reader* (new participant),
*new text* (new item), *both* (new item & participant) and *all* (the fold's test trials pooled). Cells: the metric
per fold, mean ± SEM over folds (:func:`readgaze.metrics.evaluate`), in %; the best per column in bold. One table
per metric: AUROC, balanced accuracy at 0.5 (EyeBench's), balanced accuracy at the threshold chosen on validation.

Grid points are chosen per (model, fold) by the lowest validation loss, averaged over seeds (as ``readgaze cv``);
the chosen point's first seed gives the predictions (every unit's scores stay in ``units.csv``).

Significance: each model and ensemble against the column's strongest baseline (the baseline with the highest
mean in that column: the hardest reference), paired by fold, with the corrected resampled t-test (Nadeau & Bengio,
2003, Machine Learning 52:239; Bouckaert & Frank, 2004): ``t = mean(d) / sqrt((1/k + n_test/n_train) var(d))``
over the k per-fold differences d, k - 1 degrees of freedom, two-sided. Why not the plain paired t-test: the
folds' training sets overlap (each pair shares most of its trials), so per-fold scores are positively correlated and
the plain test's variance is too small, its p too optimistic (Dietterich, 1998); the correction inflates the
variance by the test/train size ratio. Why not Wilcoxon's signed-rank test: with 3-10 folds it has almost no power
(3 folds can never reach p < 0.05) and ignores the same correlation. The p-values are Holm-adjusted over the rows
of a column; ``*``, ``**``, ``***`` mark adjusted p < 0.05, 0.01, 0.001 (``leaderboard.csv`` has every p).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import polars as pl

from readgaze.errors import DataError
from readgaze.metrics import choose_thresholds, evaluate_folds, mean_sem
from readgaze.models.training.ensemble import ENSEMBLES, fit_predict_fold
from readgaze.predictions import is_multiclass

REGIMES = ("new_participant", "new_item", "new_item_participant", "all")
TITLES = {"new_participant": "new reader", "new_item": "new text", "new_item_participant": "both", "all": "all"}
METRICS = {"auroc": "AUROC", "balanced_accuracy": "Balanced accuracy @ 0.5",
           "balanced_accuracy_tuned": "Balanced accuracy @ validation threshold"}
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
        group = groups.setdefault(key, {"frames": [], "trials": [], "n_train": {}, "models": {}, "kinds": {}})
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
                              "seconds": result.get("seconds"), "attempt": result.get("attempt")})
    for group in groups.values():
        _add_models(group)
        if ensembles:
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
    val = predictions.filter(pl.col("split") == "val")
    binary = not is_multiclass(predictions)
    thresholds = choose_thresholds(val) if binary and val.height else None
    per_fold = evaluate_folds(predictions, thresholds=thresholds)
    summary = per_fold.group_by("model", "regime", maintain_order=True).agg(
        pl.len().cast(pl.Int64).alias("n_folds"), *mean_sem(("balanced_accuracy", "balanced_accuracy_tuned", "auroc")),
        pl.col("auroc").is_not_null().sum().cast(pl.Int64).alias("auroc_n_folds"))
    return summary, per_fold


def corrected_t_test(differences: np.ndarray, ratio: float) -> tuple[float | None, float | None]:
    """Two-sided corrected resampled t-test (see the module docstring): ``(t, p)``; None with < 2 folds or no
    spread."""
    from scipy import stats

    k = len(differences)
    if k < 2:
        return None, None
    variance = float(np.var(differences, ddof=1))
    if not variance > 0:
        return None, None
    t = float(np.mean(differences)) / math.sqrt((1 / k + ratio) * variance)
    return t, float(2 * stats.t.sf(abs(t), df=k - 1))


def holm(p_values: list[float | None]) -> list[float | None]:
    """Holm's step-down adjustment of the non-None p-values (family: the list)."""
    indexed = sorted((p, i) for i, p in enumerate(p_values) if p is not None)
    adjusted: list[float | None] = [None] * len(p_values)
    running = 0.0
    for rank, (p, i) in enumerate(indexed):
        running = max(running, min(1.0, (len(indexed) - rank) * p))
        adjusted[i] = running
    return adjusted


def leaderboard(groups: dict) -> pl.DataFrame:
    """Long table: one row per (dataset, task, model, regime, metric) with mean, SEM, folds, best, the reference
    baseline, the mean paired difference and the p-values."""
    rows = []
    for (dataset, task), group in groups.items():
        if not group["frames"]:
            continue
        summary, per_fold = score(group)
        n_classes = _classes(group)
        n_train = group["n_train"]
        for metric in METRICS:
            for regime in REGIMES:
                cells = summary.filter(pl.col("regime") == regime)
                chance = 0.5 if metric == "auroc" else 1 / n_classes
                column = [{"dataset": dataset, "task": task, "model": "Chance", "kind": "chance", "regime": regime,
                           "metric": metric, "mean": chance, "sem": None, "n_folds": None}]
                for row in cells.iter_rows(named=True):
                    mean = row.get(f"{metric}_mean")
                    if mean is None or (isinstance(mean, float) and math.isnan(mean)):
                        continue
                    column.append({"dataset": dataset, "task": task, "model": row["model"],
                                   "kind": group["kinds"].get(row["model"], "model"), "regime": regime,
                                   "metric": metric, "mean": mean, "sem": row.get(f"{metric}_sem"),
                                   "n_folds": row["auroc_n_folds"] if metric == "auroc" else row["n_folds"]})
                _significance(column, per_fold.filter(pl.col("regime") == regime), metric, n_train)
                real = [c for c in column if c["kind"] != "chance"]
                top = max((c["mean"] for c in real), default=None)
                for c in column:
                    c["best"] = c["kind"] != "chance" and top is not None and c["mean"] == top
                rows += column
    schema = {"dataset": pl.String, "task": pl.String, "model": pl.String, "kind": pl.String, "regime": pl.String,
              "metric": pl.String, "mean": pl.Float64, "sem": pl.Float64, "n_folds": pl.Int64, "best": pl.Boolean,
              "reference": pl.String, "difference": pl.Float64, "t": pl.Float64, "p": pl.Float64,
              "p_holm": pl.Float64}
    frame = pl.DataFrame([{k: r.get(k) for k in schema} for r in rows], schema=schema)
    kind = pl.col("kind").replace_strict(KIND_ORDER, return_dtype=pl.Int32)
    order = {f"{d}/{t}": i for i, (d, t) in enumerate(groups)}  # datasets and tasks in the configuration's order
    column = pl.concat_str("dataset", "task", separator="/").replace_strict(order, return_dtype=pl.Int64)
    return frame.with_columns(column.alias("_column")).sort("_column", "metric", kind, "model",
                                                            maintain_order=True).drop("_column")


def _classes(group: dict) -> int:
    frame = group["frames"][0]
    return frame["prediction_prob"].list.len().max() if is_multiclass(frame) else 2


def _significance(column: list[dict], per_fold: pl.DataFrame, metric: str, n_train: dict) -> None:
    baselines = [c for c in column if c["kind"] == "baseline"]
    if not baselines:
        return
    reference = max(baselines, key=lambda c: c["mean"])
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


def stars(p: float | None) -> str:
    if p is None:
        return ""
    return "***" if p < 0.001 else "**" if p < 0.01 else "*" if p < 0.05 else ""


def markdown(board: pl.DataFrame, *, header: list[str], notes: list[str]) -> str:
    """The leaderboard as Markdown: one table per metric, rows models, columns (dataset,) task x regime."""
    datasets = board["dataset"].unique(maintain_order=True).to_list()
    columns = board.select("dataset", "task").unique(maintain_order=True).rows()
    lines = [*header, ""]
    for metric, title in METRICS.items():
        part = board.filter(pl.col("metric") == metric)
        if part.filter(pl.col("kind") != "chance").height == 0:
            continue
        heads = [f"{'' if len(datasets) == 1 else d + '/'}{t}: {TITLES[r]}" for d, t in columns for r in REGIMES]
        lines += [f"## {title} (%)", "", "| Model | " + " | ".join(heads) + " |",
                  "|---|" + "---|" * len(heads)]
        cells = {(r["dataset"], r["task"], r["model"], r["regime"]): r for r in part.iter_rows(named=True)}
        models = part.select("model", "kind").unique(maintain_order=True).rows()
        folds = {c: part.filter((pl.col("dataset") == c[0]) & (pl.col("task") == c[1]))["n_folds"].max()
                 for c in columns}
        for model, _kind in models:
            row = [_cell(cells.get((d, t, model, r)), folds[(d, t)]) for d, t in columns for r in REGIMES]
            lines.append(f"| {model} | " + " | ".join(row) + " |")
        references = part.filter(pl.col("reference").is_not_null()).select("dataset", "task", "regime",
                                                                            "reference").unique(maintain_order=True)
        if references["reference"].n_unique() == 1:
            lines += ["", f"Reference baseline (the strongest in every column): {references['reference'][0]}."]
        elif references.height:
            refs = ", ".join(f"{'' if len(datasets) == 1 else r[0] + '/'}{r[1]} {TITLES[r[2]]}: {r[3]}"
                             for r in references.rows())
            lines += ["", f"Reference baseline per column (the strongest): {refs}."]
        lines.append("")
    return "\n".join(lines + ["## Notes", "", *[f"- {n}" for n in notes]]) + "\n"


def _cell(row: dict | None, folds: int | None) -> str:
    if row is None or row["mean"] is None:
        return "–"
    text = f"{100 * row['mean']:.1f}" + ("" if row["sem"] is None else f" ± {100 * row['sem']:.1f}")
    text += stars(row["p_holm"])
    if row["n_folds"] is not None and folds is not None and row["n_folds"] < folds:
        text += f" [{row['n_folds']} fold{'s' if row['n_folds'] != 1 else ''}]"
    return f"**{text}**" if row["best"] else text


def plot_leaderboard(board: pl.DataFrame, path: Path, metric: str = "auroc") -> Path | None:
    """A compact picture of one metric's table: rows models, columns (dataset,) task x regime, colour = mean,
    ``mean ± SEM`` and stars written in each cell, the best per column boxed."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    part = board.filter((pl.col("metric") == metric) & (pl.col("kind") != "chance"))
    if part.height == 0:
        return None
    present = set(part.select("dataset", "task", "regime").unique().rows())
    columns = [(d, t, r) for d, t in part.select("dataset", "task").unique(maintain_order=True).rows()
               for r in REGIMES if (d, t, r) in present]
    models = part.select("model").unique(maintain_order=True).to_series().to_list()
    cells = {(r["model"], r["dataset"], r["task"], r["regime"]): r for r in part.iter_rows(named=True)}
    values = np.full((len(models), len(columns)), np.nan)
    for i, model in enumerate(models):
        for j, column in enumerate(columns):
            row = cells.get((model, *column))
            if row is not None:
                values[i, j] = 100 * row["mean"]
    several = part["dataset"].n_unique() > 1
    figure, ax = plt.subplots(figsize=(1.25 * len(columns) + 2.6, 0.42 * len(models) + 1.6))
    spread = max(10.0, float(np.nanmax(np.abs(values - 50.0))))  # chance (50) in the middle of the colour scale
    image = ax.imshow(values, cmap="RdYlGn", vmin=50.0 - spread, vmax=50.0 + spread, aspect="auto")
    for i, model in enumerate(models):
        for j, column in enumerate(columns):
            row = cells.get((model, *column))
            if row is None:
                continue
            text = f"{100 * row['mean']:.1f}" + ("" if row["sem"] is None else f"±{100 * row['sem']:.1f}")
            ax.text(j, i, text + stars(row["p_holm"]), ha="center", va="center", fontsize=7,
                    fontweight="bold" if row["best"] else "normal")
            if row["best"]:
                ax.add_patch(plt.Rectangle((j - 0.5, i - 0.5), 1, 1, fill=False, edgecolor="black", linewidth=1.6))
    ax.set_xticks(range(len(columns)), [f"{(d + '/') if several else ''}{t}\n{TITLES[r]}" for d, t, r in columns],
                  fontsize=7, rotation=0)
    ax.set_yticks(range(len(models)), models, fontsize=8)
    figure.colorbar(image, ax=ax, fraction=0.03, pad=0.01).set_label(f"{METRICS[metric]} %", fontsize=8)
    ax.set_title(f"{METRICS[metric]} (%): mean±SEM over folds; boxed = best per column; "
                 f"*: vs the column's strongest baseline (Holm)", fontsize=8)
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=130, bbox_inches="tight")
    plt.close(figure)
    return path
