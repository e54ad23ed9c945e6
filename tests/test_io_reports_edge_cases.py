"""Field failures of report and CSV reading (issue 14, items 8-11), each on a small input written here."""

from __future__ import annotations

import polars as pl
import pytest

from readgaze.errors import ConfigError, ParseError, command_spelling
from readgaze.inspect import inspect_paths
from readgaze.io.samples import read_gaze_csv


# 8 ------------------------------------------------------------------------------------------------
def test_decimal_comma_after_ten_thousand_rows_names_row_and_column(tmp_path):
    rows = [f"{1000 + i};{100 + i % 7}.5;210.0" for i in range(12_000)]
    rows[11_000] = "12000;390,6;210,0"
    path = tmp_path / "gaze.csv"
    path.write_text("timestamp;x;y\n" + "\n".join(rows) + "\n")
    with pytest.raises(ParseError) as err:
        read_gaze_csv(path, separator=";").collect()
    assert str(err.value) == ("gaze.csv, row 11002, column x: '390,6' is not a number (decimal comma?): pass "
                              "separator=';', decimal_comma=True (numbers written with a decimal comma)")
    with command_spelling():  # inside readgaze prep, the command's options
        assert str(err.value).endswith("pass --separator ';' --decimal-comma (numbers written with a decimal comma)")
    ok = read_gaze_csv(path, separator=";", decimal_comma=True).collect()
    assert ok.height == 12_000 and ok["x_px"][11_000] == 390.6 and ok["x_px"][0] == 100.5
    text, ok = inspect_paths([path])
    assert not ok and text.count("\n") == 0 and "row 11002, column x" in text


# 9 ------------------------------------------------------------------------------------------------
FIX_HEADER = ("RECORDING_SESSION_LABEL,TRIAL_INDEX,CURRENT_FIX_INDEX,CURRENT_FIX_START,CURRENT_FIX_DURATION,"
              "CURRENT_FIX_X,CURRENT_FIX_Y,CURRENT_FIX_INTEREST_AREA_ID,CURRENT_FIX_INTEREST_AREA_LABEL\n")
IA_HEADER = "RECORDING_SESSION_LABEL,TRIAL_INDEX,IA_ID,IA_LABEL,IA_LEFT,IA_RIGHT,IA_TOP,IA_BOTTOM\n"


def _reports(tmp_path, fix_ids, fix_labels, ia_ids, ia_labels=("Wolves", "howl", "loudly.")):
    fix = tmp_path / "fix.csv"
    fix.write_text(FIX_HEADER + "".join(f"p1,1,{k + 1},{100 * k},200,{150 + 100 * k},175,{i},{lab}\n"
                                        for k, (i, lab) in enumerate(zip(fix_ids, fix_labels))))
    ia = tmp_path / "ia.csv"
    ia.write_text(IA_HEADER + "".join(f"p1,1,{i},{lab},{100 + 100 * k},{200 + 100 * k},150,200\n"
                                      for k, (i, lab) in enumerate(zip(ia_ids, ia_labels))))
    return fix, ia


def test_zero_based_fixation_report_alone_is_detected_or_refused(tmp_path):
    from readgaze.io.dataviewer import read_fixation_report

    fix, ia = _reports(tmp_path, [0, 1, 2], ("Wolves", "howl", "loudly."), [0, 1, 2])
    assert read_fixation_report(fix).collect()["word_index"].to_list() == [0, 1, 2]  # an id 0: base 0
    fix, ia = _reports(tmp_path, [1, 2], ("howl", "loudly."), [0, 1, 2])  # 0-based, IA 0 never fixated
    with pytest.raises(ConfigError) as err:
        read_fixation_report(fix)
    assert str(err.value).startswith("fix.csv, column CURRENT_FIX_INTEREST_AREA_ID: the interest-area id base of "
                                     "this fixation report is unknown (its lowest CURRENT_FIX_INTEREST_AREA_ID is 1")
    assert read_fixation_report(fix, ia_report=ia).collect()["word_index"].to_list() == [1, 2]
    assert read_fixation_report(fix, ia_id_base=1).collect()["word_index"].to_list() == [0, 1]
    text, ok = inspect_paths([fix])
    assert ok and "interest-area id base: None (unknown: give the IA report too" in text
    text, ok = inspect_paths([fix, ia])
    assert ok and "interest-area id base: 0 (label agreement with ia.csv: base 1 0.0%, base 0 100.0%" in text


# 10 -----------------------------------------------------------------------------------------------
def test_fixation_in_overlapping_boxes_goes_to_the_lowest_ia_id(tmp_path):
    from readgaze.align import align_words

    # A (id 0) [100, 300) holds B (id 1) [150, 200) and overlaps C (id 2) [250, 320); E (id 4) starts
    # before D (id 5) ends
    words = pl.DataFrame({"text_id": "t", "ia_index": [0, 1, 2, 5, 4], "word_index": [0, 1, 2, 5, 4],
                          "line_index": 0, "left_px": [100.0, 150.0, 250.0, 400.0, 450.0],
                          "right_px": [300.0, 200.0, 320.0, 500.0, 550.0], "top_px": 150.0, "bottom_px": 200.0})
    x = [120.0, 160.0, 210.0, 260.0, 310.0, 460.0, 520.0, 330.0]
    fx = pl.DataFrame({"trial_id": "a", "fixation_index": list(range(len(x))), "x_px": x, "y_px": 175.0})
    out, qc = align_words(fx, words, pl.DataFrame({"trial_id": ["a"], "text_id": ["t"]}))
    assert out.collect()["word_index"].to_list() == [0, 0, 0, 0, 2, 4, 4, None]
    assert qc.total(reason="in_overlapping_boxes", action="flagged") == 3  # x = 160, 260, 460
    assert qc.total(reason="overlapping_boxes", action="warning") == 3


