"""Reader-level aggregation of trial predictions, for a label that belongs to the reader (dyslexia, a skill score).

A reader-level label is the same on every trial of a reader, so the trials a reader reads in one evaluation cell can
be scored together: each trial's prediction becomes the mean of its reader's predictions in the same (model, fold,
split, regime). This uses other trials' *eye movements* at prediction time, never a label: a transductive choice,
valid when the reader's trials are scored together (a screening session), and stated in every table it enters. The
per-trial metrics of :mod:`readgaze.metrics` and :mod:`readgaze.metrics_regression` then read the aggregated column
unchanged; whether to aggregate is a choice to make on validation predictions only.
"""

from __future__ import annotations

import polars as pl

from readgaze.errors import ConfigError, SchemaError

GROUP = ("model", "fold_index", "split", "regime", "participant_id")
"""The cell within which a reader's trial predictions are averaged."""


def aggregate_by_reader(predictions: pl.DataFrame | pl.LazyFrame, *, column: str | None = None,
                        suffix: str = "_reader_mean") -> pl.DataFrame:
    """Replace each trial's prediction by the mean over its reader's trials in the same cell (:data:`GROUP`).

    Parameters
    ----------
    predictions : polars.DataFrame or LazyFrame
        A prediction table with ``participant_id``, ``fold_index``, ``regime`` and ``prediction_prob`` (two classes,
        Float64) or ``prediction_value`` (regression); ``model`` and ``split`` are optional.
    column : str, optional
        The column to average (default: ``prediction_value`` when present, else ``prediction_prob``).
    suffix : str, default "_reader_mean"
        Appended to each ``model`` name, so the aggregated rows can sit beside the originals.

    Returns
    -------
    polars.DataFrame
        The same rows and columns, in the same order, with ``column`` averaged and ``model`` renamed, plus
        ``n_reader_trials`` (UInt32: the trials averaged).

    Raises
    ------
    SchemaError
        A needed column is missing.
    ConfigError
        ``prediction_prob`` holds class-probability lists (more than two classes).
    """
    frame = predictions.collect() if isinstance(predictions, pl.LazyFrame) else predictions
    if column is None:
        column = "prediction_value" if "prediction_value" in frame.columns else "prediction_prob"
    missing = [c for c in ("participant_id", "fold_index", "regime", column) if c not in frame.columns]
    if missing:
        raise SchemaError(f"predictions lack column(s) {missing}; reader aggregation needs them")
    if isinstance(frame.schema[column], pl.List):
        raise ConfigError(f"{column} holds class-probability lists; reader aggregation takes two classes or a value")
    if "model" not in frame.columns:
        frame = frame.with_columns(pl.lit("model").alias("model"))
    group = [c for c in GROUP if c in frame.columns]
    return frame.with_columns(pl.col(column).mean().over(group), pl.len().over(group).alias("n_reader_trials"),
                              (pl.col("model") + suffix).alias("model"))
