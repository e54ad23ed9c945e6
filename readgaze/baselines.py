"""Classical baselines over trial-level features: scikit-learn pipelines fit per fold, selected on validation.

Each baseline is a named :class:`Baseline` in :data:`BASELINES`: a feature list (a set of
:data:`readgaze.features.FEATURE_SETS`), a scikit-learn estimator behind a
``StandardScaler`` and a hyperparameter grid. Per fold, every grid point is fit on the ``train`` trials
only and scored on the ``val`` trials (AUROC; balanced accuracy when the validation split holds one
class, or for more than two classes); the best point (first on ties) predicts the requested split.
With no validation trials the first grid point is used, counted in ``qc``. A feature missing in a trial
is replaced by the training median (counted); a feature missing in every training trial is left out
(counted). ``class_weight="balanced"`` wherever the estimator takes it (one lab sweep forced ``None``).

* ``majority``: the training class frequencies for every trial (AUROC 0.5 by construction).
* ``reading_speed``: logistic regression on readgaze's ``reading_speed_wpm`` (words per minute over the
  fixation span; :mod:`readgaze.features`). Output model name ``reading_speed_logistic_regression``.
* ``words_per_paragraph_time``: logistic regression on ``paragraph_words_per_minute`` (words / paragraph
  reading time, EyeBench's "Reading Speed" baseline).
* ``mean_total_fixation_duration``: logistic regression on the mean total fixation duration per word
  (the goal-decoding paper's "Reading Time" baseline).
* ``meziere_logistic_regression``: logistic regression on Mézière et al.'s 9 features
  (``FEATURE_SETS["meziere"]``); grid: l2 penalty with C ∈ {0.1, 1, 5, 10, 50, 100}, or no penalty.
* ``svm``: support vector classifier on Hollenstein et al.'s 9 features; ``prediction_prob`` is the
  logistic function of the decision score (monotone, so AUROC ranks by the score and 0.5 is the SVM's own
  decision boundary; not a calibrated probability). Grid C × kernel × gamma × class weight.
* ``random_forest``: random forest on Makowski et al.'s summary statistics (119 features); grid over
  depth and max features at 200 trees (the published forest: 1000 trees, depth 6).
* ``knn``: k nearest neighbours on readgaze's 10 trial features (``FEATURE_SETS["readgaze"]``, the neural
  models' trial vector); grid k × weighting.
* ``gradient_boosting``: ``HistGradientBoostingClassifier`` (100 iterations) on the same 10 trial
  features; grid learning rate × depth × minimum leaf size.

The returned frame is what :func:`readgaze.metrics.evaluate` reads. References: Mézière et al. (2023),
*Scientific Studies of Reading*; the SVM (after Hollenstein et al.) and random forest (after Makowski et al.)
baselines of EyeBench; the reading-time baseline of Shubi et al., "Decoding reading goals from eye movements"
(ACL 2025, arXiv:2410.20779).
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import polars as pl

from readgaze._baseline_folds import (  # noqa: F401 (public here: what a classifier and a regressor share)
    Baseline,
    FoldFrame,
    fold_frames,
    grid_points,
    impute,
    spec_columns,
)
from readgaze.dataset import Dataset
from readgaze.errors import ConfigError, DataError
from readgaze.features import FEATURE_SETS, compute_feature_sets
from readgaze.predictions import make_predictions
from readgaze.qc import QCLog
from readgaze.tasks import TASKS as REGISTRY
from readgaze.tasks import get_task

TASKS = tuple(name for name, task in REGISTRY.items() if task.kind == "classification")
"""The tasks a baseline fits: every classification task of :data:`readgaze.tasks.TASKS`."""


_LR, LR = dict(class_weight="balanced", max_iter=1000), "sklearn.linear_model.LogisticRegression"
BASELINES: dict[str, Baseline] = {
    "majority": Baseline("majority", (), None),
    "reading_speed": Baseline("reading_speed_logistic_regression", ("reading_speed_wpm",), LR, _LR),
    "words_per_paragraph_time": Baseline("words_per_paragraph_time_logistic_regression",
                                         ("paragraph_words_per_minute",), LR, _LR),
    "mean_total_fixation_duration": Baseline("mean_total_fixation_duration_logistic_regression",
                                             ("mean_total_fixation_duration_ms",), LR, _LR),
    "meziere_logistic_regression": Baseline(
        "meziere_logistic_regression", FEATURE_SETS["meziere"], LR, _LR,
        [{"C": [0.1, 1.0, 5.0, 10.0, 50.0, 100.0]}, {"penalty_off": [True]}]),
    "svm": Baseline("svm", FEATURE_SETS["hollenstein"], "sklearn.svm.SVC", {"class_weight": None},
                    {"C": [0.1, 1.0, 10.0, 100.0], "kernel": ["rbf"], "gamma": [0.001, 0.01, 0.1],
                     "class_weight": [None, "balanced"]}),
    "random_forest": Baseline("random_forest", FEATURE_SETS["summary_statistics"],
                              "sklearn.ensemble.RandomForestClassifier",
                              dict(n_estimators=200, class_weight="balanced", n_jobs=1, random_state=0),
                              {"max_depth": [6, None], "max_features": ["sqrt", 0.3]}),
    "knn": Baseline("knn", FEATURE_SETS["readgaze"], "sklearn.neighbors.KNeighborsClassifier", {},
                    {"n_neighbors": [5, 11, 21, 41], "weights": ["uniform", "distance"]}),
    "gradient_boosting": Baseline("gradient_boosting", FEATURE_SETS["readgaze"],
                                  "sklearn.ensemble.HistGradientBoostingClassifier",
                                  dict(class_weight="balanced", early_stopping=False, random_state=0),
                                  {"learning_rate": [0.05, 0.1], "max_depth": [3, None], "min_samples_leaf": [5, 20]}),
}
"""Every baseline by the ``kind`` name :func:`run_baseline` takes."""
KINDS = tuple(BASELINES)
CLASSICAL = ("words_per_paragraph_time", "mean_total_fixation_duration", "meziere_logistic_regression", "svm",
             "random_forest", "knn", "gradient_boosting")
"""The baselines beyond ``majority`` and ``reading_speed`` (what ``readgaze cv`` adds when asked)."""


def task_labels(trials: pl.DataFrame, task: str) -> pl.Expr:
    """The Int64 label of a task, from the registry (:meth:`readgaze.tasks.Task.label_expr`: ``reading_goal``
    1 = information seeking; ``comprehension`` 1 = correct; ...); ``goal_question`` needs a ``label`` column (class
    index) from the caller. An existing ``label`` wins."""
    if "label" in trials.columns:
        return pl.col("label").cast(pl.Int64)
    return get_task(task).label_expr()


def with_baseline_features(trials: pl.DataFrame, dataset: str | Path | Dataset) -> pl.DataFrame:
    """``trials`` plus every :data:`readgaze.features.FEATURE_SETS` column computed from a dataset folder.

    Reads the ``fixations``, ``words``, ``word_measures`` and ``trials`` tables of ``dataset`` (a folder written
    by ``readgaze prep``, or a :class:`readgaze.Dataset`), each validated against :mod:`readgaze.schema`;
    recomputed columns replace same-named columns of ``trials``.
    """
    ds = dataset if isinstance(dataset, Dataset) else Dataset(dataset)
    features = compute_feature_sets(ds.fixations, ds.words, ds.word_measures,
                                    ds.trials.join(trials.lazy().select("trial_id"), on="trial_id", how="semi"))
    return trials.drop([c for c in features.columns if c != "trial_id" and c in trials.columns]).join(
        features, on="trial_id", how="left", maintain_order="left")


def run_baselines(trials, assignment: pl.DataFrame, task: str, kinds: Sequence[str] = KINDS, *,
                  split: str | Sequence[str] = "test", qc: QCLog | None = None) -> pl.DataFrame:
    """:func:`run_baseline` for each of ``kinds``, concatenated (one ``model`` value per kind)."""
    return pl.concat([run_baseline(trials, assignment, task, kind, split=split, qc=qc) for kind in kinds],
                     how="diagonal_relaxed")


def run_baseline(trials: pl.DataFrame | pl.LazyFrame, assignment: pl.DataFrame, task: str,
                 kind: str = "reading_speed", *, features: Sequence[str] | None = None,
                 split: str | Sequence[str] = "test", grid: dict | None = None,
                 qc: QCLog | None = None) -> pl.DataFrame:
    """Fit a baseline per fold on the training trials, select it on validation, predict the ``split`` trials.

    Parameters
    ----------
    trials : polars.DataFrame or LazyFrame
        ``trial_id``, ``participant_id``, ``item_id``, the task's label source (``reading_goal``, ``is_correct``
        or ``label``) and the baseline's feature columns (see :func:`with_baseline_features`).
    assignment : polars.DataFrame
        :func:`readgaze.splits.assign_fold` output (``trial_id``, ``fold_index``, ``split``, ``regime``) for one
        fold or several concatenated.
    task : {"reading_goal", "comprehension", "goal_question"}
    kind : str, default "reading_speed"
        A key of :data:`BASELINES`.
    features : sequence of str, optional
        Replace the baseline's features (a logistic regression on other columns is named
        ``logistic_regression``).
    split : str or sequence of str, default "test"
        Which split(s) to predict (``("val", "test")`` for ensembles fit on validation predictions).
    grid : dict or list of dict, optional
        Replace the baseline's validation grid (lists of values per estimator argument, as
        ``sklearn.model_selection.ParameterGrid``; a grid value overrides a fixed argument).
    qc : QCLog, optional
        Receives the counts of trials without a label (dropped), imputed values and left-out features.

    Returns
    -------
    polars.DataFrame
        ``model``, ``trial_id``, ``participant_id``, ``item_id``, ``fold_index`` (Int32), ``split``, ``regime``,
        ``label`` (Int64), ``prediction_prob`` (Float64 P(class 1); List(Float64) with more than two classes),
        ``hyperparameters`` (String, JSON of the grid point chosen on validation).

    Raises
    ------
    ConfigError
        Unknown ``task`` or ``kind``.
    SchemaError
        A needed column is missing.
    DataError
        A fold's training split is empty or single-class, or a feature has no training value.
    """
    tasks = tuple(name for name, t in REGISTRY.items() if t.kind == "classification")  # registered so far
    if task not in tasks or kind not in BASELINES:
        raise ConfigError(f"got task {task!r}, kind {kind!r}; expected task in {tasks}, kind in {KINDS}")
    spec = BASELINES[kind]
    if features is not None and tuple(features) != spec.features:
        from sklearn.linear_model import LogisticRegression

        name = ("logistic_regression" if spec.estimator_class() is LogisticRegression
                else f"{spec.model}_custom_features")
        spec = Baseline(name, tuple(features), spec.estimator, spec.fixed, spec.grid)
    if grid is not None:
        spec = Baseline(spec.model, spec.features, spec.estimator, spec.fixed, grid)
    qc = qc if qc is not None else QCLog()
    frame = trials.collect() if isinstance(trials, pl.LazyFrame) else trials
    labelled, folds = fold_frames(frame, assignment, spec, task_labels(frame, task), f"the {kind} baseline", split)
    qc.add("baseline", "trials", f"no {task} label", labelled["label"].null_count())
    parts = [_one_fold(fold, spec, qc) for fold in folds]
    return pl.concat(parts, how="vertical_relaxed").sort("fold_index", "split", "trial_id")


def _one_fold(fold: FoldFrame, spec: Baseline, qc: QCLog) -> pl.DataFrame:
    y = fold.train["label"].to_numpy()
    if fold.train.height == 0 or np.unique(y).size < 2:
        raise DataError(f"fold {fold.index}: the training split has {np.unique(y).size} class(es) in "
                        f"{fold.train.height} trials; a baseline needs at least two")
    classes = np.arange(int(max(y.max(), fold.rows["label"].max() or 0)) + 1)
    chosen: dict = {}
    if spec.estimator is None:
        frequency = np.bincount(y, minlength=classes.size) / y.size
        prob = np.tile(frequency, (fold.target.height, 1))
    else:
        x_train, x_val, x_target = fold.features(spec, qc)
        model, chosen = _select(spec, x_train, y, x_val, fold.val["label"].to_numpy(), fold.index, qc)
        prob = np.zeros((fold.target.height, classes.size))
        prob[:, model.classes_] = _scores(model, x_target)
    return make_predictions(fold.keys(), prob, model=spec.model).with_columns(
        pl.lit(json.dumps(chosen, default=str)).alias("hyperparameters"))


def _estimator(spec: Baseline, params: dict):
    """``StandardScaler → estimator`` (a scikit-learn ``Pipeline``) with the fixed and grid arguments
    (``penalty_off`` = no penalty)."""
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import StandardScaler

    arguments = {**spec.fixed, **{k: v for k, v in params.items() if k != "penalty_off"}}
    if params.get("penalty_off"):
        arguments["C"] = np.inf  # sklearn >= 1.8: C=inf is the unpenalised logistic regression
    return Pipeline([("scale", StandardScaler()), ("classify", spec.estimator_class()(**arguments))])


def _select(spec: Baseline, x_train, y_train, x_val, y_val, fold: int, qc: QCLog):
    """Fit every grid point on train, keep the best on validation (AUROC, else balanced accuracy)."""
    points = grid_points(spec, len(x_train), len(x_val), fold, qc)
    best = None
    for params in points:
        model = _estimator(spec, params).fit(x_train, y_train)
        score = _validation_score(model, x_val, y_val) if len(points) > 1 else 0.0
        if best is None or score > best[0]:
            best = (score, model, params)
    return best[1], best[2]


def _validation_score(model, x_val: np.ndarray, y_val: np.ndarray) -> float:
    from sklearn.metrics import balanced_accuracy_score, roc_auc_score

    scores = _scores(model, x_val)
    present = np.unique(y_val)
    if scores.shape[1] == 2 and present.size == 2:
        return float(roc_auc_score(y_val, scores[:, 1]))
    predicted = model.classes_[np.argmax(scores, axis=1)]
    with warnings.catch_warnings():  # one validation class: sklearn warns that a predicted class is absent
        warnings.simplefilter("ignore", UserWarning)
        return float(balanced_accuracy_score(y_val, predicted))


def _scores(model, x: np.ndarray) -> np.ndarray:
    """Class scores ``(n, n_classes)``: ``predict_proba``, or for an SVC the logistic of its decision score."""
    from sklearn.svm import SVC

    classifier = model[-1]
    if isinstance(classifier, SVC):
        decision = model.decision_function(x)
        if decision.ndim == 1:
            positive = 1.0 / (1.0 + np.exp(-decision))
            return np.column_stack([1.0 - positive, positive])
        exp = np.exp(decision - decision.max(axis=1, keepdims=True))
        return exp / exp.sum(axis=1, keepdims=True)
    return model.predict_proba(x)


def sequence_summaries(sequences: np.ndarray, channels: Sequence[str]) -> pl.DataFrame:
    """Per sequence and channel: mean, standard deviation and mean absolute step (the simple window baseline).

    For SB-SAT's windows of 21 fixations ``[x, y, pupil, duration]`` (Ahn et al. 2020) this gives 12 numbers per
    window, what a logistic regression or gradient boosting reads beside the window networks.

    Parameters
    ----------
    sequences : numpy.ndarray, shape (n_sequences, length, n_channels)
        Float values (any units; the models scale them).
    channels : sequence of str
        ``n_channels`` names.

    Returns
    -------
    polars.DataFrame
        ``n_sequences`` rows; columns ``<channel>_mean``, ``<channel>_sd`` (population SD, ``ddof=0``) and
        ``<channel>_mean_abs_step`` (mean of ``|v[t+1] - v[t]|``; 0 for length 1), Float64, channel by channel.

    Raises
    ------
    ConfigError
        ``sequences`` is not 3-D or ``channels`` does not name its last axis.
    """
    x = np.asarray(sequences, dtype=np.float64)
    if x.ndim != 3 or x.shape[2] != len(channels):
        raise ConfigError(f"sequence_summaries: got shape {x.shape} for {len(channels)} channel names, expected "
                          f"(n_sequences, length, {len(channels)})")
    step = np.abs(np.diff(x, axis=1)).mean(axis=1) if x.shape[1] > 1 else np.zeros((x.shape[0], x.shape[2]))
    columns = {}
    for i, name in enumerate(channels):
        columns.update({f"{name}_mean": x[:, :, i].mean(axis=1), f"{name}_sd": x[:, :, i].std(axis=1),
                        f"{name}_mean_abs_step": step[:, i]})
    return pl.DataFrame(columns)
