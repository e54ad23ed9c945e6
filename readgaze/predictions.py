"""Prediction tables: the one place a prediction table is made (:func:`make_predictions`) and read for its kind
(:func:`is_regression`, :func:`is_multiclass`).

Every writer (the models' ``RunWriter``, the classical baselines, the ensembles, a model bundle scoring new data)
builds its table here, so each has the columns of :data:`readgaze.schema.PREDICTION_COLUMNS` in the same dtypes:
``prediction_prob`` is P(class 1), Float64, for two classes and the class probabilities, List(Float64), for more;
``label`` Int64; ``fold_index`` Int32; ``model`` the model's name and ``model_display`` how figures and tables name it
(:func:`display_name`).

A *regression* table (a task of kind ``regression``, e.g. ``reading_comprehension_skill``) carries
``prediction_value`` (Float64, the predicted value in the target's units) instead of ``prediction_prob``, and a
Float64 ``label`` (the true value): what :mod:`readgaze.metrics_regression` reads. Every reader asks
:func:`is_regression`, then :func:`is_multiclass`, which kind a table is.
"""

from __future__ import annotations

import numpy as np
import polars as pl

DISPLAY_NAMES = {
    "majority": "majority class", "reading_speed_logistic_regression": "reading speed (LR)",
    "words_per_paragraph_time_logistic_regression": "words / paragraph time (LR)",
    "mean_total_fixation_duration_logistic_regression": "mean total fixation duration (LR)",
    "meziere_logistic_regression": "Mézière et al. (LR)", "svm": "SVM (Hollenstein et al.)",
    "random_forest": "random forest (Makowski et al.)", "knn": "k nearest neighbours",
    "gradient_boosting": "gradient boosting", "logistic_regression": "logistic regression",
    "RoBERTEyeF": "RoBERTEye-F", "RoBERTEyeW": "RoBERTEye-W", "PostFusionEye": "PostFusion-Eye",
    "MAGEye": "MAG-Eye", "PLMAS": "PLM-AS", "PLMASRM": "PLM-AS-RM", "TextOnly": "text only",
    "ScanpathImage": "scanpath image", "AhnRNN": "Ahn et al. RNN", "AhnCNN": "Ahn et al. CNN",
    "LogisticEnsemble": "logistic ensemble", "MajorityVote": "majority vote",
    "chance_mean": "chance (training mean)", "reading_speed_linear_regression": "reading speed (linear)",
    "words_per_paragraph_time_linear_regression": "words / paragraph time (linear)",
    "ridge": "ridge (Mézière et al.)", "svr": "SVR (Hollenstein et al.)",
    "random_forest_regressor": "random forest (Makowski et al.)", "knn_regressor": "k nearest neighbours",
    "gradient_boosting_regressor": "gradient boosting", "MeanEnsemble": "mean ensemble",
    "RidgeEnsemble": "ridge ensemble"}
"""Readable names for figures and tables (a model not listed keeps its name, underscores as spaces)."""


def display_name(model: str) -> str:
    """The name a figure or table shows for ``model`` (:data:`DISPLAY_NAMES`; else underscores as spaces).

    Examples
    --------
    >>> display_name("RoBERTEyeF"), display_name("BEyeLSTM"), display_name("my_model")
    ('RoBERTEye-F', 'BEyeLSTM', 'my model')
    """
    return DISPLAY_NAMES.get(model, model.replace("_", " "))


PREDICTION_VALUE = "prediction_value"
"""The column of a regression prediction table holding the predicted value (Float64, the target's units)."""


def is_regression(frame: pl.DataFrame | pl.LazyFrame) -> bool:
    """Whether a prediction table holds predicted values (``prediction_value``) rather than class probabilities.

    Examples
    --------
    >>> is_regression(pl.DataFrame({"label": [2.5], "prediction_value": [3.1]}))
    True
    >>> is_regression(pl.DataFrame({"label": [1], "prediction_prob": [0.8]}))
    False
    """
    names = frame.collect_schema().names() if isinstance(frame, pl.LazyFrame) else frame.columns
    return PREDICTION_VALUE in names and "prediction_prob" not in names


