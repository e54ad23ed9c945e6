"""The stages of ``readgaze demo`` (:mod:`readgaze.models.demo`): simulate, prepare, train and test, report.

Training output of Lightning and of the fold workers goes to ``<out>/train.log`` (file descriptors 1 and 2 are
redirected while folds run) and ``runs/<model>/fold_k/train.log``, so the terminal shows only the progress display
and the table. Folds run as units of :mod:`readgaze.models.training.runner` (Ray workers when ``workers`` > 1).
"""

from __future__ import annotations

import contextlib
import functools
import os
import sys
import threading
import time
from pathlib import Path

import polars as pl
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn
from rich.table import Table

from readgaze.dataset import Dataset
from readgaze.errors import ReadgazeError
from readgaze.models.demo.settings import BASELINE, CONFIGS, MODEL_NAMES, DemoSettings, label_frame

SCREEN_PX = (2560.0, 1440.0)
FALLBACK_ASSIGNER = "slice"
DISPLAY = {BASELINE: "reading speed (LR)", "majority": "majority class",
           "words_per_paragraph_time_logistic_regression": "words / paragraph time (LR)",
           "mean_total_fixation_duration_logistic_regression": "mean total fixation duration (LR)",
           "meziere_logistic_regression": "Mézière et al. LR"}


