"""``readgaze bench status DIR``: where a benchmark stands (done, running, failed with the error and log, left) and the
time left, estimated from the finished units; read from the benchmark folder alone, while it runs or after."""

from __future__ import annotations

import argparse
import json
import os
import socket
import time
from pathlib import Path

from readgaze.errors import ConfigError
from readgaze.models.training import bench_config as bc
from readgaze.models.training.runner import duration


def unit_states(out: Path, units: list[dict]) -> dict[str, tuple[str, dict]]:
    """id -> (state, record): done, failed, running (``running.json``, no result yet) or left."""
    states = {}
    for unit in units:
        folder = out / "units" / unit["id"]
        for name, state in (("unit.json", "done"), ("failed.json", "failed"), ("running.json", "running")):
            path = folder / name
            if path.is_file():
                try:
                    record = json.loads(path.read_text(encoding="utf-8"))
                except ValueError:
                    continue
                if state == "done" and record.get("hash") != unit["hash"]:
                    continue
                states[unit["id"]] = (state, record)
                break
        else:
            states[unit["id"]] = ("left", {})
    return states


def time_left(out: Path, units, workers: int) -> float | None:
    """Seconds left, from the finished units: each left unit costs the mean of its (task, model)'s finished units
    (else of every finished unit of its kind), a running one what is left of that; the sum over ``workers``."""
    plan = [u.summary() if isinstance(u, bc.Unit) else u for u in units]
    states = unit_states(out, plan)
    finished: dict[tuple, list[float]] = {}
    for unit in plan:
        state, record = states[unit["id"]]
        if state == "done" and record.get("seconds"):
            for key in ((unit["task"], unit.get("model_name")), (unit["kind"],)):
                finished.setdefault(key, []).append(float(record["seconds"]))
    if not finished:
        return None
    total = 0.0
    for unit in plan:
        state, record = states[unit["id"]]
        if state in ("done", "failed"):
            continue
        same = finished.get((unit["task"], unit.get("model_name"))) or finished.get((unit["kind"],)) or \
            [s for v in finished.values() for s in v]
        expected = sum(same) / len(same)
        if state == "running" and record.get("started"):
            expected = max(expected - (time.time() - float(record["started"])), 0.0)
        total += expected
    return total / max(workers, 1)


def status_command(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="readgaze bench status", description="a benchmark's progress")
    parser.add_argument("out", help="benchmark folder")
    args = parser.parse_args(argv)
    print(status_text(Path(args.out)))
    return 0


def status_text(out: Path) -> str:
    """done / running / failed (error and log) / left, and the time left."""
    if not (out / "plan.json").is_file():
        raise ConfigError("not a readgaze bench folder (no plan.json)", file=out)
    plan = json.loads((out / "plan.json").read_text(encoding="utf-8"))["units"]
    driver = json.loads((out / "driver.json").read_text(encoding="utf-8")) if (out / "driver.json").is_file() \
        else {}
    alive = driver.get("host") == socket.gethostname() and _pid_alive(driver.get("pid"))
    states = unit_states(out, plan)
    by_state: dict[str, list] = {"done": [], "running": [], "failed": [], "left": []}
    for uid, (state, record) in states.items():
        by_state[state].append((uid, record))
    lines = [f"benchmark {out}: {len(plan)} units; driver pid {driver.get('pid')} on {driver.get('host')} "
             f"{'running' if alive else 'not running'}"]
    lines.append(f"  done     {len(by_state['done'])}")
    lines.append(f"  running  {len(by_state['running'])}" + ("" if alive or not by_state["running"] else
                                                              " (interrupted: they restart on resume)"))
    for uid, record in by_state["running"]:
        since = time.time() - float(record.get("started", time.time()))
        lines.append(f"    {uid}: {duration(since)} (attempt {record.get('attempt', 1)}, pid {record.get('pid')} on "
                     f"{record.get('host')})")
    lines.append(f"  failed   {len(by_state['failed'])}")
    for uid, record in by_state["failed"]:
        lines.append(f"    {uid}: {record.get('error')} (log: {record.get('log')})")
    lines.append(f"  left     {len(by_state['left'])}")
    left = time_left(out, plan, int(driver.get("workers") or 1))
    lines.append("  time left: " + ("none: every unit finished" if len(by_state["done"]) == len(plan) else
                                    "none: no unit left to run (--retry-failed reruns the failed ones)"
                                    if not by_state["left"] and not by_state["running"] else
                                    "unknown (no unit finished yet)" if left is None else
                                    f"about {duration(left)} with {driver.get('workers') or 1} worker(s), "
                                    f"from {len(by_state['done'])} finished unit(s)"))
    return "\n".join(lines)


def _pid_alive(pid) -> bool:
    if not pid:
        return False
    try:
        os.kill(int(pid), 0)
    except (OSError, ValueError):
        return False
    return True
