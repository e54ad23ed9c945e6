"""Classical baselines over trial-level features: majority class and reading-speed logistic regression.

* ``majority``: predicts the training split's most frequent class for every test trial; its
  ``prediction_prob`` is the training class frequency, so AUROC is 0.5 by construction.
* ``reading_speed``: logistic regression on ``reading_speed_wpm`` (or other trial-level columns of
  ``trials.parquet``, see :mod:`readgaze.trial_features`), standardised with the training split's mean
  and SD, ``class_weight="balanced"`` (the lab sweep forced ``None``, REFERENCE.md §7 item 7). A missing
  feature value is replaced by the training split's median (counted in ``qc``), never by another
  trial's value.

Both are fit per fold on the ``train`` split only and predict that fold's ``test`` trials, returning
the predictions frame that :func:`readgaze.metrics.evaluate` reads. Reference: Shubi et al. (2024),
reading-speed baseline of goal decoding (REFERENCE.md §4.1: 58.9 % new participant on OneStop).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import polars as pl
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from readgaze.errors import ConfigError, DataError, SchemaError
from readgaze.qc import QCLog

KINDS = ("majority", "reading_speed")
TASKS = ("reading_goal", "comprehension", "goal_question")


def task_labels(trials: pl.DataFrame, task: str) -> pl.Expr:
    """The Int64 label of a task: ``reading_goal`` 1 = information seeking; ``comprehension`` 1 = correct;
    ``goal_question`` needs a ``label`` column (class index) from the caller. An existing ``label`` wins."""
    if "label" in trials.columns:
        return pl.col("label").cast(pl.Int64)
    if task == "reading_goal":
        return (pl.when(pl.col("reading_goal").is_in(["ordinary", "information_seeking"]))
                .then((pl.col("reading_goal") == "information_seeking").cast(pl.Int64)))
    if task == "comprehension":
        return pl.col("is_correct").cast(pl.Int64)
    raise ConfigError(f"task {task!r} needs a 'label' column of class indices in trials; "
                      f"readgaze derives labels only for reading_goal and comprehension")


def run_baseline(trials: pl.DataFrame | pl.LazyFrame, assignment: pl.DataFrame, task: str,
                 kind: str = "reading_speed", *, features: Sequence[str] = ("reading_speed_wpm",),
                 split: str = "test", qc: QCLog | None = None) -> pl.DataFrame:
    """Fit a baseline per fold on the training trials and predict the ``split`` trials.

    Parameters
    ----------
    trials : polars.DataFrame or LazyFrame
        ``trial_id``, ``participant_id``, ``item_id``, the task's label source (``reading_goal``,
        ``is_correct`` or ``label``) and, for ``reading_speed``, the ``features`` columns (Float64).
    assignment : polars.DataFrame
        :func:`readgaze.splits.assign_fold` output for one fold or several concatenated.
    task : {"reading_goal", "comprehension", "goal_question"}
    kind : {"reading_speed", "majority"}
    features : sequence of str, default ("reading_speed_wpm",)
        Trial-level columns of the logistic regression.
    split : str, default "test"
        Which split to predict (``"val"`` for model selection).
    qc : QCLog, optional
        Receives the count of trials without a label (dropped) and of imputed feature values (changed).

    Returns
    -------
    polars.DataFrame
        ``model`` (``"majority"`` or ``"reading_speed_logistic_regression"``), ``trial_id``,
        ``participant_id``, ``item_id``, ``fold_index`` (Int32), ``split``, ``regime``, ``label`` (Int64),
        ``prediction_prob`` (Float64 P(class 1); List(Float64) when the training split has more than two
        classes).

    Raises
    ------
    ConfigError
        Unknown ``task`` or ``kind``.
    SchemaError
        A needed column is missing.
    DataError
        A fold's training split is empty or has a test class outside the training classes' range.
    """
    if task not in TASKS or kind not in KINDS:
        raise ConfigError(f"got task {task!r}, kind {kind!r}; expected task in {TASKS}, kind in {KINDS}")
    frame = trials.collect() if isinstance(trials, pl.LazyFrame) else trials
    needed = ["trial_id", "participant_id", "item_id", *(features if kind == "reading_speed" else [])]
    missing = [c for c in needed if c not in frame.columns]
    missing += [c for c in ("trial_id", "fold_index", "split", "regime") if c not in assignment.columns]
    if missing:
        raise SchemaError(f"missing column(s) {sorted(set(missing))} for the {kind} baseline")
    qc = qc if qc is not None else QCLog()
    labelled = frame.select(*needed, task_labels(frame, task).alias("label"))
    qc.add("baseline", "trials", f"no {task} label", labelled["label"].null_count())
    data = assignment.select("trial_id", "fold_index", "split", "regime").join(
        labelled.filter(pl.col("label").is_not_null()), on="trial_id", how="inner")
    parts = [_one_fold(part, kind, list(features), split, qc) for part in data.partition_by("fold_index")]
    return pl.concat(parts, how="vertical_relaxed").sort("fold_index", "trial_id")


def _one_fold(data: pl.DataFrame, kind: str, features: list[str], split: str, qc: QCLog) -> pl.DataFrame:
    fold = data["fold_index"][0]
    train = data.filter(pl.col("split") == "train")
    target = data.filter(pl.col("split") == split)
    y = train["label"].to_numpy()
    if train.height == 0 or np.unique(y).size < 2:
        raise DataError(f"fold {fold}: the training split has {np.unique(y).size} class(es) in {train.height} "
                        f"trials; a baseline needs at least two")
    classes = np.arange(int(max(y.max(), target["label"].max() or 0)) + 1)
    if kind == "majority":
        frequency = np.bincount(y, minlength=classes.size) / y.size
        prob = np.tile(frequency, (target.height, 1))
        name = "majority"
    else:
        x_train, x_target = _impute(train, target, features, fold, qc)
        model = make_pipeline(StandardScaler(), LogisticRegression(class_weight="balanced", max_iter=1000))
        model.fit(x_train, y)
        prob = np.zeros((target.height, classes.size))
        prob[:, model.classes_] = model.predict_proba(x_target)
        name = "reading_speed_logistic_regression" if features == ["reading_speed_wpm"] else "logistic_regression"
    column = pl.Series("prediction_prob", prob[:, 1] if classes.size == 2 else prob.tolist())
    return target.select("trial_id", "participant_id", "item_id", pl.col("fold_index").cast(pl.Int32), "split",
                         "regime", "label").with_columns(column, pl.lit(name).alias("model"))


def _impute(train: pl.DataFrame, target: pl.DataFrame, features: list[str], fold: int,
            qc: QCLog) -> tuple[np.ndarray, np.ndarray]:
    """Feature matrices with nulls/NaN replaced by the training median (per feature), counted in ``qc``."""
    medians = train.select(pl.col(features).cast(pl.Float64).fill_nan(None).median()).row(0)
    if any(m is None for m in medians):
        raise DataError(f"fold {fold}: a feature of {features} has no value in any training trial")
    out = []
    for frame in (train, target):
        values = frame.select(pl.col(features).cast(pl.Float64).fill_nan(None))
        qc.add("baseline", "trials", f"fold {fold}: feature missing, set to the training median",
               int(sum(values.null_count().row(0))), "changed")
        out.append(values.with_columns(pl.col(c).fill_null(m) for c, m in zip(features, medians)).to_numpy())
    return out[0], out[1]
