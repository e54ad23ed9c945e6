"""The torch side of the datamodule: one item per trial (numpy slices of the feature matrices) and the collate
that pads a list of trials into a :class:`~readgaze.models.data.batch.ReadingBatch`.
"""

from __future__ import annotations

import numpy as np
import polars as pl
import torch
from torch.utils.data import Dataset

from readgaze.errors import DataError
from readgaze.models.data.batch import OFF_TEXT, REGIMES, ReadingBatch


def _offsets(trial_rows: np.ndarray, n_trials: int) -> np.ndarray:
    """``(n_trials + 1,)`` start offsets of each trial's rows in a frame sorted by trial row."""
    return np.concatenate([[0], np.cumsum(np.bincount(trial_rows, minlength=n_trials))])


class _TrialDataset(Dataset):
    """One item per trial: numpy slices of the feature matrices and the trial's text encoding."""

    def __init__(self, rows: np.ndarray, trials: pl.DataFrame, arrays: dict, tokens: dict) -> None:
        self.rows, self.arrays, self.tokens = rows, arrays, tokens
        self.trial_id = trials["trial_id"].to_list()
        self.label = trials["label"].to_numpy()
        regime_code = {r: i for i, r in enumerate(REGIMES)}
        self.regime = np.array([regime_code[r] for r in trials["regime"].to_list()])

    def __len__(self) -> int:
        return len(self.rows)

    def __getitem__(self, i: int) -> dict:
        row, a = int(self.rows[i]), self.arrays
        w0, w1 = a["word_offsets"][row], a["word_offsets"][row + 1]
        f0, f1 = a["fixation_offsets"][row], a["fixation_offsets"][row + 1]
        enc = self.tokens["encodings"][self.tokens["key"][row]]
        n_words = len(enc["word_token_start"])
        if w1 - w0 != n_words:
            raise DataError(f"trial {self.trial_id[row]}: {w1 - w0} word rows but {n_words} words in its text")
        first = enc["first_word"]  # words cut from the paragraph's start: their rows and fixations go (QC)
        word_index = a["fixation_word_index"][f0:f1]
        keep = (word_index < 0) | (word_index >= first)
        word_index = np.where(word_index[keep] >= 0, word_index[keep] - first, OFF_TEXT)
        ends = enc["word_token_end"][first:]
        if len(ends):  # a fixated word the tokenizer gave no token counts as off text
            word_index = np.where((word_index >= 0) & (ends[np.maximum(word_index, 0)] == 0), OFF_TEXT, word_index)
        return {"trial_id": self.trial_id[row], "label": self.label[row], "regime": self.regime[row],
                "word": a["word"][w0 + first:w1], "fixation": a["fixation"][f0:f1][keep],
                "fixation_word_index": word_index,
                "fixation_word_category": a["fixation_word_category"][f0:f1][keep],
                "fixation_word_is_content": a["fixation_word_is_content"][f0:f1][keep],
                "trial": a["trial"][row], "input_ids": enc["input_ids"], "token_segment": enc["token_segment"],
                "word_token_start": enc["word_token_start"][first:], "word_token_end": enc["word_token_end"][first:]}


def _pad(arrays: list[np.ndarray], value, dtype) -> torch.Tensor:
    """Stack ragged arrays along a new batch axis, right-padded with ``value`` to the longest."""
    longest = max(len(x) for x in arrays)
    out = np.full((len(arrays), longest, *arrays[0].shape[1:]), value, dtype=dtype)
    for i, x in enumerate(arrays):
        out[i, :len(x)] = x
    return torch.from_numpy(out)


def _labels(labels: list) -> torch.Tensor:
    """``(B,)`` int64 class indices, or float32 values when the task is a regression (float labels)."""
    array = np.asarray(labels)
    return torch.as_tensor(array, dtype=torch.float32 if array.dtype.kind == "f" else torch.int64)


def collate(items: list[dict], pad_token_id: int) -> ReadingBatch:
    """Pad a list of trials to the batch's longest text, word and fixation sequence."""
    get = lambda key: [it[key] for it in items]  # noqa: E731
    input_ids = _pad(get("input_ids"), pad_token_id, np.int64)
    return ReadingBatch(
        trial_id=get("trial_id"),
        label=_labels(get("label")),
        regime_index=torch.as_tensor(np.array(get("regime")), dtype=torch.int64),
        input_ids=input_ids,
        attention_mask=_pad([np.ones(len(x), bool) for x in get("input_ids")], False, bool),
        token_segment=_pad(get("token_segment"), 0, np.int64),
        word_token_start=_pad(get("word_token_start"), 0, np.int64),
        word_token_end=_pad(get("word_token_end"), 0, np.int64),
        word_features=_pad(get("word"), 0.0, np.float32),
        word_mask=_pad([np.ones(len(x), bool) for x in get("word")], False, bool),
        fixation_features=_pad(get("fixation"), 0.0, np.float32),
        fixation_mask=_pad([np.ones(len(x), bool) for x in get("fixation")], False, bool),
        fixation_word_index=_pad(get("fixation_word_index"), OFF_TEXT, np.int64),
        fixation_word_category=_pad(get("fixation_word_category"), 0, np.int64),
        fixation_word_is_content=_pad(get("fixation_word_is_content"), 0, np.int64),
        trial_features=torch.as_tensor(np.stack(get("trial")), dtype=torch.float32),
    )
