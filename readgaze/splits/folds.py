"""Item and participant folds: make them from a trials table, or read the published fold files.

A *fold assignment* puts every item (``item_id``; OneStop: the article, both difficulty levels and all
its paragraphs) and every participant (``participant_id``) into one of K folds, independently. The
regimes of one cross-validation fold are derived from these two partitions by
:func:`readgaze.splits.assign_fold`.

Source: Shubi et al. (2024) and EyeBench (Shubi et al., 2025), fold construction. The lab code runs
``StratifiedGroupKFold`` per article batch; readgaze deals groups round-robin within strata (below),
which gives the same guarantees (group-disjoint folds, each label and block spread evenly) exactly
and without sklearn's empty-fold corner cases.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import polars as pl

from readgaze.errors import ConfigError, DataError, ParseError, SchemaError

GROUP_COLUMNS = ("item_id", "participant_id")


@dataclass(frozen=True, eq=False)
class Splits:
    """Items and participants, each partitioned into ``n_folds`` folds.

    Attributes
    ----------
    item_folds : polars.DataFrame
        ``item_id`` (String, unique), ``fold`` (Int32, 0 .. n_folds-1).
    participant_folds : polars.DataFrame
        ``participant_id`` (String, unique), ``fold`` (Int32, 0 .. n_folds-1).
    n_folds : int
        K, at least 3 (validation, test and at least one training fold).

    Raises
    ------
    DataError
        An id appears twice, or a fold number is outside ``0 .. n_folds-1``.
    """

    item_folds: pl.DataFrame
    participant_folds: pl.DataFrame
    n_folds: int

    def __post_init__(self) -> None:
        if self.n_folds < 3:
            raise ConfigError(f"n_folds: got {self.n_folds}, expected at least 3 (validation, test, training)")
        for frame, key in ((self.item_folds, "item_id"), (self.participant_folds, "participant_id")):
            if frame.columns != [key, "fold"]:
                raise SchemaError(f"{key} folds: got columns {frame.columns}, expected [{key!r}, 'fold']")
            duplicated = frame.filter(pl.col(key).is_duplicated())[key].unique().sort().to_list()
            if duplicated:
                raise DataError(f"{key} in more than one fold: {duplicated[:5]} ({len(duplicated)} ids)")
            outside = frame.filter(~pl.col("fold").is_between(0, self.n_folds - 1))
            if outside.height:
                raise DataError(f"{key} {outside[key][0]!r}: got fold {outside['fold'][0]}, "
                                f"expected 0 .. {self.n_folds - 1}")

    def __repr__(self) -> str:
        return (f"Splits(n_folds={self.n_folds}, {self.item_folds.height} items, "
                f"{self.participant_folds.height} participants)")

    def write(self, directory: str | Path) -> Path:
        """Write the published format: ``items/fold_k.csv`` and ``subjects/fold_k.csv``, headerless.

        Returns the directory. :func:`read_fold_files` reads it back unchanged.
        """
        directory = Path(directory)
        for sub, frame, key in (("items", self.item_folds, "item_id"),
                                ("subjects", self.participant_folds, "participant_id")):
            (directory / sub).mkdir(parents=True, exist_ok=True)
            for k in range(self.n_folds):
                ids = frame.filter(pl.col("fold") == k).sort(key).select(key)
                ids.write_csv(directory / sub / f"fold_{k}.csv", include_header=False)
        return directory


N_FOLDS = 10
"""The protocol's default number of participant and item folds (OneStop's published 10; the configs'
``data.n_folds``)."""


def make_splits(trials: pl.DataFrame | pl.LazyFrame, n_folds: int = N_FOLDS, seed: int = 0, *,
                stratify_by: str | None = None, within: str | None = None) -> Splits:
    """Partition items and participants into ``n_folds`` folds each, deterministically from ``seed``.

    Each group (an item or a participant) gets one *stratum*: its value of ``within`` (e.g.
    ``"article_batch"``; must be constant per group) and its most frequent ``stratify_by`` label (ties:
    the smallest value), e.g. ``stratify_by="reading_goal"``, which is constant per OneStop
    participant. Strata are visited in sorted order; inside each, the groups (sorted by id, then
    shuffled with ``numpy.random.default_rng([seed, 0 or 1])``) are dealt round-robin to folds 0, 1, ...,
    continuing where the previous stratum stopped. Hence fold sizes (in groups) differ by at most one
    overall and within every stratum, so both reading goals appear in every participant fold whenever
    each goal has at least K participants. The result does not depend on the row order of ``trials``.

    Parameters
    ----------
    trials : polars.DataFrame or LazyFrame
        Needs ``item_id`` and ``participant_id`` (String), plus the ``stratify_by``/``within`` columns.
    n_folds : int, default 10
        K (OneStop: 10). Each of items and participants needs at least K groups.
    seed : int, default 0
        The only source of randomness.
    stratify_by : str, optional
        Trial-level label to spread evenly over folds, as the group's majority value.
    within : str, optional
        Block column constant per group (GD's per-batch split): every fold gets an even share of each block.

    Returns
    -------
    Splits

    Raises
    ------
    SchemaError
        A needed column is missing.
    DataError
        Null ids, or ``within`` not constant for a group.
    ConfigError
        Fewer than ``n_folds`` items or participants, or ``n_folds < 3``.
    """
    columns = [*GROUP_COLUMNS, *[c for c in (stratify_by, within) if c is not None]]
    frame = trials.lazy() if isinstance(trials, pl.DataFrame) else trials
    missing = [c for c in columns if c not in frame.collect_schema().names()]
    if missing:
        raise SchemaError(f"trials lack column(s) {missing}; make_splits needs {columns}")
    frame = frame.select(list(dict.fromkeys(columns))).collect()
    for key in GROUP_COLUMNS:
        if frame[key].null_count():
            raise DataError(f"{frame[key].null_count()} trials have a null {key}", column=key)
    folds = {key: _deal(frame, key, n_folds, seed, index, stratify_by, within)
             for index, key in enumerate(GROUP_COLUMNS)}
    return Splits(item_folds=folds["item_id"], participant_folds=folds["participant_id"], n_folds=n_folds)


def _group_strata(frame: pl.DataFrame, key: str, stratify_by: str | None, within: str | None) -> pl.DataFrame:
    """One row per group: ``key``, ``block`` and ``label`` (String; "" when not given)."""
    groups = frame.select(key).unique()
    for name, column in (("block", within), ("label", stratify_by)):
        if column is None:
            groups = groups.with_columns(pl.lit("").alias(name))
            continue
        counts = (frame.group_by(key, column).len()
                  .sort([key, "len", column], descending=[False, True, False], nulls_last=True))
        if name == "block":
            varying = counts.filter(pl.col(key).is_duplicated())[key].unique().sort().to_list()
            if varying:
                raise DataError(f"{within} is not constant within {key} {varying[:5]} ({len(varying)} groups); "
                                f"'within' needs one block per group", column=within)
        top = counts.group_by(key, maintain_order=True).first()
        groups = groups.join(top.select(key, pl.col(column).cast(pl.String).fill_null("").alias(name)), on=key)
    return groups.sort(["block", "label", key])


def _deal(frame: pl.DataFrame, key: str, n_folds: int, seed: int, stream: int,
          stratify_by: str | None, within: str | None) -> pl.DataFrame:
    """Deal the groups of ``key`` to folds round-robin, stratum by stratum (see :func:`make_splits`)."""
    groups = _group_strata(frame, key, stratify_by, within)
    if groups.height < n_folds:
        raise ConfigError(f"n_folds: got {n_folds}, but there are only {groups.height} distinct {key} values")
    rng = np.random.default_rng([seed, stream])
    ordered: list[str] = []
    for stratum in groups.partition_by(["block", "label"], maintain_order=True):
        ids = stratum[key].to_list()
        ordered.extend(ids[i] for i in rng.permutation(len(ids)))
    fold = np.arange(len(ordered)) % n_folds
    return pl.DataFrame({key: ordered, "fold": fold}, schema={key: pl.String, "fold": pl.Int32}).sort(key)


def read_fold_files(directory: str | Path) -> Splits:
    """Read published fold files: ``items/fold_k.csv`` and ``subjects/fold_k.csv``, k = 0 .. K-1.

    The EyeBench format (its repository's ``data/OneStop/folds_metadata/``): headerless, one id per
    line; items are ``{article_batch}_{article_id}`` (e.g. ``1_10``), subjects are participant ids.
    Blank lines are ignored. K is the number of ``items/fold_*.csv`` files.

    Returns
    -------
    Splits

    Raises
    ------
    ParseError
        A folder is missing, or the fold numbers are not 0 .. K-1, or the two folders disagree on K.
    DataError
        An id appears twice (the message names the file and its line).
    """
    directory = Path(directory)
    frames = {}
    for sub, key in (("items", "item_id"), ("subjects", "participant_id")):
        files = sorted((directory / sub).glob("fold_*.csv"), key=lambda p: p.stem)
        numbers = sorted(int(p.stem.removeprefix("fold_")) for p in files
                         if p.stem.removeprefix("fold_").isdigit())
        if not numbers or numbers != list(range(len(numbers))):
            raise ParseError(f"expected fold_0.csv .. fold_K-1.csv, found {[p.name for p in files]}",
                             file=directory / sub)
        frames[key] = _read_fold_folder(directory / sub, key, len(numbers))
    n_items = frames["item_id"]["fold"].max() + 1
    n_participants = frames["participant_id"]["fold"].max() + 1
    if n_items != n_participants:
        raise ParseError(f"items/ has {n_items} folds but subjects/ has {n_participants}", file=directory)
    return Splits(item_folds=frames["item_id"], participant_folds=frames["participant_id"], n_folds=int(n_items))


def _read_fold_folder(folder: Path, key: str, n_folds: int) -> pl.DataFrame:
    parts = []
    for k in range(n_folds):
        path = folder / f"fold_{k}.csv"
        text = path.read_text(encoding="utf-8").splitlines()
        ids = pl.DataFrame({key: [line.strip() for line in text], "line": range(1, len(text) + 1)},
                           schema={key: pl.String, "line": pl.Int64})
        parts.append(ids.filter(pl.col(key) != "").with_columns(pl.lit(k, pl.Int32).alias("fold"),
                                                                  pl.lit(path.name).alias("file")))
    table = pl.concat(parts)
    repeats = table.filter(pl.int_range(pl.len()).over(key) > 0)  # second and later listings, in file order
    if repeats.height:
        first = repeats.row(0, named=True)
        raise DataError(f"{key} {first[key]!r} is already listed in an earlier line or fold "
                        f"({repeats[key].n_unique()} duplicated ids)", file=folder / first["file"], row=first["line"])
    return table.select(key, "fold").sort(key)
