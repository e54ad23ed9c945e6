"""Prep's fast paths give the same results as the plain ones: the parse cache, chosen-row reads, row sorts."""

from __future__ import annotations

import shutil

import numpy as np
import polars as pl
import pytest
from polars.testing import assert_frame_equal

from data_prep.cache import checksum
from data_prep.dataset import TABLES
from data_prep.pipeline import clean, sort_rows
from readgaze.cli import main
from readgaze.io.csv import read_csv
from readgaze.io.rows import line_starts, read_rows
from readgaze.qc import QCLog


def _prep(fix, ia, out, *extra) -> int:
    return main(["prep", "onestop", "--fixation-report", str(fix), "--ia-report", str(ia), "--out", str(out),
                 "--force", *extra])


@pytest.fixture
def sample(shared_data, tmp_path, monkeypatch):
    """The OneStop sample copied to tmp (so a test may edit it), and a private cache folder."""
    for name in ("fixations.csv", "ia.csv"):
        shutil.copy(shared_data / "onestop_sample" / name, tmp_path / name)
    monkeypatch.setenv("READGAZE_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "fixations.csv", tmp_path / "ia.csv"


def test_reprep_reuses_the_parse_and_gives_the_same_folder(sample, tmp_path, capsys):
    fix, ia = sample
    assert _prep(fix, ia, tmp_path / "cold", "--line-assigner", "nearest") == 0
    assert "cache: stored the parsed sources" in capsys.readouterr().err
    assert _prep(fix, ia, tmp_path / "warm", "--line-assigner", "nearest") == 0
    assert "cache: reused the parsed sources" in capsys.readouterr().err
    for name in [f"{t}.parquet" for t in TABLES] + ["manifest.json"]:
        assert (tmp_path / "warm" / name).read_bytes() == (tmp_path / "cold" / name).read_bytes(), name
    assert _prep(fix, ia, tmp_path / "off", "--no-cache") == 0
    assert "cache:" not in capsys.readouterr().err


def test_an_edited_source_is_parsed_again(sample, tmp_path, capsys):
    fix, ia = sample
    assert _prep(fix, ia, tmp_path / "a", "--line-assigner", "nearest") == 0
    capsys.readouterr()
    lines = fix.read_text().splitlines(keepends=True)
    header = lines[0].split(",")
    col = header.index("CURRENT_FIX_DURATION")
    row = lines[1].split(",")
    row[col] = str(int(row[col]) + 1000)  # the first fixation lasts 1 s longer
    fix.write_text(lines[0] + ",".join(row) + "".join(lines[2:]))
    assert _prep(fix, ia, tmp_path / "b", "--line-assigner", "nearest") == 0
    assert "cache: stored the parsed sources" in capsys.readouterr().err  # a miss: the checksum changed
    a = pl.read_parquet(tmp_path / "a" / "fixations.parquet")
    b = pl.read_parquet(tmp_path / "b" / "fixations.parquet")
    assert (b["duration_ms"] - a["duration_ms"]).sum() == 1000


def test_checksum_is_memoised_by_stat_and_follows_the_content(tmp_path):
    f = tmp_path / "x.csv"
    f.write_text("a\n1\n")
    first = checksum(f, tmp_path / "c")
    assert (tmp_path / "c" / "checksums.json").is_file() and checksum(f, tmp_path / "c") == first
    f.write_text("a\n2\n")
    assert checksum(f, tmp_path / "c") != first


def test_read_rows_equals_the_whole_parse(shared_data, tmp_path):
    ia = shared_data / "onestop_sample" / "ia.csv"
    whole = read_csv(ia)
    rows = np.array([0, 1, 2, 500, 501, whole.height - 1])
    cols = ["question", "subtlex_frequency", "entity_type", "is_correct", "IA_LABEL", "head_word_index"]
    got = read_rows(ia, rows, cols, n_rows=whole.height)
    assert_frame_equal(got, whole.select([c for c in whole.columns if c in cols])[rows])
    assert line_starts(ia).shape == (whole.height + 1,)
    # a quoted line break: lines and rows differ, so the columns are parsed whole (same values)
    f = tmp_path / "quoted.csv"
    f.write_text('id,label,x\n1,"two\nlines",3.5\n2,plain,.\n3,"a,b",inf\n')
    assert read_rows(f, np.array([1, 2]), ["label", "x"], n_rows=3).to_dicts() == [
        {"label": "plain", "x": None}, {"label": "a,b", "x": float("inf")}]
    f.write_text('id,label,x\n1,one,3.5\n2,plain,.\n3,"a,b",inf')  # no final line break
    assert read_rows(f, np.array([0, 2]), ["label", "x"], n_rows=3).to_dicts() == [
        {"label": "one", "x": 3.5}, {"label": "a,b", "x": float("inf")}]


def test_sort_rows_equals_polars_sort():
    rng = np.random.default_rng(0)
    df = pl.DataFrame({"t": rng.choice(["b", "a", "c", "ab"], 500), "i": rng.permutation(500).astype(np.int32),
                       "v": rng.random(500)})
    assert_frame_equal(sort_rows(df, "t", "i"), df.sort("t", "i"))
    nulls = df.with_columns(pl.when(pl.col("i") < 5).then(None).otherwise(pl.col("i")).alias("i"))
    assert_frame_equal(sort_rows(nulls, "t", "i"), nulls.sort("t", "i"))
    done = df.sort("t", "i")
    assert sort_rows(done, "t", "i") is done  # already in order: no copy


def test_clean_still_drops_and_counts_repeated_fixations():
    trials = pl.DataFrame({"trial_id": ["a", "b"], "text_id": ["t", "t"]})
    words = pl.DataFrame({"text_id": ["t"], "ia_index": [0]})
    fix = pl.DataFrame({"trial_id": ["a", "a", "b", "a"], "fixation_index": [0, 1, 0, 1],
                        "duration_ms": [100.0, 120.0, 90.0, 130.0]})
    qc = QCLog()
    _, _, kept = clean(trials, words, fix, qc)
    assert kept["duration_ms"].to_list() == [100.0, 120.0, 90.0]  # the later (a, 1) is the repeat
    assert qc.total(reason="duplicate_fixation") == 1
