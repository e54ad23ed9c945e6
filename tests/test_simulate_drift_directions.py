"""The simulator's drift reproduces the published behaviour of classical line assignment.

Carr et al. (2022, Behavior Research Methods, doi:10.3758/s13428-021-01554-0), Fig. 5 / simulation
table (REFERENCE.md (c)): ``segment`` is immune to noise, slope and shift but fails with within- and
between-line regressions; ``attach`` (nearest line) fails with noise, slope and shift and is immune
to regressions; ``warp`` is immune to noise but hurt by between-line regressions.
"""

from __future__ import annotations

from readgaze import lines  # noqa: E402
from readgaze.simulate import simulate_line_trials

CLEAN = dict(noise_px=0.0, slope=0.0, shift=0.0, offset_px=0.0, p_within=0.0, p_between=0.0,
             regression_scale=0.0, off_text=False, long_trial_probability=0.0, line_pitch_px=64.0,
             n_lines=(8, 12))


def _accuracy(method: str, **phenomenon) -> float:
    hit = total = 0
    for t in simulate_line_trials(10, seed=11, **{**CLEAN, **phenomenon}):
        kw = {"word_xy": t.word_xy, "word_line": t.word_line} if method in ("warp", "compare") else {}
        guess = lines.assign_trial(t.xy, t.line_y_px, method=method, **kw)
        hit += int((guess == t.true_line).sum())
        total += len(guess)
    return hit / total


def test_segment_immune_to_noise_attach_is_not():
    assert _accuracy("segment", noise_px=30.0) == 1.0
    assert _accuracy("warp", noise_px=30.0) >= 0.99
    assert _accuracy("attach", noise_px=30.0) < 0.85


def test_segment_fails_with_between_line_regressions_attach_does_not():
    assert _accuracy("attach", p_between=0.6) == 1.0
    assert _accuracy("segment", p_between=0.6) < 0.85
    assert _accuracy("warp", p_between=0.6) < 0.9


def test_segment_fails_with_within_line_regressions():
    assert _accuracy("attach", p_within=0.5) == 1.0
    assert _accuracy("segment", p_within=0.5) < 0.85


def test_attach_fails_with_slope_and_shift_segment_does_not():
    assert _accuracy("attach", slope=0.06) < 0.75
    assert _accuracy("segment", slope=0.06) == 1.0
    assert _accuracy("attach", shift=0.15) < 0.75
    assert _accuracy("segment", shift=0.15) == 1.0
    assert _accuracy("slice", slope=0.06) >= 0.95
