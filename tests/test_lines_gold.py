"""Line assignment scored against the gold labels of Carr et al.'s 24-trial developer set."""

from __future__ import annotations

import json

import numpy as np
import pytest

from readgaze.cli import main
from readgaze.lines import CLASSICAL, assign_trial
from readgaze.lines.evaluate import score_method

# Pooled accuracy (%) of eyekit 0.7.1 on exactly this folder (its README; attach = nearest midline). eyekit's
# cluster starts k-means at the midlines: readgaze's init="midlines"; the default is Carr's k-means++ (below).
EYEKIT_DEV = {"attach": 83.70, "chain": 86.70, "cluster": 88.63, "merge": 90.74, "regress": 91.88,
              "segment": 84.91, "slice": 99.07, "split": 84.82, "stretch": 91.71, "warp": 90.48}
# compare is not in eyekit: Carr et al.'s own outputs, pooled over all 48 trials (REFERENCE.md (c)); this
# folder holds 24 of them, so the figure is a looser reference (the other 24 are not available to check).
CARR_48_COMPARE = 60.74


# (hits, scored) per trial of the four-trial excerpt (tests/files/line_assignment), the same in the whole folder
EXCERPT_HITS = {"slice": [(103, 103), (114, 114), (67, 68), (124, 124)],
                "nearest": [(65, 103), (114, 114), (67, 68), (116, 124)],
                "cluster": [(102, 103), (114, 114), (67, 68), (117, 124)]}


@pytest.fixture(scope="module")
def gold(line_gold):
    return line_gold


@pytest.mark.parametrize("method", list(EXCERPT_HITS))
def test_excerpt_trials_are_scored_trial_by_trial(line_gold_small, method):
    assert [t.trial_id for t in line_gold_small] == ["trial_1", "trial_9", "trial_15", "trial_38"]
    assert [len(t.xy) for t in line_gold_small] == [103, 117, 69, 124]  # trials.csv's n_fixations
    hits = score_method(line_gold_small, method)["hits"]
    assert [hits[t.trial_id] for t in line_gold_small] == EXCERPT_HITS[method]


def test_excerpt_trials_score_the_same_in_the_whole_folder(gold):
    by_id = {t.trial_id: t for t in gold}
    for method, expected in EXCERPT_HITS.items():
        hits = score_method([by_id[i] for i in ("trial_1", "trial_9", "trial_15", "trial_38")], method)["hits"]
        assert list(hits.values()) == expected
        whole = score_method(gold, method)["hits"]
        assert [whole[i] for i in ("trial_1", "trial_9", "trial_15", "trial_38")] == expected


def test_eval_lines_command_on_the_excerpt(small_data, tmp_path):
    out = tmp_path / "scores.json"
    assert main(["eval-lines", "--data", str(small_data / "line_assignment"), "--method", "slice,nearest",
                 "--json", str(out)]) == 0
    table = json.loads(out.read_text())
    assert list(table) == ["slice", "nearest", "oracle", "human:jc", "human:vp"]
    assert table["slice"]["pooled"] == pytest.approx(100 * 408 / 409)
    assert table["nearest"]["pooled"] == pytest.approx(100 * 362 / 409)
    assert table["nearest"]["worst_trial"] == pytest.approx(100 * 65 / 103)
    assert table["slice"]["trials_at_oracle"] == 4 and table["nearest"]["trials_at_oracle"] == 2
    assert table["human:jc"]["pooled"] == pytest.approx(99.27, abs=0.01)
    assert table["human:vp"]["pooled"] == pytest.approx(99.76, abs=0.01)


def test_gold_folder_matches_its_manifest(gold):
    assert len(gold) == 24
    assert sum(len(t.xy) for t in gold) == 4743
    assert sum(int(t.scored.sum()) for t in gold) == 4645
    assert {t.group for t in gold} == {"adult", "child"}


@pytest.mark.parametrize("method", [m for m in CLASSICAL if m != "compare"])
def test_pooled_accuracy_reproduces_eyekit(gold, method):
    got = score_method(gold, method, **({"init": "midlines"} if method == "cluster" else {}))["pooled"]
    assert got == pytest.approx(EYEKIT_DEV[method], abs=1.0)
    if method not in ("split", "merge"):       # eyekit's split is randomly started; merge differs on 2 ties
        assert got == pytest.approx(EYEKIT_DEV[method], abs=0.01)


def test_compare_is_near_carrs_figure(gold):
    got = score_method(gold, "compare")["pooled"]
    assert got == pytest.approx(59.66, abs=0.01)
    assert got == pytest.approx(CARR_48_COMPARE, abs=1.5)


