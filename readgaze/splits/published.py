"""The published per-fold trial tables (EyeBench ``trial_ids/fold_k_trial_ids_by_regime.csv``).

Each file lists every trial of the OneStop reading-comprehension task with its regime in fold k
(EyeBench, Shubi et al., 2025). EyeBench's regime names map onto
readgaze's (split, regime) pairs by :data:`PUBLISHED_REGIMES`.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

from readgaze.errors import DataError, ParseError

PUBLISHED_REGIMES: dict[str, tuple[str, str]] = {
    "train_train": ("train", "seen"),
    "val_seen_subject_unseen_item": ("val", "new_item"),
    "val_unseen_subject_seen_item": ("val", "new_participant"),
    "val_unseen_subject_unseen_item": ("val", "new_item_participant"),
    "test_seen_subject_unseen_item": ("test", "new_item"),
    "test_unseen_subject_seen_item": ("test", "new_participant"),
    "test_unseen_subject_unseen_item": ("test", "new_item_participant"),
}
_COLUMNS = {"unique_paragraph_id": pl.String, "participant_id": pl.String, "unique_trial_id": pl.String,
            "list_number": pl.Int64, "question_preview": pl.Boolean, "repeated_reading_trial": pl.Int64,
            "is_correct": pl.Int64, "article_batch": pl.Int64, "article_id": pl.Int64, "regime": pl.String}


def read_fold_trial_ids(directory: str | Path, fold: int) -> pl.DataFrame:
    """Read ``trial_ids/fold_{fold}_trial_ids_by_regime.csv`` as canonical trials with their published regime.

    Parameters
    ----------
    directory : str or Path
        The fold-files folder (containing ``trial_ids/``).
    fold : int
        The fold k of the file.

    Returns
    -------
    polars.DataFrame
        One row per trial, in file order: ``trial_id`` (= ``unique_trial_id``), ``participant_id``,
        ``item_id`` (``{article_batch}_{article_id}``, the article), ``text_id`` (= ``unique_paragraph_id``),
        ``reading_goal`` (``"information_seeking"`` if ``question_preview`` else ``"ordinary"``),
        ``is_correct`` (Boolean), ``repeated_reading`` (Boolean), ``fold_index`` (Int32), and the published
        ``split`` and ``regime`` in readgaze's names.

    Raises
    ------
    ParseError
        The file is missing or lacks a column.
    DataError
        A regime name outside :data:`PUBLISHED_REGIMES` (the message names the file row).
    """
    path = Path(directory) / "trial_ids" / f"fold_{fold}_trial_ids_by_regime.csv"
    if not path.is_file():
        raise ParseError("published trial table not found", file=path)
    table = pl.read_csv(path, schema_overrides=_COLUMNS, infer_schema_length=0)
    missing = [c for c in _COLUMNS if c not in table.columns]
    if missing:
        raise ParseError(f"missing column(s) {missing}; expected the EyeBench trial_ids format", file=path)
    names = pl.DataFrame({"regime": list(PUBLISHED_REGIMES),
                          "split": [s for s, _ in PUBLISHED_REGIMES.values()],
                          "readgaze_regime": [r for _, r in PUBLISHED_REGIMES.values()]})
    table = table.with_row_index("row", offset=2).join(names, on="regime", how="left", maintain_order="left")
    unknown = table.filter(pl.col("split").is_null())
    if unknown.height:
        raise DataError(f"got regime {unknown['regime'][0]!r}, expected one of {list(PUBLISHED_REGIMES)}",
                        file=path, row=int(unknown["row"][0]), column="regime")
    return table.select(
        pl.col("unique_trial_id").alias("trial_id"),
        "participant_id",
        pl.format("{}_{}", "article_batch", "article_id").alias("item_id"),
        pl.col("unique_paragraph_id").alias("text_id"),
        pl.when(pl.col("question_preview")).then(pl.lit("information_seeking")).otherwise(pl.lit("ordinary"))
        .alias("reading_goal"),
        (pl.col("is_correct") == 1).alias("is_correct"),
        (pl.col("repeated_reading_trial") == 1).alias("repeated_reading"),
        pl.lit(fold, pl.Int32).alias("fold_index"),
        "split",
        pl.col("readgaze_regime").alias("regime"),
    )
