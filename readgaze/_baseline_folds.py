"""What a classical classifier (:mod:`readgaze.baselines`) and a regressor (:mod:`readgaze.baselines_regression`)
share, fold by fold: the :class:`Baseline` record, the per-fold frame (:func:`fold_frames` → :class:`FoldFrame`: the
training, validation and predicted trials of one fold), the grid a fold tries (:func:`grid_points`) and the
training-median imputation (:func:`impute`). Public through :mod:`readgaze.baselines`, which re-exports every name.
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import polars as pl

from readgaze.errors import DataError, SchemaError
from readgaze.qc import QCLog


@dataclass(frozen=True)
class Baseline:
    """A classical baseline: its output model name, features, estimator and validation grid.

    ``estimator`` is a scikit-learn classifier class, or its dotted name (``"sklearn.svm.SVC"``), imported when
    the baseline is fit (so that listing the baselines does not import scikit-learn); ``None``: the majority
    baseline.
    """

    model: str
    features: tuple[str, ...]
    estimator: type | str | None
    fixed: dict = field(default_factory=dict)
    grid: dict | list[dict] = field(default_factory=dict)

    def estimator_class(self) -> type | None:
        """The estimator class (its module imported when ``estimator`` is a dotted name)."""
        if not isinstance(self.estimator, str):
            return self.estimator
        module, _, name = self.estimator.rpartition(".")
        return getattr(importlib.import_module(module), name)


def spec_columns(spec: Baseline) -> list[str]:
    """The trial columns a baseline reads besides its label: the keys and its features."""
    return list(dict.fromkeys(["trial_id", "participant_id", "item_id", *spec.features]))


@dataclass(frozen=True)
class FoldFrame:
    """One fold's labelled trials for a baseline: the ``train`` rows it is fit on, the ``val`` rows that choose its
    grid point and the ``target`` rows it predicts (the requested splits), cut from ``rows`` (every labelled trial
    of the fold); each with ``trial_id``, ``participant_id``, ``item_id``, ``fold_index``, ``split``, ``regime``,
    ``label`` and the features."""

    index: int
    rows: pl.DataFrame
    train: pl.DataFrame
    val: pl.DataFrame
    target: pl.DataFrame

    def features(self, spec: Baseline, qc: QCLog) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(x_train, x_val, x_target)`` float64 matrices, imputed by the training medians (:func:`impute`); the
        validation rows are read only when there is a grid to choose from (else ``x_val`` is ``(0, 0)``)."""
        if spec.grid:
            x_train, (x_val, x_target) = impute(self.train, (self.val, self.target), spec, self.index, qc)
            return x_train, x_val, x_target
        x_train, (x_target,) = impute(self.train, (self.target,), spec, self.index, qc)
        return x_train, np.empty((0, 0)), x_target

    def keys(self) -> pl.DataFrame:
        """The predicted rows' keys and label: what a prediction table starts from (``fold_index`` Int32)."""
        return self.target.select("trial_id", "participant_id", "item_id", pl.col("fold_index").cast(pl.Int32),
                                  "split", "regime", "label")


def fold_frames(frame: pl.DataFrame, assignment: pl.DataFrame, spec: Baseline, label: pl.Expr, what: str,
                split: str | Sequence[str], *, label_columns: Sequence[str] = ()
                ) -> tuple[pl.DataFrame, list[FoldFrame]]:
    """Check the columns a baseline needs and cut its labelled trials into one :class:`FoldFrame` per fold.

    Parameters
    ----------
    frame : polars.DataFrame
        The trials: :func:`spec_columns` and what ``label`` reads.
    assignment : polars.DataFrame
        ``trial_id``, ``fold_index``, ``split``, ``regime`` for one fold or several.
    spec : Baseline
    label : polars.Expr
        The label over ``frame`` (null = not in the task): a class index, or a regression target's value.
    label_columns : sequence of str
        Columns ``label`` reads that must be checked with the others (a regression target).
    what : str
        Names the baseline in the error (``"the svm baseline"``).
    split : str or sequence of str
        The split(s) predicted (each fold's ``target``).

    Returns
    -------
    tuple
        The trials' ``spec_columns`` and ``label`` (nulls kept, for the caller's count) and the folds in the order
        of the assignment.

    Raises
    ------
    SchemaError
        A needed column is missing (all of them named), with the way to add features.
    """
    needed = spec_columns(spec)
    missing = [c for c in (*needed, *label_columns) if c not in frame.columns]
    missing += [c for c in ("trial_id", "fold_index", "split", "regime") if c not in assignment.columns]
    if missing:
        raise SchemaError(f"missing column(s) {sorted(set(missing))} for {what}"
                          + ("; add them with readgaze.baselines.with_baseline_features" if spec.features else ""))
    labelled = frame.select(*needed, label.alias("label"))
    data = assignment.select("trial_id", "fold_index", "split", "regime").join(
        labelled.filter(pl.col("label").is_not_null()), on="trial_id", how="inner")
    splits = [split] if isinstance(split, str) else list(split)
    folds = [FoldFrame(int(part["fold_index"][0]), part, part.filter(pl.col("split") == "train"),
                       part.filter(pl.col("split") == "val"), part.filter(pl.col("split").is_in(splits)))
             for part in data.partition_by("fold_index", maintain_order=True)]
    return labelled, folds


def grid_points(spec: Baseline, n_train: int, n_val: int, fold: int, qc: QCLog) -> list[dict]:
    """The grid points a baseline tries in one fold (a classifier's or a regressor's alike): every point of
    ``spec.grid`` (``[{}]`` without one), k of kNN capped at the ``n_train`` training trials, and only the first point
    when the fold has no validation trials (``n_val == 0``; a QC warning says so)."""
    from sklearn.model_selection import ParameterGrid

    points = list(ParameterGrid(spec.grid)) if spec.grid else [{}]
    if any("n_neighbors" in p for p in points):  # k cannot exceed the training trials
        fitting = [p for p in points if p["n_neighbors"] <= n_train]
        points = fitting or [{**points[0], "n_neighbors": n_train}]
    if n_val == 0 and len(points) > 1:
        qc.add("baseline", "trials", f"{spec.model} fold {fold}: no validation trials, first grid point used", 0,
               "warning")
        points = points[:1]
    return points


def impute(train: pl.DataFrame, others: tuple[pl.DataFrame, ...], spec: Baseline, fold: int,
            qc: QCLog) -> tuple[np.ndarray, tuple[np.ndarray, ...]]:
    """Feature matrices with nulls/NaN replaced by the training median (per feature), counted in ``qc``.

    A feature with no training value is left out (counted); with none left, :class:`DataError`.
    """
    features = list(spec.features)
    medians = train.select(pl.col(features).cast(pl.Float64).fill_nan(None).median()).row(0)
    kept = [(c, m) for c, m in zip(features, medians) if m is not None]
    dropped = len(features) - len(kept)
    if dropped:
        qc.add("baseline", "features", f"{spec.model} fold {fold}: feature has no training value, left out",
               dropped, "dropped")
    if not kept:
        raise DataError(f"fold {fold}: no feature of {features} has a value in any training trial")
    out = []
    for frame in (train, *others):
        values = frame.select(pl.col(c).cast(pl.Float64).fill_nan(None) for c, _ in kept)
        qc.add("baseline", "trials", f"{spec.model} fold {fold}: feature missing, set to the training median",
               int(sum(values.null_count().row(0))), "changed")
        out.append(values.with_columns(pl.col(c).fill_null(m) for c, m in kept).to_numpy())
    return out[0], tuple(out[1:])
