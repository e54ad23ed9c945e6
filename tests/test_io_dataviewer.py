"""Data Viewer report readers: BR-12, BR-18, BR-27, SB-SAT, column maps and errors."""

from __future__ import annotations

import polars as pl
import pytest

from readgaze.errors import ConfigError, DataError, ParseError, SchemaError
from readgaze.io import read_fixation_report, read_ia_report, word_measures_from_ia_report
from readgaze.io.dataviewer import detect_ia_id_base
from readgaze.io.sbsat import read_sbsat_fixations, read_sbsat_trials
from readgaze.qc import QCLog
from readgaze.schema import validate


def test_br12_dots_labels_and_three_state_flags(small_data):
    path = small_data / "bad_inputs" / "BR-12.csv"
    ia = read_ia_report(path).collect()
    assert ia["word"].to_list() == ["The", "however,", '"Yes,"', "--", "end."]
    assert ia["ia_index"].to_list() == [0, 1, 2, 3, 4]  # IA_ID 1..5, base 1 detected
    for c in ("IA_FIRST_FIXATION_DURATION", "IA_FIRST_RUN_DWELL_TIME", "IA_REGRESSION_PATH_DURATION",
              "IA_REGRESSION_OUT", "IA_FIRST_FIX_PROGRESSIVE"):
        assert ia.schema[c] == pl.Int64 and ia[c].null_count() == 2, c
    m = word_measures_from_ia_report(read_ia_report(path)).collect()
    by_word = {r["word"]: r for r in m.iter_rows(named=True)}
    for w in ("however,", "--"):
        r = by_word[w]
        assert r["first_fixation_duration_ms"] is None and r["gaze_duration_ms"] is None
        assert r["regression_path_duration_ms"] is None and r["first_fixation_progressive"] is None
        assert r["total_fixation_duration_ms"] == 0.0 and r["fixation_count"] == 0 and r["skipped"] is True
    assert m["first_fixation_progressive"].to_list() == [True, None, True, None, False]
    assert by_word["end."]["regression_path_duration_ms"] == 370.0
    assert by_word["end."]["rereading_duration_ms"] == 130.0
    assert by_word['"Yes,"']["first_fixation_duration_ms"] == 180.0


def test_br18_duplicate_trial_key_is_an_error(small_data):
    with pytest.raises(DataError) as e:
        read_fixation_report(small_data / "bad_inputs" / "BR-18.csv")
    msg = str(e.value)
    assert msg.startswith("BR-18.csv, row 5, column CURRENT_FIX_INDEX:")
    assert "rows 5–6 (data rows 4–5)" in msg
    assert "(RECORDING_SESSION_LABEL, TRIAL_INDEX, CURRENT_FIX_INDEX)" in msg
    assert "(p01, 1, 1) at rows 2, 5" in msg and "(p01, 1, 2) at rows 3, 6" in msg
    assert "session_key" in msg


def test_br18_session_key_splits_the_readings(small_data):
    fix = read_fixation_report(small_data / "bad_inputs" / "BR-18.csv", session_key="restart", ia_id_base=1).collect()
    a = fix.filter(pl.col("trial_id") == "p01_1_s0")
    b = fix.filter(pl.col("trial_id") == "p01_1_s1")
    assert a.height == 3 and b.height == 2
    # reading A: The 200, cat 180, sat. 150 (first fixation durations)
    assert a["word_index"].to_list() == [0, 1, 2] and a["duration_ms"].to_list() == [200.0, 180.0, 150.0]
    # reading B: sat. first (210), then a regression to The (190)
    assert b["word_index"].to_list() == [2, 0] and b["duration_ms"].to_list() == [210.0, 190.0]
    assert b["fixation_index"].to_list() == [0, 1]


def test_br27_id_bases_detected_by_label_agreement(small_data):
    fix_path, ia_path = small_data / "bad_inputs" / "BR-27_fix.csv", small_data / "bad_inputs" / "BR-27_ia.csv"
    ia = read_ia_report(ia_path)
    check = detect_ia_id_base(read_fixation_report(fix_path, ia_id_base=0), ia, fixation_file=fix_path,
                              ia_file=ia_path)
    assert check.base == 1 and check.agreement == {1: 1.0, 0: 0.0} and check.checked == 3
    fix = read_fixation_report(fix_path, ia_id_base=check.base)
    joined = fix.join(ia, on=["trial_id", "ia_index"], how="left").sort("fixation_index").collect()
    assert joined["word"].to_list() == ["Wolves", "howl,", "loudly."]
    assert joined["x_px"][1] == 230.0  # on the left edge of howl, (half-open boxes)
    counts = ia.join(fix.group_by("trial_id", "ia_index").len(), on=["trial_id", "ia_index"], how="left").collect()
    dash = counts.filter(pl.col("word") == "–")
    assert dash.height == 1 and dash["len"].fill_null(0).item() == 0


