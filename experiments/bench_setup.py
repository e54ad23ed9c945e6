"""Benchmark: ``ReadingDataModule.setup`` per benchmark unit, from the shared array cache against building it.

What one ``readgaze bench`` unit pays before training: ``ReadingDataModule(path, task="reading_goal", fold=k,
text_encoder="tiny").setup("fit")`` on a prepared dataset (OneStop's scale: ``../shared/bench/onestop_scale.py
--fixations 2400000`` then ``readgaze prep onestop``; this script does neither, give it the dataset folder). Each
measurement is a fresh process (wall of ``setup`` only, after the imports; peak RSS of the process from ``wait4``,
imports included), alternating A B C A B C ... (``--rounds``):

  A. the yardstick: no array cache (``READGAZE_ARRAY_CACHE=0``): every unit builds the task's arrays, as readgaze
     did before the cache (same code path, in memory);
  B. a unit from the cache, on a fold whose scalers another unit already fit (the common case: every model, seed
     and grid point of a fold after the first);
  C. a unit from the cache, on a fold seen for the first time (it fits that fold's scalers and caches them).

The cache is built once first (the one unit per machine, dataset, task and text settings that pays for everyone;
its time and peak are printed too). Prints the medians and the ratio A / B.

Usage::

    python experiments/bench_setup.py /tmp/os_scale/dataset --rounds 3

Measured 2026-12-02 on the 2-core machine shared with six other agents (load average 7-9: wall times are noisy and
several times an idle machine's), OneStop scale (``onestop_scale.py --fixations 2400000`` + ``readgaze prep
onestop``: 23,860 trials, of which 19,911 reading_goal trials; 2.4 M fixations, 2.6 M word rows), ``--rounds 2``::

    cache build (first unit on this machine): 44.2 s, peak 2.90 GiB
    A no cache             setup  43.26 s   peak  2.89 GiB
    B cache, fold seen     setup   0.51 s   peak  0.63 GiB
    C cache, new fold      setup   5.13 s   peak  1.22 GiB
    A / B: 85x faster, 4.6x less peak memory per unit

and the datamodule before the cache (git 397e120, one fresh process, same load): 109.5 s, peak 4.43 GiB (the issue
measured 60.5 s and 4.6 GiB). B's 0.63 GiB is mostly the imports (torch, Lightning). ``readgaze bench`` pays C in
the driver, once per fold, before the units start (so units on the driver's machine are all B).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

CHILD = r"""
import json, os, sys, time
from readgaze.models.data import ReadingDataModule
datamodule = ReadingDataModule(sys.argv[1], task="reading_goal", fold=int(sys.argv[2]), text_encoder="tiny")
start = time.perf_counter()
datamodule.setup("fit")
seconds = time.perf_counter() - start
print(json.dumps({"seconds": seconds, "trials": datamodule.trials.height,
                  "train": len(datamodule._datasets["train"])}))
"""


def measure(dataset: str, fold: int, env: dict) -> dict:
    """One fresh process: setup's wall seconds and the process's peak RSS (GiB)."""
    process = subprocess.Popen([sys.executable, "-c", CHILD, dataset, str(fold)], env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    _, status, usage = os.wait4(process.pid, 0)
    output = process.stdout.read()
    if status != 0:
        raise SystemExit(f"setup failed (status {status})")
    result = json.loads(output.strip().splitlines()[-1])
    result["peak_gib"] = usage.ru_maxrss / 2**20  # KiB on Linux
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("dataset", help="a prepared dataset folder (OneStop scale for the issue's numbers)")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    cache = Path(tempfile.mkdtemp(prefix="readgaze-bench-setup-"))
    base = {**os.environ, "READGAZE_CACHE_DIR": str(cache), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    try:
        build = measure(args.dataset, 0, base)
        print(f"cache build (first unit on this machine): {build['seconds']:.1f} s, peak {build['peak_gib']:.2f} GiB; "
              f"{build['trials']:,} trials, {build['train']:,} training", flush=True)
        rows = {"A no cache": [], "B cache, fold seen": [], "C cache, new fold": []}
        for round_ in range(args.rounds):
            rows["A no cache"].append(measure(args.dataset, 0, {**base, "READGAZE_ARRAY_CACHE": "0"}))
            rows["B cache, fold seen"].append(measure(args.dataset, 0, base))
            rows["C cache, new fold"].append(measure(args.dataset, 1 + round_, base))
            print(f"round {round_ + 1}: " + ", ".join(f"{k} {v[-1]['seconds']:.1f} s / {v[-1]['peak_gib']:.2f} GiB"
                                                      for k, v in rows.items()), flush=True)
        medians = {k: (statistics.median(r["seconds"] for r in v), statistics.median(r["peak_gib"] for r in v))
                   for k, v in rows.items()}
        for name, (seconds, peak) in medians.items():
            print(f"{name:<22} setup {seconds:6.2f} s   peak {peak:5.2f} GiB (median of {args.rounds})")
        a, b = medians["A no cache"], medians["B cache, fold seen"]
        print(f"A / B: {a[0] / b[0]:.0f}x faster, {a[1] / b[1]:.1f}x less peak memory per unit")
    finally:
        shutil.rmtree(cache, ignore_errors=True)


if __name__ == "__main__":
    main()
