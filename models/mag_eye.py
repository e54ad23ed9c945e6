"""MAG-Eye: a Multimodal Adaptation Gate shifts the text's hidden states by the word's gaze before a chosen layer.

Reference: Shubi, O., Meiri, Y., Hadar, C. A., & Berzak, Y. (2024). Fine-grained prediction of reading comprehension
from eye movements. EMNLP 2024, arXiv:2410.04484 (MAG-Eye); the gate is that of Rahman, W., Hasan, M. K., Lee, S.,
Zadeh, A., Mao, C., Morency, L.-P., & Hoque, E. (2020). Integrating multimodal information in large pretrained
transformers. ACL 2020; EyeBench ``MAG``.

Idea: the text runs through the transformer as usual, except that before layer ``mag_injection_index`` every
token's hidden state ``z`` is shifted by a gate computed from the gaze on its word ``g``::

    h = ReLU(W_hg [g; z]) ⊙ (W_g g)            the gated displacement
    α = min(‖z‖ / ‖h‖ · β, 1)                  so the shift never outgrows the text vector (β = mag_beta_shift)
    z' = Dropout(LayerNorm(z + α h))

The word's gaze vector is copied to each of its sub-tokens; ``[CLS]``, separators, question tokens and padding get
no shift. The head reads ``[CLS]``.

Inputs: word level (``ReadingBatch.word_features``, the words' token spans) and the text tokens.
Feature set: the word-level set, :data:`readgaze.features.WORD_FEATURES` (30 numbers; the published set has
33, see
:data:`readgaze.features.PUBLISHED_FEATURES`).

Departures: "no shift" is decided by whether a token belongs to a paragraph word, not by its gaze vector being all
zeros (a robust-scaled real vector can be all zeros); the gate is applied through a forward pre-hook on the encoder
layer, so any Hugging Face BERT/RoBERTa encoder works unchanged. Text as :mod:`readgaze.models.data` builds it, as
EyeBench
(``"Question: "`` + question for comprehension; an over-long paragraph loses its first words, counted). Optimiser:
AdamW betas (0.9, 0.98), eps 1e-6, as EyeBench's RoBERTa models.
"""

from __future__ import annotations

import torch
from torch import nn

from readgaze.features import WORD_FEATURES
from readgaze.models.base import ReadingModel
from readgaze.models.data.batch import ReadingBatch
from readgaze.models.text_encoder import ClassificationHead, load_encoder


