"""Benchmark: ``readgaze prep onestop`` against the fair pandas baseline, at OneStop's scale.

1. Writes OneStop-scale synthetic Data Viewer reports once with the shared generator
   (``../shared/bench/onestop_scale.py``: 2.4 M fixation rows, 2.6 M IA rows, 1.56 GB) under
   ``/tmp/readgaze_bench_prep`` (never in the repository), and reuses them later.
2. Times the *parse floor*: polars (all threads) parsing only the columns prep writes out, from both
   files at once; and the narrower floor of the columns readgaze parses on every row.
3. Runs, alternating A B C D A B C D ... (``--rounds``), each in a fresh process (peak RSS of that
   process from ``wait4``):

   A. ``python ../shared/bench/pandas_prep_baseline.py`` (the same preparation in plain pandas);
   B. ``readgaze prep onestop`` with its defaults (``slice`` lines, every measure and table), with
      an empty parse cache (so it parses, hashes and stores);
   C. the same with ``--line-assigner nearest``, empty cache;
   D. re-preparing with ``--line-assigner nearest`` while the cache holds B's parse (the re-run a
      user makes after changing an option).

   and prints each side's median wall, peak and CPU seconds (with the wall they would take were every core
   busy throughout: a bound no overlap can beat), the ratios pandas / readgaze and readgaze / floor, and the
   *re-prep I/O floor*: a fresh process that only starts Python, imports polars, reads the parse cache and
   writes D's four tables (what D cannot skip, next to D's 10x goal).
   Then the CPU ratios (readgaze / pandas, goal <= 0.6) and the *CPU floor* (:func:`cpu_floor`): the CPU
   seconds of the parts no cold prep can skip with its output unchanged (the parse, the checksums, the
   agreement's cluster and warp, the Parquet writes), each run alone.
4. Checks that readgaze's word measures (``nearest``: both sides then use the recorded positions)
   equal the baseline's on every word row.
5. Scaling rows: B (and A) at 0.6 M and 1.2 M fixations, next to 2.4 M.

Usage::

    python experiments/bench_prep.py                       # the full benchmark (minutes; ~3.5 GiB peak)
    python experiments/bench_prep.py --fixations 600000 --rounds 1 --no-scaling   # quick look
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
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHARED_BENCH = ROOT.parent / "shared" / "bench"
FOLDER = Path("/tmp/readgaze_bench_prep")
MEASURES = {  # readgaze word_measures column -> pandas baseline column (flags compared as 0/1)
    "first_fixation_duration_ms": "first_fixation_duration_ms", "gaze_duration_ms": "gaze_duration_ms",
    "total_fixation_duration_ms": "total_fixation_duration_ms",
    "regression_path_duration_ms": "regression_path_duration_ms", "fixation_count": "fixation_count",
    "skipped": "skip", "regression_in": "regression_in", "regression_in_count": "regression_in_count",
    "regression_out": "regression_out", "regression_out_count": "regression_out_count",
}


def reports(n: int, seed: int, generator: Path) -> Path:
    """The synthetic reports for ``n`` fixation rows (written once, then reused)."""
    folder = FOLDER / f"onestop_{n}_seed{seed}"
    if not ((folder / "generation.json").is_file() and (folder / "ia.csv").is_file()):
        shutil.rmtree(folder, ignore_errors=True)
        t0 = time.perf_counter()
        subprocess.run([sys.executable, str(generator), "--fixations", str(n), "--out", str(folder),
                        "--seed", str(seed)], check=True, stdout=subprocess.DEVNULL)
        print(f"generated {folder} in {time.perf_counter() - t0:.0f} s", flush=True)
    return folder


def run(cmd: list[str], env: dict | None = None) -> tuple[float, float, float]:
    """Run a command in its own process: (wall seconds, peak RSS GiB, CPU seconds (user + system) of that
    process)."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "HF_HUB_OFFLINE": "1", **(env or {})})
    err = proc.stderr.read()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode:
        raise SystemExit(f"{' '.join(cmd)} failed ({proc.returncode}):\n{err[-3000:]}")
    return wall, usage.ru_maxrss / 2**20, usage.ru_utime + usage.ru_stime


