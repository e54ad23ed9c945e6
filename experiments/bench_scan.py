"""Scan a ~1 GB Data Viewer fixation report lazily and aggregate it per trial, measuring time and memory.

Writes a synthetic OneStop-style fixation report (26 columns, ``.`` for off-word fixations past row 100,
quoted labels with commas, empty saccade amplitudes) to ``/tmp/readgaze_bench/fixations_1gb.csv``, then
runs each phase in a fresh subprocess and reports wall time and peak RSS (``resource.getrusage``,
``ru_maxrss``; includes file pages the process mapped):

* ``baseline`` -- imports only (Python + polars + readgaze), the floor under the other phases;
* ``infer``  -- :func:`readgaze.io.scan_csv` with whole-file dtype inference (``collect_schema``);
* ``read``   -- :func:`readgaze.io.read_fixation_report` (inference + numeric checks + duplicate-key
  check), then a streaming group-by per trial (fixation count, total and mean duration, mean x);
* ``schema`` -- the same aggregate with an explicit schema and no key check (one pass over the file).

Peak RSS far below the file size shows the file is never loaded whole.

Usage: ``python experiments/bench_scan.py [--gb 1.0] [--keep]``. Not part of the test suite.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

OUT = Path("/tmp/readgaze_bench")
CSV = OUT / "fixations_1gb.csv"
WORDS = ["The", "wolf,", '"Yes,"', "howl", "–", "Myslajek", "paw", "prints.", "between", "sees"]


def _chunk(rng, start_trial: int, n_trials: int, per_trial: int):
    import numpy as np
    import polars as pl

    n = n_trials * per_trial
    trial = np.repeat(np.arange(start_trial, start_trial + n_trials), per_trial)
    fix = np.tile(np.arange(1, per_trial + 1), n_trials)
    ia = rng.integers(1, 150, n)
    dur = rng.integers(50, 400, n)
    start = np.tile(np.arange(per_trial) * 250, n_trials)
    ia_s = ia.astype(str).astype(object)
    off = rng.random(n) < 0.013
    ia_s[off] = "."
    label = np.array(WORDS, dtype=object)[ia % len(WORDS)]
    label[off] = "."
    amp = np.round(rng.random(n) * 5, 2).astype(str).astype(object)
    amp[fix == per_trial] = ""
    participant = np.array([f"l{t % 60}_{t // 54}" for t in range(start_trial, start_trial + n_trials)])
    return pl.DataFrame({
        "participant_id": np.repeat(participant, per_trial), "TRIAL_INDEX": trial,
        "CURRENT_FIX_DURATION": dur, "CURRENT_FIX_END": start + dur - 1, "CURRENT_FIX_INDEX": fix,
        "CURRENT_FIX_INTEREST_AREA_ID": ia_s, "CURRENT_FIX_INTEREST_AREA_LABEL": label,
        "CURRENT_FIX_START": start, "CURRENT_FIX_X": rng.integers(350, 2170, n),
        "CURRENT_FIX_Y": rng.integers(150, 1250, n), "CURRENT_FIX_PUPIL": np.round(rng.random(n) * 2000, 1),
        "EYE_TRACKED": "Right", "NEXT_SAC_AMPLITUDE": amp,
        "NEXT_SAC_DIRECTION": rng.choice(["RIGHT", "LEFT", "UP", "DOWN", "."], n),
        "article_id": trial % 10, "article_title": "On the Trail of the Wolf, part two", "article_batch": 2,
        "question_preview": trial % 2 == 0, "difficulty_level": np.where(trial % 3 == 0, "Adv", "Ele"),
        "paragraph_id": trial % 7 + 1, "question": "How does Myslajek react to what he sees, exactly?",
        "repeated_reading_trial": False, "trial_index": trial % 70 + 1, "selected_answer": "A",
        "is_correct": True, "unique_trial_id": [f"t{t}" for t in trial],
    })


def write_csv(gb: float) -> tuple[int, int]:
    """Write the synthetic report in chunks; returns (bytes, rows)."""
    import numpy as np

    OUT.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)
    target, rows, trial = gb * 1e9, 0, 0
    with CSV.open("wb") as f:
        header = True
        while f.tell() < target:
            df = _chunk(rng, trial, 2000, 150)
            df.write_csv(f, include_header=header, null_value="")
            header, rows, trial = False, rows + df.height, trial + 2000
    return CSV.stat().st_size, rows


def _aggregate(lf):
    import polars as pl

    return (lf.group_by("trial_id")
            .agg(pl.len().alias("fixation_count"), pl.col("duration_ms").sum().alias("total_ms"),
                 pl.col("duration_ms").mean().alias("mean_ms"), pl.col("x_px").mean().alias("mean_x_px"),
                 pl.col("word_index").null_count().alias("off_word"))
            .collect(engine="streaming"))


def phase(name: str) -> dict:
    import numpy as np
    import polars as pl

    from readgaze.io import read_fixation_report, scan_csv

    t0 = time.perf_counter()
    if name == "baseline":  # imports only: the floor under every other phase
        result = {}
    elif name == "infer":
        schema = scan_csv(CSV).collect_schema()
        result = {"columns": len(schema), "ia_id_dtype": str(schema["CURRENT_FIX_INTEREST_AREA_ID"])}
    elif name == "read":
        agg = _aggregate(read_fixation_report(CSV, ia_id_base=1))
        result = {"trials": agg.height, "fixations": int(agg["fixation_count"].sum()),
                  "off_word": int(agg["off_word"].sum())}
    else:
        schema = dict(_chunk(np.random.default_rng(0), 0, 1, 2).schema)
        schema.update({"CURRENT_FIX_INTEREST_AREA_ID": pl.Int64, "NEXT_SAC_AMPLITUDE": pl.Float64})
        agg = _aggregate(read_fixation_report(CSV, schema=schema, check_keys=False, ia_id_base=1))
        result = {"trials": agg.height, "fixations": int(agg["fixation_count"].sum()),
                  "off_word": int(agg["off_word"].sum())}
    wall = time.perf_counter() - t0
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB
    return {"phase": name, "wall_s": round(wall, 2), "peak_rss_mb": round(peak_mb, 1), **result}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--gb", type=float, default=1.0)
    ap.add_argument("--keep", action="store_true", help="keep the CSV for a rerun")
    ap.add_argument("--phase", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.phase == "write":
        t0 = time.perf_counter()
        size, rows = write_csv(args.gb)
        print(f"wrote {CSV}: {size / 1e9:.2f} GB, {rows:,} rows in {time.perf_counter() - t0:.0f} s")
        return
    if args.phase:
        print(json.dumps(phase(args.phase)))
        return
    # every phase runs in a fresh process started from this lean parent: Linux keeps ru_maxrss across
    # exec, so a parent that had built the CSV would inflate the children's peaks
    if not (args.keep and CSV.exists()):
        print(subprocess.run([sys.executable, __file__, "--phase", "write", "--gb", str(args.gb)],
                             capture_output=True, text=True, check=True).stdout.strip())
    print(f"file: {CSV.stat().st_size / 1e9:.2f} GB; {os.cpu_count()} CPUs")
    for name in ("baseline", "infer", "read", "schema"):
        out = subprocess.run([sys.executable, __file__, "--phase", name], capture_output=True, text=True,
                             check=True).stdout
        print(out.strip())
    if not args.keep:
        CSV.unlink()


if __name__ == "__main__":
    main()
