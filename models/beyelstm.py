"""BEyeLSTM: three BiLSTMs over the scanpath (gaze, word class, content word) plus global gaze features.

Reference: Reich, D. R., Prasse, P., Tschirner, C., Haller, P., Goldhammer, F., & Jäger, L. A. (2022). Inferring
native and non-native human reading comprehension and subjective text difficulty from scanpaths in reading. ETRA '22,
doi:10.1145/3517031.3529639. As configured in EyeBench ``BEyeLSTMArgs`` (REFERENCE.md §1.3).

Idea: the scanpath is read three times by bidirectional LSTMs: once as the fixations' duration, pupil size and
position; once as the word class of each fixated word; once as whether each fixated word is a content word. A fourth
block maps trial-level ("global scanpath") features through a dense layer. The four summaries are concatenated and a
two-layer head classifies. No text embedding is used.

Inputs: fixation level (``fixation_features`` columns ``duration_ms, pupil, x_px, y_px`` and the pupil's missing
indicator, ``fixation_word_category``, ``fixation_word_is_content``) and ``trial_features``.

Departures:
- Word class: the reduced part of speech (5 classes) when the corpus has it is not in the canonical words table, so
  the word class is the length class of :class:`models.batch.ReadingBatch` (4 classes + off text); content word =
  the corpus's ``is_content_word``, else an open-class ``universal_pos`` tag, else ``word_length > 3``.
- Global features: :data:`models.features.TRIAL_FEATURE_NAMES` (speed, skip and regression rates, mean reading
  measures; 13 values) instead of the 708 grouped means of the GD code.
- Sequences are packed by length (as EyeBench; GD ran the LSTM over zero padding).
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence

from models.base import ReadingModel
from models.batch import ReadingBatch
from models.features import FIXATION_FEATURES, TRIAL_FEATURE_NAMES

GAZE_COLUMNS = ("duration_ms", "pupil", "x_px", "y_px", "pupil_missing")
"""The fixation-block inputs: EyeBench's ``CURRENT_FIX_DURATION, PUPIL, X, Y`` (+ the pupil's missing flag)."""
N_WORD_CATEGORIES, N_CONTENT_CLASSES = 5, 3  # incl. 0 = off text / padding


class BEyeLSTM(ReadingModel):
    """Gaze, word-class and content-word BiLSTMs plus a global-feature block.

    Parameters
    ----------
    n_trial_features : int
        Size of the global feature vector; linked from the datamodule.
    hidden_size : int
        LSTM hidden size per direction (EyeBench 64; GD 128).
    embedding_dim : int
        Word-class and content-word embedding size (EyeBench 4; GD 8).
    dropout : float
        Dropout in every block (EyeBench 0.5; GD 0.3).
    fc1_size, fc2_size : int
        The two dense layers after each LSTM (EyeBench 50, 20).
    global_out_size : int
        Output of the global-feature block (EyeBench ``gsf_out`` 32).
    after_concat_size : int
        Hidden layer of the head (EyeBench 32).
    num_classes, learning_rate, weight_decay, warmup_ratio, class_weighted_loss, predictions_dir
        See :class:`models.base.ReadingModel` (EyeBench lr swept in {1e-3, 3e-3, 1e-2}).
    """

    def __init__(self, n_trial_features: int = len(TRIAL_FEATURE_NAMES), hidden_size: int = 64,
                 embedding_dim: int = 4, dropout: float = 0.5, fc1_size: int = 50, fc2_size: int = 20,
                 global_out_size: int = 32, after_concat_size: int = 32, num_classes: int = 2,
                 learning_rate: float = 1e-3, weight_decay: float = 0.0, warmup_ratio: float = 0.0,
                 class_weighted_loss: bool = True, predictions_dir: str | None = None) -> None:
        super().__init__(num_classes, learning_rate, weight_decay, warmup_ratio, class_weighted_loss, predictions_dir)
        self.save_hyperparameters()
        self.register_buffer("gaze_columns", torch.tensor([FIXATION_FEATURES.index(c) for c in GAZE_COLUMNS]),
                             persistent=False)
        lstm = dict(hidden_size=hidden_size, fc1_size=fc1_size, fc2_size=fc2_size, dropout=dropout)
        self.gaze_block = LSTMBlock(len(GAZE_COLUMNS), **lstm)
        self.category_embedding = nn.Embedding(N_WORD_CATEGORIES, embedding_dim, padding_idx=0)
        self.category_block = LSTMBlock(embedding_dim, **lstm)
        self.content_embedding = nn.Embedding(N_CONTENT_CLASSES, embedding_dim, padding_idx=0)
        self.content_block = LSTMBlock(embedding_dim, **lstm)
        self.global_block = nn.Sequential(nn.Dropout(dropout), nn.Linear(n_trial_features, global_out_size),
                                          nn.ReLU())
        self.head = nn.Sequential(nn.Linear(3 * fc2_size + global_out_size, after_concat_size), nn.ReLU(),
                                  nn.Linear(after_concat_size, num_classes))

    def forward(self, batch: ReadingBatch) -> torch.Tensor:
        """Logits ``(B, num_classes)``.

        Legend: B batch, F fixations, E embedding, S fc2_size, G global_out_size::

            gaze (B,F,5)                 ─► BiLSTM block ─► (B,S) ─┐
            word class (B,F) ─► embed E  ─► BiLSTM block ─► (B,S) ─┤
            content (B,F)    ─► embed E  ─► BiLSTM block ─► (B,S) ─┼─► concat ─► fc–ReLU–fc ─► logits
            trial_features (B,n)         ─► dropout–fc–ReLU ─► (B,G) ┘
        """
        lengths = batch.fixation_mask.sum(dim=1)  # (B,)
        gaze = batch.fixation_features.index_select(-1, self.gaze_columns)  # (B, F, 5)
        parts = [self.gaze_block(gaze, lengths),  # (B, S)
                 self.category_block(self.category_embedding(batch.fixation_word_category), lengths),  # (B, S)
                 self.content_block(self.content_embedding(batch.fixation_word_is_content), lengths),  # (B, S)
                 self.global_block(batch.trial_features)]  # (B, G)
        return self.head(torch.cat(parts, dim=-1))  # (B, C)


class LSTMBlock(nn.Module):
    """BiLSTM over a packed sequence, last hidden states of both directions → fc1–ReLU–Dropout–fc2–ReLU."""

    def __init__(self, input_size: int, hidden_size: int, fc1_size: int, fc2_size: int, dropout: float) -> None:
        super().__init__()
        self.lstm = nn.LSTM(input_size, hidden_size, batch_first=True, bidirectional=True)
        self.fc = nn.Sequential(nn.Linear(2 * hidden_size, fc1_size), nn.ReLU(), nn.Dropout(dropout),
                                nn.Linear(fc1_size, fc2_size), nn.ReLU())

    def forward(self, x: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        """``x`` (B, F, n), ``lengths`` (B,) → (B, fc2_size); a trial with no fixation gets the zero state's output."""
        if x.shape[1] == 0:
            x = x.new_zeros(x.shape[0], 1, x.shape[2])
        packed = pack_padded_sequence(x, lengths.clamp(min=1).cpu(), batch_first=True, enforce_sorted=False)
        _, (h, _) = self.lstm(packed)  # h (2, B, H)
        return self.fc(torch.cat([h[0], h[1]], dim=-1))  # (B, fc2)
