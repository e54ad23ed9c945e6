"""readgaze.features is the one implementation of the trial and fixation-step features: the baselines' feature sets,
the models' inputs and prep's trial features give a feature of one name the same values and dtype, a feature set
means one list under one name, and the models' array cache keys on the feature definitions themselves. Runs from a
clone (synthetic data, no ../shared)."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from synthetic import write_synthetic_dataset

from readgaze import Dataset
from readgaze import features as feat


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    return write_synthetic_dataset(tmp_path_factory.mktemp("features") / "ds", n_participants=6, n_items=4,
                                   n_words=20, off_text_rate=0.1)


def _models_tables(ds: Dataset) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The models' fixation table and trial feature table (by trial_id), as the datamodule builds them."""
    trials = (ds.trials.collect().sort("trial_id").with_row_index("trial_row")
              .with_columns(pl.col("trial_row").cast(pl.Int64)))
    lazy = trials.lazy().select("trial_row", "trial_id", "text_id")
    trial_words = feat.trial_word_table(lazy, feat.word_table(ds.words), ds.word_measures).collect()
    fixations = feat.fixation_table(lazy, ds.fixations, trial_words.lazy()).collect()
    table = feat.trial_feature_table(lazy, fixations.lazy(), trial_words.lazy()).collect()
    ids = trials.select("trial_row", "trial_id")
    return (fixations.join(ids, on="trial_row").sort("trial_id", "fixation_index"),
            table.join(ids, on="trial_row").drop("trial_row").sort("trial_id"))


def _same(a: pl.Series, b: pl.Series) -> bool:
    """Equal values, bit for bit, missing in the same rows (null and NaN both count as missing)."""
    x, y = (s.cast(pl.Float64).fill_nan(None).fill_null(np.nan).to_numpy() for s in (a, b))
    return np.array_equal(x, y, equal_nan=True)


def test_baselines_models_and_prep_compute_a_feature_of_one_name_alike(dataset):
    """Every feature name the baselines' sets (compute_feature_sets) share with the models' trial table, with
    prep's trial features (compute_trial_features) and, step by step, with the models' fixation table, has the same
    values (bit for bit: one expression, added up in row order) and, in the two feature tables, the same dtype."""
    ds = Dataset(dataset)
    baselines = feat.compute_feature_sets(ds.fixations, ds.words, ds.word_measures, ds.trials).sort("trial_id")
    prep = feat.compute_trial_features(ds.fixations, ds.words, ds.trials, ds.word_measures).collect()
    fixations, models = _models_tables(ds)
    shared = [c for c in models.columns if c != "trial_id" and c in baselines.columns]
    assert set(feat.TRIAL_FEATURES) <= set(shared) and len(shared) == 10
    differ = [c for c in shared if not _same(baselines[c], models[c])]
    assert not differ, f"the baselines and the models compute {differ} differently"
    assert all(baselines[c].dtype == models[c].dtype == pl.Float64 for c in shared)
    with_prep = [c for c in prep.columns if c != "trial_id" and c in baselines.columns]
    assert len(with_prep) == len(feat.SUMMARY_FEATURES)
    assert not [c for c in with_prep if not _same(baselines[c], prep.sort("trial_id")[c])]
    steps = feat.fixation_steps(ds.fixations).collect().sort("trial_id", "fixation_index")
    step_names = [c for c in steps.columns if c.startswith("next_") and c in fixations.columns]
    assert {"next_word_step", "next_saccade_amplitude_px", "next_saccade_duration_ms"} <= set(step_names)
    assert not [c for c in step_names if not _same(steps[c], fixations[c])]
    # the check can fail: the saccade-based regression rate is another quantity, under another name
    assert "regression_rate" not in feat.TRIAL_FEATURES and not _same(prep["regression_rate"],
                                                                     prep.join(models, on="trial_id")[
                                                                         "fixation_regression_rate"])


def test_a_feature_set_is_one_list_under_one_name():
    """The kNN and gradient-boosting baselines and the datamodule's default trial vector are the set ``readgaze``."""
    from readgaze.baselines import BASELINES
    from readgaze.models.data import ReadingDataModule

    assert feat.FEATURE_SETS["readgaze"] == feat.TRIAL_FEATURES
    assert BASELINES["knn"].features == BASELINES["gradient_boosting"].features == feat.FEATURE_SETS["readgaze"]
    dm = ReadingDataModule("unused", trial_feature_set="readgaze")
    assert dm.n_trial_features == len(feat.TRIAL_FEATURE_NAMES) == len(feat.with_indicators(feat.TRIAL_FEATURES))


def test_the_array_cache_misses_after_a_feature_definition_changes(dataset, tmp_path, monkeypatch):
    """A replaced definition (here the word aggregations: skip rate counted as its complement) changes the key: the
    arrays are built again, with the new values; putting the definition back finds the first entry."""
    from readgaze.features import inputs
    from readgaze.models.data import ReadingDataModule

    monkeypatch.setenv("READGAZE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("READGAZE_ARRAY_CACHE", "1")
    builds = []
    original_build = ReadingDataModule._build_shared

    def counting(self):
        builds.append(1)
        return original_build(self)

    monkeypatch.setattr(ReadingDataModule, "_build_shared", counting)

    def setup() -> ReadingDataModule:
        dm = ReadingDataModule(str(dataset), n_folds=3, fold=0, split_unit="participant_item")
        dm.setup("fit")
        return dm

    first = setup()
    assert len(builds) == 1 and setup()._cache_key == first._cache_key and len(builds) == 1
    original = inputs.trial_word_aggregates

    def complement_skip_rate() -> list[pl.Expr]:
        return [(1 - e).alias("skip_rate") if e.meta.output_name() == "skip_rate" else e for e in original()]

    monkeypatch.setattr(inputs, "trial_word_aggregates", complement_skip_rate)
    changed = setup()
    assert changed._cache_key != first._cache_key and len(builds) == 2
    old, new = (d.trial_features_raw.sort("trial_id")["skip_rate"].to_numpy() for d in (first, changed))
    assert np.allclose(new, 1 - old)
    monkeypatch.setattr(inputs, "trial_word_aggregates", original)
    assert setup()._cache_key == first._cache_key and len(builds) == 2
