"""Layers and helpers that several models share, so that no model file imports another's.

=====================  ==============================================================================================
:data:`AHN_COLUMNS`     the four fixation features of Ahn et al. (AhnRNN, AhnCNN)
:func:`gaze_sequence`   the batch's ``(B, F, 4)`` fixation sequence of :data:`AHN_COLUMNS` and its lengths (AhnRNN,
                        AhnCNN)
:func:`encode_words`    the text encoder's hidden states and each word's pooled sub-tokens (PLM-AS, PLM-AS-RM,
                        Eyettention)
:func:`scanpath_rows`   per-word rows in fixation order (PLM-AS, PLM-AS-RM)
:func:`packed`          a padded sequence packed by its mask's lengths for an RNN (PLM-AS, PLM-AS-RM, Eyettention)
=====================  ==============================================================================================

The text encoder itself (loading, freezing, the classification head) is :mod:`readgaze.models.text_encoder`; the
loss, metrics and optimiser are :class:`readgaze.models.base.ReadingModel`'s.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence

from readgaze.features import FIXATION_FEATURES
from readgaze.kernels import segment_pool
from readgaze.models.data.batch import ReadingBatch

AHN_COLUMNS = ("duration_ms", "pupil", "x_px", "y_px")
"""The four fixation features of Ahn et al. (EyeBench ``CURRENT_FIX_DURATION, PUPIL, X, Y``)."""


def gaze_sequence(batch: ReadingBatch) -> tuple[torch.Tensor, torch.Tensor]:
    """``(B, F, 4)`` float32 of :data:`AHN_COLUMNS` (padding rows 0) and ``(B,)`` int64 true lengths."""
    columns = torch.tensor([FIXATION_FEATURES.index(c) for c in AHN_COLUMNS], device=batch.fixation_features.device)
    x = batch.fixation_features.index_select(-1, columns) * batch.fixation_mask[..., None]  # (B, F, 4)
    return x, batch.fixation_mask.sum(dim=1)


def encode_words(encoder: nn.Module, batch: ReadingBatch, reduce: str, frozen: bool):
    """The encoder's last hidden states ``(B, T, D)`` and each paragraph word's pooled sub-tokens ``(B, W, D)``.

    ``reduce`` is :func:`readgaze.kernels.segment_pool`'s (``"sum"``, ``"mean"``); words cut off by truncation and
    padding
    words are zeros. ``frozen``: run the encoder without a graph.
    """
    with torch.set_grad_enabled(torch.is_grad_enabled() and not frozen):
        text = encoder(input_ids=batch.input_ids, attention_mask=batch.attention_mask.long()).last_hidden_state
    return text, segment_pool(text, batch.token_word_index(), batch.word_mask.shape[1], reduce=reduce)


def scanpath_rows(batch: ReadingBatch, per_word: torch.Tensor, off_text: torch.Tensor | None = None) -> torch.Tensor:
    """``per_word`` ``(B, W, D)`` in fixation order ``(B, F, D)``; off-text fixations get ``off_text`` (or zeros),
    padding fixations zeros."""
    rows = batch.fixated_word_rows(per_word)  # (B, F, D)
    if off_text is None:
        return rows
    off = ((batch.fixation_word_index < 0) & batch.fixation_mask)[..., None].to(rows.dtype)  # (B, F, 1)
    return rows + off * off_text


def packed(sequence: torch.Tensor, mask: torch.Tensor):
    """``sequence`` (B, F, n) packed by the real lengths of ``mask`` (B, F); a trial with none keeps one step."""
    if sequence.shape[1] == 0:
        sequence = sequence.new_zeros(sequence.shape[0], 1, sequence.shape[2])
    lengths = mask.sum(dim=1).clamp(min=1).cpu()
    return pack_padded_sequence(sequence, lengths, batch_first=True, enforce_sorted=False)
