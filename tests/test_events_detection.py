"""Fixation detection through pymovements (I-VT, I-DT) on synthetic and real reading samples."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from readgaze.errors import ConfigError, SchemaError
from readgaze.events import detect_fixations
from readgaze.io.samples import ScreenGeometry, read_gaze_csv

TOY_SCREEN = ScreenGeometry(1280, 1024, 38.0, 30.2, 68.0)  # pymovements toy_dataset.yaml
TOY_TRIALS = ["trial_0_1", "trial_1_1", "trial_1_2", "trial_2_1", "trial_3_1"]


def _samples(xs, rate_hz=1000.0, start_ms=1000.0, trial="t1"):
    xs = np.asarray(xs, dtype=float)
    return pl.DataFrame({"trial_id": [trial] * len(xs), "time_ms": start_ms + np.arange(len(xs)) * 1000.0 / rate_hz,
                         "x_px": xs, "y_px": np.where(np.isnan(xs), np.nan, 500.0)}).fill_nan(None)


@pytest.mark.parametrize("method", ["ivt", "idt"])
def test_steady_gaze_duration_follows_efix_convention(method):
    """100 samples at 500 Hz on one spot: one fixation of 100 x 2 ms = 200 ms (last - first + 2 ms)."""
    fix, qc = detect_fixations(_samples([640.0] * 100, rate_hz=500.0), method=method, screen=TOY_SCREEN)
    assert fix.select("fixation_index", "start_ms", "duration_ms", "x_px", "y_px").rows() == [
        (0, 1000.0, 200.0, 640.0, 500.0)]
    assert qc.total(reason="in fixation", action="flagged") == 100


def test_ivt_splits_at_a_saccade():
    saccade = np.linspace(300.0, 700.0, 12)[1:-1]  # 40 px/ms = 1000 deg/s at 40 px/deg
    fix, _ = detect_fixations(_samples([300.0] * 150 + list(saccade) + [700.0] * 200), screen=TOY_SCREEN)
    assert fix["x_px"].to_list() == [300.0, 700.0]
    assert fix["duration_ms"].to_list() == pytest.approx([150.0, 200.0], abs=3.0)  # velocity smoothing: +-2 samples


def test_blink_never_merged_but_short_gap_is():
    blink = [np.nan] * 40
    fix, qc = detect_fixations(_samples([500.0] * 120 + blink + [500.0] * 120), screen=TOY_SCREEN)
    assert fix.height == 2 and qc.total(reason="merged into the previous fixation", action="changed") == 0
    jitter = [500.0] * 120 + [540.0, 580.0, 540.0] + [505.0] * 120  # 5 px (0.12 deg) apart after a 3-sample flick
    fix, qc = detect_fixations(_samples(jitter), screen=TOY_SCREEN)
    assert fix.height == 1 and qc.total(reason="merged into the previous fixation", action="changed") == 1
    fix, _ = detect_fixations(_samples(jitter), screen=TOY_SCREEN, merge_max_gap_ms=0)
    assert fix.height == 2


def test_short_fixations_are_dropped_and_counted():
    fix, qc = detect_fixations(_samples([500.0] * 40), screen=TOY_SCREEN, min_duration_ms=60.0)
    assert fix.height == 0 and qc.total(reason="shorter than 60 ms") + qc.total(reason="unclassified",
                                                                                 action="flagged") > 0


def test_bad_arguments():
    with pytest.raises(ConfigError):
        detect_fixations(_samples([1.0] * 10), method="ihmm", screen=TOY_SCREEN)
    with pytest.raises(SchemaError):
        detect_fixations(pl.DataFrame({"trial_id": ["a"]}), screen=TOY_SCREEN)


@pytest.fixture(scope="module")
def toy_samples(shared_data):
    folder = shared_data / "toy_reading_raw"
    return pl.concat([read_gaze_csv(folder / f"{t}.csv", screen=TOY_SCREEN).collect() for t in TOY_TRIALS])


@pytest.mark.parametrize("method, median_ms, n_fixations", [("ivt", 199.0, 481), ("idt", 227.0, 481)])
def test_toy_reading_statistics(toy_samples, method, median_ms, n_fixations):
    """Real 1 kHz reading: plausible fixation durations, nearly every sample classified."""
    fix, qc = detect_fixations(toy_samples, method=method, screen=TOY_SCREEN)
    assert 180.0 <= fix["duration_ms"].median() <= 260.0
    assert fix["duration_ms"].median() == median_ms and fix.height == n_fixations
    classified = qc.total(reason="in fixation", action="flagged") + qc.total(reason="in saccade", action="flagged")
    assert classified / toy_samples.height >= 0.90
    assert qc.total(reason="missing", action="flagged") == 83  # the -32768 rows of trial_1_2
    assert fix["trial_id"].unique().sort().to_list() == TOY_TRIALS
