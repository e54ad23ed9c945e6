"""Per-regime scores of trial-level predictions, aggregated over cross-validation folds.

Over 400 lines: the protocol's one scorer, its input check, its validation thresholds and the two tables that print
its numbers (and goal selection's three accuracies, scored the same way) share the regime order and the mean ± SEM
rule below; each part is a function of its own.

Protocol (EyeBench (Shubi et al., 2025), its evaluation section): a metric is computed per (model, regime, fold) on
that fold's
test trials; the table reports its mean ± SEM (standard error, ``std(ddof=1) / sqrt(n_folds)``) over
folds. The "all" row pools a fold's test trials over the three regimes *before* computing the metric,
then averages over folds; it is not the mean of the regime rows. Balanced accuracy is reported twice:
``balanced_accuracy`` at the fixed threshold 0.5 (positive when ``prediction_prob > 0.5``; a tie counts as
negative, as ``argmax`` over two classes does; EyeBench's number), and ``balanced_accuracy_tuned`` at the
threshold chosen per (model, fold) on that fold's *validation* predictions (:func:`choose_thresholds`), which
an imbalanced task (comprehension, 81/19) needs: at 0.5 many folds predict one class (BA = 0.5). The test
labels never choose the threshold. AUROC is undefined on a fold whose regime holds one class only: that cell is
skipped, counted in ``auroc_folds_skipped`` and left out of the mean.

Goal selection (:func:`evaluate_goal_selection`, Shubi et al. 2025, arXiv:2505.02872): with classes 0 = the
lonely question, 1 and 2 = the coupled pair sharing a critical span, *All* is 3-way accuracy (chance 1/3),
*Different spans* the accuracy of "lonely or coupled" read off the 3-way prediction (chance 5/9 for a uniform
guess: 1/3 * 1/3 + 2/3 * 2/3), and *Same span* the accuracy of q2 vs q3 on the coupled trials, from the two
coupled probabilities (chance 1/2).

Multiclass (``goal_question``): ``prediction_prob`` is a ``List(Float64)`` of class probabilities and
``label`` the class index. Predictions are the argmax; balanced accuracy is the macro recall over the
classes present; AUROC is the macro one-vs-rest AUROC (sklearn ``multi_class="ovr"``), computed only
when every class occurs in the fold's trials.
"""

from __future__ import annotations

import math
import warnings
from pathlib import Path

import numpy as np
import polars as pl
from sklearn.metrics import balanced_accuracy_score, roc_auc_score

from readgaze.errors import ConfigError, DataError, SchemaError
from readgaze.predictions import is_multiclass, is_regression
from readgaze.schema import PREDICTION_COLUMNS
from readgaze.splits.regimes import ALL, REGIME_ORDER, REGIMES, TITLES

METRICS = ("accuracy", "balanced_accuracy", "balanced_accuracy_tuned", "auroc")
METRIC_NAMES = {"accuracy": "Accuracy", "balanced_accuracy": "BA @ 0.5",
                "balanced_accuracy_tuned": "BA @ val threshold", "auroc": "AUROC"}
GOAL_SELECTION = ("all_accuracy", "different_spans_accuracy", "same_span_accuracy")
GOAL_SELECTION_CHANCE = {"all_accuracy": 1 / 3, "different_spans_accuracy": 5 / 9, "same_span_accuracy": 1 / 2}
GOAL_SELECTION_NAMES = {"all_accuracy": "All (3-way)", "different_spans_accuracy": "Different spans",
                        "same_span_accuracy": "Same span"}
AGGREGATION = "per-fold metric, mean ± SEM over folds; 'all' pools each fold's test trials over regimes"
SMALL_SAMPLE_TRIALS = 30
"""A score from fewer trials than this (or from one class) is marked as a small sample in every readgaze table:
a balanced accuracy or AUROC from a handful of trials moves by many points with one trial."""
SMALL_MARK = "†"
"""The mark of a small-sample score in tables (explained in a note under each)."""
NEEDED = PREDICTION_COLUMNS
"""The columns a prediction table must have (:data:`readgaze.schema.PREDICTION_COLUMNS`)."""



def mean_sem(metrics) -> list[pl.Expr]:
    """Per metric column, ``<metric>_mean`` and ``<metric>_sem`` over the group's non-null values (one per fold).

    SEM = std(ddof=1) / sqrt(n), null when fewer than two values.
    """
    aggregates = []
    for metric in metrics:
        values = pl.col(metric).drop_nulls()
        sem = values.std(ddof=1) / values.count().cast(pl.Float64).sqrt()
        aggregates += [values.mean().alias(f"{metric}_mean"),
                       pl.when(values.count() > 1).then(sem).otherwise(None).alias(f"{metric}_sem")]
    return aggregates

