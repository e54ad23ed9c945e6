"""The line-assignment simulation's beginning readers: more regressions, more between-line regressions, noisier."""

from __future__ import annotations

import numpy as np

from readgaze.simulate import simulate_line_trials


def _regressions_per_fixation(trials) -> float:
    """Share of saccades that go back to an earlier line or leftwards on the same line (by the gold line)."""
    back = total = 0
    for t in trials:
        line, x = t.true_line, t.xy[:, 0]
        ok = (line[1:] >= 0) & (line[:-1] >= 0)
        regress = (line[1:] < line[:-1]) | ((line[1:] == line[:-1]) & (np.diff(x) < -20))
        back += int((regress & ok).sum())
        total += int(ok.sum())
    return back / total


def test_child_trials_regress_more_and_default_trials_are_unchanged():
    adults = simulate_line_trials(20, seed=5)
    children = simulate_line_trials(20, seed=5, child_probability=1.0)
    assert _regressions_per_fixation(children) > 1.3 * _regressions_per_fixation(adults)
    assert np.mean([t.drift.p_between for t in children]) > np.mean([t.drift.p_between for t in adults])
    same = simulate_line_trials(3, seed=5, child_probability=0.0)
    for a, b in zip(adults[:3], same):
        np.testing.assert_array_equal(a.xy, b.xy)
