"""The published per-fold trial tables (EyeBench ``trial_ids/fold_k_trial_ids_by_regime.csv``).

Each file lists every trial of a task with its regime in fold k (EyeBench, Shubi et al., 2025). Two layouts
exist, told apart by their header:

* **OneStop** (reading comprehension; ``unique_paragraph_id, participant_id, unique_trial_id, list_number,
  question_preview, repeated_reading_trial, is_correct, article_batch, article_id, regime``): the item is the
  article ``{article_batch}_{article_id}``.
* **CopCo** (dyslexia and reading-comprehension skill; ``unique_paragraph_id, participant_id, unique_trial_id,
  RCS_score, dyslexia, speech_id, regime``): the item is the speech (``speech_id``, EyeBench's held-out "text"),
  ``unique_paragraph_id`` is ``{speech_id}_{paragraph_id}`` and ``unique_trial_id`` is
  ``{participant_id}_{speech_id}_{paragraph_id}``. ``RCS_score`` is ``-1.0`` for the 12 readers without a
  comprehension-test score (read as null); ``dyslexia`` is 0/1.

EyeBench's regime names map onto readgaze's (split, regime) pairs by :data:`PUBLISHED_REGIMES`; its table
columns "Unseen Text", "Unseen Reader", "Unseen Text & Reader" are ``new_item``, ``new_participant`` and
``new_item_participant``. :func:`compare_with_published` checks an assignment made from the fold lists
(:func:`readgaze.splits.read_fold_files` + :func:`readgaze.splits.assign_fold`) against the file, count by count
and trial by trial; :func:`check_fold_table` does it for one fold of a datamodule (``--data.fold_files``): the
trials of a task against the folder's table of that fold, with the reader-level check of
:func:`readgaze.splits.check_reader_label` for a label constant within a reader.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

from readgaze.errors import DataError, ParseError
from readgaze.qc import QCLog

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
_COPCO_COLUMNS = {"unique_paragraph_id": pl.String, "participant_id": pl.String, "unique_trial_id": pl.String,
                  "RCS_score": pl.Float64, "dyslexia": pl.Int64, "speech_id": pl.String, "regime": pl.String}
MISSING_RCS_SCORE = -1.0
"""EyeBench's CopCo files write this ``RCS_score`` for a reader without a comprehension-test score."""
LAYOUTS = {"onestop": _COLUMNS, "copco": _COPCO_COLUMNS}
"""The columns of each published layout (see the module docstring)."""


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
        One row per trial, in file order. OneStop layout: ``trial_id`` (= ``unique_trial_id``),
        ``participant_id``, ``item_id`` (``{article_batch}_{article_id}``, the article), ``text_id``
        (= ``unique_paragraph_id``), ``reading_goal`` (``"information_seeking"`` if ``question_preview`` else
        ``"ordinary"``), ``is_correct`` (Boolean), ``repeated_reading`` (Boolean). CopCo layout: ``trial_id``,
        ``participant_id``, ``item_id`` (= ``speech_id``, String), ``text_id`` (= ``unique_paragraph_id``),
        ``speech_id`` (String), ``paragraph_id`` (Int64), ``dyslexia`` (Boolean), ``reading_comprehension_skill``
        (Float64 test score; null where the file has ``-1.0``). Both end with ``fold_index`` (Int32) and the
        published ``split`` and ``regime`` in readgaze's names.

    Raises
    ------
    ParseError
        The file is missing, or its header is neither layout of :data:`LAYOUTS` (the message names the
        columns missing from the nearer one).
    DataError
        A regime name outside :data:`PUBLISHED_REGIMES`, an ``RCS_score`` or ``dyslexia`` that is not constant
        within a reader, a ``dyslexia`` outside 0/1, or a CopCo trial id that is not
        ``{participant_id}_{unique_paragraph_id}`` (the message names the file row).
    """
    path = Path(directory) / "trial_ids" / f"fold_{fold}_trial_ids_by_regime.csv"
    if not path.is_file():
        raise ParseError("published trial table not found", file=path)
    header = pl.read_csv(path, n_rows=0).columns
    layout = "copco" if "RCS_score" in header else "onestop"
    columns = LAYOUTS[layout]
    missing = [c for c in columns if c not in header]
    if missing:
        raise ParseError(f"missing column(s) {missing}; expected the EyeBench trial_ids format ({layout} layout: "
                         f"{list(columns)})", file=path)
    try:
        table = pl.read_csv(path, schema_overrides=columns, infer_schema_length=0)
    except pl.exceptions.PolarsError as error:
        raise ParseError(f"cannot read it as the {layout} layout ({error.__class__.__name__}: "
                         f"{str(error).splitlines()[0]})", file=path) from None
    names = pl.DataFrame({"regime": list(PUBLISHED_REGIMES),
                          "split": [s for s, _ in PUBLISHED_REGIMES.values()],
                          "readgaze_regime": [r for _, r in PUBLISHED_REGIMES.values()]})
    table = table.with_row_index("row", offset=2).join(names, on="regime", how="left", maintain_order="left")
    unknown = table.filter(pl.col("split").is_null())
    if unknown.height:
        raise DataError(f"got regime {unknown['regime'][0]!r}, expected one of {list(PUBLISHED_REGIMES)}",
                        file=path, row=int(unknown["row"][0]), column="regime")
    ends = [pl.lit(fold, pl.Int32).alias("fold_index"), "split", pl.col("readgaze_regime").alias("regime")]
    if layout == "copco":
        return _copco_trials(table, path).select(*_COPCO_OUTPUT, *ends)
    return table.select(
        pl.col("unique_trial_id").alias("trial_id"),
        "participant_id",
        pl.format("{}_{}", "article_batch", "article_id").alias("item_id"),
        pl.col("unique_paragraph_id").alias("text_id"),
        pl.when(pl.col("question_preview")).then(pl.lit("information_seeking")).otherwise(pl.lit("ordinary"))
        .alias("reading_goal"),
        (pl.col("is_correct") == 1).alias("is_correct"),
        (pl.col("repeated_reading_trial") == 1).alias("repeated_reading"),
        *ends,
    )


_COPCO_OUTPUT = ("trial_id", "participant_id", "item_id", "text_id", "speech_id", "paragraph_id", "dyslexia",
                 "reading_comprehension_skill")


def _copco_trials(table: pl.DataFrame, path: Path) -> pl.DataFrame:
    """The CopCo layout's canonical columns, with its row checks (module docstring)."""
    checks = (
        (~pl.col("dyslexia").is_in([0, 1]) | pl.col("dyslexia").is_null(), "dyslexia", "0 or 1"),
        (pl.col("unique_trial_id") != pl.concat_str("participant_id", "unique_paragraph_id", separator="_"),
         "unique_trial_id", "{participant_id}_{unique_paragraph_id}"),
        (~pl.col("unique_paragraph_id").str.starts_with(pl.col("speech_id") + "_")
         | pl.col("unique_paragraph_id").str.split("_").list.last().cast(pl.Int64, strict=False).is_null(),
         "unique_paragraph_id", "{speech_id}_{paragraph_id}"),
        ((pl.col("RCS_score").n_unique().over("participant_id") > 1)
         | (pl.col("dyslexia").n_unique().over("participant_id") > 1), "RCS_score",
         "one RCS_score and one dyslexia value per reader"),
    )
    for bad, column, expected in checks:
        found = table.filter(bad)
        if found.height:
            first = found.row(0, named=True)
            raise DataError(f"got {first[column]!r} (participant {first['participant_id']!r}), expected {expected} "
                            f"({found.height} rows)", file=path, row=int(first["row"]), column=column)
    return table.with_columns(
        pl.col("unique_trial_id").alias("trial_id"),
        pl.col("speech_id").alias("item_id"),
        pl.col("unique_paragraph_id").alias("text_id"),
        pl.col("unique_paragraph_id").str.split("_").list.last().cast(pl.Int64).alias("paragraph_id"),
        (pl.col("dyslexia") == 1).alias("dyslexia"),
        pl.when(pl.col("RCS_score") != MISSING_RCS_SCORE).then(pl.col("RCS_score"))
        .alias("reading_comprehension_skill"),
    )


