"""Issue 29, cause by cause: each test damages a copy of a real file of ``../shared/data`` (its excerpt in
``tests/files``) the way the issue found it read silently, with a raw traceback or with an unclear error, and checks
the rule: an error naming file, row and column, or a repair counted per reason (QC log, warning). Each failed before
the fix (see the issue's lists)."""

from __future__ import annotations

import warnings

import pytest
from polars.testing import assert_frame_equal

from readgaze.cli import main
from readgaze.errors import ParseError, ReadgazeError, SchemaError
from readgaze.qc import QCLog

BOM = b"\xef\xbb\xbf"


def _lines(path) -> list[bytes]:
    return path.read_bytes().splitlines(keepends=True)


def _copy(src, dst, lines=None):
    dst.write_bytes(b"".join(_lines(src) if lines is None else lines))
    return dst


def _gaze(small_data, tmp_path, n=400):
    """The first ``n`` lines of a real 1 kHz sample file (tab separated, CRLF)."""
    return _copy(small_data / "toy_reading_raw" / "trial_0_1.csv", tmp_path / "trial_0_1.csv",
                 _lines(small_data / "toy_reading_raw" / "trial_0_1.csv")[:n])


def _reasons(qc: QCLog) -> dict[str, int]:
    return {r["reason"]: r["count"] for r in qc.records if r["count"]}


# --- silent 1: a row with too few fields was padded with nulls ---------------------------------------------------

def test_a_gaze_row_with_a_cell_deleted_is_an_error_naming_the_row(small_data, tmp_path):
    from readgaze.io.samples import read_gaze_csv

    lines = _lines(_gaze(small_data, tmp_path))
    lines[100] = b"\t".join(lines[100].split(b"\t")[:2] + lines[100].split(b"\t")[3:])  # y deleted: x, stimuli, ...
    path = _copy(tmp_path / "trial_0_1.csv", tmp_path / "trial_0_1.csv", lines)
    with pytest.raises(ParseError) as e:
        read_gaze_csv(path).collect()
    assert (e.value.row, e.value.column) == (101, "stimuli_y")
    assert str(e.value).startswith("trial_0_1.csv, row 101, column stimuli_y: 4 field(s) where the header has 5")


def test_a_report_cut_mid_line_is_an_error_saying_the_file_looks_truncated(small_data, tmp_path):
    from readgaze.io.dataviewer import read_fixation_report

    data = (small_data / "onestop_sample" / "fixations.csv").read_bytes()
    path = tmp_path / "fixations.csv"
    path.write_bytes(data[:data.rfind(b"\n", 0, len(data) - 1) + 120])  # the last row cut after 119 bytes
    with pytest.raises(ParseError, match="the file looks truncated") as e:
        read_fixation_report(path, source="onestop").collect()
    assert e.value.row == 2250 and e.value.file == str(path)


# --- silent 2: blank lines and trailing NUL bytes became rows of nulls --------------------------------------------

def test_blank_lines_in_a_fixation_report_are_dropped_and_counted(small_data, tmp_path):
    from readgaze.io.dataviewer import read_fixation_report

    src = small_data / "onestop_sample" / "fixations.csv"
    lines = _lines(src)
    path = _copy(src, tmp_path / "fixations.csv", lines[:1000] + [b"\n", b"\r\n"] + lines[1000:] + [b"\n"])
    qc = QCLog()
    got = read_fixation_report(path, source="onestop", qc=qc).collect()
    assert got["trial_id"].null_count() == 0
    assert_frame_equal(got, read_fixation_report(src, source="onestop").collect())
    blank = [r for r in qc.records if r["reason"] == "blank line dropped"]
    assert blank[0]["count"] == 3 and blank[0]["detail"] == "fixations.csv: first at line 1001"


