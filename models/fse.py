"""FSE (BiEyeLSTM – No Text): BEyeLSTM's fixation block and a block over 4 global gaze features, nothing lexical.

Reference: the fixation-sequence-encoder baseline of Shubi et al., "Decoding reading goals from eye movements"
(ACL 2025, arXiv:2410.20779), built from BEyeLSTM (Reich et al. 2022, ETRA, doi:10.1145/3517031.3529639) with its
part-of-speech and content-word blocks switched off.

Idea: what the scanpath says without knowing any word: a BiLSTM over each fixation's duration, pupil size and
position, joined with four global numbers of the trial, then the BEyeLSTM head.

Inputs (set the datamodule's ``trial_feature_set: fse_global``, as the packaged configs do):
``fixation_features`` columns ``duration_ms, pupil, x_px, y_px`` and ``trial_features`` =
:data:`readgaze.features.FEATURE_SETS` ``["fse_global"]``: the stationary and transition gaze entropies (over
words as areas of interest), the number of fixations and the number of words (4 features, as published).

A subclass of :class:`readgaze.models.beyelstm.BEyeLSTM` that reads only its ``gaze`` block; see that module for the
blocks.
"""

from __future__ import annotations

from readgaze.features import TRIAL_FEATURE_NAMES
from readgaze.models.beyelstm import BEyeLSTM


class FSE(BEyeLSTM):
    """BEyeLSTM's fixation BiLSTM + global block (4 features) → head.

    Parameters
    ----------
    n_trial_features : int
        Size of the global feature vector; linked from the datamodule (4 with ``trial_feature_set: fse_global``;
        the default is the datamodule's default set).
    hidden_size, dropout, fc1_size, fc2_size, global_out_size, after_concat_size
        As :class:`readgaze.models.beyelstm.BEyeLSTM` (the published sweep: BEyeLSTM's minus ``embedding_dim``).
    num_classes, learning_rate, weight_decay, warmup_ratio, class_weighted_loss, predictions_dir
        See :class:`readgaze.models.base.ReadingModel`.
    """

    CARD = {  # the registry reads this (readgaze models, the zoo and learns tests): no other file to edit
        "name": "FSE (BiEyeLSTM - No Text)",
        "tasks": ("reading_goal", "comprehension"),
        "paper": "Shubi et al. 2025, ACL, arXiv:2410.20779; after Reich et al. 2022",
        "quick": {"learning_rate": 3e-3},
    }

    sequence_blocks = ("gaze",)

    def __init__(self, n_trial_features: int = len(TRIAL_FEATURE_NAMES), hidden_size: int = 64,
                 dropout: float = 0.5, fc1_size: int = 50, fc2_size: int = 20, global_out_size: int = 32,
                 after_concat_size: int = 32, **training) -> None:
        super().__init__(n_trial_features, hidden_size, 4, dropout, fc1_size, fc2_size, global_out_size,
                         after_concat_size, **training)
