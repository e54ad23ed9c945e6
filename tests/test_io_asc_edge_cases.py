"""Field failures of EyeLink ``.asc`` reading (issue 14, items 1-7), each on a small file written here."""

from __future__ import annotations

import polars as pl
import pytest

from readgaze.errors import ParseError
from readgaze.inspect import inspect_paths
from readgaze.io.asc import read_asc

HEADER = "** CONVERTED FROM t.edf using edfapi 4.2.1 Linux\n** DATE: Mon Jan  6 10:00:00 2025\n**\n\n"
DISPLAY = "MSG\t1000 DISPLAY_COORDS 0 0 1279 1023\n"
SAMPLES = "SAMPLES\tGAZE\tRIGHT\tRATE\t 500.00\tTRACKING\tCR\tFILTER\t2"


def block(t0: int, trial: str | None = "1", xs=(100.0,) * 10, samples_spec: str = SAMPLES, end: bool = True,
          events: str | None = None, extra: str = "") -> str:
    """One 500 Hz right-eye block: TRIALID, START, headers, 10 samples, one fixation over them, END."""
    lines = [f"MSG\t{t0 - 2} TRIALID {trial}"] if trial is not None else []
    lines += [f"START\t{t0} \tRIGHT\tSAMPLES\tEVENTS", "PRESCALER\t1", "VPRESCALER\t1", "PUPIL\tAREA",
              "EVENTS\tGAZE\tRIGHT\tRATE\t 500.00\tTRACKING\tCR\tFILTER\t2", samples_spec]
    t = [t0 + 2 * i for i in range(len(xs))]
    if events is None:
        lines.append(f"SFIX R   {t0}")
    lines += [f"{ti}\t  {x:.1f}\t  200.0\t 1000.0\t..." for ti, x in zip(t, xs)]
    if events is None:
        lines.append(f"EFIX R   {t0}\t{t[-1]}\t{t[-1] - t0 + 2}\t  {xs[0]:.1f}\t  200.0\t   1000")
    else:
        lines.append(events)
    lines.append(extra) if extra else None
    if end:
        lines.append(f"END\t{t[-1] + 2} \tSAMPLES\tEVENTS\tRES\t  38.00\t  36.00")
    return "\n".join(lines) + "\n"


def write(tmp_path, text: str, name: str = "rec.asc", encoding: str | None = None):
    path = tmp_path / name
    path.write_bytes(text.encode(encoding) if encoding else text.encode("utf-8"))
    return path


def inspect_ok(path) -> str:
    text, ok = inspect_paths([path])
    assert ok, text
    return text


# 1 ------------------------------------------------------------------------------------------------
def test_bom_inside_a_message_is_stripped_before_matching(tmp_path):
    text = HEADER + DISPLAY + block(1002, trial=None).replace("START", "MSG\t1001 \ufeffSTIMULUS_ONSET 1\nSTART", 1)
    text += block(1102, trial=None).replace("START", "MSG\t1101 \ufeffSTIMULUS_ONSET 2\nSTART", 1)
    rec = read_asc(write(tmp_path, text), trial_message=r"^STIMULUS_ONSET (\d+)$")
    assert rec.trials["trial_id"].to_list() == ["1", "2"]
    assert rec.qc.total(reason="byte-order mark (U+FEFF) removed", action="changed") == 2
    assert "\ufeff" not in "".join(rec.messages["text"])
    inspect_ok(tmp_path / "rec.asc")


def test_trial_message_that_matches_nothing_warns_with_pattern_and_messages(tmp_path):
    text = HEADER + DISPLAY + block(1002, trial="7")
    rec = read_asc(write(tmp_path, text), trial_message=r"^SYNCTIME$")
    warning = next(w for w in rec.warnings if "matches no message" in w)
    assert warning.startswith("rec.asc: trial_message '^SYNCTIME$' matches no message")
    assert "'TRIALID 7'" in warning and "'DISPLAY_COORDS 0 0 1279 1023'" in warning


