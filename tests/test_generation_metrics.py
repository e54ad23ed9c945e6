"""Each goal-reconstruction metric against a value computed by hand from its definition."""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest

from readgaze import generation_metrics as gm


def test_question_word_classes():
    assert [gm.question_word(q) for q in ["What is it?", "when did they go", "In which year?", "Whom did she call?",
                                          "whose idea was it?", "Is it open?", "", "Why, then?", "HOW come?"]] == [
        "What", "When", "Which", "Whom", "Whose", "Other", "Other", "Why", "How"]
    # "Somewhat" and "showed" contain wh-letters but are not question words
    assert gm.question_word("Somewhat showed who?") == "Who"


def test_question_word_accuracy_by_hand():
    generated = ["what happened to the bridge?", "Who built it?", "Tell me about the river.", "Where is it?"]
    reference = ["What did the bridge do?", "Whom did they meet?", "Describe the river.", "Why is it there?"]
    # What=What, Who!=Whom, Other=Other, Where!=Why  ->  1, 0, 1, 0
    assert gm.question_word_accuracy(generated, reference).tolist() == [1.0, 0.0, 1.0, 0.0]


def test_bleu_by_hand():
    # 1-4-gram precisions 4/5, 3/4, 2/3, 1/2; equal lengths, so no brevity penalty
    value = gm.bleu(["what does the text mean"], ["What does the text say"])[0]
    assert value == pytest.approx((4 / 5 * 3 / 4 * 2 / 3 * 1 / 2) ** 0.25, abs=1e-9)
    # brevity penalty: 3 of 5 reference words, every 1-3-gram right; a 3-word sentence has no 4-grams, so the
    # sentence-level ("effective order") mean runs over n = 1..3: exp(1 - 5/3) * 1
    short = gm.bleu(["what does the"], ["what does the text say"])[0]
    assert short == pytest.approx(math.exp(1 - 5 / 3), abs=1e-9)
    assert gm.bleu(["a b c d"], ["a b c d"])[0] == pytest.approx(1.0)


def test_bertscore_by_hand():
    import torch
    from transformers import AutoModel, AutoTokenizer

    model_path, layer = gm.default_bertscore_model()
    generated, reference = ["who built the old bridge?"], ["what does the text say about the bridge?"]
    value = gm.bertscore_f1(generated, reference)[0]
    tokenizer, model = AutoTokenizer.from_pretrained(model_path), AutoModel.from_pretrained(model_path).eval()

    def embed(text):
        enc = tokenizer(text, return_tensors="pt")
        with torch.no_grad():
            hidden = model(**enc, output_hidden_states=True).hidden_states[layer][0]  # with [CLS] ... [SEP]
        return torch.nn.functional.normalize(hidden, dim=-1)

    similarity = embed(generated[0]) @ embed(reference[0]).T  # (gen tokens, ref tokens) cosines
    # [CLS]/[SEP] are not scored (idf weight 0) but may be the best match of a scored token (bert-score)
    precision = similarity[1:-1].max(1).values.mean()
    recall = similarity[:, 1:-1].max(0).values.mean()
    assert value == pytest.approx(float(2 * precision * recall / (precision + recall)), abs=1e-4)
    assert gm.bertscore_f1(reference, reference)[0] == pytest.approx(1.0, abs=1e-4)


def test_qa_accuracy_skipped_without_model():
    values, reason = gm.qa_accuracy(["p"], ["q?"], ["r?"], [["a", "b"]], model=None)
    assert values is None and "no multiple-choice QA model" in reason
    frame = pl.DataFrame({"generated": ["Who is it?"], "reference": ["Who is it?"]})
    scored, record = gm.score_generations(frame)
    assert scored["qa_accuracy"].to_list() == [None]
    assert record["qa_accuracy"].startswith("skipped")
    assert scored["bleu"][0] == pytest.approx(1.0) and scored["question_word_accuracy"][0] == 1.0
    assert "all-MiniLM-L6-v2" in record["bertscore"] and "layer 6" in record["bertscore"]


def test_aggregate_mean_sem_over_folds():
    scored = pl.DataFrame({"model": ["m"] * 4, "regime": ["new_item", "new_participant"] * 2,
                           "fold_index": [0, 0, 1, 1], "question_word_accuracy": [1.0, 0.0, 1.0, 1.0],
                           "bleu": [0.5, 0.1, 0.3, 0.3], "bertscore_f1": [0.9] * 4, "qa_accuracy": [None] * 4},
                          schema_overrides={"qa_accuracy": pl.Float64})
    table = gm.aggregate(scored)
    row = table.filter(pl.col("regime") == "all").row(0, named=True)
    # fold 0 pooled: (1 + 0) / 2 = 0.5, fold 1: 1.0 -> mean 0.75, SEM std([0.5, 1]) / sqrt(2) = 0.25
    assert row["question_word_accuracy_mean"] == pytest.approx(0.75)
    assert row["question_word_accuracy_sem"] == pytest.approx(np.std([0.5, 1.0], ddof=1) / np.sqrt(2))
    assert row["qa_accuracy_mean"] is None and row["n_trials"] == 4
    assert table["regime"].to_list() == ["new_item", "new_participant", "all"]
    assert "| m | BLEU | 0.400 ± 0.100 |" in gm.results_table(table)