def evaluate_folds(predictions: pl.DataFrame | pl.LazyFrame, *, split: str | None = "test",
                   thresholds: pl.DataFrame | None = None) -> pl.DataFrame:
    """Score every (model, regime, fold) cell, plus the pooled regime ``"all"`` per (model, fold).

    Parameters
    ----------
    predictions : polars.DataFrame or LazyFrame
        One row per (model, fold, trial): ``label`` (0/1 Int or Boolean; class index when multiclass),
        ``prediction_prob`` (Float64 P(positive), or List(Float64) class probabilities), ``regime``
        (one of ``new_item``, ``new_participant``, ``new_item_participant``), ``fold_index``, ``trial_id``,
        optional ``model`` (default ``"model"``) and ``split``.
    split : str or None, default "test"
        When a ``split`` column exists, only rows of this split are scored.
    thresholds : polars.DataFrame, optional
        ``model``, ``fold_index``, ``threshold`` (:func:`choose_thresholds` on the validation predictions):
        gives ``balanced_accuracy_tuned``; null where a (model, fold) has no threshold, and when multiclass.

    Returns
    -------
    polars.DataFrame
        ``model``, ``regime``, ``fold_index``, ``n_trials``, ``n_positive`` (binary; null when
        multiclass), ``accuracy``, ``balanced_accuracy``, ``balanced_accuracy_tuned``, ``auroc`` (Float64,
        fractions; ``auroc`` null when undefined), ``auroc_skipped`` (Boolean), ``threshold`` (Float64),
        ``small_sample`` (Boolean: fewer than :data:`SMALL_SAMPLE_TRIALS` trials, or one class).

    Raises
    ------
    SchemaError
        A needed column is missing or ``prediction_prob`` has another dtype.
    DataError
        Null or out-of-range labels or probabilities, an unknown regime, or a trial predicted twice by
        one model in one fold.
    """
    frame = check_predictions(predictions, split)
    multiclass = is_multiclass(frame)
    pooled = frame.with_columns(pl.lit(ALL).alias("regime"))
    chosen = {} if thresholds is None or multiclass else {
        (r["model"], int(r["fold_index"])): r["threshold"] for r in thresholds.iter_rows(named=True)}
    rows = []
    for part in pl.concat([frame, pooled]).partition_by("model", "regime", "fold_index", maintain_order=True):
        labels = part["label"].to_numpy()
        scores = np.stack(part["prediction_prob"].to_list()) if multiclass else part["prediction_prob"].to_numpy()
        threshold = chosen.get((part["model"][0], int(part["fold_index"][0])))
        tuned = None if threshold is None else _balanced_accuracy(labels, (scores > threshold).astype(np.int64))
        rows.append({"model": part["model"][0], "regime": part["regime"][0], "fold_index": part["fold_index"][0],
                     "n_trials": part.height, **_scores(labels, scores, multiclass),
                     "balanced_accuracy_tuned": tuned, "threshold": threshold})
    schema = {"model": pl.String, "regime": pl.String, "fold_index": pl.Int32, "n_trials": pl.Int64,
              "n_positive": pl.Int64, "accuracy": pl.Float64, "balanced_accuracy": pl.Float64,
              "auroc": pl.Float64, "auroc_skipped": pl.Boolean, "balanced_accuracy_tuned": pl.Float64,
              "threshold": pl.Float64}
    order = pl.col("regime").replace_strict({r: i for i, r in enumerate(REGIME_ORDER)}, return_dtype=pl.Int32)
    small = (pl.col("n_trials") < SMALL_SAMPLE_TRIALS) | pl.col("auroc_skipped")
    return pl.DataFrame(rows, schema=schema).with_columns(small.alias("small_sample")).sort("model", order,
                                                                                           "fold_index")


