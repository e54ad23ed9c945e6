"""PLM-AS: the text's word embeddings re-read in scanpath order by a GRU that starts from ``[CLS]``.

Reference: Yang, D., & Hollenstein, N. (2023). PLM-AS: Pre-trained language models augmented with scanpaths for
sentiment classification. Proceedings of the Northern Lights Deep Learning Workshop 2023;
EyeBench ``PLMASArgs`` (the goal-decoding and comprehension papers' PLM-AS baseline).

Idea: a pretrained encoder reads the text; each word's embedding is the sum of its sub-token embeddings. The
scanpath then picks these word embeddings in the order the reader fixated them (a word fixated three times appears
three times), and a GRU whose initial state is the ``[CLS]`` embedding runs over that sequence. Its last hidden
state is classified. Only the order of the fixated words enters: no duration or any other gaze number, so skips,
refixations and regressions are visible only through where each word's embedding says the word is (an encoder
whose hidden states carry no smooth position, such as a fully random one, hides them).

Inputs: the text tokens, the words' token spans and ``fixation_word_index``. Feature set: none (0 gaze numbers).

Departures:
- ``freeze_text_encoder=False`` really trains the encoder: EyeBench ran it under ``torch.no_grad()``, so its
  ``freeze`` sweep was a no-op. Frozen (the default, as EyeBench), the encoder runs without a graph.
- Off-text fixations keep their step with a learned "off text" embedding (EyeBench dropped them); padding steps are
  packed away.
- Text as :mod:`readgaze.models.data` builds it, as EyeBench: ``[CLS] P (</s></s> "Question: " Q </s>)``, an over-long
  paragraph loses its first words (the fixations on them are dropped and counted).
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence

from readgaze.kernels import segment_pool
from readgaze.models.base import ReadingModel
from readgaze.models.data.batch import ReadingBatch
from readgaze.models.text_encoder import load_encoder


class PLMAS(ReadingModel):
    """Encoder → word embeddings in scanpath order → GRU (h0 = ``[CLS]``) → linear head.

    Parameters
    ----------
    text_encoder : str
        ``"tiny"``, ``"minilm"``, or a transformers name/path (paper: ``roberta-large``).
    gru_num_layers : int
        GRU layers (EyeBench ``lstm_num_layers`` 2; sweep {1, 2}); hidden size = the encoder's.
    dropout : float
        Between GRU layers and before the head (EyeBench 0.1).
    freeze_text_encoder : bool
        Keep the encoder fixed (EyeBench default True).
    num_classes, learning_rate, weight_decay, warmup_ratio, class_weighted_loss, predictions_dir
        See :class:`readgaze.models.base.ReadingModel` (EyeBench: lr swept in {1e-5, 3e-5, 1e-4, 2e-4}, batch 16).
    """

    CARD = {  # the registry reads this (readgaze models, the zoo and learns tests): no other file to edit
        "name": "PLM-AS",
        "tasks": ("reading_goal", "comprehension"),
        "paper": "Yang & Hollenstein 2023, NLDL",
        "quick": {"learning_rate": 3e-3, "weight_decay": 0.1, "dropout": 0.3, "freeze_text_encoder": True},
    }

    def __init__(self, text_encoder: str = "tiny", gru_num_layers: int = 2, dropout: float = 0.1,
                 freeze_text_encoder: bool = True, num_classes: int = 2, learning_rate: float = 1e-4,
                 weight_decay: float = 0.0, warmup_ratio: float = 0.0, class_weighted_loss: bool = True,
                 predictions_dir: str | None = None) -> None:
        super().__init__(num_classes, learning_rate, weight_decay, warmup_ratio, class_weighted_loss, predictions_dir)
        self.save_hyperparameters()
        self.encoder = load_encoder(text_encoder, freeze=freeze_text_encoder)
        self.freeze_text_encoder = freeze_text_encoder
        d = self.encoder.config.hidden_size
        self.off_text = nn.Parameter(torch.zeros(d))
        self.gru = nn.GRU(d, d, num_layers=gru_num_layers, batch_first=True,
                          dropout=dropout if gru_num_layers > 1 else 0.0)
        self.dropout = nn.Dropout(dropout)
        self.head = nn.Linear(d, num_classes)

    def forward(self, batch: ReadingBatch) -> torch.Tensor:
        """Logits ``(B, num_classes)``.

        Legend: B batch, T tokens, W words, F fixations, D hidden, L GRU layers::

            input_ids ─► encoder ─► (B,T,D) ─sum sub-tokens─► words (B,W,D) ─scanpath order─► (B,F,D)
            [CLS] (B,D) ─► h0 (L,B,D) ─► GRU over (B,F,D) ─► last state (B,D) ─► dropout ─► linear
        """
        text, words = encode_words(self.encoder, batch, "sum", self.freeze_text_encoder)  # (B,T,D), (B,W,D)
        path = scanpath_rows(batch, words, self.off_text)  # (B, F, D)
        h0 = text[:, 0].unsqueeze(0).repeat(self.gru.num_layers, 1, 1).contiguous()  # (L, B, D)
        _, last = self.gru(packed(path, batch.fixation_mask), h0)  # (L, B, D)
        return self.head(self.dropout(last[-1]))  # (B, C)


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
