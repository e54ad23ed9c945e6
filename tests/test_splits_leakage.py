"""No leakage, on random trial sets (hypothesis), and the checker catches tampered assignments."""

from __future__ import annotations

import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from readgaze.errors import LeakageError
from readgaze.splits import assign_fold, check_leakage, make_splits


@st.composite
def trial_sets(draw):
    n_participants = draw(st.integers(3, 7))
    n_items = draw(st.integers(3, 7))
    cells = [(p, i) for p in range(n_participants) for i in range(n_items)]
    chosen = draw(st.lists(st.sampled_from(cells), min_size=1, max_size=len(cells), unique=True))
    # every participant and item needs at least one trial so that it exists; add a diagonal
    chosen = sorted(set(chosen) | {(k % n_participants, k % n_items) for k in range(max(n_participants, n_items))})
    trials = pl.DataFrame({"trial_id": [f"t{p}_{i}" for p, i in chosen],
                           "participant_id": [f"p{p}" for p, _ in chosen],
                           "item_id": [f"i{i}" for _, i in chosen],
                           "reading_goal": ["information_seeking" if p % 2 else "ordinary" for p, _ in chosen]})
    n_folds = draw(st.integers(3, min(n_participants, n_items)))
    return trials, n_folds, draw(st.integers(0, 2**16)), draw(st.booleans())


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(trial_sets())
def test_no_participant_or_item_leaks(case):
    trials, n_folds, seed, strict = case
    splits = make_splits(trials, n_folds=n_folds, seed=seed, stratify_by="reading_goal")
    fold_of_p = dict(splits.participant_folds.iter_rows())
    fold_of_i = dict(splits.item_folds.iter_rows())
    for fold in range(n_folds):
        assignment = assign_fold(trials, splits, fold, strict=strict)
        assert assignment.height == trials.height and assignment["trial_id"].n_unique() == trials.height
        rows = assignment.join(trials, on="trial_id").iter_rows(named=True)
        by_split: dict = {"train": [], "val": [], "test": [], None: []}
        for r in rows:
            by_split[r["split"]].append(r)
        train_p = {r["participant_id"] for r in by_split["train"]}
        train_i = {r["item_id"] for r in by_split["train"]}
        held = by_split["val"] + by_split["test"]
        for r in held:
            if r["regime"] in ("new_participant", "new_item_participant"):
                assert r["participant_id"] not in train_p
            if r["regime"] in ("new_item", "new_item_participant"):
                assert r["item_id"] not in train_i
            if r["regime"] == "new_participant":
                assert r["item_id"] not in {i for i, f in fold_of_i.items() if f == (fold + 1) % n_folds}
        test_fold = (fold + 1) % n_folds
        for r in by_split["train"]:
            assert fold_of_p[r["participant_id"]] not in (fold, test_fold)
            assert fold_of_i[r["item_id"]] not in (fold, test_fold)
        for r in by_split["val"]:
            assert fold in (fold_of_p[r["participant_id"]], fold_of_i[r["item_id"]])
            assert test_fold not in (fold_of_p[r["participant_id"]], fold_of_i[r["item_id"]])
        for r in by_split["test"]:
            assert fold_of_p[r["participant_id"]] == test_fold or fold_of_i[r["item_id"]] == test_fold
            if strict:
                assert fold_of_p[r["participant_id"]] != fold and fold_of_i[r["item_id"]] != fold
        if not strict:
            assert not by_split[None], "the default protocol uses every trial"
        else:
            for r in by_split[None]:
                assert {fold_of_p[r["participant_id"]], fold_of_i[r["item_id"]]} == {fold, test_fold}


def _assigned(strict: bool = False) -> pl.DataFrame:
    trials = pl.DataFrame([{"trial_id": f"p{p}-i{i}", "participant_id": f"p{p}", "item_id": f"i{i}"}
                           for p in range(4) for i in range(4)])
    splits = make_splits(trials, n_folds=4, seed=0)
    return assign_fold(trials, splits, 0, strict=strict).join(trials, on="trial_id")


def test_checker_catches_test_participant_moved_into_training():
    assigned = _assigned()
    check_leakage(assigned)  # untouched: passes
    victim = assigned.filter(pl.col("regime") == "new_participant")["trial_id"][0]
    tampered = assigned.with_columns(
        pl.when(pl.col("trial_id") == victim).then(pl.lit("train")).otherwise(pl.col("split")).alias("split"),
        pl.when(pl.col("trial_id") == victim).then(pl.lit("seen")).otherwise(pl.col("regime")).alias("regime"))
    with pytest.raises(LeakageError, match="participant_id that has training trials"):
        check_leakage(tampered)


def test_checker_catches_validation_participant_in_strict_test():
    assigned = _assigned(strict=True)
    check_leakage(assigned, strict=True)
    val_participant = assigned.filter(pl.col("regime") == "new_participant",
                                      pl.col("split") == "val")["participant_id"][0]
    tampered = pl.concat([assigned, assigned.filter(pl.col("regime") == "new_item", pl.col("split") == "test")
                          .head(1).with_columns(pl.lit(val_participant).alias("participant_id"),
                                                pl.lit("extra").alias("trial_id"))])
    check_leakage(tampered)  # allowed by the published protocol
    with pytest.raises(LeakageError, match="strict: 1 test trials have a validation participant"):
        check_leakage(tampered, strict=True)


def test_duplicate_trial_is_leakage():
    trials = pl.DataFrame([{"trial_id": f"p{p}-i{i}", "participant_id": f"p{p}", "item_id": f"i{i}"}
                           for p in range(3) for i in range(3)])
    splits = make_splits(trials, n_folds=3)
    with pytest.raises(LeakageError, match=r"trial_id appears more than once: \['p0-i0'\]"):
        assign_fold(pl.concat([trials, trials.head(1)]), splits, 0)