def evaluate(predictions: pl.DataFrame | pl.LazyFrame, *, split: str | None = "test",
             thresholds: pl.DataFrame | None = None) -> pl.DataFrame:
    """Balanced accuracy (at 0.5 and at the validation threshold), accuracy and AUROC per model and regime.

    Mean ± SEM over folds. See the module docstring for the protocol and :func:`evaluate_folds` for the input.
    When ``split="test"``, ``thresholds`` is not given and the predictions also hold ``split == "val"`` rows,
    the thresholds are chosen on those rows (:func:`choose_thresholds`); the test rows never choose them.

    Returns
    -------
    polars.DataFrame
        One row per (``model``, ``regime``) with ``regime`` in ``new_item``, ``new_participant``,
        ``new_item_participant``, ``all``: ``n_folds``, ``n_trials`` (summed over folds), then for each
        metric ``<metric>_mean`` and ``<metric>_sem`` (Float64 fractions; SEM null with one fold),
        ``auroc_n_folds`` (folds with an AUROC), ``auroc_folds_skipped`` (folds with one class),
        ``aggregation`` (the sentence above, for the record) and ``small_sample`` (Boolean: the per-fold scores
        come from fewer than :data:`SMALL_SAMPLE_TRIALS` trials on average, or a fold held one class).

    Raises
    ------
    SchemaError, DataError
        As :func:`evaluate_folds`.

    Examples
    --------
    >>> import polars as pl
    >>> predictions = pl.DataFrame({"label": [1, 0, 1, 0], "prediction_prob": [0.9, 0.2, 0.4, 0.3],
    ...                             "regime": ["new_item"] * 2 + ["new_participant"] * 2,
    ...                             "fold_index": [0] * 4, "trial_id": ["a", "b", "c", "d"]})
    >>> evaluate(predictions).select("regime", "balanced_accuracy_mean", "auroc_mean").rows()
    [('new_item', 1.0, 1.0), ('new_participant', 0.5, 1.0), ('all', 0.75, 1.0)]
    """
    frame = predictions.collect() if isinstance(predictions, pl.LazyFrame) else predictions
    if thresholds is None and split == "test" and "split" in frame.columns and (frame["split"] == "val").any():
        val = frame.filter(pl.col("split") == "val")
        if not is_multiclass(val):
            thresholds = choose_thresholds(val)
    per_fold = evaluate_folds(frame, split=split, thresholds=thresholds)
    aggregates = mean_sem(METRICS)
    order = pl.col("regime").replace_strict({r: i for i, r in enumerate(REGIME_ORDER)}, return_dtype=pl.Int32)
    return (per_fold.group_by("model", "regime", maintain_order=True)
            .agg(pl.len().cast(pl.Int64).alias("n_folds"), pl.col("n_trials").sum().alias("n_trials"), *aggregates,
                 pl.col("auroc").is_not_null().sum().cast(pl.Int64).alias("auroc_n_folds"),
                 pl.col("auroc_skipped").sum().cast(pl.Int64).alias("auroc_folds_skipped"))
            .with_columns(pl.lit(AGGREGATION).alias("aggregation"),
                          ((pl.col("n_trials") / pl.col("n_folds") < SMALL_SAMPLE_TRIALS)
                           | (pl.col("auroc_folds_skipped") > 0)).alias("small_sample"))
            .sort("model", order))


def choose_thresholds(validation: pl.DataFrame | pl.LazyFrame) -> pl.DataFrame:
    """Per (model, fold): the threshold on P(class 1) with the highest balanced accuracy on validation.

    The candidates are the midpoints between consecutive distinct validation probabilities, plus 0.5; the
    validation trials of a fold are pooled over regimes. Ties go to the candidate closest to 0.5. A fold whose
    validation trials hold one class keeps 0.5.

    Parameters
    ----------
    validation : polars.DataFrame or LazyFrame
        Binary validation predictions (``split`` column ignored): ``model`` (optional), ``fold_index``,
        ``label``, ``prediction_prob`` (Float64), ``regime``, ``trial_id``.

    Returns
    -------
    polars.DataFrame
        ``model`` (String), ``fold_index`` (Int32), ``threshold`` (Float64), ``val_balanced_accuracy``
        (Float64, at that threshold), ``n_val_trials`` (Int64).

    Raises
    ------
    SchemaError, DataError
        As :func:`check_predictions`; SchemaError also for multiclass probabilities.
    """
    frame = check_predictions(validation, split=None)
    if is_multiclass(frame):
        raise SchemaError("choose_thresholds needs binary predictions (Float64 prediction_prob)",
                          column="prediction_prob")
    rows = []
    for part in frame.partition_by("model", "fold_index", maintain_order=True):
        labels, scores = part["label"].to_numpy(), part["prediction_prob"].to_numpy()
        threshold, best = best_threshold(labels, scores)
        rows.append({"model": part["model"][0], "fold_index": part["fold_index"][0], "threshold": threshold,
                     "val_balanced_accuracy": best, "n_val_trials": part.height})
    schema = {"model": pl.String, "fold_index": pl.Int32, "threshold": pl.Float64,
              "val_balanced_accuracy": pl.Float64, "n_val_trials": pl.Int64}
    return pl.DataFrame(rows, schema=schema)


def best_threshold(labels: np.ndarray, scores: np.ndarray) -> tuple[float, float]:
    """Threshold (prediction = score > t) maximising balanced accuracy, and that balanced accuracy."""
    if np.unique(labels).size < 2:
        return 0.5, _balanced_accuracy(labels, (scores > 0.5).astype(np.int64))
    values = np.unique(scores)
    candidates = np.unique(np.r_[(values[1:] + values[:-1]) / 2, values[0] - 1e-9, 0.5])
    positive = labels == 1
    predicted = scores[None, :] > candidates[:, None]  # (C, N)
    tpr = (predicted & positive).sum(axis=1) / positive.sum()
    tnr = (~predicted & ~positive).sum(axis=1) / (~positive).sum()
    balanced = (tpr + tnr) / 2
    best = np.flatnonzero(np.isclose(balanced, balanced.max()))
    pick = best[np.argmin(np.abs(candidates[best] - 0.5))]
    return float(candidates[pick]), float(balanced[pick])


def _balanced_accuracy(labels: np.ndarray, predicted: np.ndarray) -> float:
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="y_pred contains classes not in y_true")
        return float(balanced_accuracy_score(labels, predicted))


