"""RoBERTEye-F: fixations as extra tokens beside the text, fused by the transformer's own self-attention.

Reference: Shubi, O., Meiri, Y., Hadar, C. A., & Berzak, Y. (2024). Fine-grained prediction of reading comprehension
from eye movements. EMNLP 2024, arXiv:2410.04484 (RoBERTa-Eye-F); EyeBench ``RoberteyeFixation`` (Shubi et al., 2025).

Idea: each fixation becomes one input vector of the text encoder. A small MLP projects the fixation's features (its
duration, position, saccades, and the reading measures and lexical features of the word it lands on) to the hidden
size; the vector gets token type 1 and, as position, the mean position embedding of the fixated word's sub-tokens.
A learned ``<eye>`` separator, initialised from the encoder's ``</s>`` (``[SEP]``) embedding, stands between the
gaze vectors and the text. Full self-attention then runs over text, ``<eye>`` and fixations jointly, and the head
reads ``[CLS]``. The published sequence is ``[CLS] <gaze_1..gaze_N> <eye> </s> paragraph </s></s> "Question: " +
question </s>`` (the question for comprehension only; the text as :mod:`readgaze.models.data` builds it).

Which word a fixation landed on reaches its vector only through the position: self-attention must learn to match a
gaze vector to the text tokens at the same position. ``gaze_word_embedding=True`` (not in the paper; off by
default) adds the mean input embedding of the fixated word's sub-tokens to the gaze vector, so each fixation says
which word it is on. Where that is needed it decides whether the model learns. On the planted ``question_span`` task
(the answer depends on whether the slowly read span holds the question's keyword; validation AUROC, tiny encoder,
15 epochs, two simulated corpora) RoBERTEye-F as published scores 0.552 / 0.555 at learning rate 3e-3 and 0.482 /
0.567 at 1e-3; with the word embedding, at 1e-3, 0.725 / 0.690; the gaze-only FSE 0.515 / 0.510 (docs/evidence.md,
``tests/test_models_learn_planted.py``).

Inputs: fixation level (``ReadingBatch.fixation_features``, ``fixation_word_index``) and the text tokens.

Departures from the paper:
- Sequence order: ``[CLS] text [SEP] <eye> gaze_1..gaze_N`` instead of gaze first. With explicit position ids
  self-attention does not depend on the order of the inputs, and ``[CLS]`` stays at index 0.
- ``<eye>`` is a parameter of this model (not a row added to the tokenizer's vocabulary, so tokenizers and the
  shared text path stay unchanged); it has token type 0 and the position after the text's last token (the last
  position of the table when the text fills it). With no fixations the model is exactly the text-only baseline on
  the text with one more ``</s>`` appended (tested). Frozen, it stays fixed, as the vocabulary row in EyeBench.
- Off-text fixations keep their slot (the lab code dropped them before indexing and shifted every later fixation,
  EyeBench ``get_text_features``); their position is the ``[CLS]`` position.
- Fixations are padded to the batch's longest scanpath, not to 815.
- Truncation as EyeBench (a long paragraph loses its first words; the fixations on them are dropped and counted),
  but at a word boundary, and the question takes its real length (at most 30 tokens) rather than a fixed 30.
- Optimiser as EyeBench's RoBERTa models: AdamW, betas (0.9, 0.98), eps 1e-6, weight decay except on biases and
  norms, linear warm-up and decay (:class:`readgaze.models.base.ReadingModel`).

Feature set: the fixation-level set, :data:`readgaze.features.FIXATION_FEATURES` (54 numbers: 15 fixation
features,
9 missing flags, then the fixated word's 23 word features and 7 missing flags; the published vector has 16 + 33 =
49). Which published feature each stands for, and which readgaze lacks:
:data:`readgaze.features.PUBLISHED_FEATURES`.
"""

from __future__ import annotations

import torch
from torch import nn

