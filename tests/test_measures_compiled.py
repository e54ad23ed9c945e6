"""The compiled passes after line assignment give the NumPy reference's values bit for bit (#18).

The word measures' one-pass kernel (readgaze._measures_pass) against the whole-array measure functions of
readgaze.measures, and the trial features' forward saccade amplitude from whole-column steps against the
per-group diff it replaced.
"""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from polars.testing import assert_frame_equal
from test_prep_post_fast_paths import _corpus

from readgaze import measures
from readgaze.features import compute_trial_features
from readgaze.lines._common import pairwise as _pairwise  # the sums the measures pass calls
from readgaze.measures import compute_word_measures, use_compiled


def test_pairwise_matches_numpy_reduceat():
    """The first value plus the kernel's pairwise sum of the rest is np.add.reduceat's sum, also past the
    128-value blocks where NumPy splits the run (the kernel's explicit stack)."""
    rng = np.random.default_rng(3)
    for n in (1, 2, 7, 8, 9, 15, 16, 17, 128, 129, 130, 255, 256, 257, 1000, 4099, 100_003):
        v = rng.random(n + 1) * 1e3
        want = np.add.reduceat(v, [0])[0]
        assert want == v[0] + _pairwise(v, 1, n), n
    v = rng.random(1001) * 1e3  # not the sequential sum: the test can tell the two apart
    seq = v[0]
    for x in v[1:]:
        seq += x
    assert seq != np.add.reduceat(v, [0])[0]


