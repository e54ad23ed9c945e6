"""Simulated line-assignment trials: layouts, gold labels, and drift that hurts nearest-line assignment."""

from __future__ import annotations

import numpy as np
import pytest

from readgaze.simulate import simulate_line_trials

CLEAN = dict(noise_px=0.0, slope=0.0, shift=0.0, offset_px=0.0, p_within=0.0, p_between=0.0,
             regression_scale=0.0, off_text=False, long_trial_probability=0.0, line_pitch_px=64.0)


def _nearest_accuracy(trials) -> float:
    """Pooled accuracy of assigning each fixation to the line whose midline is nearest in y."""
    hit = total = 0
    for t in trials:
        scored = t.true_line >= 0
        guess = np.abs(t.xy[:, 1, None] - t.line_y_px[None, :]).argmin(axis=1)
        hit += int((guess[scored] == t.true_line[scored]).sum())
        total += int(scored.sum())
    return hit / total


def test_deterministic_and_well_formed():
    a, b = simulate_line_trials(5, seed=7), simulate_line_trials(5, seed=7)
    for s, t in zip(a, b):
        assert np.array_equal(s.xy, t.xy) and np.array_equal(s.true_line, t.true_line)
    for t in a:
        n = len(t.xy)
        assert t.xy.shape == (n, 2) and t.true_line.shape == (n,) and t.duration_ms.shape == (n,)
        assert t.true_line.min() >= -1 and t.true_line.max() < t.line_y_px.size == t.layout.n_lines
        assert np.all(np.diff(t.line_y_px) > 0) and t.word_xy.shape == (t.layout.words.height, 2)
    assert not np.array_equal(a[0].xy, simulate_line_trials(1, seed=8)[0].xy)


def test_layouts_vary():
    trials = simulate_line_trials(30, seed=0)
    pitches = [t.layout.line_height_px for t in trials]
    assert min(pitches) < 60 and max(pitches) > 100
    assert len({t.layout.n_lines for t in trials}) >= 5
    long = simulate_line_trials(3, seed=0, long_trial_probability=1.0)
    assert all(15 <= t.layout.n_lines <= 30 for t in long) and max(len(t.xy) for t in long) > 200
    fixed = simulate_line_trials(3, seed=0, n_lines=4, line_pitch_px=50.0, long_trial_probability=0.0)
    assert all(t.layout.n_lines == 4 and t.layout.line_height_px == pytest.approx(50.0) for t in fixed)


def test_clean_trials_are_read_line_by_line():
    trials = simulate_line_trials(10, seed=1, **CLEAN)
    assert _nearest_accuracy(trials) == 1.0
    for t in trials:  # no regressions: lines are visited in order, each once
        assert np.all(np.diff(t.true_line) >= 0)


def test_off_text_fixations_have_no_gold_line():
    trials = simulate_line_trials(40, seed=2)
    share = np.mean(np.concatenate([t.true_line == -1 for t in trials]))
    assert 0.001 < share < 0.05


@pytest.mark.parametrize("factor, levels", [("noise_px", (0.0, 12.0, 30.0)), ("slope", (0.0, 0.03, 0.07)),
                                            ("shift", (0.0, 0.05, 0.12))])
def test_nearest_line_degrades_with_drift(factor, levels):
    acc = [_nearest_accuracy(simulate_line_trials(12, seed=3, **{**CLEAN, factor: v})) for v in levels]
    assert acc[0] == 1.0 and acc[0] > acc[1] > acc[2]
    assert acc[2] < 0.85


def test_between_line_regressions_go_back_to_earlier_lines():
    none = simulate_line_trials(10, seed=4, **CLEAN)
    many = simulate_line_trials(10, seed=4, **{**CLEAN, "p_between": 1.0})
    back = lambda trials: sum(int((np.diff(t.true_line) < 0).sum()) for t in trials)  # noqa: E731
    assert back(none) == 0 and back(many) >= 30
    assert _nearest_accuracy(many) == 1.0  # without drift, regressions alone do not fool nearest-line
