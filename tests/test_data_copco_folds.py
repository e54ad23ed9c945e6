"""The datamodule on EyeBench's CopCo folds (``--data.fold_files``): every trial plays its published role in the
fold, the counts per regime are the file's, and the reader-level ``dyslexia`` label never has an unseen-regime reader
in training.

The datasets here are the published trial tables (ids, readers, speeches, labels) on a synthetic text and
scanpath: the check is about roles, not gaze."""

from __future__ import annotations

import shutil
from pathlib import Path

import polars as pl
import pytest
from synthetic import write_synthetic_dataset

from readgaze.errors import DataError
from readgaze.models.data import ReadingDataModule
from readgaze.splits import read_fold_trial_ids

pytestmark = pytest.mark.usefixtures("one_torch_thread")
EXCERPT = Path(__file__).parent / "files" / "eyebench_copco" / "folds"
NAMES = [("train", "seen"), ("val", "new_item"), ("val", "new_participant"), ("val", "new_item_participant"),
         ("test", "new_item"), ("test", "new_participant"), ("test", "new_item_participant")]


def _copco_like(folds: Path, out: Path) -> Path:
    """A dataset folder whose trials are every trial of the fold tables (ids, reader, speech, labels), each reading
    the one synthetic text with the synthetic scanpath of the first synthetic trial."""
    synthetic = write_synthetic_dataset(out / "synthetic", n_participants=2, n_items=1, n_words=12)
    published = pl.concat([read_fold_trial_ids(folds, k) for k in range(4)]).unique("trial_id", keep="first")
    words = pl.read_parquet(synthetic / "words.parquet")
    text = words["text_id"][0]
    source = pl.read_parquet(synthetic / "trials.parquet")["trial_id"][0]
    dataset = out / "dataset"
    dataset.mkdir()
    published.select("trial_id", "participant_id", "item_id", "paragraph_id", "dyslexia",
                     "reading_comprehension_skill").with_columns(pl.lit(text).alias("text_id")) \
        .write_parquet(dataset / "trials.parquet")
    words.write_parquet(dataset / "words.parquet")
    ids = published.select("trial_id")
    for table in ("fixations", "word_measures"):
        rows = pl.read_parquet(synthetic / f"{table}.parquet").filter(pl.col("trial_id") == source).drop("trial_id")
        ids.join(rows, how="cross").write_parquet(dataset / f"{table}.parquet")
    return dataset


def _roles(dm: ReadingDataModule) -> dict:
    return {(r["split"], r["regime"]): r["len"] for r in dm.trials.group_by("split", "regime").len().rows(named=True)}


@pytest.fixture(scope="module")
def excerpt_dataset(tmp_path_factory) -> Path:
    return _copco_like(EXCERPT, tmp_path_factory.mktemp("copco_excerpt"))


@pytest.mark.parametrize("fold", [0, 3])
def test_excerpt_folds_give_every_trial_its_published_role(excerpt_dataset, fold):
    dm = ReadingDataModule(str(excerpt_dataset), task="dyslexia", fold=fold, fold_files=str(EXCERPT),
                           split_unit="participant_item", max_text_tokens=64)
    dm.setup("fit")
    published = read_fold_trial_ids(EXCERPT, fold)
    joined = published.select("trial_id", "split", "regime").join(dm.trials.select("trial_id", "split", "regime"),
                                                                   on="trial_id", how="full", suffix="_dm")
    assert joined.height == 26 and joined.null_count().sum_horizontal().item() == 0
    assert (joined["split"] == joined["split_dm"]).all() and (joined["regime"] == joined["regime_dm"]).all()
    counts = dm.published_counts
    assert (counts["n_published"] == counts["n_assigned"]).all() and counts["n_published"].sum() == 26
    if fold == 0:  # tests/test_splits_copco.py: the excerpt's fold-0 counts
        assert _roles(dm) == {("test", "new_item"): 6, ("test", "new_participant"): 2,
                              ("test", "new_item_participant"): 2, ("train", "seen"): 4, ("val", "new_item"): 4,
                              ("val", "new_participant"): 8}
    # dyslexia is the reader's: no reader of an unseen-reader regime has a training trial
    train = set(dm.trials.filter(pl.col("split") == "train")["participant_id"])
    unseen = dm.trials.filter(pl.col("regime").is_in(["new_participant", "new_item_participant"]))
    assert unseen.height and not train & set(unseen["participant_id"])
    assert sorted(dm.trials.group_by("participant_id").agg(pl.col("label").n_unique())["label"].unique()) == [1]


def test_a_role_other_than_the_table_names_the_file(excerpt_dataset, tmp_path):
    folds = tmp_path / "folds"
    shutil.copytree(EXCERPT, folds)
    table = folds / "trial_ids" / "fold_0_trial_ids_by_regime.csv"
    lines = table.read_text().splitlines()
    assert lines[1].endswith(",train_train")  # P27_10365_0: training in fold 0
    table.write_text("\n".join([lines[0], lines[1].replace(",train_train", ",val_seen_subject_unseen_item"),
                                *lines[2:]]) + "\n")
    dm = ReadingDataModule(str(excerpt_dataset), task="dyslexia", fold=0, fold_files=str(folds),
                           split_unit="participant_item", max_text_tokens=64)
    with pytest.raises(DataError, match=r"fold_0_trial_ids_by_regime\.csv.*differs from the published fold table.*"
                                        r"P27_10365_0"):
        dm.setup("fit")


def test_trial_ids_that_are_not_the_tables_are_refused(tmp_path):
    dataset = _copco_like(EXCERPT, tmp_path)
    trials = pl.read_parquet(dataset / "trials.parquet")
    renamed = {"trial_id": pl.col("trial_id").str.replace("_", "-")}
    trials.with_columns(**renamed).write_parquet(dataset / "trials.parquet")
    for table in ("fixations", "word_measures"):
        pl.read_parquet(dataset / f"{table}.parquet").with_columns(**renamed).write_parquet(
            dataset / f"{table}.parquet")
    dm = ReadingDataModule(str(dataset), task="dyslexia", fold=0, fold_files=str(EXCERPT),
                           split_unit="participant_item", max_text_tokens=64)
    with pytest.raises(DataError, match=r"none of the 26 trials.*'P\d\d-.*not the table's"):
        dm.setup("fit")


@pytest.mark.shared_data
def test_real_copco_folds_exact_counts_in_the_datamodule(shared_data, tmp_path):
    """EyeBench's 4 CopCo fold tables (4,782 trials, 57 readers): each fold's roles and counts in the datamodule."""
    folds = shared_data / "copco" / "eyebench" / "folds"
    dataset = _copco_like(folds, tmp_path)
    expected = {0: (1181, 596, 653, 234, 913, 884, 321), 1: (1167, 602, 656, 321, 861, 906, 269),
                2: (1254, 570, 689, 269, 797, 799, 404), 3: (1129, 486, 581, 404, 983, 965, 234)}
    for fold, numbers in expected.items():
        dm = ReadingDataModule(str(dataset), task="dyslexia", fold=fold, fold_files=str(folds),
                               split_unit="participant_item", max_text_tokens=64)
        dm.setup("fit")
        assert _roles(dm) == dict(zip(NAMES, numbers))
        assert dm.published_counts["n_assigned"].to_list() == dm.published_counts["n_published"].to_list()
        assert dm.trials.height == 4782 and dm.trials.unique("participant_id")["label"].sum() == 19
