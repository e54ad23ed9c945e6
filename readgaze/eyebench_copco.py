"""EyeBench's CopCo tasks with readgaze's classical baselines, on EyeBench's own folds, beside the published table.

Two tasks (EyeBench, Shubi et al., 2025): ``TYP``, dyslexia detection (the reader-level ``dyslexia`` label, two
classes; balanced accuracy at 0.5 and AUROC), and ``RCS``, reading-comprehension skill (the reader-level
``reading_comprehension_skill`` score, a regression; RMSE, MAE, R²; readers without a score are dropped by default,
as EyeBench's notes say). :func:`eyebench_assignment` gives every trial of a readgaze dataset its published role in
each of the 4 folds (checked against the fold lists: :func:`readgaze.splits.compare_with_published`; a reader
never in both training and an unseen-reader regime: :func:`readgaze.splits.check_reader_label`);
:func:`run_copco_classical` fits the baselines per fold (chosen on validation), scores the test folds and sets
the result beside EyeBench's published rows (:mod:`readgaze.eyebench_tables`).

The neural models are not run here (``readgaze bench``, ``experiments/eyebench_copco_bench.py``): a table made
here alone reads "not run" in their rows.

EyeBench's published RCS table is not the task as its notes define it: its chance row (average RMSE 2.66 ± 0.1) is
reproduced only when the 12 readers without a comprehension score keep the fold files' placeholder ``-1.0`` as their
score (the training mean then gives 2.67 ± 0.06; dropping them, as readgaze does by default, gives 1.75 ± 0.07).
``rcs_missing=-1.0`` reproduces the published setting (the models: ``ReadingDataModule(missing_label=-1.0)``,
``--data.missing_label -1.0``); its numbers measure, in part, how well a model recognises those 12 readers.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import polars as pl

from readgaze.baselines import run_baselines
from readgaze.baselines_regression import REGRESSOR_KINDS, run_regressors
from readgaze.errors import ConfigError, DataError, SchemaError
from readgaze.eyebench_tables import compare_with_eyebench, eyebench_table, read_eyebench_table
from readgaze.metrics import evaluate
from readgaze.metrics_regression import evaluate_regression
from readgaze.qc import QCLog
from readgaze.splits import assign_fold, check_reader_label, compare_with_published, read_fold_files
from readgaze.splits.published import read_fold_trial_ids
from readgaze.tasks import fill_missing_label

COPCO_TASKS = {"TYP": "dyslexia", "RCS": "reading_comprehension_skill"}
"""EyeBench's CopCo task names and the trials-table column each predicts."""
TYP_BASELINES = ("majority", "words_per_paragraph_time", "reading_speed", "meziere_logistic_regression", "svm",
                 "random_forest", "knn", "gradient_boosting")
"""The classification baselines run for ``TYP`` (EyeBench's four, plus readgaze's reading speed, kNN and boosting)."""
RCS_BASELINES = REGRESSOR_KINDS
"""The regression baselines run for ``RCS``."""


@dataclass(frozen=True)
class CopcoResult:
    """What :func:`run_copco_classical` returns: predictions (val and test), the evaluation, the comparison with
    EyeBench's published rows, the Markdown table and the QC counts."""

    task: str
    predictions: pl.DataFrame
    evaluation: pl.DataFrame
    comparison: pl.DataFrame | None
    table: str
    qc: QCLog


def eyebench_assignment(trials: pl.DataFrame, folds: str | Path, *, qc: QCLog | None = None) -> pl.DataFrame:
    """Every trial's published split and regime in every fold of an EyeBench fold folder.

    Parameters
    ----------
    trials : polars.DataFrame
        ``trial_id`` (EyeBench's ``unique_trial_id``), ``participant_id``, ``item_id`` (the speech).
    folds : str or Path
        EyeBench's fold folder (``items/``, ``subjects/``, ``trial_ids/``).
    qc : QCLog, optional
        Counts the published trials the dataset lacks, and the dataset trials no published table lists (both left
        out of every fold).

    Returns
    -------
    polars.DataFrame
        ``trial_id``, ``fold_index``, ``split``, ``regime``: one row per (trial of both, fold).

    Raises
    ------
    DataError
        The roles from the fold lists (:func:`readgaze.splits.assign_fold`) differ from the published tables, or a
        dataset trial has another participant or speech than its published row.
    """
    qc = qc if qc is not None else QCLog()
    splits = read_fold_files(folds)
    published = pl.concat([read_fold_trial_ids(folds, k) for k in range(splits.n_folds)])
    ours = pl.concat([assign_fold(published.filter(pl.col("fold_index") == k), splits, k)
                      for k in range(splits.n_folds)])
    compare_with_published(ours, published, file=Path(folds) / "trial_ids")
    keys = published.unique("trial_id").select("trial_id", "participant_id", "item_id")
    mismatched = trials.select("trial_id", "participant_id", "item_id").join(keys, on="trial_id", suffix="_published")
    mismatched = mismatched.filter((pl.col("participant_id") != pl.col("participant_id_published"))
                                   | (pl.col("item_id") != pl.col("item_id_published")))
    if mismatched.height:
        raise DataError(f"{mismatched.height} trials have another participant or item than EyeBench's table, e.g. "
                        f"{mismatched.row(0, named=True)} (item_id must be the speech id)")
    present = trials["trial_id"].implode()
    missing = keys.filter(~pl.col("trial_id").is_in(present))
    unlisted = trials.filter(~pl.col("trial_id").is_in(keys["trial_id"].implode()))
    qc.add("eyebench_folds", "trials", "in EyeBench's fold tables, not in the dataset (left out)", missing.height)
    qc.add("eyebench_folds", "trials", "in the dataset, in no EyeBench fold table (left out)", unlisted.height)
    return published.filter(pl.col("trial_id").is_in(present)).select("trial_id", "fold_index", "split", "regime")


