"""Issue 39's damaged files, reader by reader: a last line cut inside its last value, a decimal comma in a numeric
column, an extra unnamed column. Each loaded silently before: the cut row with a changed value (431 ms read as 43
ms), the column of numbers read as text (``IA_DWELL_TIME`` 387 -> ``'387'``), the unnamed column as ``''`` or
``column_14``. Now: the cut row dropped and counted (file, line, "incomplete last line"), the non-number an error
naming file, row and column, the unnamed column flagged."""

from __future__ import annotations

import csv
import io
import warnings

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from readgaze.errors import ParseError
from readgaze.io.faults import CUT_LAST, UNNAMED, RepairWarning
from readgaze.qc import QCLog

pytestmark = pytest.mark.shared_data


def _fixation_report(path, qc=None):
    from readgaze.io.dataviewer import read_fixation_report

    return read_fixation_report(path, source="onestop", qc=qc).collect()


def _ia_report(path, qc=None):
    from readgaze.io.dataviewer import read_ia_report

    return read_ia_report(path, source="onestop", qc=qc).collect()


def _gaze_csv(path, qc=None):
    from readgaze.io.samples import read_gaze_csv

    return read_gaze_csv(path, qc=qc).collect()


def _sbsat_fixations(path, qc=None):
    from readgaze.io.sbsat import read_sbsat_fixations

    return read_sbsat_fixations(path, qc=qc).collect()


def _read_csv(path, qc=None):
    from readgaze.io.csv import read_csv

    return read_csv(path, qc=qc)


READERS = {  # reader, real file, lines kept (an excerpt keeps the test quick)
    "fixation report": (_fixation_report, "onestop_sample/fixations.csv", None),
    "IA report": (_ia_report, "onestop_sample/ia.csv", 900),
    "gaze-sample CSV": (_gaze_csv, "toy_reading_raw/trial_0_1.csv", 600),
    "SB-SAT fixations": (_sbsat_fixations, "pymovements_examples/18sat_fixfinal.csv", None),
    "read_csv": (_read_csv, "line_assignment/fixations.csv", None),
}


def _excerpt(shared_data, tmp_path, rel: str, keep: int | None) -> tuple[bytes, list[bytes]]:
    lines = (shared_data / rel).read_bytes().splitlines(keepends=True)
    lines = lines[:keep] if keep else lines
    return b"".join(lines), lines


@pytest.mark.parametrize("name", list(READERS))
def test_a_last_line_cut_inside_its_last_value_is_dropped_and_named(shared_data, tmp_path, name):
    read, rel, keep = READERS[name]
    data, lines = _excerpt(shared_data, tmp_path, rel, keep)
    end = lines[-1].rstrip(b"\r\n")
    assert len(end) >= 3
    whole = tmp_path / "whole" / rel.rsplit("/", 1)[-1]
    shorter = tmp_path / "shorter" / whole.name
    cut = tmp_path / "cut" / whole.name
    for path, content in ((whole, data), (shorter, b"".join(lines[:-1])), (cut, data[:len(data) - len(lines[-1])]
                                                                            + end[:-1])):
        path.parent.mkdir()
        path.write_bytes(content)
    qc = QCLog()
    got = read(cut, qc)
    assert got.height == read(whole).height - 1  # the cut row is gone, not read with its last value changed
    assert_frame_equal(got, read(shorter))
    records = [r for r in qc.records if r["reason"] == CUT_LAST]
    assert [(r["count"], r["action"], r["detail"]) for r in records] == [
        (1, "dropped", f"{cut.name}: first at line {len(lines)}")]
    with warnings.catch_warnings(record=True) as caught:  # no QC log: a warning names the file and the line
        warnings.simplefilter("always")
        read(cut)
    said = [str(w.message) for w in caught if issubclass(w.category, RepairWarning)]
    assert f"{cut.name} line {len(lines)}: 1 incomplete last line (no line break at its end: the file cut short?) " \
           "dropped" in said


@pytest.mark.parametrize("name", ["fixation report", "IA report", "gaze-sample CSV"])
def test_a_last_line_cut_short_of_a_field_is_an_error_naming_the_line(shared_data, tmp_path, name):
    read, rel, keep = READERS[name]
    data, lines = _excerpt(shared_data, tmp_path, rel, keep)
    sep = b"\t" if lines[0].count(b"\t") > lines[0].count(b",") else b","
    last = lines[-1]
    path = tmp_path / rel.rsplit("/", 1)[-1]
    path.write_bytes(data[:len(data) - len(last)] + last[:last.rindex(sep)])  # the last field and its separator cut
    with pytest.raises(ParseError, match="the file looks truncated") as e:
        read(path)
    assert (e.value.file, e.value.row) == (str(path), len(lines))


def test_a_file_whose_only_data_row_is_cut_is_an_error(tmp_path):
    from readgaze.io.csv import read_csv

    path = tmp_path / "one.csv"
    path.write_bytes(b"trial,duration_ms\nt1,431")
    with pytest.raises(ParseError, match="the only data row has no line break at its end") as e:
        read_csv(path)
    assert (e.value.file, e.value.row) == (str(path), 2)


def _set_cell(lines: list[bytes], row: int, column: str, value: str) -> None:
    """Set one cell (editor line ``row``) of a comma-separated file, quoting as a spreadsheet does."""
    header = next(csv.reader(io.StringIO(lines[0].decode())))
    fields = next(csv.reader(io.StringIO(lines[row - 1].decode())))
    fields[header.index(column)] = value
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerow(fields)
    lines[row - 1] = out.getvalue().encode()


