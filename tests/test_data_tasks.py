"""Task definitions of the datamodule: reading regimes, published fold files, goal-selection roles, QC at model time."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import polars as pl
import pytest
from synthetic import write_synthetic_dataset

from readgaze.errors import ConfigError
from readgaze.models.data import ReadingDataModule
from readgaze.models.data.tasks import _goal_question_trials
from readgaze.qc import QCLog
from readgaze.splits import make_splits, read_fold_trial_ids

pytestmark = pytest.mark.usefixtures("one_torch_thread")


@pytest.fixture(scope="module")
def dataset(tmp_path_factory) -> Path:
    return write_synthetic_dataset(tmp_path_factory.mktemp("data"), n_participants=6, n_items=6, n_words=16)


# ---- comprehension: ordinary reading by default (EyeBench OneStop_RC), each regime on request ----
@pytest.mark.parametrize("regime, goals", [(None, {"ordinary"}), ("ordinary", {"ordinary"}),
                                           ("information_seeking", {"information_seeking"}),
                                           ("all", {"ordinary", "information_seeking"})])
def test_comprehension_keeps_the_reading_regime(dataset, regime, goals):
    dm = ReadingDataModule(str(dataset), task="comprehension", n_folds=3, reading_regime=regime)
    trials = dm._task_trials()
    assert set(trials["reading_goal"]) == goals
    assert trials.height == 18 * len(goals)  # 3 of 6 participants per goal x 6 items
    left_out = [r["count"] for r in dm.qc.records if "other reading goal" in r["reason"]]
    assert left_out == ([] if regime == "all" else [18])
    assert dm.effective_reading_regime == (regime or "ordinary")


def test_reading_regime_is_checked(dataset):
    with pytest.raises(ConfigError, match="reading_regime"):
        ReadingDataModule(str(dataset), task="comprehension", reading_regime="skimming")


# ---- published fold files: the datamodule's regimes are EyeBench's per-fold trial tables ----
@pytest.fixture(scope="module")
def prepared(shared_data, tmp_path_factory) -> Path:
    """``readgaze prep onestop`` on the OneStop sample (2 participants, 24 information-seeking trials)."""
    from readgaze.cli import main as readgaze_main

    sample = shared_data / "onestop_sample"
    out = tmp_path_factory.mktemp("onestop") / "prepared"
    assert readgaze_main(["prep", "onestop", "--fixation-report", str(sample / "fixations.csv"), "--ia-report",
                          str(sample / "ia.csv"), "--out", str(out), "--quiet"]) == 0
    return out


@pytest.fixture(scope="module")
def published_dataset(shared_data, prepared) -> Path:
    """The published OneStop_RC trials (9,718) on a text of the prepared OneStop sample (labels and ids only)."""
    words = pl.read_parquet(prepared / "words.parquet")
    text = words["text_id"][0]
    trials = read_fold_trial_ids(shared_data / "onestop_folds", 0)
    out = prepared.parent / "published"
    out.mkdir()
    trials.select("trial_id", "participant_id", "item_id", "reading_goal", "is_correct",
                  "repeated_reading").with_columns(
        pl.lit(text).alias("text_id"), pl.lit("What is it about?").alias("question"),
        pl.lit(False).alias("practice")).write_parquet(out / "trials.parquet")
    words.filter(pl.col("text_id") == text).write_parquet(out / "words.parquet")
    # one real scanpath (on that text) for 300 of the trials: enough training fixations to fit the scalers
    fixations = pl.read_parquet(prepared / "fixations.parquet")
    sample_trial = pl.read_parquet(prepared / "trials.parquet").filter(pl.col("text_id") == text)["trial_id"][0]
    scanpath = fixations.filter(pl.col("trial_id") == sample_trial)
    pl.concat([scanpath.with_columns(pl.lit(t).alias("trial_id")) for t in trials["trial_id"].gather_every(32)]) \
        .write_parquet(out / "fixations.parquet")
    pl.read_parquet(prepared / "word_measures.parquet").head(0).write_parquet(out / "word_measures.parquet")
    return out


@pytest.mark.slow
@pytest.mark.parametrize("fold", [0, 7])
def test_fold_files_reproduce_the_published_trial_tables(published_dataset, shared_data, fold):
    folds = shared_data / "onestop_folds"
    dm = ReadingDataModule(str(published_dataset), task="comprehension", fold=fold, fold_files=str(folds),
                           split_unit="participant_item", max_text_tokens=128)
    dm.setup("fit")
    published = read_fold_trial_ids(folds, fold).select("trial_id", "split", "regime")
    mine = dm.trials.select("trial_id", "split", "regime")
    assert mine.height == published.height == 9718  # ordinary reading, first reading: every published trial
    joined = published.join(mine, on="trial_id", how="left", suffix="_readgaze")
    assert (joined["split"] == joined["split_readgaze"]).all()
    assert (joined["regime"] == joined["regime_readgaze"]).all()
    assert dm.trials["label"].sum() == 7890  # 81.2 % correct
    assert {len(dm._datasets[s]) for s in ("train",)} == {published.filter(pl.col("split") == "train").height}


def test_split_within_deals_each_block_evenly(dataset, tmp_path):
    trials = pl.read_parquet(dataset / "trials.parquet")
    block = {f"s{p:02d}": p % 2 for p in range(6)}
    item_block = {f"item{i:02d}": i % 2 for i in range(6)}
    kept = trials.filter(pl.col("participant_id").replace_strict(block) == pl.col("item_id").replace_strict(item_block))
    kept = kept.with_columns(pl.col("item_id").replace_strict(item_block).alias("article_batch"))
    out = tmp_path / "blocked"
    out.mkdir()
    kept.write_parquet(out / "trials.parquet")
    for name in ("words", "fixations", "word_measures"):
        pl.read_parquet(dataset / f"{name}.parquet").write_parquet(out / f"{name}.parquet")
    dm = ReadingDataModule(str(out), task="reading_goal", n_folds=3, split_within="article_batch",
                           split_unit="participant_item")
    assigned = dm._assignment(dm._task_trials())
    expected = make_splits(kept, n_folds=3, seed=0, stratify_by="reading_goal", within="article_batch")
    item_fold = dict(expected.item_folds.iter_rows())
    # every fold holds one item of each block (3 folds x 2 blocks x 1 item)
    per_fold = expected.item_folds.with_columns(pl.col("item_id").replace_strict(item_block).alias("block"))
    assert per_fold.group_by("fold", "block").len()["len"].to_list() == [1] * 6
    test = assigned.filter(pl.col("regime") == "new_item_participant").join(kept, on="trial_id")
    assert test["item_id"].map_elements(item_fold.get, return_dtype=pl.Int64).is_in([0, 1]).all()
    with pytest.raises(ConfigError, match="split_within"):
        ReadingDataModule(str(dataset), task="reading_goal", n_folds=3, split_within="no_such_column")._assignment(
            dm._task_trials())


# ---- goal selection: the question's role, the same in every layout version of a paragraph ----
def test_goal_question_roles_from_onestopqa_on_the_prepared_sample(prepared, shared_data):
    dm = ReadingDataModule(str(prepared), task="goal_question", split_unit="trial", n_folds=3,
                           questions=str(shared_data / "onestop_texts" / "onestop_qa.json"))
    trials = dm._task_trials()
    assert dm.num_classes == 3 and trials.height == 24  # every sample trial matched (it has no question ids)
    assert [r["count"] for r in dm.qc.records if "OneStopQA" in r["reason"]] == [0]
    roles = dict(zip(trials["trial_id"], trials["label"]))
    # 2_1 paragraph 4: q_ind 0 is the lonely question; 2_2 paragraph 2: q_ind 1 is (OneStopQA references)
    assert roles["l37_1129_2_1_Adv_4_r0"] == 0 and roles["l37_1129_2_2_Adv_2_r0"] == 0
    assert roles["l37_1129_2_1_Adv_3_r0"] == 2 and roles["l37_1129_2_1_Adv_5_r0"] == 1
    assert sorted(trials["label"].value_counts().sort("label")["count"]) == [6, 8, 10]
    first = trials.filter(pl.col("trial_id") == "l37_1129_2_1_Adv_4_r0")["candidate_questions"][0]
    assert first.startswith(trials.filter(pl.col("trial_id") == "l37_1129_2_1_Adv_4_r0")["question"][0].strip())


def test_goal_question_labels_are_roles_stable_across_layout_versions():
    # one paragraph in two layout versions (text ids differ); q1 is the lonely question (same_critical_span 0),
    # q0 and q2 share a span. Version B has no trial with q0, which shifted every label of a dense rank.
    rows = [("a1", "v_A", 0, 1), ("a2", "v_A", 1, 0), ("a3", "v_A", 2, 2),
            ("b2", "v_B", 1, 0), ("b3", "v_B", 2, 2), ("o1", "v_B", 0, 1)]
    trials = pl.DataFrame({"trial_id": [r[0] for r in rows], "text_id": [r[1] for r in rows],
                           "onestopqa_question_id": [r[2] for r in rows], "same_critical_span": [r[3] for r in rows],
                           "item_id": "1_1", "paragraph_id": 3, "question": [f"question {r[2]}" for r in rows],
                           "reading_goal": ["information_seeking"] * 5 + ["ordinary"]})

    class Holder:
        qc, questions = QCLog(), None

    labelled = _goal_question_trials(trials, Holder())
    roles = dict(zip(labelled["trial_id"], labelled["label"]))
    assert roles == {"a1": 1, "a2": 0, "a3": 2, "b2": 0, "b3": 2, "o1": None}  # lonely = 0, coupled 1, 2
    assert labelled["candidate_questions"].unique().to_list() == ["question 1 question 0 question 2"]
    assert [r["count"] for r in Holder.qc.records if "structure" in r["reason"]] == [0]


def test_goal_question_without_span_structure_falls_back_to_the_question_rank_and_says_so(dataset):
    dm = ReadingDataModule(str(dataset), task="goal_question", n_folds=3)
    trials = dm._task_trials()
    assert dm.num_classes == 3 and set(trials["label"]) <= {0, 1, 2}
    assert set(trials["reading_goal"]) == {"information_seeking"}
    fallback = [r for r in dm.qc.records if "no lonely/coupled structure" in r["reason"]]
    assert fallback[0]["count"] == 6  # every synthetic paragraph has three distinct spans


# ---- QC at model time ----
def test_missing_feature_column_warns_once_naming_the_column_and_prep_option(dataset, tmp_path, caplog):
    out = tmp_path / "nosurprisal"
    out.mkdir()
    for name in ("trials", "fixations", "word_measures"):
        pl.read_parquet(dataset / f"{name}.parquet").write_parquet(out / f"{name}.parquet")
    words = pl.read_parquet(dataset / "words.parquet")
    words.drop([c for c in ("surprisal_bits",) if c in words.columns]).write_parquet(out / "words.parquet")
    dm = ReadingDataModule(str(out), task="reading_goal", n_folds=3)
    with caplog.at_level(logging.WARNING, logger="readgaze.models.data"):
        dm.setup("fit")
    messages = [r.getMessage() for r in caplog.records if "surprisal_bits" in r.getMessage()]
    assert len(messages) == 1 and "--surprisal-model" in messages[0]
    path = dm.write_qc(tmp_path / "run")
    record = json.loads(path.read_text())
    assert record["task"] == "reading_goal" and record["split_unit"] == "participant_item"
    assert any(r["reason"] == "missing feature column surprisal_bits" and r["count"] == 36 for r in record["records"])


def test_comprehension_on_information_seeking_only_data_names_the_reading_regime(prepared):
    """The OneStop sample is all information seeking: comprehension's default regime (ordinary) would leave no
    trial; the error says so and names the option, not a fold-count error further down."""
    dm = ReadingDataModule(str(prepared), task="comprehension", split_unit="trial", n_folds=3)
    with pytest.raises(ConfigError, match=r"all 24 labelled trials have reading_goal information_seeking; pass "
                                          r"--data.reading_regime all"):
        dm._task_trials()
    assert ReadingDataModule(str(prepared), task="comprehension", split_unit="trial", n_folds=3,
                             reading_regime="all")._task_trials().height == 24
