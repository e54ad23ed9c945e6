"""Reader-level labels (a property of the reader, not of the trial): dyslexia, a comprehension-skill score.

A label constant within a reader is learnt from the reader's trials, so a model can score well by recognising the
reader. Only the regimes that hold the reader out of training (:data:`readgaze.splits.UNSEEN_PARTICIPANT`:
``new_participant``, ``new_item_participant``) measure whether the label is read from eye movements; in
``new_item`` the reader's label was seen in training (EyeBench reports it anyway, as "Unseen Text").
:func:`check_reader_label` verifies both facts on an assignment and counts, per fold, split and regime, how many
evaluated readers also have training trials.
"""

from __future__ import annotations

import polars as pl

from readgaze.errors import DataError, LeakageError, SchemaError
from readgaze.splits.regimes import UNSEEN_PARTICIPANT


def check_reader_label(assigned: pl.DataFrame | pl.LazyFrame, label: str) -> pl.DataFrame:
    """Check a reader-level label on a fold assignment; count the readers seen in training per regime.

    Parameters
    ----------
    assigned : polars.DataFrame or LazyFrame
        One row per (fold, trial): ``participant_id``, ``fold_index``, ``split``, ``regime`` and ``label``
        (e.g. :func:`readgaze.splits.assign_fold` joined to the trials, or
        :func:`readgaze.splits.read_fold_trial_ids`). Rows with a null label or split are left out (as a task
        drops them).
    label : str
        The label column (e.g. ``"dyslexia"``, ``"reading_comprehension_skill"``).

    Returns
    -------
    polars.DataFrame
        One row per (``fold_index``, ``split``, ``regime``) of val and test: ``n_trials``, ``n_readers`` and
        ``n_readers_in_train`` (readers with a training trial in that fold; 0 in the unseen-reader regimes), Int64.

    Raises
    ------
    SchemaError
        A needed column is missing.
    DataError
        The label takes two values for one reader (naming the reader and the values).
    LeakageError
        A reader evaluated in ``new_participant`` or ``new_item_participant`` has a training trial in the same
        fold (naming the fold, regime and readers).
    """
    frame = assigned.collect() if isinstance(assigned, pl.LazyFrame) else assigned
    needed = ["participant_id", "fold_index", "split", "regime", label]
    missing = [c for c in needed if c not in frame.columns]
    if missing:
        raise SchemaError(f"assignment lacks column(s) {missing}; check_reader_label needs {needed}")
    frame = frame.select(needed).filter(pl.col(label).is_not_null() & pl.col("split").is_not_null())
    values = frame.group_by("participant_id").agg(pl.col(label).unique().sort().alias("values"))
    varying = values.filter(pl.col("values").list.len() > 1).sort("participant_id")
    if varying.height:
        first = varying.row(0, named=True)
        raise DataError(f"reader {first['participant_id']!r} has {label} values {first['values'][:5]}: a "
                        f"reader-level label is constant within a reader ({varying.height} readers differ)",
                        column=label)
    train = frame.filter(pl.col("split") == "train").select("fold_index", "participant_id").unique()
    held = (frame.filter(pl.col("split").is_in(["val", "test"]))
            .join(train.with_columns(pl.lit(True).alias("in_train")), on=["fold_index", "participant_id"],
                  how="left")
            .with_columns(pl.col("in_train").fill_null(False)))
    leaked = held.filter(pl.col("in_train") & pl.col("regime").is_in(list(UNSEEN_PARTICIPANT)))
    if leaked.height:
        first = leaked.row(0, named=True)
        readers = leaked.filter(pl.col("fold_index") == first["fold_index"])["participant_id"].unique().sort()
        raise LeakageError(f"fold {first['fold_index']}, {first['split']} {first['regime']}: reader(s) "
                           f"{readers.to_list()[:5]} also have training trials, so their {label} is seen in "
                           f"training ({leaked.height} trials in all folds)")
    return (held.group_by("fold_index", "split", "regime")
            .agg(pl.len().cast(pl.Int64).alias("n_trials"),
                 pl.col("participant_id").n_unique().cast(pl.Int64).alias("n_readers"),
                 pl.col("participant_id").filter(pl.col("in_train")).n_unique().cast(pl.Int64)
                 .alias("n_readers_in_train"))
            .sort("fold_index", "split", "regime"))
