"""AhnRNN: a bidirectional LSTM over the fixation sequence (duration, pupil, x, y), nothing else.

Reference: Ahn, S., Kelton, C., Balasubramanian, A., & Zelinsky, G. (2020). Towards predicting reading comprehension
from gaze behavior. ETRA '20 Short Papers, doi:10.1145/3379156.3391335. Defaults as EyeBench's ``AhnRNN``.

Idea: the scanpath alone, as a sequence of four numbers per fixation, is read by a BiLSTM; the summary of both
directions goes through two dense layers to the class logits. No text, no word measures.

Inputs: fixation level only, ``fixation_features`` columns ``duration_ms, pupil, x_px, y_px`` (scaled on the
training split as every readgaze input; a missing pupil is 0). :meth:`AhnRNN.classify` takes the raw ``(B, F, 4)``
sequence, so the same network trains on SB-SAT's windowed fixation arrays (``experiments/sbsat_bookwise.py``).

Departures from the lab code (both are bugs there; that code scores exactly chance on every EyeBench task):

- The lab read ``x[:, -1, :]``, the LSTM output at the last *padded* position of a right-zero-padded batch. Here the
  sequence is packed by length, and the summary is the forward direction's state after the trial's true last
  fixation joined with the backward direction's state after its first fixation.
- The lab applied a ReLU to the logits (so a class could never be argued against); here the last layer is linear.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence

from readgaze.models.base import ReadingModel
from readgaze.models.data.batch import ReadingBatch
from readgaze.models.layers import AHN_COLUMNS, gaze_sequence


class AhnRNN(ReadingModel):
    """BiLSTM over the fixation sequence → FC–ReLU–Dropout–FC → logits.

    Parameters
    ----------
    n_inputs : int
        Features per fixation (4: duration, pupil, x, y).
    hidden_size : int
        LSTM hidden size per direction (Ahn/EyeBench 25; sweep {25, 50}).
    num_layers : int
        Stacked LSTM layers (EyeBench 1; sweep {1, 2, 4}).
    fc_size : int
        Hidden dense layer (EyeBench: 2·hidden → 20).
    fc_dropout : float
        Dropout before the output layer (EyeBench sweeps it).
    num_classes, learning_rate, weight_decay, warmup_ratio, class_weighted_loss, predictions_dir
        See :class:`readgaze.models.base.ReadingModel` (EyeBench sweep lr ∈ {1e-3, 1e-4, 3e-5, 1e-5}).
    """

    CARD = {  # the registry reads this (readgaze models, the zoo and learns tests): no other file to edit
        "name": "AhnRNN",
        "tasks": ("reading_goal", "comprehension"),
        "paper": "Ahn et al. 2020, ETRA",
        "quick": {"learning_rate": 1e-2},
    }

    def __init__(self, n_inputs: int = len(AHN_COLUMNS), hidden_size: int = 25, num_layers: int = 1, fc_size: int = 20,
                 fc_dropout: float = 0.1, **training) -> None:
        super().__init__(**training)
        self.save_hyperparameters()
        self.lstm = nn.LSTM(n_inputs, hidden_size, num_layers=num_layers, batch_first=True, bidirectional=True)
        self.head = nn.Sequential(nn.Linear(2 * hidden_size, fc_size), nn.ReLU(), nn.Dropout(fc_dropout),
                                  nn.Linear(fc_size, self.num_classes))  # no ReLU on the logits

    def forward(self, batch: ReadingBatch) -> torch.Tensor:
        """Logits ``(B, num_classes)`` from the batch's fixation sequence."""
        return self.classify(*gaze_sequence(batch))

    def classify(self, x: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        """Logits ``(B, C)`` of sequences ``x`` ``(B, F, n_inputs)`` with true ``lengths`` ``(B,)``.

        Legend: B batch, F fixations, H hidden_size, C classes. A trial without fixations reads one zero step.
        """
        if x.shape[1] == 0:
            x = x.new_zeros(x.shape[0], 1, x.shape[2])
        packed = pack_padded_sequence(x, lengths.clamp(min=1).cpu(), batch_first=True, enforce_sorted=False)
        _, (h, _) = self.lstm(packed)  # h (layers·2, B, H); the last layer's forward and backward final states
        summary = torch.cat([h[-2], h[-1]], dim=-1)  # (B, 2H): forward after the true last step, backward after step 0
        return self.head(summary)  # (B, C)