@pytest.mark.parametrize(("name", "column", "row"), [
    ("fixation report", "CURRENT_FIX_DURATION", 1200), ("IA report", "IA_DWELL_TIME", 6),
    ("IA report", "IA_FIRST_FIXATION_DURATION", 700)])
def test_a_decimal_comma_in_a_numeric_column_of_a_report_is_an_error_naming_the_cell(shared_data, tmp_path, name,
                                                                                      column, row):
    read, rel, keep = READERS[name]
    _, lines = _excerpt(shared_data, tmp_path, rel, keep)
    header = next(csv.reader(io.StringIO(lines[0].decode())))
    value = next(csv.reader(io.StringIO(lines[row - 1].decode())))[header.index(column)]
    assert value.isdigit()  # a number there, written again with a decimal comma
    _set_cell(lines, row, column, f"{value},5")
    path = tmp_path / rel.rsplit("/", 1)[-1]
    path.write_bytes(b"".join(lines))
    with pytest.raises(ParseError, match=rf"'{value},5' is not a number \(a decimal comma\?\), in a column of numbers "
                       r"\(1 of [\d,]+ values are not\)") as e:
        read(path, QCLog())
    assert (e.value.file, e.value.row, e.value.column) == (str(path), row, column)


@pytest.mark.parametrize(("column", "row"), [("word_length_no_punctuation", 6), ("TRIAL_DWELL_TIME", 2)])
def test_a_decimal_comma_in_a_column_load_onestop_keeps_is_an_error(shared_data, tmp_path, column, row):
    """OneStop's word features and trial columns are read from chosen rows (each text's first trial, each trial's
    first row): there too a decimal comma is an error, not a column of text."""
    from readgaze.io.onestop import load_onestop

    lines = (shared_data / "onestop_sample/ia.csv").read_bytes().splitlines(keepends=True)
    header = next(csv.reader(io.StringIO(lines[0].decode())))
    value = next(csv.reader(io.StringIO(lines[row - 1].decode())))[header.index(column)]
    assert value.isdigit()
    _set_cell(lines, row, column, f"{value},5")
    ia = tmp_path / "ia.csv"
    ia.write_bytes(b"".join(lines))
    with pytest.raises(ParseError, match=f"'{value},5' is not a number") as e:
        load_onestop(shared_data / "onestop_sample/fixations.csv", ia)
    assert (e.value.file, e.value.row, e.value.column) == (str(ia), row, column)


@pytest.mark.parametrize("name", ["fixation report", "IA report", "read_csv"])
def test_an_extra_unnamed_trailing_column_is_reported(shared_data, tmp_path, name):
    read, rel, keep = READERS[name]
    _, lines = _excerpt(shared_data, tmp_path, rel, keep)
    extra = [lines[0].rstrip(b"\r\n") + b",\n"] + [line.rstrip(b"\r\n") + b",x\n" for line in lines[1:]]
    path = tmp_path / rel.rsplit("/", 1)[-1]
    path.write_bytes(b"".join(extra))
    qc = QCLog()
    got = read(path, qc)
    width = len(next(csv.reader(io.StringIO(lines[0].decode()))))
    flagged = [r for r in qc.records if r["reason"] == UNNAMED]
    assert [(r["count"], r["action"], r["detail"]) for r in flagged] == [
        (1, "flagged", f"{path.name} row 1, 1 of {width + 1} columns have no name in the header (an extra separator "
                       f"at the end of the lines?): column {width + 1} (read as ''); kept")]
    plain = tmp_path / "plain" / path.name
    plain.parent.mkdir()
    plain.write_bytes(b"".join(lines))
    assert_frame_equal(got.drop("", strict=False), read(plain))  # the other columns as without it
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        read(path)
    assert any("columns have no name in the header" in str(w.message) for w in caught)


def test_a_clean_report_says_nothing_of_these_faults(shared_data):
    qc = QCLog()
    frame = _ia_report(shared_data / "onestop_sample/ia.csv", qc)
    assert frame.schema["IA_DWELL_TIME"] == pl.Int64
    assert not [r for r in qc.records if r["reason"] in (CUT_LAST, UNNAMED) and r["count"]]


def test_prep_summary_names_the_cut_row_and_the_unnamed_column(shared_data, tmp_path, capsys):
    from readgaze.cli import main

    src = shared_data / "onestop_sample"
    fixations = (src / "fixations.csv").read_bytes()
    cut = tmp_path / "fixations.csv"
    cut.write_bytes(fixations[:-7])  # the last row cut inside its last value
    ia = tmp_path / "ia.csv"
    lines = (src / "ia.csv").read_bytes().splitlines(keepends=True)
    ia.write_bytes(b"".join([lines[0].rstrip(b"\n") + b",\n"] + [line.rstrip(b"\n") + b",x\n" for line in lines[1:]]))
    assert main(["prep", "onestop", "--fixation-report", str(cut), "--ia-report", str(ia), "--out",
                 str(tmp_path / "out"), "--no-cache"]) == 0
    said = capsys.readouterr()
    out = " ".join((said.out + said.err).split())  # the summary, unwrapped
    n = fixations.count(b"\n")  # the last line's number
    assert (f"dropped 1 lines (read_fixation_report: incomplete last line (no line break at its end: the file cut "
            f"short?) dropped; fixations.csv: first at line {n})") in out
    assert "warning: ia.csv row 1, 1 of 58 columns have no name in the header (an extra separator at the end of the " \
           "lines?): column 58 (read as ''); kept" in out
