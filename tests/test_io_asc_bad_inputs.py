"""read_asc on the bad inputs of shared/data/bad_inputs/README.md (BR-01, 03, 05, 07, 10, 17, 23)."""

from __future__ import annotations

import polars as pl
import pytest

from readgaze.errors import ParseError, ReadgazeError
from readgaze.io.asc import read_asc

BAD = "bad_inputs"


def _fix(rec, *cols):
    return rec.fixations.select(*cols).rows()


def test_br01_block_without_end_before_calibration(small_data):
    rec = read_asc(small_data / BAD / "BR-01.asc")
    assert rec.trials.select("trial_id", "n_samples", "n_fixations").rows() == [("1", 10, 1), ("2", 10, 1)]
    assert _fix(rec, "trial_id", "start_ms", "duration_ms", "x_px", "y_px") == [
        ("1", 1002.0, 20.0, 100.0, 200.0), ("2", 1042.0, 20.0, 300.0, 200.0)]
    assert rec.warnings == ["BR-01.asc line 17: recording block opened here has no END; closed at line 35 "
                            "(calibration); the next START is on line 50"]
    # calibration coefficient rows (line 43 starts with "1.0") are never samples
    assert rec.samples["x_px"].unique().sort().to_list() == [100.0, 300.0]
    assert rec.samples["time_ms"].to_list() == [1002.0 + 2 * i for i in range(10)] + [1042.0 + 2 * i for i in range(10)]


def test_br01_mne_alone_loses_the_first_trial(small_data):
    """Why readgaze repairs before calling mne: mne silently keeps only the second block."""
    import warnings

    import mne

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        raw = mne.io.read_raw_eyelink(small_data / BAD / "BR-01.asc", verbose="error")
    assert raw.n_times == 10 and raw._raw_extras[0]["first_timestamp"] == 1042.0


def test_br03_empty_practice_block_is_kept_and_counted(small_data):
    rec = read_asc(small_data / BAD / "BR-03.asc")
    assert rec.trials.select("trial_id", "n_samples", "n_fixations").rows() == [("0_practice", 0, 0), ("1", 10, 1)]
    assert rec.qc_report.filter(pl.col("empty"))["trial_id"].to_list() == ["0_practice"]
    assert rec.qc.total(table="trials", reason="empty trial", action="flagged") == 1
    assert _fix(rec, "trial_id", "duration_ms", "x_px") == [("1", 20.0, 300.0)]
    practice = rec.messages.filter(pl.col("trial_id") == "0_practice")["text"].to_list()
    assert practice == ["PRACTICE TRIAL SKIPPED"]


def test_br05_eye_changes_between_blocks(small_data):
    rec = read_asc(small_data / BAD / "BR-05.asc")
    trial1 = rec.samples.filter(pl.col("trial_id") == "1")
    assert trial1.select("x_left_px", "y_left_px", "x_right_px", "y_right_px").unique().rows() == [
        (98.0, 202.0, 100.0, 200.0)]
    trial2 = rec.samples.filter(pl.col("trial_id") == "2")
    assert trial2["x_left_px"].null_count() == 10 and trial2["x_right_px"].unique().to_list() == [300.0]
    assert rec.trials["eye"].to_list() == ["right", "right"]
    assert any("line 42: tracked eye changed from LEFT RIGHT" in w for w in rec.warnings)
    assert any("use the right eye in every trial" in w for w in rec.warnings)
    both = rec.events.filter(pl.col("trial_id") == "1").sort("eye").select("eye", "x_px", "y_px").rows()
    assert both == [("left", 98.0, 202.0), ("right", 100.0, 200.0)]


def test_br05b_left_then_right_uses_each_blocks_eye(small_data):
    rec = read_asc(small_data / BAD / "BR-05b.asc")
    assert rec.trials.select("trial_id", "eye").rows() == [("1", "left"), ("2", "right")]
    assert _fix(rec, "trial_id", "eye", "x_px") == [("1", "left", 98.0), ("2", "right", 300.0)]
    assert any("line 40: tracked eye changed from LEFT" in w for w in rec.warnings)
    assert any("see trials.eye" in w for w in rec.warnings)


def test_br07_orphan_events_at_block_edges(small_data):
    rec = read_asc(small_data / BAD / "BR-07.asc")
    assert _fix(rec, "start_ms", "duration_ms", "truncated_start", "truncated_end") == [
        (990.0, 32.0, True, False), (1026.0, 16.0, False, False)]
    blinks = rec.blinks.select("start_ms", "duration_ms", "truncated_start", "truncated_end").rows()
    assert blinks == [(996.0, 12.0, True, False), (1042.0, 4.0, False, True)]  # open blink closed at END 1046
    report = rec.qc_report.row(0, named=True)
    assert (report["truncated_start"], report["missing_in_blink"], report["missing_track_loss"]) == (1, 5, 0)
    assert rec.qc.total(table="events", reason="truncated_start", action="flagged") == 2
    assert rec.qc.total(table="events", reason="truncated_end", action="flagged") == 1


