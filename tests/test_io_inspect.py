"""``readgaze inspect`` on the OneStop sample, bad inputs and a dataset folder."""

from __future__ import annotations

import json

import polars as pl

from readgaze.cli import main


def _block(out: str, name: str) -> str:
    return next(b for b in out.split("\n\n") if b.split(":", 1)[0].endswith(name))


def _inspect_onestop(folder, capsys) -> tuple[str, str]:
    assert main(["inspect", str(folder / "fixations.csv"), str(folder / "ia.csv")]) == 0
    out = capsys.readouterr().out
    return _block(out, "fixations.csv"), _block(out, "ia.csv")


def test_inspect_onestop_pair(small_data, capsys):
    fix, ia = _inspect_onestop(small_data / "onestop_sample", capsys)
    assert "source onestop" in fix and "participants: 2\n" in fix and "trials: 16\n" in fix
    assert "fixations: 2,249\n" in fix
    assert "interest-area id base: 1 (label agreement with ia.csv: base 1 100.0%, base 0 0.0% of 2,248" in fix
    assert "off-word fixations (word_index null): 1" in fix
    assert "duplicate keys (trial_id, fixation_index): 0" in fix
    assert ("nulls per canonical column: trial_id 0, fixation_index 0, start_ms 0, duration_ms 0, x_px 0, "
            "y_px 0, pupil 2,249, word_index 1") in fix
    assert "participants: 3\n" in ia and "trials: 24\n" in ia and "words (IA rows): 2,554\n" in ia
    assert "interest-area id base: 0" in ia and "texts: 8" in ia
    assert "IA_REGRESSION_IN 708" in ia and "IA_SECOND_RUN_DWELL_TIME 1,850" in ia
    # l25_1042 has IA rows for 8 trials but no fixation rows (the sample's README): prep drops them as no_fixations
    assert "participants in this report only (no rows in ia.csv): 0\n" in fix
    assert "participants in ia.csv only (no fixation rows): 1 (l25_1042)\n" in fix
    assert "trials in ia.csv only (no fixation rows): 8 (l25_1042_2_1_Adv_4_r0, " in fix


def test_inspect_the_whole_onestop_sample(shared_data, capsys):
    fix, ia = _inspect_onestop(shared_data / "onestop_sample", capsys)
    assert "trials: 24\n" in fix and "fixations: 3,209\n" in fix and "pupil 3,209, word_index 1" in fix
    assert "trials: 36\n" in ia and "words (IA rows): 3,922\n" in ia and "texts: 12" in ia
    assert "IA_REGRESSION_IN 1,191" in ia and "IA_SECOND_RUN_DWELL_TIME 2,904" in ia
    assert "trials in ia.csv only (no fixation rows): 12 (l25_1042_2_1_Adv_3_r0, " in fix


def test_inspect_reports_duplicates_and_errors(small_data, capsys):
    b = small_data / "bad_inputs"
    assert main(["inspect", str(b / "BR-18.csv"), str(b / "BR-19.csv")]) == 2
    out = capsys.readouterr().out
    assert "duplicate keys (trial_id, fixation_index): 2" in _block(out, "BR-18.csv")
    assert "error: BR-19.csv, row 2, column x: '390,6' is not a number" in out
    assert "interest-area id base: None (unknown: give the IA report too" in _block(out, "BR-18.csv")  # never assumed


def test_inspect_plain_table_and_dataset_folder(small_data, tmp_path, capsys):
    pl.DataFrame({"trial_id": ["a", "b"]}).write_parquet(tmp_path / "trials.parquet")
    pl.DataFrame({"trial_id": ["a"] * 3}).write_parquet(tmp_path / "fixations.parquet")
    manifest = {"config": {"mode": "asc", "line_assigner": "slice", "loader": "readgaze.io.asc"},
                "sources": {"asc": [{"path": "/lab/p01.asc", "bytes": 12345, "sha256": "ab" * 32}]},
                "rows_in": {"fixations": 5, "trials": 2}, "rows_out": {"fixations": 3, "trials": 2},
                "qc_summary": {"fixations": {"dropped": {"invalid_duration": 2, "unknown_trial": 0},
                                             "flagged": {"off_text": 1}}}}
    (tmp_path / "manifest.json").write_text(json.dumps(manifest))
    assert main(["inspect", str(small_data / "bad_inputs" / "BR-11.csv"), str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "130 rows" in out and "x (Float64)" in out and "x 120, y 120" in out
    assert "  trials: 2 rows" in out and "  fixations: 3 rows" in out
    assert "  prepared: mode asc, line_assigner slice, loader readgaze.io.asc\n" in out
    assert "  source asc: /lab/p01.asc (12,345 bytes, sha256 abababababab...)\n" in out
    assert "  rows (in -> out): fixations 5 -> 3, trials 2 -> 2\n" in out
    assert "  dropped fixations: invalid_duration 2\n" in out and "  flagged fixations: off_text 1\n" in out


def test_inspect_counts_the_no_gaze_value_of_a_sample_export(small_data, capsys):
    assert main(["inspect", str(small_data / "toy_reading_raw" / "trial_1_2.csv")]) == 0
    out = capsys.readouterr().out
    assert "nulls: timestamp 0, x 0, y 0" in out  # -32768 is a number to the CSV reader ...
    assert "-32768 (no gaze, EyeLink's missing value): x 83, y 83;" in out  # ... and missing gaze to readgaze
