"""The compiled ``slice`` pass (readgaze/lines/_slice_jit.py) gives exactly :func:`readgaze.lines.slice`'s lines.

Checked trial by trial against the per-trial original and against the array steps (``compiled=False``): on the
gold trials (skipped without them), simulated trials with children's regressions, integer-px noise trials (ties
in x, leftover runs, folds), decimal positions with px thresholds, and edge cases (empty trial, one fixation,
one line, 40 lines, a 600-fixation line whose means need NumPy's pairwise recursion, NaN y in a frame).
"""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import polars as pl
import pytest

import readgaze.lines as lines
from readgaze.lines import assign_lines
from readgaze.lines.batch import Batch
from readgaze.simulate import simulate_line_trials

slice_module = sys.modules["readgaze.lines.slice"]
slice_arrays = sys.modules["readgaze.lines.slice_arrays"]


def _noise(n: int, seed: int, max_lines: int = 12) -> list[tuple]:
    """Integer px noise trials: many equal x, runs the growth never reaches (step 4), more proto-lines than lines."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        k = int(rng.integers(2, max_lines))
        m = int(rng.integers(1, 80))
        xy = np.column_stack([rng.integers(0, 900, m), rng.integers(50, 150 + 50 * k, m)]).astype(float)
        out.append((xy, 100.0 + 50.0 * np.arange(k), None, None))
    return out


@pytest.fixture(scope="module")
def sims():
    return [(t.xy, t.line_y_px, t.word_xy, t.word_line)
            for t in simulate_line_trials(60, seed=5, child_probability=0.3)]


def _check(trials, **params):
    """Compiled == per-trial slice() == array steps, trial by trial; returns the compiled lines."""
    got = slice_module.slice_many(trials, compiled=True, **params)
    steps = slice_module.slice_many(trials, compiled=False, **params)
    for k, (t, g, s) in enumerate(zip(trials, got, steps)):
        want = lines.slice(t[0], t[1], **params) if len(t[0]) else np.zeros(0, np.int64)  # slice() needs one
        np.testing.assert_array_equal(g, want, err_msg=f"trial {k} (compiled)")
        np.testing.assert_array_equal(s, want, err_msg=f"trial {k} (array steps)")
    return got


def test_compiled_equals_slice_on_the_gold_trials(line_gold):
    trials = [(t.xy, t.line_y_px, None, None) for t in line_gold]
    got = _check(trials)
    _check(trials, edge_phantoms=True)
    # the lines score as eval-lines reports them for slice (pooled 99.07 %, worst trial 92.83 %)
    hits = [(int((g == t.gold_line)[t.scored].sum()), int(t.scored.sum())) for g, t in zip(got, line_gold)]
    assert round(100 * sum(h for h, _ in hits) / sum(n for _, n in hits), 2) == 99.07
    assert round(min(100 * h / n for h, n in hits), 2) == 92.83


def test_compiled_equals_slice_on_the_four_gold_trials_of_tests_files(line_gold_small):
    trials = [(t.xy, t.line_y_px, None, None) for t in line_gold_small]
    got = _check(trials)
    _check(trials, edge_phantoms=True)
    hits = [(int((g == t.gold_line)[t.scored].sum()), int(t.scored.sum())) for g, t in zip(got, line_gold_small)]
    assert hits == [(103, 103), (114, 114), (67, 68), (124, 124)]  # as eval-lines scores slice on them


@pytest.mark.parametrize("edge_phantoms", [False, True])
def test_compiled_equals_slice_on_simulated_and_noise_trials(sims, edge_phantoms, monkeypatch):
    trials = sims + _noise(150, seed=9)
    leftovers, folds = [], []
    place, fold = slice_arrays._place_leftovers, slice_arrays.fold_and_place
    monkeypatch.setattr(slice_arrays, "_place_leftovers",
                        lambda *a: leftovers.append(int((a[6] == a[-1]).sum())) or place(*a))
    monkeypatch.setattr(slice_arrays, "fold_and_place",
                        lambda *a: folds.append(int(((a[8] - a[7] + 1) > a[9]).sum())) or fold(*a))
    _check(trials, edge_phantoms=edge_phantoms)
    assert leftovers[0] > 50 and folds[0] > 20   # steps 4 and 6 really ran in the array steps on this set


def test_compiled_takes_px_thresholds_and_decimal_positions(sims):
    decimal = [(np.round(xy + 0.37, 1), ly, None, None) for xy, ly, *_ in sims[:30]]
    _check(decimal, x_thresh=150.0, y_thresh=25.0, w_thresh=28.0, n_thresh=80.0)
    _check(_noise(40, seed=2), y_thresh=20.0, w_thresh=25.0, n_thresh=60.0)


def test_compiled_edge_cases():
    rng = np.random.default_rng(7)
    ly3 = np.array([100.0, 150.0, 200.0])
    many = 100.0 + 40.0 * np.arange(40)
    long_line = np.column_stack([np.arange(600) * 1.5, 150.0 + rng.normal(0, 3, 600)])   # one 600-fixation run
    trials = [
        (np.zeros((0, 2)), ly3, None, None),                                     # empty
        (np.array([[10.0, 120.0]]), ly3, None, None),                            # one fixation
        (np.array([[10.0, 120.0], [400.0, 125.0], [20.0, 190.0]]), np.array([150.0]), None, None),  # one line
        (np.column_stack([rng.integers(0, 900, 300), rng.integers(60, 1700, 300)]).astype(float), many, None, None),
        (long_line, ly3, None, None),
        (np.vstack([long_line, long_line + [0.0, 52.0], long_line + [0.0, -49.0]]), ly3, None, None),
        (np.array([[5.0, 100.0], [5.0, 100.0], [5.0, 100.0]]), ly3, None, None),   # all equal
        # saccades of exactly y_thresh (32 px at a 64-px pitch) and x_thresh (192 px) do not end a run
        (np.array([[0.0, 100], [50, 100], [100, 100], [150, 132], [200, 132], [392, 132]]),
         np.array([100.0, 164.0, 228.0]), None, None),
    ]
    got = _check(trials)
    assert got[-1].tolist() == [0] * 6
    assert got[0].shape == (0,) and got[1].tolist() == [0]
    assert got[2].tolist() == [0, 0, 0]
    assert set(got[5].tolist()) == {0, 1, 2}
    _check(trials, edge_phantoms=True)


def test_pairwise_sums_like_numpy():
    from readgaze.lines._common import pairwise as _pairwise  # the sums the slice kernel calls

    rng = np.random.default_rng(0)
    v = rng.normal(size=2000) * np.exp(rng.normal(size=2000) * 4)
    col = np.column_stack([v, -v])[:, 0]                        # strided, as slice's column means read it
    differs = 0
    for n in list(range(0, 140)) + [255, 256, 257, 600, 1031, 2000]:
        want = col[:n].sum()
        assert _pairwise(np.ascontiguousarray(col), 0, n) == want, n
        assert _pairwise(v, 3, min(n, 1997)) == v[3:3 + min(n, 1997)].sum(), n
        differs += n > 8 and float(np.cumsum(col[:n])[-1]) != want
    assert differs > 50                                          # a running sum would not pass
    assert np.signbit(_pairwise(np.array([-0.0]), 0, 1))         # NumPy keeps a sum of -0.0 negative


def test_assign_lines_compiled_skips_nan_positions(sims, monkeypatch):
    """Rows without a finite position get no line and do not move the others' lines (compiled in the frame)."""
    monkeypatch.setattr(slice_arrays, "KERNEL_MIN_FIXATIONS", 0)
    fix, words, tri = [], [], []
    for k, (xy, ly, _wxy, wl) in enumerate(sims[:20]):
        fix.append(pl.DataFrame({"trial_id": f"t{k:02d}", "fixation_index": np.arange(len(xy)),
                                 "x_px": xy[:, 0], "y_px": xy[:, 1]}))
        words.append(pl.DataFrame({"text_id": f"p{k}", "line_index": wl, "top_px": ly[wl] - 10.0,
                                   "bottom_px": ly[wl] + 10.0}))
        tri.append((f"t{k:02d}", f"p{k}"))
    fix = pl.concat(fix)
    words = pl.concat(words)
    trials = pl.DataFrame(tri, schema=["trial_id", "text_id"], orient="row")
    bad = pl.int_range(pl.len()) % 13 == 0
    holed = fix.with_columns(pl.when(bad).then(float("nan")).otherwise(pl.col("y_px")).alias("y_px"))
    out, qc = assign_lines(holed, words, trials, method="slice")
    clean, _ = assign_lines(fix.filter(~fix.select(bad).to_series()), words, trials, method="slice")
    is_bad = fix.select(bad).to_series()
    assert out["line_index"].filter(is_bad).null_count() == int(is_bad.sum())
    assert out["line_index"].filter(~is_bad).to_list() == clean["line_index"].to_list()
    want = np.concatenate([lines.slice(np.column_stack([g["x_px"], g["y_px"]]), sims[k][1])
                           for k, g in enumerate(fix.filter(~is_bad).partition_by("trial_id", maintain_order=True))])
    assert clean["line_index"].to_list() == want.tolist()
    assert qc.total(action="flagged", reason="missing x_px/y_px (line_index null)") == int(is_bad.sum())


