"""Item and participant folds: make_splits (stratified, blocked, deterministic) and the published fold files."""

from __future__ import annotations

import polars as pl
import pytest

from readgaze.errors import ConfigError, DataError, SchemaError
from readgaze.splits import Splits, make_splits, read_fold_files


def _trials(n_participants: int = 40, n_items: int = 12) -> pl.DataFrame:
    """Participants p00.. alternate goals (constant per participant); item k belongs to batch k % 3."""
    rows = [{"trial_id": f"p{p:02d}-i{i:02d}", "participant_id": f"p{p:02d}", "item_id": f"i{i:02d}",
             "reading_goal": "information_seeking" if p % 2 else "ordinary", "article_batch": i % 3,
             "is_correct": (p + i) % 5 != 0}
            for p in range(n_participants) for i in range(n_items)]
    return pl.DataFrame(rows)


def test_stratified_participant_folds_hold_both_goals_equally():
    splits = make_splits(_trials(), n_folds=4, seed=3, stratify_by="reading_goal")
    goals = (splits.participant_folds.join(_trials().select("participant_id", "reading_goal").unique(),
                                           on="participant_id")
             .group_by("fold", "reading_goal").len().sort("fold", "reading_goal"))
    assert goals["len"].to_list() == [5] * 8  # 20 + 20 participants over 4 folds: 5 of each goal per fold
    assert splits.n_folds == 4


def test_within_block_gives_each_fold_one_item_per_batch():
    """Items nested in batches (participants here are batch-less, so they are one per item)."""
    trials = _trials(n_participants=1).with_columns(pl.col("item_id").alias("participant_id"))
    splits = make_splits(trials, n_folds=4, seed=5, within="article_batch")
    per_fold = (splits.item_folds.join(trials.select("item_id", "article_batch"), on="item_id")
                .group_by("fold").agg(pl.col("article_batch").sort()).sort("fold"))
    assert per_fold["article_batch"].to_list() == [[0, 1, 2]] * 4


def test_within_must_be_constant_per_group():
    with pytest.raises(DataError, match="article_batch is not constant within participant_id"):
        make_splits(_trials(), n_folds=4, within="article_batch")


def test_fold_sizes_differ_by_at_most_one_group():
    splits = make_splits(_trials(n_participants=23, n_items=7), n_folds=5, seed=1)
    sizes = splits.participant_folds.group_by("fold").len()["len"]
    assert sizes.max() - sizes.min() <= 1 and sizes.sum() == 23
    assert sorted(splits.item_folds.group_by("fold").len()["len"].to_list()) == [1, 1, 1, 2, 2]


def test_deterministic_from_seed_and_independent_of_row_order():
    trials = _trials()
    first = make_splits(trials, n_folds=5, seed=7, stratify_by="reading_goal")
    again = make_splits(trials.sample(fraction=1.0, shuffle=True, seed=99), n_folds=5, seed=7,
                        stratify_by="reading_goal")
    other = make_splits(trials, n_folds=5, seed=8, stratify_by="reading_goal")
    assert first.participant_folds.equals(again.participant_folds)
    assert first.item_folds.equals(again.item_folds)
    assert not first.participant_folds.equals(other.participant_folds)


def test_too_many_folds_and_missing_column():
    with pytest.raises(ConfigError, match="only 12 distinct item_id"):
        make_splits(_trials(), n_folds=13)
    with pytest.raises(SchemaError, match=r"\['item_id'\]"):
        make_splits(_trials().drop("item_id"))
    with pytest.raises(ConfigError, match="at least 3"):
        make_splits(_trials(), n_folds=2)


def test_write_then_read_round_trip(tmp_path):
    splits = make_splits(_trials(), n_folds=4, seed=0, stratify_by="reading_goal")
    back = read_fold_files(splits.write(tmp_path / "folds"))
    assert back.n_folds == 4
    assert back.participant_folds.equals(splits.participant_folds)
    assert back.item_folds.equals(splits.item_folds)
    assert (tmp_path / "folds" / "subjects" / "fold_3.csv").read_text().count("\n") == 10


def test_duplicate_id_names_file_and_line(tmp_path):
    for sub in ("items", "subjects"):
        (tmp_path / sub).mkdir()
        for k in range(3):
            (tmp_path / sub / f"fold_{k}.csv").write_text(f"a{k}\nb{k}\n")
    (tmp_path / "items" / "fold_2.csv").write_text("a2\n\nb0\n")
    with pytest.raises(DataError, match=r"fold_2\.csv, row 3: item_id 'b0' is already listed"):
        read_fold_files(tmp_path)


def test_missing_fold_file(tmp_path):
    for sub in ("items", "subjects"):
        (tmp_path / sub).mkdir()
        for k in (0, 1, 3):
            (tmp_path / sub / f"fold_{k}.csv").write_text(f"a{k}\n")
    with pytest.raises(Exception, match="expected fold_0.csv .. fold_K-1.csv"):
        read_fold_files(tmp_path)


def test_splits_reject_an_id_in_two_folds():
    with pytest.raises(DataError, match="more than one fold"):
        Splits(item_folds=pl.DataFrame({"item_id": ["a", "a", "b"], "fold": [0, 1, 2]},
                                       schema_overrides={"fold": pl.Int32}),
               participant_folds=pl.DataFrame({"participant_id": ["x"], "fold": [0]},
                                              schema_overrides={"fold": pl.Int32}), n_folds=3)


def test_published_onestop_folds(shared_data):
    """EyeBench OneStop: 10 folds of 3 articles (one per batch) and 18 participants (REFERENCE.md §3.1)."""
    splits = read_fold_files(shared_data / "onestop_folds")
    assert splits.n_folds == 10
    assert splits.item_folds.filter(pl.col("fold") == 0)["item_id"].to_list() == ["1_1", "2_7", "3_7"]
    assert splits.participant_folds.group_by("fold").len()["len"].to_list() == [18] * 10
    batches = splits.item_folds.with_columns(pl.col("item_id").str.split("_").list.first().alias("batch"))
    assert batches.group_by("fold").agg(pl.col("batch").sort())["batch"].to_list() == [["1", "2", "3"]] * 10
    assert splits.participant_folds.filter(pl.col("participant_id") == "l14_527")["fold"].to_list() == [0]