def test_blank_crlf_lines_in_gaze_samples_are_dropped_and_prep_samples_loads(small_data, tmp_path):
    from readgaze.data_prep.sources import load_samples
    from readgaze.io.samples import ScreenGeometry, read_gaze_csv

    lines = _lines(_gaze(small_data, tmp_path, 1500))
    path = _copy(tmp_path / "trial_0_1.csv", tmp_path / "trial_0_1.csv", lines[:700] + [b"\r\n"] * 3 + lines[700:])
    # prep samples' loader: was "unexpected ValueError (cannot convert float NaN to integer)" in events._one_trial
    loaded = load_samples([path], small_data / "toy_reading_raw" / "toy_text_1_1_aoi.csv",
                          screen=ScreenGeometry(1280, 1024, 38.0, 30.2, 68.0))
    assert loaded.trials["n_samples"].to_list() == [1499] and loaded.fixations.height > 0
    assert loaded.qc.total(reason="blank line dropped") == 3
    qc = QCLog()
    samples = read_gaze_csv(path, qc=qc).collect()
    assert samples.height == 1499 and samples["time_ms"].null_count() == 0
    assert _reasons(qc)["blank line dropped"] == 3


def test_nul_padding_after_a_onestop_report_is_removed_and_counted(small_data, tmp_path):
    from readgaze.io.onestop import load_onestop

    d = small_data / "onestop_sample"
    fix = tmp_path / "fixations.csv"
    fix.write_bytes((d / "fixations.csv").read_bytes() + b"\x00" * 16)
    data = load_onestop(fix, d / "ia.csv")
    trials = data.trials.collect()
    assert not trials["participant_id"].str.contains("\x00").any()
    assert_frame_equal(trials, load_onestop(d / "fixations.csv", d / "ia.csv").trials.collect())
    assert _reasons(data.qc)["NUL bytes after the last line removed"] == 16


# --- silent 3: a byte-order mark inside the file was glued to the first cell -------------------------------------

def test_two_ia_exports_concatenated_with_a_bom_read_as_one(small_data, tmp_path):
    from readgaze.io.onestop import load_onestop

    d = small_data / "onestop_sample"
    lines = _lines(d / "ia.csv")
    ia = _copy(d / "ia.csv", tmp_path / "ia.csv", lines[:1500] + [BOM + lines[0]] + lines[1500:])
    data = load_onestop(d / "fixations.csv", ia)
    clean = load_onestop(d / "fixations.csv", d / "ia.csv")
    assert not data.trials.collect()["trial_id"].str.contains("\ufeff").any()
    for name in ("trials", "words", "fixations"):
        assert_frame_equal(getattr(data, name).collect(), getattr(clean, name).collect())
    assert _reasons(data.qc)["header line repeated inside the file (two exports concatenated?) dropped"] == 1
    assert data.qc.total(reason="layout_versions", action="flagged") == clean.qc.total(reason="layout_versions",
                                                                                       action="flagged")


# --- silent 4 and 5: .asc fields that are not numbers; negative timestamps ----------------------------------------

def _asc(small_data, tmp_path, edit):
    src = small_data / "eyelink_asc" / "eyelink_monocular_example.asc"
    lines = _lines(src)
    edit(lines)
    return _copy(src, tmp_path / src.name, lines)


def test_an_efix_field_that_is_not_a_number_is_an_error_naming_the_line(small_data, tmp_path):
    from readgaze.io.asc import read_asc

    def edit(lines):
        i = next(k for k, line in enumerate(lines) if line.startswith(b"EFIX"))
        tokens = lines[i].split()
        tokens[5] = b"abc"  # x
        lines[i] = b"\t".join(tokens) + b"\n"

    path = _asc(small_data, tmp_path, edit)
    with pytest.raises(ParseError) as e:
        read_asc(path)
    assert str(e.value) == ("eyelink_monocular_example.asc, row 120: EFIX field x_px: got 'abc', expected a number "
                            "or '.'")