def compare_with_published(assignment: pl.DataFrame, published: pl.DataFrame, *, file: str | Path | None = None
                           ) -> pl.DataFrame:
    """Check that an assignment gives every trial of a published fold table its published role.

    Parameters
    ----------
    assignment : polars.DataFrame
        ``trial_id``, ``fold_index``, ``split``, ``regime`` (:func:`readgaze.splits.assign_fold` for one or more
        folds, e.g. from the ``items/`` and ``subjects/`` lists of the same folder).
    published : polars.DataFrame
        :func:`read_fold_trial_ids` of the same folds (concatenated).
    file : str or Path, optional
        Named in the error message.

    Returns
    -------
    polars.DataFrame
        One row per (``fold_index``, ``split``, ``regime``) of either side: ``n_published`` and ``n_assigned``
        (Int64, equal), sorted.

    Raises
    ------
    DataError
        A count differs, a published trial is missing from the assignment (or the reverse), or a trial has
        another split or regime; the message gives the first differences and their numbers.
    """
    keys = ["fold_index", "split", "regime"]
    counts = (published.group_by(keys).len("n_published")
              .join(assignment.group_by(keys).len("n_assigned"), on=keys, how="full", coalesce=True)
              .with_columns(pl.col("n_published", "n_assigned").fill_null(0).cast(pl.Int64))
              .sort("fold_index", "split", "regime"))
    joined = published.select("trial_id", *keys).join(
        assignment.select("trial_id", *keys), on=["trial_id", "fold_index"], how="full", coalesce=True,
        suffix="_assigned")
    differ = joined.filter(pl.col("split").ne_missing(pl.col("split_assigned"))
                           | pl.col("regime").ne_missing(pl.col("regime_assigned")))
    wrong_counts = counts.filter(pl.col("n_published") != pl.col("n_assigned"))
    if differ.height or wrong_counts.height:
        problems = []
        if wrong_counts.height:
            problems.append(f"{wrong_counts.height} (fold, split, regime) counts differ, e.g. "
                            f"{wrong_counts.row(0, named=True)}")
        if differ.height:
            problems.append(f"{differ.height} trials have another role (or are on one side only), e.g. "
                            f"{differ.row(0, named=True)}")
        raise DataError("assignment differs from the published fold table: " + "; ".join(problems), file=file)
    return counts