def is_multiclass(frame: pl.DataFrame | pl.LazyFrame) -> bool:
    """Whether a prediction table holds class probabilities (List) rather than P(class 1) (Float64).

    Examples
    --------
    >>> is_multiclass(pl.DataFrame({"prediction_prob": [[0.2, 0.5, 0.3]]}))
    True
    """
    schema = frame.collect_schema() if isinstance(frame, pl.LazyFrame) else frame.schema
    return "prediction_prob" in schema and isinstance(schema["prediction_prob"], pl.List)


def probability_column(prob) -> pl.Series:
    """``prediction_prob`` from probabilities: ``(n,)`` P(class 1), or ``(n, k)`` class probabilities (``k = 2``:
    their second column, P(class 1); more: each row's list), as Float64 or List(Float64)."""
    prob = np.asarray(prob, dtype=np.float64)
    if prob.ndim == 2 and prob.shape[1] == 2:
        prob = prob[:, 1]
    if prob.ndim == 1:
        return pl.Series("prediction_prob", prob, dtype=pl.Float64)
    return pl.Series("prediction_prob", prob.tolist(), dtype=pl.List(pl.Float64))


def make_predictions(keys: pl.DataFrame, prob=None, *, value=None, model: str | None = None,
                     split: str | None = None) -> pl.DataFrame:
    """A prediction table: ``keys`` (one row per trial, in the order of ``prob`` or ``value``) with
    ``prediction_prob`` (classification) or ``prediction_value`` (regression).

    Parameters
    ----------
    keys : polars.DataFrame
        ``trial_id`` and whichever of ``label``, ``regime``, ``fold_index``, ``split``, ``participant_id``,
        ``item_id`` (and other columns) the writer has; ``label`` is cast to Int64 (Float64 with ``value``),
        ``fold_index`` to Int32.
    prob : array-like, optional
        ``(n,)`` P(class 1) or ``(n, k)`` class probabilities (:func:`probability_column`).
    value : array-like, optional
        ``(n,)`` predicted values of a regression task, in the target's units (instead of ``prob``): the
        ``prediction_value`` column, Float64.
    model : str, optional
        The model's name: ``model`` and ``model_display`` (:func:`display_name`) columns.
    split : str, optional
        ``split`` column ("val", "test" or "predict").

    Returns
    -------
    polars.DataFrame
        ``keys``' columns, then ``prediction_prob`` (or ``prediction_value``), ``split`` and ``model``,
        ``model_display`` when given.

    Raises
    ------
    ValueError
        Neither or both of ``prob`` and ``value`` given, or ``value`` not one number per row of ``keys``.

    Examples
    --------
    >>> keys = pl.DataFrame({"trial_id": ["a", "b"], "label": [4, 7]})
    >>> make_predictions(keys, value=[4.5, 6.0]).rows()
    [('a', 4.0, 4.5), ('b', 7.0, 6.0)]
    """
    if (prob is None) == (value is None):
        raise ValueError("make_predictions: give either prob (classification) or value (regression)")
    casts = {"label": pl.Float64 if value is not None else pl.Int64, "fold_index": pl.Int32}
    frame = keys.with_columns([pl.col(c).cast(t) for c, t in casts.items()
                               if c in keys.columns and keys.schema[c] != t])
    if value is not None:
        value = np.asarray(value, dtype=np.float64).reshape(-1)
        if value.shape[0] != frame.height:
            raise ValueError(f"make_predictions: got {value.shape[0]} values for {frame.height} trials")
        frame = frame.with_columns(pl.Series(PREDICTION_VALUE, value, dtype=pl.Float64))
    else:
        frame = frame.with_columns(probability_column(prob))
    if split is not None:
        frame = frame.with_columns(pl.lit(split).alias("split"))
    if model is not None:
        frame = frame.with_columns(pl.lit(model).alias("model"), pl.lit(display_name(model)).alias("model_display"))
    return frame
