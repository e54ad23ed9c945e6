"""What prep's per-trial line-assignment agreement (vote and slice) costs at OneStop's scale.

    OMP_NUM_THREADS=1 POLARS_MAX_THREADS=1 nice -n 10 python experiments/bench_agreement.py \\
        [--reports /tmp/readgaze_bench_prep/onestop_2400000_seed1129] [--rounds 2]

Reads OneStop-scale synthetic Data Viewer reports (``experiments/bench_prep.py`` writes them with the shared
generator, 2.4 M fixations), assigns lines with prep's default (``slice``, as ``readgaze prep`` does through
``assign_lines``), then times, alternating in one process (best of ``--rounds``, CPU and wall seconds):

A. ``assign_lines(method="slice")`` (what prep's default already pays);
B. ``line_agreement(..., chosen="slice")`` (the vote's cluster and warp, batched, plus the per-trial shares;
   slice's own agreement is 1 without running it again);
C. ``line_agreement(...)`` with both references run (what any assigner other than slice and vote pays).

Timings on a shared machine are noisy: compare the ratios within a run.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

FOLDER = Path("/tmp/readgaze_bench_prep/onestop_2400000_seed1129")


def timed(fn):
    wall, cpu = time.perf_counter(), time.process_time()
    out = fn()
    return out, time.perf_counter() - wall, time.process_time() - cpu


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--reports", type=Path, default=FOLDER)
    p.add_argument("--rounds", type=int, default=2)
    args = p.parse_args(argv)
    from readgaze.data_prep import sources
    from readgaze.lines import assign_lines
    from readgaze.lines.agreement import line_agreement

    loaded, wall, _ = timed(lambda: sources.load_onestop(args.reports / "fixations.csv", args.reports / "ia.csv",
                                                         None))
    fixations = loaded.fixations.lazy().collect()
    trials, words = loaded.trials.lazy().collect(), loaded.words.lazy().collect()
    print(f"loaded {fixations.height:,} fixations, {trials.height:,} trials in {wall:.0f} s", flush=True)
    assign_lines(fixations.head(5000), words, trials, method="vote")        # compile / warm up
    best, state = {}, {}
    steps = (("A slice assign_lines", lambda: assign_lines(fixations, words, trials, method="slice")[0]),
             ("B agreement, chosen slice", lambda: line_agreement(state["lined"], words, trials, chosen="slice")),
             ("C agreement, both references", lambda: line_agreement(state["lined"], words, trials)))
    for _ in range(args.rounds):
        for name, fn in steps:
            out, wall, cpu = timed(fn)
            if name.startswith("A"):
                state["lined"] = out
            best[name] = min(best.get(name, (9e9, 9e9)), (cpu, wall))
            print(f"  {name}: {cpu:.1f} s CPU, {wall:.1f} s wall", flush=True)
    print(f"\nbest of {args.rounds} ({fixations.height:,} fixations):")
    for name, (cpu, wall) in best.items():
        print(f"  {name:<32} {cpu:7.1f} s CPU {wall:7.1f} s wall")
    low = line_agreement(state["lined"], words, trials, chosen="slice")
    print(f"trials below 95 % agreement with the vote: {(low['line_agreement_vote'] < 0.95).sum():,} of {low.height:,}")


if __name__ == "__main__":
    main()