class Stages:
    """One demo run into ``out`` (already checked by :func:`readgaze.models.demo.run_demo`)."""

    def __init__(self, out: Path, settings: DemoSettings) -> None:
        self.out, self.settings = out, settings
        self.terminal = os.fdopen(os.dup(1), "w", buffering=1)
        # piped to a file, rich would cut the table at 80 columns ("LogisticEn…"): give it room
        self.console = Console(file=self.terminal, width=None if self.terminal.isatty() else 200)
        self.seconds: dict[str, float] = {}
        self.notes: dict = {}

    def run(self) -> dict[str, Path]:
        start = time.perf_counter()
        columns = (SpinnerColumn(), TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                   TimeElapsedColumn())
        with Progress(*columns, console=self.console) as progress:
            self.progress = progress
            corpus = self._stage("simulate a OneStop-like corpus (+ oracle accuracy)", self.simulate)
            reports = self._stage("write Data Viewer reports", lambda: self.write_reports(corpus))
            dataset = self._stage("readgaze prep onestop (line assignment, measures)", lambda: self.prep(reports))
            self._stage("check line assignment against the simulation's gold", lambda: self.line_accuracy(corpus))
            predictions = self.train(dataset)
            paths = self._stage("write results, ROC and scanpath figures",
                                lambda: self.report(corpus, dataset, predictions))
        self.seconds["total"] = time.perf_counter() - start
        paths["readme"] = self.write_readme(paths)
        self.print_table(paths)
        self.terminal.close()
        return paths

    def _stage(self, name: str, work):
        task = self.progress.add_task(name, total=1)
        t0 = time.perf_counter()
        result = work()
        self.seconds[name] = time.perf_counter() - t0
        self.progress.update(task, completed=1)
        return result

    # ---- stages ----
    def simulate(self):
        from readgaze.simulate import oracle_accuracy, simulate_corpus

        s = self.settings
        corpus = simulate_corpus(s.n_participants, s.n_items, s.paragraphs_per_item, seed=s.seed)
        self.notes["oracle"] = oracle_accuracy(corpus)
        self.notes["corpus"] = {"trials": corpus.trials.height, "fixations": corpus.fixations.height,
                                "participants": s.n_participants, "items": s.n_items,
                                "texts": len(corpus.layouts)}
        return corpus

    def write_reports(self, corpus) -> tuple[Path, Path]:
        from readgaze.simulate import write_onestop_reports

        return write_onestop_reports(corpus, self.out / "reports")

    def prep(self, reports: tuple[Path, Path]) -> Path:
        """``readgaze prep onestop`` on the simulated reports (:func:`readgaze.prepare`), with the settings' line
        assigner, or the fallback when it is not installed or fails."""
        from readgaze.data_prep.api import prepare

        assigner = _line_assigner(self.settings.line_assigner)
        if assigner != self.settings.line_assigner:
            self.notes["assigner_fallback"] = (f"`{self.settings.line_assigner}` was asked for but its weights "
                                               f"(`models/dist/weights/dist_small.pt`) are not installed; "
                                               f"used `{assigner}`.")

        def run(assigner: str) -> Path:
            return prepare("onestop", fixation_report=reports[0], ia_report=reports[1], out=self.out / "dataset",
                           force=True, line_assigner=assigner, screen_px=SCREEN_PX, cache=False).out

        try:
            dataset = run(assigner)
        except (ReadgazeError, RuntimeError, OSError) as error:
            if assigner == FALLBACK_ASSIGNER:
                raise
            self.notes["assigner_fallback"] = f"`{assigner}` failed ({error}); used `{FALLBACK_ASSIGNER}`."
            assigner = FALLBACK_ASSIGNER
            dataset = run(assigner)
        self.notes["line_assigner"] = assigner
        return dataset

    def line_accuracy(self, corpus) -> None:
        """Share of fixations on the gold line / word: after line assignment vs the reports' raw box hits."""
        gold = corpus.fixations.select("trial_id", "fixation_index", "true_line_index", "true_word_index")
        fix = Dataset(self.out / "dataset").fixations.collect().join(
            gold, on=["trial_id", "fixation_index"], how="inner")
        on_line = fix.filter(pl.col("true_line_index").is_not_null())
        self.notes["line_accuracy"] = {
            "fixations": fix.height,
            "line_accuracy_assigned": float(on_line.select(pl.col("line_index") == pl.col("true_line_index"))
                                            .to_series().fill_null(False).mean()),
            "word_accuracy_assigned": float(fix.select(pl.col("word_index").eq_missing(pl.col("true_word_index")))
                                            .to_series().mean()),
        }
        if "report_word_index" in fix.columns:
            self.notes["line_accuracy"]["word_accuracy_report_hits"] = float(
                fix.select(pl.col("report_word_index").eq_missing(pl.col("true_word_index"))).to_series().mean())
        self.fixations_gold = fix

    def train(self, dataset: Path) -> pl.DataFrame:
        from readgaze.models.training.cv import cross_validate

        s = self.settings
        overrides = ["--data.task", s.task, "--data.n_folds", str(s.n_folds), "--data.split_seed", str(s.seed),
                     "--seed_everything", str(s.seed), "--trainer.max_epochs", str(s.max_epochs)]
        parts = []
        for k, model in enumerate(s.models):
            name = f"train and test {MODEL_NAMES[model]} (folds)"
            task = self.progress.add_task(name, total=len(s.folds))
            run_dir = self.out / "runs" / model
            t0 = time.perf_counter()
            run = functools.partial(cross_validate, str(CONFIGS / f"{model}.yaml"), str(dataset), overrides,
                                    folds=list(s.folds), out=str(self.out / "runs"), run=model, baselines=k == 0,
                                    threads=1)
            with _watch(run_dir, task, self.progress), _quiet(self.out / "train.log"):
                # folds on Ray workers (models/training/runner.py); a worker killed from outside has its fold rerun
                paths = run(workers=min(s.workers, len(s.folds)))
            self.progress.update(task, completed=len(s.folds))
            self.seconds[name] = time.perf_counter() - t0
            predictions = pl.read_parquet(paths["predictions"])
            if k:  # the baselines were fit once, with the first model
                predictions = predictions.filter(pl.col("model") == MODEL_NAMES[model])
            parts.append(predictions)
        if len(s.models) > 1:
            parts.append(self._stage("fit the ensembles on validation predictions (out of sample)",
                                     lambda: self.ensembles(s.models)))
        return pl.concat(parts, how="diagonal_relaxed")

    def ensembles(self, models: tuple[str, ...]) -> pl.DataFrame:
        """MajorityVote and LogisticEnsemble of the trained models, fit per fold on validation predictions only."""
        from readgaze.models.training.ensemble import ENSEMBLES, run_ensembles

        paths = run_ensembles([self.out / "runs" / m for m in models], self.out / "runs" / "ensembles")
        names = [e.name for e in ENSEMBLES]
        return pl.read_parquet(paths["predictions"]).filter(pl.col("model").is_in(names))

    def report(self, corpus, dataset: Path, predictions: pl.DataFrame) -> dict[str, Path]:
        from readgaze.metrics import evaluate, write_results
        from readgaze.plots import plot_roc
        from readgaze.splits import assign_fold, describe, make_splits

        s = self.settings
        trials = label_frame(Dataset(dataset).trials.collect(), s.task)
        splits = make_splits(trials, n_folds=s.n_folds, seed=s.seed, stratify_by="reading_goal")
        assignment = pl.concat([assign_fold(trials, splits, fold) for fold in s.folds])
        description = describe(trials, assignment, label="label")
        predictions_path = self.out / "predictions.parquet"
        predictions.write_parquet(predictions_path)
        self.evaluation = evaluate(predictions)
        self.description = description
        paths = write_results(self.evaluation, self.out, description=description)
        roc = plot_roc(predictions, self.out / "roc.png")
        scanpath = self.scanpath(corpus, dataset)
        return {"markdown": paths["markdown"], "csv": paths["csv"], "predictions": predictions_path, "roc": roc,
                "scanpath": scanpath, "dataset": dataset}

    def scanpath(self, corpus, dataset: Path) -> Path:
        """The information-seeking trial whose raw box hits miss the gold word most often (drift made visible)."""
        from readgaze.plots import plot_scanpath

        fix = self.fixations_gold
        score = "report_word_index" if "report_word_index" in fix.columns else "word_index"
        seekers = corpus.trials.filter(pl.col("reading_goal") == "information_seeking")["trial_id"]
        worst = (fix.filter(pl.col("trial_id").is_in(seekers.implode()))
                 .group_by("trial_id").agg(pl.col(score).eq_missing(pl.col("true_word_index")).mean().alias("hit"))
                 .sort("hit", "trial_id").row(0, named=True))
        trial = corpus.trials.filter(pl.col("trial_id") == worst["trial_id"]).row(0, named=True)
        words = Dataset(dataset).words.collect().filter(pl.col("text_id") == trial["text_id"])
        span = (trial["critical_span_start_index"][0], trial["critical_span_end_index"][0])
        title = (f"{trial['trial_id']} (information seeking; critical span shaded): fixations coloured by the line "
                 f"'{self.notes['line_assigner']}' assigned; raw box hits on the gold word: {worst['hit']:.0%}")
        return plot_scanpath(fix.filter(pl.col("trial_id") == worst["trial_id"]).sort("fixation_index"), words,
                             self.out / "scanpath.png", highlight=span, title=title)

    # ---- output ----
    def print_table(self, paths: dict[str, Path]) -> None:
        """One row per (model, metric), one column per regime (headline regimes first), ``mean ± SEM`` in %."""
        from readgaze.splits.regimes import REGIME_ORDER, regime_title

        headline = tuple(self.description.headline_regimes)
        regimes = [*headline, *[r for r in REGIME_ORDER if r not in headline]]
        folds = self.settings.folds
        table = Table(title=f"{self.settings.task}: % over {len(folds)} test folds (mean ± SEM)" if len(folds) > 1
                      else f"{self.settings.task}: % on test fold {folds[0]}")
        table.add_column("model")
        table.add_column("metric")
        for regime in regimes:
            title = regime_title(regime, all_title="all").lower()
            table.add_column(title + (" (headline)" if regime in headline else ""), justify="right")
        cells = {(r["model"], r["regime"]): r for r in self.evaluation.iter_rows(named=True)}
        names = self.evaluation["model"].unique(maintain_order=True).to_list()
        neural, ensembles = list(MODEL_NAMES.values()), ("LogisticEnsemble", "MajorityVote")
        rank = lambda m: (0, neural.index(m)) if m in neural else (1, ensembles.index(m)) if m in ensembles else (2,
                                                                                                                  0)  # noqa: E731
        for model in sorted(names, key=rank):  # the models, their ensembles, then the baselines
            for k, (metric, name) in enumerate((("balanced_accuracy", "bal. acc."), ("auroc", "AUROC"))):
                table.add_row(DISPLAY.get(model, model) if k == 0 else "", name,
                              *[_cell(cells.get((model, r)), metric) for r in regimes], end_section=k == 1)
        self.console.print(table)
        if any(row.get("small_sample") for row in cells.values()):
            from readgaze.metrics import SMALL_MARK, SMALL_SAMPLE_TRIALS

            self.console.print(f"{SMALL_MARK} per-fold scores from fewer than {SMALL_SAMPLE_TRIALS} trials on average "
                               "(or a fold with one class): too few for the number to mean much.")
        if len(headline) < len(REGIME_ORDER):  # the same sentence as results.md's notes (readgaze.splits.describe)
            side = "participant" if self.description.label_constant_per_participant else "item"
            self.console.print(f"(headline): the {self.settings.task} label is constant per {side}, so only unseen "
                               f"{side}s test the task rather than recognising the {side}.")
        self.console.print(f"report: {paths['readme'].parent}  (README.md, results.md, roc.png, scanpath.png); "
                           f"{self.seconds['total']:.0f} s")

    def write_readme(self, paths: dict[str, Path]) -> Path:
        from readgaze.models.demo.settings import readme_text

        path = self.out / "README.md"
        path.write_text(readme_text(self.settings, self.notes, self.seconds, paths["markdown"].read_text()),
                        encoding="utf-8")
        return path


