"""The train / validation / test regimes of one cross-validation fold, with a leakage check.

For fold ``i`` of K (EyeBench, Shubi et al., 2025, ``FoldSplitter.get_fold_indices``): the validation
participants and items are fold ``i`` (S_val, I_val), the test ones fold ``(i + 1) mod K`` (S_te, I_te),
and the other K-2 folds are training (S_tr, I_tr). A trial by participant s on item t goes to

===========================  ======================  =============================
split / regime               default (as published)  ``strict=True``
===========================  ======================  =============================
train / seen                 S_tr x I_tr             S_tr x I_tr
val / new_item               S_tr x I_val            S_tr x I_val
val / new_participant        S_val x I_tr            S_val x I_tr
val / new_item_participant   S_val x I_val           S_val x I_val
test / new_item              (S_tr + S_val) x I_te   S_tr x I_te
test / new_participant       S_te x (I_tr + I_val)   S_te x I_tr
test / new_item_participant  S_te x I_te             S_te x I_te
(none: split null)           --                      S_val x I_te and S_te x I_val
===========================  ======================  =============================

By default every trial lands in exactly one cell, and the published EyeBench OneStop files are
reproduced trial for trial. There, the "seen" side of a test regime includes the validation fold's
participants (new item) or items (new participant), which training never saw; they were only used for
model selection. ``strict=True`` drops those trials from the fold (split and regime null), so in every
test regime the "seen" participant or item is one of the training folds.

"Seen" is a statement about folds: a training-fold participant with no trial on a training item is
still on the seen side. :func:`readgaze.splits.describe` counts such trials.
"""

from __future__ import annotations

import polars as pl

from readgaze.errors import ConfigError, DataError, LeakageError, SchemaError
from readgaze.splits.folds import Splits
from readgaze.splits.regimes import REGIMES, UNSEEN_ITEM, UNSEEN_PARTICIPANT, fold_roles, regime_expr

SPLITS = ("train", "val", "test")
ASSIGNMENT_SCHEMA = {"trial_id": pl.String, "fold_index": pl.Int32, "split": pl.String, "regime": pl.String}


def assign_fold(trials: pl.DataFrame | pl.LazyFrame, splits: Splits, fold: int, strict: bool = False) -> pl.DataFrame:
    """Give every trial its split and regime for cross-validation fold ``fold``.

    Parameters
    ----------
    trials : polars.DataFrame or LazyFrame
        ``trial_id``, ``participant_id``, ``item_id`` (String); other columns are ignored.
    splits : Splits
        Item and participant folds (:func:`make_splits` or :func:`read_fold_files`).
    fold : int
        0 .. K-1: the validation fold; the test fold is ``(fold + 1) % K``.
    strict : bool, default False
        Drop validation-fold participants and items from the test regimes' seen side (module docstring).

    Returns
    -------
    polars.DataFrame
        One row per trial, in input order: ``trial_id`` (String), ``fold_index`` (Int32), ``split``
        (``"train"``, ``"val"``, ``"test"``, or null when the trial is used nowhere in this fold) and
        ``regime`` (``"seen"`` for train; ``"new_item"``, ``"new_participant"``, ``"new_item_participant"``
        for val and test; null with split).

    Raises
    ------
    SchemaError
        A needed column is missing.
    ConfigError
        ``fold`` outside 0 .. K-1.
    DataError
        A participant or item of ``trials`` is in no fold.
    LeakageError
        A trial id appears twice, or the check of :func:`check_leakage` fails.

    Examples
    --------
    Fold 0 of 3: validation = fold 0, test = fold 1 (item b, participant y), train = fold 2 (c, z).

    >>> import polars as pl
    >>> from readgaze.splits import Splits, assign_fold
    >>> splits = Splits(
    ...     item_folds=pl.DataFrame({"item_id": ["a", "b", "c"], "fold": [0, 1, 2]},
    ...                             schema_overrides={"fold": pl.Int32}),
    ...     participant_folds=pl.DataFrame({"participant_id": ["x", "y", "z"], "fold": [0, 1, 2]},
    ...                                    schema_overrides={"fold": pl.Int32}),
    ...     n_folds=3)
    >>> trials = pl.DataFrame({"trial_id": ["z-c", "z-b", "y-c", "y-b"], "participant_id": ["z", "z", "y", "y"],
    ...                        "item_id": ["c", "b", "c", "b"]})
    >>> for row in assign_fold(trials, splits, fold=0).select("trial_id", "split", "regime").rows():
    ...     print(row)
    ('z-c', 'train', 'seen')
    ('z-b', 'test', 'new_item')
    ('y-c', 'test', 'new_participant')
    ('y-b', 'test', 'new_item_participant')
    """
    if not 0 <= fold < splits.n_folds:
        raise ConfigError(f"fold: got {fold}, expected 0 .. {splits.n_folds - 1}")
    frame = _with_folds(trials, splits)
    val, test = fold_roles(fold, splits.n_folds)
    p_fold, i_fold = pl.col("participant_fold"), pl.col("item_fold")
    p_test, i_test, p_val, i_val = p_fold == test, i_fold == test, p_fold == val, i_fold == val
    unused = (p_val & i_test) | (p_test & i_val) if strict else pl.lit(False)
    split = (pl.when(unused).then(None)
             .when(p_test | i_test).then(pl.lit("test"))
             .when(p_val | i_val).then(pl.lit("val"))
             .otherwise(pl.lit("train")))
    regime = (pl.when(unused).then(None)
              .when(p_test | i_test).then(regime_expr(p_test, i_test))
              .when(p_val | i_val).then(regime_expr(p_val, i_val))
              .otherwise(pl.lit("seen")))
    assigned = frame.with_columns(pl.lit(fold, pl.Int32).alias("fold_index"), split.alias("split"),
                                  regime.alias("regime"))
    check_leakage(assigned, strict=strict)
    return assigned.select(list(ASSIGNMENT_SCHEMA))