# 11 -----------------------------------------------------------------------------------------------
def _ia_report(tmp_path, rows, extra_header="", name="ia.csv", encoding="utf-8"):
    path = tmp_path / name
    head = "RECORDING_SESSION_LABEL,TRIAL_INDEX,IA_ID,IA_LABEL,IA_LEFT,IA_RIGHT,IA_TOP,IA_BOTTOM" + extra_header
    path.write_bytes((head + "\n" + "\n".join(rows) + "\n").encode(encoding))
    return path


def test_eyebench_quirks_are_handled_or_flagged(tmp_path):
    from readgaze.io.dataviewer import detect_ia_id_base, read_fixation_report, read_ia_report
    from readgaze.layout_checks import ia_quirks
    from readgaze.text import layout_from_ia_rows

    rows = ["p1,1,1,New\u00a0York,100,250,150,200,1,1",       # no-break space inside a label
            "p1,1,2,an,250,300,150,200,1,1",
            "p1,1,3,hour-long,300,420,150,200,1,1",           # hyphenated label on both sides of the break
            "p1,1,4,hour-long,100,160,250,300,0,.",
            "p1,1,5,talk,160,260,150,300,1,1"]               # a box spanning two lines (top 150, bottom 300)
    ia_path = _ia_report(tmp_path, rows, ",IA_FIXATION_COUNT,IA_FIRST_FIX_PROGRESSIVE")
    ia = read_ia_report(ia_path)
    qc = ia_quirks(ia, name="ia.csv")
    found = {r["reason"]: (r["count"], r["detail"]) for r in qc.records}
    assert found["no-break space in label"] == (1, "ia.csv: first at text_id p1_1, IA 0")
    assert found["hyphenated label repeated over a line break"] == (1, "ia.csv: first at text_id p1_1, IA 3")
    assert found["interest area spans a line break"] == (1, "ia.csv: first at text_id p1_1, IA 4")
    assert "IA_FIRST_FIX_PROGRESSIVE is 0 on every fixated row" not in found
    layout = layout_from_ia_rows(ia.collect())
    words = layout.words
    assert words["word"][0] == "New York"
    assert words["word_index"].to_list() == [0, 1, 2, 2, 3] and words["line_index"].to_list() == [0, 0, 0, 1, 0]
    # a fixation report that writes the label with a plain space still agrees under the right base
    fix = tmp_path / "fix.csv"
    fix.write_text(FIX_HEADER + "p1,1,1,0,200,120,175,1,New York\np1,1,2,300,200,270,175,2,an\n")
    check = detect_ia_id_base(read_fixation_report(fix, ia_id_base=0), ia, fixation_file=fix, ia_file=ia_path)
    assert check.base == 1 and check.agreement[1] == 1.0
    out, ok = inspect_paths([ia_path])
    assert ok and "flagged: interest area spans a line break: 1" in out


def test_first_fix_progressive_zero_everywhere_is_warned(tmp_path):
    from readgaze.io.dataviewer import read_ia_report
    from readgaze.layout_checks import ia_quirks

    rows = ([f"p1,1,{i},w{i},{100 * i},{100 * i + 100},150,200,1,0" for i in range(1, 5)]
            + ["p1,1,5,w5,500,600,150,200,0,."])
    qc = ia_quirks(read_ia_report(_ia_report(tmp_path, rows, ",IA_FIXATION_COUNT,IA_FIRST_FIX_PROGRESSIVE")))
    warned = [r for r in qc.records if r["action"] == "warning"]
    assert [(r["reason"], r["count"]) for r in warned] == [("IA_FIRST_FIX_PROGRESSIVE is 0 on every fixated row", 4)]


def test_cp1252_bytes_name_the_row_and_encoding_reads_them(tmp_path):
    from readgaze.io.dataviewer import read_ia_report

    rows = ["p1,1,1,The,100,150,150,200", "p1,1,2,caf\u00e9,150,250,150,200", "p1,1,3,\u201cso\u201d,250,300,150,200"]
    path = _ia_report(tmp_path, rows, encoding="cp1252")
    with pytest.raises(ParseError) as err:
        read_ia_report(path).collect()
    assert str(err.value) == "ia.csv, row 3: byte b'\\xe9' is not UTF-8 (a Windows export? pass encoding='cp1252')"
    words = read_ia_report(path, encoding="cp1252").collect()["word"].to_list()
    assert words == ["The", "caf\u00e9", "\u201cso\u201d"]
    out, ok = inspect_paths([path])
    assert not ok and out.count("\n") == 0 and "ia.csv, row 3" in out
