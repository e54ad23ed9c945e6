"""The tables ``readgaze cv`` writes beside ``results.md`` once every fold has run: the per-fold cells
(``results_per_fold.csv``), goal selection's All / Different spans / Same span, the spread over seeds
(``seeds.csv``) and, for a regression task, the paired comparison of the model with each baseline (``paired.csv``).
Each appends its section to ``results.md``. :mod:`readgaze.models.training.cv` calls them.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

from readgaze.metrics import choose_thresholds, evaluate, evaluate_folds, evaluate_goal_selection, goal_selection_table
from readgaze.metrics_regression import REGRESSION_METRICS, evaluate_regression, paired_regression_comparison
from readgaze.predictions import is_multiclass

METRICS_OF_SEEDS = ("balanced_accuracy", "balanced_accuracy_tuned", "auroc")


def per_fold_results(predictions: pl.DataFrame) -> pl.DataFrame:
    """Every (model, regime, fold) cell with its validation-chosen threshold (binary tasks)."""
    val = predictions.filter(pl.col("split") == "val")
    binary = not is_multiclass(predictions)
    thresholds = choose_thresholds(val) if binary and val.height else None
    return evaluate_folds(predictions, thresholds=thresholds)


def write_goal_selection(predictions: pl.DataFrame, run_dir: Path, markdown: Path) -> None:
    """``goal_selection.{csv,md}`` (All / Different spans / Same span), appended to ``results.md``."""
    scored = predictions.filter(pl.col("prediction_prob").list.len() == 3) if isinstance(
        predictions.schema["prediction_prob"], pl.List) else predictions.head(0)
    if scored.height == 0:
        return
    evaluation = evaluate_goal_selection(scored)
    evaluation.write_csv(run_dir / "goal_selection.csv")
    table = goal_selection_table(evaluation)
    (run_dir / "goal_selection.md").write_text(table, encoding="utf-8")
    markdown.write_text(markdown.read_text(encoding="utf-8") + "\n## Goal selection\n\n" + table, encoding="utf-8")


def write_seed_spread(seed_files: list[list[Path]], run_dir: Path, markdown: Path, regression: bool = False) -> None:
    """``seeds.csv``: each seed's per-regime scores, and their mean and standard deviation over seeds (RMSE, MAE
    and R² in the target's units for a regression run; % otherwise)."""
    frames = [pl.read_parquet(p) for files in seed_files for p in files]
    predictions = pl.concat(frames, how="diagonal_relaxed")
    metrics, scale = (REGRESSION_METRICS, 1) if regression else (METRICS_OF_SEEDS, 100)
    rows = []
    for (seed,), part in predictions.group_by(["seed"], maintain_order=True):
        scored = evaluate_regression(part) if regression else evaluate(part)
        rows.append(scored.select("model", "regime", *[f"{m}_mean" for m in metrics])
                    .with_columns(pl.lit(seed, pl.Int64).alias("seed")))
    per_seed = pl.concat(rows)
    spread = per_seed.group_by("model", "regime", maintain_order=True).agg(
        pl.len().alias("n_seeds"),
        *[pl.col(f"{m}_mean").mean().alias(f"{m}_seed_mean") for m in metrics],
        *[pl.col(f"{m}_mean").std(ddof=1).alias(f"{m}_seed_std") for m in metrics])
    per_seed.write_csv(run_dir / "seeds.csv")
    spread.write_csv(run_dir / "seeds_spread.csv")
    digits = 3 if regression else 1
    lines = ["", "## Spread over seeds", "", "| Model | Regime | seeds | " + " | ".join(
        f"{m} mean ± std" for m in metrics) + " |", "|---|---|---|" + "---|" * len(metrics)]
    for row in spread.iter_rows(named=True):
        cells = []
        for m in metrics:
            mean, std = row[f"{m}_seed_mean"], row[f"{m}_seed_std"]
            cells.append("–" if mean is None else f"{scale * mean:.{digits}f}"
                         + ("" if std is None else f" ± {scale * std:.{digits}f}"))
        lines.append(f"| {row['model']} | {row['regime']} | {row['n_seeds']} | " + " | ".join(cells) + " |")
    markdown.write_text(markdown.read_text(encoding="utf-8") + "\n".join(lines) + "\n", encoding="utf-8")


def write_paired_regression(predictions: pl.DataFrame, model: str, run_dir: Path, markdown: Path) -> None:
    """``paired.csv``: ``model`` against each baseline of a regression run (paired RMSE difference per regime,
    whole readers swapped in the permutation test: the label is a reader's), appended to ``results.md``."""
    test = predictions.filter(pl.col("split") == "test")
    others = [m for m in test["model"].unique(maintain_order=True).to_list() if m != model]
    if model not in test["model"].to_list() or not others:
        return
    group = "participant_id" if "participant_id" in test.columns else None
    table = pl.concat([paired_regression_comparison(test, model, other, metric="rmse", group=group)
                       .with_columns(pl.lit(model).alias("reference"), pl.lit(other).alias("other"))
                       for other in others])
    table.write_csv(run_dir / "paired.csv")
    lines = ["", "## Paired comparison (RMSE, test)", "",
             f"{model} minus each baseline, per regime: a negative difference favours {model}. Mean ± SEM over "
             f"folds; p of a paired t-test over folds and of a permutation test swapping the two predictions of "
             f"whole {'readers' if group else 'trials'} (1,000 permutations).", "",
             "| Baseline | Regime | folds | difference | t-test p | permutation p |", "|---|---|---|---|---|---|"]
    for row in table.iter_rows(named=True):
        sem = "" if row["difference_sem"] is None else f" ± {row['difference_sem']:.3f}"
        p_t = "–" if row["t_test_p"] is None else f"{row['t_test_p']:.3f}"
        lines.append(f"| {row['other']} | {row['regime']} | {row['n_folds']} | {row['difference_mean']:+.3f}{sem} "
                     f"| {p_t} | {row['permutation_p']:.3f} |")
    markdown.write_text(markdown.read_text(encoding="utf-8") + "\n".join(lines) + "\n", encoding="utf-8")
