"""The datamodule's array cache: a unit reading the cache gets exactly the batches of one that builds everything;
the task's arrays are built once per dataset and task, memory-mapped after; a changed dataset file is never read
from an old entry; the scalers are cached per training set."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from synthetic import write_synthetic_dataset

from readgaze.models.data import ReadingDataModule


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    return write_synthetic_dataset(tmp_path_factory.mktemp("cache"), n_participants=6, n_items=6, n_words=16)


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("READGAZE_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache" / "arrays"


def _items(datamodule: ReadingDataModule) -> list[dict]:
    return [datamodule._datasets[s][i] for s in ("train", "val", "test") for i in range(len(datamodule._datasets[s]))]


@pytest.mark.parametrize("settings", [{"task": "reading_goal", "fold": 1},
                                      {"task": "comprehension", "fold": 2, "reading_regime": "all", "strict": True,
                                       "max_text_tokens": 24}])
def test_a_unit_from_the_cache_gets_the_batches_of_one_that_builds_everything(dataset, cache, monkeypatch, settings):
    kwargs = {"n_folds": 3, "split_unit": "participant_item", **settings}
    monkeypatch.setenv("READGAZE_ARRAY_CACHE", "0")
    built = ReadingDataModule(str(dataset), **kwargs)
    built.setup("fit")
    assert not cache.exists()
    monkeypatch.setenv("READGAZE_ARRAY_CACHE", "1")
    ReadingDataModule(str(dataset), **kwargs).setup("fit")  # builds the entry
    cached = ReadingDataModule(str(dataset), **kwargs)
    cached.setup("fit")  # reads it
    assert isinstance(cached._datasets["train"].arrays["fixation_offsets"], np.memmap)
    assert cached.qc_records() == built.qc_records()
    assert cached.trials.equals(built.trials)
    assert cached.trial_features_raw.sort("trial_id").equals(built.trial_features_raw.sort("trial_id"))
    for a, b in zip(_items(built), _items(cached), strict=True):
        assert a.keys() == b.keys()
        for key, value in a.items():
            if isinstance(value, np.ndarray):
                assert value.dtype == b[key].dtype and np.array_equal(value, b[key]), key
            else:
                assert value == b[key], key


def test_arrays_are_built_once_per_dataset_and_task_and_rebuilt_when_the_data_change(dataset, cache, monkeypatch,
                                                                                   tmp_path):
    builds = []
    original = ReadingDataModule._build_shared

    def counting(self):
        builds.append(self.fold)
        return original(self)

    monkeypatch.setattr(ReadingDataModule, "_build_shared", counting)
    for fold in (0, 1, 2):  # three units of different folds: one build
        ReadingDataModule(str(dataset), n_folds=3, fold=fold, split_unit="participant_item").setup("fit")
    assert builds == [0]
    assert len(list(cache.glob("*/scalers/*.npz"))) == 3  # one scaler set per fold's training trials
    ReadingDataModule(str(dataset), n_folds=3, fold=2, split_unit="participant_item").setup("fit")
    assert builds == [0] and len(list(cache.glob("*/scalers/*.npz"))) == 3
    ReadingDataModule(str(dataset), task="comprehension", n_folds=3, reading_regime="all").setup("fit")
    assert builds == [0, 0]  # another task: its own entry

    changed = tmp_path / "changed"
    changed.mkdir()
    for table in ("trials", "words", "word_measures", "fixations"):
        frame = pl.read_parquet(dataset / f"{table}.parquet")
        if table == "fixations":
            frame = frame.with_columns(pl.col("duration_ms") * 2)
        frame.write_parquet(changed / f"{table}.parquet")
    again = ReadingDataModule(str(changed), n_folds=3, fold=0, split_unit="participant_item")
    again.setup("fit")
    assert builds == [0, 0, 0]  # other files: a new entry, never the old arrays
    fixation = again.trial_features_raw["mean_fixation_duration_ms"]
    first = ReadingDataModule(str(dataset), n_folds=3, fold=0, split_unit="participant_item")
    first.setup("fit")
    assert np.allclose(fixation.to_numpy(), 2 * first.trial_features_raw["mean_fixation_duration_ms"].to_numpy())