def goal_selection_folds(predictions: pl.DataFrame | pl.LazyFrame, *, split: str | None = "test") -> pl.DataFrame:
    """The three goal-selection accuracies per (model, regime, fold), plus the pooled regime ``"all"``.

    Parameters
    ----------
    predictions : polars.DataFrame or LazyFrame
        As :func:`evaluate_folds`, with 3-class ``prediction_prob`` (List(Float64)) and ``label`` the question's
        role: 0 lonely, 1 and 2 the coupled pair (see the module docstring).

    Returns
    -------
    polars.DataFrame
        ``model``, ``regime``, ``fold_index``, ``n_trials``, ``n_same_span`` (coupled trials), then
        ``all_accuracy``, ``different_spans_accuracy``, ``same_span_accuracy`` (Float64 fractions;
        ``same_span_accuracy`` null without coupled trials).

    Raises
    ------
    SchemaError
        ``prediction_prob`` is not three class probabilities.
    """
    frame = check_predictions(predictions, split)
    if not is_multiclass(frame) or int(
            frame["prediction_prob"].list.len().max() or 0) != 3:
        raise SchemaError("goal selection needs 3 class probabilities (lonely, coupled 1, coupled 2)",
                          column="prediction_prob")
    rows = []
    pooled = frame.with_columns(pl.lit(ALL).alias("regime"))
    for part in pl.concat([frame, pooled]).partition_by("model", "regime", "fold_index", maintain_order=True):
        labels, probs = part["label"].to_numpy(), np.stack(part["prediction_prob"].to_list())
        predicted = probs.argmax(axis=1)
        coupled = labels > 0
        same = (1 + probs[coupled, 1:].argmax(axis=1)) == labels[coupled]
        rows.append({"model": part["model"][0], "regime": part["regime"][0], "fold_index": part["fold_index"][0],
                     "n_trials": part.height, "n_same_span": int(coupled.sum()),
                     "all_accuracy": float((predicted == labels).mean()),
                     "different_spans_accuracy": float(((predicted > 0) == coupled).mean()),
                     "same_span_accuracy": float(same.mean()) if coupled.any() else None})
    schema = {"model": pl.String, "regime": pl.String, "fold_index": pl.Int32, "n_trials": pl.Int64,
              "n_same_span": pl.Int64, **{m: pl.Float64 for m in GOAL_SELECTION}}
    order = pl.col("regime").replace_strict({r: i for i, r in enumerate(REGIME_ORDER)}, return_dtype=pl.Int32)
    return pl.DataFrame(rows, schema=schema).sort("model", order, "fold_index")


def evaluate_goal_selection(predictions: pl.DataFrame | pl.LazyFrame, *, split: str | None = "test") -> pl.DataFrame:
    """All / Different spans / Same span accuracy per model and regime: mean ± SEM over folds.

    Returns one row per (``model``, ``regime``): ``n_folds``, ``n_trials``, and ``<metric>_mean``,
    ``<metric>_sem`` for each of :data:`GOAL_SELECTION`. Raises as :func:`goal_selection_folds`.
    """
    per_fold = goal_selection_folds(predictions, split=split)
    aggregates = mean_sem(GOAL_SELECTION)
    order = pl.col("regime").replace_strict({r: i for i, r in enumerate(REGIME_ORDER)}, return_dtype=pl.Int32)
    return (per_fold.group_by("model", "regime", maintain_order=True)
            .agg(pl.len().cast(pl.Int64).alias("n_folds"), pl.col("n_trials").sum(), *aggregates)
            .sort("model", order))


def goal_selection_table(evaluation: pl.DataFrame) -> str:
    """Markdown: a chance row, then per (model, regime) All (3-way) | Different spans | Same span, in %."""
    header = " | ".join(GOAL_SELECTION_NAMES[m] for m in GOAL_SELECTION)
    lines = [f"| Model | Regime | {header} | trials (folds) |", "|---|---|" + "---|" * (len(GOAL_SELECTION) + 1),
             "| chance | any | " + " | ".join(f"{100 * GOAL_SELECTION_CHANCE[m]:.1f}" for m in GOAL_SELECTION)
             + " | – |"]
    for row in evaluation.iter_rows(named=True):
        cells = [_cell(row, m) for m in GOAL_SELECTION]
        lines.append(f"| {row['model']} | {TITLES[row['regime']]} | " + " | ".join(cells)
                     + f" | {row['n_trials']:,} ({row['n_folds']}) |")
    notes = ["Values are % (mean ± SEM over folds). Classes are the question's role: the lonely question (its own "
             "critical span) and the coupled pair (one shared span). All: 3-way accuracy. Different spans: lonely "
             "vs coupled, read off the 3-way prediction (chance 5/9 = 55.6 % for a uniform guess). Same span: "
             "which of the coupled pair, on the coupled trials (chance 50 %)."]
    return "\n".join(lines) + "\n\n" + "\n".join(f"- {note}" for note in notes) + "\n"