@pytest.mark.parametrize("bad", [b"637,6", b"abc", b"--", b"12\x003", b"inf"])
def test_a_sample_value_that_is_not_a_number_is_missing_and_counted(small_data, tmp_path, bad):
    from readgaze.io.asc import read_asc

    def edit(lines):
        i = next(k for k, line in enumerate(lines) if line[:1].isdigit())
        tokens = lines[i].split(b"\t")
        tokens[3] = b"  " + bad  # the pupil field
        lines[i] = b"\t".join(tokens)

    rec = read_asc(_asc(small_data, tmp_path, edit))
    clean = read_asc(small_data / "eyelink_asc" / "eyelink_monocular_example.asc")
    assert rec.samples["pupil"].null_count() == clean.samples["pupil"].null_count() + 1
    assert rec.qc.total(reason="malformed value read as missing", action="changed") == 1
    assert any("line 95: 1 sample line(s) hold a value that is neither a number nor '.'" in w for w in rec.warnings)


def test_a_sample_line_with_a_negative_timestamp_is_dropped_and_counted(small_data, tmp_path):
    from readgaze.io.asc import read_asc

    def edit(lines):
        i = [k for k, line in enumerate(lines) if line[:1].isdigit()][5]
        lines[i] = b"-" + lines[i]

    rec = read_asc(_asc(small_data, tmp_path, edit))
    clean = read_asc(small_data / "eyelink_asc" / "eyelink_monocular_example.asc")
    assert rec.samples.height == clean.samples.height - 1
    assert rec.qc.total(reason="sample line with a negative timestamp (EyeLink's clock never is) inside a block") == 1
    assert any("line 111: 1 sample line(s) with a negative timestamp" in w for w in rec.warnings)


# --- silent 6, 7, 8: a required column missing; trial-key cells; an inf gaze sample --------------------------------

def _ia_edit(small_data, tmp_path, edit):
    d = small_data / "onestop_sample"
    lines = [line.decode() for line in _lines(d / "ia.csv")]
    edit(lines)
    return d, _copy(d / "ia.csv", tmp_path / "ia.csv", [line.encode() for line in lines])


def _set(lines: list[str], row: int, column: str, value: str) -> None:
    """Set one cell of a comma file whose column is unquoted in ``row`` (editor line numbers)."""
    import csv
    import io

    header = next(csv.reader(io.StringIO(lines[0])))
    out = io.StringIO()
    fields = next(csv.reader(io.StringIO(lines[row - 1])))
    fields[header.index(column)] = value
    csv.writer(out, lineterminator="\n").writerow(fields)
    lines[row - 1] = out.getvalue()


def test_an_ia_report_without_ia_bottom_is_a_schema_error(small_data, tmp_path):
    from readgaze.io.dataviewer import read_ia_report

    def edit(lines):
        import csv
        import io

        rows = list(csv.reader(io.StringIO("".join(lines))))
        j = rows[0].index("IA_BOTTOM")
        out = io.StringIO()
        csv.writer(out, lineterminator="\n").writerows([r[:j] + r[j + 1:] for r in rows])
        lines[:] = [out.getvalue()]

    _, ia = _ia_edit(small_data, tmp_path, edit)
    with pytest.raises(SchemaError, match=r"no column for \['bottom_px'\] \(expected bottom_px <- IA_BOTTOM"):
        read_ia_report(ia, source="onestop").collect()


@pytest.mark.parametrize("value", ["abc", "-32768", " 44", ""])
def test_a_bad_trial_index_cell_is_an_error_naming_the_cell(small_data, tmp_path, value):
    from readgaze.io.onestop import load_onestop

    d, ia = _ia_edit(small_data, tmp_path, lambda lines: _set(lines, 500, "TRIAL_INDEX", value))
    with pytest.raises(ParseError) as e:
        load_onestop(d / "fixations.csv", ia)
    assert (e.value.file, e.value.row, e.value.column) == (str(ia), 500, "TRIAL_INDEX")


