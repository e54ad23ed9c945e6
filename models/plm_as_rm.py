"""PLM-AS-RM, the "Haller RNN": word embeddings in scanpath order with each fixation's saccades and reading measures,
read by a BiLSTM and averaged over time.

Reference: Haller, P., Säuberli, A., Kiener, S. E., Pan, J., Yan, M., & Jäger, L. A. (2022). Eye-tracking based
classification of Mandarin Chinese readers with and without dyslexia using neural sequence models. TSAR workshop,
EMNLP 2022; as PLM-AS-RM in EyeBench (``PLMASfArgs``) and the "Haller RNN" of the goal-decoding papers (Shubi et al.
2025, ACL, arXiv:2410.20779; goal selection, arXiv:2505.02872).

Idea: as PLM-AS (:mod:`readgaze.models.plm_as`), the encoder's word embeddings (sub-tokens summed) are gathered in the
order
the words were fixated; unlike PLM-AS, each step also carries numbers about the fixation and its word. A one-layer
BiLSTM reads the sequence, its states are averaged over the real time steps, and a linear layer classifies.

Inputs: the text tokens, ``fixation_word_index`` and these columns of ``fixation_features`` (:data:`GAZE_COLUMNS`):
- 8 fixation features, the published ``CURRENT_FIX_Y``, ``NEXT_SAC_DURATION``, the next saccade's dx, dy and
  distance, the previous saccade's duration, dx and dy: ``y_px``, ``next_saccade_duration_ms``,
  ``next_saccade_dx_px``, ``next_saccade_dy_px``, ``next_saccade_amplitude_px``, ``previous_saccade_duration_ms``,
  ``previous_saccade_dx_px``, ``previous_saccade_dy_px``;
- 2 word features of the fixated word, ``IA_DWELL_TIME`` and ``IA_FIRST_FIXATION_DURATION``:
  ``total_fixation_duration_ms``, ``first_fixation_duration_ms``;
- and the missing flags of those that can be missing (8): 18 gaze numbers per step.

Departures: saccade durations are the gap between a fixation's end and the next one's start (readgaze's fixations
table has no saccade events) and distances are between fixation centres in px (the published features come from
the saccade's start and end points); the missing flags are extra (the lab code filled NaN from neighbouring rows).
The encoder trains when ``freeze_text_encoder=False``; off-text fixations keep their step (learned off-text
embedding, their word features missing).
"""

from __future__ import annotations

import torch
from torch import nn

from readgaze.features import FIXATION_FEATURES
from readgaze.models.base import ReadingModel
from readgaze.models.data.batch import ReadingBatch
from readgaze.models.layers import encode_words, packed, scanpath_rows
from readgaze.models.text_encoder import load_encoder

FIXATION_COLUMNS = ("y_px", "next_saccade_duration_ms", "next_saccade_dx_px", "next_saccade_dy_px",
                    "next_saccade_amplitude_px", "previous_saccade_duration_ms", "previous_saccade_dx_px",
                    "previous_saccade_dy_px")
WORD_COLUMNS = ("total_fixation_duration_ms", "first_fixation_duration_ms")
GAZE_COLUMNS = (*FIXATION_COLUMNS, *WORD_COLUMNS,
                *(f"{c}_missing" for c in FIXATION_COLUMNS + WORD_COLUMNS if f"{c}_missing" in FIXATION_FEATURES))
"""The 18 gaze numbers of one step, by name in :data:`readgaze.features.FIXATION_FEATURES`."""


class PLMASRM(ReadingModel):
    """[word embedding in scanpath order; 18 gaze numbers] → BiLSTM → mean over time → linear head.

    Parameters
    ----------
    text_encoder : str
        ``"tiny"``, ``"minilm"``, or a transformers name/path (paper: ``roberta-large``).
    lstm_hidden_size : int
        Per direction (EyeBench 70; sweep {10, 40, 70}).
    dropout : float
        Before the head.
    freeze_text_encoder : bool
        Keep the encoder fixed (EyeBench default True).
    num_classes, learning_rate, weight_decay, warmup_ratio, class_weighted_loss, predictions_dir
        See :class:`readgaze.models.base.ReadingModel` (EyeBench: lr swept in {1e-5, 3e-5, 1e-4, 2e-4}, batch 16).
    """

    CARD = {  # the registry reads this (readgaze models, the zoo and learns tests): no other file to edit
        "name": "PLM-AS-RM (Haller RNN)",
        "tasks": ("reading_goal", "comprehension", "goal_question"),
        "paper": "Haller et al. 2022, TSAR@EMNLP; goal selection: arXiv:2505.02872",
        "quick": {"lstm_hidden_size": 32, "freeze_text_encoder": False},
    }

    def __init__(self, text_encoder: str = "tiny", lstm_hidden_size: int = 70, dropout: float = 0.1,
                 freeze_text_encoder: bool = True, learning_rate: float = 1e-4, **training) -> None:
        super().__init__(learning_rate=learning_rate, **training)
        self.save_hyperparameters()
        self.encoder = load_encoder(text_encoder, freeze=freeze_text_encoder)
        self.freeze_text_encoder = freeze_text_encoder
        self.register_buffer("gaze_columns", torch.tensor([FIXATION_FEATURES.index(c) for c in GAZE_COLUMNS]),
                             persistent=False)
        d = self.encoder.config.hidden_size
        self.off_text = nn.Parameter(torch.zeros(d))
        self.lstm = nn.LSTM(d + len(GAZE_COLUMNS), lstm_hidden_size, batch_first=True, bidirectional=True)
        self.dropout = nn.Dropout(dropout)
        self.head = nn.Linear(2 * lstm_hidden_size, self.num_classes)

    def forward(self, batch: ReadingBatch) -> torch.Tensor:
        """Logits ``(B, num_classes)``.

        Legend: B batch, F fixations, D hidden, G = 18 gaze numbers, H lstm_hidden_size::

            words in scanpath order (B,F,D) ⊕ gaze (B,F,G) ─► BiLSTM ─► (B,F,2H)
            ─mean over real steps─► (B,2H) ─► linear
        """
        _, words = encode_words(self.encoder, batch, "sum", self.freeze_text_encoder)  # (B, W, D)
        steps = torch.cat([scanpath_rows(batch, words, self.off_text),
                           batch.fixation_features.index_select(-1, self.gaze_columns)], dim=-1)  # (B, F, D+G)
        states, _ = self.lstm(packed(steps, batch.fixation_mask))
        states, lengths = nn.utils.rnn.pad_packed_sequence(states, batch_first=True)  # (B, F', 2H), (B,)
        mean = states.sum(dim=1) / lengths.to(states.device).clamp(min=1)[:, None].to(states.dtype)  # (B, 2H)
        return self.head(self.dropout(mean))  # (B, C)
