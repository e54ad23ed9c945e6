"""Eyettention: a word-sequence encoder and a fixation-sequence encoder, joined by cross-attention.

Reference: Deng, S., Reich, D. R., Prasse, P., Haller, P., Scheffer, T., & Jäger, L. A. (2023). Eyettention: An
attention-based dual-sequence model for predicting human scanpaths during reading. Proceedings of the ACM on
Human-Computer Interaction 7 (ETRA); as a classifier in the goal-decoding paper (Shubi et al. 2025, ACL,
arXiv:2410.20779, "Eyettention").

Idea: two sequences describe one trial, the text in reading order and the scanpath in time order, and each gets
its own encoder.

1. Word-sequence encoder: the text encoder's contextual embeddings, averaged over each word's sub-tokens, with the
   word's length appended, run through a stacked BiLSTM: one state per word.
2. Fixation-sequence encoder: for each fixation, the *static* input embedding of its word (the encoder's
   vocabulary embeddings, averaged over sub-tokens) plus a learned embedding of the word's position in the text,
   LayerNorm and dropout, with the fixation's gaze numbers appended, run through a stacked LSTM; its last state
   summarises the scanpath.
3. Cross-attention (one head, :func:`readgaze.kernels.cross_attention`): the scanpath summary queries the word states.
4. ``[context; summary]`` → MLP → classes.

Inputs: the text tokens and word spans, ``fixation_word_index``, and of ``fixation_features`` the fixation's
``duration_ms`` and its word's ``total_fixation_duration_ms``; the word's ``word_length`` from ``word_features``.
Feature set: 2 gaze numbers per fixation, 1 lexical number per word.

Departures: the published fixation inputs are the fixation duration and the landing position within the word;
readgaze's fixation vector has no landing position (its fixation table carries no word boxes), so the word's total
fixation duration stands in. Off-text fixations get position 0 and no word embedding. The text encoder is frozen by
default (as the paper); ``freeze_text_encoder=False`` trains it.
"""

from __future__ import annotations

import torch
from torch import nn

from readgaze.features import FIXATION_FEATURES, WORD_FEATURES
from readgaze.kernels import cross_attention, segment_pool
from readgaze.models.base import ReadingModel
from readgaze.models.data.batch import ReadingBatch
from readgaze.models.layers import encode_words, packed
from readgaze.models.text_encoder import load_encoder

FIXATION_COLUMNS = ("duration_ms", "total_fixation_duration_ms")
WORD_COLUMNS = ("word_length",)