def check_predictions(predictions: pl.DataFrame | pl.LazyFrame, split: str | None = "test") -> pl.DataFrame:
    """Validate a predictions frame and return ``model, regime, fold_index, trial_id, label, prediction_prob``.

    Rows of other splits are dropped when a ``split`` column exists; ``model`` defaults to ``"model"``;
    ``label`` becomes Int64. Raises :class:`SchemaError` / :class:`DataError` as :func:`evaluate_folds`,
    listing every problem at once (rows are 0-based rows of the frame as given).
    """
    frame = predictions.collect() if isinstance(predictions, pl.LazyFrame) else predictions
    frame = frame.with_row_index("row")  # 0-based row of the frame as given, for messages
    missing = [c for c in NEEDED if c not in frame.columns]
    if missing and is_regression(frame):
        raise SchemaError("a regression prediction table (prediction_value): score it with "
                          "readgaze.metrics_regression.evaluate_regression", column="prediction_prob")
    if missing:
        raise SchemaError(f"predictions lack column(s) {missing}; evaluate needs {list(NEEDED)}")
    if split is not None and "split" in frame.columns:
        frame = frame.filter(pl.col("split") == split)
    if "model" not in frame.columns:
        frame = frame.with_columns(pl.lit("model").alias("model"))
    frame = frame.select("model", "regime", pl.col("fold_index").cast(pl.Int32), "trial_id",
                         pl.col("label").cast(pl.Int64), "prediction_prob", "row")
    dtype = frame.schema["prediction_prob"]
    multiclass = isinstance(dtype, pl.List)
    if not (dtype.is_float() or multiclass and dtype.inner.is_numeric()):
        raise SchemaError(f"got dtype {dtype}, expected Float64 or List(Float64)", column="prediction_prob")
    problems = []
    if frame.height == 0:
        problems.append("no rows to score" + (f" (split == {split!r})" if "split" in frame.columns else ""))
    bad = frame.filter(~pl.col("regime").is_in(list(REGIMES)) | pl.col("regime").is_null())
    if bad.height:
        problems.append(f"row {bad['row'][0]}: regime {bad['regime'][0]!r}, expected one of {list(REGIMES)}"
                        f" ({bad.height} rows)")
    problems += _probability_problems(frame, multiclass)
    twice = frame.filter(pl.struct("model", "fold_index", "trial_id").is_duplicated())
    if twice.height:
        problems.append(f"trial {twice['trial_id'][0]!r} is predicted more than once by model "
                        f"{twice['model'][0]!r} in fold {twice['fold_index'][0]} ({twice.height} rows)")
    if problems:
        raise DataError("predictions: " + "; ".join(problems))
    return frame.drop("row")


def _probability_problems(frame: pl.DataFrame, multiclass: bool) -> list[str]:
    """Label and probability checks; rows are 0-based frame rows."""
    problems = []
    if multiclass:
        width = frame["prediction_prob"].list.len()
        n_classes = int(width.max() or 0)
        total = frame["prediction_prob"].list.sum()
        bad_label = frame.filter(pl.col("label").is_null() | ~pl.col("label").is_between(0, n_classes - 1))
        negative_or_nan = pl.col("prediction_prob").list.eval(pl.element().is_nan() | (pl.element() < 0)).list.any()
        bad_prob = frame.filter((width != n_classes) | ((total - 1.0).abs() > 1e-3) | total.is_null() | negative_or_nan)
        expected = f"{n_classes} probabilities summing to 1"
    else:
        bad_label = frame.filter(pl.col("label").is_null() | ~pl.col("label").is_in([0, 1]))
        bad_prob = frame.filter(pl.col("prediction_prob").is_null() | pl.col("prediction_prob").is_nan()
                                | ~pl.col("prediction_prob").is_between(0.0, 1.0))
        expected = "a probability in [0, 1]"
    if bad_label.height:
        problems.append(f"row {bad_label['row'][0]}: label {bad_label['label'][0]!r}, expected a class index "
                        f"({bad_label.height} rows)")
    if bad_prob.height:
        problems.append(f"row {bad_prob['row'][0]}: prediction_prob {bad_prob['prediction_prob'][0]!r}, "
                        f"expected {expected} ({bad_prob.height} rows)")
    return problems


def _scores(labels: np.ndarray, scores: np.ndarray, multiclass: bool) -> dict:
    """Accuracy, balanced accuracy and AUROC of one cell (see the module docstring)."""
    if multiclass:
        n_classes = scores.shape[1]
        predicted = scores.argmax(axis=1)
        defined = np.unique(labels).size == n_classes
        auroc = (roc_auc_score(labels, scores / scores.sum(axis=1, keepdims=True), multi_class="ovr",
                               average="macro", labels=np.arange(n_classes)) if defined else None)
        n_positive = None
    else:
        predicted = (scores > 0.5).astype(np.int64)
        defined = np.unique(labels).size == 2
        auroc = roc_auc_score(labels, scores) if defined else None
        n_positive = int(labels.sum())
    with warnings.catch_warnings():
        # one class in a cell: sklearn warns "y_pred contains classes not in y_true" and averages the recall
        # of the classes present, which is what we report
        warnings.filterwarnings("ignore", message="y_pred contains classes not in y_true")
        balanced = balanced_accuracy_score(labels, predicted)
    return {"n_positive": n_positive, "accuracy": float((predicted == labels).mean()),
            "balanced_accuracy": float(balanced), "auroc": None if auroc is None else float(auroc),
            "auroc_skipped": not defined}


