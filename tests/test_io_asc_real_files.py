"""read_asc on the four real EyeLink files (shared/data/eyelink_asc/README.md gives every count)."""

from __future__ import annotations

import polars as pl
import pytest

from readgaze.io.asc import inspect_asc, read_asc
from readgaze.schema import validate

ASC = "eyelink_asc"


@pytest.fixture(scope="module")
def recordings(small_data):
    names = ["binocular", "monocular", "monocular_2khz", "monocular_no_dummy"]
    return {n: read_asc(small_data / ASC / f"eyelink_{n}_example.asc") for n in names}


@pytest.mark.parametrize("name, trial, rate, eyes, n_samples, n_fixations, n_events", [
    ("binocular", "I902C_low", 1000.0, "left right", 368, 2, {"fixation": 4, "saccade": 3, "blink": 2}),
    ("monocular", "0", 1000.0, "left", 16, 2, {"fixation": 2, "saccade": 2}),
    ("monocular_2khz", "0", 2000.0, "left", 16, 2, {"fixation": 2, "saccade": 2}),
    ("monocular_no_dummy", "TEXT", 500.0, "left", 297, 2, {"fixation": 2, "saccade": 2, "blink": 2}),
])
def test_documented_counts(recordings, name, trial, rate, eyes, n_samples, n_fixations, n_events):
    rec = recordings[name]
    assert rec.trials.select("trial_id", "sampling_rate_hz", "eyes", "n_samples", "n_fixations").rows() == [
        (trial, rate, eyes, n_samples, n_fixations)]
    assert rec.samples.height == n_samples
    assert dict(rec.events.group_by("kind").len().iter_rows()) == n_events
    validate(rec.samples, "samples")
    validate(rec.fixations, "fixations")


def test_binocular_keeps_both_eyes_and_uses_right(recordings):
    rec = recordings["binocular"]
    # README: NaN fraction of xpos 26.4 % left, 21.7 % right (blinks).
    assert rec.samples["x_left_px"].null_count() == 97
    assert rec.samples["x_right_px"].null_count() == 80
    assert rec.samples["eye"].unique().to_list() == ["right"]
    assert rec.fixations.select("start_ms", "duration_ms", "x_px", "y_px").rows() == [
        (1408667.0, 111.0, 956.3, 541.9), (1408899.0, 129.0, 945.6, 539.6)]
    # every missing right-eye sample lies in the right-eye blink 1408793 + 80 ms
    assert rec.qc_report.select("missing_samples", "missing_in_blink", "missing_track_loss").row(0) == (80, 80, 0)
    # SSACC L 1409026 has no ESACC: closed at the block end and flagged
    assert "eyelink_binocular_example.asc line 532: END time 1408901 is not after 127 sample(s) (first on line 401)" \
        in rec.warnings[0]
    open_sacc = rec.events.filter(pl.col("truncated_end"))
    assert open_sacc.select("kind", "eye", "start_ms").rows() == [("saccade", "left", 1409026.0)]


def test_left_eye_on_request(small_data):
    rec = read_asc(small_data / ASC / "eyelink_binocular_example.asc", eye="left")
    assert rec.fixations["duration_ms"].to_list() == [107.0, 129.0]
    assert rec.fixations["eye"].unique().to_list() == ["left"]


def test_gap_inside_block_keeps_true_timeline(recordings):
    """mne collapses the 184.5 s gap (n_times 16 = 0.015 s); readgaze keeps the file's timestamps."""
    times = recordings["monocular"].samples["time_ms"]
    assert times[0] == 2154556.0 and times[-1] == 2339291.0
    assert times.diff().max() == 184531.0
    half = recordings["monocular_2khz"].samples["time_ms"]
    assert half[0] == 2154556.5 and half.is_sorted() and half.n_unique() == 16


def test_efix_duration_convention(recordings):
    """duration = end - start + one interval: 133 ms at 1 kHz, 132.5 ms at 2 kHz (same EFIX span)."""
    assert recordings["monocular"].fixations["duration_ms"].to_list() == [133.0, 45.0]
    assert recordings["monocular_2khz"].fixations["duration_ms"].to_list() == [132.5, 44.5]
    assert recordings["monocular_no_dummy"].fixations["duration_ms"].to_list() == [86.0, 326.0]  # 500 Hz


def test_missing_end_is_warned_not_fatal(recordings):
    rec = recordings["monocular_no_dummy"]
    assert any("eyelink_monocular_no_dummy_example.asc line 77" in w and "no END" in w for w in rec.warnings)
    assert rec.qc.total(reason="block without END", action="changed") == 1
    # blink 643199 + 4604 ms: 68 missing samples inside it, 1 outside (track loss)
    assert rec.qc_report.select("missing_in_blink", "missing_track_loss").row(0) == (68, 1)


def test_messages_include_those_mne_drops(recordings):
    msgs = recordings["monocular"].messages
    assert msgs.height == 102  # all MSG lines, 26 of them space-delimited
    sync = msgs.filter(pl.col("line") == 22)
    assert sync.select("time_ms", "offset_ms", "text").row(0) == (2096367.0, -4.0, "SYNCTIME 766 0")
    enc = recordings["monocular_no_dummy"].messages.filter(pl.col("text").str.starts_with("ENCODING"))
    assert enc["text"].to_list() == ["ENCODING TEST ÄÖÜ"]


def test_trial_message_splits_a_block(small_data):
    rec = read_asc(small_data / ASC / "eyelink_monocular_example.asc", trial_message=r"^TRIALID (\S+)")
    # TRIALID 0 precedes START; 1-4 are inside the block (4 is written out of time order).
    assert rec.trials["trial_id"].to_list() == ["0", "4", "1", "2", "3"]
    assert rec.trials["n_samples"].sum() == 16
    # hand count: 0 = [2154556, 2154560), 4 = [.., 2154562), 1 = [.., 2154694), 2 = [.., 2339225), 3 = rest
    assert rec.samples.group_by("trial_id").len().sort("trial_id").rows() == [
        ("0", 2), ("1", 4), ("2", 2), ("3", 7), ("4", 1)]


def test_inspect_lists_trials_and_warnings(small_data):
    text = inspect_asc(small_data / ASC / "eyelink_monocular_no_dummy_example.asc")
    assert "1 trial(s), 297 samples" in text
    assert "trial TEXT: block 0 (line 77), 500 Hz, eyes left (using left), 297 samples, 2 fixations" in text
    assert "warning: eyelink_monocular_no_dummy_example.asc line 77" in text


def test_repeated_trial_messages_get_unique_ids(small_data):
    rec = read_asc(small_data / ASC / "eyelink_monocular_example.asc", trial_message=r"^SYNCTIME\.P\d")
    assert rec.trials["trial_id"].is_unique().all()
    assert rec.trials["n_samples"].sum() == 16 and rec.samples.height == 16
    assert rec.trials["n_fixations"].sum() == 2
    assert sum("repeats" in w for w in rec.warnings) == rec.trials.height - 5  # P0..P3 + P0_pre are new