def test_an_inf_gaze_sample_is_missing_and_gives_no_fixation_at_inf(small_data, tmp_path):
    from readgaze.events import detect_fixations
    from readgaze.io.samples import ScreenGeometry, read_gaze_csv

    lines = _lines(_gaze(small_data, tmp_path, 1500))
    fields = lines[600].split(b"\t")
    fields[1] = b"inf"
    lines[600] = b"\t".join(fields)
    path = _copy(tmp_path / "trial_0_1.csv", tmp_path / "trial_0_1.csv", lines)
    samples = read_gaze_csv(path).collect()
    found, _ = detect_fixations(samples, screen=ScreenGeometry(1280, 1024, 38.0, 30.2, 68.0))
    assert samples["x_px"][599] is None and found["x_px"].is_finite().all()
    qc = QCLog()
    read_gaze_csv(path, qc=qc).collect()
    assert qc.total(reason="non-finite or implausible gaze value (NaN, inf, |value| > 100,000) read as missing",
                    action="changed") == 1


# --- the raw tracebacks -------------------------------------------------------------------------------------------

def test_read_gaze_csv_long_row_latin1_byte_and_renamed_trial_column_are_readgaze_errors(small_data, tmp_path):
    from readgaze.io.samples import read_gaze_csv

    lines = _lines(_gaze(small_data, tmp_path))
    path = tmp_path / "trial_0_1.csv"
    long = lines[:200] + [lines[200].rstrip(b"\r\n") + b"\t7\r\n"] + lines[201:]
    _copy(path, path, long)
    with pytest.raises(ParseError, match=r"row 201: 6 fields where the header has 5: an unquoted TAB"):
        read_gaze_csv(path).collect()
    _copy(path, path, lines[:300] + [lines[300].replace(b"\t", b"\xe9\t", 1)] + lines[301:])
    with pytest.raises(ParseError, match=r"row 301: byte b'\\xe9' is not UTF-8 .*encoding='cp1252'"):
        read_gaze_csv(path).collect()
    _copy(path, path, [b"time\tx\ty\tstim_x\tstim_y\r\n"] + lines[1:])
    with pytest.raises(ParseError, match=r"missing time column 'timestamp'"):
        read_gaze_csv(path, trial_column="trial")


def test_load_onestop_header_only_report_and_a_nan_ia_id_are_readgaze_errors(small_data, tmp_path):
    from readgaze.io.onestop import load_onestop

    d = small_data / "onestop_sample"
    fix = _copy(d / "fixations.csv", tmp_path / "fixations.csv", _lines(d / "fixations.csv")[:1])
    with pytest.raises(ParseError) as e:
        load_onestop(fix, d / "ia.csv")
    assert str(e.value) == "fixations.csv, row 2: no data row after the header"
    _, ia = _ia_edit(small_data, tmp_path, lambda lines: _set(lines, 77, "IA_ID", "NaN"))
    with pytest.raises(ParseError) as e:
        load_onestop(d / "fixations.csv", ia)
    assert (e.value.row, e.value.column) == (77, "IA_ID") and "expected an interest-area id" in str(e.value)


def test_prep_onestop_with_an_unquoted_comma_in_a_label_names_the_row(small_data, tmp_path, capsys):
    import csv
    import io

    d = small_data / "onestop_sample"
    lines = _lines(d / "ia.csv")
    header = next(csv.reader(io.StringIO(lines[0].decode())))
    fields = next(csv.reader(io.StringIO(lines[700].decode())))
    fields[header.index("IA_LABEL")] += "\x00"  # a label "word," written without quotes
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerow(fields)
    ia = _copy(d / "ia.csv", tmp_path / "ia.csv", lines[:700] + [out.getvalue().replace("\x00", ",").encode()]
               + lines[701:])
    code = main(["prep", "onestop", "--fixation-report", str(d / "fixations.csv"), "--ia-report", str(ia), "--out",
                 str(tmp_path / "ds"), "--quiet", "--no-cache"])
    err = capsys.readouterr().err
    assert code == 2 and "unexpected" not in err
    assert f"ia.csv, row 701: {len(header) + 1} fields where the header has {len(header)}: an unquoted comma" in err