def results_table(evaluation: pl.DataFrame, *, description=None,
                  metrics: tuple[str, ...] = ("balanced_accuracy", "balanced_accuracy_tuned", "auroc"),
                  notes: tuple[str, ...] = ()) -> str:
    """Markdown table: one row per (model, metric), one column per regime, cells ``mean ± SEM`` in %.

    Parameters
    ----------
    evaluation : polars.DataFrame
        Output of :func:`evaluate`.
    description : readgaze.splits.SplitDescription, optional
        Its ``headline_regimes`` come first (marked "headline") and its notes follow the table.
    metrics : tuple of str, default ("balanced_accuracy", "balanced_accuracy_tuned", "auroc")
        Any of :data:`METRICS`; a metric with no value in ``evaluation`` (e.g. no validation thresholds) is left out.
    notes : tuple of str
        Extra notes printed under the table (e.g. the task's trials and reading regime).

    Returns
    -------
    str
        The table, a ``trials (folds)`` row per model, and notes on aggregation and skipped AUROC cells.
    """
    headline = tuple(description.headline_regimes) if description is not None else ()
    regimes = [*headline, *[r for r in REGIME_ORDER if r not in headline]]
    metrics = tuple(m for m in metrics if f"{m}_mean" in evaluation.columns
                    and evaluation[f"{m}_mean"].drop_nulls().drop_nans().len() > 0)
    names = METRIC_NAMES
    header = [TITLES[r] + (" (headline)" if r in headline and len(headline) < len(REGIMES) else "") for r in regimes]
    lines = ["| Model | Metric | " + " | ".join(header) + " |", "|---|---|" + "---|" * len(regimes)]
    cells = {(r["model"], r["regime"]): r for r in evaluation.iter_rows(named=True)}
    for model in evaluation["model"].unique(maintain_order=True):
        for metric in metrics:
            values = [_cell(row, metric) + ("" if _cell(row, metric) == "–" else _small_mark(row))
                      for row in (cells.get((model, r)) for r in regimes)]
            lines.append(f"| {model} | {names[metric]} | " + " | ".join(values) + " |")
        counts = [_count(cells.get((model, r))) for r in regimes]
        lines.append(f"| {model} | trials (folds) | " + " | ".join(counts) + " |")
    ba = ("BA @ 0.5 is balanced accuracy at the fixed threshold 0.5 (EyeBench's number)"
          + ("; BA @ val threshold uses the threshold that maximised each fold's validation balanced accuracy, "
             "chosen per model and fold on validation predictions only" if "balanced_accuracy_tuned" in metrics
             else "") + ".")
    notes = ["Values are % (mean ± SEM over folds). Each metric is computed per fold and regime; the "
             "'All' column pools a fold's test trials over the three regimes, then averages over folds "
             "(it is not the mean of the regime columns). " + ba, *notes]
    if any(_small_mark(row) for row in cells.values()):
        notes.append(f"{SMALL_MARK} marks a cell whose per-fold scores come from fewer than {SMALL_SAMPLE_TRIALS} "
                     "trials on average (or where a fold held one class): too few for the number to mean much.")
    skipped = int(evaluation["auroc_folds_skipped"].sum()) if "auroc" in metrics else 0
    if skipped:
        notes.append(f"AUROC was undefined (one class) and skipped in {skipped} fold cells; those cells "
                     f"average fewer folds.")
    if description is not None:
        notes += list(description.notes)
    return "\n".join(lines) + "\n\n" + "\n".join(f"- {note}" for note in notes) + "\n"


def _cell(row: dict | None, metric: str) -> str:
    if row is None or row[f"{metric}_mean"] is None or math.isnan(row[f"{metric}_mean"]):
        return "–"
    sem = row[f"{metric}_sem"]
    return f"{100 * row[f'{metric}_mean']:.1f}" + ("" if sem is None else f" ± {100 * sem:.1f}")


def _small_mark(row: dict | None) -> str:
    """:data:`SMALL_MARK` for a cell of :func:`evaluate` flagged ``small_sample`` (else ``""``)."""
    if row is None or row.get("small_sample") is None:
        return ""
    return f" {SMALL_MARK}" if row["small_sample"] else ""


def _count(row: dict | None) -> str:
    return "–" if row is None else f"{row['n_trials']:,} ({row['n_folds']})"


