"""`readgaze prep onestop` on the OneStop sample: the folder, its manifest, row accounting, determinism.

On the excerpt in ``tests/files/onestop_sample`` (paragraphs 1, 4, 5 and 6); the whole sample's counts when
``../shared/data`` is present."""

from __future__ import annotations

import json

import polars as pl
import pytest

from readgaze.cli import main
from readgaze.data_prep.dataset import TABLES, sha256
from readgaze.schema import validate


def _prep(root, out, *extra) -> int:
    s = root / "onestop_sample"
    return main(["prep", "onestop", "--fixation-report", str(s / "fixations.csv"), "--ia-report", str(s / "ia.csv"),
                 "--out", str(out), "--quiet", *extra])


@pytest.fixture(scope="module")
def folder(small_data, tmp_path_factory):
    out = tmp_path_factory.mktemp("prep") / "os"
    assert _prep(small_data, out) == 0
    return out


def test_folder_has_the_four_tables_in_canonical_schema(folder):
    assert sorted(p.name for p in folder.iterdir()) == sorted([f"{t}.parquet" for t in TABLES] + ["manifest.json"])
    for table in TABLES:
        validate(pl.scan_parquet(folder / f"{table}.parquet"), table)
    trials = pl.read_parquet(folder / "trials.parquet")
    assert trials.height == 16 and trials["trial_id"].is_unique().all()
    for col in ("reading_speed_wpm", "mean_first_fixation_duration_ms", "skip_rate", "regression_rate",
                "mean_forward_saccade_amplitude_px", "fixation_count", "gaze_transition_entropy_bits",
                "stationary_entropy_bits"):
        assert trials[col].null_count() == 0, col
    # TRIAL_FIXATION_COUNT counts every fixation, off-word ones included (REFERENCE.md)
    assert (trials["fixation_count"] == trials["TRIAL_FIXATION_COUNT"]).all()


def test_rows_in_equal_rows_out_plus_drops(folder):
    m = json.loads((folder / "manifest.json").read_text())
    for table in ("trials", "words", "fixations"):
        dropped = sum(r["count"] for r in m["qc"] if r["table"] == table and r["action"] == "dropped"
                      and r["step"] == "clean")
        assert m["rows_in"][table] == m["rows_out"][table] + dropped, table
    assert m["rows_in"] == {"trials": 24, "words": 1653, "fixations": 2249}
    assert m["rows_out"] == {"trials": 16, "words": 851, "fixations": 2249, "word_measures": 1702}
    # the 8 trials of l25_1042 have IA rows but no fixations
    assert m["qc_summary"]["trials"]["dropped"]["no_fixations"] == 8
    for table, n in m["rows_out"].items():
        assert pl.scan_parquet(folder / f"{table}.parquet").select(pl.len()).collect().item() == n


def test_manifest_records_sources_features_and_qc(folder, small_data):
    m = json.loads((folder / "manifest.json").read_text())
    fix = m["sources"]["fixation_report"][0]
    assert fix["sha256"] == sha256(small_data / "onestop_sample" / "fixations.csv")
    assert m["config"]["line_assigner"] == "slice"                 # the default: drift-corrected lines
    assert m["package_versions"]["polars"] == pl.__version__
    assert m["qc_summary"]["fixations"]["flagged"]["off_text"] == 1
    assert m["qc_summary"]["fixations"]["changed"]["moved off the nearest line by slice"] == 36
    # Data Viewer's interest area came from the recorded y; slice moved 36 fixations, all 36 to another word
    assert m["qc_summary"]["fixations"]["flagged"]["word_index_differs_from_report"] == 36
    assert sorted(m["id_bases"].values()) == [0, 1]
    assert m["word_features"]["surprisal_bits"] == "kept from source"


def test_same_inputs_give_byte_identical_folder(folder, small_data, tmp_path):
    again = tmp_path / "again"
    assert _prep(small_data, again) == 0
    for name in [f"{t}.parquet" for t in TABLES] + ["manifest.json"]:
        assert (again / name).read_bytes() == (folder / name).read_bytes(), name


def test_refuses_to_overwrite_without_force(small_data, tmp_path, capsys):
    out = tmp_path / "os"
    out.mkdir()
    (out / "keep.txt").write_text("x")
    assert _prep(small_data, out) == 2
    assert "pass --force" in capsys.readouterr().err
    assert (out / "keep.txt").exists()
    assert _prep(small_data, out, "--force") == 0
    assert not (out / "keep.txt").exists()


def test_never_fixated_words_are_in_word_measures(folder):
    wm = pl.read_parquet(folder / "word_measures.parquet")
    never = wm.filter(pl.col("fixation_count") == 0)
    assert never.height == 482    # Data Viewer (recorded y, --line-assigner nearest): 485; slice's lines: 482
    assert never["first_fixation_duration_ms"].null_count() == 482
    assert never["total_fixation_duration_ms"].sum() == 0
    assert wm["in_critical_span"].null_count() == 0 and wm["in_critical_span"].any()


def test_whole_sample_rows_and_line_moves(shared_data, tmp_path):
    assert _prep(shared_data, tmp_path / "os") == 0
    m = json.loads((tmp_path / "os" / "manifest.json").read_text())
    assert m["rows_in"] == {"trials": 36, "words": 2463, "fixations": 3209}
    assert m["rows_out"] == {"trials": 24, "words": 1307, "fixations": 3209, "word_measures": 2614}
    assert m["qc_summary"]["trials"]["dropped"]["no_fixations"] == 12  # the 12 trials of l25_1042
    assert m["qc_summary"]["fixations"]["changed"]["moved off the nearest line by slice"] == 57
    assert m["qc_summary"]["fixations"]["flagged"]["word_index_differs_from_report"] == 54
    wm = pl.read_parquet(tmp_path / "os" / "word_measures.parquet")
    assert wm.filter(pl.col("fixation_count") == 0).height == 835  # Data Viewer (nearest): 834