@pytest.mark.parametrize("off_text", ["skip", "leave"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_compiled_measures_equal_the_reference_bit_for_bit(seed, off_text):
    """Regressions, refixations, off-text fixations, unknown trials, a trial without text, words outside
    the text, an RTL text, null x, and words fixated 9 to 300 times (the pairwise sums)."""
    fx, words, trials = _corpus(seed)
    got = compute_word_measures(fx, words, trials, off_text=off_text, compiled=True).collect()
    want = compute_word_measures(fx, words, trials, off_text=off_text, compiled=False).collect()
    assert_frame_equal(got, want, check_exact=True)
    assert got["fixation_count"].max() >= 129  # past one pairwise block
    assert got["gaze_duration_ms"].null_count() < got.height
    assert got["landing_position"].null_count() < got["fixation_count"].eq(0).sum() + got.height // 2


def test_compiled_measures_on_shuffled_rows_and_sparse_word_indices():
    fx, words, trials = _corpus(5, n_trials=30)
    shuffled = fx.sample(fraction=1.0, shuffle=True, seed=1)
    want = compute_word_measures(fx, words, trials, compiled=False).collect()
    assert_frame_equal(compute_word_measures(shuffled, words, trials, compiled=True).collect(), want,
                       check_exact=True)
    far = words.with_columns(pl.col("word_index") * 100_000)  # no lookup table: the reference runs
    fx_far = fx.with_columns(pl.col("word_index") * 100_000)
    assert_frame_equal(compute_word_measures(fx_far, far, trials, compiled=True).collect(),
                       compute_word_measures(fx_far, far, trials, compiled=False).collect(), check_exact=True)


def test_compiled_measures_hand_counted_regression_path():
    """A trial reads words 0 1 0 2 1 3 (200, 100, 50, 80, 70, 60 ms). A regression path runs from the word's
    first fixation to the first fixation on a word to its right: word 1's is 100 + 50, word 2's 80 + 70."""
    words = pl.DataFrame({"text_id": "t", "ia_index": [0, 1, 2, 3], "word_index": [0, 1, 2, 3],
                          "left_px": [0.0, 10.0, 20.0, 30.0], "right_px": [10.0, 20.0, 30.0, 40.0]})
    fx = pl.DataFrame({"trial_id": "a", "fixation_index": range(6), "word_index": [0, 1, 0, 2, 1, 3],
                       "duration_ms": [200.0, 100.0, 50.0, 80.0, 70.0, 60.0]}).with_columns(
        pl.col("word_index").cast(pl.Int32))
    trials = pl.DataFrame({"trial_id": ["a"], "text_id": ["t"]})
    for compiled in (True, False):
        m = compute_word_measures(fx, words, trials, compiled=compiled).collect()
        assert m["regression_path_duration_ms"].to_list() == [200.0, 150.0, 150.0, 60.0]
        assert m["selective_regression_path_duration_ms"].to_list() == [200.0, 100.0, 80.0, 60.0]
        assert m["run_count"].to_list() == [2, 2, 1, 1]
        assert m["regression_in_count"].to_list() == [1, 1, 0, 0]
        assert m["regression_out_count"].to_list() == [0, 1, 1, 0]
        assert m["skipped"].to_list() == [False, False, False, False]


def test_use_compiled_threshold(monkeypatch):
    import sys

    monkeypatch.delitem(sys.modules, "numba", raising=False)
    assert not use_compiled(measures.COMPILED_FROM - 1) and use_compiled(measures.COMPILED_FROM)
    monkeypatch.setitem(sys.modules, "numba", object())  # numba loaded by another step: its cost is paid
    assert use_compiled(measures.COMPILED_LOADED_FROM) and not use_compiled(measures.COMPILED_LOADED_FROM - 1)


def _amplitude_by_group_diff(fx: pl.DataFrame) -> pl.DataFrame:
    """The mean forward saccade amplitude as before #18: a diff inside each trial's group."""
    dx, dy = pl.col("x_px").diff(), pl.col("y_px").diff()
    return (fx.sort("trial_id", "fixation_index").group_by("trial_id", maintain_order=True)
            .agg((dx.pow(2) + dy.pow(2)).sqrt().filter(dx > 0).mean().alias("mean_forward_saccade_amplitude_px")))


def test_forward_saccade_amplitude_equals_the_per_group_diff():
    """Null and NaN coordinates, one-fixation trials, backward-only trials: the whole-column steps give the
    per-group diff's means bit for bit (fractional coordinates, so that the sums round)."""
    fx, words, trials = _corpus(6)
    rng = np.random.default_rng(9)
    fx = fx.with_columns(pl.Series("x_px", rng.random(fx.height) * 1000 + 1 / 3),
                         pl.Series("y_px", rng.random(fx.height) * 500 / 7))
    fx = fx.with_columns(pl.when(pl.int_range(pl.len()) % 53 == 0).then(None).otherwise(pl.col("x_px"))
                         .alias("x_px"),
                         pl.when(pl.int_range(pl.len()) % 71 == 0).then(float("nan")).otherwise(pl.col("y_px"))
                         .alias("y_px"))
    one = pl.DataFrame({"trial_id": "r000", "fixation_index": 0, "word_index": 1, "duration_ms": 90.0,
                        "x_px": 5.0, "y_px": 5.0, "start_ms": 0.0}).with_columns(
        pl.col("word_index").cast(pl.Int32), pl.col("fixation_index").cast(pl.Int64), ia_index=pl.col("word_index"))
    back = one.with_columns(trial_id=pl.lit("r001")).vstack(one.with_columns(
        trial_id=pl.lit("r001"), fixation_index=pl.lit(1, pl.Int64), x_px=pl.lit(1.0)))
    fx = pl.concat([fx.filter(~pl.col("trial_id").is_in(["r000", "r001"])),
                    one.select(fx.columns).cast(fx.schema), back.select(fx.columns).cast(fx.schema)])
    got = compute_trial_features(fx, words, trials).collect()
    ref = trials.select("trial_id").join(_amplitude_by_group_diff(fx), on="trial_id", how="left").sort("trial_id")
    assert_frame_equal(got.select("trial_id", "mean_forward_saccade_amplitude_px"), ref, check_exact=True)
    amp = dict(zip(got["trial_id"], got["mean_forward_saccade_amplitude_px"]))
    assert amp["r000"] is None and amp["r001"] is None  # one fixation; a backward step only
    assert got["mean_forward_saccade_amplitude_px"].null_count() < 10


def test_compiled_passes_on_the_onestop_sample(small_data, tmp_path, monkeypatch):
    """The OneStop sample prepped with the compiled passes (threshold 0) gives the same four tables as with
    NumPy (the default at this size when numba is not loaded)."""
    import sys

    from readgaze.cli import main

    s = small_data / "onestop_sample"
    args = ["prep", "onestop", "--fixation-report", str(s / "fixations.csv"), "--ia-report", str(s / "ia.csv"),
            "--quiet", "--no-cache", "--force", "--line-assigner", "nearest"]
    monkeypatch.setattr(measures, "COMPILED_FROM", 10**12)
    monkeypatch.delitem(sys.modules, "numba", raising=False)
    assert main([*args, "--out", str(tmp_path / "numpy")]) == 0
    monkeypatch.setattr(measures, "COMPILED_FROM", 0)
    assert main([*args, "--out", str(tmp_path / "compiled")]) == 0  # (numba is loaded from here on)
    for table in ("fixations", "word_measures", "trials", "words"):
        assert_frame_equal(pl.read_parquet(tmp_path / "compiled" / f"{table}.parquet"),
                           pl.read_parquet(tmp_path / "numpy" / f"{table}.parquet"), check_exact=True)
