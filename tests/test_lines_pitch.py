"""Pixel thresholds that scale with the line pitch, and slice on readings that leave lines out.

Carr et al.'s thresholds (slice 192/32/32/90, chain 192/32, merge 32 and 20, regress/stretch offsets ±50,
compare 512 px) were set for their 64-px line pitch; readgaze's defaults are those numbers times
``pitch / 64`` (the gold-accuracy tests in ``test_lines_gold.py`` show they are unchanged on Carr's data).
"""

from __future__ import annotations

import numpy as np
import pytest

from readgaze.lines import assign_trial
from readgaze.lines._common import pitch_scale
from readgaze.simulate import simulate_line_trials

# Carr et al.'s published px values, passed explicitly (an explicit number is px, never scaled).
CARR_PX = {"slice": {"x_thresh": 192.0, "y_thresh": 32.0, "w_thresh": 32.0, "n_thresh": 90.0},
           "chain": {"x_thresh": 192.0, "y_thresh": 32.0},
           "merge": {"y_thresh": 32.0, "error_thresh": 20.0},
           "regress": {"offset_bounds": (-50.0, 50.0), "sd_bounds": (1.0, 20.0)},
           "stretch": {"offset_bounds": (-50.0, 50.0)},
           "compare": {"x_thresh": 512.0}}


def _trials(pitch: float, seed: int, noise: float = 0.2, n: int = 12, **kw):
    """Monospace 5-8-line trials; drift relative to the pitch: noise SD and a constant 0.3-pitch offset."""
    args = dict(n_lines=(5, 8), line_pitch_px=pitch, char_width_px=pitch / 6, proportional_probability=0.0,
                long_trial_probability=0.0, noise_px=noise * pitch, offset_px=0.3 * pitch, slope=0.0, shift=0.0,
                p_within=0.0, p_between=0.0, off_text=False)
    return simulate_line_trials(n, seed=seed, **(args | kw))


def _accuracy(trials, method: str, keep=None, **params) -> float:
    """Pooled accuracy in % over fixations aimed at a line (``keep(trial)`` selects fixations)."""
    right = total = 0
    for t in trials:
        sel = (t.true_line >= 0) if keep is None else keep(t) & (t.true_line >= 0)
        got = assign_trial(t.xy[sel], t.line_y_px, method, word_xy=t.word_xy, word_line=t.word_line, **params)
        right += int((got == t.true_line[sel]).sum())
        total += int(sel.sum())
    return 100.0 * right / total


def test_pitch_scale_is_the_median_spacing_over_64_px():
    assert pitch_scale(100.0 + 64.0 * np.arange(5)) == 1.0
    assert pitch_scale(np.array([154.0, 268.0, 382.0, 496.0])) == pytest.approx(114 / 64)
    # a paragraph gap does not move the median
    assert pitch_scale(np.array([0.0, 114.0, 228.0, 456.0, 570.0])) == pytest.approx(114 / 64)
    assert pitch_scale(np.array([300.0])) == 1.0


@pytest.mark.parametrize("method", sorted(CARR_PX))
def test_defaults_are_carrs_numbers_on_a_64_px_layout(method):
    trials = _trials(64.0, seed=11, n=4, noise=0.15, slope=(-0.02, 0.02))
    for t in trials:
        kw = {"word_xy": t.word_xy, "word_line": t.word_line}
        np.testing.assert_array_equal(assign_trial(t.xy, t.line_y_px, method, **kw),
                                      assign_trial(t.xy, t.line_y_px, method, **kw, **CARR_PX[method]))


def test_scaled_defaults_work_on_a_114_px_layout_where_carrs_px_fail():
    # OneStop's pitch is about 114 px. Noise SD 0.2 pitch (23 px) and a 0.3-pitch offset: nearest line
    # is right on 87 % of fixations. Measured: slice 98.4 vs 47.5 %, chain 96.2 vs 90.2 %. (merge and stretch
    # keep Carr's px from 64 px up: their thresholds bound tracker error; see readgaze.lines.merge.)
    trials = _trials(114.0, seed=4)
    assert _accuracy(trials, "nearest") == pytest.approx(87.0, abs=0.1)
    got = {m: (_accuracy(trials, m), _accuracy(trials, m, **CARR_PX[m])) for m in ("slice", "chain")}
    for method, (scaled, _carr_px) in got.items():
        assert scaled >= 95.0, (method, got)
    assert got["slice"][1] < 60.0, got              # 32-px runs cut every line into pieces: it falls apart
    assert got["chain"][0] - got["chain"][1] >= 5.0, got     # shorter chains: it degrades towards nearest


def test_an_explicit_threshold_is_px_on_any_pitch():
    lines = np.array([100.0, 214.0, 328.0])
    steps = np.array([[100.0, 100.0], [130.0, 145.0], [160.0, 190.0]])   # 45-px steps: above 32, below 57
    assert assign_trial(steps, lines, "chain").tolist() == [0, 0, 0]         # one chain, mean y 145
    assert assign_trial(steps, lines, "chain", y_thresh=32.0).tolist() == [0, 0, 1]


@pytest.mark.parametrize("lines_read", ["first3", "last3", "middle"])
def test_slice_places_a_partial_reading_where_it_fits(lines_read):
    # a reader who reads 3 of 6-8 lines (skimming, searching): eyekit's edge phantoms push the reading down
    # (measured with edge_phantoms=True: first3 53.5 %, last3 0 %, middle 25.6 %; nearest line 100 %)
    trials = _trials(114.0, seed=7, noise=0.1, offset_px=0.0, n_lines=(6, 8))
    keep = {"first3": lambda t: t.true_line < 3, "last3": lambda t: t.true_line >= len(t.line_y_px) - 3,
            "middle": lambda t: (t.true_line >= 2) & (t.true_line <= 4)}[lines_read]
    assert _accuracy(trials, "slice", keep) == 100.0
    assert _accuracy(trials, "slice", keep, edge_phantoms=True) < 60.0