def _with_folds(trials: pl.DataFrame | pl.LazyFrame, splits: Splits) -> pl.DataFrame:
    """Trials with ``participant_fold`` and ``item_fold``; raises on unknown ids or duplicate trials."""
    frame = trials.lazy() if isinstance(trials, pl.DataFrame) else trials
    needed = ["trial_id", "participant_id", "item_id"]
    missing = [c for c in needed if c not in frame.collect_schema().names()]
    if missing:
        raise SchemaError(f"trials lack column(s) {missing}; assign_fold needs {needed}")
    frame = (frame.select(needed)
             .join(splits.participant_folds.lazy().rename({"fold": "participant_fold"}),
                   on="participant_id", how="left", maintain_order="left")
             .join(splits.item_folds.lazy().rename({"fold": "item_fold"}),
                   on="item_id", how="left", maintain_order="left")
             .collect())
    duplicated = frame.filter(pl.col("trial_id").is_duplicated())["trial_id"].unique().sort().to_list()
    if duplicated:
        raise LeakageError(f"trial_id appears more than once: {duplicated[:5]} ({len(duplicated)} ids); "
                           f"a trial may sit in one split of a fold only", column="trial_id")
    problems = []
    for key, fold_column in (("participant_id", "participant_fold"), ("item_id", "item_fold")):
        unknown = frame.filter(pl.col(fold_column).is_null())[key].unique().sort(nulls_last=True).to_list()
        if unknown:
            problems.append(f"{len(unknown)} {key} value(s) in no fold, e.g. {unknown[:5]}")
    if problems:
        raise DataError("; ".join(problems) + "; every trial's participant and item need a fold")
    return frame


def check_leakage(assigned: pl.DataFrame, *, strict: bool = False) -> None:
    """Verify a fold's assignment from its rows alone; raise :class:`LeakageError` on any violation.

    ``assigned`` has ``trial_id``, ``participant_id``, ``item_id``, ``split`` and ``regime``. Checked,
    independently of how the regimes were computed:

    * every ``trial_id`` appears once; train rows have regime ``seen``, val/test rows one of
      :data:`REGIMES`, and a null split goes with a null regime;
    * no participant of an unseen-participant regime (val or test) has a training trial, and no item of
      an unseen-item regime has one;
    * validation and test hold out different participants and different items;
    * with ``strict``: no test trial has a validation participant or a validation item.

    Raises
    ------
    LeakageError
        Naming the rule, the number of trials and up to five offending ids.
    """
    problems: list[str] = []
    if assigned["trial_id"].is_duplicated().any():
        problems.append("a trial_id appears more than once")
    bad_pairing = assigned.filter(
        ((pl.col("split") == "train") & (pl.col("regime") != "seen"))
        | (pl.col("split").is_in(["val", "test"]) & ~pl.col("regime").is_in(list(REGIMES)))
        | (pl.col("split").is_null() != pl.col("regime").is_null())
        | (pl.col("split").is_not_null() & ~pl.col("split").is_in(list(SPLITS))))
    if bad_pairing.height:
        problems.append(f"{bad_pairing.height} trials have an invalid split/regime pair, "
                        f"e.g. {bad_pairing.select('trial_id', 'split', 'regime').row(0)}")
    train = assigned.filter(pl.col("split") == "train")
    for key, unseen in (("participant_id", UNSEEN_PARTICIPANT), ("item_id", UNSEEN_ITEM)):
        held = assigned.filter(pl.col("split").is_in(["val", "test"]) & pl.col("regime").is_in(list(unseen)))
        leaked = held.filter(pl.col(key).is_in(train[key].implode()))
        if leaked.height:
            problems.append(f"{leaked.height} val/test trials in {list(unseen)} have a {key} that has training "
                            f"trials: {leaked[key].unique().sort().to_list()[:5]}")
        val_ids = held.filter(pl.col("split") == "val")[key]
        both = held.filter((pl.col("split") == "test") & pl.col(key).is_in(val_ids.implode()))
        if both.height:
            problems.append(f"{key} held out by both validation and test: {both[key].unique().sort().to_list()[:5]}")
    if strict:
        val = assigned.filter(pl.col("split") == "val")
        val_participants = val.filter(pl.col("regime").is_in(list(UNSEEN_PARTICIPANT)))["participant_id"]
        val_items = val.filter(pl.col("regime").is_in(list(UNSEEN_ITEM)))["item_id"]
        mixed = assigned.filter((pl.col("split") == "test")
                                & (pl.col("participant_id").is_in(val_participants.implode())
                                   | pl.col("item_id").is_in(val_items.implode())))
        if mixed.height:
            problems.append(f"strict: {mixed.height} test trials have a validation participant or item, "
                            f"e.g. {mixed['trial_id'][0]!r}")
    if problems:
        raise LeakageError("; ".join(problems))
