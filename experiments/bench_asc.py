"""Benchmark: readgaze.io.asc.read_asc against mne.io.read_raw_eyelink alone on a 1 M-sample .asc.

Generates a synthetic monocular 1000 Hz recording in /tmp (20 trials x 50,000 samples; a
fixation every 230 ms, blinks, TRIALID messages), then reads it in two fresh child processes,
one per reader, and prints wall time and peak resident memory of each (ru_maxrss; the
``delta`` is peak minus the RSS after imports), and the ratios.

    python experiments/bench_asc.py [--samples 1000000] [--trials 20]
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import polars as pl

HEADER = """** CONVERTED FROM bench.edf using edfapi 4.2.1 Linux
** DATE: Mon Jan  6 10:00:00 2025
** TYPE: EDF_FILE BINARY EVENT SAMPLE TAGGED
** SOURCE: EYELINK CL
**

MSG\t1000 DISPLAY_COORDS 0 0 1279 1023
"""
BLOCK_HEAD = ("START\t{t} \tRIGHT\tSAMPLES\tEVENTS\nPRESCALER\t1\nVPRESCALER\t1\nPUPIL\tAREA\n"
              "EVENTS\tGAZE\tRIGHT\tRATE\t1000.00\tTRACKING\tCR\tFILTER\t2\n"
              "SAMPLES\tGAZE\tRIGHT\tRATE\t1000.00\tTRACKING\tCR\tFILTER\t2")


def _trial_lines(trial: int, t0: int, n: int, rng: np.random.Generator) -> pl.DataFrame:
    """One block: samples plus SFIX/EFIX, SSACC/ESACC, SBLINK/EBLINK lines, sorted by (time, order)."""
    t = t0 + np.arange(n)
    cycle = 230  # 200 ms fixation + 30 ms saccade
    k, phase = np.divmod(np.arange(n), cycle)
    blink = (k % 20 == 19) & (phase < 100)
    x = 100 + (k % 12) * 90 + rng.normal(0, 0.5, n)
    y = 150 + (k // 12 % 10) * 60 + rng.normal(0, 0.5, n)
    x[phase >= 200] += (phase[phase >= 200] - 200) * 3.0
    s = pl.DataFrame({"t": t.astype(float), "o": np.ones(n, np.int8), "x": x, "y": y, "blink": blink})
    s = s.select("t", "o", text=pl.when(pl.col("blink")).then(
        pl.format("{}\t   .\t   .\t    0.0\t...", pl.col("t").cast(pl.Int64))).otherwise(
        pl.format("{}\t{}\t{}\t 1000.0\t...", pl.col("t").cast(pl.Int64), pl.col("x").round(1), pl.col("y").round(1))))
    starts = t0 + np.arange(0, n - cycle, cycle)
    ev = []
    for st in starts:  # a few thousand event lines per trial; generation only
        idx = (st - t0) // cycle
        if idx % 20 == 19:
            ev += [(st, 0, f"SBLINK R {st}"), (st + 99, 2, f"EBLINK R {st}\t{st + 99}\t100")]
        else:
            ev += [(st, 0, f"SFIX R   {st}"),
                   (st + 199, 2, f"EFIX R   {st}\t{st + 199}\t200\t  500.0\t  300.0\t   1000")]
        ev += [(st + 200, 0, f"SSACC R  {st + 200}"),
               (st + 229, 2, f"ESACC R  {st + 200}\t{st + 229}\t30\t  500.0\t  300.0\t  590.0\t  300.0\t   2.20\t  300")]
    e = pl.DataFrame(ev, schema={"t": pl.Float64, "o": pl.Int8, "text": pl.String}, orient="row")
    head = pl.DataFrame({"t": [t0 - 2.0, t0 - 1.0], "o": [0, 0],
                         "text": [f"MSG\t{t0 - 2} TRIALID {trial}", BLOCK_HEAD.format(t=t0)]},
                        schema={"t": pl.Float64, "o": pl.Int8, "text": pl.String})
    end = pl.DataFrame({"t": [float(t0 + n)], "o": [3], "text": [f"END\t{t0 + n} \tSAMPLES\tEVENTS\tRES\t38.0\t36.0"]},
                       schema={"t": pl.Float64, "o": pl.Int8, "text": pl.String})
    return pl.concat([head, s, e, end]).sort("t", "o", maintain_order=True)


def generate(path: Path, n_samples: int, n_trials: int, seed: int = 0) -> None:
    rng = np.random.default_rng(seed)
    per = n_samples // n_trials
    frames = [_trial_lines(i + 1, 10_000 + i * (per + 5_000), per, rng) for i in range(n_trials)]
    body = pl.concat(frames).select("text")
    with path.open("w") as handle:
        handle.write(HEADER)
        body.write_csv(handle, include_header=False, quote_style="never")


def _child(reader: str, path: str) -> None:
    import warnings

    import mne  # noqa: F401  (imports counted in the baseline, not in the read)

    from readgaze.io.asc import read_asc

    base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    start = time.perf_counter()
    if reader == "mne":
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            raw = mne.io.read_raw_eyelink(path, verbose="error")
        counts = {"n_times": int(raw.n_times), "fixations": int(len(raw._raw_extras[0]["dfs"]["fixations"]))}
    else:
        rec = read_asc(path)
        counts = {"samples": rec.samples.height, "fixations": rec.fixations.height, "trials": rec.trials.height}
    seconds = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(json.dumps({"reader": reader, "seconds": seconds, "peak_mib": peak / 1024,
                      "delta_mib": (peak - base) / 1024, **counts}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=1_000_000)
    parser.add_argument("--trials", type=int, default=20)
    parser.add_argument("--path", default="/tmp/readgaze_bench_1M.asc")
    parser.add_argument("--child", nargs=2, metavar=("READER", "PATH"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        _child(*args.child)
        return
    path = Path(args.path)
    t0 = time.perf_counter()
    generate(path, args.samples, args.trials)
    print(f"generated {path} ({path.stat().st_size / 2**20:.1f} MiB, {args.samples:,} samples, "
          f"{args.trials} trials) in {time.perf_counter() - t0:.1f} s")
    results = {}
    for reader in ("mne", "readgaze"):
        out = subprocess.run([sys.executable, __file__, "--child", reader, str(path)], capture_output=True,
                             text=True, check=True)
        results[reader] = json.loads(out.stdout.strip().splitlines()[-1])
        print(results[reader])
    m, r = results["mne"], results["readgaze"]
    print(f"time: read_asc {r['seconds']:.2f} s vs mne alone {m['seconds']:.2f} s "
          f"(ratio {r['seconds'] / m['seconds']:.2f})")
    print(f"peak RSS: read_asc {r['peak_mib']:.0f} MiB (+{r['delta_mib']:.0f}) vs mne alone {m['peak_mib']:.0f} MiB "
          f"(+{m['delta_mib']:.0f}) (ratio of deltas {r['delta_mib'] / max(m['delta_mib'], 1e-9):.2f})")


if __name__ == "__main__":
    main()
