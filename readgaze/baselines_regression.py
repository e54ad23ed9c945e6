"""Classical regression baselines over trial-level features (e.g. CopCo's reading-comprehension skill score).

The regression counterpart of :mod:`readgaze.baselines`, with the same interface and protocol: each regressor is a
named :class:`readgaze.baselines.Baseline` in :data:`REGRESSORS` (features, a scikit-learn regressor behind a
``StandardScaler``, a validation grid). Per fold, every grid point is fit on the ``train`` trials only and scored on
the ``val`` trials by RMSE; the lowest (first on ties) predicts the requested split. A prediction outside the
range of the training targets is clipped to it (counted), in selection too: a linear model on one unbounded feature
(a CopCo trial read at thousands of words per minute) otherwise predicts scores no reader has. With no validation
trials the first grid point is used, counted in ``qc``. A feature missing in a trial is replaced by the training
median (counted); a feature missing in every training trial is left out (counted). Trials without a target value
are dropped and counted (CopCo's readers without a comprehension score; :mod:`readgaze.eyebench_copco` on what
EyeBench's published table did instead).

* ``chance``: the training mean for every trial (EyeBench's "Majority Class / Chance" row of a regression task).
* ``reading_speed``: linear regression on readgaze's ``reading_speed_wpm``.
* ``words_per_paragraph_time``: linear regression on ``paragraph_words_per_minute`` (EyeBench's "Reading Speed").
* ``ridge``: ridge regression on Mézière et al.'s 9 features; grid alpha ∈ {0.1, 1, 10, 100, 1000} (the regression
  counterpart of EyeBench's logistic-regression row).
* ``svr``: support vector regression (RBF) on Hollenstein et al.'s 9 features; grid C × gamma × epsilon.
* ``random_forest``: random forest on Makowski et al.'s summary statistics (119 features), 200 trees; grid depth ×
  max features.
* ``knn``: k nearest neighbours on readgaze's 8 trial features; grid k × weighting.
* ``gradient_boosting``: ``HistGradientBoostingRegressor`` (100 iterations, squared error) on readgaze's 8 trial
  features; grid learning rate × depth × minimum leaf size.

The returned frame is what :func:`readgaze.metrics_regression.evaluate_regression` reads.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

import numpy as np
import polars as pl

from readgaze.baselines import Baseline, FoldFrame, fold_frames, grid_points
from readgaze.errors import ConfigError, DataError, SchemaError
from readgaze.features import FEATURE_SETS
from readgaze.predictions import make_predictions
from readgaze.qc import QCLog

_LINEAR = "sklearn.linear_model.LinearRegression"
REGRESSORS: dict[str, Baseline] = {
    "chance": Baseline("chance_mean", (), None),
    "reading_speed": Baseline("reading_speed_linear_regression", ("reading_speed_wpm",), _LINEAR),
    "words_per_paragraph_time": Baseline("words_per_paragraph_time_linear_regression",
                                         ("paragraph_words_per_minute",), _LINEAR),
    "ridge": Baseline("ridge", FEATURE_SETS["meziere"], "sklearn.linear_model.Ridge", {},
                      {"alpha": [0.1, 1.0, 10.0, 100.0, 1000.0]}),
    "svr": Baseline("svr", FEATURE_SETS["hollenstein"], "sklearn.svm.SVR", {"kernel": "rbf"},
                    {"C": [0.1, 1.0, 10.0], "gamma": ["scale", 0.01], "epsilon": [0.1, 0.5]}),
    "random_forest": Baseline("random_forest_regressor", FEATURE_SETS["summary_statistics"],
                              "sklearn.ensemble.RandomForestRegressor",
                              dict(n_estimators=200, n_jobs=1, random_state=0),
                              {"max_depth": [6, None], "max_features": ["sqrt", 0.3]}),
    "knn": Baseline("knn_regressor", FEATURE_SETS["readgaze"], "sklearn.neighbors.KNeighborsRegressor", {},
                    {"n_neighbors": [5, 11, 21, 41], "weights": ["uniform", "distance"]}),
    "gradient_boosting": Baseline("gradient_boosting_regressor", FEATURE_SETS["readgaze"],
                                  "sklearn.ensemble.HistGradientBoostingRegressor",
                                  dict(early_stopping=False, random_state=0),
                                  {"learning_rate": [0.05, 0.1], "max_depth": [3, None], "min_samples_leaf": [5, 20]}),
}
"""Every regression baseline by the ``kind`` name :func:`run_regressor` takes."""
REGRESSOR_KINDS = tuple(REGRESSORS)


def run_regressors(trials, assignment: pl.DataFrame, target: str, kinds: Sequence[str] = REGRESSOR_KINDS, *,
                   split: str | Sequence[str] = "test", qc: QCLog | None = None) -> pl.DataFrame:
    """:func:`run_regressor` for each of ``kinds``, concatenated (one ``model`` value per kind)."""
    return pl.concat([run_regressor(trials, assignment, target, kind, split=split, qc=qc) for kind in kinds],
                     how="diagonal_relaxed")


def run_regressor(trials: pl.DataFrame | pl.LazyFrame, assignment: pl.DataFrame, target: str,
                  kind: str = "ridge", *, features: Sequence[str] | None = None,
                  split: str | Sequence[str] = "test", grid: dict | list[dict] | None = None,
                  qc: QCLog | None = None) -> pl.DataFrame:
    """Fit a regressor per fold on the training trials, select it on validation RMSE, predict the ``split`` trials.

    Parameters
    ----------
    trials : polars.DataFrame or LazyFrame
        ``trial_id``, ``participant_id``, ``item_id``, the ``target`` column (numeric; null = no value) and the
        regressor's feature columns (:func:`readgaze.baselines.with_baseline_features`).
    assignment : polars.DataFrame
        :func:`readgaze.splits.assign_fold` output (``trial_id``, ``fold_index``, ``split``, ``regime``), one fold or
        several concatenated.
    target : str
        The column to predict (e.g. ``"reading_comprehension_skill"``).
    kind : str, default "ridge"
        A key of :data:`REGRESSORS`.
    features : sequence of str, optional
        Replace the regressor's features (the model name gets ``_custom_features``; a linear regression on other
        columns is named ``linear_regression``).
    split : str or sequence of str, default "test"
        Which split(s) to predict.
    grid : dict or list of dict, optional
        Replace the validation grid (``sklearn.model_selection.ParameterGrid`` format).
    qc : QCLog, optional
        Receives the counts of trials without a target (dropped), imputed values and left-out features.

    Returns
    -------
    polars.DataFrame
        ``model``, ``trial_id``, ``participant_id``, ``item_id``, ``fold_index`` (Int32), ``split``, ``regime``,
        ``label`` (Float64, the true target), ``prediction_value`` (Float64, the target's units),
        ``model_display`` (:func:`readgaze.predictions.display_name`), ``hyperparameters`` (String, JSON of the
        grid point chosen on validation).

    Raises
    ------
    ConfigError
        Unknown ``kind``.
    SchemaError
        A needed column is missing, or ``target`` is not numeric.
    DataError
        A fold has fewer than two training trials with a target, or a feature has no training value.
    """
    if kind not in REGRESSORS:
        raise ConfigError(f"got kind {kind!r}; expected one of {REGRESSOR_KINDS}")
    spec = REGRESSORS[kind]
    if features is not None and tuple(features) != spec.features:
        name = "linear_regression" if spec.estimator == _LINEAR else f"{spec.model}_custom_features"
        spec = Baseline(name, tuple(features), spec.estimator, spec.fixed, spec.grid)
    if grid is not None:
        spec = Baseline(spec.model, spec.features, spec.estimator, spec.fixed, grid)
    frame = trials.collect() if isinstance(trials, pl.LazyFrame) else trials
    if target in frame.columns and not frame.schema[target].is_numeric():
        raise SchemaError(f"got dtype {frame.schema[target]}, expected a number to regress on", column=target)
    qc = qc if qc is not None else QCLog()
    labelled, folds = fold_frames(frame, assignment, spec, pl.col(target).cast(pl.Float64).fill_nan(None),
                                  f"the {kind} regressor", split, label_columns=(target,))
    unlabelled = labelled.filter(pl.col("label").is_null())
    qc.add("baseline", "trials", f"no {target} value (dropped; {unlabelled['participant_id'].n_unique()} readers)",
           unlabelled.height, "dropped")
    parts = [_one_fold(fold, spec, qc) for fold in folds]
    return pl.concat(parts, how="vertical_relaxed").sort("fold_index", "split", "trial_id")


def _one_fold(fold: FoldFrame, spec: Baseline, qc: QCLog) -> pl.DataFrame:
    y = fold.train["label"].to_numpy()
    if fold.train.height < 2:
        raise DataError(f"fold {fold.index}: the training split has {fold.train.height} trial(s) with a target "
                        f"value; a regressor needs at least two")
    chosen: dict = {}
    if spec.estimator is None:
        predicted = np.full(fold.target.height, float(y.mean()))
    else:
        x_train, x_val, x_target = fold.features(spec, qc)
        model, chosen = _select(spec, x_train, y, x_val, fold.val["label"].to_numpy(), fold.index, qc)
        raw = model.predict(x_target) if fold.target.height else np.empty(0)
        predicted = np.clip(raw, y.min(), y.max())
        qc.add("baseline", "trials", f"{spec.model} fold {fold.index}: prediction outside the training targets' "
               f"range, clipped to it", int(np.sum(predicted != raw)), "changed")
    return make_predictions(fold.keys(), value=predicted, model=spec.model).with_columns(
        pl.lit(json.dumps(chosen, default=str)).alias("hyperparameters"))


def _estimator(spec: Baseline, params: dict):
    """``StandardScaler → regressor`` (a scikit-learn ``Pipeline``) with the fixed and grid arguments."""
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import StandardScaler

    return Pipeline([("scale", StandardScaler()), ("regress", spec.estimator_class()(**{**spec.fixed, **params}))])


def _select(spec: Baseline, x_train, y_train, x_val, y_val, fold: int, qc: QCLog):
    """Fit every grid point on train, keep the lowest validation RMSE (first on ties)."""
    from sklearn.metrics import root_mean_squared_error

    points = grid_points(spec, len(x_train), len(x_val), fold, qc)
    best = None
    for params in points:
        model = _estimator(spec, params).fit(x_train, y_train)
        predicted = np.clip(model.predict(x_val), y_train.min(), y_train.max()) if len(points) > 1 else None
        score = root_mean_squared_error(y_val, predicted) if len(points) > 1 else 0.0
        if best is None or score < best[0]:
            best = (score, model, params)
    return best[1], best[2]
