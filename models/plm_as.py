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

from readgaze.models.base import ReadingModel
from readgaze.models.data.batch import ReadingBatch
from readgaze.models.layers import encode_words, packed, scanpath_rows
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
        "quick": {"weight_decay": 0.1, "dropout": 0.3, "freeze_text_encoder": True},
    }

    def __init__(self, text_encoder: str = "tiny", gru_num_layers: int = 2, dropout: float = 0.1,
                 freeze_text_encoder: bool = True, learning_rate: float = 1e-4, **training) -> None:
        super().__init__(learning_rate=learning_rate, **training)
        self.save_hyperparameters()
        self.encoder = load_encoder(text_encoder, freeze=freeze_text_encoder)
        self.freeze_text_encoder = freeze_text_encoder
        d = self.encoder.config.hidden_size
        self.off_text = nn.Parameter(torch.zeros(d))
        self.gru = nn.GRU(d, d, num_layers=gru_num_layers, batch_first=True,
                          dropout=dropout if gru_num_layers > 1 else 0.0)
        self.dropout = nn.Dropout(dropout)
        self.head = nn.Linear(d, self.num_classes)

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
