"""Word features: length, Zipf frequency (wordfreq) and, given a local causal LM, surprisal.

Existing source columns (OneStop's ``word_length``, ``gpt2_surprisal``, ...) are kept; a canonical
column that is already present is not recomputed.
"""

from __future__ import annotations

import math
import re

import polars as pl

_EDGE_PUNCT = re.compile(r"^\W+|\W+$")


def word_length() -> pl.Expr:
    """Number of characters of the label as shown (punctuation included), Int32."""
    return pl.col("word").str.len_chars().cast(pl.Int32).alias("word_length")


def add_frequency_zipf(words: pl.DataFrame, *, language: str = "en") -> pl.DataFrame:
    """Add ``frequency_zipf`` (Float64, Zipf scale: log10 of frequency per billion words).

    Looks up each distinct label once in ``wordfreq.zipf_frequency`` after stripping leading and
    trailing punctuation (``"however,"`` → ``however``); 0.0 means not in wordfreq's list, null
    means the label holds no letters or digits. Speer (2022), wordfreq, doi:10.5281/zenodo.7199437.
    """
    from wordfreq import zipf_frequency

    labels = words["word"].drop_nulls().unique().sort().to_list()
    stripped = [_EDGE_PUNCT.sub("", w) for w in labels]
    values = [zipf_frequency(s, language) if s else None for s in stripped]
    table = pl.DataFrame({"word": labels, "frequency_zipf": values}, schema={"word": pl.String,
                                                                           "frequency_zipf": pl.Float64})
    return words.drop("frequency_zipf", strict=False).join(table, on="word", how="left", maintain_order="left")


def add_surprisal(words: pl.DataFrame, model_path: str) -> pl.DataFrame:
    """Add ``surprisal_bits``: each word's surprisal under a local Hugging Face causal LM, in bits.

    The text's words (one per ``word_index``, boxes of a split word joined) are fed in order, each
    but the first preceded by a space; a word's surprisal is the sum of its tokens'
    ``-log2 p(token | left context)``. The first token is conditioned on the model's BOS token when
    it has one, else it gets null. Texts longer than the model's context are cut into windows.
    ``transformers`` and ``torch`` are imported inside this function only.

    Raises
    ------
    ConfigError
        When ``model_path`` is not a loadable local model.
    """
    import os

    import numpy as np

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    try:
        import torch  # with transformers, only here: readgaze itself never needs torch
        from transformers import AutoModelForCausalLM, AutoTokenizer
        tok = AutoTokenizer.from_pretrained(model_path, local_files_only=True)
        model = AutoModelForCausalLM.from_pretrained(model_path, local_files_only=True).eval()
    except (OSError, ValueError, ImportError) as e:
        from readgaze.errors import ConfigError
        raise ConfigError(f"surprisal model {model_path!r} cannot be loaded offline: {e}") from None
    texts = (words.sort("text_id", "ia_index").group_by("text_id", "word_index", maintain_order=True)
             .agg(pl.col("word").str.join("")).group_by("text_id", maintain_order=True)
             .agg("word_index", "word"))
    limit = int(getattr(model.config, "n_positions", None) or getattr(model.config, "max_position_embeddings", 1024))
    rows = []
    for text_id, idx, labels in texts.iter_rows():  # one step per text, not per row
        enc = [tok(w if i == 0 else " " + w, add_special_tokens=False)["input_ids"] for i, w in enumerate(labels)]
        bos = [tok.bos_token_id] if tok.bos_token_id is not None else []
        ids = np.array(bos + [t for e in enc for t in e], dtype=np.int64)
        logp = np.full(len(ids), np.nan)  # logp[k] = log p(ids[k] | ids[:k]), natural log
        for start in range(1, len(ids), max(limit - 1, 1)):
            lo = max(start - 1, 0)
            chunk = ids[lo: start + limit - 1]
            with torch.no_grad():
                z = model(input_ids=torch.from_numpy(chunk[None])).logits[0].float().numpy()
            z = z - z.max(-1, keepdims=True)
            lsm = z - np.log(np.exp(z).sum(-1, keepdims=True))
            logp[lo + 1: lo + len(chunk)] = lsm[np.arange(len(chunk) - 1), chunk[1:]]
        pos = len(bos)
        for i, e in zip(idx, enc):
            part = logp[pos: pos + len(e)]
            rows.append((text_id, i, None if not len(e) or np.isnan(part).any() else -float(part.sum()) / math.log(2)))
            pos += len(e)
    table = pl.DataFrame(rows, schema={"text_id": pl.String, "word_index": pl.Int32, "surprisal_bits": pl.Float64},
                         orient="row")
    return words.drop("surprisal_bits", strict=False).join(table, on=["text_id", "word_index"], how="left",
                                                           maintain_order="left")


def add_word_features(words: pl.DataFrame, *, language: str = "en",
                      surprisal_model: str | None = None) -> tuple[pl.DataFrame, dict]:
    """Add ``word_length``, ``frequency_zipf`` and (with a model path) ``surprisal_bits``.

    Returns
    -------
    (polars.DataFrame, dict)
        The words and ``{feature: "computed" | "kept from source" | "skipped: <why>"}`` for the manifest.
    """
    status = {}
    if "word_length" in words.columns:
        status["word_length"] = "kept from source"
    else:
        words, status["word_length"] = words.with_columns(word_length()), "computed"
    if "frequency_zipf" in words.columns:
        status["frequency_zipf"] = "kept from source"
    else:
        words, status["frequency_zipf"] = add_frequency_zipf(words,
                                                             language=language), f"computed (wordfreq, {language})"
    if surprisal_model:
        words, status["surprisal_bits"] = add_surprisal(words, surprisal_model), f"computed ({surprisal_model})"
    elif "surprisal_bits" in words.columns:
        status["surprisal_bits"] = "kept from source"
    else:
        words = words.with_columns(pl.lit(None, pl.Float64).alias("surprisal_bits"))
        status["surprisal_bits"] = "skipped: no --surprisal-model given"
    return words, status
