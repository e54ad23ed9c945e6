"""The robust CSV scanner: separators, nulls, whole-file inference, quoting, decimal commas (BR-11, BR-19)."""

from __future__ import annotations

import math

import polars as pl
import pytest

from readgaze.errors import ParseError, ReadgazeError
from readgaze.io.csv import HEAD_ROWS, detect_separator, read_csv, require_numeric, scan_csv


def test_br11_empty_first_120_rows_still_float(small_data):
    """BR-11: the first 120 rows have empty x/y; default 100-row inference would make them String."""
    path = small_data / "bad_inputs" / "BR-11.csv"
    df = scan_csv(path).collect()
    assert df.schema["x"] == pl.Float64 and df.schema["y"] == pl.Float64
    assert df.height == 130
    assert df["x"].null_count() == 120 and df["y"].null_count() == 120
    assert df["x"][-1] == 409.5 and df["y"][-1] == 210.0
    assert df["x"][:120].is_null().all() and df["x"][120:].is_not_null().all()


def test_br19_decimal_comma_is_a_clear_error(small_data):
    path = small_data / "bad_inputs" / "BR-19.csv"
    assert detect_separator(path) == ";"
    with pytest.raises(ParseError) as e:
        scan_csv(path)
    msg = str(e.value)
    assert msg.startswith("BR-19.csv, row 2, column x: '390,6' is not a number")
    assert "decimal comma" in msg and "decimal_comma=True" in msg and "';'" in msg
    assert e.value.row == 2 and e.value.column == "x"


def test_br19_decimal_comma_option_parses(small_data):
    df = scan_csv(small_data / "bad_inputs" / "BR-19.csv", decimal_comma=True).collect()
    assert df.schema["x"] == pl.Float64 and df.schema["y"] == pl.Float64
    assert df["x"].to_list() == [390.6, 391.1, 397.3]
    assert df["y"].to_list() == [210.0, 207.5, 212.6]
    assert df["timestamp_ms"].to_list() == [7742, 7744, 7746]


def test_decimal_comma_needs_another_separator(tmp_path):
    p = tmp_path / "a.csv"
    p.write_text("x,y\n1,2\n")
    with pytest.raises(ParseError, match="separator other than"):
        scan_csv(p, decimal_comma=True)


def test_tab_separated_dot_nulls_inf_quotes_bom(tmp_path):
    p = tmp_path / "report.csv"  # TAB despite .csv, as SB-SAT/EMTeC samples
    p.write_bytes("\ufeffid\tlabel\tfreq\tskip\n1\t\"however,\"\tinf\tTrue\n2\t\"\"\"Yes,\"\"\"\t.\tFalse\n3\t--\t2.5\t\n"
                  .encode())
    assert detect_separator(p) == "\t"
    df = scan_csv(p).collect()
    assert df.columns == ["id", "label", "freq", "skip"]
    assert df["label"].to_list() == ["however,", '"Yes,"', "--"]
    assert df.schema["freq"] == pl.Float64 and math.isinf(df["freq"][0]) and df["freq"][1] is None
    assert df["skip"].to_list() == [True, False, None]


def test_dot_after_row_100_does_not_break_inference(tmp_path):
    """OneStop's first '.' sits past the 100-row window (pl.read_csv raises there)."""
    p = tmp_path / "fix.csv"
    p.write_text("a,b\n" + "".join(f"{i},{i}\n" for i in range(150)) + "150,.\n")
    df = scan_csv(p).collect()
    assert df.schema["b"] == pl.Int64 and df["b"].null_count() == 1 and df.height == 151


def test_require_numeric_names_row_column_value(tmp_path):
    p = tmp_path / "fix.csv"
    p.write_text("x,y\n1.5,2\n2.5,oops\n")
    with pytest.raises(ParseError) as e:
        require_numeric(scan_csv(p), p, ["x", "y"])
    assert str(e.value) == "fix.csv, row 3, column y: got 'oops', expected a number"


