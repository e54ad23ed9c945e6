"""Faster paths of the DIST-style assigner's second speed pass (issue #18) give exactly the reference results.

Compiled batched ``chain`` / ``split`` / ``segment`` votes, the flat second decoding pass, the forward-backward
kernel's accumulation order, and the members' inference forward are compared with the per-trial code (or a
plain-Python loop in the same order), bit for bit, on the real gold trials (four in tests/files; all 24 when
``../shared/data`` is present) and on simulated and tie-heavy ones.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from readgaze.lines import assign_trials
from readgaze.lines.chain import chain, chain_many
from readgaze.lines.segment import segment, segment_many
from readgaze.lines.split import split, split_many
from readgaze.models import dist
from readgaze.simulate import simulate_line_trials


@pytest.fixture(scope="module", params=["line_gold_small_tuples", "line_gold_tuples"])
def gold(request):
    """The four gold trials of tests/files, then all 24 of ../shared/data (skipped where it is absent)."""
    return request.getfixturevalue(request.param)


@pytest.fixture(scope="module")
def simulated():
    trials = (simulate_line_trials(24, seed=41) + simulate_line_trials(8, seed=42, child_probability=1.0)
              + simulate_line_trials(4, seed=43, long_trial_probability=1.0))
    return [(t.xy, t.line_y_px, t.word_xy, t.word_line) for t in trials]


def _tie_heavy():
    """Integer grids (many equal saccades and means half-way between lines), 1-300 fixations, 2-9 lines, and a
    trial whose saccades are exactly chain's thresholds at Carr et al.'s 64-px pitch (192 and 32 px)."""
    rng = np.random.default_rng(5)
    out = []
    for n in (1, 2, 3, 5, 8, 9, 17, 40, 130, 300):
        for k in (2, 3, 5, 9):
            line_y = np.cumsum(rng.integers(30, 70, k)).astype(float)
            xy = np.column_stack([rng.integers(0, 5, n) * 30.0, rng.integers(0, 8, n) * 25.0])
            out.append((xy, line_y, None, None))
    x = np.array([0, 192, 0, 191, 383, 0, 193, 0, 192], dtype=float)
    y = np.array([100, 132, 164, 131, 100, 228, 196, 260, 228], dtype=float)
    out.append((np.column_stack([x, y]), np.array([100.0, 164.0, 228.0, 292.0]), None, None))
    return out


def _same(a, b):
    assert len(a) == len(b)
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x, y)


CHEAP = [("chain", chain, chain_many, {}), ("chain 55 px", chain, chain_many, {"y_thresh": 55}),
         ("chain 150/40 px", chain, chain_many, {"x_thresh": 150.0, "y_thresh": 40.0}),
         ("split", split, split_many, {}), ("segment", segment, segment_many, {})]


@pytest.mark.parametrize("name,one,many,params", CHEAP, ids=[c[0] for c in CHEAP])
def test_cheap_votes_batched_equal_the_per_trial_method(name, one, many, params, simulated):
    for trials in (simulated, _tie_heavy()):
        ref = [one(xy, ly, **params) for xy, ly, *_ in trials]
        _same(many(trials, **params), ref)
        _same(many(trials[::-1], **params), ref[::-1])
        _same(assign_trials(trials, one.__name__, **params), ref)  # by name: the Method's many-trial function


@pytest.mark.parametrize("name,one,many,params", CHEAP, ids=[c[0] for c in CHEAP])
def test_cheap_votes_batched_equal_the_per_trial_method_on_gold(name, one, many, params, gold):
    _same(many(gold, **params), [one(xy, ly, **params) for xy, ly, *_ in gold])


def test_chain_cuts_only_above_the_thresholds():
    # saccades of exactly 192 px (x) or 32 px (y) at a 64-px pitch do not end a chain; 193 / 33 px do
    line_y = np.array([100.0, 164.0, 228.0])
    xy = np.array([[0, 100], [192, 132], [0, 140], [193, 140]], dtype=float)   # chains (100, 132, 140), (140)
    assert chain_many([(xy, line_y, None, None)])[0].tolist() == chain(xy, line_y).tolist() == [0, 0, 0, 1]
    xy = np.array([[0, 100], [10, 133], [20, 150], [30, 160]], dtype=float)
    assert chain_many([(xy, line_y, None, None)])[0].tolist() == chain(xy, line_y).tolist() == [0, 1, 1, 1]


def _decode_reference(prob, features, decoder):
    """decode's second pass trial by trial, as written before the flat version."""
    post = dist.forward_backward(prob, features, decoder["transitions"], decoder["emission_power"])
    emit = [np.clip(p, 1e-9, 1.0) ** decoder["emission_power"] * dist.trend_likelihood(d, decoder["trend_power"])
            for p, d in zip(prob, dist.line_trends(post, features))]
    emit = [e / e.sum(axis=1, keepdims=True) if len(e) else e for e in emit]
    return dist.forward_backward(emit, features, decoder["transitions"], 1.0)


