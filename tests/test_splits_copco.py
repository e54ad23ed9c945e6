"""EyeBench's CopCo folds read as given: every trial's published role, exact counts, reader-level labels."""

from pathlib import Path

import polars as pl
import pytest

from readgaze.errors import DataError, LeakageError, ParseError
from readgaze.splits import assign_fold, read_fold_files, read_fold_trial_ids
from readgaze.splits.published import compare_with_published
from readgaze.splits.reader_level import check_reader_label

EXCERPT = Path(__file__).parent / "files" / "eyebench_copco" / "folds"


def _published(folder: Path, n_folds: int = 4) -> pl.DataFrame:
    return pl.concat([read_fold_trial_ids(folder, k) for k in range(n_folds)])


def _assigned(folder: Path, published: pl.DataFrame) -> pl.DataFrame:
    splits = read_fold_files(folder)
    return pl.concat([assign_fold(published.filter(pl.col("fold_index") == k), splits, k)
                      for k in range(splits.n_folds)])


def test_copco_layout_columns_and_values():
    trials = read_fold_trial_ids(EXCERPT, 0)
    assert trials.columns == ["trial_id", "participant_id", "item_id", "text_id", "speech_id", "paragraph_id",
                              "dyslexia", "reading_comprehension_skill", "fold_index", "split", "regime"]
    assert trials.height == 26
    first = trials.row(0, named=True)
    assert first == {"trial_id": "P27_10365_0", "participant_id": "P27", "item_id": "10365", "text_id": "10365_0",
                     "speech_id": "10365", "paragraph_id": 0, "dyslexia": True, "reading_comprehension_skill": 3.3,
                     "fold_index": 0, "split": "train", "regime": "seen"}
    readers = trials.group_by("participant_id").agg(pl.col("dyslexia", "reading_comprehension_skill").first())
    skill = dict(readers.select("participant_id", "reading_comprehension_skill").rows())
    assert {p for p, s in skill.items() if s is None} == {"P02", "P03", "P05"}  # RCS_score -1.0 in the file
    assert sorted(readers.filter("dyslexia")["participant_id"]) == ["P23", "P26", "P27"]  # P24: no fold-0 row


def test_copco_excerpt_roles_reproduced_with_counts():
    published = _published(EXCERPT)
    counts = compare_with_published(_assigned(EXCERPT, published), published)
    fold0 = {(r["split"], r["regime"]): r["n_published"] for r in counts.filter(pl.col("fold_index") == 0).rows(
        named=True)}
    assert fold0 == {("test", "new_item"): 6, ("test", "new_participant"): 2, ("test", "new_item_participant"): 2,
                     ("train", "seen"): 4, ("val", "new_item"): 4, ("val", "new_participant"): 8}
    assert counts["n_published"].sum() == 4 * 26


def test_compare_with_published_names_a_changed_role():
    published = _published(EXCERPT)
    assigned = _assigned(EXCERPT, published)
    moved = assigned.with_columns(pl.when((pl.col("trial_id") == "P27_10365_0") & (pl.col("fold_index") == 0))
                                  .then(pl.lit("val")).otherwise(pl.col("split")).alias("split"))
    with pytest.raises(DataError, match=r"2 \(fold, split, regime\) counts differ.*1 trials have another role.*"
                                        r"P27_10365_0"):
        compare_with_published(moved, published)
    dropped = assigned.filter((pl.col("trial_id") != "P27_10365_1") | (pl.col("fold_index") != 0))
    with pytest.raises(DataError, match=r"1 \(fold, split, regime\) counts differ.*'n_published': 4, 'n_assigned': 3"
                                        r".*1 trials have another role"):
        compare_with_published(dropped, published)


