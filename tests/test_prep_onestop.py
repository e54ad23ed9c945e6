"""`readgaze prep onestop` on the OneStop sample: the folder, its manifest, row accounting, determinism."""

from __future__ import annotations

import json

import polars as pl
import pytest

from readgaze.cli import main
from readgaze.data_prep.dataset import TABLES, sha256
from readgaze.schema import validate


def _prep(shared_data, out, *extra) -> int:
    s = shared_data / "onestop_sample"
    return main(["prep", "onestop", "--fixation-report", str(s / "fixations.csv"), "--ia-report", str(s / "ia.csv"),
                 "--out", str(out), "--quiet", *extra])


@pytest.fixture(scope="module")
def folder(shared_data, tmp_path_factory):
    out = tmp_path_factory.mktemp("prep") / "os"
    assert _prep(shared_data, out) == 0
    return out


def test_folder_has_the_four_tables_in_canonical_schema(folder):
    assert sorted(p.name for p in folder.iterdir()) == sorted([f"{t}.parquet" for t in TABLES] + ["manifest.json"])
    for table in TABLES:
        validate(pl.scan_parquet(folder / f"{table}.parquet"), table)
    trials = pl.read_parquet(folder / "trials.parquet")
    assert trials.height == 24 and trials["trial_id"].is_unique().all()
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
    assert m["rows_in"] == {"trials": 36, "words": 2463, "fixations": 3209}
    assert m["rows_out"] == {"trials": 24, "words": 1307, "fixations": 3209, "word_measures": 2614}
    # the 12 trials of l25_1042 have IA rows but no fixations
    assert m["qc_summary"]["trials"]["dropped"]["no_fixations"] == 12
    for table, n in m["rows_out"].items():
        assert pl.scan_parquet(folder / f"{table}.parquet").select(pl.len()).collect().item() == n


def test_manifest_records_sources_features_and_qc(folder, shared_data):
    m = json.loads((folder / "manifest.json").read_text())
    fix = m["sources"]["fixation_report"][0]
    assert fix["sha256"] == sha256(shared_data / "onestop_sample" / "fixations.csv")
    assert m["config"]["line_assigner"] == "slice"                 # the default: drift-corrected lines
    assert m["package_versions"]["polars"] == pl.__version__
    assert m["qc_summary"]["fixations"]["flagged"]["off_text"] == 1
    assert m["qc_summary"]["fixations"]["changed"]["moved off the nearest line by slice"] == 57
    # Data Viewer's interest area came from the recorded y; slice moved 57 fixations, 54 to another word
    assert m["qc_summary"]["fixations"]["flagged"]["word_index_differs_from_report"] == 54
    assert sorted(m["id_bases"].values()) == [0, 1]
    assert m["word_features"]["surprisal_bits"] == "kept from source"


def test_same_inputs_give_byte_identical_folder(folder, shared_data, tmp_path):
    again = tmp_path / "again"
    assert _prep(shared_data, again) == 0
    for name in [f"{t}.parquet" for t in TABLES] + ["manifest.json"]:
        assert (again / name).read_bytes() == (folder / name).read_bytes(), name


def test_refuses_to_overwrite_without_force(shared_data, tmp_path, capsys):
    out = tmp_path / "os"
    out.mkdir()
    (out / "keep.txt").write_text("x")
    assert _prep(shared_data, out) == 2
    assert "pass --force" in capsys.readouterr().err
    assert (out / "keep.txt").exists()
    assert _prep(shared_data, out, "--force") == 0
    assert not (out / "keep.txt").exists()


def test_never_fixated_words_are_in_word_measures(folder):
    wm = pl.read_parquet(folder / "word_measures.parquet")
    never = wm.filter(pl.col("fixation_count") == 0)
    assert never.height == 835    # Data Viewer (recorded y, --line-assigner nearest): 834; slice's lines: 835
    assert never["first_fixation_duration_ms"].null_count() == 835
    assert never["total_fixation_duration_ms"].sum() == 0
    assert wm["in_critical_span"].null_count() == 0 and wm["in_critical_span"].any()
