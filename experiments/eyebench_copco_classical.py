"""EyeBench's CopCo tables (TYP: dyslexia, RCS: comprehension skill) with readgaze's classical baselines.

    readgaze prep copco --data ../shared/data/copco --out /tmp/copco_ds      # the copco recipe (issue 36)
    OMP_NUM_THREADS=1 POLARS_MAX_THREADS=1 nice -n 10 python experiments/eyebench_copco_classical.py \\
        --dataset /tmp/copco_ds [--out /tmp/eyebench_copco] [--tasks TYP RCS]

Computes every baseline feature set from the dataset (:func:`readgaze.baselines.with_baseline_features`; without a
``PARAGRAPH_RT`` column the words / paragraph time of EyeBench's "Reading Speed" row is words / fixation span, i.e.
readgaze's reading speed: CopCo's own paragraph reading time, ``reading_time_ms``, covers 2,352 of its 4,782 trials),
runs :func:`readgaze.eyebench_copco.run_copco_classical` on
EyeBench's 4 folds (``RCS_eyebench``: RCS with the 12 unscored readers at EyeBench's placeholder -1.0, the
setting its published table needs) and writes ``copco_{task}.md`` (EyeBench's layout: published, readgaze and Δ rows),
``predictions_{task}.parquet``, ``evaluation_{task}.csv`` and ``qc.csv`` under ``--out``, with the wall and CPU
seconds of each step.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import polars as pl

from readgaze.baselines import with_baseline_features
from readgaze.eyebench_copco import run_copco_classical
from readgaze.qc import QCLog

SHARED = Path(__file__).resolve().parents[1] / ".." / "shared" / "data" / "copco" / "eyebench"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", type=Path, required=True)
    parser.add_argument("--folds", type=Path, default=SHARED / "folds")
    parser.add_argument("--results", type=Path, default=SHARED / "results")
    parser.add_argument("--out", type=Path, default=Path("/tmp/eyebench_copco"))
    parser.add_argument("--tasks", nargs="+", default=["TYP", "RCS", "RCS_eyebench"],
                        help="RCS_eyebench: RCS with the unscored readers at -1.0, as EyeBench's published table")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    wall, cpu = time.perf_counter(), time.process_time()
    cached = args.out / "features.parquet"  # the features of this dataset, reused by a rerun
    if cached.is_file():
        trials = pl.read_parquet(cached)
    else:
        trials = with_baseline_features(pl.read_parquet(args.dataset / "trials.parquet"), args.dataset)
        trials.write_parquet(cached)
    print(f"features: {trials.height} trials, {trials.width} columns, {time.perf_counter() - wall:.0f} s wall, "
          f"{time.process_time() - cpu:.0f} s CPU", flush=True)
    qc = QCLog()
    for name in args.tasks:
        start, start_cpu = time.perf_counter(), time.process_time()
        task, missing = ("RCS", -1.0) if name == "RCS_eyebench" else (name, None)
        result = run_copco_classical(trials, args.folds, task, results=args.results, rcs_missing=missing, qc=qc)
        seconds = f"{time.perf_counter() - start:.0f} s wall, {time.process_time() - start_cpu:.0f} s CPU"
        (args.out / f"copco_{name}.md").write_text(result.table + f"\n- Classical baselines only; {seconds}.\n",
                                                   encoding="utf-8")
        result.predictions.write_parquet(args.out / f"predictions_{name}.parquet")
        result.evaluation.write_csv(args.out / f"evaluation_{name}.csv")
        print(f"{name}: {seconds}", flush=True)
    pl.DataFrame(qc.records).write_csv(args.out / "qc.csv")
    print(f"total: {time.perf_counter() - wall:.0f} s wall, {time.process_time() - cpu:.0f} s CPU")


if __name__ == "__main__":
    main()
