"""PostFusion-Eye: a fixation CNN whose outputs attend to the text tokens of the fixated word, then pooled.

Reference: Shubi, O., Meiri, Y., Hadar, C. A., & Berzak, Y. (2024). Fine-grained prediction of reading comprehension
from eye movements. EMNLP 2024, arXiv:2410.04484 (PostFusion-Eye); EyeBench ``PostFusion`` (Shubi et al., 2025).

Idea: the text and the scanpath are encoded separately, a transformer for the text and a 1-D CNN for the fixation
sequence, and fused late. Each encoded fixation attends (one head, :func:`readgaze.kernels.cross_attention`) to the
tokens of
the word it lands on and ``window`` words either side; the result is concatenated to the fixation's encoding. The
fused fixations are then pooled by a second attention whose query is the mean question embedding (when the text has
a second segment) or the mean fused fixation (paragraph only), and a two-layer head classifies.

Inputs: fixation level (``fixation_features``, ``fixation_word_index``) and the text tokens.

Departures and fixes:
- The EyeBench mask turned the 0/1 "allowed" matrix into all-True rows (``+= 1; .bool()``), masking every text
  token, so the cross-attention output was 0 + bias (EyeBench ``post_fusion_model.shared_step``). Here the band is
  explicit and tested to
  admit the fixated word's tokens and nothing outside the window.
- Off-text fixations keep their row (no drop-then-index shift as in EyeBench ``get_text_features``) and attend to
``[CLS]`` only; the intended
  EyeBench mask let every fixation also see ``[CLS]`` (a band is contiguous, so on-text fixations do not here).
- The query of the pooling attention is chosen per trial from the data (question present or not), not per task.
- Text as EyeBench, built by :mod:`readgaze.models.data` for every model: ``[CLS] P </s></s> "Question: " + Q </s>`` for
  comprehension (question at most 30 tokens), ``[CLS] P </s>`` for the reading goal; an over-long paragraph loses
  its first words (at a word boundary; EyeBench cuts tokens), and the fixations on them are dropped and counted.
- Optimiser: AdamW with betas (0.9, 0.98), eps 1e-6, as EyeBench's RoBERTa models (taken to hold for its
  RoBERTa-based PostFusion too).

Feature set: the fixation-level set, :data:`readgaze.features.FIXATION_FEATURES` (54 numbers; see
:mod:`readgaze.models.roberteye_f` and :data:`readgaze.features.PUBLISHED_FEATURES` for what each stands
for).
"""

from __future__ import annotations

import torch
from torch import nn

from readgaze.features import FIXATION_FEATURES
from readgaze.kernels import cross_attention
from readgaze.models.base import ReadingModel
from readgaze.models.data.batch import ReadingBatch
from readgaze.models.text_encoder import load_encoder


