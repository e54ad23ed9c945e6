"""Frame-level line assignment, the ``assign-lines`` command and method lookup (plugins)."""

from __future__ import annotations

import json
from types import SimpleNamespace

import numpy as np
import polars as pl
import pytest

import readgaze.lines as lines
from readgaze.cli import main
from readgaze.errors import ConfigError, SchemaError
from readgaze.lines import assign_lines


def _words(text_id: str, line_tops: list[float], n_words: int = 3) -> pl.DataFrame:
    rows = [{"text_id": text_id, "word_index": li * n_words + k, "line_index": li, "left_px": 100.0 + 80 * k,
             "right_px": 160.0 + 80 * k, "top_px": top, "bottom_px": top + 20.0}
            for li, top in enumerate(line_tops) for k in range(n_words)]
    return pl.DataFrame(rows)


def _fixations(trial_id: str, ys: list[float], x0: float = 130.0) -> pl.DataFrame:
    xs = [x0 + 80 * (i % 3) for i in range(len(ys))]
    return pl.DataFrame({"trial_id": trial_id, "fixation_index": list(range(len(ys))),
                         "x_px": xs, "y_px": ys})


WORDS = pl.concat([_words("a", [90.0, 140.0]), _words("b", [190.0, 240.0, 290.0])])
TRIALS = pl.DataFrame({"trial_id": ["t1", "t2"], "text_id": ["a", "b"]})
FIX = pl.concat([_fixations("t1", [128.0, 131.0, 129.0, 170.0, 171.0, 169.0]),
                 _fixations("t2", [203.0, 199.0, 201.0, 251.0, 249.0, 250.0, 300.0, 301.0, 299.0])])


def test_assign_lines_uses_each_trials_text_and_reports_drift():
    out, qc = assign_lines(FIX.lazy(), WORDS, TRIALS.lazy(), method="slice")
    assert out.columns == [*FIX.columns, "line_index", "vertical_drift_px"]
    assert out.schema["line_index"] == pl.Int32
    assert out["line_index"].to_list() == [0, 0, 0, 1, 1, 1] + [0, 0, 0, 1, 1, 1, 2, 2, 2]
    # t1: y - midline is 28, 31, 29, 20, 21, 19 -> median 24.5; t2: 3, -1, 1, 1, -1, 0, 0, 1, -1 -> 0
    assert out.group_by("trial_id").agg(pl.col("vertical_drift_px").first()).sort("trial_id").to_dicts() == [
        {"trial_id": "t1", "vertical_drift_px": 24.5}, {"trial_id": "t2", "vertical_drift_px": 0.0}]
    # the first three fixations of t1 are nearer line 1 (midline 150) than line 0 (midline 100)
    assert qc.total(action="changed") == 3


def test_assign_lines_keeps_row_order_and_counts_unassigned_fixations():
    shuffled = pl.concat([FIX[6:], FIX[:6]]).vstack(
        pl.DataFrame({"trial_id": ["t9", "t1"], "fixation_index": [0, 6], "x_px": [1.0, None],
                      "y_px": [1.0, 120.0]}))
    out, qc = assign_lines(shuffled, WORDS, TRIALS, method="nearest")
    assert out["trial_id"].to_list() == shuffled["trial_id"].to_list()
    assert out["line_index"].to_list()[-2:] == [None, None]
    assert qc.total(action="flagged", reason="no text layout for the trial (line_index null)") == 1
    assert qc.total(action="flagged", reason="missing x_px/y_px (line_index null)") == 1


def test_assign_lines_passes_word_positions_to_warp_and_reports_vote_agreement():
    out, _ = assign_lines(FIX, WORDS, TRIALS, method="warp")
    assert out["line_index"].to_list() == [0, 0, 0, 1, 1, 1] + [0, 0, 0, 1, 1, 1, 2, 2, 2]
    # t1's first line is nearer line 1 (nearest says 1), slice and warp say 0
    out, qc = assign_lines(FIX, WORDS, TRIALS, method="vote", methods=["nearest", "slice", "warp"])
    assert out["line_index"].to_list()[:6] == [0, 0, 0, 1, 1, 1]
    assert out["line_agreement"].to_list()[:4] == pytest.approx([2 / 3, 2 / 3, 2 / 3, 1.0])
    assert qc.total(action="flagged", reason="methods disagreed (line_agreement < 1)") == 3


