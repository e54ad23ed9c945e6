"""Prep's fast paths give the same results as the plain ones: the parse cache, chosen-row reads, row sorts."""

from __future__ import annotations

import shutil

import numpy as np
import polars as pl
import pytest
from polars.testing import assert_frame_equal

from readgaze.cli import main
from readgaze.data_prep.cache import checksum
from readgaze.data_prep.dataset import TABLES
from readgaze.data_prep.pipeline import clean, sort_rows
from readgaze.io.csv import read_csv
from readgaze.io.rows import line_starts, read_rows
from readgaze.qc import QCLog


def _prep(fix, ia, out, *extra) -> int:
    return main(["prep", "onestop", "--fixation-report", str(fix), "--ia-report", str(ia), "--out", str(out),
                 "--force", *extra])


@pytest.fixture
def sample(small_data, tmp_path, monkeypatch):
    """The OneStop sample copied to tmp (so a test may edit it), and a private cache folder."""
    for name in ("fixations.csv", "ia.csv"):
        shutil.copy(small_data / "onestop_sample" / name, tmp_path / name)
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


def test_read_rows_equals_the_whole_parse(small_data, tmp_path):
    ia = small_data / "onestop_sample" / "ia.csv"
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
    # no final line break: the last line may be cut, so the whole parse drops it (counted as 'incomplete last line')
    # and reading rows of the file agrees with that parse
    f.write_text('id,label,x\n1,one,3.5\n2,plain,.\n3,"a,b",inf')
    assert read_csv(f, columns=["label", "x"]).height == 2
    assert read_rows(f, np.array([0, 1]), ["label", "x"], n_rows=2).to_dicts() == [
        {"label": "one", "x": 3.5}, {"label": "plain", "x": None}]


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


def test_fixation_sort_by_runs_equals_the_stable_sort():
    from readgaze.io.onestop import _sort_order

    def _sort_rows(frame):  # the loader gathers every column by this order (none: already in order)
        order = _sort_order(frame)
        return frame if order is None else frame[order]

    rng = np.random.default_rng(1)
    rows = [(f"t{k}", j, rng.random()) for k in rng.permutation(50) for j in range(rng.integers(1, 8))]
    df = pl.DataFrame(rows, schema={"trial_id": pl.String, "fixation_index": pl.Int32, "v": pl.Float64},
                      orient="row")
    expected = df.sort("trial_id", "fixation_index", maintain_order=True)
    assert_frame_equal(_sort_rows(df), expected)  # one run per trial: the runs are reordered whole
    split = pl.concat([df, df.head(7), df.slice(3, 5)])  # a trial in two runs, repeated keys: the key sort
    assert_frame_equal(_sort_rows(split), split.sort("trial_id", "fixation_index", maintain_order=True))
    assert _sort_rows(expected) is expected
    nulls = df.with_columns(pl.when(pl.col("v") < 0.2).then(None).otherwise(pl.col("fixation_index"))
                            .alias("fixation_index"))
    assert_frame_equal(_sort_rows(nulls), nulls.sort("trial_id", "fixation_index", maintain_order=True))


def test_trial_codes_per_run_equal_a_lookup_per_row():
    from readgaze._grid import trial_codes

    ids = pl.Series(["b", "b", None, None, "a", "zz", "a", "a"])
    assert trial_codes(ids, pl.Series(["a", "b"])).tolist() == [1, 1, -1, -1, 0, -1, 0, 0]
    assert trial_codes(pl.Series([], dtype=pl.String), pl.Series(["a"])).tolist() == []


def test_dataset_writer_replaces_the_folder_only_when_finished(tmp_path):
    from readgaze.data_prep.dataset import PARQUET, DatasetWriter
    from readgaze.schema import cast

    out = tmp_path / "ds"
    out.mkdir()
    (out / "old.txt").write_text("kept until the new folder is complete")
    frame = cast(pl.DataFrame({"trial_id": ["t", "t"], "fixation_index": [0, 1], "start_ms": [0.0, 250.0],
                               "duration_ms": [200.0, 180.0], "x_px": [10.0, 60.0], "y_px": [5.0, 5.0]}), "fixations")
    with pytest.raises(RuntimeError), DatasetWriter(out, force=True) as writer:
        writer.put("fixations", frame)
        raise RuntimeError("a step failed")
    assert (out / "old.txt").is_file() and [p.name for p in tmp_path.iterdir()] == ["ds"]  # no partial folder
    direct = tmp_path / "direct"
    direct.mkdir()
    frame.write_parquet(direct / "x.parquet", **PARQUET)
    with DatasetWriter(out, force=True) as writer:
        writer.put("fixations", frame)
        writer._jobs["fixations"].result()
        assert (writer._tmp / "fixations.parquet").read_bytes() == (direct / "x.parquet").read_bytes()
    assert (out / "old.txt").is_file()  # finish() not called: the old folder stays


def test_trial_table_from_run_starts_equals_a_group_by_over_all_rows(tmp_path):
    from readgaze.io.onestop_tables import split_trial_columns

    f = tmp_path / "r.csv"
    f.write_text("question\nq\n")  # no column read from the file: 'wide' is given
    rows = pl.DataFrame({"trial_id": ["b", "b", "a", "b", "c", "a"], "__row": [0, 1, 2, 3, 4, 5],
                         "participant_id": ["p", "p", None, "p2", "q",
                                            "r"]}).with_columns(pl.col("__row").cast(pl.UInt32))
    wide = pl.DataFrame({"__row": pl.Series([0, 2, 4], dtype=pl.UInt32), "question": ["x", "y", "z"]})
    part, rest = split_trial_columns(rows.lazy(), "ia_count", f, trial_cols=["participant_id", "question"],
                                      wide=wide)
    assert part.sort("trial_id").to_dicts() == [
        {"trial_id": "a", "participant_id": None, "question": "y", "ia_count": 2},
        {"trial_id": "b", "participant_id": "p", "question": "x", "ia_count": 3},
        {"trial_id": "c", "participant_id": "q", "question": "z", "ia_count": 1}]
    assert rest.collect().equals(rows)