class PostFusionEye(ReadingModel):
    """Text transformer ⊕ fixation CNN, fused by banded fixation→token cross-attention.

    Parameters
    ----------
    text_encoder : str
        ``"tiny"``, ``"minilm"``, or a transformers name/path (paper: ``roberta-large``).
    n_fixation_features : int
        Size of one fixation vector; linked from the datamodule.
    window : int
        Words on each side of the fixated word that a fixation may attend to (EyeBench: 1, "neighbours").
    eye_projection_dropout : float
        Dropout after the fixation CNN (EyeBench 0.1).
    cross_attention_dropout : float
        Dropout on the attention probabilities, training only (EyeBench 0.1).
    freeze_text_encoder : bool
        Keep the text transformer fixed.
    num_classes, learning_rate, weight_decay, warmup_ratio, class_weighted_loss, predictions_dir
        See :class:`readgaze.models.base.ReadingModel`.
    """

    CARD = {  # the registry reads this (readgaze models, the zoo and learns tests): no other file to edit
        "name": "PostFusion-Eye",
        "tasks": ("reading_goal", "comprehension"),
        "paper": "Shubi et al. 2024, EMNLP, arXiv:2410.04484",
        "quick": {"weight_decay": 0.01},
    }

    adam_betas, adam_eps = (0.9, 0.98), 1e-6  # EyeBench base_roberta

    def __init__(self, text_encoder: str = "tiny", n_fixation_features: int = len(FIXATION_FEATURES), window: int = 1,
                 eye_projection_dropout: float = 0.1, cross_attention_dropout: float = 0.1,
                 freeze_text_encoder: bool = False, learning_rate: float = 1e-5, weight_decay: float = 0.1,
                 warmup_ratio: float = 0.1, **training) -> None:
        super().__init__(learning_rate=learning_rate, weight_decay=weight_decay, warmup_ratio=warmup_ratio, **training)
        self.save_hyperparameters()
        self.window, self.cross_attention_dropout = window, cross_attention_dropout
        self.encoder = load_encoder(text_encoder, freeze=freeze_text_encoder)
        d = self.encoder.config.hidden_size
        self.fixation_cnn = FixationCNN(n_fixation_features, d, eye_projection_dropout)
        self.fixation_to_text = BandedAttention(query_dim=d // 2, key_dim=d, out_dim=d // 2)
        self.project_to_text_dim = nn.Linear(d // 2 + d // 2, d)
        self.pool = BandedAttention(query_dim=d, key_dim=d, out_dim=d)
        self.head = nn.Sequential(nn.Linear(d, d // 2), nn.ReLU(), nn.Linear(d // 2, self.num_classes))

    def forward(self, batch: ReadingBatch) -> torch.Tensor:
        """Logits ``(B, num_classes)``.

        Legend: B batch, T tokens, F fixations, D hidden size::

            input_ids ─► encoder ─► text (B,T,D) ───────────────────────────┐ keys/values
            fixation_features ─► CNN ─► fix (B,F,D/2) ─► attend to own word ─┴─► (B,F,D/2)
                                         └──────────── concat ───────────────► fused (B,F,D) ─► Linear ─► eye_text
            query = mean question tokens (or mean eye_text) ─► attend over eye_text ─► (B,D) ─► head ─► logits
        """
        drop = self.cross_attention_dropout if self.training else 0.0
        text = self.encoder(input_ids=batch.input_ids,
                            attention_mask=batch.attention_mask.long()).last_hidden_state  # (B, T, D)
        fixations = self.fixation_cnn(batch.fixation_features, batch.fixation_mask)  # (B, F, D/2)
        band = batch.fixation_token_band(self.window)  # 2 x (B, F)
        attended = self.fixation_to_text(fixations, text, batch.attention_mask, band, drop)  # (B, F, D/2)
        eye_text = self.project_to_text_dim(torch.cat([fixations, attended], dim=-1))  # (B, F, D)
        query = pooling_query(text, batch.token_segment, eye_text, batch.fixation_mask)  # (B, 1, D)
        pooled = self.pool(query, eye_text, batch.fixation_mask, None, drop)  # (B, 1, D)
        return self.head(pooled[:, 0])  # (B, C)


class FixationCNN(nn.Module):
    """``Conv1d(k=3)–BN–ReLU–Conv1d(k=3)–BN–ReLU–Dropout`` over the fixation sequence, ``n → d/4 → d/2`` channels.

    Padding fixations are zeroed before each convolution so they never leak into real neighbours' outputs.
    """

    def __init__(self, n_features: int, d: int, dropout: float) -> None:
        super().__init__()
        self.conv1 = nn.Conv1d(n_features, d // 4, kernel_size=3, padding=1)
        self.norm1 = nn.BatchNorm1d(d // 4)
        self.conv2 = nn.Conv1d(d // 4, d // 2, kernel_size=3, padding=1)
        self.norm2 = nn.BatchNorm1d(d // 2)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """``x`` (B, F, n), ``mask`` (B, F) bool → (B, F, d/2), padding rows 0."""
        keep = mask.unsqueeze(1).to(x.dtype)  # (B, 1, F)
        h = torch.relu(self.norm1(self.conv1(x.transpose(1, 2) * keep))) * keep  # (B, d/4, F)
        h = torch.relu(self.norm2(self.conv2(h))) * keep  # (B, d/2, F)
        return self.dropout(h.transpose(1, 2))  # (B, F, d/2)


class BandedAttention(nn.Module):
    """One-head attention from queries to keys through :func:`readgaze.kernels.cross_attention`, with an optional
    band."""

    def __init__(self, query_dim: int, key_dim: int, out_dim: int) -> None:
        super().__init__()
        self.q = nn.Linear(query_dim, out_dim)
        self.k = nn.Linear(key_dim, out_dim)
        self.v = nn.Linear(key_dim, out_dim)
        self.out = nn.Linear(out_dim, out_dim)

    def forward(self, query: torch.Tensor, keys: torch.Tensor, key_mask: torch.Tensor,
                band: tuple[torch.Tensor, torch.Tensor] | None, dropout_p: float) -> torch.Tensor:
        """``query`` (B, Q, q_dim), ``keys`` (B, K, k_dim), ``key_mask`` (B, K) bool → (B, Q, out_dim)."""
        q, k, v = self.q(query)[:, None], self.k(keys)[:, None], self.v(keys)[:, None]  # (B, 1, ·, out)
        attended = cross_attention(q, k, v, key_padding_mask=key_mask, allowed=band, dropout_p=dropout_p)
        return self.out(attended[:, 0])  # (B, Q, out)


def pooling_query(text: torch.Tensor, token_segment: torch.Tensor, eye_text: torch.Tensor,
                  fixation_mask: torch.Tensor) -> torch.Tensor:
    """Mean question-token embedding where the trial's text has a second segment, else mean fused fixation.

    ``text`` (B, T, D), ``token_segment`` (B, T), ``eye_text`` (B, F, D), ``fixation_mask`` (B, F) → (B, 1, D).
    """
    question = (token_segment == 2).unsqueeze(-1).to(text.dtype)  # (B, T, 1)
    n_question = question.sum(dim=1)  # (B, 1)
    question_mean = (text * question).sum(dim=1) / n_question.clamp(min=1)  # (B, D)
    fixation = fixation_mask.unsqueeze(-1).to(eye_text.dtype)  # (B, F, 1)
    fixation_mean = (eye_text * fixation).sum(dim=1) / fixation.sum(dim=1).clamp(min=1)  # (B, D)
    return torch.where(n_question > 0, question_mean, fixation_mean).unsqueeze(1)