def write_results(evaluation: pl.DataFrame, directory: str | Path, *, description=None,
                  metrics: tuple[str, ...] = ("balanced_accuracy", "balanced_accuracy_tuned", "auroc"),
                  stem: str = "results", notes: tuple[str, ...] = ()) -> dict[str, Path]:
    """Write ``<stem>.csv`` (the evaluation frame, fractions) and ``<stem>.md`` (:func:`results_table`).

    Returns ``{"csv": path, "markdown": path}``. The directory is created if needed.
    """
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    paths = {"csv": directory / f"{stem}.csv", "markdown": directory / f"{stem}.md"}
    evaluation.write_csv(paths["csv"])
    paths["markdown"].write_text(results_table(evaluation, description=description, metrics=metrics, notes=notes),
                                 encoding="utf-8")
    return paths


# ---- paired comparison of two models on the same test trials (modality ablations) ----

T_TEST_MIN_FOLDS = 3
"""The fewest folds a paired t-test over folds is made with (2 folds: one degree of freedom, no evidence)."""
PAIRED_TESTS = ("paired t-test over folds (scipy.stats.ttest_rel, two-sided, df = folds - 1)",
                "paired permutation test over trials (each trial's two predictions swapped at random, as within-fold "
                "percentile ranks; statistic: the mean over folds of the metric difference; two-sided)")
"""The two tests :func:`paired_comparison` reports, as written under the ablation table."""


def check_group(raw: pl.DataFrame, group: str | None, what: str) -> None:
    """A paired test's ``group`` must be a column of its predictions (:class:`ConfigError` naming it)."""
    if group is not None and group not in raw.columns:
        raise ConfigError(f"{what}: group column {group!r} is not in the predictions")


def with_group(checked: pl.DataFrame, raw: pl.DataFrame, group: str | None) -> pl.DataFrame:
    """``checked`` (the checked test predictions) with each (trial, fold)'s ``group`` value from ``raw``'s test rows
    (the column a check may have dropped); ``checked`` itself without a group."""
    if group is None:
        return checked
    groups = raw.filter(pl.col("split") == "test") if "split" in raw.columns else raw
    return checked.join(groups.select("trial_id", pl.col("fold_index").cast(pl.Int32), group)
                        .unique(["trial_id", "fold_index"]), on=["trial_id", "fold_index"], how="left")


def swap_units(part: pl.DataFrame, group: str | None) -> np.ndarray:
    """The unit a permutation swaps for each row of one fold: its group's index (0, 1, ...; a null group is one
    group), or the row itself without a group. Int64, shape (rows,)."""
    if group is None:
        return np.arange(part.height)
    return part[group].cast(pl.String).fill_null("").rank("dense").to_numpy().astype(np.int64) - 1


