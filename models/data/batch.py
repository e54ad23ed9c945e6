"""The one batch type every readgaze model takes: :class:`ReadingBatch`.

Legend: B trials in the batch, T text tokens, W words, F fixations (each padded to the batch's longest, never to
a corpus-wide maximum), and the feature counts of :mod:`readgaze.models.data` (``FIXATION_FEATURES``, ``WORD_FEATURES``,
``TRIAL_FEATURES``, each followed by one missing-value indicator per nullable feature).
"""

from __future__ import annotations

from dataclasses import dataclass, fields

import torch

from readgaze.splits.regimes import BATCH_REGIMES

REGIMES = BATCH_REGIMES
"""The regimes in the order of ``ReadingBatch.regime_index`` (:data:`readgaze.splits.regimes.BATCH_REGIMES`)."""

OFF_TEXT = -1
"""``fixation_word_index`` of a fixation on no word (off the text); fixations on words cut off by truncation are
dropped by :mod:`readgaze.models.data` (counted in QC)."""


@dataclass
class ReadingBatch:
    """A batch of trials: text tokens, word-level and fixation-level gaze, trial features and labels.

    Attributes
    ----------
    trial_id : list of str
        ``B`` trial ids (the key into ``trials.parquet``).
    label : torch.Tensor
        ``(B,)`` int64 class index (reading_goal: 1 = information seeking; comprehension: 1 = correct); for a
        regression task ``(B,)`` float32 value in the target's units (e.g. the reading-comprehension skill score).
    regime_index : torch.Tensor
        ``(B,)`` int64 index into :data:`REGIMES` (training trials: 0, "seen").
    input_ids : torch.Tensor
        ``(B, T)`` int64 token ids ``[CLS] paragraph [SEP] (second segment [SEP])``; padding = the tokenizer's pad id.
    attention_mask : torch.Tensor
        ``(B, T)`` bool, True = real token.
    token_segment : torch.Tensor
        ``(B, T)`` int64: 0 special or padding token, 1 paragraph token, 2 second-segment (question) token.
    word_token_start, word_token_end : torch.Tensor
        ``(B, W)`` int64 half-open token span ``[start, end)`` of each word in ``input_ids``; ``(0, 0)`` for padding
        words and for words cut off by truncation.
    word_features : torch.Tensor
        ``(B, W, n_word_features)`` float32, the trial's word measures and the word's lexical features, robust-scaled
        on the training split; missing values are 0 with their indicator column set to 1; padding rows are 0.
    word_mask : torch.Tensor
        ``(B, W)`` bool, True = real word.
    fixation_features : torch.Tensor
        ``(B, F, n_fixation_features)`` float32: the fixation's own features, then the fixated word's word features
        (all missing, indicators set, for an off-text fixation); scaled like ``word_features``; padding rows 0.
    fixation_mask : torch.Tensor
        ``(B, F)`` bool, True = real fixation.
    fixation_word_index : torch.Tensor
        ``(B, F)`` int64 fixated word (0-based), :data:`OFF_TEXT` for an off-text fixation and for padding.
    fixation_word_category : torch.Tensor
        ``(B, F)`` int64 reduced part of speech of the fixated word (1 FUNC, 2 NOUN, 3 VERB, 4 ADJ, 5 UNKNOWN; from
        ``Reduced_POS``, else ``universal_pos``, else word length: :func:`readgaze.features.word_classes`), 0 off
        text/padding.
    fixation_word_is_content : torch.Tensor
        ``(B, F)`` int64: 2 content word, 1 function word, 0 off text/padding.
    trial_features : torch.Tensor
        ``(B, n_trial_features)`` float32 trial-level gaze features (the datamodule's ``trial_feature_set``), scaled
        like ``word_features``.
    """

    trial_id: list[str]
    label: torch.Tensor
    regime_index: torch.Tensor
    input_ids: torch.Tensor
    attention_mask: torch.Tensor
    token_segment: torch.Tensor
    word_token_start: torch.Tensor
    word_token_end: torch.Tensor
    word_features: torch.Tensor
    word_mask: torch.Tensor
    fixation_features: torch.Tensor
    fixation_mask: torch.Tensor
    fixation_word_index: torch.Tensor
    fixation_word_category: torch.Tensor
    fixation_word_is_content: torch.Tensor
    trial_features: torch.Tensor

    def __len__(self) -> int:
        return len(self.trial_id)

    def to(self, device: torch.device | str) -> ReadingBatch:
        """The same batch with every tensor on ``device``."""
        moved = {f.name: getattr(self, f.name) for f in fields(self)}
        return ReadingBatch(**{k: v.to(device) if isinstance(v, torch.Tensor) else v for k, v in moved.items()})

    def token_word_index(self) -> torch.Tensor:
        """``(B, T)`` int64: the paragraph word (0-based) each text token belongs to, -1 for special, padding and
        question tokens. The segment ids :func:`readgaze.kernels.segment_pool` takes to pool sub-tokens into words."""
        token = torch.arange(self.input_ids.shape[1], device=self.input_ids.device)  # (T,)
        inside = ((token >= self.word_token_start[..., None]) & (token < self.word_token_end[..., None])
                  & self.word_mask[..., None])  # (B, W, T)
        return torch.where(inside.any(dim=1), inside.to(torch.int8).argmax(dim=1), -1)

    def fixated_word_rows(self, per_word: torch.Tensor) -> torch.Tensor:
        """``per_word`` ``(B, W, D)`` gathered in scanpath order: ``(B, F, D)``, zeros for off-text and padding
        fixations (and for fixations on words cut off by truncation)."""
        word = self.fixation_word_index  # (B, F)
        index = word.clamp(min=0, max=max(per_word.shape[1] - 1, 0))[..., None].expand(-1, -1, per_word.shape[-1])
        if per_word.shape[1] == 0:  # no word in the batch (all text cut off)
            return per_word.new_zeros(*word.shape, per_word.shape[-1])
        rows = torch.gather(per_word, 1, index)
        return rows * ((word >= 0) & self.fixation_mask)[..., None].to(rows.dtype)

    def fixation_token_band(self, window: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
        """Half-open token range ``[start, end)`` of each fixation's word and its ``window`` neighbours each side.

        Returns two ``(B, F)`` int64 tensors indexing ``input_ids``. The band of fixation ``i`` on word ``w`` runs
        from the first token of word ``max(w - window, 0)`` to the last token of word ``min(w + window, n_words - 1)``
        (words cut off by truncation are skipped). An off-text or padding fixation gets ``(0, 1)``: the first
        token (``[CLS]``) only, so it still attends somewhere but learns nothing about a word.
        """
        word = self.fixation_word_index  # (B, F)
        on_text = word >= 0
        n_words = self.word_mask.sum(dim=1, keepdim=True).clamp(min=1)  # (B, 1)
        left = (word - window).clamp(min=0)
        right = torch.minimum(word + window, n_words - 1).clamp(min=0)
        last_end = torch.cummax(self.word_token_end, dim=1).values  # (B, W): cut-off words keep the last real end
        start = torch.gather(self.word_token_start, 1, left.clamp(max=self.word_token_start.shape[1] - 1))
        end = torch.gather(last_end, 1, right.clamp(max=last_end.shape[1] - 1))
        return torch.where(on_text, start, 0), torch.where(on_text, end, 1)