from readgaze.features import FIXATION_FEATURES
from readgaze.models.base import ReadingModel
from readgaze.models.data.batch import ReadingBatch
from readgaze.models.text_encoder import (
    ClassificationHead,
    ensure_token_types,
    load_encoder,
    load_tokenizer,
    position_offset,
)


class RoBERTEyeF(ReadingModel):
    """Text encoder over ``[text tokens; projected fixations]`` with a classification head on ``[CLS]``.

    Parameters
    ----------
    text_encoder : str
        ``"tiny"``, ``"minilm"``, or a transformers name/path (paper: ``roberta-large``).
    n_fixation_features : int
        Size of one fixation vector; linked from the datamodule.
    eye_projection_dropout : float
        Dropout inside the fixation projection MLP (EyeBench 0.3; GD 0.1).
    freeze_text_encoder : bool
        Train only the fixation projection, the token-type embeddings and the head (EyeBench ``freeze=True``).
    head_dropout : float
        Dropout in the classification head.
    gaze_word_embedding : bool
        Add to each gaze vector the mean input (word-piece) embedding of its word's sub-tokens (off-text fixations:
        nothing); not in the paper, see the module docstring. Default False, as published.
    num_classes, learning_rate, weight_decay, warmup_ratio, class_weighted_loss, predictions_dir
        See :class:`readgaze.models.base.ReadingModel` (EyeBench: lr swept in {1e-5, 3e-5, 1e-4}, wd 0.1, warm-up 10 %).
    """

    CARD = {  # the registry reads this (readgaze models, the zoo and learns tests): no other file to edit
        "name": "RoBERTEye-F",
        "tasks": ("reading_goal", "comprehension", "goal_question"),
        "paper": "Shubi et al. 2024, EMNLP, arXiv:2410.04484",
        "quick": {"eye_projection_dropout": 0.1, "weight_decay": 0.01},
    }

    adam_betas, adam_eps = (0.9, 0.98), 1e-6  # EyeBench base_roberta

    def __init__(self, text_encoder: str = "tiny", n_fixation_features: int = len(FIXATION_FEATURES),
                 eye_projection_dropout: float = 0.3, freeze_text_encoder: bool = False, head_dropout: float = 0.1,
                 learning_rate: float = 1e-5, weight_decay: float = 0.1, warmup_ratio: float = 0.1,
                 gaze_word_embedding: bool = False, **training) -> None:
        super().__init__(learning_rate=learning_rate, weight_decay=weight_decay, warmup_ratio=warmup_ratio, **training)
        self.save_hyperparameters()
        self.gaze_word_embedding = gaze_word_embedding
        self.encoder = load_encoder(text_encoder)
        ensure_token_types(self.encoder, 2)
        hidden = self.encoder.config.hidden_size
        self.eye_projection = nn.Sequential(nn.Linear(n_fixation_features, hidden // 2), nn.ReLU(),
                                            nn.Dropout(eye_projection_dropout), nn.Linear(hidden // 2, hidden))
        self.head = ClassificationHead(hidden, self.num_classes, head_dropout)
        sep = load_tokenizer(text_encoder).sep_token_id
        self.eye_token = nn.Parameter(self.encoder.embeddings.word_embeddings.weight[sep].detach().clone())  # (D,)
        if freeze_text_encoder:
            self.encoder.requires_grad_(False)
            self.encoder.embeddings.token_type_embeddings.requires_grad_(True)
            self.eye_token.requires_grad_(False)

    def forward(self, batch: ReadingBatch) -> torch.Tensor:
        """Logits ``(B, num_classes)``.

        Legend: B batch, T text tokens, F fixations, D hidden size::

            input_ids ──word emb──► text (B,T,D) ─┐  position 0..T-1, type 0
            <eye> (init. </s>) ───► (B,1,D) ────────┼─ position = after the last text token, type 0
                                                    ├─► encoder (self-attention over T+1+F) ─► [CLS] ─► head
            fixation_features ──MLP──► gaze (B,F,D) ┘  position = mean of its word's token positions, type 1
                 (+ mean word embedding of its word's tokens, with gaze_word_embedding)
        """
        embeddings = self.encoder.embeddings
        batch_size, n_tokens = batch.input_ids.shape
        text = embeddings.word_embeddings(batch.input_ids)  # (B, T, D)
        features, start, end, mask = self.gaze_slots(batch)  # (B, S, n), 3 x (B, S)
        gaze = self.eye_projection(features)  # (B, S, D)
        if self.gaze_word_embedding:  # off text the band is (0, 1), [CLS]: nothing is added
            gaze = gaze + torch.where((start > 0).unsqueeze(-1), span_mean(text, start, end), 0.0)
        offset = position_offset(self.encoder)
        text_position = offset + torch.arange(n_tokens, device=text.device).expand(batch_size, n_tokens)  # (B, T)
        gaze_position = offset + start  # (B, S) the id the embedding layer adds; corrected to the mean below
        gaze = gaze + span_mean(embeddings.position_embeddings.weight[offset:offset + n_tokens], start, end
                                ) - embeddings.position_embeddings(gaze_position)
        eye = self.eye_token.expand(batch_size, 1, -1)  # (B, 1, D)
        last = embeddings.position_embeddings.num_embeddings - 1
        eye_position = (offset + batch.attention_mask.sum(dim=1, keepdim=True)).clamp(max=last)  # (B, 1)
        eye_mask = torch.ones_like(eye_position, dtype=torch.bool)  # (B, 1)
        hidden = self.encoder(
            inputs_embeds=torch.cat([text, eye, gaze], dim=1),  # (B, T+1+S, D)
            attention_mask=torch.cat([batch.attention_mask, eye_mask, mask], dim=1).long(),
            position_ids=torch.cat([text_position, eye_position, gaze_position], dim=1),
            token_type_ids=torch.cat([torch.zeros_like(batch.input_ids), torch.zeros_like(eye_position),
                                      torch.ones_like(start)], dim=1),
        ).last_hidden_state  # (B, T+1+S, D)
        return self.head(hidden)  # (B, C)

    def gaze_slots(self, batch: ReadingBatch):
        """The gaze vectors beside the text: one per fixation, its word's token span (off text: ``[CLS]``), and
        the fixation mask; ``(B, F, n_fixation_features)``, then three ``(B, F)`` tensors."""
        start, end = batch.fixation_token_band(window=0)
        return batch.fixation_features, start, end, batch.fixation_mask


def span_mean(table: torch.Tensor, start: torch.Tensor, end: torch.Tensor) -> torch.Tensor:
    """Mean of the rows ``table[start:end]`` for every ``(start, end)`` pair of ``(B, F)`` int64 tensors.

    ``table`` is one ``(T, D)`` table shared by the batch (the position embeddings) or ``(B, T, D)``, one per trial
    (the text's word embeddings); returns ``(B, F, D)``. Uses a prefix sum, so it costs one gather per slot whatever
    the word's length. An empty range gives row ``start`` (which the callers never produce: off-text fixations get
    ``(0, 1)``). Not :func:`readgaze.kernels.segment_pool`: the rows pooled are a token *range* per slot (slots of
    one word overlap), not rows that each carry one segment id.
    """
    table = table.expand(start.shape[0], -1, -1) if table.dim() == 2 else table  # (B, T, D)
    n, width = table.shape[1], table.shape[2]
    prefix = torch.cat([table.new_zeros(table.shape[0], 1, width), table.cumsum(dim=1)], dim=1)  # (B, T+1, D)
    at = lambda index: torch.gather(prefix, 1, index.clamp(max=n).unsqueeze(-1).expand(-1, -1, width))  # noqa: E731
    length = (end - start).clamp(min=1).unsqueeze(-1).to(table.dtype)  # (B, F, 1)
    first = torch.gather(table, 1, start.clamp(max=n - 1).unsqueeze(-1).expand(-1, -1, width))  # (B, F, D)
    return torch.where((end <= start).unsqueeze(-1), first, (at(end) - at(start)) / length)
