"""Cold ``readgaze prep onestop --no-cache`` of two checkouts against the pandas yardstick, alternating.

Each run is a fresh process (wall, peak RSS and CPU seconds of that process from ``wait4``); the sides alternate
A B C A B C ... so that a loaded machine slows each side alike. Prints per-run figures and medians, and checks that
both checkouts' tables are equal (``compare_prepared.py``).

Usage::

    python experiments/compare_prep_runs.py --before ../prepspeed-base [--rounds 3]

``--before`` is a checkout with its own ``.venv`` (``python -m venv --system-site-packages .venv &&
.venv/bin/pip install --no-deps -e .``); this checkout runs with its own ``.venv`` too.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FOLDER = Path("/tmp/readgaze_bench_prep/onestop_2400000_seed1129")


def run(cmd: list[str], cwd: Path) -> tuple[float, float, float]:
    """(wall s, peak RSS GiB, CPU s (user + system)) of ``cmd`` run in ``cwd``."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "HF_HUB_OFFLINE": "1"})
    err = proc.stderr.read()
    _, status, usage = os.wait4(proc.pid, 0)
    if os.waitstatus_to_exitcode(status):
        raise SystemExit(f"{' '.join(cmd)} failed:\n{err[-3000:]}")
    return time.perf_counter() - t0, usage.ru_maxrss / 2**20, usage.ru_utime + usage.ru_stime


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--before", type=Path, required=True)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--reports", type=Path, default=FOLDER)
    p.add_argument("--work", type=Path, default=Path("/tmp/readgaze_compare_prep_runs"))
    args = p.parse_args(argv)
    fix, ia = args.reports / "fixations.csv", args.reports / "ia.csv"
    before = args.before.resolve()

    def prep(tree: Path, out: str) -> tuple[list[str], Path]:
        return ([str(tree / ".venv/bin/python"), "-m", "readgaze.cli", "prep", "onestop", "--fixation-report",
                 str(fix), "--ia-report", str(ia), "--out", str(args.work / out), "--force", "--no-cache",
                 "--quiet"], tree)

    sides = {
        "pandas yardstick": ([sys.executable, str(ROOT.parent / "shared/bench/pandas_prep_baseline.py"),
                              "--fixation-report", str(fix), "--ia-report", str(ia), "--out",
                              str(args.work / "pd")], ROOT),
        "readgaze before": prep(before, "before"),
        "readgaze after": prep(ROOT, "after"),
    }
    got = {k: [] for k in sides}
    for r in range(args.rounds):
        for name, (cmd, cwd) in sides.items():
            got[name].append(run(cmd, cwd))
            w, g, c = got[name][-1]
            print(f"round {r + 1} {name:18s} wall {w:6.1f} s  CPU {c:6.1f} s  peak {g:5.2f} GiB", flush=True)
    print(f"\nmedians of {args.rounds} alternating rounds (load average now {os.getloadavg()[0]:.1f}):")
    med = {k: tuple(statistics.median(x[i] for x in v) for i in range(3)) for k, v in got.items()}
    pd_w, _, pd_c = med["pandas yardstick"]
    for name, (w, g, c) in med.items():
        print(f"  {name:18s} wall {w:6.1f} s  CPU {c:6.1f} s  peak {g:5.2f} GiB   pandas/wall {pd_w / w:5.2f}x  "
              f"CPU/pandas {c / pd_c:5.2f}x")
    done = subprocess.run([sys.executable, str(ROOT / "experiments/compare_prepared.py"), str(args.work / "before"),
                           str(args.work / "after")], capture_output=True, text=True)
    print("before vs after tables:", done.stdout.strip())
    return done.returncode


if __name__ == "__main__":
    raise SystemExit(main())