def test_br27_labels_disagreeing_under_both_bases_name_both_files(small_data, tmp_path):
    text = (small_data / "bad_inputs" / "BR-27_fix.csv").read_text()
    bad = tmp_path / "scrambled_fix.csv"
    bad.write_text(text.replace("Wolves", "Bears").replace('"howl,"', "growl"))
    ia_path = small_data / "bad_inputs" / "BR-27_ia.csv"
    with pytest.raises(DataError) as e:
        detect_ia_id_base(read_fixation_report(bad, ia_id_base=0), read_ia_report(ia_path),
                          fixation_file=bad, ia_file=ia_path)
    assert "scrambled_fix.csv" in str(e.value) and "BR-27_ia.csv" in str(e.value)
    assert "base 1: 33.3%" in str(e.value)


def test_sbsat_fixations(small_data):
    qc = QCLog()
    fix = read_sbsat_fixations(small_data / "pymovements_examples" / "18sat_fixfinal.csv", qc=qc)
    assert qc.total(reason="off_word", action="flagged") == 2
    validate(fix, "fixations")
    f = fix.collect()
    assert f.height == 112 and f["trial_id"].unique().to_list() == ["msd001_1"]
    assert f["fixation_index"].to_list() == list(range(112))
    assert f["word_index"].null_count() == 2  # two fixations outside every word AOI
    assert f["start_ms"].null_count() == 112  # SB-SAT's report has no start time
    assert (f["x_px"][0], f["y_px"][0], f["pupil"][0], f["duration_ms"][0]) == (59.8, 125.4, 1430.0, 22.0)
    assert f["ia_label"][1] == "long" and f["word_index"][1] == 23


def _sbsat_trials(folder) -> pl.DataFrame:
    trials = read_sbsat_trials(folder / "sbsat" / "fixation" / "18sat_trialfinal.csv")
    validate(trials, "trials")
    t = trials.collect()
    first = t.filter(pl.col("trial_id") == "msd001_1").row(0, named=True)
    assert first["FIXATION_COUNT"] == 112 and first["text_id"] == "reading-dickens-1"  # the fixation report's 112
    assert first["item_id"] == "dickens" and first["is_correct"] is None
    q = t.filter(pl.col("trial_id") == "msd001_8").row(0, named=True)  # answer 3, key 1
    assert q["is_correct"] is False and q["selected_answer"] == "3"
    return t


def test_sbsat_trials_excerpt(small_data):
    t = _sbsat_trials(small_data)  # the trial report's first 599 rows: 8 readers, msd001 ... msd009
    assert t.height == 599 and t["trial_id"].n_unique() == 599 and t["participant_id"].n_unique() == 8


def test_sbsat_trials(shared_data):
    t = _sbsat_trials(shared_data)
    assert t.height == 7298 and t["trial_id"].n_unique() == 7298 and t["participant_id"].n_unique() == 95
    reading = t.filter(pl.col("type") == "reading")
    assert reading.height == 2358 and reading["repeated_reading"].sum() == 304
    revisited = reading.group_by("participant_id", "text_id").len().filter(pl.col("len") > 1)
    assert revisited.height == 229


def test_column_map_override_and_errors(tmp_path):
    p = tmp_path / "gaze_fix.csv"
    p.write_text("subj,trial,GX,GY,DUR,START\ns1,1,10.5,20,100,0\ns1,1,30,20,.,100\n")
    fix = read_fixation_report(p, columns={"participant_id": "subj", "trial": "trial", "x_px": "GX",
                                           "y_px": "GY", "duration_ms": "DUR", "start_ms": "START"}).collect()
    assert fix["trial_id"].to_list() == ["s1_1", "s1_1"] and fix["fixation_index"].to_list() == [0, 1]
    assert fix["x_px"].to_list() == [10.5, 30.0] and fix["duration_ms"].to_list() == [100.0, None]
    assert fix["participant_id"].to_list() == ["s1", "s1"]
    with pytest.raises(ConfigError, match="unknown role 'GX'"):
        read_fixation_report(p, columns={"GX": "x_px"})
    with pytest.raises(SchemaError, match=r"no column for \['duration_ms', 'x_px', 'y_px'\]"):
        read_fixation_report(p)
    with pytest.raises(ConfigError, match="ia_id_base: got 2, expected 0 or 1"):
        read_fixation_report(p, columns={"participant_id": "subj", "trial": "trial", "x_px": "GX",
                                         "y_px": "GY", "duration_ms": "DUR"}, ia_id_base=2)


def test_non_number_in_a_coordinate_names_row_and_column(tmp_path):
    p = tmp_path / "fix.csv"
    p.write_text("RECORDING_SESSION_LABEL,TRIAL_INDEX,CURRENT_FIX_INDEX,CURRENT_FIX_DURATION,CURRENT_FIX_X,"
                 "CURRENT_FIX_Y\np1,1,1,100,10,20\np1,1,2,100,12;5,20\n")
    with pytest.raises(ParseError) as e:
        read_fixation_report(p)
    assert str(e.value) == ("fix.csv, row 3, column CURRENT_FIX_X: got '12;5', expected a coordinate in px "
                            "(a finite number, |x| <= 100,000)")