def _cell(row: dict | None, metric: str) -> str:
    from readgaze.metrics import SMALL_MARK

    mean, sem = (None, None) if row is None else (row[f"{metric}_mean"], row[f"{metric}_sem"])
    if mean is None:
        return "-"
    return (f"{100 * mean:.1f}" + ("" if sem is None else f" ± {100 * sem:.1f}")
            + (f" {SMALL_MARK}" if row.get("small_sample") else ""))


def _line_assigner(requested: str) -> str:
    """``requested``; ``"dist"`` falls back to :data:`FALLBACK_ASSIGNER` when its weights are not installed."""
    from readgaze.models.dist import WEIGHTS

    return FALLBACK_ASSIGNER if requested == "dist" and not WEIGHTS.is_file() else requested


@contextlib.contextmanager
def _quiet(log: Path):
    """Send file descriptors 1 and 2 (this process and its fold workers) to ``log`` for the block."""
    sys.stdout.flush()
    sys.stderr.flush()
    saved = os.dup(1), os.dup(2)
    with open(log, "a", encoding="utf-8") as handle:
        os.dup2(handle.fileno(), 1)
        os.dup2(handle.fileno(), 2)
        try:
            yield
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            os.close(saved[0])
            os.close(saved[1])


@contextlib.contextmanager
def _watch(run_dir: Path, task, progress: Progress, every_s: float = 1.0):
    """Advance ``task`` as fold folders under ``run_dir`` get their ``predictions_test.parquet``."""
    stop = threading.Event()

    def poll():
        while not stop.wait(every_s):
            progress.update(task, completed=len(list(run_dir.glob("fold_*/predictions_test.parquet"))))

    thread = threading.Thread(target=poll, daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()