FLOOR_CODE = r"""
import json, sys, time, polars as pl
fix, ia, fix_cols, ia_cols = sys.argv[1], sys.argv[2], json.loads(sys.argv[3]), json.loads(sys.argv[4])
def scan(path, cols):
    head = pl.read_csv(path, n_rows=10000, null_values=["."], infer_schema_length=10000, columns=cols)
    schema = {c: head.schema.get(c, pl.String) for c in pl.scan_csv(path).collect_schema().names()}
    return pl.scan_csv(path, schema=schema, null_values=["."]).select(cols)
frames = [scan(fix, fix_cols), scan(ia, ia_cols)]
t0 = time.perf_counter()
out = pl.collect_all(frames)
print(json.dumps({"s": time.perf_counter() - t0, "rows": [f.height for f in out]}))
"""


def floor(folder: Path, fix_cols: list[str], ia_cols: list[str]) -> float:
    """Seconds polars takes to parse ``fix_cols`` / ``ia_cols`` of both reports at once (fresh process)."""
    done = subprocess.run([sys.executable, "-c", FLOOR_CODE, str(folder / "fixations.csv"), str(folder / "ia.csv"),
                           json.dumps(fix_cols), json.dumps(ia_cols)], capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])["s"]


IO_FLOOR_CODE = r"""
import time
t0 = time.perf_counter()
import glob, json, os, sys
import polars as pl
entry, prev, out = sys.argv[1:4]
cached = {os.path.basename(f): pl.read_ipc(f) for f in glob.glob(os.path.join(entry, "*.arrow"))}
t1 = time.perf_counter()
tables = {n: pl.read_parquet(os.path.join(prev, n + ".parquet"))
          for n in ("fixations", "word_measures", "trials", "words")}  # not timed: prep computes them
t2 = time.perf_counter()
os.makedirs(out, exist_ok=True)
for n, f in tables.items():
    f.write_parquet(os.path.join(out, n + ".parquet"), **json.loads(sys.argv[4]))
print(json.dumps({"read": t1 - t0, "write": time.perf_counter() - t2, "untimed": t2 - t1}))
"""


def io_floor(cache: Path, prepared: Path, out: Path) -> float:
    """Seconds a fresh process takes to do only the I/O of a re-prep: start Python, import
    polars, read the parse cache's tables, and write ``prepared``'s four tables with prep's Parquet settings
    (reading them back is not counted). No step of the pipeline runs."""
    entry = next(Path(cache).rglob("fixations.arrow")).parent
    settings = json.dumps(in_child("parquet_settings"))
    t0 = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", IO_FLOOR_CODE, str(entry), str(prepared), str(out), settings],
                          capture_output=True, text=True, check=True)
    return time.perf_counter() - t0 - json.loads(done.stdout.strip().splitlines()[-1])["untimed"]


def parquet_settings() -> dict:
    from readgaze.data_prep.dataset import PARQUET

    return PARQUET


def floor_columns(folder: Path) -> tuple[list[str], list[str], list[str], list[str]]:
    """(fixation, IA) columns prep writes out; and those readgaze parses on every row."""
    import polars as pl

    folder = Path(folder)

    from readgaze.io.onestop import TRIAL_COLUMNS, WORD_FEATURES
    from readgaze.io.sources import SOURCES

    fix = pl.scan_csv(folder / "fixations.csv").collect_schema().names()
    ia = pl.scan_csv(folder / "ia.csv").collect_schema().names()
    spec = SOURCES["onestop"]
    ia_roles = {c for cands in spec.ia_columns.values() for c in cands}
    trial_id = set(spec.required_trial_columns) | {"participant_id"}
    out_ia = [c for c in ia if c in ia_roles or c in TRIAL_COLUMNS or c in WORD_FEATURES or c == "word_length"]
    narrow_fix = [c for c in fix if c not in TRIAL_COLUMNS or c in trial_id or c == "TRIAL_INDEX"]
    narrow_ia = [c for c in ia if c in ia_roles or c in trial_id]
    return fix, out_ia, narrow_fix, narrow_ia


