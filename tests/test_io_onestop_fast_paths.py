"""The loader's fast paths equal the plain ones: ids built once per run of rows, the head read from a prefix."""

from __future__ import annotations

import warnings

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from readgaze.io.csv import _head_text, _options, header, read_csv
from readgaze.io.dataviewer import read_fixation_report, read_ia_report
from readgaze.io.faults import RepairWarning
from readgaze.io.rows import per_row_run, run_starts
from readgaze.io.sources import onestop_paragraph_id, onestop_trial_id

ID = pl.concat_str([pl.col("p"), pl.col("n").cast(pl.String), pl.lit("r") + pl.col("b").cast(pl.Int8).cast(pl.String)],
                   separator="_")


def test_run_starts_marks_every_change_of_any_column_nulls_equal():
    frame = pl.DataFrame({"a": ["x", "x", None, None, "y", "y", "x"], "b": [1, 1, 1, 1, 1, 2, 2]})
    assert run_starts(frame, ["a", "b"]).tolist() == [0, 2, 4, 5, 6]
    assert run_starts(frame, ["b"]).tolist() == [0, 5]
    assert run_starts(frame.head(0), ["a"]).tolist() == []
    assert run_starts(frame, []).tolist() == [0]


@pytest.mark.parametrize("rows", [0, 1, 2, 9])
def test_an_id_per_run_equals_an_id_per_row(rows):
    # interleaved trials (x, y, x again), a null part, a NaN part and a boolean part
    frame = pl.DataFrame({
        "p": ["x", "x", "y", "y", "x", None, None, "x", "x"],
        "n": [1.0, 1.0, 1.0, 2.0, 2.0, 2.0, float("nan"), float("nan"), 3.0],
        "b": [True, True, True, True, False, False, False, None, None],
        "other": list(range(9)),
    }).head(rows)
    text = pl.concat_str([pl.col("p"), pl.col("b").cast(pl.String)]).alias("text_id")
    expected = frame.select(ID.alias("trial_id"), text)
    got = per_row_run(frame, ID.alias("trial_id"), text)
    assert_frame_equal(got, expected)
    assert got["trial_id"].to_list() == expected["trial_id"].to_list()


def test_per_row_run_on_a_frame_of_distinct_rows_is_the_plain_select():
    frame = pl.DataFrame({"p": ["a", "b", "c"], "n": [1, 2, 3], "b": [True, False, True]})
    assert per_row_run(frame, ID).to_series().to_list() == ["a_1_r1", "b_2_r0", "c_3_r1"]


def _onestop_like(tmp_path, name: str, rows: list[dict]) -> str:
    path = tmp_path / name
    pl.DataFrame(rows).write_csv(path)
    return str(path)


FIX_ROWS = [  # trial A's rows, trial B's, then A again (a report out of its own order)
    {"participant_id": p, "TRIAL_INDEX": t, "CURRENT_FIX_INDEX": i, "CURRENT_FIX_X": 100.0 + i,
     "CURRENT_FIX_Y": 200.0, "CURRENT_FIX_DURATION": 180, "CURRENT_FIX_INTEREST_AREA_ID": i,
     "CURRENT_FIX_INTEREST_AREA_LABEL": f"w{i}", "article_batch": 1, "article_id": a, "difficulty_level": "Adv",
     "paragraph_id": 1, "repeated_reading_trial": r}
    for p, t, a, r, i in [("l1_1", 1, 2, False, 1), ("l1_1", 1, 2, False, 2), ("l1_1", 2, 3, True, 1),
                          ("l1_1", 2, 3, True, 2), ("l1_1", 1, 2, False, 3), ("l2_1", 1, 2, False, 1)]
]


def test_in_memory_fixation_ids_equal_the_lazy_reports(tmp_path):
    path = _onestop_like(tmp_path, "fix.csv", FIX_ROWS)
    lazy = read_fixation_report(path, source="onestop", ia_id_base=1, check_keys=False).collect()
    memory = read_fixation_report(path, source="onestop", ia_id_base=1, check_keys=False, in_memory=True).collect()
    assert_frame_equal(memory, lazy)
    assert memory["trial_id"].to_list() == ["l1_1_1_2_Adv_1_r0"] * 2 + ["l1_1_1_3_Adv_1_r1"] * 2 + [
        "l1_1_1_2_Adv_1_r0", "l2_1_1_2_Adv_1_r0"]


