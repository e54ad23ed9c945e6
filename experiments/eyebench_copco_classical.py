"""EyeBench's CopCo tables (TYP: dyslexia, RCS: comprehension skill) with readgaze's classical baselines.

    readgaze prep copco ../shared/data/copco --out /tmp/copco_ds      # the copco recipe (issue 36)
    OMP_NUM_THREADS=1 POLARS_MAX_THREADS=1 nice -n 10 python experiments/eyebench_copco_classical.py \\
        --dataset /tmp/copco_ds [--out /tmp/eyebench_copco] [--tasks TYP RCS]

Computes every baseline feature set from the dataset (:func:`readgaze.baselines.with_baseline_features`; the
paragraph reading time of EyeBench's "Reading Speed" is the dataset's ``reading_time_ms``, CopCo's
``stimuli_and_comp_results.csv``, when present), runs :func:`readgaze.eyebench_copco.run_copco_classical` on
EyeBench's 4 folds and writes ``copco_{task}.md`` (EyeBench's layout: published, readgaze and Δ rows),
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
    parser.add_argument("--tasks", nargs="+", default=["TYP", "RCS"])
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    wall, cpu = time.perf_counter(), time.process_time()
    trials = pl.read_parquet(args.dataset / "trials.parquet")
    if "reading_time_ms" in trials.columns and "PARAGRAPH_RT" not in trials.columns:
        trials = trials.with_columns(pl.col("reading_time_ms").alias("PARAGRAPH_RT"))
    trials = with_baseline_features(trials, args.dataset)
    print(f"features: {trials.height} trials, {trials.width} columns, {time.perf_counter() - wall:.0f} s wall, "
          f"{time.process_time() - cpu:.0f} s CPU", flush=True)
    qc = QCLog()
    for task in args.tasks:
        start, start_cpu = time.perf_counter(), time.process_time()
        result = run_copco_classical(trials, args.folds, task, results=args.results, qc=qc)
        seconds = f"{time.perf_counter() - start:.0f} s wall, {time.process_time() - start_cpu:.0f} s CPU"
        (args.out / f"copco_{task}.md").write_text(result.table + f"\n- Classical baselines only; {seconds}.\n",
                                                   encoding="utf-8")
        result.predictions.write_parquet(args.out / f"predictions_{task}.parquet")
        result.evaluation.write_csv(args.out / f"evaluation_{task}.csv")
        print(f"{task}: {seconds}", flush=True)
    pl.DataFrame(qc.records).write_csv(args.out / "qc.csv")
    print(f"total: {time.perf_counter() - wall:.0f} s wall, {time.process_time() - cpu:.0f} s CPU")


if __name__ == "__main__":
    main()
