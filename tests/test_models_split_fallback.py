"""split_unit 'auto': the field's participant x item folds when the data allow, trial folds (said loudly) when not."""

from __future__ import annotations

import pytest
from synthetic import write_synthetic_dataset

from readgaze.errors import ConfigError
from readgaze.models.data import ReadingDataModule


def test_auto_keeps_the_protocol_when_the_data_allow(tmp_path):
    write_synthetic_dataset(tmp_path, n_participants=12, n_items=6, n_words=12, seed=1)
    dm = ReadingDataModule(str(tmp_path), n_folds=3, text_encoder="tiny")
    dm.setup("fit")
    assert set(dm.trials["regime"].drop_nulls()) >= {"seen", "new_item", "new_participant"}
    assert dm.qc.total(reason="split_unit_fallback_to_trial", action=None) == 0


def test_auto_falls_back_to_trial_folds_on_tiny_data_and_records_it(tmp_path):
    write_synthetic_dataset(tmp_path, n_participants=2, n_items=2, n_words=12, seed=1)
    dm = ReadingDataModule(str(tmp_path), n_folds=10, text_encoder="tiny")
    dm.setup("fit")
    assert set(dm.trials["regime"].drop_nulls()) == {"seen"}
    assert dm.qc.total(reason="split_unit_fallback_to_trial", action="warning") == dm.trials.height
    with pytest.raises(ConfigError, match="participant and item folds"):
        ReadingDataModule(str(tmp_path), n_folds=10, text_encoder="tiny", split_unit="participant_item").setup("fit")
