"""Per-regime scores of trial-level *regression* predictions (e.g. CopCo's reading-comprehension skill), over folds.

The regression counterpart of :mod:`readgaze.metrics`, with the same protocol (EyeBench, Shubi et al., 2025): a metric
is computed per (model, regime, fold) on that fold's test trials and reported as mean ± SEM over folds (SEM =
``std(ddof=1) / sqrt(n_folds)``, :func:`readgaze.metrics.mean_sem`). The ``all`` row pools a fold's test trials over
the three regimes before scoring (EyeBench's "Average" column), then averages over folds.

Metrics (scikit-learn): ``rmse`` (root mean squared error, :func:`sklearn.metrics.root_mean_squared_error`), ``mae``
(mean absolute error) and ``r2`` (coefficient of determination, ``1 - SS_res / SS_tot`` with ``SS_tot`` about the
cell's own mean, :func:`sklearn.metrics.r2_score`), in the target's units (R² unitless). R² is undefined on a cell
whose labels are all equal (a reader-level target with one reader in the regime): that cell is skipped, counted in
``r2_folds_skipped`` and left out of the mean. A cell of fewer than :data:`readgaze.metrics.SMALL_SAMPLE_TRIALS`
trials, or with an undefined R², is marked as a small sample.

A regression prediction table has ``trial_id``, ``label`` (Float64, the true value), ``prediction_value`` (Float64,
the predicted value), ``regime``, ``fold_index`` and optionally ``model``, ``split``, ``participant_id``.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import polars as pl
from sklearn.metrics import mean_absolute_error, r2_score, root_mean_squared_error

from readgaze.errors import DataError, SchemaError
from readgaze.metrics import (
    SMALL_MARK,
    SMALL_SAMPLE_TRIALS,
    T_TEST_MIN_FOLDS,
    check_group,
    mean_sem,
    swap_units,
    with_group,
)
from readgaze.predictions import PREDICTION_VALUE
from readgaze.splits.regimes import ALL, REGIME_ORDER, REGIMES, TITLES

REGRESSION_METRICS = ("rmse", "mae", "r2")
REGRESSION_METRIC_NAMES = {"rmse": "RMSE", "mae": "MAE", "r2": "R²"}
REGRESSION_NEEDED = ("trial_id", "label", PREDICTION_VALUE, "regime", "fold_index")
AGGREGATION = ("per-fold metric, mean ± SEM over folds; 'all' pools each fold's test trials over regimes "
               "(EyeBench's 'Average')")


def check_regression_predictions(predictions: pl.DataFrame | pl.LazyFrame, split: str | None = "test"
                                 ) -> pl.DataFrame:
    """Validate a regression prediction table; return ``model, regime, fold_index, trial_id, label, prediction_value``.

    Rows of other splits are dropped when a ``split`` column exists; ``model`` defaults to ``"model"``; ``label`` and
    ``prediction_value`` become Float64.

    Raises
    ------
    SchemaError
        A needed column is missing, or ``label`` / ``prediction_value`` is not numeric.
    DataError
        Every problem at once (rows are 0-based rows of the frame as given): no rows, an unknown regime, a null or
        non-finite label or prediction, a trial predicted twice by one model in one fold.
    """
    frame = predictions.collect() if isinstance(predictions, pl.LazyFrame) else predictions
    frame = frame.with_row_index("row")
    missing = [c for c in REGRESSION_NEEDED if c not in frame.columns]
    if missing:
        raise SchemaError(f"regression predictions lack column(s) {missing}; they need {list(REGRESSION_NEEDED)}")
    for column in ("label", PREDICTION_VALUE):
        if not frame.schema[column].is_numeric():
            raise SchemaError(f"got dtype {frame.schema[column]}, expected a number (Float64)", column=column)
    if split is not None and "split" in frame.columns:
        frame = frame.filter(pl.col("split") == split)
    if "model" not in frame.columns:
        frame = frame.with_columns(pl.lit("model").alias("model"))
    frame = frame.select("model", "regime", pl.col("fold_index").cast(pl.Int32), "trial_id",
                         pl.col("label", PREDICTION_VALUE).cast(pl.Float64), "row")
    problems = []
    if frame.height == 0:
        problems.append("no rows to score" + (f" (split == {split!r})" if split is not None else ""))
    bad = frame.filter(~pl.col("regime").is_in(list(REGIMES)) | pl.col("regime").is_null())
    if bad.height:
        problems.append(f"row {bad['row'][0]}: regime {bad['regime'][0]!r}, expected one of {list(REGIMES)} "
                        f"({bad.height} rows)")
    for column in ("label", PREDICTION_VALUE):
        bad = frame.filter(pl.col(column).is_null() | ~pl.col(column).is_finite())
        if bad.height:
            problems.append(f"row {bad['row'][0]}: {column} {bad[column][0]!r}, expected a finite number "
                            f"({bad.height} rows)")
    twice = frame.filter(pl.struct("model", "fold_index", "trial_id").is_duplicated())
    if twice.height:
        problems.append(f"trial {twice['trial_id'][0]!r} is predicted more than once by model "
                        f"{twice['model'][0]!r} in fold {twice['fold_index'][0]} ({twice.height} rows)")
    if problems:
        raise DataError("regression predictions: " + "; ".join(problems))
    return frame.drop("row")


def regression_scores(labels: np.ndarray, predicted: np.ndarray) -> dict:
    """RMSE, MAE and R² of one cell (R² None when the labels are all equal); see the module docstring."""
    defined = labels.size > 1 and not np.all(labels == labels[0])
    return {"rmse": float(root_mean_squared_error(labels, predicted)),
            "mae": float(mean_absolute_error(labels, predicted)),
            "r2": float(r2_score(labels, predicted)) if defined else None, "r2_skipped": not defined}


def evaluate_regression_folds(predictions: pl.DataFrame | pl.LazyFrame, *, split: str | None = "test"
                              ) -> pl.DataFrame:
    """Score every (model, regime, fold) cell, plus the pooled regime ``"all"`` per (model, fold).

    Parameters
    ----------
    predictions : polars.DataFrame or LazyFrame
        A regression prediction table (module docstring).
    split : str or None, default "test"
        When a ``split`` column exists, only rows of this split are scored.

    Returns
    -------
    polars.DataFrame
        ``model``, ``regime`` (the three regimes then ``all``), ``fold_index`` (Int32), ``n_trials`` (Int64),
        ``rmse``, ``mae``, ``r2`` (Float64; ``r2`` null when undefined), ``r2_skipped`` (Boolean), ``small_sample``.

    Raises
    ------
    SchemaError, DataError
        As :func:`check_regression_predictions`.
    """
    frame = check_regression_predictions(predictions, split)
    rows = []
    for part in pl.concat([frame, frame.with_columns(pl.lit(ALL).alias("regime"))]).partition_by(
            "model", "regime", "fold_index", maintain_order=True):
        rows.append({"model": part["model"][0], "regime": part["regime"][0], "fold_index": part["fold_index"][0],
                     "n_trials": part.height,
                     **regression_scores(part["label"].to_numpy(), part[PREDICTION_VALUE].to_numpy())})
    schema = {"model": pl.String, "regime": pl.String, "fold_index": pl.Int32, "n_trials": pl.Int64,
              "rmse": pl.Float64, "mae": pl.Float64, "r2": pl.Float64, "r2_skipped": pl.Boolean}
    order = pl.col("regime").replace_strict({r: i for i, r in enumerate(REGIME_ORDER)}, return_dtype=pl.Int32)
    small = (pl.col("n_trials") < SMALL_SAMPLE_TRIALS) | pl.col("r2_skipped")
    return pl.DataFrame(rows, schema=schema).with_columns(small.alias("small_sample")).sort("model", order,
                                                                                           "fold_index")


def evaluate_regression(predictions: pl.DataFrame | pl.LazyFrame, *, split: str | None = "test") -> pl.DataFrame:
    """RMSE, MAE and R² per model and regime, mean ± SEM over folds (module docstring).

    Returns
    -------
    polars.DataFrame
        One row per (``model``, ``regime``), ``regime`` in ``new_item``, ``new_participant``,
        ``new_item_participant``, ``all``: ``n_folds``, ``n_trials`` (summed over folds), ``<metric>_mean`` and
        ``<metric>_sem`` for ``rmse``, ``mae``, ``r2`` (SEM null with one fold), ``r2_n_folds``,
        ``r2_folds_skipped``, ``aggregation`` and ``small_sample``.

    Examples
    --------
    >>> import polars as pl
    >>> predictions = pl.DataFrame({"label": [1.0, 3.0, 2.0, 4.0], "prediction_value": [2.0, 2.0, 2.0, 2.0],
    ...                             "regime": ["new_item"] * 2 + ["new_participant"] * 2,
    ...                             "fold_index": [0] * 4, "trial_id": ["a", "b", "c", "d"]})
    >>> scores = evaluate_regression(predictions).select("regime", pl.col("rmse_mean", "mae_mean", "r2_mean").round(3))
    >>> scores.rows()
    [('new_item', 1.0, 1.0, 0.0), ('new_participant', 1.414, 1.0, -1.0), ('all', 1.225, 1.0, -0.2)]
    """
    per_fold = evaluate_regression_folds(predictions, split=split)
    order = pl.col("regime").replace_strict({r: i for i, r in enumerate(REGIME_ORDER)}, return_dtype=pl.Int32)
    return (per_fold.group_by("model", "regime", maintain_order=True)
            .agg(pl.len().cast(pl.Int64).alias("n_folds"), pl.col("n_trials").sum().alias("n_trials"),
                 *mean_sem(REGRESSION_METRICS),
                 pl.col("r2").is_not_null().sum().cast(pl.Int64).alias("r2_n_folds"),
                 pl.col("r2_skipped").sum().cast(pl.Int64).alias("r2_folds_skipped"))
            .with_columns(pl.lit(AGGREGATION).alias("aggregation"),
                          ((pl.col("n_trials") / pl.col("n_folds") < SMALL_SAMPLE_TRIALS)
                           | (pl.col("r2_folds_skipped") > 0)).alias("small_sample"))
            .sort("model", order))


def regression_results_table(evaluation: pl.DataFrame, *, metrics: tuple[str, ...] = REGRESSION_METRICS,
                             unit: str = "", notes: tuple[str, ...] = ()) -> str:
    """Markdown table: one row per (model, metric), one column per regime, cells ``mean ± SEM`` (2 decimals).

    Parameters
    ----------
    evaluation : polars.DataFrame
        Output of :func:`evaluate_regression`.
    metrics : tuple of str
        Any of :data:`REGRESSION_METRICS`.
    unit : str
        The target's unit, named in the note (e.g. ``"test-score points"``).
    notes : tuple of str
        Extra notes printed under the table.
    """
    header = [TITLES[r] for r in REGIME_ORDER]
    lines = ["| Model | Metric | " + " | ".join(header) + " |", "|---|---|" + "---|" * len(REGIME_ORDER)]
    cells = {(r["model"], r["regime"]): r for r in evaluation.iter_rows(named=True)}
    for model in evaluation["model"].unique(maintain_order=True):
        for metric in metrics:
            values = [_cell(cells.get((model, r)), metric) for r in REGIME_ORDER]
            lines.append(f"| {model} | {REGRESSION_METRIC_NAMES[metric]} | " + " | ".join(values) + " |")
        counts = ["–" if (row := cells.get((model, r))) is None else f"{row['n_trials']:,} ({row['n_folds']})"
                  for r in REGIME_ORDER]
        lines.append(f"| {model} | trials (folds) | " + " | ".join(counts) + " |")
    notes = [f"RMSE and MAE in the target's units{f' ({unit})' if unit else ''}, lower is better; R² unitless, "
             "higher is better (0 = predicting each cell's own mean). Mean ± SEM over folds; each metric is computed "
             "per fold and regime; the 'All' column pools a fold's test trials over the three regimes.", *notes]
    if any(row.get("small_sample") for row in cells.values()):
        notes.append(f"{SMALL_MARK} marks a cell whose per-fold scores come from fewer than {SMALL_SAMPLE_TRIALS} "
                     "trials on average, or where R² was undefined (all labels equal) in a fold.")
    skipped = int(evaluation["r2_folds_skipped"].sum()) if "r2" in metrics else 0
    if skipped:
        notes.append(f"R² was undefined (all labels equal) and skipped in {skipped} fold cells.")
    return "\n".join(lines) + "\n\n" + "\n".join(f"- {note}" for note in notes) + "\n"


def _cell(row: dict | None, metric: str) -> str:
    if row is None or row[f"{metric}_mean"] is None or math.isnan(row[f"{metric}_mean"]):
        return "–"
    sem = row[f"{metric}_sem"]
    mark = f" {SMALL_MARK}" if row.get("small_sample") else ""
    return f"{row[f'{metric}_mean']:.2f}" + ("" if sem is None else f" ± {sem:.2f}") + mark


def write_regression_results(evaluation: pl.DataFrame, directory: str | Path, *, stem: str = "results",
                             unit: str = "", notes: tuple[str, ...] = ()) -> dict[str, Path]:
    """Write ``<stem>.csv`` (the evaluation frame) and ``<stem>.md`` (:func:`regression_results_table`).

    Returns ``{"csv": path, "markdown": path}``; the directory is created if needed.
    """
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    paths = {"csv": directory / f"{stem}.csv", "markdown": directory / f"{stem}.md"}
    evaluation.write_csv(paths["csv"])
    paths["markdown"].write_text(regression_results_table(evaluation, unit=unit, notes=notes), encoding="utf-8")
    return paths


# ---- paired comparison of two regression models on the same test trials ----

def paired_regression_comparison(predictions: pl.DataFrame | pl.LazyFrame, reference: str, other: str, *,
                                 metric: str = "rmse", group: str | None = None, n_permutations: int = 1000,
                                 seed: int = 0) -> pl.DataFrame:
    """Is ``reference`` better than ``other`` on the same test trials? Per regime, the paired difference and tests.

    The regression counterpart of :func:`readgaze.metrics.paired_comparison` (same columns, same two tests):
    ``difference = reference - other`` of ``metric`` (``"rmse"`` or ``"mae"``: lower is better, so a negative
    difference favours ``reference``) per fold, then a paired t-test of the per-fold values
    (:func:`scipy.stats.ttest_rel`; null with fewer than :data:`readgaze.metrics.T_TEST_MIN_FOLDS` folds or equal
    non-zero differences in every fold, 1 when no fold differs) and a paired permutation test: under the null the two
    predictions of a trial are exchangeable; each permutation swaps them for a random half of the trials (or, with
    ``group``, of the groups: e.g. ``"participant_id"`` for a reader-level target, whose trials are not independent),
    within each fold, and recomputes the mean over folds of the difference; p = (1 + #{|permuted| >= |observed|}) /
    (1 + n_permutations), two-sided.

    Returns
    -------
    polars.DataFrame
        One row per regime (three regimes, then ``all``): ``regime``, ``metric``, ``n_folds``, ``n_trials``,
        ``reference_mean``, ``other_mean``, ``difference_mean``, ``difference_sem`` (null with one fold),
        ``t_test_p``, ``permutation_p``.

    Raises
    ------
    ConfigError
        ``metric`` is not rmse or mae, or ``group`` is not a column of ``predictions``.
    SchemaError, DataError
        As :func:`check_regression_predictions`; DataError when the two models share no test trial.
    """
    from scipy.stats import ttest_rel

    from readgaze.errors import ConfigError

    if metric not in ("rmse", "mae"):
        raise ConfigError(f"paired regression comparison: metric {metric!r}; expected 'rmse' or 'mae'")
    frame = predictions.collect() if isinstance(predictions, pl.LazyFrame) else predictions
    check_group(frame, group, "paired regression comparison")
    checked = with_group(check_regression_predictions(frame, "test"), frame, group)
    keys = ["trial_id", "fold_index"]
    a = checked.filter(pl.col("model") == reference).select(
        *keys, "regime", "label", *([group] if group else []), pl.col(PREDICTION_VALUE).alias("a"))
    b = checked.filter(pl.col("model") == other).select(*keys, pl.col(PREDICTION_VALUE).alias("b"))
    both = a.join(b, on=keys, how="inner")
    if both.height == 0:
        raise DataError(f"paired regression comparison: models {reference!r} and {other!r} share no test trial")
    rng = np.random.default_rng(seed)
    rows = []
    for regime in REGIME_ORDER:
        cell = both if regime == ALL else both.filter(pl.col("regime") == regime)
        folds = cell.partition_by("fold_index", maintain_order=True)
        if not folds:
            continue
        observed = np.array([[_error(p["label"].to_numpy(), p[c].to_numpy()[None], metric)[0] for c in ("a", "b")]
                             for p in folds])
        difference = observed[:, 0] - observed[:, 1]
        permuted = np.zeros(n_permutations)
        for part in folds:
            y, pa, pb = part["label"].to_numpy(), part["a"].to_numpy(), part["b"].to_numpy()
            units = swap_units(part, group)
            swap = (rng.random((n_permutations, int(units.max()) + 1)) < 0.5)[:, units]
            permuted += (_error(y, np.where(swap, pb, pa), metric) - _error(y, np.where(swap, pa, pb), metric))
        permuted /= len(folds)
        statistic = difference.mean()
        p_t = None  # the rule of readgaze.metrics.paired_comparison
        spread = np.ptp(difference) > 1e-9 * np.abs(difference).max()
        if len(folds) >= T_TEST_MIN_FOLDS and spread:
            p_t = float(ttest_rel(observed[:, 0], observed[:, 1]).pvalue)
        elif len(folds) >= T_TEST_MIN_FOLDS and not np.any(difference):
            p_t = 1.0  # equal non-zero differences: an infinite t, no evidence, no p
        rows.append({"regime": regime, "metric": metric, "n_folds": len(folds), "n_trials": cell.height,
                     "reference_mean": float(observed[:, 0].mean()), "other_mean": float(observed[:, 1].mean()),
                     "difference_mean": float(statistic),
                     "difference_sem": float(difference.std(ddof=1) / np.sqrt(len(folds))) if len(folds) > 1
                     else None, "t_test_p": p_t,
                     "permutation_p": float((1 + np.sum(np.abs(permuted) >= abs(statistic) - 1e-12))
                                            / (1 + n_permutations))})
    schema = {"regime": pl.String, "metric": pl.String, "n_folds": pl.Int64, "n_trials": pl.Int64,
              "reference_mean": pl.Float64, "other_mean": pl.Float64, "difference_mean": pl.Float64,
              "difference_sem": pl.Float64, "t_test_p": pl.Float64, "permutation_p": pl.Float64}
    return pl.DataFrame(rows, schema=schema)


def _error(labels: np.ndarray, predicted: np.ndarray, metric: str) -> np.ndarray:
    """RMSE or MAE of each row of ``predicted`` ``(P, N)`` against ``labels`` ``(N,)``."""
    residual = predicted - labels[None, :]
    return np.sqrt(np.mean(residual ** 2, axis=1)) if metric == "rmse" else np.mean(np.abs(residual), axis=1)