# --- the unclear errors ------------------------------------------------------------------------------------------

def test_prep_asc_on_a_recording_cut_before_its_first_fixation_names_the_file(small_data, tmp_path, capsys):
    src = small_data / "eyelink_asc" / "eyelink_monocular_example.asc"
    lines = _lines(src)
    first_fix = next(k for k, line in enumerate(lines) if line.startswith((b"SFIX", b"EFIX")))
    asc = _copy(src, tmp_path / src.name, lines[:first_fix])  # samples, but no fixation
    code = main(["prep", "asc", str(asc), "--layout", str(small_data / "pymovements_examples" /
                                                             "potec_word_aoi_b0.tsv"), "--out", str(tmp_path / "ds"),
                 "--quiet"])
    err = capsys.readouterr().err
    assert code == 2 and "words table is empty" not in err
    assert "eyelink_monocular_example.asc: no fixation (EFIX line) in 1 recording(s)" in err


def test_a_header_only_ia_report_names_itself(small_data, tmp_path):
    from readgaze.io.onestop import load_onestop

    d = small_data / "onestop_sample"
    ia = _copy(d / "ia.csv", tmp_path / "ia.csv", _lines(d / "ia.csv")[:1])
    with pytest.raises(ReadgazeError) as e:
        load_onestop(d / "fixations.csv", ia)
    assert e.value.file == str(ia) and e.value.row == 2


def test_an_ia_id_of_minus_32768_points_at_the_cell(small_data, tmp_path):
    from readgaze.io.onestop import load_onestop

    d, ia = _ia_edit(small_data, tmp_path, lambda lines: _set(lines, 1200, "IA_ID", "-32768"))
    with pytest.raises(ParseError) as e:
        load_onestop(d / "fixations.csv", ia)
    assert str(e.value).startswith("ia.csv, row 1200, column IA_ID: got -32768 (EyeLink's missing-value code")


def test_repairs_without_a_qc_log_are_warned(shared_data, tmp_path):
    from readgaze.io.csv import scan_csv

    src = shared_data / "sbsat" / "fixation" / "18sat_labels.csv"
    lines = _lines(src)
    path = _copy(src, tmp_path / src.name, lines[:10] + [b"\n"] + lines[10:])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        frame = scan_csv(path).collect()
    assert frame.height == len(lines) - 1 and frame["subj"].null_count() == 0
    assert [str(w.message) for w in caught if issubclass(w.category, UserWarning)] == [
        "18sat_labels.csv line 11: 1 blank line dropped"]


# --- found by the fuzz after the lists ----------------------------------------------------------------------

def test_a_column_named_twice_in_the_header_is_an_error_naming_it(small_data, tmp_path):
    """Two exports pasted side by side, or a column copied in a spreadsheet: polars renames the second
    ``X_duplicated_0`` and the reader took the first, silently."""
    from readgaze.io.sbsat import read_sbsat_fixations

    src = small_data / "pymovements_examples" / "18sat_fixfinal.csv"
    lines = _lines(src)
    header = lines[0].decode().rstrip("\r\n").split(",")
    j = header.index("CURRENT_FIX_X")
    pasted = [lines[0].rstrip(b"\r\n") + b",CURRENT_FIX_X\n"] + [line.rstrip(b"\r\n") + b",0\n" for line in lines[1:]]
    path = _copy(src, tmp_path / src.name, pasted)  # a second CURRENT_FIX_X column, all 0, pasted at the end
    with pytest.raises(ParseError) as e:
        read_sbsat_fixations(path).collect()
    assert (e.value.file, e.value.row, e.value.column) == (str(path), 1, "CURRENT_FIX_X")
    assert f"(columns {j + 1}, {len(header) + 1})" in str(e.value)


