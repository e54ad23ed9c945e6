"""The array-batched line assignment (``Batch``, ``slice_batch``, ``assign_lines``) gives exactly the per-trial result.

Every batched function is checked bit for bit against its per-trial original: on the gold trials (skipped
without them), on simulated trials with children's regressions, and on noise trials with integer px (ties in
x, leftover runs); the rare paths (keys closer than their resolution) are forced and checked too.
"""

from __future__ import annotations

import sys

import numpy as np
import polars as pl
import pytest

import readgaze.lines as lines
from readgaze.lines import assign_lines, assign_trial
from readgaze.lines.batch import Batch, nearest_midline, segment_medians, segment_sums
from readgaze.simulate import simulate_line_trials

slice_module = sys.modules["readgaze.lines.slice"]
slice_arrays = sys.modules["readgaze.lines.slice_arrays"]


def _noise(n: int, seed: int) -> list[tuple]:
    """Integer px noise trials (many equal x, many runs that never join the growth), 2-11 lines."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        k = int(rng.integers(2, 12))
        m = int(rng.integers(1, 80))
        xy = np.column_stack([rng.integers(0, 900, m), rng.integers(50, 150 + 50 * k, m)]).astype(float)
        out.append((xy, 100.0 + 50.0 * np.arange(k), None, None))
    return out


@pytest.fixture(scope="module")
def sims():
    return [(t.xy, t.line_y_px, t.word_xy, t.word_line)
            for t in simulate_line_trials(60, seed=5, child_probability=0.3)]


def _same_as_slice(trials, **params):
    """The array steps (``compiled=False``; tests/test_slice_compiled.py checks the compiled pass)."""
    got = slice_module.slice_many(trials, compiled=False, **params)
    for k, (t, g) in enumerate(zip(trials, got)):
        np.testing.assert_array_equal(g, lines.slice(t[0], t[1], **params), err_msg=f"trial {k}")


@pytest.mark.parametrize("edge_phantoms", [False, True])
def test_slice_batch_equals_slice_on_simulated_and_noise_trials(sims, edge_phantoms, monkeypatch):
    leftovers = []
    place = slice_arrays._place_leftovers
    monkeypatch.setattr(slice_arrays, "_place_leftovers",
                        lambda *a: leftovers.append(int((a[6] == a[-1]).sum())) or place(*a))
    _same_as_slice(sims + _noise(80, seed=9), edge_phantoms=edge_phantoms)
    assert leftovers[0] > 50          # step 4 (leftover runs, placed across trials) really ran


@pytest.mark.parametrize("gold", ["line_gold_small", "line_gold"])  # tests/files' 4 trials; ../shared's 24
def test_slice_batch_equals_slice_on_the_gold_trials(gold, request):
    trials = request.getfixturevalue(gold)
    _same_as_slice([(t.xy, t.line_y_px, None, None) for t in trials])
    _same_as_slice([(t.xy, t.line_y_px, None, None) for t in trials], edge_phantoms=True)


def test_slice_batch_takes_px_thresholds_and_decimal_positions(sims):
    decimal = [(np.round(xy + 0.37, 1), ly, None, None) for xy, ly, *_ in sims[:30]]
    _same_as_slice(decimal, x_thresh=150.0, y_thresh=25.0, w_thresh=28.0, n_thresh=80.0)


def test_slice_batch_regrows_on_exact_ranks_when_two_x_share_a_key(monkeypatch):
    """x closer than the keys' resolution (1e-12 px apart on trial 60): the growth reruns on ranks of x."""
    trials = _noise(61, seed=4)
    xy = trials[-1][0].copy()
    xy[1::2, 0] = xy[0:-1:2, 0][: len(xy[1::2])] + 1e-12
    trials[-1] = (xy, trials[-1][1], None, None)
    calls = []
    grow = slice_arrays._grow_batch
    monkeypatch.setattr(slice_arrays, "_grow_batch", lambda *a: calls.append(1) or grow(*a))
    _same_as_slice(trials)
    assert len(calls) == 2


def test_segment_sums_add_as_numpy_sums_and_means():
    rng = np.random.default_rng(0)
    n = rng.integers(0, 300, 400)
    start = np.r_[0, np.cumsum(n)]
    v = rng.normal(size=start[-1]) * np.exp(rng.normal(size=start[-1]) * 4)
    col = np.column_stack([v, -v])[:, 0]                       # a strided column, as slice's means read it
    got = segment_sums(col, start)
    want = np.array([col[start[k]:start[k + 1]].sum() for k in range(len(n))])
    np.testing.assert_array_equal(got, want)
    assert (got != np.array([np.cumsum(col[start[k]:start[k + 1]])[-1] if n[k] else 0.0
                             for k in range(len(n))])).any()   # a running sum would differ somewhere