def test_compiled_auto_choice(monkeypatch):
    """Large batches, or any batch once numba is loaded, run compiled; both give the same lines anyway."""
    trials = _noise(30, seed=11)
    batch = Batch.from_trials(trials)
    calls = []
    import readgaze.lines._slice_jit as jit

    real = jit.slice_trials
    monkeypatch.setattr(jit, "slice_trials", lambda *a: calls.append(1) or real(*a))
    monkeypatch.setattr(slice_arrays, "KERNEL_MIN_FIXATIONS", 0)
    a = slice_module.slice_batch(batch)
    assert calls == [1]
    np.testing.assert_array_equal(a, slice_module.slice_batch(batch, compiled=False))
    assert calls == [1]


def test_loading_the_kernel_does_not_import_scipy_linalg():
    """numba's BLAS probe (an import of scipy.linalg, about 0.35 CPU s) is skipped; the lines are unchanged."""
    code = ("import sys, numpy as np\n"
            "from readgaze.lines.batch import Batch\n"
            "from readgaze.lines.slice import slice_batch\n"
            "import numba.np.linalg as la\n"
            "probe = la.ensure_blas\n"
            "xy = np.column_stack([np.arange(60.0) * 20 % 900, 100 + 50 * (np.arange(60) // 15)])\n"
            "b = Batch(xy, np.array([0, 30, 60]), np.array([0, 0]), np.array([100.0, 150, 200, 250]), "
            "np.array([0, 4]))\n"
            "print(slice_batch(b, compiled=True).tolist() == slice_batch(b, compiled=False).tolist(),\n"
            "      'scipy.linalg' in sys.modules, la.ensure_blas is probe)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["True", "False", "True"]


def test_compiled_moves_and_drift_equal_the_array_functions():
    """frame.assign_lines' write-back, compiled: moves off the nearest line (ties: halfway between midlines) and
    each trial's median drift (odd and even sizes, empty trials) equal _off_nearest and segment_medians."""
    from readgaze.lines._frame_jit import moved_and_drift
    from readgaze.lines.batch import segment_medians
    from readgaze.lines.frame import _off_nearest

    rng = np.random.default_rng(4)
    line_start = np.r_[0, np.cumsum(rng.integers(1, 14, 50))]
    line_y = np.concatenate([100.0 + 60.0 * np.arange(line_start[k + 1] - line_start[k]) for k in range(50)])
    text = rng.integers(0, 50, 400)
    sizes = rng.integers(0, 160, 400)
    trial_start = np.r_[0, np.cumsum(sizes)]
    n_lines = np.diff(line_start)[np.repeat(text, sizes)]
    lines_ = (rng.random(trial_start[-1]) * n_lines).astype(np.int64)
    y = np.round(rng.uniform(40, 900, trial_start[-1]), 0)
    y[::7] = 130.0                                               # halfway between the first two midlines
    at = np.repeat(line_start[text], sizes) + lines_
    b_text = np.repeat(text, sizes)
    moved, drift = moved_and_drift(y, lines_, text, trial_start, line_y, line_start)
    assert moved == _off_nearest(y, at, line_start[b_text], line_start[b_text + 1], line_y) > 1000
    np.testing.assert_array_equal(drift, segment_medians(y - line_y[at], trial_start))
    assert np.isnan(drift[sizes == 0]).all() and (sizes == 0).any() and ((sizes % 2) == 0).any()


def test_assign_lines_writes_the_same_back_compiled_or_not(sims, monkeypatch):
    import readgaze.lines.frame as frame

    fix, words, tri = [], [], []
    for k, (xy, ly, _wxy, wl) in enumerate(sims[:30]):
        fix.append(pl.DataFrame({"trial_id": f"t{k:02d}", "fixation_index": np.arange(len(xy)),
                                 "x_px": xy[:, 0], "y_px": xy[:, 1] + 7.5}))
        words.append(pl.DataFrame({"text_id": f"p{k}", "line_index": wl, "top_px": ly[wl] - 10.0,
                                   "bottom_px": ly[wl] + 10.0}))
        tri.append((f"t{k:02d}", f"p{k}"))
    fix, words = pl.concat(fix), pl.concat(words)
    trials = pl.DataFrame(tri, schema=["trial_id", "text_id"], orient="row")
    import numba  # noqa: F401  (the compiled write-back runs once numba is loaded)

    monkeypatch.setattr(frame, "COMPILED_FROM", 10 ** 9)
    a, qa = assign_lines(fix, words, trials, method="chain")
    monkeypatch.setattr(frame, "COMPILED_FROM", 0)
    b, qb = assign_lines(fix, words, trials, method="chain")
    assert a.equals(b) and qa.records == qb.records
    assert qb.total(action="changed") > 0