def cpu_floor(folder: Path, prepared: Path, fix_cols: str, ia_cols: str) -> dict:
    """CPU seconds (user + system, every thread) of the parts of a cold prep that no implementation can skip while
    the output stays what it is: polars parsing the every-row columns of both reports (``fix_cols`` / ``ia_cols``,
    JSON lists), the SHA-256 of both (the manifest's checksums and the cache key), the agreement's vote members
    that prep's default (``slice``) does not run itself (cluster's 100 k-means++ starts per trial and warp, on
    ``prepared``'s fixations, :func:`readgaze.lines.frame_batch.method_lines` after a warm-up that compiles them),
    and writing ``prepared``'s four tables with prep's Parquet settings."""
    import hashlib
    import resource

    import polars as pl

    from readgaze.data_prep.dataset import PARQUET
    from readgaze.lines.frame_batch import method_lines

    def cpu() -> float:
        r = resource.getrusage(resource.RUSAGE_SELF)
        return r.ru_utime + r.ru_stime

    folder, prepared, got = Path(folder), Path(prepared), {}
    c = cpu()
    pl.collect_all([scan_columns(folder / "fixations.csv", json.loads(fix_cols)),
                    scan_columns(folder / "ia.csv", json.loads(ia_cols))])
    got["parse (polars, every-row columns)"] = cpu() - c
    c = cpu()
    for name in ("fixations.csv", "ia.csv"):
        h, block = hashlib.sha256(), bytearray(1 << 20)
        with open(folder / name, "rb") as f:
            while n := f.readinto(block):
                h.update(memoryview(block)[:n])
    got["SHA-256 of both reports"] = cpu() - c
    fx = pl.read_parquet(prepared / "fixations.parquet", columns=["trial_id", "fixation_index", "x_px", "y_px"])
    words, trials = pl.read_parquet(prepared / "words.parquet"), pl.read_parquet(prepared / "trials.parquet")
    method_lines(fx.head(5000), words, trials, ("cluster", "warp"))  # numba: compiled or loaded once
    c = cpu()
    method_lines(fx, words, trials, ("cluster", "warp"))
    got["agreement: cluster (100 starts) + warp"] = cpu() - c
    tables = {n: pl.read_parquet(prepared / f"{n}.parquet") for n in ("fixations", "word_measures", "trials", "words")}
    c = cpu()
    for n, frame in tables.items():
        frame.write_parquet(prepared / f"floor_{n}.parquet", **PARQUET)
    got["write the four tables (Parquet)"] = cpu() - c
    return got


def scan_columns(path: Path, cols: list[str]):
    """A lazy scan of ``cols`` of a report, dtypes from its first 10,000 rows (as :data:`FLOOR_CODE`)."""
    import polars as pl

    head = pl.read_csv(path, n_rows=10000, null_values=["."], infer_schema_length=10000, columns=cols)
    schema = {c: head.schema.get(c, pl.String) for c in pl.scan_csv(path).collect_schema().names()}
    return pl.scan_csv(path, schema=schema, null_values=["."]).select(cols)


def readgaze_cmd(folder: Path, out: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "readgaze.cli", "prep", "onestop", "--fixation-report", str(folder / "fixations.csv"),
            "--ia-report", str(folder / "ia.csv"), "--out", str(out), "--force", "--quiet", *extra]


def pandas_cmd(folder: Path, out: Path, baseline: Path) -> list[str]:
    return [sys.executable, str(baseline), "--fixation-report", str(folder / "fixations.csv"),
            "--ia-report", str(folder / "ia.csv"), "--out", str(out)]


def in_child(function: str, *args: str):
    """``function(*args)`` of this module run in a fresh process (its JSON result): this process stays small,
    so the peak RSS of the processes it starts later (counted from fork) is theirs alone."""
    code = (f"import json, sys; sys.path.insert(0, {str(Path(__file__).parent)!r}); import bench_prep; "
            f"print(json.dumps(bench_prep.{function}(*sys.argv[1:])))")
    done = subprocess.run([sys.executable, "-c", code, *map(str, args)], capture_output=True, text=True)
    if done.returncode:
        raise SystemExit(done.stderr[-3000:])
    return json.loads(done.stdout.strip().splitlines()[-1])


