"""``readgaze bench``: the whole benchmark (datasets x tasks x models and baselines x folds x seeds x grid points) as
one resumable run on Ray, into one leaderboard with significance.

Commands::

    readgaze bench -c bench.yaml --out DIR [--workers 2] [--address auto] [--gpus-per-unit 0.5] [--retry-failed]
    readgaze bench --dataset FOLDER --tasks reading_goal comprehension --models beyelstm roberteye_f --out DIR ...
    readgaze bench ... --data.n_folds 4 --data.text_encoder tiny --trainer.max_epochs 3  # as cv and fit take them
    readgaze bench ... --ablate text gaze   # each model's ablated twins too (rows "<Model> (<model>_ablate_<kind>)")
    readgaze bench status DIR      # done, running, failed (error, log), left, and the time left
    readgaze bench report DIR      # the leaderboard again from the finished units

The configuration (:mod:`readgaze.models.training.bench_config`; ``--data.X`` and ``--trainer.X`` flags go into its
``data:`` and ``trainer:``) is checked in full first, and a cluster at ``--address`` joined, before anything is
written (no cluster there: one line saying to ``ray start --head``): a task, model, baseline,
grid or LightningCLI key that does not exist stops the run before any unit starts, naming the closest valid one;
the dataset's arrays for each task are built once into the array cache (:mod:`readgaze.models.data.cache`), which
every unit then memory-maps. Units (:mod:`readgaze.models.training.bench_unit`) run on
:class:`~readgaze.models.training.runner.UnitRunner` (one at a time in this process with ``--workers 1``; else on a
local Ray, or on the cluster at ``--address``). Under ``DIR``:

* ``units/<dataset>/<task>/<model>/fold_k/seed_s[/grid_i]/`` and ``units/<dataset>/<task>/baselines/fold_k/``:
  each unit's ``spec.json``, ``train.log``, checkpoint, ``predictions_{val,test}.parquet``, ``qc.json`` and, once it
  finished, ``unit.json`` (or ``failed.json`` with the error line and the log's path);
* ``leaderboard.md``, ``leaderboard.csv`` (:mod:`readgaze.models.training.bench_report`), ``units.csv`` (every
  model unit's validation loss and scores), ``grid.csv`` (the grid point chosen per model and fold),
  ``figures/roc_<dataset>_<task>.png`` (one ROC panel per regime, every row) and ``figures/leaderboard.png``;
* ``plan.json`` (the units of the latest run), ``driver.json`` (the driver's host, pid and workers).

Resuming: run the same command again. A finished unit is never rerun; one that was interrupted (its worker or the
driver died) restarts cleanly; a failed one is rerun with ``--retry-failed``. A unit folder made by another
configuration (other settings, model YAML or dataset files) stops the run: use another ``--out``. A unit whose worker
dies is retried by Ray on another worker. Ctrl-C or SIGTERM stops every unit in flight (their workers are killed),
writes the leaderboard of the units finished so far, marked PARTIAL, and exits 130 (143 for SIGTERM).
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import socket
import sys
import time
from pathlib import Path

from readgaze.dataset import Dataset
from readgaze.errors import ConfigError, ReadgazeError
from readgaze.models.training import bench_config as bc
from readgaze.models.training.bench_leaderboard import report_command, write_report
from readgaze.models.training.bench_status import status_command, time_left, unit_states
from readgaze.models.training.runner import Engine, UnitError, UnitRunner, duration
from readgaze.tasks import check_missing_label


def main(argv: list[str] | None = None) -> int:
    """Entry point; ``argv[0]`` is ``"bench"``."""
    argv = list(sys.argv[1:] if argv is None else argv)[1:]
    try:
        if argv[:1] == ["status"]:
            return status_command(argv[1:])
        if argv[:1] == ["report"]:
            return report_command(argv[1:])
        return run_command(argv[1:] if argv[:1] == ["run"] else argv)
    except ReadgazeError as error:
        print(f"readgaze bench: error: {error}", file=sys.stderr)
        return 2


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="readgaze bench", description=__doc__.split("\n\nThe configuration")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog="--data.X V and --trainer.X V (as cv and fit take them) set the "
                                            "configuration's data: and trainer: (the folds, the arrays, every unit);"
                                            "\nany other --KEY VALUE (--model.init_args.X) goes to every model unit."
                                            "\nSee docs/benchmark.md; 'readgaze bench status DIR' shows a run's "
                                            "progress.")
    parser.add_argument("-c", "--config", help="bench YAML (datasets, tasks, models, baselines, folds, seeds, grid)")
    parser.add_argument("--out", required=True, help="benchmark folder (resumed when it exists)")
    parser.add_argument("--dataset", action="append", metavar="[NAME=]FOLDER", help="dataset folder (repeatable)")
    parser.add_argument("--tasks", nargs="+", help="reading_goal, comprehension, goal_question, dyslexia, "
                        "reading_comprehension_skill (a regression)")
    parser.add_argument("--models", nargs="+", help="packaged config names (readgaze configs) or YAML files")
    parser.add_argument("--baselines", nargs="+", help="default | all | none | kinds (majority is always added)")
    parser.add_argument("--no-ensembles", action="store_true", help="no MajorityVote / LogisticEnsemble rows")
    parser.add_argument("--folds", type=int, nargs="+", help="folds to run (default: all)")
    parser.add_argument("--seeds", type=int, help="seeds per configuration (0 .. N-1)")
    parser.add_argument("--grid", action="append", default=[], metavar="[MODEL:]KEY=V1,V2",
                        help="grid values tried per fold, chosen on validation loss (repeatable)")
    parser.add_argument("--workers", type=int, default=1, help="units at once (1: in this process, no Ray)")
    parser.add_argument("--address", help="an existing Ray cluster: auto, ray://HOST:10001 or HOST:6379")
    parser.add_argument("--cpus-per-unit", type=float, default=1.0, help="CPU cores per unit (Ray resource)")
    parser.add_argument("--gpus-per-unit", type=float, default=0.0, help="GPUs per unit; a fraction packs units")
    parser.add_argument("--ablate", nargs="+", metavar="KIND",
                        help="also run each model's ablated twins: text (words permuted), gaze (another reading's "
                             "gaze of the same text)")
    parser.add_argument("--retry-failed", action="store_true", help="rerun the units that failed")
    return parser


def run_command(argv: list[str]) -> int:
    args, extra = _parser().parse_known_args(argv)
    grid: dict[str, dict[str, list]] = {}
    for item in args.grid:
        model, _, rest = item.rpartition(":") if ":" in item.split("=")[0] else ("*", "", item)
        key, sep, values = rest.partition("=")
        if not sep or not values:
            raise ConfigError(f"--grid: got {item!r}, expected [MODEL:]KEY=V1,V2 (e.g. model.init_args."
                              f"learning_rate=1e-5,3e-5)")
        grid.setdefault(model, {})[key.removeprefix("--")] = values.split(",")
    flags = {"dataset": args.dataset, "tasks": args.tasks, "models": args.models, "folds": args.folds,
             "seeds": args.seeds, "grid": grid or None, "ensembles": False if args.no_ensembles else None,
             "ablate": args.ablate,
             "baselines": (args.baselines[0] if len(args.baselines) == 1 and args.baselines[0] in (
                 "default", "all", "none") else args.baselines) if args.baselines else None}
    config = bc.load(args.config, flags)
    bc.apply_overrides(config, extra)
    engine = Engine(workers=args.workers, address=args.address, cpus_per_unit=args.cpus_per_unit,
                    gpus_per_unit=args.gpus_per_unit)
    return run_bench(config, Path(args.out), engine, retry_failed=args.retry_failed)


def prepare(config: bc.BenchConfig, out: Path) -> tuple[list[bc.Unit], list[str]]:
    """Check everything (see the module docstring) and plan the units; nothing is run or written."""
    from readgaze.models.training.cv_settings import check_design

    configs, notes = bc.model_configs(config)
    for name, folder in config.datasets.items():
        try:
            Dataset(folder)
        except ConfigError as error:
            raise ConfigError(f"dataset {name!r}: {error.message}", file=folder) from None
        check_design(folder, config.n_folds, command="bench")
    bad = [f for f in config.fold_list() if not 0 <= f < config.n_folds]
    if bad:
        raise ConfigError(f"folds {bad} do not exist: data.n_folds is {config.n_folds} (folds 0 .. "
                          f"{config.n_folds - 1}); use --folds with folds below {config.n_folds} or a larger "
                          f"--data.n_folds")
    instead = {"path": "--dataset", "task": "--tasks", "fold": "--folds"}
    for key in config.data:
        if key in instead:
            raise ConfigError(f"data.{key} is set by readgaze bench per unit: remove it (data: in the YAML or "
                              f"--data.{key} on the command line) and use {instead[key]}")
    for task in config.tasks:  # a value for unlabelled trials: regression tasks only (the datamodule's check)
        try:
            check_missing_label(task, config.data.get("missing_label"), option="data.missing_label")
        except ConfigError as error:
            raise ConfigError(f"{error.message} (this run's tasks: {', '.join(config.tasks)}; run the regression "
                              f"task in its own bench, --tasks reading_comprehension_skill)") from None
    first = next(iter(config.datasets.values()))
    for (task, model), path in configs.items():
        _check_checkpoint(path)
        bc.check_parses(path, first, bc.common_args(config, task), bc.grid_points(config, model, path))
    return bc.plan(config, configs), notes


def _check_checkpoint(path: Path) -> None:
    import yaml

    callbacks = ((yaml.safe_load(path.read_text(encoding="utf-8")) or {}).get("trainer") or {}).get("callbacks") or []
    if not any("ModelCheckpoint" in str(c.get("class_path", "")) and (c.get("init_args") or {}).get("monitor")
               == "loss/val" for c in callbacks if isinstance(c, dict)):
        raise ConfigError("readgaze bench tests the best-on-validation checkpoint: the config's trainer.callbacks "
                          "need a lightning.pytorch.callbacks.ModelCheckpoint with monitor: loss/val, mode: min",
                          file=path)


def run_bench(config: bc.BenchConfig, out: Path, engine: Engine, *, retry_failed: bool = False,
              log=None) -> int:
    """Run (or resume) the benchmark into ``out``; returns the exit status (0, 1 when a unit failed, 130/143 when
    stopped)."""
    log = log or sys.stderr
    units, notes = prepare(config, out)
    runner = UnitRunner(engine, out=log).connect()  # a cluster that is not there: one line, nothing written
    try:
        return _run_units(config, out, engine, runner, units, notes, retry_failed, log)
    finally:
        runner.close()


def _run_units(config: bc.BenchConfig, out: Path, engine: Engine, runner: UnitRunner, units: list[bc.Unit],
               notes: list[str], retry_failed: bool, log) -> int:
    todo = _resume_state(out, units, retry_failed)
    warm_cache(config, units, log)
    same_plan = (out / "plan.json").is_file() and json.loads((out / "plan.json").read_text(encoding="utf-8")) == \
        {"units": [u.summary() for u in units]}
    token = _claim(out, units, engine)
    todo_units = [u for u in units if u.id in todo]
    states = unit_states(out, [u.summary() for u in units])
    n_failed = sum(1 for u in units if u.id not in todo and states[u.id][0] == "failed")
    print(f"readgaze bench: {len(units)} units: {len(units) - len(todo_units) - n_failed} finished, {n_failed} failed "
          f"(rerun with --retry-failed), {len(todo_units)} to run on {_where(engine)}; logs in "
          f"{out / 'units'}/*/train.log", file=log, flush=True)
    for note in notes:
        print(f"readgaze bench: {note}", file=log)
    specs = []
    for unit in todo_units:
        folder = out / "units" / unit.id
        folder.mkdir(parents=True, exist_ok=True)
        _atomic_json(folder / "spec.json", {**unit.spec, "hash": unit.hash})
        specs.append(({**unit.spec, "bench_dir": str(out.resolve()), "token": token,
                       "threads": engine.threads()},))
    started, finished, failed = time.perf_counter(), 0, 0
    stopped = None
    try:
        with runner:
            parallel = runner.parallel
            _atomic_json(out / "driver.json", {**json.loads((out / "driver.json").read_text(encoding="utf-8")),
                                                "workers": parallel})
            for index, outcome in runner.run(_unit_entry, specs):
                unit = todo_units[index]
                record = _record(out, unit, outcome)
                finished += 1
                failed += record["status"] != "done"
                print(_progress(unit, record, finished, len(specs), out, units, parallel), file=log, flush=True)
    except (KeyboardInterrupt, SystemExit):  # Lightning turns an interrupted fit into SystemExit(1)
        from readgaze.models.training.runner import STOP_SIGNAL

        if not STOP_SIGNAL and sys.exc_info()[0] is SystemExit:
            raise
        stopped = 128 + STOP_SIGNAL[-1] if STOP_SIGNAL else 130
        print(f"readgaze bench: stopped ({'SIGTERM' if stopped == 143 else 'Ctrl-C'}); every unit in flight was "
              f"cancelled; resume with the same command", file=log, flush=True)
    if finished == 0 and stopped is None and same_plan and (out / "leaderboard.md").is_file() and \
            _newest_result(out) < (out / "leaderboard.md").stat().st_mtime_ns:
        print(f"readgaze bench: no unit ran; the leaderboard is up to date: {out / 'leaderboard.md'}", file=log)
        return 0
    written = write_report(out, config, units, notes)
    partial = written["partial"]
    print(f"readgaze bench: {'PARTIAL ' if partial else ''}leaderboard: {written['markdown']} "
          f"({duration(time.perf_counter() - started)})", file=log, flush=True)
    if not partial:
        print(written["markdown"].read_text(encoding="utf-8"))
    if failed:
        print(f"readgaze bench: {failed} unit(s) failed: readgaze bench status {out} lists them with their logs; "
              f"--retry-failed reruns them", file=log)
    return stopped or (1 if failed else 0)


def _newest_result(out: Path) -> int:
    return max((p.stat().st_mtime_ns for name in ("unit.json", "failed.json") for p in (out / "units").rglob(name)),
               default=0)


def _unit_entry(spec: dict) -> dict:
    from readgaze.models.training.bench_unit import run_unit

    return run_unit(spec)


def _where(engine: Engine) -> str:
    if engine.address:
        return f"the Ray cluster at {engine.address}"
    if engine.workers > 1:
        return f"a local Ray of {engine.workers} workers ({engine.cpus_per_unit:g} CPU, {engine.gpus_per_unit:g} GPU " \
               f"per unit)"
    return "this process, one unit at a time"


def _resume_state(out: Path, units: list[bc.Unit], retry_failed: bool) -> set[str]:
    """The ids to run; refuses a folder whose units were made by another configuration."""
    todo, conflicts = set(), []
    for unit in units:
        folder = out / "units" / unit.id
        spec = folder / "spec.json"
        if spec.is_file():
            made = json.loads(spec.read_text(encoding="utf-8")).get("hash")
            if made != unit.hash:
                conflicts.append(unit.id)
                continue
        if (folder / "unit.json").is_file() and json.loads((folder / "unit.json").read_text()).get("status") == "done":
            continue
        if (folder / "failed.json").is_file() and not retry_failed:
            continue
        (folder / "failed.json").unlink(missing_ok=True)
        todo.add(unit.id)
    if conflicts:
        raise ConfigError(f"{out} holds {len(conflicts)} unit(s) made with another configuration (settings, model "
                          f"YAML or dataset files changed), e.g. {conflicts[0]}; their results are not mixed with "
                          f"these: use another --out (or delete those unit folders)")
    return todo


def _claim(out: Path, units: list[bc.Unit], engine: Engine) -> str:
    """Write ``.bench-id`` (the token workers check to write here), ``plan.json`` and ``driver.json``."""
    out.mkdir(parents=True, exist_ok=True)
    marker = out / ".bench-id"
    token = marker.read_text(encoding="utf-8").strip() if marker.is_file() else secrets.token_hex(8)
    marker.write_text(token, encoding="utf-8")
    _atomic_json(out / "plan.json", {"units": [u.summary() for u in units]})
    _atomic_json(out / "driver.json", {"host": socket.gethostname(), "pid": os.getpid(), "started": time.time(),
                                        "workers": engine.workers, "address": engine.address})
    return token


def warm_cache(config: bc.BenchConfig, units: list[bc.Unit], log) -> None:
    """Build each (dataset, task, text settings) array-cache entry and each fold's scalers once here, before the
    units read them (units on other machines build their machine's entry once, under a lock)."""
    from readgaze.models.data import ReadingDataModule, cache

    if not cache.enabled():
        return
    seen: dict[tuple, list[int]] = {}
    for unit in units:
        spec = unit.spec
        data = dict(spec["data"])
        if unit.kind == "model":
            import yaml

            own = (yaml.safe_load(spec["config_text"]) or {}).get("data") or {}
            data = {**own, **data}
        settings = {k: data[k] for k in ("reading_regime", "questions", "trial_feature_set", "text_encoder",
                                         "max_text_tokens", "missing_label", *bc.SAME_FOLDS)
                    if data.get(k) is not None}
        key = (spec["dataset"], spec["dataset_name"], spec["task"], json.dumps(settings, sort_keys=True))
        if spec["fold"] not in seen.setdefault(key, []):
            seen[key].append(spec["fold"])
    for (dataset, name, task, settings), folds in seen.items():
        settings = json.loads(settings)
        t0 = time.perf_counter()
        for fold in folds:
            ReadingDataModule(dataset, task=task, fold=fold, split_unit="participant_item", **settings).setup("fit")
        what = ", ".join(f"{k} {v}" for k, v in settings.items() if k not in bc.SAME_FOLDS) or "defaults"
        print(f"readgaze bench: arrays of {name}/{task} ({what}) and the scalers of {len(folds)} fold(s) ready in "
              f"{time.perf_counter() - t0:.1f} s", file=log)


def _record(out: Path, unit: bc.Unit, outcome) -> dict:
    """Write the unit's files that came back, then ``unit.json`` (done) or ``failed.json``; return the record."""
    folder = out / "units" / unit.id
    if isinstance(outcome, UnitError):
        record = {"status": "failed", "error": outcome.error, "detail": outcome.detail[-4000:]}
    else:
        record = dict(outcome)
        for name, data in (record.pop("files", None) or {}).items():
            (folder / name).parent.mkdir(parents=True, exist_ok=True)
            (folder / name).write_bytes(data)
    record.update(id=unit.id, hash=unit.hash, log=str(folder / "train.log"))
    (folder / "running.json").unlink(missing_ok=True)
    _atomic_json(folder / ("unit.json" if record["status"] == "done" else "failed.json"), record)
    return record


def _atomic_json(path: Path, value) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps(value, indent=1, default=str), encoding="utf-8")
    os.replace(tmp, path)


def _progress(unit: bc.Unit, record: dict, done: int, total: int, out: Path, units: list[bc.Unit],
              parallel: int) -> str:
    what = unit.id.replace("/", " ")
    if record["status"] != "done":
        return f"[{done}/{total}] {what}: FAILED: {record['error']} (log: {record['log']})"
    scores = ""
    if record.get("test_auroc") is not None:
        scores = f": val loss {record['val_loss']:.3f}, test AUROC {100 * record['test_auroc']:.1f}"
    elif record.get("test_rmse") is not None:  # a regression task
        scores = f": val loss {record['val_loss']:.3f}, test RMSE {record['test_rmse']:.3f}"
    left = time_left(out, units, parallel)
    tail = "" if left is None or done == total else f"; about {duration(left)} left for the whole benchmark"
    return f"[{done}/{total}] {what} done in {duration(record['seconds'])}{scores}{tail}"
