"""The one way readgaze runs units of work in parallel (``readgaze bench``, ``readgaze cv``'s folds, the demo): Ray.

A *unit* is a call ``function(*job)`` (a fold of ``cv``, a (task, model, fold, seed, grid point) of ``bench``).
:class:`UnitRunner` runs a list of them and yields ``(index, outcome)`` as each finishes, in any order:

* ``workers == 1`` and no ``address``: one after the other in this process (no Ray, nothing to start);
* otherwise each unit is a Ray task with its CPU and GPU share (``cpus_per_unit``, ``gpus_per_unit``; a fraction
  packs several small models on one GPU). Without ``address`` an embedded local Ray is started with
  ``workers x cpus_per_unit`` CPUs (the machine's GPUs are found by Ray) and shut down afterwards; with ``address``
  (``"auto"``, ``"ray://host:10001"``, ``"host:6379"``) the units go to that existing cluster (``--workers`` then
  caps the units in flight; the cluster's resources decide the rest). See ``docs/benchmark.md``.

Faults: a worker process that dies (killed, out of memory, node lost) has its unit retried by Ray on another worker
(``max_retries``, default 3); the unit function must start cleanly from whatever an interrupted attempt left
(``readgaze bench``'s units clear their folder). An exception raised *by* the unit is not retried: it comes back as a
:class:`UnitError` outcome, and the other units go on. Ctrl-C or SIGTERM in the driver raises
:class:`KeyboardInterrupt` (SIGTERM is mapped to it while the runner is open); leaving the runner then force-cancels
every unit in flight (Ray kills the worker processes running them) and shuts the embedded Ray down, so no worker
outlives the driver. A driver killed with SIGKILL takes the embedded Ray's processes with it (Ray ties them to the
driver's life on Linux).

:func:`fold_log` keeps Lightning's output of a unit in its own log file, :func:`progress_line` is ``readgaze cv``'s
line per finished fold. Ray is an optional dependency (``pip install -e '.[cluster]'`` in the checkout); without
it, parallel runs fall back to one unit at a time, said aloud.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import sys
import threading
import time
import traceback
import warnings
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from readgaze.errors import ConfigError
from readgaze.predictions import PREDICTION_VALUE, is_multiclass, is_regression

QUIET_TRAINER = ["--trainer.enable_progress_bar", "false", "--trainer.enable_model_summary", "false"]
"""Trainer overrides for units: no bars (two workers' bars overwrite each other) and no model table."""


@dataclass(frozen=True)
class Engine:
    """Where units run. ``workers``: units at once (1 = in this process, no Ray); ``address``: an existing Ray
    cluster; ``cpus_per_unit``/``gpus_per_unit``: each unit's share (Ray resources); ``max_retries``: reruns of a
    unit whose worker died."""

    workers: int = 1
    address: str | None = None
    cpus_per_unit: float = 1.0
    gpus_per_unit: float = 0.0
    max_retries: int = 3

    @property
    def uses_ray(self) -> bool:
        return self.workers > 1 or self.address is not None

    def threads(self) -> int:
        """torch CPU threads for one unit (its CPU share, at least 1)."""
        return max(1, int(self.cpus_per_unit))


@dataclass
class UnitError:
    """A unit that did not return: ``error`` is the one-line reason, ``detail`` the traceback (or Ray's report)."""

    error: str
    detail: str = ""
    exception: BaseException | None = None


def ray_available() -> bool:
    try:
        import ray  # noqa: F401
    except ImportError:
        return False
    return True


def resolve_engine(engine: Engine, out=None) -> Engine:
    """``engine``, or one worker when Ray is not installed (said on ``out``); an address without Ray is an error."""
    if not engine.uses_ray or ray_available():
        return engine
    if engine.address is not None:
        raise ConfigError(f"--address {engine.address} needs Ray: pip install -e '.[cluster]' in the readgaze checkout")
    print(f"readgaze: Ray is not installed (pip install -e '.[cluster]'): running the units one at a time "
          f"instead of {engine.workers} at once", file=out or sys.stderr, flush=True)
    return Engine(workers=1, cpus_per_unit=engine.cpus_per_unit, gpus_per_unit=engine.gpus_per_unit)


def _call(function: Callable, job: tuple):
    """What a Ray task runs: the unit, on a worker (module level, so Ray pickles it by reference)."""
    return function(*job)


class UnitRunner:
    """Run units with an :class:`Engine` (see the module docstring). Use as a context manager::

        with UnitRunner(Engine(workers=2)) as runner:
            for index, outcome in runner.run(function, jobs):
                ...  # outcome: the unit's return value, or a UnitError

    Leaving the block (normally, by an exception, Ctrl-C or SIGTERM) cancels what is still in flight and shuts
    down a Ray this runner started.
    """

    def __init__(self, engine: Engine, out=None) -> None:
        self.out = out or sys.stderr
        if engine.address is not None:
            _token_auth()  # before Ray is imported: it reads the mode then
        self.engine = resolve_engine(engine, self.out)
        self._ray = None
        self._started_ray = False
        self._pending: dict = {}
        self._saved_handler = None

    # ---- lifetime ----
    def connect(self) -> UnitRunner:
        """Start (or join, with ``address``) Ray now, before anything is written: a cluster that is not there is a
        :class:`ConfigError` saying what to start. Done by entering the block when not done before."""
        if self.engine.uses_ray and self._ray is None:
            self._start_ray()
        return self

    def __enter__(self) -> UnitRunner:
        STOP_SIGNAL.clear()
        self.connect()
        if threading.current_thread() is threading.main_thread():  # SIGTERM stops the units as Ctrl-C does
            self._saved_handler = {sig: signal.signal(sig, _raise_interrupt) for sig in (signal.SIGTERM,
                                                                                        signal.SIGINT)}
        return self

    def __exit__(self, *exc) -> None:
        try:
            self.cancel()
        finally:
            self.close()
            if self._saved_handler is not None:  # (Lightning ignores SIGINT after an interrupted fit: undone here)
                for sig, handler in self._saved_handler.items():
                    signal.signal(sig, handler)
                self._saved_handler = None

    def close(self) -> None:
        """Shut down the Ray this runner started (or disconnect from the cluster); again: nothing."""
        if self._started_ray:
            self._ray.shutdown()
            self._started_ray = False

    def _start_ray(self) -> None:
        import ray

        self._ray = ray
        if ray.is_initialized():  # a Ray the caller started (tests, notebooks): use it, leave it running
            return
        os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
        common = {"include_dashboard": False, "log_to_driver": False, "logging_level": logging.WARNING,
                  "configure_logging": True}
        if self.engine.address is not None:
            try:
                ray.init(address=self.engine.address, **common)
            except (ConnectionError, TimeoutError, RuntimeError) as error:  # nothing answers at that address
                raise ConfigError(no_cluster(self.engine.address, error)) from None
        else:
            paths = [p for p in sys.path if p and Path(p).is_dir()]  # the driver's imports (tests, local models)
            env = {"PYTHONPATH": os.pathsep.join(paths)}
            ray.init(num_cpus=max(1, int(round(self.engine.workers * self.engine.cpus_per_unit))),
                     runtime_env={"env_vars": env}, **common)
        self._started_ray = True

    @property
    def parallel(self) -> int:
        """Units that can run at once: the workers, or on a cluster what its CPUs and GPUs allow (capped by
        ``workers`` when > 1); for time estimates."""
        if self.engine.address is None or self._ray is None:
            return max(1, self.engine.workers)
        resources = self._ray.cluster_resources()
        fits = [resources.get("CPU", 1) / max(self.engine.cpus_per_unit, 1e-9)]
        if self.engine.gpus_per_unit > 0:
            fits.append(resources.get("GPU", 0) / self.engine.gpus_per_unit)
        if self.engine.workers > 1:
            fits.append(self.engine.workers)
        return max(1, int(min(fits)))

    def cancel(self) -> None:
        """Force-cancel every unit in flight (Ray kills their worker processes)."""
        pending, self._pending = self._pending, {}
        for ref in pending:
            with contextlib.suppress(Exception):
                self._ray.cancel(ref, force=True)

    # ---- running ----
    def run(self, function: Callable, jobs: Sequence[tuple]) -> Iterator[tuple[int, object]]:
        """Yield ``(index into jobs, outcome)`` as each unit finishes; outcome = return value or :class:`UnitError`."""
        if not self.engine.uses_ray:
            for index, job in enumerate(jobs):
                try:
                    outcome = function(*job)
                except Exception as error:  # noqa: BLE001 (a unit's failure is recorded; the others go on)
                    outcome = UnitError(_one_line(error), traceback.format_exc(), error)
                yield index, outcome
            return
        ray = self._ray
        task = ray.remote(_call).options(num_cpus=self.engine.cpus_per_unit, num_gpus=self.engine.gpus_per_unit,
                                         max_retries=self.engine.max_retries, retry_exceptions=False)
        limit = self.engine.workers if self.engine.address is None or self.engine.workers > 1 else len(jobs)
        queue = list(enumerate(jobs))
        while queue or self._pending:
            while queue and len(self._pending) < max(1, limit):
                index, job = queue.pop(0)
                self._pending[task.remote(function, job)] = index
            ready, _ = ray.wait(list(self._pending), num_returns=1, timeout=1.0)
            for ref in ready:
                index = self._pending.pop(ref)
                yield index, self._outcome(ref)

    def _outcome(self, ref):
        ray = self._ray
        try:
            return ray.get(ref)
        except ray.exceptions.RayTaskError as error:  # the unit raised
            cause = getattr(error, "cause", None) or error
            return UnitError(_one_line(cause), str(error), cause)
        except ray.exceptions.RayError as error:  # its worker died more than max_retries times, or was cancelled
            return UnitError(f"{type(error).__name__}: the unit's worker died {self.engine.max_retries + 1} "
                             f"time(s) ({str(error).splitlines()[0] if str(error) else ''})", str(error), error)


STOP_SIGNAL: list[int] = []
"""The signals that stopped a runner in this process (SIGTERM is mapped to KeyboardInterrupt; Ray may re-raise it
as a new KeyboardInterrupt, so the number is kept here)."""


def _token_auth() -> None:
    """Ray >= 2.5x clusters authenticate clients with a token: a driver joining one needs ``RAY_AUTH_MODE=token``
    (set here when the user has a token: ``RAY_AUTH_TOKEN``, ``RAY_AUTH_TOKEN_PATH`` or ``~/.ray/auth_token``)."""
    has_token = (os.environ.get("RAY_AUTH_TOKEN") or os.environ.get("RAY_AUTH_TOKEN_PATH")
                 or (Path.home() / ".ray" / "auth_token").is_file())
    if has_token and "RAY_AUTH_MODE" not in os.environ:
        os.environ["RAY_AUTH_MODE"] = "token"


def no_cluster(address: str, error: BaseException) -> str:
    """The one line for ``--address`` where no Ray cluster answers: what happened and what to start."""
    first = (str(error).strip().splitlines() or [type(error).__name__])[0]
    return (f"--address {address}: no Ray cluster answers there ({first}); start one with 'ray start --head' on "
            f"this machine (then --address auto; other machines join with 'ray start --address HEAD_IP:6379'), or "
            f"leave out --address to run on a local Ray (--workers N)")


def _raise_interrupt(signum, frame):
    STOP_SIGNAL.append(signum)
    raise KeyboardInterrupt(f"signal {signum}")


def _one_line(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    return f"{type(error).__name__}: {text[0] if text else ''}".rstrip(": ")


# ---- readgaze cv's folds ----
def run_folds(function, jobs: list[tuple], workers: int, *, fold_of=lambda job: job[2], out=None) -> list:
    """Run ``function(*job)`` for every job (on ``workers`` Ray workers when > 1) and print a line per fold.

    ``function`` returns a dict that may hold ``seconds``, ``val_auroc`` and ``test_auroc`` (``val_rmse`` and
    ``test_rmse`` for a regression). Results come back in
    job order; the first fold that raises stops the run with its exception.
    """
    out = out or sys.stderr
    start, results, total = time.perf_counter(), {}, len(jobs)
    print(f"readgaze cv: {total} fold(s), {workers} worker(s); Lightning's output goes to fold_k/train.log",
          file=out, flush=True)
    with UnitRunner(Engine(workers=workers), out=out) as runner:
        for index, result in runner.run(function, jobs):
            if isinstance(result, UnitError):
                raise result.exception if result.exception is not None else RuntimeError(result.error)
            results[index] = result
            done = len(results)
            elapsed = time.perf_counter() - start
            left = elapsed / done * (total - done) if done < total else None
            print(progress_line(fold_of(jobs[index]), done, total, result.get("seconds", elapsed), result, left),
                  file=out, flush=True)
    return [results[i] for i in range(total)]


@contextlib.contextmanager
def fold_log(path: str | Path):
    """Send fds 1/2 (and ``sys.stdout``/``sys.stderr``), Python warnings and the ``lightning`` loggers to ``path``
    (appended) for the block."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    sys.stdout.flush()
    sys.stderr.flush()
    saved = os.dup(1), os.dup(2)
    with open(path, "a", encoding="utf-8") as handle, warnings.catch_warnings(), \
            contextlib.redirect_stdout(handle), contextlib.redirect_stderr(handle):
        warnings.simplefilter("default")
        warnings.showwarning = lambda message, category, filename, lineno, file=None, line=None: handle.write(
            warnings.formatwarning(message, category, filename, lineno, line))
        os.dup2(handle.fileno(), 1)
        os.dup2(handle.fileno(), 2)
        loggers = [logging.getLogger(n) for n in ("lightning", "lightning.pytorch", "lightning.fabric",
                                                  "pytorch_lightning")]
        state = [(lg, lg.handlers[:], lg.propagate) for lg in loggers]
        handler = logging.StreamHandler(handle)
        for lg in loggers:
            lg.handlers, lg.propagate = [handler], False
        try:
            yield handle
        finally:
            for lg, handlers, propagate in state:
                lg.handlers, lg.propagate = handlers, propagate
            sys.stdout.flush()
            sys.stderr.flush()
            handle.flush()
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            os.close(saved[0])
            os.close(saved[1])


def auroc_of(path: str | Path) -> float | None:
    """AUROC of a binary prediction file (``label``, ``prediction_prob``); None when multiclass or one class."""
    import polars as pl
    from sklearn.metrics import roc_auc_score

    path = Path(path)
    if not path.is_file():
        return None
    frame = pl.read_parquet(path)
    if is_regression(frame) or is_multiclass(frame) or frame["label"].n_unique() < 2:
        return None
    return float(roc_auc_score(frame["label"].to_numpy(), frame["prediction_prob"].to_numpy()))


def rmse_of(path: str | Path) -> float | None:
    """RMSE of a regression prediction file (``label``, ``prediction_value``); None for a classification file."""
    import polars as pl
    from sklearn.metrics import root_mean_squared_error

    path = Path(path)
    if not path.is_file():
        return None
    frame = pl.read_parquet(path)
    if not is_regression(frame) or frame.height == 0:
        return None
    return float(root_mean_squared_error(frame["label"].to_numpy(), frame[PREDICTION_VALUE].to_numpy()))


def duration(seconds: float) -> str:
    """``41 s``, ``4 min 54 s``, ``2 h 5 min``."""
    seconds = int(round(seconds))
    if seconds < 60:
        return f"{seconds} s"
    minutes, seconds = divmod(seconds, 60)
    return f"{minutes} min {seconds} s" if minutes < 60 else f"{minutes // 60} h {minutes % 60} min"


_duration = duration


def progress_line(fold: int, done: int, total: int, seconds: float, result: dict, left_s: float | None) -> str:
    """``fold 3 (2/10) done in 41 s: val AUROC 71.2, test AUROC 65.0; about 4 min 54 s left`` (a regression run:
    ``val RMSE 1.234, test RMSE 1.301``, in the target's units)."""
    def pct(key):
        value = result.get(key)
        return "n/a" if value is None else f"{100 * value:.1f}"

    tail = "" if left_s is None else f"; about {duration(left_s)} left"
    if result.get("val_rmse") is not None or result.get("test_rmse") is not None:
        def number(key):
            value = result.get(key)
            return "n/a" if value is None else f"{value:.3f}"

        return (f"fold {fold} ({done}/{total}) done in {duration(seconds)}: val RMSE {number('val_rmse')}, "
                f"test RMSE {number('test_rmse')}{tail}")
    return (f"fold {fold} ({done}/{total}) done in {duration(seconds)}: val AUROC {pct('val_auroc')}, "
            f"test AUROC {pct('test_auroc')}{tail}")