def compare_measures(rg: Path, pd_out: Path) -> str:
    """Word measures of readgaze (``rg``) vs the pandas baseline (``pd_out``), on every word row."""
    import polars as pl

    rg, pd_out = Path(rg), Path(pd_out)

    keys = ["participant_id", "TRIAL_INDEX"]
    rt = pl.read_parquet(rg / "trials.parquet", columns=["trial_id", *keys])
    pt = pl.read_parquet(pd_out / "trials.parquet", columns=["trial_id", *keys])
    ours = (pl.read_parquet(rg / "word_measures.parquet").join(rt, on="trial_id")
            .drop("trial_id"))
    theirs = pl.read_parquet(pd_out / "word_measures.parquet").join(pt, on="trial_id").drop("trial_id")
    j = ours.join(theirs, on=[*keys, "word_index"], how="full", suffix="_pd", coalesce=True)
    unmatched = j.filter(pl.col("fixation_count").is_null() | pl.col("fixation_count_pd").is_null()).height
    fixated = pl.col("fixation_count") > 0
    differ = {"fixated": {}, "never fixated": {}}
    for a, b in MEASURES.items():
        b = b if b != a else f"{a}_pd"
        ne = pl.col(a).cast(pl.Float64).ne_missing(pl.col(b).cast(pl.Float64))
        for part, rows in (("fixated", fixated), ("never fixated", ~fixated)):
            differ[part][a] = j.select((ne & rows).sum()).item()
    n_fix = j.select(fixated.sum()).item()
    text = []
    for part, counts in differ.items():
        bad = {k: v for k, v in counts.items() if v}
        shown = ", ".join(f"{k} {v:,}" for k, v in bad.items())
        text.append(f"{part}: " + ("all equal" if not bad else f"differ {shown}"))
    return (f"measures vs pandas baseline ({len(MEASURES)} measures, {j.height:,} word rows, {n_fix:,} fixated, "
            f"{unmatched} unmatched): " + "; ".join(text)
            + ("  [never-fixated regression counts: readgaze null (Data Viewer '.'), baseline 0]"
               if any(differ["never fixated"].values()) else ""))


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--fixations", type=int, default=2_400_000, help="fixation rows (default 2,400,000: OneStop)")
    p.add_argument("--seed", type=int, default=1129)
    p.add_argument("--rounds", type=int, default=3, help="alternating rounds of A B C D (default 3)")
    p.add_argument("--scaling", default="600000,1200000", help="smaller sizes for the scaling rows")
    p.add_argument("--no-scaling", action="store_true")
    p.add_argument("--generator", type=Path, default=SHARED_BENCH / "onestop_scale.py")
    p.add_argument("--baseline", type=Path, default=SHARED_BENCH / "pandas_prep_baseline.py")
    args = p.parse_args(argv)
    folder = reports(args.fixations, args.seed, args.generator)
    size = sum((folder / f).stat().st_size for f in ("fixations.csv", "ia.csv"))
    info = json.loads((folder / "generation.json").read_text())  # this process never imports polars
    print(f"reports: {info['fixation_rows']:,} fixation rows, {info['ia_rows']:,} IA rows, {size / 1e9:.2f} GB "
          f"({folder})", flush=True)
    out_fix, out_ia, narrow_fix, narrow_ia = in_child("floor_columns", folder)
    work = Path(tempfile.mkdtemp(prefix="readgaze_bench_prep_"))
    try:
        floors = [floor(folder, out_fix, out_ia) for _ in range(2)]
        narrow = [floor(folder, narrow_fix, narrow_ia) for _ in range(2)]
        parse_floor = min(floors)
        print(f"parse floor (polars, all threads, both files at once, the {len(out_fix)} + {len(out_ia)} columns "
              f"prep writes out): {parse_floor:.2f} s (runs {', '.join(f'{s:.2f}' for s in floors)}); the "
              f"{len(narrow_fix)} + {len(narrow_ia)} columns readgaze parses on every row: {min(narrow):.2f} s",
              flush=True)
        warm_cache = work / "cache_warm"
        sides = {
            "A pandas baseline": lambda r: run(pandas_cmd(folder, work / "pd", args.baseline)),
            "B readgaze prep (defaults: slice)": lambda r: run(readgaze_cmd(folder, work / "rg_slice"),
                                                                {"READGAZE_CACHE_DIR": str(_fresh(work / f"c{r}b"))}),
            "C readgaze prep --line-assigner nearest": lambda r: run(
                readgaze_cmd(folder, work / "rg_nearest", "--line-assigner", "nearest"),
                {"READGAZE_CACHE_DIR": str(_fresh(work / f"c{r}c"))}),
            "D re-prep, cached parse, --line-assigner nearest": lambda r: run(
                readgaze_cmd(folder, work / "rg_warm", "--line-assigner", "nearest"),
                {"READGAZE_CACHE_DIR": str(warm_cache)}),
        }
        run(readgaze_cmd(folder, work / "rg_fill"), {"READGAZE_CACHE_DIR": str(warm_cache)})  # fills D's cache
        got = {k: [] for k in sides}
        for r in range(args.rounds):
            for name, side in sides.items():
                got[name].append(side(r))
                print(f"  round {r + 1} {name}: {got[name][-1][0]:.1f} s, {got[name][-1][1]:.2f} GiB", flush=True)
            for c in work.glob("c*[bc]"):
                shutil.rmtree(c, ignore_errors=True)
        med = {k: (statistics.median(w for w, _, _ in v), max(g for _, g, _ in v)) for k, v in got.items()}
        cpu = {k: statistics.median(c for _, _, c in v) for k, v in got.items()}
        cores = len(os.sched_getaffinity(0))
        print(f"\nmedian wall of {args.rounds} alternating rounds (peak RSS = max over rounds; CPU = user + system "
              f"seconds, median; 'all cores' = CPU / {cores} cores, the wall if every core were busy throughout):")
        for name, (wall, gib) in med.items():
            print(f"  {name:52s} {wall:7.1f} s  {gib:5.2f} GiB  CPU {cpu[name]:5.1f} s (all cores "
                  f"{cpu[name] / cores:5.1f} s)")
        pd_wall = med["A pandas baseline"][0]
        goals = {"B": 2.5, "C": 3.0, "D": 10.0}
        for name, (wall, gib) in med.items():
            tag = name[0]
            if tag in goals:
                print(f"  ratio pandas / {tag}: {pd_wall / wall:.2f}x (goal >= {goals[tag]}x); {tag} / parse floor: "
                      f"{wall / parse_floor:.2f}x (goal <= 1.5x); peak {gib:.2f} GiB (goal <= 1.5)")
        pd_cpu = cpu["A pandas baseline"]
        for name in cpu:
            if name[0] in goals:
                print(f"  CPU {name[0]} / pandas: {cpu[name] / pd_cpu:.2f}x" + (
                    f" (goal <= 0.6x: {0.6 * pd_cpu:.1f} s)" if name[0] == "B" else ""))
        parts = in_child("cpu_floor", folder, work / "rg_slice", json.dumps(narrow_fix), json.dumps(narrow_ia))
        print(f"  CPU floor of a cold prep whose output stays as it is (each part alone, in a fresh process): "
              f"{sum(parts.values()):.1f} s against the goal's {0.6 * pd_cpu:.1f} s:")
        for part, seconds in parts.items():
            print(f"    {part:44s} {seconds:5.2f} s")
        io_s = min(io_floor(warm_cache, work / "rg_warm", work / "io_floor") for _ in range(2))
        print(f"  re-prep I/O floor (a fresh process: start Python, import polars, read the parse cache, write D's "
              f"four tables with prep's Parquet settings; nothing computed): {io_s:.2f} s; D's 10x goal is "
              f"{pd_wall / 10:.2f} s")
        print(in_child("compare_measures", work / "rg_nearest", work / "pd"))
        if not args.no_scaling:
            print("\nscaling (one run each; B = readgaze defaults, A = pandas):")
            rows = [(int(n), reports(int(n), args.seed, args.generator)) for n in args.scaling.split(",") if n]
            for n, f in rows:
                b = run(readgaze_cmd(f, work / "s_rg"), {"READGAZE_CACHE_DIR": str(_fresh(work / "s_cache"))})[:2]
                a = run(pandas_cmd(f, work / "s_pd", args.baseline))[:2]
                print(f"  {n:>9,} fixations: B {b[0]:6.1f} s {b[1]:5.2f} GiB | A {a[0]:6.1f} s {a[1]:5.2f} GiB",
                      flush=True)
            b_wall, b_gib = med["B readgaze prep (defaults: slice)"]
            print(f"  {args.fixations:>9,} fixations: B {b_wall:6.1f} s {b_gib:5.2f} GiB | A {pd_wall:6.1f} s "
                  f"{med['A pandas baseline'][1]:5.2f} GiB  (medians above)")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


def _fresh(path: Path) -> Path:
    shutil.rmtree(path, ignore_errors=True)
    return path


if __name__ == "__main__":
    raise SystemExit(main())
