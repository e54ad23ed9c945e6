"""Tokenisation of a trial's text with the encoder's tokenizer, keeping each word's token span.

EyeBench (Shubi et al., 2025) keeps a paragraph's last tokens: an over-long paragraph loses whole words from its start.
"""

from __future__ import annotations

import numpy as np

from readgaze.errors import ConfigError


def _encode(tokenizer, words: list[str], second: str | None, max_tokens: int,
            max_second_tokens: int | None = None) -> dict[str, np.ndarray]:
    """The text of one trial: ``[CLS] paragraph [SEP] (second [SEP])`` with the paragraph truncated from the left.

    ``second`` is cut to ``max_second_tokens`` tokens (its end goes); the paragraph gets the rest of ``max_tokens``
    and, when longer, loses whole words from its start (EyeBench keeps a paragraph's last tokens).

    Returns ``input_ids`` and ``token_segment`` ``(T,)`` int64 (0 special, 1 paragraph, 2 second segment), each
    paragraph word's half-open token span ``word_token_start``/``word_token_end`` ``(n_words,)`` int64 (``(0, 0)``
    for a cut word), and ``first_word`` (int: the number of words cut from the start).
    Raises :class:`readgaze.errors.ConfigError` when ``max_tokens`` cannot hold the special tokens and ``second``.
    """
    second_words = second.split() if second else None
    n_special = tokenizer.num_special_tokens_to_add(pair=second_words is not None)
    n_second = 0
    if second_words:
        n_second = len(tokenizer(second_words, is_split_into_words=True, add_special_tokens=False)["input_ids"])
        n_second = min(n_second, max_second_tokens or n_second)
    budget = max_tokens - n_special - n_second
    if budget < 0:
        raise ConfigError(f"data.max_text_tokens {max_tokens} cannot hold {n_special} special tokens and the "
                          f"{n_second}-token second segment", column="max_text_tokens")
    token_word = np.array(tokenizer(words, is_split_into_words=True, add_special_tokens=False).word_ids(), np.int64)
    first = _first_kept_word(token_word, budget, len(words))
    enc = tokenizer(words[first:], second_words, is_split_into_words=True, add_special_tokens=True,
                    truncation="only_second" if second_words else False,
                    max_length=n_special + int((token_word >= first).sum()) + n_second)
    word_ids = np.array([-1 if w is None else w + first for w in enc.word_ids()])
    sequence = np.array([-1 if s is None else s for s in enc.sequence_ids()])
    segment = np.where(sequence == 0, 1, np.where(sequence == 1, 2, 0))
    start, end = np.zeros(len(words), np.int64), np.zeros(len(words), np.int64)
    positions = np.flatnonzero(segment == 1)
    ids = word_ids[positions]
    if len(ids):  # else every word was cut
        opens = np.r_[True, ids[1:] != ids[:-1]]
        closes = np.r_[ids[1:] != ids[:-1], True]
        start[ids[opens]] = positions[opens]
        end[ids[closes]] = positions[closes] + 1
    return {"input_ids": np.array(enc["input_ids"], np.int64), "token_segment": segment.astype(np.int64),
            "word_token_start": start, "word_token_end": end, "first_word": first}


def _first_kept_word(token_word: np.ndarray, budget: int, n_words: int) -> int:
    """The first word whose tokens, with all later words', fit in ``budget`` tokens (``n_words``: none fits)."""
    if len(token_word) <= budget:
        return 0
    cut = len(token_word) - budget  # tokens [cut:] fit; move to the next word boundary
    starts = np.flatnonzero(np.r_[True, token_word[1:] != token_word[:-1]])
    later = starts[starts >= cut]
    return int(token_word[later[0]]) if len(later) else n_words