def _probabilities(trials):
    members, voters = dist.load_ensemble(None)
    prepared = dist.prepare_many(trials, voters)
    with torch.inference_mode():
        return dist.predict_proba(members, prepared), [t[0] for t in prepared]


def test_flat_decode_equals_the_per_trial_second_pass(gold, simulated):
    decoder = dist.decoding._decoder(str(dist.SMALL_WEIGHTS))        # a file with the trend pass (the default: off)
    assert decoder["trend_power"] > 0
    for trials in (gold, simulated):
        prob, features = _probabilities(trials)
        prob = prob[:3] + [np.zeros((0, 4))] + prob[3:]                          # a trial with no fixation
        features = features[:3] + [np.zeros((0, dist.N_FIXATION_FEATURES), np.float32)] + features[3:]
        got, ref = dist.decode(prob, features, **decoder), _decode_reference(prob, features, decoder)
        _same(got, ref)
        assert got[3].shape == (0, 4)


def _forward_backward_python(emit, bins, trans):
    """The scaled forward-backward of one trial in plain Python floats, every sum in line order."""
    n, size = emit.shape
    fwd, bwd = np.zeros((n, size)), np.ones((n, size))
    norm = lambda row: row / sum(float(v) for v in row)                        # noqa: E731 (sequential sum)
    fwd[0] = norm(emit[0])
    for t in range(1, n):
        m = trans[bins[t]]
        fwd[t] = norm(np.array([sum(fwd[t - 1, i] * m[i, j] for i in range(size)) * emit[t, j]
                                for j in range(size)]))
    for t in range(n - 2, -1, -1):
        m = trans[bins[t + 1]]
        eb = emit[t + 1] * bwd[t + 1]
        bwd[t] = norm(np.array([sum(m[i, j] * eb[j] for j in range(size)) for i in range(size)]))
    post = fwd * bwd
    return np.array([norm(row) for row in post])


def test_forward_backward_kernel_sums_in_line_order():
    rng = np.random.default_rng(8)
    transitions = rng.dirichlet(np.ones(2 * dist.MAX_JUMP + 2), size=9 * 13)
    prob, features = [], []
    for n, k in ((1, 3), (7, 2), (25, 6), (12, 11)):
        prob.append(rng.dirichlet(np.ones(k), size=n))
        f = np.zeros((n, dist.N_FIXATION_FEATURES), np.float32)
        f[:, 5], f[:, 6] = rng.normal(0, 0.4, n), rng.normal(0, 1.5, n)
        features.append(f)
    got = dist.forward_backward(prob, features, transitions, 0.5)
    for p, f, g in zip(prob, features, got):
        trans = dist.transition_matrices(transitions, p.shape[1])
        np.testing.assert_array_equal(g, _forward_backward_python(np.clip(p, 1e-9, 1.0) ** 0.5,
                                                                  dist.saccade_bins(f), trans))


@pytest.mark.parametrize("weights", [None, str(dist.ENSEMBLE_WEIGHTS)], ids=["small", "ensemble"])
def test_inference_forward_equals_the_module_forward_bit_for_bit(weights, simulated):
    members, voters = dist.load_ensemble(weights)
    prepared = dist.prepare_many(simulated[:12] + [(np.zeros((0, 2)), simulated[0][1], None, None)], voters)
    batches = [dist.collate(prepared[:6]), dist.collate(prepared[6:12]), dist.collate(prepared[2:3]),
               dist.collate(prepared[10:13])]                                  # padded, unpadded, one empty trial
    with torch.inference_mode():
        for batch in batches:
            for m in members:
                assert torch.equal(m.infer(batch), m(batch))