def test_all_empty_column_casts_to_number(tmp_path):
    p = tmp_path / "a.csv"
    p.write_text("x,y\n1,\n2,\n")
    df = require_numeric(scan_csv(p), p, ["y"]).collect()
    assert df.schema["y"] == pl.Float64 and df["y"].null_count() == 2


def test_missing_and_empty_files(tmp_path):
    with pytest.raises(ReadgazeError, match="no such file"):
        scan_csv(tmp_path / "nope.csv")
    (tmp_path / "empty.csv").write_text("")
    with pytest.raises(ParseError, match="empty"):
        scan_csv(tmp_path / "empty.csv")


def test_explicit_schema_skips_inference(tmp_path):
    p = tmp_path / "a.csv"
    p.write_text("a,b\n1,x\n2,.\n")
    df = scan_csv(p, schema={"a": pl.Float64, "b": pl.String}).collect()
    assert df.schema == pl.Schema({"a": pl.Float64, "b": pl.String})
    assert df["b"].to_list() == ["x", None]


def _late(tmp_path, name: str, head_line: str, late: str, header: str = "a,b"):
    """A file whose first HEAD_ROWS data rows all read ``head_line`` and whose later rows differ."""
    p = tmp_path / name
    p.write_text(header + "\n" + head_line * HEAD_ROWS + late)
    return p


@pytest.mark.parametrize(("head_line", "late", "expect_b"), [
    ("1,2\n", "1,2.5\n", pl.Float64),      # Int64 proposed by the head, a float later: parsed again
    ("1,\n", "1,2.5\n", pl.Float64),       # all null in the head (BR-11 at scale): decided in memory
    ("1,.\n", "1,TRUE\n2,false\n", pl.Boolean),
    ("1,true\n", "1,yes\n", pl.String),
])
def test_read_csv_never_trusts_the_head(tmp_path, head_line, late, expect_b):
    p = _late(tmp_path, "late.csv", head_line, late)
    df = read_csv(p)
    assert df.schema["b"] == expect_b == scan_csv(p).collect_schema()["b"]
    assert df.height == HEAD_ROWS + late.count("\n")
    assert df.equals(scan_csv(p).collect(), null_equal=True)


def test_read_csv_late_non_number_in_a_column_of_numbers_is_an_error(tmp_path):
    """One non-number after 10,000 numbers: an error naming the cell (it turned the column into text before)."""
    p = _late(tmp_path, "late.csv", "1,2\n", "1,oops\n")
    with pytest.raises(ParseError, match="'oops' is not a number") as e:
        read_csv(p)
    assert (e.value.row, e.value.column) == (HEAD_ROWS + 2, "b")


def test_read_csv_late_decimal_comma_is_the_same_error(tmp_path):
    p = _late(tmp_path, "semi.csv", "1;\n", "2;390,6\n", header="a;b")
    with pytest.raises(ParseError) as e:
        read_csv(p)
    assert e.value.row == HEAD_ROWS + 2 and e.value.column == "b" and "'390,6' is not a number" in str(e.value)
    assert read_csv(p, decimal_comma=True)["b"][-1] == 390.6


def test_read_csv_columns_and_explicit_schema(tmp_path):
    p = tmp_path / "a.csv"
    p.write_text("a,b,c\n1,x,2.5\n2,.,inf\n")
    df = read_csv(p, columns=["c", "a"])  # file order kept
    assert df.columns == ["a", "c"] and df.schema["a"] == pl.Int64 and math.isinf(df["c"][1])
    df = read_csv(p, schema={"a": pl.Float64, "b": pl.String, "c": pl.Float64}, columns=["a"])
    assert df.schema == pl.Schema({"a": pl.Float64})
    with pytest.raises(ParseError, match="a.csv"):
        read_csv(p, schema={"a": pl.Int64, "b": pl.Int64, "c": pl.Float64})


def test_read_csv_equals_scan_csv_on_the_bad_inputs(small_data):
    for name in ("BR-11.csv", "BR-12.csv", "BR-13_fix.csv", "BR-18.csv", "BR-20.csv", "BR-27_ia.csv"):
        path = small_data / "bad_inputs" / name
        assert read_csv(path).equals(scan_csv(path).collect(), null_equal=True), name
