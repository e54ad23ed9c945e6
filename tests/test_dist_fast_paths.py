"""Speed paths of the DIST-style assigner (issue #18) give exactly the per-trial results.

The compiled batched ``warp`` and ``cluster`` (numba), the in-place k-means++ / Lloyd steps of ``cluster``, the
compiled HMM decoding, and ``readgaze.models.dist.assign_trials`` as a whole are compared with one-trial-at-a-time or
textbook references, on the real gold trials (four in tests/files; all 24 when ``../shared/data`` is present) and on
simulated ones.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from readgaze.lines import assign_trials
from readgaze.lines._common import pairwise, pairwise_stack  # the sums cluster's kernel calls
from readgaze.lines.warp import warp, warp_many
from readgaze.models import dist
from readgaze.simulate import simulate_line_trials

cluster_module = sys.modules["readgaze.lines.cluster"]


@pytest.fixture(scope="module", params=["line_gold_small_tuples", "line_gold_tuples"])
def gold(request):
    """The four gold trials of tests/files, then all 24 of ../shared/data (skipped where it is absent)."""
    return request.getfixturevalue(request.param)


@pytest.fixture(scope="module")
def simulated():
    trials = (simulate_line_trials(20, seed=31) + simulate_line_trials(12, seed=32, child_probability=1.0)
              + simulate_line_trials(4, seed=33, long_trial_probability=1.0))
    return [(t.xy, t.line_y_px, t.word_xy, t.word_line) for t in trials]


def _same(a: list[np.ndarray], b: list[np.ndarray]) -> None:
    assert len(a) == len(b)
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x, y)


def _warp_one_by_one(trials):
    return [warp(xy, ly, word_xy=w, word_line=wl) for xy, ly, w, wl in trials]


def test_warp_many_equals_warp_trial_by_trial_on_gold(gold):
    _same(warp_many(gold), _warp_one_by_one(gold))


def test_warp_many_equals_warp_on_simulated_trials(simulated):
    ref = _warp_one_by_one(simulated)
    _same(warp_many(simulated), ref)
    _same(warp_many(simulated[::-1]), ref[::-1])


def test_warp_many_breaks_ties_like_dtw_path():
    # integer positions on a coarse grid: many equal costs, so the path walk's tie rule decides
    rng = np.random.default_rng(4)
    line_y = np.array([100.0, 140.0, 180.0])
    trials = []
    for n, m in ((1, 1), (1, 5), (7, 1), (12, 9), (30, 12), (3, 20)):
        xy = np.column_stack([rng.integers(0, 4, n) * 20.0, line_y[rng.integers(0, 3, n)]])
        words = np.column_stack([rng.integers(0, 4, m) * 20.0, line_y[rng.integers(0, 3, m)]])
        trials.append((xy, line_y, words, None))
    _same(warp_many(trials), _warp_one_by_one(trials))


def _kmeans_reference(y, k, n_init, rng):
    """cluster.kmeans_plus_plus before issue #18 (fresh arrays every step), for bit-exact comparison."""
    n = len(y)
    rows = np.arange(n_init)
    chosen = np.empty((n_init, k))
    chosen[:, 0] = y[rng.integers(n, size=n_init)]
    d2 = (y[None, :] - chosen[:, :1]) ** 2
    for c in range(1, k):
        cum = np.cumsum(d2)
        total = d2.sum(axis=1)
        before = cum[rows * n] - d2[:, 0]
        u = rng.random(n_init)
        pick = np.searchsorted(cum, before + u * total, side="left") - rows * n
        pick = np.where(total > 0, np.clip(pick, 0, n - 1), (u * n).astype(np.int64))
        chosen[:, c] = y[pick]
        d2 = np.minimum(d2, (y[None, :] - chosen[:, c:c + 1]) ** 2)
    return np.sort(chosen, axis=1)