def run_copco_classical(trials: pl.DataFrame, folds: str | Path, task: str, *, kinds: Sequence[str] | None = None,
                        results: str | Path | None = None, rcs_missing: float | None = None,
                        qc: QCLog | None = None) -> CopcoResult:
    """Run the classical baselines of an EyeBench CopCo task on EyeBench's folds and set them beside its table.

    Parameters
    ----------
    trials : polars.DataFrame
        The dataset's trials with the baselines' features (:func:`readgaze.baselines.with_baseline_features`),
        ``participant_id``, ``item_id`` (the speech) and the task's column (:data:`COPCO_TASKS`).
    folds : str or Path
        EyeBench's CopCo fold folder (``eyebench/folds`` of the CopCo folder that ``readgaze prep copco`` reads).
    task : {"TYP", "RCS"}
    kinds : sequence of str, optional
        Baselines to run (default :data:`TYP_BASELINES` or :data:`RCS_BASELINES`).
    results : str or Path, optional
        EyeBench's results folder; its ``CopCo_{task}_test.csv`` is set beside readgaze's rows.
    rcs_missing : float, optional
        ``RCS`` only: the score given to readers without one (EyeBench's published table: ``-1.0``, see the module
        docstring; :func:`readgaze.tasks.fill_missing_label`, counted in trials and readers, as the models'
        ``missing_label``); default None drops them (counted).
    qc : QCLog, optional

    Returns
    -------
    CopcoResult

    Raises
    ------
    ConfigError
        Unknown task.
    SchemaError
        The task's column is missing.
    DataError, LeakageError
        As :func:`eyebench_assignment` and :func:`readgaze.splits.check_reader_label`.
    """
    if task not in COPCO_TASKS:
        raise ConfigError(f"got task {task!r}, expected one of {list(COPCO_TASKS)}")
    column = COPCO_TASKS[task]
    if column not in trials.columns:
        raise SchemaError(f"trials lack column {column!r} (the {task} label)", column=column)
    qc = qc if qc is not None else QCLog()
    if task == "RCS" and rcs_missing is not None:  # the datamodule's missing_label: one definition
        trials = fill_missing_label(trials, column, rcs_missing, column=column, qc=qc, step="eyebench_folds",
                                    option="rcs_missing")
    assignment = eyebench_assignment(trials, folds, qc=qc)
    check_reader_label(assignment.join(trials.select("trial_id", "participant_id", column), on="trial_id"), column)
    if task == "TYP":  # the registry's dyslexia task labels the trials (readgaze.tasks)
        predictions = run_baselines(trials, assignment, "dyslexia", kinds or TYP_BASELINES, split=("val", "test"),
                                    qc=qc)
        evaluation = evaluate(predictions)
    else:
        predictions = run_regressors(trials, assignment, column, kinds or RCS_BASELINES, split=("val", "test"), qc=qc)
        evaluation = evaluate_regression(predictions)
    comparison, title = None, f"CopCo_{task} (test, EyeBench's 4 folds)"
    if task == "RCS":
        title += (" — readers without a score dropped" if rcs_missing is None
                  else f" — readers without a score scored {rcs_missing}, as EyeBench's table")
    if results is not None:
        comparison = compare_with_eyebench(evaluation, read_eyebench_table(Path(results) / f"CopCo_{task}_test.csv"))
        table = eyebench_table(comparison, title=title)
    else:
        from readgaze.metrics import results_table
        from readgaze.metrics_regression import regression_results_table

        table = results_table(evaluation) if task == "TYP" else regression_results_table(evaluation)
    return CopcoResult(task, predictions, evaluation, comparison, table, qc)