# 2 ------------------------------------------------------------------------------------------------
def test_non_utf8_bytes_are_counted_and_encoding_option_decodes_them(tmp_path):
    text = HEADER + DISPLAY + "MSG\t1000 TEXT caf\u00e9 na\u00efve\n" + block(1002, trial="caf\u00e9")
    path = write(tmp_path, text, encoding="cp1252")
    rec = read_asc(path)
    warning = next(w for w in rec.warnings if "not valid utf-8" in w)
    assert warning == ("rec.asc line 6: 2 line(s) hold bytes that are not valid utf-8; replaced with U+FFFD "
                       "(pass encoding=, e.g. 'cp1252')")
    assert rec.trials["trial_id"].to_list() == ["caf\ufffd"]
    good = read_asc(path, encoding="cp1252")
    assert good.trials["trial_id"].to_list() == ["caf\u00e9"]
    assert not [w for w in good.warnings if "not valid" in w]
    text, ok = inspect_paths([path], encoding="cp1252")
    assert ok and "trial café" in text


# 3 ------------------------------------------------------------------------------------------------
def test_trial_variables_become_trial_columns_and_validation_is_read_per_eye(tmp_path):
    cal = ("MSG\t900 !CAL VALIDATION HV9 LR LEFT  GOOD ERROR 0.41 avg. 0.64 max  OFFSET 0.35 deg. 12.5,9.6 pix.\n"
           "MSG\t900 !CAL VALIDATION HV9 LR RIGHT POOR ERROR 1.31 avg. 2.84 max  OFFSET 0.27 deg. 9.2,8.4 pix.\n")
    text = (HEADER + DISPLAY + cal + block(1002, trial="1") + "MSG\t1030 !V TRIAL_VAR condition easy\n"
            "MSG\t1031 !V TRIAL_VAR item 12\n" + block(1102, trial="2") + "MSG\t1130 !V TRIAL_VAR condition hard\n")
    rec = read_asc(write(tmp_path, text))
    assert rec.trials.select("trial_id", "condition", "item").rows() == [("1", "easy", "12"), ("2", "hard", None)]
    assert rec.validation.select("eye", "points", "result", "error_avg_deg", "error_max_deg", "block").rows() == [
        ("left", 9, "GOOD", 0.41, 0.64, 0), ("right", 9, "POOR", 1.31, 2.84, 0)]
    assert rec.validation["offset_x_px"].to_list() == [12.5, 9.2]
    assert rec.qc.total(table="validation", reason="right eye POOR", action="flagged") == 1
    out = inspect_ok(tmp_path / "rec.asc")
    assert "condition=easy, item=12" in out and "validation line 7: right eye, 9 points, POOR" in out


# 4 ------------------------------------------------------------------------------------------------
def test_no_screen_size_warns_and_screen_px_turns_detection_on(tmp_path):
    text = HEADER + block(1002, xs=(1500.0,) * 10)
    path = write(tmp_path, text)
    rec = read_asc(path)
    assert rec.fixations["off_screen"].to_list() == [False]
    assert any("no DISPLAY_COORDS or GAZE_COORDS message and no screen_px; off-screen detection is off" in w
               for w in rec.warnings)
    assert [r["reason"] for r in rec.qc.records if r["reason"].startswith("off-screen detection")] == [
        "off-screen detection off"]
    rec = read_asc(path, screen_px=(1280, 1024))
    assert rec.fixations["off_screen"].to_list() == [True]
    assert any(r["detail"] == "1280 x 1024 px from the screen_px option" for r in rec.qc.records)


def test_gaze_coords_only_reports_the_size_used_and_its_source(tmp_path):
    text = HEADER + "MSG\t1000 GAZE_COORDS 0.00 0.00 1279.00 1023.00\n" + block(1002, xs=(1500.0,) * 10)
    rec = read_asc(write(tmp_path, text))
    assert rec.fixations["off_screen"].to_list() == [True]
    assert ("rec.asc line 5: no DISPLAY_COORDS message; off_screen uses the screen size 0 0 1279 1023 "
            "(left top right bottom, px) from GAZE_COORDS (line 5)") in rec.warnings


# 5 ------------------------------------------------------------------------------------------------
def test_htarget_declared_but_absent_reads_the_fields_present(tmp_path):
    text = HEADER + DISPLAY + block(1002, samples_spec=SAMPLES + "\tHTARGET")
    rec = read_asc(write(tmp_path, text))
    assert rec.samples.height == 10 and rec.samples["x_px"].unique().to_list() == [100.0]
    assert ("rec.asc line 12: SAMPLES declares HTARGET but the sample lines (first on line 14) hold 4 values, "
            "not 7; read the fields present") in rec.warnings
    inspect_ok(tmp_path / "rec.asc")


