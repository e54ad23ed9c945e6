"""Stress conditions for line assigners: named sets of simulated trials, each holding one thing real readers or
trackers do that breaks some assigner, plus the kind of trial on which ``dist`` once shifted whole lines.

Every condition is a dict of :func:`readgaze.simulate.simulate_line_trials` arguments; :func:`stress_trials`
simulates one. ``experiments/stress_lines.py`` prints each method's pooled and worst-trial accuracy per
condition, and ``tests/test_dist_guard.py`` checks on them that ``dist`` never falls more than 1 point below
the vote.

The failure kind (:data:`FAILURE_KIND`): 10 lines at 64 px pitch, monospace, drift upward that is 0.3 pitch at
the start, grows to a full pitch (1.05) in the middle of the trial (lines 5-6) and recedes to 0.5 pitch by the
end. A trend with one slope per trial cannot follow it; slice, whose runs follow the drift line by line, can.
"""

from __future__ import annotations

from readgaze.simulate.line_events import LineEvents
from readgaze.simulate.lines import LineTrial, simulate_line_trials

FAILURE_KIND = dict(n_lines=10, line_pitch_px=64.0, char_width_px=16.0, chars_per_line=(70, 80),
                    proportional_probability=0.0, long_trial_probability=0.0, noise_px=(2.0, 8.0),
                    slope=(-0.004, 0.004), shift=0.0, offset_px=0.0,
                    wave_knots=((0.0, -0.3), (0.45, -1.05), (0.6, -1.05), (1.0, -0.5)))

STRESS_CONDITIONS: dict[str, dict] = {
    "defaults (the training mix)": dict(child_probability=0.3),
    "failure kind (up 0.3 -> 1.05 -> 0.5 pitch)": FAILURE_KIND,
    "rising-receding drift (0.5-1.2 pitch)": dict(wave_pitch=(0.5, 1.2)),
    "ends drift apart (tilt 0.2-0.6 pitch)": dict(tilt_pitch=(0.2, 0.6)),
    "skipped lines (15 % of lines)": dict(events=LineEvents(p_skip_line=0.15)),
    "re-read lines (30 % of lines)": dict(events=LineEvents(p_reread_line=0.3)),
    "end-of-trial look-backs (3)": dict(events=LineEvents(lookbacks=3)),
    "return-sweep undershoot (x and y)": dict(undershoot_probability=0.9, events=LineEvents(p_undershoot=0.7)),
    "layouts: 5-30 lines, 40-120 px, proportional": dict(n_lines=(5, 14), long_trial_probability=0.3,
                                                         line_pitch_px=(40.0, 120.0), proportional_probability=1.0),
    "all at once": dict(child_probability=0.3, wave_pitch=(0.3, 0.9), tilt_pitch=(0.1, 0.3),
                        undershoot_probability=0.6, long_trial_probability=0.2,
                        events=LineEvents(p_skip_line=0.05, p_reread_line=0.1, lookbacks=2, p_undershoot=0.3)),
}


def stress_trials(condition: str, n_trials: int, seed: int = 0) -> list[LineTrial]:
    """``n_trials`` simulated trials of one :data:`STRESS_CONDITIONS` entry (deterministic in ``seed``).

    Raises
    ------
    ConfigError
        Unknown condition name.
    """
    if condition not in STRESS_CONDITIONS:
        from readgaze.errors import ConfigError

        raise ConfigError(f"stress condition: got {condition!r}, expected one of {sorted(STRESS_CONDITIONS)}")
    return simulate_line_trials(n_trials, seed=seed, **STRESS_CONDITIONS[condition])
