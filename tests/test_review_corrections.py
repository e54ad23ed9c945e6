"""The corrections log (readgaze.corrections): prep and assign-lines re-apply it, exactly on the corrected trials."""

from __future__ import annotations

import hashlib
import json
import shutil

import polars as pl
import pytest
from review_data import export, prep, qc, tables

from readgaze import corrections
from readgaze.cli import main
from readgaze.errors import ConfigError, ParseError


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    home = tmp_path_factory.mktemp("review")
    files = export(home / "export")
    assert prep(files, home / "ds") == 0
    return files, home / "ds"


def _fixations(folder, trial_id):
    return pl.read_parquet(folder / "fixations.parquet").filter(pl.col("trial_id") == trial_id).sort("fixation_index")


def test_append_is_ordered_and_read_back(tmp_path):
    rows = [{"trial_id": "t1", "kind": "move", "fixation_index": [3, 4], "line_before": [0, 0], "line_after": [1, 1],
             "fingerprint": "abc", "reviewer": "me"}, {"trial_id": "t2", "kind": "exclude", "reason": "blinks"}]
    written = corrections.append(tmp_path, rows)
    assert written["correction_id"].to_list() == [1, 2]
    corrections.append(tmp_path, [{"trial_id": "t1", "kind": "move", "fixation_index": [4], "line_before": [1],
                                   "line_after": [2]}])
    log = corrections.read_log(tmp_path)
    assert log["correction_id"].to_list() == [1, 2, 3]
    assert log["time_utc"].null_count() == 0 and log["reason"][1] == "blinks"
    over = corrections.line_overrides(log).sort("fixation_index")  # the later correction of fixation 4 wins
    assert over.rows() == [("t1", 3, 1), ("t1", 4, 2)]
    assert corrections.exclusions(log).rows() == [("t2", "blinks")]
    corrections.append(tmp_path, [{"trial_id": "t2", "kind": "include"}])
    assert corrections.exclusions(corrections.read_log(tmp_path)).height == 0
    assert not list(tmp_path.glob(".*.tmp"))  # no temporary file left behind
    with pytest.raises(ConfigError, match="correction kind: got 'delete'"):
        corrections.append(tmp_path, [{"trial_id": "t1", "kind": "delete"}])


def test_a_foreign_file_is_named(tmp_path):
    pl.DataFrame({"a": [1]}).write_parquet(tmp_path / "corrections.parquet")
    with pytest.raises(ParseError, match=r"corrections.parquet.*missing column\(s\) \['correction_id'"):
        corrections.read_log(tmp_path)


def test_prep_reapplies_the_log_on_the_corrected_trials_only(dataset, tmp_path):
    files, ds = dataset
    out = tmp_path / "ds"
    shutil.copytree(ds, out)
    before = tables(out)
    moved, dropped = "s01_2", "s02_1"
    fx = _fixations(out, moved)
    run = fx.filter(pl.col("fixation_index").is_between(5, 9))
    corrections.append(out, [
        {"trial_id": moved, "kind": "move", "fixation_index": run["fixation_index"].to_list(),
         "line_before": run["line_index"].to_list(), "line_after": (run["line_index"] + 1).to_list(),
         "fingerprint": corrections.trial_fingerprint(fx), "reviewer": "test"},
        {"trial_id": dropped, "kind": "exclude", "reason": "calibration lost",
         "fingerprint": corrections.trial_fingerprint(_fixations(out, dropped)), "reviewer": "test"}])
    assert prep(files, out, "--force") == 0
    after = tables(out)
    assert (out / "corrections.parquet").is_file()  # the log outlives the re-run, an input the manifest records
    recorded = json.loads((out / "manifest.json").read_text())["sources"]["corrections"]
    assert recorded[0]["sha256"] == hashlib.sha256((out / "corrections.parquet").read_bytes()).hexdigest()
    # the moved fixations are on the lines the reviewer gave, and on a word of that line
    got = _fixations(out, moved).filter(pl.col("fixation_index").is_between(5, 9))
    assert got["line_index"].to_list() == (run["line_index"] + 1).to_list()
    assert got["word_index"].to_list() != run["word_index"].to_list()
    # exactly the moved trial's measures changed; the excluded trial is gone; every other trial is identical
    assert dropped not in after["trials"]["trial_id"].to_list()
    assert after["trials"].height == before["trials"].height - 1
    others = [t for t in before["trials"]["trial_id"] if t not in (moved, dropped)]
    for name in ("fixations", "word_measures", "trials"):
        keep = pl.col("trial_id").is_in(others)
        assert after[name].filter(keep).equals(before[name].filter(keep)), name
    m0 = before["word_measures"].filter(pl.col("trial_id") == moved)
    m1 = after["word_measures"].filter(pl.col("trial_id") == moved)
    assert not m1.equals(m0)
    assert m1["total_fixation_duration_ms"].sum() == m0["total_fixation_duration_ms"].sum() - \
        run.filter(pl.col("word_index").is_not_null())["duration_ms"].sum() + \
        got.filter(pl.col("word_index").is_not_null())["duration_ms"].sum()
    counts = qc(out)
    assert counts[("fixations", "line corrected by reviewer")] == 5
    assert counts[("trials", "line assignment corrected by reviewer")] == 1
    assert counts[("trials", "excluded by reviewer: calibration lost")] == 1
    assert counts[("fixations", "trial excluded by reviewer")] == before["fixations"].filter(
        pl.col("trial_id") == dropped).height
    assert counts[("corrections", "refused: the trial's fixations changed since the review (fingerprint) or it is "
                                  "gone")] == 0


def test_a_stale_correction_is_refused_and_counted(dataset, tmp_path):
    files, ds = dataset
    out = tmp_path / "ds"
    shutil.copytree(ds, out)
    fx = _fixations(out, "s01_1")
    corrections.append(out, [{"trial_id": "s01_1", "kind": "move", "fixation_index": [0], "line_before": [0],
                              "line_after": [1], "fingerprint": "0000000000000000"},
                             {"trial_id": "nobody", "kind": "exclude", "reason": "x", "fingerprint": "1"}])
    assert prep(files, out, "--force") == 0
    assert _fixations(out, "s01_1")["line_index"].to_list() == fx["line_index"].to_list()
    counts = qc(out)
    assert counts[("corrections", "refused: the trial's fixations changed since the review (fingerprint) or it is "
                                  "gone")] == 2
    assert counts[("fixations", "line corrected by reviewer")] == 0


def test_assign_lines_reapplies_the_log(dataset, tmp_path):
    _, ds = dataset
    out = tmp_path / "ds"
    shutil.copytree(ds, out)
    fx = _fixations(out, "s03_1")
    corrections.append(out, [{"trial_id": "s03_1", "kind": "move", "fixation_index": [2, 3], "line_before": [0, 0],
                              "line_after": [2, 2], "fingerprint": corrections.trial_fingerprint(fx)}])
    assert main(["assign-lines", str(out), "--method", "slice"]) == 0
    got = _fixations(out, "s03_1")
    assert got["line_index"].to_list()[2:4] == [2, 2]
    assert fx["line_index"].to_list()[2:4] == [0, 0]
