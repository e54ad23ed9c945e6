"""Benchmark: readgaze.io.asc.read_asc against mne.io.read_raw_eyelink alone, at several file sizes.

For each size, generates a synthetic monocular 1000 Hz recording in /tmp (20 trials; a fixation
every 230 ms, blinks, TRIALID messages), then reads it in fresh child processes, one per reader:

* ``mne``: ``mne.io.read_raw_eyelink`` alone;
* ``parquet``: ``read_asc(path, samples=<tmp>.parquet)`` (samples streamed to Parquet, chunk by chunk);
* ``memory``: ``read_asc(path)`` (samples returned as one DataFrame, which itself grows with the file).

It prints wall time and peak resident memory of each (the child's ``VmHWM``, its own high-water
mark; ``ru_maxrss`` would start at the parent's RSS at fork time; ``+delta`` is peak minus the peak
after imports), the time ratio readgaze / mne at each size, and a table of peaks across sizes
(flat for ``parquet``).

    python experiments/bench_asc.py [--sizes 250000,1000000,2000000] [--readers mne,parquet,memory]
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
               (st + 229, 2,
                f"ESACC R  {st + 200}\t{st + 229}\t30\t  500.0\t  300.0\t  590.0\t  300.0\t   2.20\t  300")]
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


def _peak_mib() -> float:
    """This process's peak resident memory (MiB): VmHWM, which exec resets, unlike ru_maxrss on Linux."""
    try:
        with open("/proc/self/status") as handle:
            return next(int(line.split()[1]) for line in handle if line.startswith("VmHWM:")) / 1024
    except (OSError, StopIteration):
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _child(reader: str, path: str) -> None:
    import warnings

    import mne  # noqa: F401  (imports counted in the baseline, not in the read)

    from readgaze.io.asc import read_asc

    base = _peak_mib()
    start = time.perf_counter()
    if reader == "mne":
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            raw = mne.io.read_raw_eyelink(path, verbose="error")
        counts = {"samples": int(raw.n_times), "fixations": int(len(raw._raw_extras[0]["dfs"]["fixations"]))}
    else:
        target = str(Path(path).with_suffix(".samples.parquet")) if reader == "parquet" else "memory"
        rec = read_asc(path, samples=target) if reader == "parquet" else read_asc(path)
        n = rec.samples.select(pl.len()).collect().item() if reader == "parquet" else rec.samples.height
        counts = {"samples": n, "fixations": rec.fixations.height, "trials": rec.trials.height}
    seconds = time.perf_counter() - start
    peak = _peak_mib()
    print(json.dumps({"reader": reader, "seconds": seconds, "peak_mib": peak, "delta_mib": peak - base, **counts}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="250000,1000000,2000000", help="samples per file, comma separated")
    parser.add_argument("--readers", default="mne,parquet,memory")
    parser.add_argument("--trials", type=int, default=20)
    parser.add_argument("--child", nargs=2, metavar=("READER", "PATH"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        _child(*args.child)
        return
    readers = args.readers.split(",")
    table = []
    for n in (int(v) for v in args.sizes.split(",")):
        path = Path(f"/tmp/readgaze_bench_{n}.asc")
        t0 = time.perf_counter()
        generate(path, n, args.trials)
        print(f"generated {path} ({path.stat().st_size / 2**20:.1f} MiB, {n:,} samples, "
              f"{args.trials} trials) in {time.perf_counter() - t0:.1f} s", flush=True)
        results = {}
        for reader in readers:
            out = subprocess.run([sys.executable, __file__, "--child", reader, str(path)], capture_output=True,
                                 text=True, check=True)
            results[reader] = json.loads(out.stdout.strip().splitlines()[-1])
            print(" ", results[reader], flush=True)
        for reader in (r for r in readers if r != "mne" and "mne" in results):
            r, m = results[reader], results["mne"]
            print(f"  {n:,} samples, {reader}: read_asc {r['seconds']:.2f} s vs mne alone {m['seconds']:.2f} s "
                  f"(ratio {r['seconds'] / m['seconds']:.2f}); peak RSS {r['peak_mib']:.0f} MiB "
                  f"(+{r['delta_mib']:.0f}) vs mne {m['peak_mib']:.0f} MiB (+{m['delta_mib']:.0f})", flush=True)
        table.append((n, results))
        path.unlink()
        path.with_suffix(".samples.parquet").unlink(missing_ok=True)
    print("\nsamples    " + "".join(f"{r:>28}" for r in readers))
    for n, results in table:
        print(f"{n:>10,} " + "".join(f"{results[r]['seconds']:>9.2f} s {results[r]['peak_mib']:>6.0f} MiB "
                                     f"(+{results[r]['delta_mib']:>4.0f})" for r in readers))
    print("time in seconds; peak RSS in MiB (+ over the RSS after imports)")


if __name__ == "__main__":
    main()