def test_assign_lines_without_trials_needs_one_text_or_trial_ids_on_words():
    out, _ = assign_lines(FIX.filter(pl.col("trial_id") == "t1"), _words("a", [90.0, 140.0]), method="slice")
    assert out["line_index"].to_list() == [0, 0, 0, 1, 1, 1]
    out, _ = assign_lines(FIX.filter(pl.col("trial_id") == "t1"), _words("a", [90.0, 140.0]), method="nearest")
    assert out["line_index"].to_list() == [1, 1, 1, 1, 1, 1]
    with pytest.raises(ConfigError, match="2 texts"):
        assign_lines(FIX, WORDS, method="slice")
    per_trial = WORDS.join(TRIALS, on="text_id")
    out, _ = assign_lines(FIX, per_trial, method="nearest")
    assert out["line_index"].to_list()[6:9] == [0, 0, 0]


def test_assign_lines_names_the_missing_column():
    with pytest.raises(SchemaError, match="y_px"):
        assign_lines(FIX.drop("y_px"), WORDS, TRIALS)
    with pytest.raises(SchemaError, match="top_px"):
        assign_lines(FIX, WORDS.drop("top_px"), TRIALS)


def test_line_indices_keep_gaps_in_the_words_numbering():
    words = _words("a", [90.0, 140.0]).with_columns(pl.col("line_index") * 2 + 3)
    out, _ = assign_lines(FIX.filter(pl.col("trial_id") == "t1"), words, method="nearest")
    assert out["line_index"].to_list() == [5, 5, 5, 5, 5, 5]


def test_plugins_are_found_through_the_entry_point_group(monkeypatch):
    def fake_assigner(xy, line_y_px, *, offset=0, **_):
        return np.full(len(xy), len(line_y_px) - 1 - offset)

    lines.plugins.cache_clear()
    ep = SimpleNamespace(name="fake", load=lambda: fake_assigner)
    monkeypatch.setattr("readgaze.lines.registry.plugins", lambda: {"fake": ep})
    xy = np.array([[0.0, 100.0], [10.0, 100.0]])
    assert lines.assign_trial(xy, [100.0, 150.0, 200.0], "fake").tolist() == [2, 2]
    assert lines.assign_trial(xy, [100.0, 150.0, 200.0], "fake", offset=1).tolist() == [1, 1]
    from readgaze.lines.evaluate import all_methods
    assert all_methods()[-3:] == ["nearest", "vote", "fake"]
    broken = SimpleNamespace(name="broken", load=lambda: (_ for _ in ()).throw(ImportError("no torch")))
    monkeypatch.setattr("readgaze.lines.registry.plugins", lambda: {"broken": broken})
    with pytest.raises(ConfigError, match="no torch"):
        lines.assign_trial(xy, [100.0, 150.0], "broken")
    assert "broken" not in all_methods()


def test_assign_lines_command_rewrites_line_index_and_the_manifest(tmp_path):
    fix = FIX.with_columns(pl.lit(0, dtype=pl.Int32).alias("line_index"), pl.lit(7).alias("word_index"))
    fix.write_parquet(tmp_path / "fixations.parquet")
    WORDS.write_parquet(tmp_path / "words.parquet")
    TRIALS.write_parquet(tmp_path / "trials.parquet")
    (tmp_path / "manifest.json").write_text(json.dumps({"counts": {"fixations": 15}}))
    assert main(["assign-lines", "--method", "slice", "--param", "n_thresh=90", str(tmp_path)]) == 0
    out = pl.read_parquet(tmp_path / "fixations.parquet")
    assert out.columns == fix.columns
    assert out["line_index"].to_list() == [0, 0, 0, 1, 1, 1] + [0, 0, 0, 1, 1, 1, 2, 2, 2]
    manifest = json.loads((tmp_path / "manifest.json").read_text())
    assert manifest["counts"] == {"fixations": 15}
    record = manifest["line_assignment"]
    assert record["method"] == "slice" and record["params"] == {"n_thresh": 90}
    changed = [r for r in record["qc"] if r["reason"] == "line_index differs from the previous assignment"]
    assert changed[0]["count"] == 9
    assert main(["assign-lines", "--method", "nope", str(tmp_path)]) == 2