def test_a_row_deleted_from_the_sbsat_trials_is_flagged(small_data, tmp_path):
    """A trial row lost (a cut-and-paste in a spreadsheet) leaves a gap in the participant's INDEX: flagged."""
    from readgaze.io.sbsat import read_sbsat_trials

    src = small_data / "sbsat" / "fixation" / "18sat_trialfinal.csv"
    lines = _lines(src)[:600]
    path = _copy(src, tmp_path / src.name, lines[:150] + lines[151:])  # msd003, INDEX 2 of 1..74
    qc, clean = QCLog(), QCLog()
    read_sbsat_trials(path, qc=qc).collect()
    read_sbsat_trials(_copy(src, tmp_path / "clean.csv", lines), qc=clean).collect()
    reason = "trial numbers (INDEX) of a participant not consecutive"
    assert (_reasons(clean).get(reason, 0), _reasons(qc)[reason]) == (0, 1)


def test_two_fixation_rows_swapped_are_flagged(small_data, tmp_path):
    """A sort or a hand edit that swaps two rows of a trial: the fixation numbers run backwards once; flagged."""
    from readgaze.io.dataviewer import read_fixation_report

    src = small_data / "onestop_sample" / "fixations.csv"
    lines = _lines(src)[:800]
    path = _copy(src, tmp_path / "fixations.csv", lines[:190] + [lines[191], lines[190]] + lines[192:])
    qc, clean = QCLog(), QCLog()
    read_fixation_report(path, source="onestop", qc=qc).collect()
    read_fixation_report(_copy(src, tmp_path / "clean.csv", lines), source="onestop", qc=clean).collect()
    reason = "rows out of order (fixation_index not above the previous row's of its trial_id; kept in file order)"
    assert (_reasons(clean).get(reason, 0), _reasons(qc)[reason]) == (0, 1)


def test_a_utf16_file_is_an_error_saying_so(small_data, tmp_path):
    """A spreadsheet's "Unicode text" (UTF-16): read as UTF-8 every value held a NUL byte, and the error named a
    column ``t i m e s t a m p``."""
    from readgaze.io.asc import read_asc
    from readgaze.io.samples import read_gaze_csv

    gaze = _gaze(small_data, tmp_path)
    (tmp_path / "utf16").mkdir()
    utf16 = tmp_path / "utf16" / gaze.name
    utf16.write_bytes(gaze.read_bytes().decode().encode("utf-16"))
    with pytest.raises(ParseError, match="the file is UTF-16 text") as e:
        read_gaze_csv(utf16).collect()
    assert (e.value.file, e.value.row) == (str(utf16), 1)
    assert read_gaze_csv(utf16, encoding="utf-16").collect().equals(read_gaze_csv(gaze).collect())
    src = small_data / "eyelink_asc" / "eyelink_monocular_example.asc"
    asc = tmp_path / src.name
    asc.write_bytes(src.read_bytes().decode().encode("utf-16"))
    with pytest.raises(ParseError, match="the file is UTF-16 text"):
        read_asc(asc)


def test_a_participant_cell_changed_on_one_row_is_flagged(small_data, tmp_path):
    """``msd001`` typed over as ``abc`` on one row of an SB-SAT fixation report: a one-fixation phantom trial of a
    phantom participant, and the real trial split in two. The split is flagged."""
    from readgaze.io.sbsat import read_sbsat_fixations

    src = small_data / "pymovements_examples" / "18sat_fixfinal.csv"
    lines = _lines(src)
    lines[49] = lines[49].replace(b"msd001", b"abc", 1)
    path = _copy(src, tmp_path / src.name, lines)
    qc, clean = QCLog(), QCLog()
    got = read_sbsat_fixations(path, qc=qc).collect()
    read_sbsat_fixations(src, qc=clean).collect()
    reason = "rows of a trial not together in the report"
    assert got["trial_id"].n_unique() == 2 and (_reasons(clean).get(reason, 0), _reasons(qc)[reason]) == (0, 1)
    assert [r["detail"] for r in qc.records if r["reason"] == reason] == [
        "18sat_fixfinal.csv: first trial_id msd001_1 (a changed key cell, or a file sorted otherwise?)"]


