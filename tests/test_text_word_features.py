"""Word features: length, Zipf frequency (wordfreq) and surprisal from a local causal LM."""

from __future__ import annotations

import math

import polars as pl
import pytest

from readgaze.word_features import add_frequency_zipf, add_surprisal, add_word_features

WORDS = pl.DataFrame({"text_id": "t", "ia_index": [0, 1, 2, 3], "word_index": [0, 1, 2, 2],
                      "word": ["The", "however,", "51-year-", "old"]},
                     schema_overrides={"ia_index": pl.Int32, "word_index": pl.Int32})


def test_zipf_frequency_strips_edge_punctuation():
    from wordfreq import zipf_frequency

    out = add_frequency_zipf(WORDS)
    assert out["frequency_zipf"][0] == zipf_frequency("The", "en")
    assert out["frequency_zipf"][1] == zipf_frequency("however", "en") > 4.0
    assert add_frequency_zipf(pl.DataFrame({"word": ["--"]}))["frequency_zipf"].to_list() == [None]


def test_features_record_what_was_done():
    out, status = add_word_features(WORDS)
    assert out["word_length"].to_list() == [3, 8, 8, 3]
    assert status == {"word_length": "computed", "frequency_zipf": "computed (wordfreq, en)",
                      "surprisal_bits": "skipped: no --surprisal-model given"}
    assert out["surprisal_bits"].null_count() == 4


def _tiny_lm(folder, n_positions=64):
    """A 1-layer GPT-2 with random weights and a character-level tokenizer, saved locally."""
    torch = pytest.importorskip("torch")
    from tokenizers import Regex, Tokenizer, models, pre_tokenizers
    from transformers import GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast

    vocab = {chr(c): c - 32 for c in range(32, 127)} | {"<unk>": 95, "<bos>": 96}
    core = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    core.pre_tokenizer = pre_tokenizers.Split(Regex("."), behavior="isolated")
    tok = PreTrainedTokenizerFast(tokenizer_object=core, unk_token="<unk>", bos_token="<bos>")
    torch.manual_seed(0)
    model = GPT2LMHeadModel(GPT2Config(vocab_size=len(vocab), n_positions=n_positions, n_embd=16, n_layer=1,
                                       n_head=2, bos_token_id=96, eos_token_id=96))
    tok.save_pretrained(folder)
    model.save_pretrained(folder)
    return tok, model.eval(), torch


@pytest.mark.slow
def test_surprisal_sums_token_surprisal_of_each_word(tmp_path):
    tok, model, torch = _tiny_lm(tmp_path)
    out = add_surprisal(WORDS, str(tmp_path))
    ids = [96] + tok("The however, 51-year-old", add_special_tokens=False)["input_ids"]
    with torch.no_grad():
        logp = torch.log_softmax(model(torch.tensor([ids])).logits[0], -1)
    bits = [-float(logp[k - 1, ids[k]]) / math.log(2) for k in range(1, len(ids))]
    # one token per character: "The" = 3, " however," = 9, " 51-year-old" = 12 (both boxes of the split word)
    expected = [sum(bits[:3]), sum(bits[3:12]), sum(bits[12:24])]
    got = out["surprisal_bits"].to_list()
    assert got[0] == pytest.approx(expected[0], rel=1e-5)
    assert got[1] == pytest.approx(expected[1], rel=1e-5)
    assert got[2] == got[3] == pytest.approx(expected[2], rel=1e-5)


@pytest.mark.slow
def test_surprisal_windows_long_texts(tmp_path):
    _tiny_lm(tmp_path, n_positions=16)
    words = pl.DataFrame({"text_id": "t", "ia_index": range(12), "word_index": range(12), "word": ["reading"] * 12},
                         schema_overrides={"ia_index": pl.Int32, "word_index": pl.Int32})
    out = add_surprisal(words, str(tmp_path))  # 1 + 7 + 11 * 8 = 96 tokens > 16 positions
    assert out["surprisal_bits"].null_count() == 0 and (out["surprisal_bits"] > 0).all()