def test_slice_is_the_best_classical_method_and_vote_matches_eyekits_crowd(gold):
    slice_score = score_method(gold, "slice")
    assert slice_score["worst_trial"] > 92.0
    # eyekit's crowd (its cluster starts at the midlines): eyekit README, wisdom of crowd (slice, cluster, warp)
    trio = score_method(gold, "vote", methods=["slice", "cluster", "warp"], init="midlines")["pooled"]
    assert trio == pytest.approx(93.65, abs=0.01)


def test_cluster_with_kmeans_plus_plus_matches_carrs_and_pymovements_figures(gold):
    """Carr et al.'s cluster (k-means++ starts, 100 restarts): pymovements' 97.24 / 80.27 on this folder."""
    got = score_method(gold, "cluster")
    assert sum(h for h, _ in got["hits"].values()) == 4517                  # of 4645 scored fixations
    assert got["pooled"] == pytest.approx(97.2443, abs=1e-4)
    assert got["worst_trial"] == pytest.approx(80.2691, abs=1e-4)
    assert score_method(gold, "cluster", seed=1)["pooled"] == got["pooled"]  # restarts make the seed immaterial
    midlines = score_method(gold, "cluster", init="midlines")                # eyekit's variant
    assert midlines["pooled"] == pytest.approx(88.6329, abs=1e-4) and midlines["worst_trial"] < 37.0


def test_vote_of_the_crowd_reaches_pymovements_wisdom_of_the_crowd(gold):
    """Default vote = slice + cluster (k-means++) + warp: pymovements' 99.44 / 96.91 on this folder."""
    got = score_method(gold, "vote")
    assert sum(h for h, _ in got["hits"].values()) == 4619
    assert got["pooled"] == pytest.approx(99.4403, abs=1e-4)
    assert got["worst_trial"] == pytest.approx(96.9136, abs=1e-4)
    for a, b in zip(got["lines"], score_method(gold, "vote", methods=["slice", "cluster", "warp"])["lines"]):
        np.testing.assert_array_equal(a, b)


def test_eval_lines_command_prints_and_writes_json(shared_data, tmp_path, capsys):
    out = tmp_path / "scores.json"
    rc = main(["eval-lines", "--data", str(shared_data / "line_assignment"), "--method", "slice,nearest",
               "--json", str(out)])
    assert rc == 0
    table = json.loads(out.read_text())
    assert list(table) == ["slice", "nearest", "oracle", "human:jc", "human:vp"]
    assert set(table["slice"]) == {"pooled", "worst_trial", "median_trial", "ms_per_trial", "cpu_ms_per_trial",
                                   "trials_at_oracle", "agreed_pooled", "agreed_worst_trial"}
    # the two correctors before consensus (Carr et al. 2022 report 98.7 and 99.5 on all 48 trials)
    assert table["human:jc"]["pooled"] == pytest.approx(98.34, abs=0.01)
    assert table["human:jc"]["worst_trial"] == pytest.approx(89.58, abs=0.01)
    assert table["human:vp"]["pooled"] == pytest.approx(99.55, abs=0.01)
    assert table["human:vp"]["worst_trial"] == pytest.approx(94.86, abs=0.01)
    assert table["slice"]["agreed_pooled"] == pytest.approx(99.32, abs=0.01)
    assert table["slice"]["agreed_worst_trial"] == pytest.approx(93.18, abs=0.01)
    # the oracle over slice and nearest: slice is at least as good on 23 of 24 trials
    assert table["oracle"]["pooled"] >= table["slice"]["pooled"]
    assert table["slice"]["trials_at_oracle"] + table["nearest"]["trials_at_oracle"] >= 24
    assert table["slice"]["pooled"] == pytest.approx(99.07, abs=0.01)
    assert table["nearest"]["pooled"] == pytest.approx(83.70, abs=0.01)
    assert "slice" in capsys.readouterr().out


@pytest.mark.filterwarnings("ignore:One of the clusters is empty")
def test_same_lines_as_eyekit_fixation_by_fixation(gold):
    """Where eyekit is installed, the deterministic methods agree with it on every fixation."""
    snap = pytest.importorskip("eyekit._snap")
    import sys
    from pathlib import Path
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "experiments"))
    from bench_lines import _Layout

    for method in ("chain", "cluster", "slice", "segment"):
        for t in gold[:12]:
            y = np.asarray(getattr(snap, method)(t.xy.copy(), _Layout(t)), dtype=float)
            theirs = np.abs(y[:, None] - t.line_y_px).argmin(axis=1)
            ours = assign_trial(t.xy, t.line_y_px, method, **({"init": "midlines"} if method == "cluster" else {}))
            if method == "segment":   # eyekit's unstable argsort may order equal saccades differently
                assert (ours == theirs).mean() > 0.9, (method, t.trial_id)
            else:
                np.testing.assert_array_equal(ours, theirs, err_msg=f"{method} {t.trial_id}")