def test_mixed_line_ends_are_an_error_naming_the_first_lone_cr(small_data, tmp_path):
    """Some lines ending with a CR alone, others with a line feed: polars said "CSV file contained column names not
    specified in schema (n_extra = 3)", read_asc "no recording block (no START line)"."""
    from readgaze.io.asc import read_asc
    from readgaze.io.samples import read_gaze_csv

    lines = [line.rstrip(b"\r\n") + b"\n" for line in _lines(_gaze(small_data, tmp_path))]
    lines[100:150] = [line.rstrip(b"\n") + b"\r" for line in lines[100:150]]  # (CR-only from the header on: read)
    path = _copy(tmp_path / "trial_0_1.csv", tmp_path / "trial_0_1.csv", lines)
    with pytest.raises(ParseError, match="ends with a CR alone while others end with a line feed") as e:
        read_gaze_csv(path).collect()
    assert e.value.row == 101
    src = small_data / "eyelink_asc" / "eyelink_monocular_example.asc"
    lines = _lines(src)
    lines = [line.rstrip(b"\r\n") + (b"\r" if k < len(lines) - 10 else b"\n") for k, line in enumerate(lines)]
    asc = _copy(src, tmp_path / src.name, lines)
    with pytest.raises(ParseError, match="ends with a CR alone") as e:
        read_asc(asc)
    assert (e.value.file, e.value.row) == (str(asc), 1)


def test_a_number_with_spaces_around_it_is_an_error_naming_the_cell(small_data, tmp_path):
    """``" -1.0 "`` typed into a numeric column: the parser read the whole column as text (issue 29: silent; then a
    QC flag beside a column of strings; issue 39: an error naming file, row and column)."""
    from readgaze.io.samples import read_gaze_csv

    lines = _lines(_gaze(small_data, tmp_path, 1500))
    fields = lines[756].split(b"\t")
    fields[3] = b" " + fields[3] + b" "
    lines[756] = b"\t".join(fields)
    path = _copy(tmp_path / "trial_0_1.csv", tmp_path / "trial_0_1.csv", lines)
    with pytest.raises(ParseError, match="is not a number \\(spaces around a number\\?\\), in a column of numbers "
                       "\\(1 of 1,499 values are not\\)") as e:
        read_gaze_csv(path, qc=QCLog()).collect()
    assert (e.value.file, e.value.row, e.value.column) == (str(path), 757, "stimuli_x")


def test_a_title_line_above_the_header_is_an_error_saying_so(small_data, tmp_path):
    """polars said "CSV file contained column names not specified in schema (n_extra = 24)"."""
    from readgaze.io.dataviewer import read_fixation_report

    src = small_data / "onestop_sample" / "fixations.csv"
    path = _copy(src, tmp_path / "fixations.csv", [b"# exported 2024-05-01\n"] + _lines(src)[:500])
    with pytest.raises(ParseError, match="is line 1 a title or a comment rather than the header") as e:
        read_fixation_report(path, source="onestop").collect()
    assert (e.value.file, e.value.row) == (str(path), 1)


def test_a_padded_number_in_a_onestop_word_feature_is_an_error_naming_the_cell(small_data, tmp_path):
    """OneStop's word features are read from chosen rows; ``' 15 '`` in ``head_word_index`` made the column text
    in ``words`` silently (then flagged beside a column of strings; now an error naming file, row and column)."""
    from readgaze.io.onestop import load_onestop

    d, ia = _ia_edit(small_data, tmp_path, lambda lines: _set(lines, 2325, "head_word_index", " 15 "))
    with pytest.raises(ParseError, match="' 15 ' is not a number") as e:
        load_onestop(d / "fixations.csv", ia)
    assert (e.value.file, e.value.row, e.value.column) == (str(ia), 2325, "head_word_index")


# --- found by the fuzz with unseen seeds (7000-7119): a page name changed by hand; an .asc cut inside a trial --

