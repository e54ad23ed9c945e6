"""dist's vote guard: no silent whole-line shifts, and never more than 1 point below the vote on any trial.

The kept-back failure (issue 27): drift upward rising from 0.3 pitch to a full pitch and receding to 0.5; dist's
decode (one trend slope per trial) put two and a half lines one line too high where the vote was right. These
tests simulate that kind of trial and every stress condition of ``readgaze.simulate.stress``.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from readgaze.lines import assign_trials
from readgaze.simulate.stress import FAILURE_KIND, STRESS_CONDITIONS, stress_trials

dist = pytest.importorskip("readgaze.models.dist")


def _arrays(trials):
    return [(t.xy, t.line_y_px, t.word_xy, t.word_line) for t in trials]


def _accuracy(trial, lines) -> float:
    keep = trial.true_line >= 0
    return 100.0 * float((lines[keep] == trial.true_line[keep]).mean())


def _shifted_lines(trial, lines, min_fixations: int = 5) -> list[int]:
    """Gold lines with at least ``min_fixations`` fixations, most of which went to one and the same other line."""
    out = []
    for line in np.unique(trial.true_line[trial.true_line >= 0]):
        got = lines[trial.true_line == line]
        if len(got) >= min_fixations:
            values, counts = np.unique(got[got != line], return_counts=True)
            if len(counts) and counts.max() > len(got) / 2:
                out.append(int(line))
    return out


@pytest.fixture(scope="module")
def failure_kind():
    """The simulated trials, and the vote's, shipped dist's and the landed decode's lines (the distilled file with
    the trend pass, unguarded: dist as it shifted the kept-back trial) and the landed file under the guard."""
    trials = stress_trials("failure kind (up 0.3 -> 1.05 -> 0.5 pitch)", 20, seed=101)
    arrays = _arrays(trials)
    landed = str(dist.SMALL_WEIGHTS)
    return (trials, assign_trials(arrays, "vote"), dist.assign_trials(arrays),
            dist.assign_trials(arrays, weights=landed, guarded=False), dist.assign_trials(arrays, weights=landed))


def test_failure_kind_is_simulated_as_reported():
    """Median offset per line: 0.3 pitch up on line 1, about a full pitch on lines 5-6, about 0.5 by line 10."""
    (t,) = stress_trials("failure kind (up 0.3 -> 1.05 -> 0.5 pitch)", 1, seed=101)
    assert FAILURE_KIND["n_lines"] == len(t.line_y_px) == 10 and np.diff(t.line_y_px)[0] == 64.0
    keep = t.true_line >= 0
    off = [np.median((t.xy[keep, 1] - t.line_y_px[t.true_line[keep]])[t.true_line[keep] == k]) / 64 for k in range(10)]
    assert -0.5 < off[0] < -0.2 and min(off[4:6]) < -0.95 and -0.7 < off[9] < -0.4


def test_failure_kind_gets_no_whole_line_shift_where_the_vote_has_none(failure_kind):
    trials, vote, shipped, landed, landed_guarded = failure_kind
    clean = [k for k, t in enumerate(trials) if not _shifted_lines(t, vote[k])]
    assert len(clean) >= 10
    # the landed decode alone (the bug): whole lines shifted on trials the vote gets right
    assert sum(bool(_shifted_lines(trials[k], landed[k])) for k in clean) >= 1
    for k in clean:          # the guard keeps them, with the landed weights too
        assert _shifted_lines(trials[k], shipped[k]) == [], f"trial {k}: dist shifted whole lines"
        assert _shifted_lines(trials[k], landed_guarded[k]) == [], f"trial {k}: the guard let a shift through"


def test_guard_flags_the_trials_where_dist_parted_from_the_vote(failure_kind):
    from readgaze.lines import assign_trials_reported

    trials, vote, _, landed, _ = failure_kind
    lines, flags = assign_trials_reported(_arrays(trials), "dist", weights=str(dist.SMALL_WEIGHTS))
    parted = np.array([bool(_shifted_lines(t, u)) and not _shifted_lines(t, v)
                       for t, u, v in zip(trials, landed, vote)])
    assert parted.any() and flags is not None and flags.flagged[parted].all() and "vote" in flags.reason
    # the shipped file parts from the vote where the vote shifts lines (it follows the drift): flagged too
    _, shipped_flags = assign_trials_reported(_arrays(trials), "dist")
    vote_shifted = np.array([bool(_shifted_lines(t, v)) for t, v in zip(trials, vote)])
    assert shipped_flags.flagged[vote_shifted].mean() > 0.5


@pytest.mark.parametrize("condition", list(STRESS_CONDITIONS))
def test_never_more_than_one_point_below_the_vote_on_stress_trials(condition):
    trials = stress_trials(condition, 6, seed=700 + list(STRESS_CONDITIONS).index(condition))
    arrays = _arrays(trials)
    for t, d, v in zip(trials, dist.assign_trials(arrays), assign_trials(arrays, "vote")):
        assert _accuracy(t, d) >= _accuracy(t, v) - 1.0


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(1, 400), min_size=1, max_size=6), st.integers(0, 2**31 - 1),
       st.integers(1, 6), st.floats(0.0, 5.0))
def test_guard_departs_on_at_most_one_percent_in_short_confident_runs(sizes, seed, max_run, min_margin):
    rng = np.random.default_rng(seed)
    sizes = np.array(sizes)
    n = int(sizes.sum())
    vote = rng.integers(0, 5, n)
    mine = np.where(rng.random(n) < rng.random(), rng.integers(0, 5, n), vote)
    margin = rng.exponential(3.0, n)
    lines, report = dist.guard(mine, vote, margin, sizes, max_run=max_run, min_margin=min_margin)
    trial = np.repeat(np.arange(len(sizes)), sizes)
    kept = lines != vote
    assert ((lines == vote) | (lines == mine)).all()
    assert (np.bincount(trial[kept], minlength=len(sizes)) <= np.floor(0.01 * sizes)).all()
    assert (margin[kept] >= min_margin).all()
    assert (report.kept == np.bincount(trial[kept], minlength=len(sizes))).all()
    assert (report.proposed == np.bincount(trial[mine != vote], minlength=len(sizes))).all()
    for k in np.flatnonzero(kept):                     # a kept departure lies in a run of at most max_run
        run = mine != vote
        lo, hi = k, k
        while lo > 0 and run[lo - 1] and trial[lo - 1] == trial[k]:
            lo -= 1
        while hi + 1 < n and run[hi + 1] and trial[hi + 1] == trial[k]:
            hi += 1
        assert hi - lo + 1 <= max_run
