"""BEyeLSTM: three BiLSTMs over the scanpath (gaze, reduced part of speech, content word) plus global gaze features.

Reference: Reich, D. R., Prasse, P., Tschirner, C., Haller, P., Goldhammer, F., & Jäger, L. A. (2022). Inferring
native and non-native human reading comprehension and subjective text difficulty from scanpaths in reading. ETRA '22,
doi:10.1145/3517031.3529639. Defaults as EyeBench's ``BEyeLSTMArgs``.

Idea: the scanpath is read three times by bidirectional LSTMs: as the fixations' duration, pupil size and position;
as the reduced part of speech of each fixated word; and as whether each fixated word is a content word. A fourth
block maps the trial's global scanpath features through a dense layer. The four summaries are concatenated and a
two-layer head classifies. No text embedding is used.

Inputs (set the datamodule's ``trial_feature_set: beyelstm_global``, as the packaged configs do):

- fixation block: ``fixation_features`` columns ``duration_ms, pupil, x_px, y_px`` (4 features);
- reduced-POS sequence: ``fixation_word_category`` = the fixated word's reduced part of speech (1 FUNC, 2 NOUN,
  3 VERB, 4 ADJ, 5 UNKNOWN; 0 off text), from the words table's ``Reduced_POS`` (OneStop) when present, else its
  ``universal_pos`` mapped as OneStop maps it (NOUN/PROPN → NOUN, VERB → VERB, ADJ/ADV → ADJ, SYM/X/INTJ → UNKNOWN,
  others FUNC), else the stated fallback FUNC for words of at most 3 characters and UNKNOWN for longer ones (no
  tagger is run);
- content-word sequence: ``fixation_word_is_content`` (2 content, 1 function, 0 off text), from ``is_content_word``,
  else an open-class universal tag, else word length > 3;
- global block: :data:`readgaze.features.FEATURE_SETS` ``["beyelstm_global"]``, **692 features**: the
  stationary and transition gaze entropies (words as areas of interest), the numbers of fixations and words, and
  the means of readgaze's 16 word measures over the trial's words of each of 43 classes (content/function 2,
  reduced POS 5, entity type 19, universal POS 17). Missing against the published 708 (44 × 16 + 4): one word group
  of the lab's list, and the 16 report columns themselves, for which readgaze's own word measures stand
  (first-fixation, gaze, total, go-past, selective go-past, single-fixation and rereading durations, fixation,
  run and regression counts, skip, regression in/out, first-fixation progressive, landing position). The
  entropies are computed over words, not over screen regions. A group the words table cannot fill (no
  ``entity_type``) leaves its features missing (0 after scaling).

Departures: sequences are packed by length (as EyeBench; the goal-decoding code ran the LSTM over zero padding).
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence

from readgaze.features import FIXATION_FEATURES, REDUCED_POS, TRIAL_FEATURE_NAMES
from readgaze.models.base import ReadingModel
from readgaze.models.data.batch import ReadingBatch

GAZE_COLUMNS = ("duration_ms", "pupil", "x_px", "y_px")
"""The fixation-block inputs: EyeBench's ``CURRENT_FIX_DURATION, PUPIL, X, Y``."""
N_WORD_CATEGORIES, N_CONTENT_CLASSES = len(REDUCED_POS) + 1, 3  # incl. 0 = off text / padding


