"""``PredictionData``: every trial of a dataset folder, prepared for a trained model as its training data was.

What a model bundle (:mod:`readgaze.models.training.bundle`) brings replaces what training fits: the fitted
feature scalers (never refitted on new data), the task, the text encoder, the trial-feature set. No trial is left out
for want of a label (the label is null when the data has none; ``-1`` in the batch, which no model reads) and none
is dealt into folds: each trial's ``regime`` says whether its participant and item were among the training trials'
(``seen``, ``new_item``, ``new_participant``, ``new_item_participant``).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl

from readgaze import features as feat
from readgaze.errors import SchemaError
from readgaze.models.data.datamodule import ReadingDataModule
from readgaze.models.data.dataset import _TrialDataset
from readgaze.models.data.tasks import TASKS
from readgaze.splits.regimes import regime_expr


class PredictionData(ReadingDataModule):
    """The trials of ``path`` for scoring (module docstring); ``predict_dataloader`` yields every one, in
    ``trial_id`` order.

    Parameters
    ----------
    path : str or Path
        Dataset folder written by ``readgaze prep``.
    task, text_encoder, max_text_tokens, trial_feature_set, questions, reading_regime
        As :class:`ReadingDataModule`, the training run's.
    scalers : dict
        ``{"word", "fixation", "trial"}`` -> :meth:`RobustScaler.to_dict` output, fitted on the training split.
    training_participants, training_items : list of str
        The training split's participants and items.
    batch_size : int
    """

    def __init__(self, path: str | Path, *, task: str, text_encoder: str, max_text_tokens: int,
                 trial_feature_set: str, scalers: dict, training_participants: list[str],
                 training_items: list[str], batch_size: int = 16, questions: str | None = None,
                 reading_regime: str | None = None) -> None:
        super().__init__(str(path), task=task, text_encoder=text_encoder, max_text_tokens=max_text_tokens,
                         trial_feature_set=trial_feature_set, batch_size=batch_size, questions=questions,
                         reading_regime=reading_regime)
        self.scalers = {name: feat.RobustScaler.from_dict(saved) for name, saved in scalers.items()}
        self.training_participants, self.training_items = list(training_participants), list(training_items)

    def setup(self, stage: str | None = None) -> None:
        if self.trials is not None:
            return
        trials = self._scan("trials").collect()
        spec = TASKS[self.task]
        if all(c in trials.columns for c in spec.needs):
            trials = spec.trials(trials, self)  # label null where the task has none for a trial
        elif self.task == "goal_question":
            raise SchemaError(f"task goal_question reads {list(spec.needs)} from trials.parquet",
                              file=self.dataset.file("trials"))
        else:
            trials = trials.with_columns(pl.lit(None, spec.label_dtype).alias("label"))
        seen_p = pl.col("participant_id").cast(pl.String).is_in(self.training_participants)
        seen_i = pl.col("item_id").cast(pl.String).is_in(self.training_items)
        regime = regime_expr(~seen_p, ~seen_i)
        self.trials = (trials.with_columns(pl.col("label").cast(spec.label_dtype), seen_p.alias("participant_seen"),
                                           seen_i.alias("item_seen"), regime.alias("regime"),
                                           pl.lit("predict").alias("split"))
                       .sort("trial_id").with_row_index("trial_row"))
        self._warn_missing_features()
        shared = {"trials": self.trials, **self._raw_arrays(self.trials), **self._tokenise(self.trials)}
        arrays = self._fold_arrays(shared)  # scaled by the bundle's scalers (set in __init__), never refitted
        tokens = {"key": shared["token_key"], "encodings": shared["encodings"], "cut_per_trial": shared["token_cut"]}
        rows = np.arange(self.trials.height)
        self._count_cut_fixations(arrays, tokens, rows)
        labelled = self.trials.with_columns(pl.col("label").fill_null(-1))
        self._datasets["predict"] = _TrialDataset(rows, labelled, arrays, tokens)

    def predict_dataloader(self):
        return self._loader("predict")