def paired_comparison(predictions: pl.DataFrame | pl.LazyFrame, reference: str, other: str, *,
                      metric: str = "auroc", group: str | None = None, n_permutations: int = 1000,
                      seed: int = 0) -> pl.DataFrame:
    """Is ``reference`` better than ``other`` on the same test trials? Per regime, the paired difference and tests.

    Both models must predict the same trials in each (regime, fold) cell (trials one of them lacks are left out).
    The difference is ``reference - other`` per fold (the metric of :func:`evaluate_folds`: ``"auroc"``, or
    ``"accuracy"``, which multiclass tasks use: AUROC swaps are for two classes only), then:

    * ``t_test_p``: paired t-test of the per-fold values (:func:`scipy.stats.ttest_rel`), null with fewer than
      :data:`T_TEST_MIN_FOLDS` folds or when every fold's difference is the same non-zero number (an infinite t is
      no evidence); 1 when no fold differs. Few folds give it little power (3 folds: df 2).
    * ``permutation_p``: a paired permutation test over trials (approximate randomisation). Under the null the two
      models' predictions of a trial are exchangeable: each permutation swaps them for a random half of the trials,
      within each fold, and recomputes the statistic, the mean over folds of the metric difference. Scores are
      first turned into within-fold percentile ranks per model (AUROC is unchanged; mixed scores stay
      comparable). p = (1 + #{|permuted| >= |observed|}) / (1 + n_permutations), two-sided. Valid with one fold.
      With ``group`` (a column, e.g. ``"participant_id"``), whole groups are swapped: a reader's trials are not
      independent when a row averages them per reader (:mod:`readgaze.reader_aggregation`) or the label is the
      reader's (as :func:`readgaze.metrics_regression.paired_regression_comparison` ``group``).

    Returns
    -------
    polars.DataFrame
        One row per regime (:data:`REGIME_ORDER` order, ``all`` pooled per fold): ``regime``, ``metric``,
        ``n_folds``, ``n_trials``, ``reference_mean``, ``other_mean``, ``difference_mean``, ``difference_sem``
        (null with one fold), ``t_test_p``, ``permutation_p`` (Float64; fractions for the metric).

    Raises
    ------
    SchemaError, DataError
        As :func:`check_predictions`; DataError when the two models share no test trial. ConfigError: ``group``
        is not a column of ``predictions``.
    """
    from scipy.stats import rankdata, ttest_rel

    raw = predictions.collect() if isinstance(predictions, pl.LazyFrame) else predictions
    check_group(raw, group, "paired comparison")
    frame = with_group(check_predictions(raw, "test"), raw, group)
    multiclass = is_multiclass(frame)
    if multiclass and metric != "accuracy":
        metric = "accuracy"
    keys = ["trial_id", "fold_index"]
    a = frame.filter(pl.col("model") == reference).select(*keys, "regime", "label", *([group] if group else []),
                                                          pl.col("prediction_prob").alias("a"))
    b = frame.filter(pl.col("model") == other).select(*keys, pl.col("prediction_prob").alias("b"))
    both = a.join(b, on=keys, how="inner")
    if both.height == 0:
        raise DataError(f"paired comparison: models {reference!r} and {other!r} share no test trial")
    rng = np.random.default_rng(seed)
    rows = []
    for regime in REGIME_ORDER:
        cell = both if regime == ALL else both.filter(pl.col("regime") == regime)
        folds = []
        for part in cell.partition_by("fold_index", maintain_order=True):
            labels = part["label"].cast(pl.Int64).to_numpy()
            if multiclass:
                sa = (np.stack(part["a"].to_list()).argmax(1) == labels).astype(float)
                sb = (np.stack(part["b"].to_list()).argmax(1) == labels).astype(float)
            else:
                if np.unique(labels).size < 2 and metric == "auroc":
                    continue
                sa, sb = rankdata(part["a"].to_numpy()) / part.height, rankdata(part["b"].to_numpy()) / part.height
            folds.append((labels, sa, sb, swap_units(part, group)))
        if not folds:
            continue
        observed = np.array([[_paired_metric(y, s[None], metric, multiclass)[0] for s in (sa, sb)]
                             for y, sa, sb, _ in folds])  # (folds, 2)
        difference = observed[:, 0] - observed[:, 1]
        statistic = difference.mean()
        permuted = np.zeros(n_permutations)
        for y, sa, sb, units in folds:
            swap = (rng.random((n_permutations, int(units.max()) + 1)) < 0.5)[:, units]
            pa, pb = np.where(swap, sb, sa), np.where(swap, sa, sb)
            permuted += _paired_metric(y, pa, metric, multiclass) - _paired_metric(y, pb, metric, multiclass)
        permuted /= len(folds)
        p_perm = (1 + np.sum(np.abs(permuted) >= abs(statistic) - 1e-12)) / (1 + n_permutations)
        p_t = None
        spread = np.ptp(difference) > 1e-9 * np.abs(difference).max()  # equal up to rounding: no spread
        if len(folds) >= T_TEST_MIN_FOLDS and spread:
            p_t = float(ttest_rel(observed[:, 0], observed[:, 1]).pvalue)
        elif len(folds) >= T_TEST_MIN_FOLDS and not np.any(difference):  # no difference in any fold
            p_t = 1.0  # (equal non-zero differences: the t statistic is infinite, which is no evidence: no p)
        rows.append({"regime": regime, "metric": metric, "n_folds": len(folds),
                     "n_trials": int(sum(len(y) for y, *_ in folds)),
                     "reference_mean": float(observed[:, 0].mean()), "other_mean": float(observed[:, 1].mean()),
                     "difference_mean": float(statistic),
                     "difference_sem": float(difference.std(ddof=1) / np.sqrt(len(folds))) if len(folds) > 1
                     else None, "t_test_p": p_t, "permutation_p": float(p_perm)})
    schema = {"regime": pl.String, "metric": pl.String, "n_folds": pl.Int64, "n_trials": pl.Int64,
              "reference_mean": pl.Float64, "other_mean": pl.Float64, "difference_mean": pl.Float64,
              "difference_sem": pl.Float64, "t_test_p": pl.Float64, "permutation_p": pl.Float64}
    return pl.DataFrame(rows, schema=schema)


def _paired_metric(labels: np.ndarray, scores: np.ndarray, metric: str, multiclass: bool) -> np.ndarray:
    """The metric of each row of ``scores`` ``(P, N)``: AUROC from ranks (ties averaged), or accuracy.

    Binary accuracy predicts class 1 above the within-fold median rank (scores are ranks here); multiclass
    ``scores`` are already per-trial correctness (0/1).
    """
    from scipy.stats import rankdata

    if multiclass:
        return scores.mean(axis=1)
    positive = labels == 1
    if metric == "auroc":
        ranks = rankdata(scores, axis=1)
        n1, n0 = positive.sum(), (~positive).sum()
        return (ranks[:, positive].sum(axis=1) - n1 * (n1 + 1) / 2) / (n1 * n0)
    if metric == "accuracy":
        return ((scores > 0.5) == positive).mean(axis=1)
    raise ValueError(f"paired comparison: metric {metric!r}; expected auroc or accuracy")