@pytest.mark.parametrize(("column", "value", "expected"), [
    ("page_name", "abc", "got 'abc', expected '{type}-{book_name}-{page}': the row's type 'question' and book_name "
     "'dickens' say 'question-dickens-<n>' (one of the three cells changed?)"),
    ("book_name", "abc", "got 'question-dickens-4', expected '{type}-{book_name}-{page}': the row's type 'question' "
     "and book_name 'abc' say 'question-abc-<n>'"),
    ("type", "abc", "got 'abc', expected a page type (reading or question)"),
])
def test_an_sbsat_page_cell_that_does_not_name_its_page_is_an_error(small_data, tmp_path, column, value, expected):
    """fuzz seed 7041: ``page_name`` 'question-genome-3' -> 'abc' made a text of its own without a word. Every row of
    the published report names its page ``{type}-{book_name}-{n}``; a row that does not is an error naming the cell."""
    from readgaze.io.sbsat import read_sbsat_trials

    src = small_data / "sbsat" / "fixation" / "18sat_trialfinal.csv"
    lines = _lines(src)[:300]
    header = lines[0].decode().rstrip("\r\n").split(",")
    fields = lines[9].decode().rstrip("\r\n").split(",")  # row 10: msd001, a question page of dickens
    assert fields[header.index("page_name")] == "question-dickens-4"
    fields[header.index(column)] = value
    path = _copy(src, tmp_path / src.name, lines[:9] + [(",".join(fields) + "\n").encode()] + lines[10:])
    read_sbsat_trials(_copy(src, tmp_path / "clean.csv", lines)).collect()  # the undamaged rows pass
    with pytest.raises(ParseError) as e:
        read_sbsat_trials(path)
    assert (e.value.file, e.value.row, e.value.column) == (str(path), 10, "page_name" if column != "type" else "type")
    assert expected in str(e.value)


def test_an_asc_cut_between_a_trials_variables_and_its_trial_result_is_flagged(small_data, tmp_path):
    """fuzz seed 7031: the monocular example cut at the end of line 154, inside the trial variables that Experiment
    Builder writes after END and closes with TRIAL_RESULT (line 160): the trial lost 5 columns and nothing was
    said. Now a warning and a QC record name the first unclosed line; the whole file gives neither."""
    from readgaze.io.asc import read_asc

    src = small_data / "eyelink_asc" / "eyelink_monocular_example.asc"
    lines = _lines(src)
    assert lines[159].startswith(b"MSG") and b"TRIAL_RESULT" in lines[159]
    cut = read_asc(_copy(src, tmp_path / src.name, lines[:154]))
    whole = read_asc(src)
    reason = "file ends inside a trial (trial variables after the last TRIAL_RESULT)"
    assert (_reasons(whole.qc).get(reason, 0), _reasons(cut.qc)[reason]) == (0, 1)
    said = [w for w in cut.warnings if "ends inside a trial" in w]
    assert said == [f"{src.name} line 149: 6 trial-variable line(s) after the last TRIAL_RESULT and no TRIAL_RESULT "
                    "closing them: the file ends inside a trial (cut short?); the variables read are kept"]
    assert cut.trials.width < whole.trials.width  # what the flag is about: the trial's later variables are missing


def test_a_damaged_start_line_is_named_by_the_no_block_error(small_data, tmp_path):
    """fuzz seed 8173: a NUL inside the only START keyword left no recording block; the error named the file alone.
    Now it names the line of no known kind that the sample lines follow."""
    from readgaze.io.asc import read_asc

    def edit(lines):
        assert lines[86].startswith(b"START")
        lines[86] = lines[86][:2] + b"\x00" + lines[86][2:]

    path = _asc(small_data, tmp_path, edit)
    with pytest.raises(ParseError) as e:
        read_asc(path)
    assert (e.value.file, e.value.row) == (str(path), 87)
    assert "sample lines follow line 87, a line of no known kind ('ST\\x00ART\\t2154556" in str(e.value)
    assert "a damaged START line?" in str(e.value)
