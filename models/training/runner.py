"""``readgaze cv`` progress: one line per finished fold, and Lightning's own output in a log file.

Each fold runs inside :func:`fold_log`, which sends the process's file descriptors 1 and 2 (Lightning's banners,
tips, deprecation warnings, progress bars; also those of the fold's worker process) and Python warnings to
``fold_k/train.log`` in the run folder. :func:`run_folds` prints, as each fold finishes (in any order with
``--workers``)::

    fold 3/10 done in 41 s: val AUROC 71.2, test AUROC 65.0; about 4 min 54 s left

where the estimate is the mean fold time so far x the folds left / the workers.
"""

from __future__ import annotations

import concurrent.futures as futures
import contextlib
import logging
import os
import sys
import time
import warnings
from pathlib import Path

QUIET_TRAINER = ["--trainer.enable_progress_bar", "false", "--trainer.enable_model_summary", "false"]
"""Trainer overrides for cv folds: no bars (two workers' bars overwrite each other) and no model table."""


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
    frame = pl.read_parquet(path, columns=["label", "prediction_prob"])
    if isinstance(frame.schema["prediction_prob"], pl.List) or frame["label"].n_unique() < 2:
        return None
    return float(roc_auc_score(frame["label"].to_numpy(), frame["prediction_prob"].to_numpy()))


def _duration(seconds: float) -> str:
    seconds = int(round(seconds))
    if seconds < 60:
        return f"{seconds} s"
    minutes, seconds = divmod(seconds, 60)
    return f"{minutes} min {seconds} s" if minutes < 60 else f"{minutes // 60} h {minutes % 60} min"


def progress_line(fold: int, done: int, total: int, seconds: float, result: dict, left_s: float | None) -> str:
    """``fold 3 (2/10) done in 41 s: val AUROC 71.2, test AUROC 65.0; about 4 min 54 s left``."""
    def pct(key):
        value = result.get(key)
        return "n/a" if value is None else f"{100 * value:.1f}"

    tail = "" if left_s is None else f"; about {_duration(left_s)} left"
    return (f"fold {fold} ({done}/{total}) done in {_duration(seconds)}: val AUROC {pct('val_auroc')}, "
            f"test AUROC {pct('test_auroc')}{tail}")


def run_folds(function, jobs: list[tuple], workers: int, *, fold_of=lambda job: job[2], out=None) -> list:
    """Run ``function(*job)`` for every job (in ``workers`` spawned processes when > 1) and print a line per fold.

    ``function`` returns a dict that may hold ``seconds``, ``val_auroc`` and ``test_auroc``. Results come back in
    job order.
    """
    out = out or sys.stderr
    start, results, total = time.perf_counter(), {}, len(jobs)
    print(f"readgaze cv: {total} fold(s), {workers} worker(s); Lightning's output goes to fold_k/train.log",
          file=out, flush=True)

    def report(index: int, result: dict) -> None:
        results[index] = result
        done = len(results)
        elapsed = time.perf_counter() - start
        left = elapsed / done * (total - done) if done < total else None
        print(progress_line(fold_of(jobs[index]), done, total, result.get("seconds", elapsed), result, left),
              file=out, flush=True)

    if workers <= 1:
        for index, job in enumerate(jobs):
            report(index, function(*job))
    else:
        import multiprocessing

        context = multiprocessing.get_context("spawn")
        with futures.ProcessPoolExecutor(max_workers=workers, mp_context=context) as pool:
            pending = {pool.submit(function, *job): index for index, job in enumerate(jobs)}
            for future in futures.as_completed(pending):
                report(pending[future], future.result())
    return [results[i] for i in range(total)]
