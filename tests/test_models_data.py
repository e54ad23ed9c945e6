"""ReadingDataModule: alignment of fixations to words and tokens, missing values, scalers, padding."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
import torch
from synthetic import write_synthetic_dataset

from readgaze.features import FIXATION_FEATURES, WORD_FEATURES
from readgaze.models.data import ReadingDataModule
from readgaze.models.data.batch import OFF_TEXT
from readgaze.models.text_encoder import load_tokenizer

pytestmark = pytest.mark.usefixtures("one_torch_thread")


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    return write_synthetic_dataset(tmp_path_factory.mktemp("tiny"), n_participants=6, n_items=6, n_words=24,
                                   seed=1, off_text_rate=0.15)


def _datamodule(path, **kwargs) -> ReadingDataModule:
    dm = ReadingDataModule(str(path), n_folds=3, batch_size=64, **kwargs)
    dm.setup("fit")
    return dm


def _batches(dm: ReadingDataModule):
    return [b for loader in (dm.train_dataloader(), dm.val_dataloader(), dm.test_dataloader()) for b in loader]


def test_every_trial_lands_in_exactly_one_loader(dataset):
    dm = _datamodule(dataset)
    seen = [t for b in _batches(dm) for t in b.trial_id]
    assert sorted(seen) == sorted(pl.read_parquet(dataset / "trials.parquet")["trial_id"].to_list())


def test_off_text_fixations_keep_their_row_and_do_not_shift_later_fixations(dataset):
    dm = _datamodule(dataset)
    tokenizer = load_tokenizer("tiny")
    fixations = pl.read_parquet(dataset / "fixations.parquet").sort("trial_id", "fixation_index")
    words = pl.read_parquet(dataset / "words.parquet")
    checked_after_off_text = 0
    for batch in _batches(dm):
        for b, trial_id in enumerate(batch.trial_id):
            truth = fixations.filter(pl.col("trial_id") == trial_id)
            n = truth.height
            expected = truth["word_index"].fill_null(OFF_TEXT).to_list()
            assert batch.fixation_word_index[b, :n].tolist() == expected
            assert batch.fixation_mask[b].sum().item() == n
            text_id = f"item{trial_id.split('_item')[1]}_p0"
            labels = words.filter(pl.col("text_id") == text_id).sort("word_index")["word"].to_list()
            start, end = batch.fixation_token_band(window=0)
            for i in range(1, n):
                if expected[i - 1] == OFF_TEXT and expected[i] != OFF_TEXT:
                    tokens = batch.input_ids[b, start[b, i]:end[b, i]].tolist()
                    assert tokenizer.decode(tokens).replace(" ", "") == labels[expected[i]]
                    checked_after_off_text += 1
            off = [i for i in range(n) if expected[i] == OFF_TEXT]
            assert (start[b, off] == 0).all() and (end[b, off] == 1).all()
            off_text_column = FIXATION_FEATURES.index("is_off_text")
            assert batch.fixation_features[b, :n, off_text_column].tolist() == [float(e == OFF_TEXT) for e in expected]
    assert checked_after_off_text > 10


def test_word_tokens_decode_to_the_word(dataset):
    dm = _datamodule(dataset)
    tokenizer = load_tokenizer("tiny")
    batch = next(iter(dm.val_dataloader()))
    words = pl.read_parquet(dataset / "words.parquet")
    text_id = f"item{batch.trial_id[0].split('_item')[1]}_p0"
    labels = words.filter(pl.col("text_id") == text_id).sort("word_index")["word"].to_list()
    decoded = [tokenizer.decode(batch.input_ids[0, s:e].tolist()).replace(" ", "")
               for s, e in zip(batch.word_token_start[0].tolist(), batch.word_token_end[0].tolist())]
    assert decoded == labels


def test_missing_values_are_never_filled_from_another_trial(tmp_path, dataset):
    # Trial B's first word is unfixated (null measures); the trial before it fixated that word. After scaling,
    # B's value is 0 with the missing indicator set, whatever the neighbour had.
    measures = pl.read_parquet(dataset / "word_measures.parquet")
    trials = pl.read_parquet(dataset / "trials.parquet").sort("trial_id")
    for name in ("trials", "words", "fixations"):
        pl.read_parquet(dataset / f"{name}.parquet").write_parquet(tmp_path / f"{name}.parquet")
    target = trials["trial_id"][7]
    nulled = ["first_fixation_duration_ms", "gaze_duration_ms", "regression_path_duration_ms"]
    measures = measures.with_columns(
        pl.when((pl.col("trial_id") == target) & (pl.col("word_index") == 0)).then(None).otherwise(pl.col(c))
        .alias(c) for c in nulled).with_columns(
        pl.when((pl.col("trial_id") == trials["trial_id"][6]) & (pl.col("word_index") == 0))
        .then(999.0).otherwise(pl.col(nulled[0])).alias(nulled[0]))
    measures.write_parquet(tmp_path / "word_measures.parquet")
    dm = _datamodule(tmp_path)
    for batch in _batches(dm):
        if target in batch.trial_id:
            b = batch.trial_id.index(target)
            for name in nulled:
                assert batch.word_features[b, 0, WORD_FEATURES.index(name)].item() == 0.0
                assert batch.word_features[b, 0, WORD_FEATURES.index(f"{name}_missing")].item() == 1.0
    # the saccade after a trial's last fixation is missing, not the next trial's first fixation
    last_dx = FIXATION_FEATURES.index("next_saccade_dx_px_missing")
    first_dx = FIXATION_FEATURES.index("previous_saccade_dx_px_missing")
    for batch in _batches(dm):
        n = batch.fixation_mask.sum(dim=1)
        rows = torch.arange(len(batch))
        assert (batch.fixation_features[rows, n - 1, last_dx] == 1).all()
        assert (batch.fixation_features[rows, 0, first_dx] == 1).all()
        assert (batch.fixation_features[rows, 1, first_dx] == 0).all()


def test_absent_optional_columns_are_missing_not_zero(dataset):
    dm = _datamodule(dataset)  # the synthetic folder has no pupil and no surprisal column
    batch = next(iter(dm.train_dataloader()))
    pupil_missing = FIXATION_FEATURES.index("pupil_missing")
    assert (batch.fixation_features[batch.fixation_mask][:, pupil_missing] == 1).all()
    assert (batch.word_features[batch.word_mask][:, WORD_FEATURES.index("surprisal_bits_missing")] == 1).all()


def test_scalers_are_fit_on_the_training_split_only(tmp_path, dataset):
    dm = _datamodule(dataset)
    test_ids = set(dm.trials.filter(pl.col("split") == "test")["trial_id"].to_list())
    for name in ("trials", "words", "word_measures"):
        pl.read_parquet(dataset / f"{name}.parquet").write_parquet(tmp_path / f"{name}.parquet")
    fixations = pl.read_parquet(dataset / "fixations.parquet")
    fixations.with_columns(pl.when(pl.col("trial_id").is_in(list(test_ids))).then(pl.col("duration_ms") * 100)
                           .otherwise(pl.col("duration_ms")).alias("duration_ms")
                           ).write_parquet(tmp_path / "fixations.parquet")
    changed = _datamodule(tmp_path)
    torch.manual_seed(0)
    a = next(iter(dm.val_dataloader()))
    b = next(iter(changed.val_dataloader()))
    assert a.trial_id == b.trial_id
    torch.testing.assert_close(a.fixation_features, b.fixation_features)
    torch.testing.assert_close(a.trial_features, b.trial_features)


def test_batches_are_padded_to_their_longest_sequence(dataset):
    dm = _datamodule(dataset)
    fixations = pl.read_parquet(dataset / "fixations.parquet").group_by("trial_id").len()
    lengths = dict(fixations.iter_rows())
    for batch in _batches(dm):
        assert batch.fixation_features.shape[1] == max(lengths[t] for t in batch.trial_id)
        assert batch.attention_mask.shape[1] == int(batch.attention_mask.sum(dim=1).max())
        assert not batch.fixation_features[~batch.fixation_mask].any()


def test_labels_per_task(dataset):
    trials = pl.read_parquet(dataset / "trials.parquet")
    goal = _datamodule(dataset, task="reading_goal").trials
    expected = dict(zip(trials["trial_id"], (trials["reading_goal"] == "information_seeking").cast(pl.Int64)))
    assert all(expected[t] == y for t, y in goal.select("trial_id", "label").iter_rows())
    comprehension = _datamodule(dataset, task="comprehension").trials
    expected = dict(zip(trials["trial_id"], trials["is_correct"].cast(pl.Int64)))
    assert all(expected[t] == y for t, y in comprehension.select("trial_id", "label").iter_rows())
    question = _datamodule(dataset, task="goal_question")
    assert question.num_classes == 3
    asked = trials.group_by("text_id").agg(pl.col("onestopqa_question_id").unique().sort())
    order = {t: ids for t, ids in asked.iter_rows()}  # the paragraph's questions, by id, over all its trials
    rows = question.trials.select("text_id", "onestopqa_question_id", "label").iter_rows()
    assert all(order[t].index(qid) == y for t, qid, y in rows)
    assert (question.trials["reading_goal"] == "information_seeking").all()


def test_class_counts_are_training_counts(dataset):
    dm = _datamodule(dataset)
    train = dm.trials.filter(pl.col("split") == "train")["label"].to_numpy()
    assert dm.class_counts.tolist() == np.bincount(train, minlength=2).tolist()
