"""AhnCNN: three 1-D convolutions over the fixation sequence (duration, pupil, x, y), pooled, then dense layers.

Reference: Ahn, S., Kelton, C., Balasubramanian, A., & Zelinsky, G. (2020). Towards predicting reading comprehension
from gaze behavior. ETRA '20 Short Papers, doi:10.1145/3379156.3391335. Defaults as EyeBench's ``AhnCNN``.

Idea: local patterns of a few consecutive fixations (a regression, a long fixation after a skip) are detected by
three stacked convolutions of kernel 3 with 40 channels; their responses are pooled and classified by two dense
layers. No text, no word measures.

Inputs: as :mod:`readgaze.models.ahn_rnn` (``fixation_features`` columns ``duration_ms, pupil, x_px, y_px``);
:meth:`AhnCNN.classify` takes the raw ``(B, F, 4)`` sequence, so the network also trains on SB-SAT's windows.

Departures from the lab code:

- The lab flattened the convolution output of a sequence padded to a corpus-wide maximum (OneStop: 815 fixations),
  so the network only ran on inputs of exactly that length. Here, by default (``sequence_length=None``), the input
  length is the batch's: convolutions use zero "same" padding, padding positions are zeroed after each layer, and
  the responses are pooled by a mean and a max over each trial's true positions (the paper's max-pool of 2 is subsumed
  by the max). A trial's logits do not depend on how much padding its batch has.
- With ``sequence_length=L`` (fixed-length windows, as Ahn et al.'s 21-fixation SB-SAT windows) the paper's head is
  used: valid convolutions, max-pool 2, dropout and a dense layer over the flattened ``((L − 6) // 2) · 40`` values;
  a batch of another length raises :class:`readgaze.errors.ConfigError`.
"""

from __future__ import annotations

import torch
from torch import nn

from readgaze.errors import ConfigError
from readgaze.models.base import ReadingModel
from readgaze.models.data.batch import ReadingBatch
from readgaze.models.layers import AHN_COLUMNS, gaze_sequence


class AhnCNN(ReadingModel):
    """3 × (Conv1d k3 – ReLU) → pool → Dropout → FC–ReLU–FC–ReLU–FC → logits.

    Parameters
    ----------
    n_inputs : int
        Features per fixation (4: duration, pupil, x, y).
    channels : int
        Channels of each convolution (Ahn/EyeBench 40; sweep {40, 80}).
    fc1_size, fc2_size : int
        Dense layers after pooling (EyeBench 50, 20).
    fc_dropout : float
        Dropout after pooling (EyeBench sweeps it).
    sequence_length : int, optional
        Fixed input length for the paper's flatten head; None (default) = any length, pooled.
    num_classes, learning_rate, weight_decay, warmup_ratio, class_weighted_loss, predictions_dir
        See :class:`readgaze.models.base.ReadingModel` (EyeBench sweep lr ∈ {1e-3, 1e-4, 3e-5, 1e-5}).
    """

    CARD = {  # the registry reads this (readgaze models, the zoo and learns tests): no other file to edit
        "name": "AhnCNN",
        "tasks": ("reading_goal", "comprehension"),
        "paper": "Ahn et al. 2020, ETRA",
        "quick": {"learning_rate": 3e-3},
    }

    def __init__(self, n_inputs: int = len(AHN_COLUMNS), channels: int = 40, fc1_size: int = 50, fc2_size: int = 20,
                 fc_dropout: float = 0.1, sequence_length: int | None = None, **training) -> None:
        super().__init__(**training)
        self.save_hyperparameters()
        if sequence_length is not None and sequence_length < 8:
            raise ConfigError(f"AhnCNN sequence_length: got {sequence_length}, expected at least 8 (3 valid "
                              f"convolutions of kernel 3 and a max-pool of 2)")
        self.sequence_length = sequence_length
        padding = "same" if sequence_length is None else "valid"
        self.convolutions = nn.ModuleList(nn.Conv1d(n_inputs if i == 0 else channels, channels, 3, padding=padding)
                                          for i in range(3))
        pooled = 2 * channels if sequence_length is None else ((sequence_length - 6) // 2) * channels
        self.dropout = nn.Dropout(fc_dropout)
        self.head = nn.Sequential(nn.Linear(pooled, fc1_size), nn.ReLU(), nn.Linear(fc1_size, fc2_size), nn.ReLU(),
                                  nn.Linear(fc2_size, self.num_classes))

    def forward(self, batch: ReadingBatch) -> torch.Tensor:
        """Logits ``(B, num_classes)`` from the batch's fixation sequence."""
        return self.classify(*gaze_sequence(batch))

    def classify(self, x: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        """Logits ``(B, C)`` of sequences ``x`` ``(B, F, n_inputs)`` with true ``lengths`` ``(B,)``.

        Legend: B batch, F fixations, K channels, C classes.
        """
        b, f, _ = x.shape
        if self.sequence_length is not None:
            if f != self.sequence_length:
                raise ConfigError(f"AhnCNN was built for sequences of {self.sequence_length} fixations, got {f}; "
                                  f"use sequence_length null for variable-length trials")
            h = x.transpose(1, 2)  # (B, 4, F)
            for convolution in self.convolutions:
                h = torch.relu(convolution(h))  # valid: (B, K, F - 2), (F - 4), (F - 6)
            h = nn.functional.max_pool1d(h, 2)  # (B, K, (F - 6) // 2)
            return self.head(self.dropout(h.flatten(1)))  # (B, C)
        if f == 0:  # a batch of trials without fixations reads one zero step
            x, f = x.new_zeros(b, 1, x.shape[2]), 1
        mask = torch.arange(f, device=x.device)[None, :] < lengths[:, None]  # (B, F) true positions
        keep = mask[:, None, :]  # (B, 1, F)
        h = x.transpose(1, 2) * keep  # (B, 4, F)
        for convolution in self.convolutions:  # zero padding positions after each layer: none leaks into a trial
            h = torch.relu(convolution(h)) * keep  # (B, K, F)
        count = keep.sum(dim=-1).clamp(min=1)  # (B, 1)
        mean = (h * keep).sum(dim=-1) / count  # (B, K)
        top = h.masked_fill(~keep, float("-inf")).amax(dim=-1)  # (B, K)
        top = torch.where(torch.isfinite(top), top, torch.zeros_like(top))  # a trial without fixations: 0
        return self.head(self.dropout(torch.cat([mean, top], dim=-1)))  # (B, C)