def test_segment_medians_equal_np_median():
    rng = np.random.default_rng(1)
    n = rng.integers(0, 700, 300)
    start = np.r_[0, np.cumsum(n)]
    v = np.round(rng.normal(size=start[-1]) * 20, 1)
    want = np.array([np.median(v[start[k]:start[k + 1]]) if n[k] else np.nan for k in range(len(n))])
    np.testing.assert_array_equal(segment_medians(v, start), want)


def test_nearest_midline_equals_argmin_also_within_the_keys_resolution():
    rng = np.random.default_rng(3)
    line_start = np.r_[0, np.cumsum(rng.integers(1, 15, 80))]
    line_y = np.concatenate([np.sort(rng.choice(2000, line_start[k + 1] - line_start[k], replace=False)) + 0.3
                             for k in range(80)]).astype(float)
    text = rng.integers(0, 80, 30000)
    y = np.round(rng.uniform(-200, 2200, 30000), 1)
    y[:100] = line_y[line_start[text[:100]]]                   # on a midline
    y[100:200] = line_y[line_start[text[100:200]]] + 1e-12     # closer to it than the keys resolve
    want = np.array([np.abs(y[i] - line_y[line_start[text[i]]:line_start[text[i] + 1]]).argmin()
                     for i in range(len(y))])
    np.testing.assert_array_equal(nearest_midline(y, text, line_y, line_start), want)


def test_batch_round_trips_trials_and_attach_batches(sims):
    batch = Batch.from_trials(sims)
    for a, b in zip(batch.trials(), sims):
        np.testing.assert_array_equal(a[0], b[0])
        np.testing.assert_array_equal(a[1], b[1])
    got = lines.assign_batch(batch, "nearest")
    np.testing.assert_array_equal(got, np.concatenate([assign_trial(t[0], t[1], "nearest") for t in sims]))
    np.testing.assert_array_equal(lines.assign_batch(batch, "chain"),
                                  np.concatenate([assign_trial(t[0], t[1], "chain") for t in sims]))


def _frames(trials):
    """Fixations / words / trials frames of simulated trials (one text per trial), rows shuffled."""
    fix, words = [], []
    for k, (xy, ly, wxy, wl) in enumerate(trials):
        fix.append(pl.DataFrame({"trial_id": f"t{k:03d}", "fixation_index": np.arange(len(xy)),
                                 "x_px": xy[:, 0], "y_px": xy[:, 1]}))
        words.append(pl.DataFrame({"text_id": f"p{k}", "ia_index": np.arange(len(wxy)), "line_index": wl,
                                   "left_px": wxy[:, 0] - 8, "right_px": wxy[:, 0] + 8,
                                   "top_px": ly[wl] - 10.0, "bottom_px": ly[wl] + 10.0}))
    fix = pl.concat(fix).sample(fraction=1.0, shuffle=True, seed=1)
    fix = fix.with_columns(pl.when(pl.int_range(pl.len()) % 97 == 0).then(None).otherwise(pl.col("x_px"))
                           .alias("x_px"))
    tri = pl.DataFrame({"trial_id": [f"t{k:03d}" for k in range(len(trials))],
                        "text_id": [f"p{k}" for k in range(len(trials))]})
    return fix, pl.concat(words), tri


def _per_trial_reference(fix, words, tri, method):
    """assign_lines written the slow, obvious way: one trial at a time."""
    line = {}
    drift = {}
    for (tid,), g in fix.with_row_index("_r").group_by("trial_id"):
        text = tri.filter(pl.col("trial_id") == tid)["text_id"][0]
        w = words.filter(pl.col("text_id") == text)
        lines_ = w.group_by("line_index").agg(pl.col("top_px").min(), pl.col("bottom_px").max()).sort("line_index")
        ly = ((lines_["top_px"] + lines_["bottom_px"]) / 2).to_numpy()
        g = g.sort("fixation_index").drop_nulls(["x_px", "y_px"])
        xy = g.select("x_px", "y_px").to_numpy()
        got = assign_trial(xy, ly, method)
        for r, li in zip(g["_r"].to_list(), got):
            line[r] = int(lines_["line_index"][int(li)])
        med = float(np.median(xy[:, 1] - ly[got]))
        for r in fix.with_row_index("_r").filter(pl.col("trial_id") == tid)["_r"].to_list():
            drift[r] = med
    n = fix.height
    return [line.get(r) for r in range(n)], [drift.get(r) for r in range(n)]


@pytest.mark.parametrize("method", ["slice", "nearest"])
def test_assign_lines_equals_the_per_trial_computation(sims, method):
    fix, words, tri = _frames(sims[:25])
    out, qc = assign_lines(fix, words, tri, method=method)
    want_line, want_drift = _per_trial_reference(fix, words, tri, method)
    assert out["line_index"].to_list() == want_line
    assert out["vertical_drift_px"].to_list() == want_drift
    assert out["trial_id"].to_list() == fix["trial_id"].to_list()
    assert qc.total(action="flagged", reason="missing x_px/y_px (line_index null)") == fix["x_px"].null_count()
