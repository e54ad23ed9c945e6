"""``readgaze demo``: the offline one-command run writes its report; the scanpath figure; the --force guard."""

from __future__ import annotations

import os
import subprocess
import sys

import polars as pl
import pytest

from readgaze.errors import ConfigError, DataError, SchemaError
from readgaze.models.demo import _prepare_out
from readgaze.plots import plot_scanpath

PNG = b"\x89PNG\r\n\x1a\n"
REGIMES = {"new_item", "new_participant", "new_item_participant", "all"}
BASELINES = {"majority", "reading_speed_logistic_regression", "mean_total_fixation_duration_logistic_regression",
             "meziere_logistic_regression"}  # words / paragraph time is reading speed again without PARAGRAPH_RT
MODELS = {"BEyeLSTM", "RoBERTEyeF", "MajorityVote", "LogisticEnsemble", *BASELINES}


def _demo(out, cwd, *extra):
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "COLUMNS": "160"}  # no table wrap
    return subprocess.run([sys.executable, "-m", "readgaze.cli", "demo", "--quick", "--out", str(out), *extra],
                          cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


@pytest.mark.slow
def test_demo_quick_writes_the_report_from_outside_the_repo(tmp_path):
    out = tmp_path / "demo"
    done = _demo("demo", tmp_path)  # relative --out, run from a folder outside the repository
    assert done.returncode == 0, done.stderr[-3000:]
    for name in ("README.md", "results.md", "results.csv", "predictions.parquet", "roc.png", "scanpath.png"):
        assert (out / name).is_file(), name
    for name in ("trials", "words", "fixations", "word_measures"):
        assert (out / "dataset" / f"{name}.parquet").is_file(), name
    assert (out / "roc.png").read_bytes()[:8] == PNG and (out / "scanpath.png").read_bytes()[:8] == PNG
    results = pl.read_csv(out / "results.csv")
    assert set(results["model"]) == MODELS
    assert set(results["regime"]) == REGIMES
    assert results.height == len(MODELS) * len(REGIMES)
    predictions = pl.read_parquet(out / "predictions.parquet")
    assert set(predictions["model"]) == MODELS
    assert set(predictions["regime"]) == REGIMES - {"all"}
    # the printed table has the three regimes as columns and one row per model
    for column in ("new participant (headline)", "new item & participant (headline)", "new item ", "all"):
        assert column in done.stdout   # marked as results.md marks them ("*" is a significance star elsewhere)
    assert "(headline): the reading_goal label is constant per participant" in done.stdout
    assert "reading_goal: % on test fold 0" in done.stdout and "1 test folds" not in done.stdout  # no SEM of one
    for row in ("BEyeLSTM", "RoBERTEyeF", "LogisticEnse", "MajorityVote", "majority class", "reading speed (LR)",
                "Mézière et al. LR"):
        assert row in done.stdout
    readme = (out / "README.md").read_text()
    assert "oracle" in readme and "line assigner" in readme and "| New participant" in readme
    # the simulated corpus: 12 participants x 4 paragraphs, every trial kept by prep
    assert pl.read_parquet(out / "dataset" / "trials.parquet").height == 48
    # a second run into the same folder needs --force
    again = _demo(out, tmp_path)
    assert again.returncode == 2 and "--force" in again.stderr


def test_force_removes_only_the_demo_outputs(tmp_path):
    (tmp_path / "results.md").write_text("old")
    (tmp_path / "runs").mkdir()
    (tmp_path / "mine.txt").write_text("keep")
    with pytest.raises(ConfigError, match="results.md, runs"):
        _prepare_out(tmp_path, force=False)
    _prepare_out(tmp_path, force=True)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mine.txt"]


def _layout():
    words = pl.DataFrame({"word": ["The", "cat", "sat", "down"], "word_index": [0, 1, 2, 3],
                          "left_px": [0.0, 60.0, 0.0, 60.0], "right_px": [50.0, 110.0, 50.0, 120.0],
                          "top_px": [0.0, 0.0, 100.0, 100.0], "bottom_px": [100.0, 100.0, 200.0, 200.0],
                          "line_index": [0, 0, 1, 1]})
    fixations = pl.DataFrame({"x_px": [20.0, 80.0, 25.0, 90.0], "y_px": [55.0, 70.0, 95.0, 160.0],
                              "duration_ms": [200.0, 180.0, 240.0, 210.0], "line_index": [0, 0, 1, None]},
                             schema_overrides={"line_index": pl.Int32})
    return words, fixations


def test_plot_scanpath_writes_an_image(tmp_path):
    words, fixations = _layout()
    path = plot_scanpath(fixations, words, tmp_path / "sub" / "scanpath.png", highlight=(1, 3), title="t")
    assert path == tmp_path / "sub" / "scanpath.png"
    assert path.read_bytes()[:8] == PNG and path.stat().st_size > 5000


def test_plot_scanpath_rejects_bad_input(tmp_path):
    words, fixations = _layout()
    with pytest.raises(SchemaError, match="duration_ms"):
        plot_scanpath(fixations.drop("duration_ms"), words, tmp_path / "a.png")
    with pytest.raises(SchemaError, match="word_index"):
        plot_scanpath(fixations, words.drop("word_index"), tmp_path / "a.png", highlight=(0, 1))
    with pytest.raises(DataError, match="no fixations"):
        plot_scanpath(fixations.clear(), words, tmp_path / "a.png")
