"""``readgaze bench`` on Ray: two workers give the numbers of one unit at a time; a worker killed mid-unit has its unit
retried; SIGTERM to the driver stops every process it started and writes the partial leaderboard; a driver killed
with SIGKILL halfway and resumed gives the leaderboard of an uninterrupted run.

Slow (Ray starts a cluster of processes, fresh workers import torch): about 3 min each (+1 min set-up) on 2 cores
shared with six other agents (load ~8), most of it start-up; run in CI.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import polars as pl
import pytest
import yaml
from synthetic import write_synthetic_dataset
from test_training_bench import model_yaml

from readgaze.models.training import bench_config as bc
from readgaze.models.training.bench import run_bench
from readgaze.models.training.runner import Engine

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("one_torch_thread")]
pytest.importorskip("ray", reason="readgaze[cluster] (Ray) is not installed")
TESTS = Path(__file__).resolve().parent


def _config_file(folder: Path, dataset: Path) -> Path:
    raw = {"datasets": {"syn": str(dataset)}, "tasks": ["reading_goal"],
           "models": [str(model_yaml(folder, "linear", "TrialLinear")),
                      str(model_yaml(folder, "linear_slow", "TrialLinear"))],
           "grid": {"linear_slow": {"model.init_args.learning_rate": [0.01]}},
           "baselines": ["reading_speed"], "data": {"n_folds": 3, "text_encoder": "tiny", "max_text_tokens": 48},
           "trainer": {"max_epochs": 3}}
    path = folder / "bench.yaml"
    path.write_text(yaml.safe_dump(raw), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    """The dataset, the bench YAML and the leaderboard of an uninterrupted run, one unit at a time in this process."""
    folder = tmp_path_factory.mktemp("bench_ray")
    dataset = write_synthetic_dataset(folder / "data", n_participants=6, n_items=6, n_words=16)
    path = _config_file(folder, dataset)
    reference = folder / "serial"
    assert run_bench(bc.load(str(path), {}), reference, Engine(workers=1)) == 0
    return path, pl.read_csv(reference / "leaderboard.csv")


def _same_board(out: Path, reference: pl.DataFrame) -> None:
    board = pl.read_csv(out / "leaderboard.csv")
    assert board.equals(reference), (board, reference)
    assert set(reference["model"]) >= {"Chance", "majority", "TrialLinear (linear)", "TrialLinear (linear_slow)",
                                       "MajorityVote", "LogisticEnsemble"}


def _unit_ids(out: Path, name: str) -> list[str]:
    return sorted(str(p.parent.relative_to(out / "units")) for p in (out / "units").rglob(name))


def test_two_ray_workers_give_the_serial_numbers_and_a_killed_worker_has_its_unit_retried(setup, tmp_path):
    path, reference = setup
    out = tmp_path / "ray"
    killed: list[str] = []

    def kill_one_worker():  # SIGKILL the worker of the first model unit seen running
        deadline = time.time() + 300
        while time.time() < deadline and not killed:
            for running in (out / "units").rglob("running.json") if (out / "units").is_dir() else []:
                if "/baselines/" in str(running):
                    continue
                try:
                    pid = int(yaml.safe_load(running.read_text())["pid"])
                except (OSError, TypeError, ValueError, KeyError):
                    continue
                if pid != os.getpid():
                    os.kill(pid, signal.SIGKILL)
                    killed.append(str(running.parent.relative_to(out / "units")))
                    return
            time.sleep(0.05)

    thread = threading.Thread(target=kill_one_worker, daemon=True)
    thread.start()
    assert run_bench(bc.load(str(path), {}), out, Engine(workers=2)) == 0
    thread.join(timeout=1)
    assert killed, "no unit was seen running"
    record = yaml.safe_load((out / "units" / killed[0] / "unit.json").read_text())
    assert record["attempt"] == 2 and record["status"] == "done"  # Ray ran it again on a fresh worker
    assert "after an interrupted attempt" in (out / "units" / killed[0] / "train.log").read_text()
    assert len(_unit_ids(out, "unit.json")) == 9 and not _unit_ids(out, "running.json")
    _same_board(out, reference)  # two workers, and a retried unit: the numbers of one unit at a time


def _descendants(pid: int) -> set[int]:
    """Every process below ``pid`` (Linux /proc)."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    found, todo = set(), [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            if child not in found:
                found.add(child)
                todo.append(child)
    return found


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def _driver(path: Path, out: Path, workers: int = 2) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(TESTS), os.environ.get("PYTHONPATH", "")]),
           "OMP_NUM_THREADS": "1"}
    return subprocess.Popen([sys.executable, "-m", "readgaze.cli", "bench", "-c", str(path), "--out", str(out),
                             "--workers", str(workers)], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True)


def _wait_for(condition, seconds: float = 300) -> None:
    deadline = time.time() + seconds
    while not condition():
        assert time.time() < deadline, "timed out"
        time.sleep(0.1)


def test_sigterm_stops_every_worker_and_kill_9_then_resume_gives_the_same_leaderboard(setup, tmp_path):
    path, reference = setup
    out = tmp_path / "stopped"

    driver = _driver(path, out)  # 1. SIGTERM once a unit finished and another is running
    _wait_for(lambda: _unit_ids(out, "unit.json") and _unit_ids(out, "running.json"))
    started = _descendants(driver.pid)
    assert len(started) >= 3  # Ray's processes and its workers
    driver.send_signal(signal.SIGTERM)
    output = driver.communicate(timeout=120)[0]
    assert driver.returncode == 143, output[-2000:]
    assert "stopped (SIGTERM)" in output
    time.sleep(2)
    assert not [p for p in started if _alive(p)]  # no orphans: every process it started is gone
    assert "**PARTIAL**" in (out / "leaderboard.md").read_text()
    done_before = _unit_ids(out, "unit.json")

    driver = _driver(path, out, workers=1)  # 2. resume (units in the driver's process), then SIGKILL halfway
    _wait_for(lambda: len(_unit_ids(out, "unit.json")) >= max(len(done_before) + 1, 5))
    driver.kill()
    driver.communicate(timeout=60)
    assert len(_unit_ids(out, "unit.json")) < 9

    assert run_bench(bc.load(str(path), {}), out, Engine(workers=1)) == 0  # 3. resume to the end
    assert len(_unit_ids(out, "unit.json")) == 9
    _same_board(out, reference)
