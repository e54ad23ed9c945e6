"""`readgaze prep dataviewer` and `readgaze prep asc` on small real/bad inputs."""

from __future__ import annotations

import json

import polars as pl

from readgaze.cli import main


def test_dataviewer_pair_with_mixed_id_bases(small_data, tmp_path):
    d = small_data / "bad_inputs"
    out = tmp_path / "dv"
    assert main(["prep", "dataviewer", "--fixation-report", str(d / "BR-27_fix.csv"), "--ia-report",
                 str(d / "BR-27_ia.csv"), "--out", str(out), "--screen-px", "1280x1024", "--quiet"]) == 0
    words = pl.read_parquet(out / "words.parquet")
    fx = pl.read_parquet(out / "fixations.parquet")
    # fixation 2 lies on howl,'s left edge (x = 230); the en-dash IA keeps 0 fixations
    assert [words["word"][i] for i in fx["word_index"]] == ["Wolves", "howl,", "loudly."]
    wm = pl.read_parquet(out / "word_measures.parquet")
    assert wm["fixation_count"].to_list() == [1, 1, 0, 1]
    assert wm["first_fixation_duration_ms"].to_list() == [200.0, 180.0, None, 210.0]
    m = json.loads((out / "manifest.json").read_text())
    assert m["config"]["screen_px"] == [1280.0, 1024.0]
    assert m["word_features"]["frequency_zipf"].startswith("computed")
    assert words.filter(pl.col("word") == "Wolves")["frequency_zipf"][0] > 2.0


def test_asc_recordings_with_an_aoi_layout(small_data, tmp_path):
    a = small_data / "eyelink_asc"
    out = tmp_path / "asc"
    assert main(["prep", "asc", str(a / "eyelink_monocular_example.asc"), str(a / "eyelink_binocular_example.asc"),
                 "--layout", str(small_data / "pymovements_examples" / "potec_word_aoi_b0.tsv"),
                 "--language", "de", "--out", str(out), "--quiet"]) == 0
    trials = pl.read_parquet(out / "trials.parquet")
    assert trials["trial_id"].is_unique().all()
    assert set(trials["participant_id"]) == {"eyelink_monocular_example", "eyelink_binocular_example"}
    wm = pl.read_parquet(out / "word_measures.parquet")
    assert wm.height == trials.height * 149  # every word of the PoTeC text, per trial
    m = json.loads((out / "manifest.json").read_text())
    assert m["skipped_features"] == {"surprisal_bits": "skipped: no --surprisal-model given"}
    assert m["rows_in"]["fixations"] == m["rows_out"]["fixations"] + sum(
        r["count"] for r in m["qc"] if r["table"] == "fixations" and r["action"] == "dropped" and r["step"] == "clean")


def test_dataviewer_column_map_renames_source_columns(small_data, tmp_path):
    d = small_data / "bad_inputs"
    fix = tmp_path / "fix.csv"
    ia = tmp_path / "ia.csv"
    fix.write_text((d / "BR-27_fix.csv").read_text().replace("participant_id", "subject", 1))
    ia.write_text((d / "BR-27_ia.csv").read_text().replace("participant_id", "subject", 1))
    cmap = tmp_path / "map.yaml"
    cmap.write_text("fixations: {participant_id: subject}\nia: {participant_id: subject}\n")
    out = tmp_path / "dv"
    assert main(["prep", "dataviewer", "--fixation-report", str(fix), "--ia-report", str(ia), "--columns", str(cmap),
                 "--out", str(out), "--quiet"]) == 0
    assert pl.read_parquet(out / "trials.parquet")["trial_id"].to_list() == ["p01_1"]
    assert pl.read_parquet(out / "word_measures.parquet")["fixation_count"].to_list() == [1, 1, 0, 1]
    bad = tmp_path / "bad.yaml"
    bad.write_text("fixations: {participant_id: nosuch}\n")
    assert main(["prep", "dataviewer", "--fixation-report", str(fix), "--ia-report", str(ia), "--columns", str(bad),
                 "--out", str(tmp_path / "x"), "--quiet"]) == 2