def test_br07_truncated_fixations_can_be_dropped_and_counted(small_data):
    rec = read_asc(small_data / BAD / "BR-07.asc", drop_fixations=("truncated",))
    assert _fix(rec, "fixation_index", "start_ms") == [(0, 1026.0)]
    assert rec.qc_report["dropped_truncated"].to_list() == [1]
    assert rec.qc.total(table="fixations", reason="truncated") == 1


def test_br10_duplicated_timestamps_at_2khz(small_data):
    rec = read_asc(small_data / BAD / "BR-10.asc")
    assert rec.samples["time_ms"].to_list() == [1002.0 + 0.5 * i for i in range(20)]
    assert rec.trials["sampling_rate_hz"].to_list() == [2000.0]
    assert _fix(rec, "start_ms", "duration_ms") == [(1002.0, 10.0)]
    assert rec.qc.total(table="samples", action="changed") == 10


def test_br10_float_timestamps_accepted(tmp_path, small_data):
    text = (small_data / BAD / "BR-10.asc").read_text().splitlines()
    seen, out = set(), []
    for line in text:  # rewrite "1002 ..." "1002 ..." as "1002 ..." "1002.5 ..."
        head = line.split("\t", 1)[0]
        if head.isdigit() and head in seen:
            line = f"{head}.5\t" + line.split("\t", 1)[1]
        seen.add(head)
        out.append(line)
    path = tmp_path / "float_stamps.asc"
    path.write_text("\n".join(out) + "\n")
    rec = read_asc(path)
    assert rec.samples["time_ms"].to_list() == [1002.0 + 0.5 * i for i in range(20)]
    assert rec.qc.total(table="samples", action="changed") == 0


@pytest.mark.parametrize("name, rate, start, end, duration", [
    ("BR-17a.asc", 500.0, 1002.0, 1100.0, 100.0), ("BR-17b.asc", 250.0, 1200.0, 1296.0, 100.0)])
def test_br17_efix_duration_is_end_minus_start_plus_interval(small_data, name, rate, start, end, duration):
    rec = read_asc(small_data / BAD / name)
    assert rec.trials["sampling_rate_hz"].to_list() == [rate]
    assert _fix(rec, "start_ms", "end_ms", "duration_ms") == [(start, end, duration)]
    assert end - start + 1000.0 / rate == duration
    assert not rec.warnings


def test_br23_tracker_errors_are_warned_with_lines_and_trial(small_data):
    rec = read_asc(small_data / BAD / "BR-23.asc")
    assert rec.warnings == ["BR-23.asc lines 35–36 (trial 1): tracker error message(s): "
                            "ERROR MESSAGES LOST 2; ERROR COMMANDS LOST 1"]
    assert rec.qc.total(table="messages", reason="tracker error message", action="warning") == 2
    assert _fix(rec, "start_ms", "duration_ms") == [(1002.0, 20.0), (1022.0, 20.0)]


def test_not_an_asc_file(tmp_path):
    path = tmp_path / "notes.asc"
    path.write_text("** just a header\nMSG\t1 hello\n")
    with pytest.raises(ParseError, match=r"notes.asc: no recording block"):
        read_asc(path)


def test_block_without_samples_line_names_the_line(tmp_path):
    path = tmp_path / "nospec.asc"
    path.write_text("MSG\t1 TRIALID 1\nSTART\t2 \tRIGHT\tSAMPLES\tEVENTS\n2\t1.0\t2.0\t3.0\t...\nEND\t4\n")
    with pytest.raises(ReadgazeError, match=r"nospec.asc, row 2: recording block has no SAMPLES line"):
        read_asc(path)


def test_bad_options_are_config_errors(small_data):
    with pytest.raises(ReadgazeError, match="drop_fixations"):
        read_asc(small_data / BAD / "BR-07.asc", drop_fixations=("short",))
    with pytest.raises(ReadgazeError, match="eye"):
        read_asc(small_data / BAD / "BR-07.asc", eye="both")


def test_rate_change_between_blocks(tmp_path, small_data):
    """mne raises RuntimeError when the rate changes between blocks; readgaze reads block by block."""
    a = (small_data / BAD / "BR-17a.asc").read_text().splitlines()
    b = (small_data / BAD / "BR-17b.asc").read_text().splitlines()
    path = tmp_path / "rates.asc"
    path.write_text("\n".join(a + [line.replace("TRIALID 1", "TRIALID 2") for line in b[11:]]) + "\n")
    rec = read_asc(path)
    assert rec.trials.select("trial_id", "sampling_rate_hz", "n_samples").rows() == [("1", 500.0, 50), ("2", 250.0, 25)]
    assert _fix(rec, "trial_id", "duration_ms") == [("1", 100.0), ("2", 100.0)]