def test_in_memory_ia_ids_and_text_ids_equal_the_lazy_reports(tmp_path):
    rows = [{"participant_id": p, "TRIAL_INDEX": 1, "IA_ID": k, "IA_LABEL": f"w{k}", "IA_LEFT": 10 * k,
             "IA_RIGHT": 10 * k + 9, "IA_TOP": 100, "IA_BOTTOM": 140, "article_batch": 1, "article_id": a,
             "difficulty_level": level, "paragraph_id": 1, "repeated_reading_trial": False}
            for p, a, level in [("l1_1", 2, "Adv"), ("l1_1", 2, "Ele"), ("l2_1", 2, "Adv")] for k in (1, 2, 3)]
    path = _onestop_like(tmp_path, "ia.csv", rows)
    lazy = read_ia_report(path, source="onestop").collect()
    memory = read_ia_report(path, source="onestop", in_memory=True).collect()
    assert_frame_equal(memory, lazy)
    assert memory["text_id"].unique(maintain_order=True).to_list() == ["1_2_Adv_1", "1_2_Ele_1"]
    assert "__text_id" not in memory.columns
    # the ids are the source's own expressions, row by row
    raw = pl.read_csv(path)
    assert memory["trial_id"].to_list() == raw.select(onestop_trial_id({"participant_id": "participant_id"}))\
        .to_series().to_list()
    assert memory["text_id"].to_list() == raw.select(onestop_paragraph_id()).to_series().to_list()


def test_a_repeated_key_is_still_named_with_its_rows_when_ids_are_built_per_run(tmp_path):
    from readgaze.errors import DataError

    rows = FIX_ROWS[:2] + [FIX_ROWS[1]]  # fixation 2 of trial A twice
    path = _onestop_like(tmp_path, "fix.csv", rows)
    with pytest.raises(DataError) as e:
        read_fixation_report(path, source="onestop", ia_id_base=1, in_memory=True)
    assert e.value.row == 4 and "rows 3, 4" in str(e.value)


def _common(path):
    return _options(path, None, False, (".",))[1]


def test_the_head_comes_from_a_prefix_and_equals_the_scans_head(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("a,b,c\n" + "".join(f'{i},"x, {i}",.\n' for i in range(50)))
    names, common = header(path), _common(path)
    head = _head_text(path, names, common, head_rows=10)
    assert_frame_equal(head.collect(), pl.scan_csv(path, infer_schema=False, **common).head(10).collect())
    assert "DF" in head.explain()  # parsed from the bytes read, not a scan of the file
    short = _head_text(path, names, common, head_rows=500)  # the file ends within the head
    assert_frame_equal(short.collect(), pl.scan_csv(path, infer_schema=False, **common).collect())


def test_a_head_cut_inside_a_quoted_line_break_falls_back_to_the_scan(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text('a,b\n1,x\n2,"two\nlines"\n3,y\n4,z\n')
    names, common = header(path), _common(path)
    head = _head_text(path, names, common, head_rows=2)  # line 3 ends inside the quotes
    assert "DF" not in head.explain()
    assert head.head(2).collect()["b"].to_list() == ["x", "two\nlines"]
    assert read_csv(path)["b"].to_list() == ["x", "two\nlines", "y", "z"]


def test_read_csv_dtypes_do_not_depend_on_the_head(tmp_path, monkeypatch):
    import readgaze.io.csv as csv

    path = tmp_path / "t.csv"
    # b: labels late, more than the few values of a damaged cell (one "x" alone is an error: test_io_csv)
    path.write_text("a,b,c\n" + "".join(f"{i},{i},.\n" for i in range(30)) + "1.5,x,3\n" + "2,y,4\n" * 3)
    full = read_csv(path)
    monkeypatch.setattr(csv, "HEAD_ROWS", 5)
    monkeypatch.setattr(csv._head_text, "__defaults__", (5,))
    assert_frame_equal(read_csv(path), full)
    assert full.schema == pl.Schema({"a": pl.Float64, "b": pl.String, "c": pl.Int64})


@pytest.mark.parametrize("rows", [[], [0], [4], [0, 1, 2], [1, 3, 4], [0, 1, 2, 3, 4]])
@pytest.mark.parametrize("final_newline", [True, False])
def test_read_rows_in_runs_equals_the_rows_of_the_whole_parse(tmp_path, rows, final_newline):
    import numpy as np

    from readgaze.io.rows import read_rows

    path = tmp_path / "t.csv"
    text = "a,label,x\n" + "".join(f'{i},"w, {i}",{i / 2}\n' for i in range(5))
    path.write_text(text if final_newline else text[:-1])
    n = 5 if final_newline else 4  # a last line without a line break is dropped (cut short?), counted
    rows = [r for r in rows if r < n]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RepairWarning)
        got = read_rows(path, np.array(rows, dtype=np.int64), ["label", "x"], n_rows=n)
    if rows:
        assert got.to_dicts() == read_csv(path, columns=["label", "x"])[rows].to_dicts()
    else:
        assert got.height == 0
