"""The stress table: each line assigner's pooled and worst-trial accuracy on every simulated stress condition.

    OMP_NUM_THREADS=1 nice -n 10 python experiments/stress_lines.py --trials 40 [--ensemble] [--json out.json]

Conditions: :data:`readgaze.simulate.stress.STRESS_CONDITIONS` (drift that rises and recedes, drift that differs
between a line's ends, skipped lines, re-read lines, end-of-trial look-backs, return-sweep undershoot, layouts
of 5-30 lines at 40-120 px pitch in a proportional font, the failure kind, all at once). Condition ``i`` uses
seed ``--seed + i`` (default 100: never used to train dist (seeds 1-3) or to choose its decoding and guard
(``experiments/select_dist.py``: seeds 500+)).

Rows: the classical methods slice, cluster, warp, chain, their vote (slice + cluster + warp), the per-trial
oracle (on each trial the best of attach, chain, cluster, segment, slice, split and warp), and every dist
choice: for the shipped default (``dist``: ``dist_stress.pt``, its decode without the trend pass, the vote guard),
the landed one (``dist_small.pt``, with the trend pass) and, with ``--ensemble`` / ``--weights``, the 4-member
ensemble or any other file: the file's decode and the alternative (trend pass on or off), unguarded and guarded.
``trials < vote - 1`` counts trials on which the row is more than 1 point below the vote (the guard's bound
makes it 0 for every guarded row).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from readgaze.lines import assign_trials
from readgaze.simulate.stress import STRESS_CONDITIONS, stress_trials

CLASSICAL_ROWS = ("slice", "cluster", "warp", "chain", "vote")
ORACLE_OF = ("attach", "chain", "cluster", "segment", "slice", "split", "warp")


def dist_rows(arrays: list[tuple], ensemble: bool, extra: list[str]) -> dict[str, list[np.ndarray]]:
    """Every dist choice's lines on ``arrays``: per weights file, its own decode and the alternative (the trend
    pass off when the file has it, on at power 1 when not), each unguarded and guarded (the file's guard)."""
    from readgaze.models.dist import ENSEMBLE_WEIGHTS, SMALL_WEIGHTS, guard_lines, guard_params, load_ensemble
    from readgaze.models.dist import posteriors as dist_posteriors
    from readgaze.models.dist.decoding import _decoder

    out = {}
    files = [("dist", None), ("dist landed (dist_small.pt)", str(SMALL_WEIGHTS)),
             *([("dist ensemble (dist.pt)", str(ENSEMBLE_WEIGHTS))] if ensemble else []),
             *((f"dist {Path(f).name}", f) for f in extra)]
    for label, weights in files:
        _, voters = load_ensemble(weights)
        own = _decoder(weights)
        other = ((" no trend", {**own, "trend_power": 0.0}) if own["trend_power"] > 0 else
                 (" + trend pass", {**own, "trend_power": 1.0}))
        for decode_label, decoder in (("", own), other):
            prepared, post = dist_posteriors(arrays, weights=weights, decoder=decoder)
            lines = [p.argmax(axis=1) for p in post]
            vote = [t[2][:, voters.index("vote")] for t in prepared]
            out[f"{label}{decode_label} unguarded"] = lines
            out[f"{label}{decode_label}"] = guard_lines(lines, post, vote, **guard_params(weights))[0]
    return out


def score(trials, lines: list[np.ndarray]) -> tuple[float, np.ndarray]:
    """Pooled % and per-trial % on the fixations with a gold line."""
    hit = np.array([int((p[t.true_line >= 0] == t.true_line[t.true_line >= 0]).sum()) for t, p in zip(trials, lines)])
    n = np.array([int((t.true_line >= 0).sum()) for t in trials])
    return 100.0 * hit.sum() / max(n.sum(), 1), 100.0 * hit / np.maximum(n, 1)


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--trials", type=int, default=40, help="trials per condition")
    p.add_argument("--seed", type=int, default=100)
    p.add_argument("--ensemble", action="store_true", help="also the 4-member ensemble's rows (4x slower)")
    p.add_argument("--weights", action="append", default=[], help="rows for another weights file (repeatable)")
    p.add_argument("--json", type=Path, default=None)
    args = p.parse_args(argv)
    table = {}
    for i, condition in enumerate(STRESS_CONDITIONS):
        trials = stress_trials(condition, args.trials, seed=args.seed + i)
        arrays = [(t.xy, t.line_y_px, t.word_xy, t.word_line) for t in trials]
        lines = {m: assign_trials(arrays, m) for m in dict.fromkeys((*ORACLE_OF, *CLASSICAL_ROWS))}
        per = {m: score(trials, v) for m, v in lines.items()}
        best = np.max([per[m][1] for m in ORACLE_OF], axis=0)
        n = np.array([int((t.true_line >= 0).sum()) for t in trials])
        rows = {m: per[m] for m in CLASSICAL_ROWS}
        rows["oracle"] = (float((best * n).sum() / n.sum()), best)
        rows |= {m: score(trials, v) for m, v in dist_rows(arrays, args.ensemble, args.weights).items()}
        vote = per["vote"][1]
        table[condition] = {m: {"pooled": pooled, "worst": float(acc.min()),
                                "below_vote": int((acc < vote - 1.0 - 1e-9).sum())}
                            for m, (pooled, acc) in rows.items()}
        print(f"\n### {condition} ({args.trials} trials, seed {args.seed + i}, "
              f"{int(n.sum())} scored fixations)\n")
        print("| method | pooled % | worst trial % | trials < vote - 1 |\n|---|---|---|---|")
        for m, r in table[condition].items():
            print(f"| {m} | {r['pooled']:.2f} | {r['worst']:.1f} | {r['below_vote']} |", flush=True)
    methods = list(next(iter(table.values())))
    print("\n### Summary: pooled % / worst trial % per condition\n")
    print("| condition | " + " | ".join(methods) + " |\n|---|" + "---|" * len(methods))
    for condition, rows in table.items():
        print(f"| {condition} | " + " | ".join(f"{rows[m]['pooled']:.1f} / {rows[m]['worst']:.0f}" for m in methods)
              + " |")
    if args.json is not None:
        args.json.write_text(json.dumps(table, indent=1) + "\n")


if __name__ == "__main__":
    main()