def _lloyd_reference(y_sorted, centres, max_iter=100):
    """cluster.lloyd_intervals before issue #18."""
    r, _ = centres.shape
    n = len(y_sorted)
    s1 = np.concatenate([[0.0], np.cumsum(y_sorted)])
    s2 = np.concatenate([[0.0], np.cumsum(y_sorted ** 2)])
    edge = np.broadcast_to(np.array([0, n]), (r, 2))
    bounds = None
    for _ in range(max_iter):
        mid = (centres[:, 1:] + centres[:, :-1]) / 2
        new = np.concatenate([edge[:, :1], np.searchsorted(y_sorted, mid, side="right"), edge[:, 1:]], axis=1)
        if bounds is not None and np.array_equal(new, bounds):
            break
        bounds = new
        count = np.diff(bounds, axis=1)
        centres = np.sort(np.where(count > 0, np.diff(s1[bounds], axis=1) / np.maximum(count, 1), centres), axis=1)
    count = np.diff(bounds, axis=1)
    total, square = np.diff(s1[bounds], axis=1), np.diff(s2[bounds], axis=1)
    return bounds, (square - total ** 2 / np.maximum(count, 1)).sum(axis=1)


@pytest.mark.parametrize("case", range(40))
def test_kmeans_and_lloyd_bit_identical_to_the_reference(case):
    rng = np.random.default_rng(case)
    n, k = int(rng.integers(2, 300)), int(rng.integers(2, 14))
    y = np.sort(np.round(rng.normal(0, 90, n), int(rng.integers(0, 3))))
    if case % 5 == 0:
        y[: n // 2 + 1] = y[0]                       # many equal points: some starts have total 0 early
    if case == 1:
        y[:] = 7.0                                    # every point on the first centre: the uniform draw
    got = cluster_module.kmeans_plus_plus(y, k, 100, np.random.default_rng(case))
    ref = _kmeans_reference(y, k, 100, np.random.default_rng(case))
    np.testing.assert_array_equal(got, ref)
    for a, b in zip(cluster_module.lloyd_intervals(y, got), _lloyd_reference(y, ref)):
        np.testing.assert_array_equal(a, b)
    for a, b in zip(cluster_module.lloyd_intervals(y, got, max_iter=2), _lloyd_reference(y, ref, max_iter=2)):
        np.testing.assert_array_equal(a, b)                                      # stopped before converging


def test_pairwise_sum_is_numpys_sum_bit_for_bit():
    rng = np.random.default_rng(0)
    for n in [*range(0, 40), 127, 128, 129, 255, 256, 257, 1000, 4099]:
        rows = rng.random((3, n)) ** 4 * 10.0 ** rng.uniform(-3, 8, (3, 1))
        flat = rows.ravel()
        got = [pairwise(flat, r * n, n) for r in range(3)]
        np.testing.assert_array_equal(got, rows.sum(axis=1))


def test_pairwise_sum_on_reused_stack_arrays_is_numpys_sum():
    """The kernel reuses one set of stack arrays for all its sums (dirty from the previous call)."""
    rng = np.random.default_rng(1)
    stack = [np.full(64, 7, np.int64), np.full(64, 7, np.int64), np.full(64, 1, np.int64), np.full(64, 3.0)]
    for n in (300, 129, 1000, 4099, 200, 257, 5, 130):
        a = rng.random(n) ** 4 * 1e6
        assert pairwise_stack(a, 0, n, *stack) == a.sum()


def _cluster_one_by_one(trials, **params):
    return [cluster_module.cluster(xy, ly, **params) for xy, ly, *_ in trials]


def test_cluster_many_equals_cluster_trial_by_trial_on_gold(gold):
    _same(cluster_module.cluster_many(gold), _cluster_one_by_one(gold))


def test_cluster_many_equals_cluster_on_simulated_and_degenerate_trials(simulated):
    rng = np.random.default_rng(7)
    odd = [(np.column_stack([np.arange(n, dtype=float), y]), np.arange(k) * 40.0 + 100.0, None, None)
           for n, k, y in ((1, 3, [120.0]), (5, 9, rng.normal(150, 30, 5)), (40, 4, np.full(40, 133.0)),
                           (30, 2, np.round(rng.normal(150, 40, 30))),
                           # few distinct values for many lines: empty intervals, starts that settle at different steps
                           (80, 12, rng.integers(0, 6, 80) * 30.0 + 100.0), (60, 7, np.round(rng.normal(150, 8, 60))),
                           # row lengths around the kernel's blocks of 8 and NumPy's 128-value pairwise blocks
                           (13, 3, rng.normal(150, 40, 13)), (129, 5, rng.normal(180, 60, 129)),
                           (300, 8, rng.normal(250, 90, 300)))]
    trials = simulated + odd
    _same(cluster_module.cluster_many(trials), _cluster_one_by_one(trials))
    _same(cluster_module.cluster_many(trials, n_init=7, seed=3), _cluster_one_by_one(trials, n_init=7, seed=3))
    _same(cluster_module.cluster_many(trials[:5], init="midlines"), _cluster_one_by_one(trials[:5], init="midlines"))


def _odd_feature_trials():
    rng = np.random.default_rng(2)
    trials = [(np.zeros((0, 2)), np.array([100.0, 150.0])), (np.array([[5.0, 125.0]]), np.array([100.0, 150.0])),
              (rng.normal(300, 100, (7, 2)), np.array([200.0])),                      # one line
              (np.column_stack([np.round(rng.uniform(0, 50, 60)), np.repeat([125.0, 175.0, 100.0], 20)]),
               np.array([150.0, 100.0, 200.0, 250.0])),        # unsorted midlines, fixations exactly between two
              (np.column_stack([np.full(9, 3.0), np.full(9, 125.0)]), np.array([100.0, 150.0, 200.0]))]
    for n in range(1, 40):                                     # every short length: the percentile's index rule
        line_y = np.sort(rng.choice(np.arange(10) * 37.0 + 90, int(rng.integers(1, 8)), replace=False))
        trials.append((np.column_stack([np.round(rng.normal(0, 100, n), 1), rng.normal(150, 60, n)]), line_y))
    return trials


def test_trial_features_many_equals_trial_features_bit_for_bit(gold, simulated):
    for trials in (gold, simulated, _odd_feature_trials(), gold[:3] + _odd_feature_trials() + simulated[:5]):
        got = dist.trial_features_many(trials)
        assert len(got) == len(trials)
        for (fix, lines), (xy, line_y, *_) in zip(got, trials):
            ref_fix, ref_lines = dist.trial_features(xy, line_y)
            assert fix.dtype == ref_fix.dtype == np.float32 and fix.shape == ref_fix.shape
            np.testing.assert_array_equal(fix, ref_fix)
            np.testing.assert_array_equal(lines, ref_lines)
    assert dist.trial_features_many([]) == []


def test_percentile_of_sorted_runs_is_numpys_bit_for_bit():
    rng = np.random.default_rng(3)
    runs = [np.sort(rng.normal(0, 10.0 ** rng.uniform(-2, 4), n)) for n in [*range(1, 120), 0, 467, 1000, 0, 3]]
    n = np.array([len(r) for r in runs])
    for q in (2, 98, 50, 0, 100, 37.5):
        got = dist.inputs._percentile_runs(np.concatenate(runs), n, q)
        want = [np.percentile(r, q) if len(r) else 0.0 for r in runs]
        assert np.array_equal(got, want), q


def test_votes_validate_each_trial_once_and_name_a_bad_one(simulated, monkeypatch):
    import readgaze.lines.assign as lines_module
    from readgaze.errors import ConfigError

    calls = []
    real = lines_module.check_trial
    monkeypatch.setattr(lines_module, "check_trial", lambda *a: calls.append(1) or real(*a))
    trials = simulated[:6] + [(np.zeros((0, 2)), np.array([100.0, 140.0]), None, None),
                              (np.array([[10.0, 101.0], [20.0, 99.0]]), np.array([100.0]), None, None)]
    votes = dist.classical_votes_many(trials)
    assert len(calls) == len(trials)                             # once per trial, not once per voter (8)
    for m, name in enumerate(dist.DEFAULT_VOTERS):
        if name == "warp":                                       # the two trials without words get attach's lines
            want = assign_trials(trials[:6], "warp") + assign_trials(trials[6:], "attach")
        else:
            want = assign_trials(trials, name)
        _same([v[:, m] for v in votes], want)
    assert votes[-2].shape == (0, len(dist.DEFAULT_VOTERS)) and not votes[-1].any()   # no fixations; one line
    bad = list(trials)
    bad[3] = (np.array([[1.0, np.nan]]), bad[3][1], None, None)
    with pytest.raises(ConfigError, match="trial 3"):
        dist.classical_votes_many(bad)


def _posterior_reference(prob, fix, transitions, power):
    """Textbook scaled forward-backward for one trial (Rabiner 1989), one step at a time."""
    n, n_lines = prob.shape
    emit = np.clip(prob, 1e-9, 1.0) ** power
    trans = dist.transition_matrices(transitions, n_lines)
    bins = dist.saccade_bins(fix)
    fwd, bwd = np.zeros((n, n_lines)), np.ones((n, n_lines))
    fwd[0] = emit[0] / emit[0].sum()
    for t in range(1, n):
        a = (fwd[t - 1] @ trans[bins[t]]) * emit[t]
        fwd[t] = a / a.sum()
    for t in range(n - 2, -1, -1):
        a = trans[bins[t + 1]] @ (emit[t + 1] * bwd[t + 1])
        bwd[t] = a / a.sum()
    post = fwd * bwd
    return post / post.sum(axis=1, keepdims=True)


def _random_hmm_trials(seed: int):
    rng = np.random.default_rng(seed)
    n_bins = (len(dist.DX_EDGES) + 1) * (len(dist.DY_EDGES) + 1)
    transitions = rng.random((n_bins, 2 * dist.MAX_JUMP + 2)) ** 3 + 1e-3
    transitions /= transitions.sum(axis=1, keepdims=True)
    prob, fix = [], []
    for n, n_lines in ((40, 5), (0, 4), (1, 3), (2, 9), (300, 13), (17, 1), (60, 9), (5, 2), (120, 5)):
        p = rng.dirichlet(np.full(n_lines, 0.3), size=n)
        prob.append(p)
        f = np.zeros((n, dist.N_FIXATION_FEATURES), dtype=np.float32)
        f[:, 5] = rng.normal(0, 0.3, n)
        f[:, 6] = rng.normal(0, 1.5, n)
        fix.append(f)
    return prob, fix, transitions


def test_forward_backward_over_mixed_line_counts_equals_the_textbook_per_trial():
    prob, fix, transitions = _random_hmm_trials(0)
    got = dist.forward_backward(prob, fix, transitions, 0.5)
    for p, f, g in zip(prob, fix, got):
        assert g.shape == p.shape
        if len(p):
            ref = _posterior_reference(p, f, transitions, 0.5)
            np.testing.assert_allclose(g, ref, rtol=1e-12, atol=1e-15)
            np.testing.assert_array_equal(g.argmax(axis=1), ref.argmax(axis=1))
    # the other trials of the call do not matter: alone, the same posterior
    for p, f, g in zip(prob, fix, got):
        np.testing.assert_array_equal(dist.forward_backward([p], [f], transitions, 0.5)[0], g)


def test_decode_with_trend_pass_batched_equals_trial_by_trial():
    prob, fix, transitions = _random_hmm_trials(1)
    got = dist.decode(prob, fix, transitions, 0.5, trend_power=1.0)
    for p, f, g in zip(prob, fix, got):
        alone = dist.decode([p], [f], transitions, 0.5, trend_power=1.0)[0]
        np.testing.assert_allclose(g, alone, rtol=1e-12, atol=1e-15)
        np.testing.assert_array_equal(g.argmax(axis=1) if len(g) else g, alone.argmax(axis=1) if len(g) else alone)


def test_dist_batched_equals_one_trial_at_a_time_on_gold(gold, one_torch_thread):
    some = gold[::4]                                           # 6 of the 24 trials, 10-13 lines, 69-467 fixations
    _same(dist.assign_trials(some), [dist.assign_trial(xy, ly, word_xy=w, word_line=wl) for xy, ly, w, wl in some])


def test_dist_batched_equals_one_trial_at_a_time_on_simulated_trials(simulated, one_torch_thread):
    some = simulated[::4]
    _same(dist.assign_trials(some), [dist.assign_trial(xy, ly, word_xy=w, word_line=wl) for xy, ly, w, wl in some])


def test_vote_columns_batched_equal_each_method_alone(simulated):
    votes = dist.classical_votes_many(simulated[:8])
    for m, name in enumerate(dist.DEFAULT_VOTERS):
        _same([v[:, m] for v in votes], assign_trials(simulated[:8], name) if name != "vote" else
              [assign_trials([t], "vote")[0] for t in simulated[:8]])


# The distilled one-member file (experiments/distill_dist.py), dist's default before issue 27: same decoded lines as
# the 4-member ensemble it was distilled from, a twentieth of the work.
SMALL = str(dist.SMALL_WEIGHTS)
FULL = str(dist.ENSEMBLE_WEIGHTS)


def test_the_default_is_the_stress_trained_file_and_the_earlier_files_stay_reachable():
    assert dist.WEIGHTS == dist.STRESS_WEIGHTS and dist.STRESS_WEIGHTS.stat().st_size < 200_000
    assert dist.ENSEMBLE_WEIGHTS.name == "dist.pt" and dist.ENSEMBLE_WEIGHTS.is_file()
    assert len(dist.load_ensemble()[0]) == 1 and len(dist.load_ensemble(SMALL)[0]) == 1
    assert len(dist.load_ensemble(FULL)[0]) == 4


def _blob(path):
    import torch

    return torch.load(path, map_location="cpu", weights_only=False)


def test_small_file_is_one_small_member_with_the_ensembles_voters_and_decoding():
    small, full = _blob(SMALL), _blob(FULL)
    assert len(small["members"]) == 1 and small["voters"] == full["voters"]
    np.testing.assert_array_equal(small["decode"]["transitions"], full["decode"]["transitions"])
    assert small["decode"]["emission_power"] == full["decode"]["emission_power"]
    assert small["decode"]["trend_power"] == full["decode"]["trend_power"]
    count = lambda b: sum(v.numel() for m in b["members"] for v in m.values())  # noqa: E731
    assert count(small) * 20 < count(full)                 # 1 member of d 32 x 2 layers against 4 of d 64 x 3


def test_small_file_gives_the_ensembles_lines_on_gold(gold, one_torch_thread):
    _same(dist.assign_trials(gold, weights=SMALL, guarded=False), dist.assign_trials(gold, weights=FULL, guarded=False))


def test_small_file_gives_the_ensembles_lines_on_simulated_trials(simulated, one_torch_thread):
    _same(dist.assign_trials(simulated, weights=SMALL, guarded=False),
          dist.assign_trials(simulated, weights=FULL, guarded=False))


def test_distillation_learns_the_teachers_lines(one_torch_thread):
    import importlib.util

    import torch

    here = Path(__file__).resolve().parents[1] / "experiments"
    sys.path.insert(0, str(here))
    try:
        spec = importlib.util.spec_from_file_location("distill_dist", here / "distill_dist.py")
        distill = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(distill)
    finally:
        sys.path.remove(str(here))
    trials = simulate_line_trials(24, seed=41, child_probability=0.3)
    members, voters = dist.load_ensemble(FULL)
    train = dist.prepare_many([(t.xy, t.line_y_px, t.word_xy, t.word_line) for t in trials], voters,
                              [t.true_line for t in trials])
    with torch.inference_mode():
        teacher = dist.predict_proba(members, train)
    config = dict(d_model=16, n_heads=2, n_layers=1, n_voters=len(voters), dropout=0.0)

    def agreement(model):
        with torch.inference_mode():
            got = dist.predict_proba([model], train)
        return np.mean(np.concatenate([g.argmax(1) == t.argmax(1) for g, t in zip(got, teacher)]))

    torch.manual_seed(0)
    before = agreement(dist.DISTAssigner(**config).eval())
    student = distill.distil(train, teacher, config, steps=60, batch_size=8, lr=3e-3, window=96)
    after = agreement(student)
    assert before < 0.6 and after > 0.97, (before, after)
