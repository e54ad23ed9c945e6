"""Regimes of one fold: by hand on a 3 x 3 design, and trial for trial against the published OneStop files."""

from __future__ import annotations

import polars as pl
import pytest

from readgaze.errors import ConfigError, DataError
from readgaze.splits import Splits, assign_fold, read_fold_files, read_fold_trial_ids

# participant p_k and item i_k are in fold k; every participant reads every item
PARTICIPANTS = ["p0", "p1", "p2"]
ITEMS = ["i0", "i1", "i2"]


@pytest.fixture
def design() -> tuple[pl.DataFrame, Splits]:
    trials = pl.DataFrame([{"trial_id": f"{p}-{i}", "participant_id": p, "item_id": i}
                           for p in PARTICIPANTS for i in ITEMS])
    splits = Splits(item_folds=pl.DataFrame({"item_id": ITEMS, "fold": [0, 1, 2]}, schema_overrides={"fold": pl.Int32}),
                    participant_folds=pl.DataFrame({"participant_id": PARTICIPANTS, "fold": [0, 1, 2]},
                                                   schema_overrides={"fold": pl.Int32}),
                    n_folds=3)
    return trials, splits


def _as_dict(assignment: pl.DataFrame) -> dict[str, tuple]:
    return {r["trial_id"]: (r["split"], r["regime"]) for r in assignment.iter_rows(named=True)}


def test_fold_0_by_hand(design):
    """Fold 0: validation = fold 0, test = fold 1, train = fold 2 (REFERENCE.md §3.2)."""
    trials, splits = design
    expected = {
        "p2-i2": ("train", "seen"),
        "p2-i0": ("val", "new_item"), "p0-i2": ("val", "new_participant"), "p0-i0": ("val", "new_item_participant"),
        "p2-i1": ("test", "new_item"), "p0-i1": ("test", "new_item"),          # validation participant, test item
        "p1-i2": ("test", "new_participant"), "p1-i0": ("test", "new_participant"),  # test participant, val item
        "p1-i1": ("test", "new_item_participant"),
    }
    assignment = assign_fold(trials, splits, 0)
    assert _as_dict(assignment) == expected
    assert assignment.columns == ["trial_id", "fold_index", "split", "regime"]
    assert assignment["trial_id"].to_list() == trials["trial_id"].to_list()
    assert assignment["fold_index"].unique().to_list() == [0]


def test_fold_0_strict_by_hand(design):
    trials, splits = design
    result = _as_dict(assign_fold(trials, splits, 0, strict=True))
    assert result["p0-i1"] == (None, None)
    assert result["p1-i0"] == (None, None)
    assert result["p2-i1"] == ("test", "new_item")
    assert result["p1-i2"] == ("test", "new_participant")
    assert result["p1-i1"] == ("test", "new_item_participant")
    assert sum(v == (None, None) for v in result.values()) == 2


def test_last_fold_wraps_test_to_fold_0(design):
    trials, splits = design
    result = _as_dict(assign_fold(trials, splits, 2))  # val = 2, test = 0, train = 1
    assert result["p1-i1"] == ("train", "seen")
    assert result["p0-i0"] == ("test", "new_item_participant")
    assert result["p2-i2"] == ("val", "new_item_participant")
    assert result["p1-i0"] == ("test", "new_item")


def test_fold_out_of_range(design):
    trials, splits = design
    with pytest.raises(ConfigError, match="fold: got 3"):
        assign_fold(trials, splits, 3)


def test_unknown_participant_is_named(design):
    trials, splits = design
    extra = pl.concat([trials, pl.DataFrame({"trial_id": ["x"], "participant_id": ["p9"], "item_id": ["i0"]})])
    with pytest.raises(DataError, match=r"participant_id value\(s\) in no fold, e.g. \['p9'\]"):
        assign_fold(extra, splits, 0)


def test_published_onestop_regimes_reproduced(shared_data):
    """All 10 EyeBench OneStop folds: split and regime equal the published table for all 9,718 trials."""
    folds = shared_data / "onestop_folds"
    splits = read_fold_files(folds)
    for fold in range(10):
        published = read_fold_trial_ids(folds, fold)
        ours = assign_fold(published.drop("split", "regime"), splits, fold)
        joined = published.join(ours, on="trial_id", suffix="_ours", how="full")
        assert joined.height == 9718
        differ = joined.filter((pl.col("split") != pl.col("split_ours")) | (pl.col("regime") != pl.col("regime_ours"))
                               | pl.col("split_ours").is_null())
        assert differ.height == 0, f"fold {fold}: {differ.head(3)}"


def test_published_fold_0_sizes(shared_data):
    """Fold 0 sizes from the onestop_folds README; strict drops S_val x I_te and S_te x I_val."""
    folds = shared_data / "onestop_folds"
    splits = read_fold_files(folds)
    trials = read_fold_trial_ids(folds, 0)
    counts = {(r["split"], r["regime"]): r["len"]
              for r in assign_fold(trials, splits, 0).group_by("split", "regime").len().iter_rows(named=True)}
    assert counts == {("train", "seen"): 5855, ("val", "new_item"): 960, ("val", "new_participant"): 732,
                      ("val", "new_item_participant"): 120, ("test", "new_item"): 1080,
                      ("test", "new_participant"): 851, ("test", "new_item_participant"): 120}
    strict = assign_fold(trials, splits, 0, strict=True)
    val_participants = splits.participant_folds.filter(pl.col("fold") == 0)["participant_id"]
    val_items = splits.item_folds.filter(pl.col("fold") == 0)["item_id"]
    test_items = splits.item_folds.filter(pl.col("fold") == 1)["item_id"]
    test_participants = splits.participant_folds.filter(pl.col("fold") == 1)["participant_id"]
    dropped = trials.filter((pl.col("participant_id").is_in(val_participants.implode())
                             & pl.col("item_id").is_in(test_items.implode()))
                            | (pl.col("participant_id").is_in(test_participants.implode())
                               & pl.col("item_id").is_in(val_items.implode())))
    assert dropped.height == 240
    assert sorted(strict.filter(pl.col("split").is_null())["trial_id"]) == sorted(dropped["trial_id"])
    assert strict.filter(pl.col("split") == "test").group_by("regime").len().sort("regime").rows() == [
        ("new_item", 1080 - 120), ("new_item_participant", 120), ("new_participant", 851 - 120)]
