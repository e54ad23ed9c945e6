"""The text sequence the text models read (EyeBench, Shubi et al. 2025): ``"Question: "`` before the comprehension
question only, the question cut to 30 tokens, an over-long paragraph truncated from the *left* with the fixations
on the cut words dropped (counted) and later word indices shifted, and RoBERTEye's ``<eye>`` separator."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
import torch
from synthetic import write_synthetic_dataset

from readgaze.errors import ConfigError
from readgaze.models.data import ReadingDataModule
from readgaze.models.data.batch import OFF_TEXT
from readgaze.models.data.tasks import MAX_QUESTION_TOKENS, QUESTION_PREFIX
from readgaze.models.data.tokenise import _encode
from readgaze.models.roberteye_f import RoBERTEyeF
from readgaze.models.roberteye_w import RoBERTEyeW
from readgaze.models.text_encoder import load_tokenizer

pytestmark = pytest.mark.usefixtures("one_torch_thread")
WORDS = ["the", "quick", "brownfoxes", "jumped", "over", "lazy", "dogs"]


@pytest.fixture(scope="module")
def tokenizer():
    return load_tokenizer("tiny")


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    return write_synthetic_dataset(tmp_path_factory.mktemp("seq"), n_participants=6, n_items=4, n_words=24, seed=2,
                                   off_text_rate=0.1)


@pytest.fixture(scope="module")
def comprehension(dataset) -> ReadingDataModule:
    dm = ReadingDataModule(str(dataset), task="comprehension", n_folds=3, batch_size=8, split_unit="trial")
    dm.setup("fit")
    return dm


def _tokens(tokenizer, enc) -> list[str]:
    return tokenizer.convert_ids_to_tokens(enc["input_ids"].tolist())


def test_paragraph_then_prefixed_question_with_segments_and_word_spans(tokenizer):
    enc = _encode(tokenizer, WORDS[:3], QUESTION_PREFIX + "why not", 40, MAX_QUESTION_TOKENS)
    assert _tokens(tokenizer, enc) == ["[CLS]", "the", "quick", "brown", "##fo", "##xes", "[SEP]",
                                       "question", ":", "why", "not", "[SEP]"]
    assert enc["token_segment"].tolist() == [0, 1, 1, 1, 1, 1, 0, 2, 2, 2, 2, 0]
    assert enc["word_token_start"].tolist() == [1, 2, 3] and enc["word_token_end"].tolist() == [2, 3, 6]
    assert enc["first_word"] == 0
    alone = _encode(tokenizer, WORDS[:3], None, 40)
    assert _tokens(tokenizer, alone) == ["[CLS]", "the", "quick", "brown", "##fo", "##xes", "[SEP]"]


def test_the_question_keeps_its_first_30_tokens(tokenizer):
    question = QUESTION_PREFIX + " ".join(f"w{i}" for i in range(40))  # "w7" is one or more tokens each
    enc = _encode(tokenizer, WORDS, question, 512, MAX_QUESTION_TOKENS)
    kept = [t for t, s in zip(_tokens(tokenizer, enc), enc["token_segment"]) if s == 2]
    full = tokenizer.tokenize(question)
    assert len(full) > MAX_QUESTION_TOKENS and kept == full[:MAX_QUESTION_TOKENS]
    assert (enc["token_segment"] == 1).sum() == 9  # the paragraph is untouched


def test_a_long_paragraph_loses_its_first_words_at_a_word_boundary(tokenizer):
    # 9 paragraph tokens; 8 tokens leave 6 for the paragraph: "brownfoxes" would be split, so it goes too
    enc = _encode(tokenizer, WORDS, None, 8)
    assert _tokens(tokenizer, enc) == ["[CLS]", "jumped", "over", "lazy", "dogs", "[SEP]"]
    assert enc["first_word"] == 3
    assert enc["word_token_start"].tolist() == [0, 0, 0, 1, 2, 3, 4]
    assert enc["word_token_end"].tolist() == [0, 0, 0, 2, 3, 4, 5]
    # with a question the paragraph gets what the question leaves
    enc = _encode(tokenizer, WORDS, QUESTION_PREFIX + "why", 8, MAX_QUESTION_TOKENS)
    assert _tokens(tokenizer, enc) == ["[CLS]", "lazy", "dogs", "[SEP]", "question", ":", "why", "[SEP]"]
    assert enc["first_word"] == 5
    nothing_fits = _encode(tokenizer, WORDS, None, 2)
    assert _tokens(tokenizer, nothing_fits) == ["[CLS]", "[SEP]"] and nothing_fits["first_word"] == len(WORDS)
    with pytest.raises(ConfigError, match="max_text_tokens 4 cannot hold 3 special tokens"):
        _encode(tokenizer, WORDS, QUESTION_PREFIX + "why", 4, MAX_QUESTION_TOKENS)


def test_comprehension_text_has_the_question_prefix_and_the_reading_goal_text_has_no_question(dataset, tokenizer,
                                                                                             comprehension):
    reading_goal = ReadingDataModule(str(dataset), task="reading_goal", n_folds=3, batch_size=8, split_unit="trial")
    reading_goal.setup("fit")
    for dm, expected in ((comprehension, True), (reading_goal, False)):
        batch = next(iter(dm.train_dataloader()))
        trials = pl.read_parquet(dataset / "trials.parquet")
        for b, trial_id in enumerate(batch.trial_id[:5]):
            real = batch.input_ids[b, batch.attention_mask[b]].tolist()
            second = [t for t, s in zip(real, batch.token_segment[b, batch.attention_mask[b]].tolist()) if s == 2]
            if expected:
                question = trials.filter(pl.col("trial_id") == trial_id)["question"][0]
                assert tokenizer.decode(second) == tokenizer.decode(tokenizer.encode(
                    "Question: " + question, add_special_tokens=False))
                assert tokenizer.convert_ids_to_tokens(second[:2]) == ["question", ":"]
            else:
                assert second == [] and real.count(tokenizer.sep_token_id) == 1


def test_left_truncation_drops_and_counts_the_fixations_on_cut_words_and_shifts_the_rest(dataset, tokenizer):
    dm = ReadingDataModule(str(dataset), task="reading_goal", n_folds=3, batch_size=64, split_unit="trial",
                           max_text_tokens=20)
    dm.setup("fit")
    words = pl.read_parquet(dataset / "words.parquet")
    fixations = pl.read_parquet(dataset / "fixations.parquet").sort("trial_id", "fixation_index")
    cut_words = cut_fixations = kept_on_text = 0
    for batch in (b for loader in (dm.train_dataloader(), dm.val_dataloader(), dm.test_dataloader()) for b in loader):
        for b, trial_id in enumerate(batch.trial_id):
            text_id = f"item{trial_id.split('_item')[1]}_p0"
            labels = words.filter(pl.col("text_id") == text_id).sort("word_index")["word"].to_list()
            first = _encode(tokenizer, labels, None, 20)["first_word"]
            assert 0 < first < len(labels)  # 24 words never fit in 18 tokens
            truth = fixations.filter(pl.col("trial_id") == trial_id)["word_index"].to_list()
            kept = [OFF_TEXT if w is None else w - first for w in truth if w is None or w >= first]
            n = len(kept)
            assert batch.fixation_mask[b].sum() == n and batch.fixation_word_index[b, :n].tolist() == kept
            assert batch.word_mask[b].sum() == len(labels) - first
            # shifted word j is the text's word first + j, and its tokens decode to it
            for j in {k for k in kept if k >= 0}:
                tokens = batch.input_ids[b, batch.word_token_start[b, j]:batch.word_token_end[b, j]].tolist()
                assert tokenizer.decode(tokens).replace(" ", "") == labels[first + j]
            cut_words += first
            cut_fixations += sum(w is not None and w < first for w in truth)
            kept_on_text += sum(k >= 0 for k in kept)
    assert cut_fixations > 50 and kept_on_text > 50
    qc = {(r["table"], r["reason"]): r for r in dm.qc_records()}
    words_record = qc[("words", "cut off by max_text_tokens (the paragraph's first words, left truncation)")]
    fixations_record = qc[("fixations", "cut off by max_text_tokens: on a word cut from the paragraph")]
    assert (words_record["count"], words_record["action"]) == (cut_words, "dropped")
    assert (fixations_record["count"], fixations_record["action"]) == (cut_fixations, "dropped")


def test_nothing_is_cut_when_the_text_fits(comprehension):
    counts = [r["count"] for r in comprehension.qc_records() if r["reason"].startswith("cut off by max_text_tokens")]
    assert counts == [0, 0]


@pytest.mark.parametrize("model_class", [RoBERTEyeF, RoBERTEyeW], ids=lambda c: c.__name__)
def test_the_eye_separator_starts_as_the_sep_embedding_and_trains(model_class, comprehension):
    batch = next(iter(comprehension.train_dataloader()))
    torch.manual_seed(0)
    model = model_class(text_encoder="tiny", learning_rate=1e-2)
    sep = model.encoder.embeddings.word_embeddings.weight[load_tokenizer("tiny").sep_token_id]
    torch.testing.assert_close(model.eye_token, sep)
    start = model.eye_token.detach().clone()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
    model.loss(model(batch), batch.label).backward()
    assert model.eye_token.grad is not None and float(model.eye_token.grad.abs().sum()) > 0
    optimizer.step()
    assert float((model.eye_token.detach() - start).abs().max()) > 1e-3
    model.eval()
    with torch.no_grad():  # and the model reads it
        before = model(batch)
        model.eye_token.add_(torch.randn_like(model.eye_token))
        assert not torch.allclose(model(batch), before)

    frozen = model_class(text_encoder="tiny", freeze_text_encoder=True)
    frozen.loss(frozen(batch), batch.label).backward()
    assert not frozen.eye_token.requires_grad and frozen.eye_token.grad is None  # frozen as EyeBench's vocabulary row
    assert np.isfinite(frozen.eye_projection[0].weight.grad.abs().sum().item())
