"""Score line assigners on simulated layouts unlike the gold folder's (other pitch, proportional font, long trials).

    python experiments/eval_lines_sim.py --trials 60

Each condition is a fresh simulated set (seeds never used in training: training used seeds 1 and 2). Prints pooled
accuracy and the worst trial per method, for slice with Carr's pixel thresholds (the published method), readgaze's
slice (thresholds scaled to the trial's pitch), warp, cluster (k-means++), the vote of slice + cluster + warp, and
the shipped DIST-style ensemble.
"""

from __future__ import annotations

import argparse
import time

from readgaze.lines import assign_trial
from readgaze.simulate import simulate_line_trials

CONDITIONS = {
    "pitch 100-120 px, monospace": dict(line_pitch_px=(100.0, 120.0), proportional_probability=0.0),
    "pitch 40-50 px, proportional": dict(line_pitch_px=(40.0, 50.0), proportional_probability=1.0),
    "long trials (15-30 lines)": dict(long_trial_probability=1.0),
    "Carr-like (64 px, monospace, 8-12 lines)": dict(line_pitch_px=64.0, char_width_px=16.0, n_lines=(8, 12),
                                                     proportional_probability=0.0),
    "children's reading (more regressions and noise)": dict(child_probability=1.0),
}


METHODS = {
    # Carr's pixel thresholds and eyekit's edge phantoms: the published slice
    "slice (Carr px)": lambda t: assign_trial(t.xy, t.line_y_px, "slice", x_thresh=192.0, y_thresh=32.0,
                                              w_thresh=32.0, n_thresh=90.0, edge_phantoms=True),
    # readgaze's default: thresholds scaled by pitch / 64, no empty edge lines
    "slice (readgaze)": lambda t: assign_trial(t.xy, t.line_y_px, "slice"),
    "warp": lambda t: assign_trial(t.xy, t.line_y_px, "warp", word_xy=t.word_xy, word_line=t.word_line),
    "cluster": lambda t: assign_trial(t.xy, t.line_y_px, "cluster"),
    "vote": lambda t: assign_trial(t.xy, t.line_y_px, "vote", word_xy=t.word_xy, word_line=t.word_line),
    "dist": lambda t: assign_trial(t.xy, t.line_y_px, "dist", word_xy=t.word_xy, word_line=t.word_line),
}


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--trials", type=int, default=60)
    p.add_argument("--seed", type=int, default=100)
    p.add_argument("--weights", default=None, help="also score dist with this ensemble file (e.g. an older one)")
    args = p.parse_args(argv)
    if args.weights:
        from readgaze.models.dist import assign_trial as dist_trial
        METHODS[f"dist ({args.weights})"] = lambda t: dist_trial(t.xy, t.line_y_px, word_xy=t.word_xy,
                                                                 word_line=t.word_line, weights=args.weights)
    print("| condition | method | pooled % | worst trial % | ms/trial |\n|---|---|---|---|---|")
    for i, (name, params) in enumerate(CONDITIONS.items()):
        trials = simulate_line_trials(args.trials, seed=args.seed + i, **params)
        for method, fn in METHODS.items():
            hit = n = 0
            worst, t0 = 100.0, time.perf_counter()
            for t in trials:
                got, keep = fn(t), t.true_line >= 0
                h = int((got[keep] == t.true_line[keep]).sum())
                hit, n = hit + h, n + int(keep.sum())
                worst = min(worst, 100.0 * h / max(int(keep.sum()), 1))
            ms = 1000 * (time.perf_counter() - t0) / len(trials)
            print(f"| {name} | {method} | {100 * hit / n:.2f} | {worst:.1f} | {ms:.0f} |", flush=True)


if __name__ == "__main__":
    main()
