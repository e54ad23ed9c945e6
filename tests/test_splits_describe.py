"""describe(): the label-per-participant fact that decides the headline regimes, and regime sizes."""

from __future__ import annotations

import polars as pl

from readgaze.splits import assign_fold, describe, make_splits, read_fold_files, read_fold_trial_ids


def _trials() -> pl.DataFrame:
    return pl.DataFrame([{"trial_id": f"p{p}-i{i}", "participant_id": f"p{p}", "item_id": f"i{i}",
                          "reading_goal": "information_seeking" if p < 2 else "ordinary", "is_correct": i != p}
                         for p in range(4) for i in range(3)])


def test_goal_constant_per_participant_makes_new_participant_the_headline():
    description = describe(_trials())
    assert description.label_constant_per_participant is True
    assert description.label_constant_per_item is False
    assert description.headline_regimes == ("new_participant", "new_item_participant")
    assert "constant within each of the 4 participants" in description.notes[0]
    assert (description.n_trials, description.n_participants, description.n_items) == (12, 4, 3)


def test_varying_label_keeps_all_regimes():
    description = describe(_trials(), label="is_correct")
    assert description.label_constant_per_participant is False
    assert description.headline_regimes == ("new_item", "new_participant", "new_item_participant")
    assert description.notes == ()


def test_missing_or_single_valued_label():
    assert describe(_trials().drop("reading_goal")).label_constant_per_participant is None
    single = describe(_trials().with_columns(pl.lit("ordinary").alias("reading_goal")))
    assert single.n_label_values == 1 and "1 distinct value" in single.notes[0]


def test_regime_counts_over_folds():
    trials = _trials()
    splits = make_splits(trials, n_folds=3, seed=0)
    assignment = pl.concat([assign_fold(trials, splits, k) for k in range(3)])
    description = describe(trials, assignment)
    counts = description.regime_counts
    assert counts.group_by("fold_index").agg(pl.col("n_trials").sum())["n_trials"].to_list() == [12, 12, 12]
    assert "| train | seen |" in description.to_markdown()


def test_published_fold_0_seen_side_without_training(shared_data):
    """Default protocol: validation participants on test items and test participants on validation items are
    on the 'seen' side of a test regime without any training trial; strict removes exactly those."""
    folds = shared_data / "onestop_folds"
    splits = read_fold_files(folds)
    trials = read_fold_trial_ids(folds, 0)
    raw = pl.read_csv(folds / "trial_ids" / "fold_0_trial_ids_by_regime.csv")
    val_subjects = pl.read_csv(folds / "subjects" / "fold_0.csv", has_header=False, new_columns=["s"])["s"]
    expected = raw.filter((pl.col("regime") == "test_seen_subject_unseen_item")
                          & pl.col("participant_id").is_in(val_subjects.implode())).height
    val_items = ["1_1", "2_7", "3_7"]  # items/fold_0.csv
    expected += raw.filter((pl.col("regime") == "test_unseen_subject_seen_item")
                           & pl.format("{}_{}", "article_batch", "article_id").is_in(val_items)).height
    default = describe(trials, assign_fold(trials, splits, 0), label="is_correct")
    strict = describe(trials, assign_fold(trials, splits, 0, strict=True), label="is_correct")
    assert default.n_seen_side_untrained == expected == 240
    assert (strict.n_seen_side_untrained, strict.n_unused) == (0, 240)