class BEyeLSTM(ReadingModel):
    """Gaze, reduced-POS and content-word BiLSTMs plus a global-feature block.

    Parameters
    ----------
    n_trial_features : int
        Size of the global feature vector; linked from the datamodule (692 with ``trial_feature_set:
        beyelstm_global``; the default is the datamodule's default set).
    hidden_size : int
        LSTM hidden size per direction (EyeBench 64; GD 128; sweep {64, 128}).
    embedding_dim : int
        Reduced-POS and content-word embedding size (EyeBench 4; GD 8; sweep {4, 8}).
    dropout : float
        Dropout in every block (EyeBench 0.5; GD 0.3; sweep {0.1, 0.3, 0.5}).
    fc1_size, fc2_size : int
        The two dense layers after each LSTM (EyeBench 50, 20).
    global_out_size : int
        Output of the global-feature block (EyeBench ``gsf_out`` 32).
    after_concat_size : int
        Hidden layer of the head (EyeBench 32).
    num_classes, learning_rate, weight_decay, warmup_ratio, class_weighted_loss, predictions_dir
        See :class:`readgaze.models.base.ReadingModel` (EyeBench lr swept in {1e-3, 3e-3, 1e-2}).
    """

    CARD = {  # the registry reads this (readgaze models, the zoo and learns tests): no other file to edit
        "name": "BEyeLSTM",
        "tasks": ("reading_goal", "comprehension"),
        "paper": "Reich et al. 2022, ETRA",
        "quick": {"learning_rate": 3e-3},
    }

    sequence_blocks = ("gaze", "category", "content")
    """The LSTM blocks this model reads (a variant drops some, :class:`readgaze.models.fse.FSE`)."""

    def __init__(self, n_trial_features: int = len(TRIAL_FEATURE_NAMES), hidden_size: int = 64, embedding_dim: int = 4,
                 dropout: float = 0.5, fc1_size: int = 50, fc2_size: int = 20, global_out_size: int = 32,
                 after_concat_size: int = 32, **training) -> None:
        super().__init__(**training)
        self.save_hyperparameters()
        self.register_buffer("gaze_columns", torch.tensor([FIXATION_FEATURES.index(c) for c in GAZE_COLUMNS]),
                             persistent=False)
        lstm = dict(hidden_size=hidden_size, fc1_size=fc1_size, fc2_size=fc2_size, dropout=dropout)
        self.gaze_block = LSTMBlock(len(GAZE_COLUMNS), **lstm)
        if "category" in self.sequence_blocks:
            self.category_embedding = nn.Embedding(N_WORD_CATEGORIES, embedding_dim, padding_idx=0)
            self.category_block = LSTMBlock(embedding_dim, **lstm)
        if "content" in self.sequence_blocks:
            self.content_embedding = nn.Embedding(N_CONTENT_CLASSES, embedding_dim, padding_idx=0)
            self.content_block = LSTMBlock(embedding_dim, **lstm)
        self.global_block = nn.Sequential(nn.Dropout(dropout), nn.Linear(n_trial_features, global_out_size),
                                          nn.ReLU())
        self.head = nn.Sequential(nn.Linear(len(self.sequence_blocks) * fc2_size + global_out_size,
                                            after_concat_size), nn.ReLU(),
                                  nn.Linear(after_concat_size, self.num_classes))

    def forward(self, batch: ReadingBatch) -> torch.Tensor:
        """Logits ``(B, num_classes)``.

        Legend: B batch, F fixations, E embedding, S fc2_size, G global_out_size, n n_trial_features::

            gaze (B,F,4)                   ─► BiLSTM block ─► (B,S) ─┐
            reduced POS (B,F) ─► embed E   ─► BiLSTM block ─► (B,S) ─┤
            content (B,F)     ─► embed E   ─► BiLSTM block ─► (B,S) ─┼─► concat ─► fc–ReLU–fc ─► logits
            trial_features (B,n)           ─► dropout–fc–ReLU ─► (B,G) ┘
        """
        lengths = batch.fixation_mask.sum(dim=1)  # (B,)
        gaze = batch.fixation_features.index_select(-1, self.gaze_columns) * batch.fixation_mask[..., None]  # (B,F,4)
        parts = [self.gaze_block(gaze, lengths)]  # (B, S)
        if "category" in self.sequence_blocks:
            parts.append(self.category_block(self.category_embedding(batch.fixation_word_category), lengths))
        if "content" in self.sequence_blocks:
            parts.append(self.content_block(self.content_embedding(batch.fixation_word_is_content), lengths))
        parts.append(self.global_block(batch.trial_features))  # (B, G)
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
