"""RoBERTEye-W: one gaze vector per word beside the text, fused by the transformer's own self-attention.

Reference: Shubi, O., Meiri, Y., Hadar, C. A., & Berzak, Y. (2024). Fine-grained prediction of reading comprehension
from eye movements. EMNLP 2024, arXiv:2410.04484 (RoBERTa-Eye-W); goal decoding: Shubi et al. (2025), Decoding
reading goals from eye movements, ACL 2025, arXiv:2410.20779; EyeBench ``RoberteyeWord``.

Idea: RoBERTEye-F (:mod:`readgaze.models.roberteye_f`) with the word as the gaze unit instead of the fixation. Each
word of
the paragraph gets one input vector: its reading measures in this trial and its lexical features, projected to the
hidden size by the same MLP (``Linear(n→D/2)–ReLU–Dropout–Linear(D/2→D)``), plus token type 1 and the mean position
embedding of the word's sub-tokens. Self-attention then runs over ``[text tokens; word gaze vectors]`` jointly, and
the head reads ``[CLS]``. The reading order is lost; what remains is how long and how often each word was read.

Inputs: word level (``ReadingBatch.word_features``, ``word_token_start``/``word_token_end``) and the text tokens.
Feature set: the word-level set, :data:`readgaze.features.WORD_FEATURES` (30 numbers: 15 reading measures,
8 lexical
and layout features, 7 missing flags; the published set has 24 eye + 10 word features, 33 numeric). Which published
feature each stands for, and the 12 readgaze lacks (last-run measures, dependency counts, ...):
:data:`readgaze.features.PUBLISHED_FEATURES`.

Sequence, ``<eye>`` separator (initialised from ``</s>``), text and truncation as RoBERTEye-F.

Departures: as RoBERTEye-F (gaze after the text and ``<eye>``, ``<eye>`` a model parameter, truncation at a word
boundary); words cut off by truncation have no row (dropped by :mod:`readgaze.models.data`, counted); the slots are
padded
to the batch's longest paragraph, not to 512.
"""

from __future__ import annotations

import torch

from readgaze.features import WORD_FEATURES
from readgaze.models.data.batch import ReadingBatch
from readgaze.models.roberteye_f import RoBERTEyeF


class RoBERTEyeW(RoBERTEyeF):
    """Text encoder over ``[text tokens; projected word gaze]`` with a classification head on ``[CLS]``.

    Parameters
    ----------
    text_encoder : str
        ``"tiny"``, ``"minilm"``, or a transformers name/path (paper: ``roberta-large``).
    n_word_features : int
        Size of one word vector; linked from the datamodule.
    eye_projection_dropout, freeze_text_encoder, head_dropout, num_classes, learning_rate, weight_decay,
    warmup_ratio, class_weighted_loss, predictions_dir, gaze_word_embedding
        As :class:`readgaze.models.roberteye_f.RoBERTEyeF` (EyeBench: dropout 0.3, GD 0.1; lr swept in {1e-5, 3e-5,
        1e-4}).
    """

    CARD = {  # the registry reads this (readgaze models, the zoo and learns tests): no other file to edit
        "name": "RoBERTEye-W",
        "tasks": ("reading_goal", "comprehension"),
        "paper": "Shubi et al. 2024, EMNLP, arXiv:2410.04484",
        "quick": {"eye_projection_dropout": 0.1, "weight_decay": 0.01},
    }

    def __init__(self, text_encoder: str = "tiny", n_word_features: int = len(WORD_FEATURES),
                 eye_projection_dropout: float = 0.3, freeze_text_encoder: bool = False, head_dropout: float = 0.1,
                 learning_rate: float = 1e-5, weight_decay: float = 0.1, warmup_ratio: float = 0.1,
                 gaze_word_embedding: bool = False, **training) -> None:
        super().__init__(text_encoder, n_word_features, eye_projection_dropout, freeze_text_encoder, head_dropout,
                         learning_rate, weight_decay, warmup_ratio, gaze_word_embedding, **training)
        self.save_hyperparameters()

    def gaze_slots(self, batch: ReadingBatch):
        """One slot per paragraph word: ``word_features`` (B, W, n), its token span and mask (B, W); words cut off
        by truncation (empty span) are masked out."""
        start, end = batch.word_token_start, batch.word_token_end  # (B, W)
        mask = batch.word_mask & (end > start)  # (B, W)
        return batch.word_features, start, torch.where(mask, end, start + 1), mask