def test_reader_label_check_on_excerpt():
    published = _published(EXCERPT)
    seen = check_reader_label(published, "dyslexia")
    unseen = seen.filter(pl.col("regime") != "new_item")
    assert unseen["n_readers_in_train"].sum() == 0 and unseen["n_trials"].sum() > 0
    # a reader-level label leaks through the reader in new_item: its readers are training readers
    assert seen.filter(pl.col("regime") == "new_item")["n_readers_in_train"].sum() > 0
    # put one unseen-reader test trial's reader into training: the check names the reader
    reader = published.filter((pl.col("fold_index") == 0) & (pl.col("regime") == "new_participant")
                              & (pl.col("split") == "test"))["participant_id"][0]
    first = published.filter((pl.col("fold_index") == 0) & (pl.col("participant_id") == reader))["trial_id"][0]
    moved = (pl.col("fold_index") == 0) & (pl.col("trial_id") == first)
    leaky = published.with_columns(pl.when(moved).then(pl.lit("train")).otherwise(pl.col("split")).alias("split"),
                                   pl.when(moved).then(pl.lit("seen")).otherwise(pl.col("regime")).alias("regime"))
    assert leaky.filter((pl.col("participant_id") == reader) & (pl.col("split") == "train")).height > 0
    with pytest.raises(LeakageError, match=rf"fold 0, test new_participant: reader\(s\) \['{reader}'\]"):
        check_reader_label(leaky, "dyslexia")
    varying = published.with_columns(pl.when(pl.col("trial_id") == "P27_10365_0").then(False)
                                     .otherwise(pl.col("dyslexia")).alias("dyslexia"))
    with pytest.raises(DataError, match=r"reader 'P27' has dyslexia values \[False, True\]"):
        check_reader_label(varying, "dyslexia")


def test_copco_row_errors_name_file_row_and_column(tmp_path):
    folder = tmp_path / "folds"
    (folder / "trial_ids").mkdir(parents=True)
    text = (EXCERPT / "trial_ids" / "fold_0_trial_ids_by_regime.csv").read_text().splitlines()
    target = folder / "trial_ids" / "fold_0_trial_ids_by_regime.csv"
    target.write_text("\n".join([*text[:3], text[3].replace(",1,1323,", ",2,1323,"), *text[4:]]) + "\n")
    with pytest.raises(DataError, match=r"row 4, column dyslexia: got 2.*expected 0 or 1"):
        read_fold_trial_ids(folder, 0)
    target.write_text("\n".join([*text[:2], text[2].replace("P27_10365_1", "P27_10365_9"), *text[3:]]) + "\n")
    with pytest.raises(DataError, match=r"row 3, column unique_trial_id: got 'P27_10365_9'"):
        read_fold_trial_ids(folder, 0)
    target.write_text("\n".join([*text[:2], text[2].replace(",3.3,", ",4.1,"), *text[3:]]) + "\n")
    with pytest.raises(DataError, match=r"column RCS_score.*one RCS_score and one dyslexia value per reader"):
        read_fold_trial_ids(folder, 0)
    target.write_text(text[0].replace("speech_id", "speech") + "\n" + "\n".join(text[1:]) + "\n")
    with pytest.raises(ParseError, match=r"missing column\(s\) \['speech_id'\].*copco layout"):
        read_fold_trial_ids(folder, 0)


@pytest.mark.shared_data
def test_copco_published_folds_exact(shared_data):
    """All 4 EyeBench CopCo folds: 4,782 trials each; assign_fold from the item (speech) and subject lists
    gives every trial its published role, and the counts per fold, split and regime are the file's."""
    folder = shared_data / "copco" / "eyebench" / "folds"
    published = _published(folder)
    counts = compare_with_published(_assigned(folder, published), published)
    table = {(r["fold_index"], r["split"], r["regime"]): r["n_assigned"] for r in counts.rows(named=True)}
    names = [("train", "seen"), ("val", "new_item"), ("val", "new_participant"), ("val", "new_item_participant"),
             ("test", "new_item"), ("test", "new_participant"), ("test", "new_item_participant")]
    expected = {0: (1181, 596, 653, 234, 913, 884, 321), 1: (1167, 602, 656, 321, 861, 906, 269),
                2: (1254, 570, 689, 269, 797, 799, 404), 3: (1129, 486, 581, 404, 983, 965, 234)}
    assert table == {(k, *name): n for k, ns in expected.items() for name, n in zip(names, ns)}
    assert published.group_by("fold_index").len().sort("fold_index")["len"].to_list() == [4782] * 4
    readers = published.unique("participant_id")
    assert readers.height == 57 and readers["dyslexia"].sum() == 19
    assert readers["reading_comprehension_skill"].null_count() == 12
    for label in ("dyslexia", "reading_comprehension_skill"):
        held = check_reader_label(published, label).filter(pl.col("regime") != "new_item")
        assert held["n_readers_in_train"].sum() == 0 and held["n_readers"].min() >= 7