class MAGEye(ReadingModel):
    """Text encoder with a Multimodal Adaptation Gate before layer ``mag_injection_index``; head on ``[CLS]``.

    Parameters
    ----------
    text_encoder : str
        ``"tiny"``, ``"minilm"``, or a transformers name/path (paper: ``roberta-large``).
    n_word_features : int
        Size of one word gaze vector; linked from the datamodule.
    mag_injection_index : int
        The encoder layer whose input is shifted (0 = right after the embeddings; EyeBench sweeps {0, 23}).
    mag_beta_shift : float
        β, the largest shift relative to the text vector's norm (EyeBench 1e-3).
    mag_dropout : float
        Dropout after the gate's LayerNorm (EyeBench 0.5).
    freeze_text_encoder : bool
        Train only the gate and the head (EyeBench ``freeze=True``).
    head_dropout : float
    num_classes, learning_rate, weight_decay, warmup_ratio, class_weighted_loss, predictions_dir
        See :class:`readgaze.models.base.ReadingModel` (EyeBench: lr swept in {1e-5, 3e-5, 1e-4}, wd 0.1, warm-up 10 %).

    Raises
    ------
    ValueError
        If ``mag_injection_index`` is not a layer of the encoder.
    """

    CARD = {  # the registry reads this (readgaze models, the zoo and learns tests): no other file to edit
        "name": "MAG-Eye",
        "tasks": ("reading_goal", "comprehension"),
        "paper": "Shubi et al. 2024, EMNLP, arXiv:2410.04484; gate: Rahman et al. 2020, ACL",
        "quick": {
            "mag_beta_shift": 1.0,
            "mag_dropout": 0.1,
            "weight_decay": 0.01,
        },
    }

    adam_betas, adam_eps = (0.9, 0.98), 1e-6  # EyeBench base_roberta

    def __init__(self, text_encoder: str = "tiny", n_word_features: int = len(WORD_FEATURES),
                 mag_injection_index: int = 0, mag_beta_shift: float = 1e-3, mag_dropout: float = 0.5,
                 freeze_text_encoder: bool = False, head_dropout: float = 0.1, learning_rate: float = 1e-5,
                 weight_decay: float = 0.1, warmup_ratio: float = 0.1, **training) -> None:
        super().__init__(learning_rate=learning_rate, weight_decay=weight_decay, warmup_ratio=warmup_ratio, **training)
        self.save_hyperparameters()
        self.encoder = load_encoder(text_encoder, freeze=freeze_text_encoder)
        layers = self.encoder.encoder.layer
        if not 0 <= mag_injection_index < len(layers):
            raise ValueError(f"mag_injection_index {mag_injection_index}: the encoder has layers 0..{len(layers) - 1}")
        hidden = self.encoder.config.hidden_size
        self.mag = MultimodalAdaptationGate(hidden, n_word_features, mag_beta_shift, mag_dropout)
        self.head = ClassificationHead(hidden, self.num_classes, head_dropout)
        self._token_gaze: tuple[torch.Tensor, torch.Tensor] | None = None
        layers[mag_injection_index].register_forward_pre_hook(self._inject, with_kwargs=True)

    def forward(self, batch: ReadingBatch) -> torch.Tensor:
        """Logits ``(B, num_classes)``.

        Legend: B batch, T tokens, W words, n word features, D hidden::

            word_features (B,W,n) ─copy to sub-tokens─► gaze (B,T,n) ─┐
            input_ids ─► embeddings ─► layers < k ─► z (B,T,D) ───────┴─► MAG ─► layers >= k ─► [CLS] ─► head
        """
        word = batch.token_word_index()  # (B, T), -1 = no paragraph word
        has_gaze = word >= 0
        index = word.clamp(min=0)[..., None].expand(-1, -1, batch.word_features.shape[-1])
        gaze = torch.gather(batch.word_features, 1, index) * has_gaze[..., None]  # (B, T, n)
        self._token_gaze = (gaze, has_gaze)
        try:
            hidden = self.encoder(input_ids=batch.input_ids,
                                  attention_mask=batch.attention_mask.long()).last_hidden_state  # (B, T, D)
        finally:
            self._token_gaze = None
        return self.head(hidden)  # (B, C)

    def _inject(self, layer: nn.Module, args: tuple, kwargs: dict):
        """Forward pre-hook of the chosen layer: replace its input hidden states by the gated ones."""
        if self._token_gaze is None:
            return None
        gaze, has_gaze = self._token_gaze
        if args:
            return (self.mag(args[0], gaze, has_gaze), *args[1:]), kwargs
        return args, {**kwargs, "hidden_states": self.mag(kwargs["hidden_states"], gaze, has_gaze)}


class MultimodalAdaptationGate(nn.Module):
    """``z' = Dropout(LayerNorm(z + α · ReLU(W_hg [g; z]) ⊙ W_g g))``, ``α = min(β ‖z‖ / ‖h‖, 1)`` (Rahman et al.)."""

    def __init__(self, hidden: int, n_gaze: int, beta_shift: float, dropout: float) -> None:
        super().__init__()
        self.gate = nn.Linear(n_gaze + hidden, hidden)  # W_hg
        self.shift = nn.Linear(n_gaze, hidden)  # W_g
        self.beta_shift = beta_shift
        self.norm = nn.LayerNorm(hidden)
        self.dropout = nn.Dropout(dropout)

    def forward(self, text: torch.Tensor, gaze: torch.Tensor, has_gaze: torch.Tensor) -> torch.Tensor:
        """``text`` (B, T, D), ``gaze`` (B, T, n), ``has_gaze`` (B, T) bool → (B, T, D)."""
        h = torch.relu(self.gate(torch.cat([gaze, text], dim=-1))) * self.shift(gaze)  # (B, T, D)
        ratio = text.norm(dim=-1, keepdim=True) / h.norm(dim=-1, keepdim=True).clamp(min=1e-6)  # (B, T, 1)
        alpha = (ratio * self.beta_shift).clamp(max=1.0)
        return self.dropout(self.norm(text + alpha * h * has_gaze[..., None].to(h.dtype)))