def test_inconsistent_sample_fields_name_both_lines(tmp_path):
    text = HEADER + DISPLAY + block(1002, samples_spec=SAMPLES + "\tHTARGET")
    lines = text.splitlines()
    lines[16] = lines[16].replace("\t...", "\t 12\t 13\t 600.0\t...")  # one line with the head target
    path = write(tmp_path, "\n".join(lines) + "\n")
    with pytest.raises(ParseError) as err:
        read_asc(path)
    assert str(err.value) == ("rec.asc, row 17: sample lines disagree on their number of values: line 14 has 4, "
                              "line 17 has 7 (SAMPLES line 12 declares 7)")
    text, ok = inspect_paths([path])
    assert not ok and text.count("\n") == 0 and "rec.asc, row 17" in text


# 6 ------------------------------------------------------------------------------------------------
def test_blink_inside_a_saccade_is_flagged_and_left_out_of_saccade_features(tmp_path):
    events = "\n".join([
        "SFIX R   1002", "EFIX R   1002\t1004\t4\t  100.0\t  200.0\t   1000",
        "SSACC R  1006", "SBLINK R 1008", "EBLINK R 1008\t1008\t0", "ESACC R  1006\t1012\t8\t  100.0\t  200.0\t"
        "  900.0\t  200.0\t  18.00\t  900", "SSACC R  1014", "ESACC R  1014\t1018\t6\t  900.0\t  200.0\t  950.0\t"
        "  200.0\t   1.50\t  100"])
    text = HEADER + DISPLAY + block(1002, events=events)
    rec = read_asc(write(tmp_path, text))
    sacc = rec.saccades.select("start_ms", "amplitude_deg", "contains_blink", "line").rows()
    assert sacc == [(1006.0, 18.0, True, 28), (1014.0, 1.5, False, 30)]
    assert rec.qc_report.select("saccades", "saccades_with_blink", "mean_saccade_amplitude_deg").row(0) == (2, 1, 1.5)
    # the zero-duration blink's warning names its own line (27), not the block's START line (12)
    assert ("rec.asc line 27: 1 event(s) (blink 1) whose duration field is not end - start + 2 ms; "
            "the duration field is kept") in rec.warnings
    assert "rec.asc line 28: 1 saccade(s) contain a blink" in " ".join(rec.warnings)
    inspect_ok(tmp_path / "rec.asc")


# 7 ------------------------------------------------------------------------------------------------
def test_block_without_end_gives_the_next_trialid_to_the_next_trial(tmp_path):
    text = HEADER + DISPLAY + block(1002, trial="1", end=False) + block(1102, trial="2", xs=(300.0,) * 10)
    rec = read_asc(write(tmp_path, text))
    assert rec.trials.select("trial_id", "n_samples", "n_fixations").rows() == [("1", 10, 1), ("2", 10, 1)]
    assert rec.fixations.select("trial_id", "x_px").rows() == [("1", 100.0), ("2", 300.0)]
    assert ("rec.asc line 7: recording block opened here has no END; closed at line 25 (next trial's TRIALID); "
            "the next START is on line 26") in rec.warnings
    msg = rec.messages.filter(pl.col("text") == "TRIALID 2")
    assert msg["block"].to_list() == [None]
    inspect_ok(tmp_path / "rec.asc")


# .asc at scale (issue 18): readgaze parses the blocks itself; mne on the repaired block is the oracle
def test_polars_block_parser_equals_mne_on_every_real_and_bad_input_file(small_data, tmp_path):
    from polars.testing import assert_frame_equal

    from readgaze.io import asc_block, asc_mne
    from readgaze.io.asc_repair import sample_fields, sample_times, write_block_for_mne
    from readgaze.io.asc_scan import scan_asc

    files = sorted((small_data / "eyelink_asc").glob("*.asc")) + sorted((small_data / "bad_inputs").glob("*.asc"))
    compared = 0
    for path in files:
        scan = scan_asc(path)
        for b in (b for b in scan.blocks if b.n_samples):
            times = sample_times(scan, b)
            write_block_for_mne(scan, b, times, tmp_path / "block.asc", sample_fields(scan, b, []))
            want_samples, want_events = asc_mne.read_block(scan, b, tmp_path / "block.asc")
            got_samples, got_events = asc_block.read_block(scan, b, times)
            assert_frame_equal(got_samples, want_samples, check_dtypes=False)
            assert_frame_equal(got_events.select(want_events.columns), want_events, check_dtypes=False)
            compared += 1
    assert len(files) == 13 and compared == 16