def fold_table_path(directory: str | Path, fold: int) -> Path:
    """``<directory>/trial_ids/fold_{fold}_trial_ids_by_regime.csv`` (it may not exist: OneStop's lists alone)."""
    return Path(directory) / "trial_ids" / f"fold_{fold}_trial_ids_by_regime.csv"


def check_fold_table(assignment: pl.DataFrame, trials: pl.DataFrame, directory: str | Path, fold: int, *,
                     reader_label: str | None = None, qc: QCLog | None = None) -> pl.DataFrame | None:
    """Check one fold's assignment of a task's trials against the folder's published table of that fold.

    The roles come from the folder's ``items/`` and ``subjects/`` lists (:func:`readgaze.splits.assign_fold`); this
    checks that each trial both sides know has exactly its published split and regime, and that the counts per
    (split, regime) are the file's (:func:`compare_with_published`). Trials on one side only are counted in
    ``qc``, not dropped: a published table lists one task's trials (OneStop's: comprehension on ordinary reading),
    and another task of the same folds (the reading goal) keeps its own.

    Parameters
    ----------
    assignment : polars.DataFrame
        ``trial_id``, ``fold_index``, ``split``, ``regime`` of the task's trials in fold ``fold`` (null split:
        used nowhere).
    trials : polars.DataFrame
        The task's trials: ``trial_id``, ``participant_id`` and, with ``reader_label``, that column.
    directory : str or Path
        The fold folder (``items/``, ``subjects/``, ``trial_ids/``).
    fold : int
    reader_label : str, optional
        A column of ``trials`` constant within a reader (a task of level ``reader``: dyslexia, comprehension
        skill): also :func:`readgaze.splits.check_reader_label` (no unseen-reader regime has a training reader).
    qc : QCLog, optional
        Gets the counts of trials on one side only.

    Returns
    -------
    polars.DataFrame or None
        None when the folder has no table for ``fold``; else :func:`compare_with_published`'s counts (one row per
        (``fold_index``, ``split``, ``regime``): ``n_published``, ``n_assigned``, Int64, equal) over the trials both
        sides know.

    Raises
    ------
    DataError
        No task trial is in the table (the trial ids are not EyeBench's), or a trial's role or a count differs
        (naming the file); a reader-level label that varies within a reader.
    LeakageError
        A reader of an unseen-reader regime has training trials in the fold.
    """
    path = fold_table_path(directory, fold)
    if not path.is_file():
        return None
    published = read_fold_trial_ids(directory, fold)
    ours = assignment.filter(pl.col("split").is_not_null())
    in_table = pl.col("trial_id").is_in(published["trial_id"].implode())
    shared = ours.filter(in_table)
    if ours.height and not shared.height:
        raise DataError(f"none of the {ours.height:,} trials of this fold is in the published table (e.g. "
                        f"{ours['trial_id'][0]!r}; the table's ids look like {published['trial_id'][0]!r}): the "
                        f"dataset's trial ids are not the table's", file=path, column="unique_trial_id")
    known = published.filter(pl.col("trial_id").is_in(ours["trial_id"].implode()))
    if qc is not None:
        qc.add("fold", "trials", f"in the published fold table {path.name}, not among the task's trials",
               published.height - known.height, "warning")
        qc.add("fold", "trials", f"not in the published fold table {path.name}: role from the items/subjects lists "
               f"only", ours.height - shared.height, "warning")
    counts = compare_with_published(shared, known, file=path)
    if reader_label is not None:
        from readgaze.splits.reader_level import check_reader_label

        check_reader_label(ours.join(trials.select("trial_id", "participant_id", reader_label), on="trial_id",
                                     how="left"), reader_label)
    return counts
