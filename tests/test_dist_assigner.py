"""The DIST-style learned line assigner: shapes, masks, no length limits, shipped weights, gold accuracy."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from models import dist
from models.dist import DISTAssigner, collate, prepare, trial_features


def _toy_trial(n_lines: int, n_fix: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    line_y = 100.0 + 40.0 * np.arange(n_lines)
    true = np.sort(rng.integers(0, n_lines, n_fix))
    x = rng.uniform(50, 900, n_fix)
    y = line_y[true] + rng.normal(0, 5, n_fix)
    return np.column_stack([x, y]), line_y, true


def test_features_put_each_line_one_pitch_apart():
    xy, line_y, true = _toy_trial(5, 30)
    fix, lines = trial_features(xy, line_y)
    assert fix.shape == (30, dist.N_FIXATION_FEATURES) and lines.shape == (5, dist.N_LINE_FEATURES)
    # y in pitches from the first midline, divided by (n_lines - 1): line k sits at k / 4
    np.testing.assert_allclose(lines[:, 0], np.arange(5) / 4)
    # the line-overlap feature is the true line when the fixation lies within half a pitch of it
    np.testing.assert_array_equal(np.round(fix[:, 2] * 4).astype(int), true)


def test_padded_lines_get_no_probability_and_no_length_limit():
    model = DISTAssigner(d_model=16, n_heads=2, n_layers=1, n_voters=0).eval()
    a = prepare(*_toy_trial(3, 20)[:2], voters=())
    b = prepare(*_toy_trial(24, 620, seed=1)[:2], voters=())       # more than DIST's 16 lines / 500 fixations
    batch = collate([a, b])
    logits = model(batch)
    assert logits.shape == (2, 620, 24)
    assert torch.isinf(logits[0, :, 3:]).all() and torch.isfinite(logits[0, :, :3]).all()
    assert torch.isfinite(logits[1]).all()


def test_fusion_goes_through_kernels_cross_attention(monkeypatch):
    calls = []
    real = dist.cross_attention

    def spy(*args, **kwargs):
        calls.append(args[0].shape)
        return real(*args, **kwargs)

    monkeypatch.setattr(dist, "cross_attention", spy)
    model = DISTAssigner(d_model=16, n_heads=2, n_layers=2, n_voters=0)
    model(collate([prepare(*_toy_trial(4, 12)[:2], voters=())]))
    assert calls == [torch.Size([1, 2, 12, 8])] * 4      # per layer: self-attention, then fixations -> lines


def test_votes_enter_as_one_hot_lines():
    xy, line_y, _ = _toy_trial(4, 10)
    fix, lines, votes, _ = prepare(xy, line_y, voters=("attach", "segment"))
    batch = collate([(fix, lines, votes, None)])
    assert batch.votes.shape == (1, 10, 4, 2)
    assert torch.equal(batch.votes.sum(dim=2), torch.ones(1, 10, 2))
    assert torch.equal(batch.votes[0].argmax(dim=1), torch.from_numpy(votes))


shipped = pytest.mark.skipif(not dist.WEIGHTS.is_file(), reason="models/weights/dist.pt not trained yet")


@shipped
def test_shipped_ensemble_is_small_and_loads_offline():
    assert dist.WEIGHTS.stat().st_size < 10e6
    members, voters = dist.load_ensemble()
    assert len(members) >= 2 and set(voters) <= set(__import__("readgaze.lines").lines.METHODS)


@shipped
def test_plugin_is_found_through_the_entry_point():
    from readgaze.lines import assign_trial

    xy, line_y, true = _toy_trial(5, 40, seed=3)
    got = assign_trial(xy, line_y, method="dist")
    assert got.dtype == np.int64 and (got == true).mean() > 0.9


@shipped
@pytest.mark.slow
def test_beats_slice_on_real_gold_labels(shared_data):
    """Never trained or tuned on these trials (simulation only); scored here against the gold labels."""
    from readgaze.lines.evaluate import evaluate

    table = evaluate(shared_data / "line_assignment", ["slice", "dist"])
    assert table["dist"]["pooled"] > table["slice"]["pooled"]
    assert table["dist"]["worst_trial"] > table["slice"]["worst_trial"]


@shipped
def test_frames_are_batched_and_equal_the_per_trial_assignment():
    import polars as pl

    from readgaze.lines import assign_lines, assign_trial
    from readgaze.simulate import simulate_line_trials

    sims = simulate_line_trials(3, seed=11, n_lines=(3, 5))
    fixations, words, expected = [], [], []
    for i, t in enumerate(sims):
        fixations.append(pl.DataFrame({"trial_id": f"t{i}", "fixation_index": list(range(len(t.xy))),
                                       "x_px": t.xy[:, 0], "y_px": t.xy[:, 1]}))
        words.append(t.layout.words.with_columns(pl.lit(f"t{i}").alias("text_id")))
        expected.append(assign_trial(t.xy, t.line_y_px, "dist", word_xy=t.word_xy, word_line=t.word_line))
    trials = pl.DataFrame({"trial_id": [f"t{i}" for i in range(3)], "text_id": [f"t{i}" for i in range(3)]})
    words_frame = pl.concat(words, how="diagonal_relaxed")
    out, qc = assign_lines(pl.concat(fixations), words_frame, trials, method="dist")
    got = out.sort("trial_id", "fixation_index")["line_index"].to_numpy()
    np.testing.assert_array_equal(got, np.concatenate(expected))
    assert any(r["reason"].endswith("by dist") for r in qc.records)


def _pooled(trials, lines) -> float:
    hit = sum(int((got[t.true_line >= 0] == t.true_line[t.true_line >= 0]).sum()) for t, got in zip(trials, lines))
    return 100.0 * hit / sum(int((t.true_line >= 0).sum()) for t in trials)


@shipped
@pytest.mark.parametrize("pitch", [40.0, 64.0, 114.0])
def test_at_least_as_good_as_the_vote_on_simulated_layouts(pitch):
    """Fresh simulated trials (seed 31, never trained on) at Carr's 64 px, a tight 40 px and OneStop's 114 px."""
    from readgaze.lines import assign_trials
    from readgaze.simulate import simulate_line_trials

    sims = simulate_line_trials(12, seed=31, line_pitch_px=pitch, child_probability=0.3)
    arrays = [(t.xy, t.line_y_px, t.word_xy, t.word_line) for t in sims]
    assert _pooled(sims, assign_trials(arrays, "dist")) >= _pooled(sims, assign_trials(arrays, "vote"))


def test_thread_count_is_one_by_default_and_set_by_the_environment(monkeypatch):
    before = torch.get_num_threads()
    monkeypatch.delenv(dist.THREADS_ENV, raising=False)
    with dist.torch_threads():
        assert torch.get_num_threads() == 1
    monkeypatch.setenv(dist.THREADS_ENV, "2")
    with dist.torch_threads():
        assert torch.get_num_threads() == 2
    assert torch.get_num_threads() == before
    monkeypatch.setenv(dist.THREADS_ENV, "many")
    with pytest.raises(Exception, match="READGAZE_TORCH_THREADS"):
        with dist.torch_threads():
            pass


def test_deferring_keeps_the_vote_where_the_ensemble_is_unsure():
    prob = np.array([[0.9, 0.1], [0.55, 0.45], [0.2, 0.8]])
    vote = np.array([1, 1, 0])
    assert dist.combine(prob, vote, None).tolist() == [0, 0, 1]
    assert dist.combine(prob, vote, 0.7).tolist() == [0, 1, 1]