class Eyettention(ReadingModel):
    """Word BiLSTM over the text ⊕ fixation LSTM over the scanpath, fused by cross-attention; MLP head.

    Parameters
    ----------
    text_encoder : str
        ``"tiny"``, ``"minilm"``, or a transformers name/path (paper: ``roberta-large``).
    lstm_hidden_size : int
        Hidden size of both LSTMs (per direction for the word BiLSTM; paper 128).
    word_lstm_layers, fixation_lstm_layers : int
        Stacked layers (paper 8 each).
    lstm_dropout : float
        Between LSTM layers, and after the fixation embeddings.
    max_word_position : int
        Size of the learned word-position table; later words share the last row.
    mlp_sizes : tuple of int
        Hidden layers of the head (paper 512, 256, 256, 256).
    freeze_text_encoder : bool
        Keep the text encoder fixed (paper: frozen).
    num_classes, learning_rate, weight_decay, warmup_ratio, class_weighted_loss, predictions_dir
        See :class:`readgaze.models.base.ReadingModel` (GD: lr swept in {1e-3, 1e-5, 3e-5, 1e-4}, batch 64 x 4).
    """

    CARD = {  # the registry reads this (readgaze models, the zoo and learns tests): no other file to edit
        "name": "Eyettention",
        "tasks": ("reading_goal",),
        "paper": "Deng et al. 2023, ETRA; Shubi et al. 2025, ACL, arXiv:2410.20779",
        "quick": {
            "lstm_hidden_size": 32,
            "word_lstm_layers": 1,
            "fixation_lstm_layers": 1,
            "mlp_sizes": (64,),
            "lstm_dropout": 0.1,
        },
    }

    def __init__(self, text_encoder: str = "tiny", lstm_hidden_size: int = 128, word_lstm_layers: int = 8,
                 fixation_lstm_layers: int = 8, lstm_dropout: float = 0.2, max_word_position: int = 512,
                 mlp_sizes: tuple[int, ...] = (512, 256, 256, 256), freeze_text_encoder: bool = True,
                 learning_rate: float = 1e-4, **training) -> None:
        super().__init__(learning_rate=learning_rate, **training)
        self.save_hyperparameters()
        self.encoder = load_encoder(text_encoder, freeze=freeze_text_encoder)
        self.freeze_text_encoder = freeze_text_encoder
        self.register_buffer("fixation_columns", torch.tensor([FIXATION_FEATURES.index(c) for c in FIXATION_COLUMNS]),
                             persistent=False)
        self.register_buffer("word_columns", torch.tensor([WORD_FEATURES.index(c) for c in WORD_COLUMNS]),
                             persistent=False)
        d, h = self.encoder.config.hidden_size, lstm_hidden_size
        self.word_lstm = nn.LSTM(d + len(WORD_COLUMNS), h, num_layers=word_lstm_layers, batch_first=True,
                                 bidirectional=True, dropout=lstm_dropout if word_lstm_layers > 1 else 0.0)
        self.position = nn.Embedding(max_word_position, d)
        self.fixation_norm = nn.LayerNorm(d)
        self.fixation_dropout = nn.Dropout(lstm_dropout)
        self.fixation_lstm = nn.LSTM(d + len(FIXATION_COLUMNS), h, num_layers=fixation_lstm_layers,
                                     batch_first=True, dropout=lstm_dropout if fixation_lstm_layers > 1 else 0.0)
        self.query = nn.Linear(h, 2 * h)
        sizes = (3 * h, *mlp_sizes)
        self.head = nn.Sequential(*[m for a, b in zip(sizes[:-1], sizes[1:])
                                    for m in (nn.Linear(a, b), nn.ReLU(), nn.Dropout(lstm_dropout))],
                                  nn.Linear(sizes[-1], self.num_classes))

    def forward(self, batch: ReadingBatch) -> torch.Tensor:
        """Logits ``(B, num_classes)``.

        Legend: B batch, T tokens, W words, F fixations, D hidden, H lstm_hidden_size::

            encoder (B,T,D) ─mean per word─► (B,W,D) ⊕ length ─► BiLSTM ─► words (B,W,2H) ──────── keys/values
            static emb. of fixated word + position emb. ─► LN, dropout ⊕ gaze (B,F,2) ─► LSTM ─► last (B,H) ─ query
            cross-attention ─► context (B,2H);  [context; last] (B,3H) ─► MLP ─► logits
        """
        word_mask = batch.word_mask & (batch.word_token_end > batch.word_token_start)  # (B, W) kept words
        _, words = encode_words(self.encoder, batch, "mean", self.freeze_text_encoder)  # (B, W, D)
        words = torch.cat([words, batch.word_features.index_select(-1, self.word_columns)], dim=-1)
        word_states = self._run(self.word_lstm, words, word_mask)  # (B, W, 2H)

        static = self.encoder.embeddings.word_embeddings(batch.input_ids)  # (B, T, D), no context
        static_words = segment_pool(static, batch.token_word_index(), batch.word_mask.shape[1], reduce="mean")
        position = self.position(batch.fixation_word_index.clamp(min=0, max=self.position.num_embeddings - 1))
        on_text = ((batch.fixation_word_index >= 0) & batch.fixation_mask)[..., None].to(static.dtype)
        fixations = self.fixation_dropout(self.fixation_norm(batch.fixated_word_rows(static_words)
                                                             + position * on_text))  # (B, F, D)
        fixations = torch.cat([fixations, batch.fixation_features.index_select(-1, self.fixation_columns)], dim=-1)
        _, (last, _) = self.fixation_lstm(packed(fixations, batch.fixation_mask))
        summary = last[-1]  # (B, H)

        q = self.query(summary)[:, None, None]  # (B, 1, 1, 2H)
        kv = word_states[:, None]  # (B, 1, W, 2H)
        context = cross_attention(q, kv, kv, key_padding_mask=word_mask)[:, 0, 0]  # (B, 2H)
        return self.head(torch.cat([context, summary], dim=-1))  # (B, C)

    @staticmethod
    def _run(lstm: nn.LSTM, sequence: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """All states of ``lstm`` over the packed ``sequence``, padded back to its length (padding rows 0)."""
        states, _ = lstm(packed(sequence, mask))
        states, _ = nn.utils.rnn.pad_packed_sequence(states, batch_first=True, total_length=max(sequence.shape[1], 1))
        return states