def test_inference_forward_equals_the_module_forward_on_gold(gold):
    members, voters = dist.load_ensemble(None)
    prepared = dist.prepare_many(gold, voters)
    with torch.inference_mode():
        for j in range(0, len(prepared), 8):
            batch = dist.collate(prepared[j:j + 8])
            assert torch.equal(members[0].infer(batch), members[0](batch))


def test_sinusoid_table_rows_are_the_encoding_of_their_position():
    rng = np.random.default_rng(2)
    for d in (32, 64):
        position = torch.from_numpy(rng.integers(0, 3000, size=(5, 170)))
        table = dist.network._sinusoid_table(int(position.max()) + 1, d)
        assert len(table) >= 3000 and len(table) & (len(table) - 1) == 0
        assert torch.equal(table[position], dist.network._sinusoid(position, d))


def test_collate_pads_every_field_like_a_per_trial_copy(simulated):
    _members, voters = dist.load_ensemble(None)
    prepared = dist.prepare_many(simulated[:5], voters, [np.arange(len(t[0])) % 3 - 1 for t in simulated[:5]])
    pieces = [(*prepared[0][:4], 0), (*prepared[1][:4], 7), prepared[2], (*prepared[3][:3], None), prepared[4]]
    batch = dist.collate(pieces)
    f_max, l_max, m = max(len(p[0]) for p in pieces), max(len(p[1]) for p in pieces), len(voters)
    dtypes = (torch.float32, torch.bool, torch.float32, torch.bool, torch.float32, torch.int64, torch.int64)
    assert tuple(f.dtype for f in (batch.fixation_features, batch.fixation_mask, batch.line_features,
                                   batch.line_mask, batch.votes, batch.position, batch.target)) == dtypes
    for i, piece in enumerate(pieces):
        fix, lines, votes, target = piece[:4]
        n, k = len(fix), len(lines)
        fx = np.zeros((f_max, dist.N_FIXATION_FEATURES), np.float32)
        fx[:n] = fix
        np.testing.assert_array_equal(batch.fixation_features[i].numpy(), fx)
        assert batch.fixation_mask[i].tolist() == [True] * n + [False] * (f_max - n)
        lf = np.zeros((l_max, dist.N_LINE_FEATURES), np.float32)
        lf[:k] = lines
        np.testing.assert_array_equal(batch.line_features[i].numpy(), lf)
        assert batch.line_mask[i].tolist() == [True] * k + [False] * (l_max - k)
        one_hot = np.zeros((f_max, l_max, m), np.float32)
        for f in range(n):
            for j in range(m):
                one_hot[f, min(max(votes[f, j], 0), k - 1), j] = 1.0
        np.testing.assert_array_equal(batch.votes[i].numpy(), one_hot)
        start = piece[4] if len(piece) > 4 else 0
        assert batch.position[i, :n].tolist() == list(range(start, start + n))
        want = [-100] * f_max if target is None else list(target) + [-100] * (f_max - n)
        assert batch.target[i].tolist() == want


def test_group_median_is_numpys_median_of_each_group():
    rng = np.random.default_rng(11)
    for case in range(200):
        n, n_groups = int(rng.integers(0, 60)), int(rng.integers(1, 9))
        values = rng.integers(-3, 4, n).astype(float) * (0.5 if case % 2 else 1e-3)   # many ties
        if n and case % 3 == 0:
            values[rng.integers(0, n)] = -0.0
        groups = rng.integers(0, n_groups, n)                                              # unsorted
        got = dist.inputs._group_median(values, groups, n_groups)
        want = np.array([np.median(values[groups == g]) if (groups == g).any() else np.nan
                         for g in range(n_groups)])
        np.testing.assert_array_equal(got, want)
        np.testing.assert_array_equal(np.signbit(got), np.signbit(_stable_group_median(values, groups, n_groups)))


def _stable_group_median(values, groups, n_groups):
    """The lexsort median used before the compiled one (a zero's sign follows the stable sorted order)."""
    order = np.lexsort((values, groups))
    v, g = values[order], groups[order]
    count = np.bincount(g, minlength=n_groups)
    start = np.concatenate([[0], np.cumsum(count)[:-1]])
    lo, hi = start + np.maximum(count - 1, 0) // 2, start + count // 2
    v = np.append(v, np.nan)
    return np.where(count > 0, (v[np.minimum(lo, len(v) - 1)] + v[np.minimum(hi, len(v) - 1)]) / 2, np.nan)
