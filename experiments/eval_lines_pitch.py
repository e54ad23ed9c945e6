"""Should ``merge`` and ``stretch`` scale their pixel thresholds with the line pitch? Evidence on simulated trials.

    python experiments/eval_lines_pitch.py --trials 40

For gold-labelled simulated trials at line pitches 40, 64, 90 and 120 px (readgaze.simulate, Carr et al.'s drift
model; default drift = relative to the pitch, and a "close to the lines" condition with 0.1-pitch noise and no
slope/shift/offset, and tracker-like drift in fixed px: noise SD 5-15 px, offset ±30 px, whatever the pitch),
prints the pooled accuracy of each method with Carr et al.'s fixed pixel values and with the
values scaled by pitch / 64 px, plus ``slice`` for reference.
"""

from __future__ import annotations

import argparse

import numpy as np

from readgaze.lines import assign_trial
from readgaze.simulate import simulate_line_trials

VARIANTS = {
    "merge (Carr px: y 32, error 20)": lambda t: assign_trial(t.xy, t.line_y_px, "merge", y_thresh=32.0,
                                                              error_thresh=20.0),
    "merge (scaled by pitch / 64)": lambda t: assign_trial(t.xy, t.line_y_px, "merge",
                                                           y_thresh=32.0 * _p(t), error_thresh=20.0 * _p(t)),
    "stretch (Carr px: offset ±50)": lambda t: assign_trial(t.xy, t.line_y_px, "stretch", offset_bounds=(-50.0, 50.0)),
    "stretch (scaled by pitch / 64)": lambda t: assign_trial(t.xy, t.line_y_px, "stretch",
                                                             offset_bounds=(-50.0 * _p(t), 50.0 * _p(t))),
    "merge (capped: min(1, pitch / 64))": lambda t: assign_trial(t.xy, t.line_y_px, "merge", y_thresh=32.0 * _c(t),
                                                                 error_thresh=20.0 * _c(t)),
    "stretch (capped: min(1, pitch / 64))": lambda t: assign_trial(t.xy, t.line_y_px, "stretch",
                                                                   offset_bounds=(-50.0 * _c(t), 50.0 * _c(t))),
    "slice (default)": lambda t: assign_trial(t.xy, t.line_y_px, "slice"),
}


def _c(t) -> float:
    return min(1.0, _p(t))


def _p(t) -> float:
    return float(np.median(np.diff(t.line_y_px))) / 64.0 if len(t.line_y_px) > 1 else 1.0


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--trials", type=int, default=40)
    p.add_argument("--seed", type=int, default=300)
    args = p.parse_args(argv)
    print("| drift | pitch px | method | pooled % | worst trial % |\n|---|---|---|---|---|")
    for drift, extra in (("pitch-relative", {}),
                         ("close to lines", {"slope": 0.0, "shift": 0.0, "offset_px": 0.0}),
                         ("fixed px (noise 5-15, offset ±30)", {"noise_px": (5.0, 15.0), "offset_px": (-30.0, 30.0)})):
        for k, pitch in enumerate((40.0, 64.0, 90.0, 120.0)):
            params = dict(extra)
            if drift == "close to lines":
                params["noise_px"] = 0.1 * pitch
            trials = simulate_line_trials(args.trials, seed=args.seed + k, line_pitch_px=pitch, n_lines=(3, 10),
                                          **params)
            for name, fn in VARIANTS.items():
                hit = n = 0
                worst = 100.0
                for t in trials:
                    keep = t.true_line >= 0
                    h = int((fn(t)[keep] == t.true_line[keep]).sum())
                    hit, n = hit + h, n + int(keep.sum())
                    worst = min(worst, 100.0 * h / max(int(keep.sum()), 1))
                print(f"| {drift} | {pitch:g} | {name} | {100 * hit / n:.2f} | {worst:.1f} |", flush=True)


if __name__ == "__main__":
    main()
