"""What one demo run does: its sizes, its models and baseline, its label rule and the report's README."""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import polars as pl

CONFIGS = Path(__file__).with_name("configs")
OUTPUTS = ("README.md", "results.md", "results.csv", "predictions.parquet", "roc.png", "scanpath.png", "dataset",
           "reports", "runs", "train.log")
MODEL_NAMES = {"beyelstm": "BEyeLSTM", "roberteye_f": "RoBERTEyeF"}
BASELINE = "reading_speed_logistic_regression"


@dataclass(frozen=True)
class DemoSettings:
    """Sizes of one demo run; :data:`DEFAULT` and :data:`QUICK` are the two the command offers."""

    n_participants: int = 30
    n_items: int = 10
    paragraphs_per_item: int = 2
    n_folds: int = 5
    folds: tuple[int, ...] = (0, 1, 2)
    max_epochs: int = 12
    models: tuple[str, ...] = ("beyelstm", "roberteye_f")
    task: str = "reading_goal"
    workers: int = 2
    seed: int = 0
    line_assigner: str = "dist"


DEFAULT = DemoSettings()
QUICK = DemoSettings(n_participants=12, n_items=4, paragraphs_per_item=1, n_folds=3, folds=(0,), max_epochs=1,
                     workers=1)


def settings_dict(settings: DemoSettings) -> dict:
    """The settings as plain values (for the README)."""
    return {k: list(v) if isinstance(v, tuple) else v for k, v in asdict(settings).items()}


def elapsed(start: float) -> str:
    return f"{time.perf_counter() - start:.0f} s"


def label_frame(trials: pl.DataFrame, task: str) -> pl.DataFrame:
    """Trials of a task with an Int64 ``label`` (the registry's, :data:`readgaze.tasks.TASKS`, as
    :class:`readgaze.models.data.ReadingDataModule` builds it); trials outside the task are left out."""
    from readgaze.tasks import get_task

    return get_task(task).labelled(trials).filter(pl.col("label").is_not_null())


def readme_text(settings: DemoSettings, notes: dict, seconds: dict[str, float], results_markdown: str) -> str:
    """The report folder's README: what ran, the simulator's oracle accuracy, line assignment, timings, table."""
    oracle, corpus, lines = notes["oracle"], notes["corpus"], notes["line_accuracy"]
    models = ", ".join(MODEL_NAMES[m] for m in settings.models)
    folds = ", ".join(str(f) for f in settings.folds)
    fallback = notes.get("assigner_fallback", "")
    hits = lines.get("word_accuracy_report_hits")
    timing = "\n".join(f"| {name} | {value:.1f} |" for name, value in seconds.items())
    return f"""# readgaze demo report

Made by `readgaze demo` (seed {settings.seed}{', --quick' if settings == _quick(settings) else ''}), offline.

## What ran

1. `readgaze.simulate.simulate_corpus` (seed {settings.seed}, default effect sizes): {corpus['participants']}
   participants (half information seeking, half ordinary reading; the goal is constant per participant, as in
   OneStop) each read {settings.n_items} items x {settings.paragraphs_per_item} paragraph(s), each paragraph at one
   of two difficulty levels: {corpus['trials']} trials, {corpus['fixations']:,} fixations, with calibration drift.
   Written as OneStop Data Viewer reports (`reports/fixations.csv`, `reports/ia.csv`).
2. `readgaze prep onestop` (python API) with line assigner `{notes['line_assigner']}` -> `dataset/`. {fallback}
3. Task `{settings.task}`: {models} (`models/demo/configs/*.yaml`; RoBERTEye-F with the tiny randomly
   initialised encoder) trained with `readgaze.models.training.cv.cross_validate`, K = {settings.n_folds} item x participant folds
   (seed {settings.seed}), folds run: {folds} (validation fold k, test fold k+1), at most {settings.max_epochs}
   epochs with early stopping on the validation loss. The classical baselines (`readgaze.baselines`:
   majority class, reading speed, mean total fixation duration, Mézière et al.'s logistic regression, each
   selected on validation; words / paragraph time joins them only where reports have Data Viewer's PARAGRAPH_RT) are fit on the same training trials, and `MajorityVote` and
   `LogisticEnsemble` (`readgaze.models.training.ensemble`) combine the models, fit per fold on validation predictions only. Per-fold runs are in `runs/`, their log in
   `train.log`.

## Simulator's oracle accuracy (`readgaze.simulate.oracle_accuracy`, gold word indices, no drift)

| quantity | value |
|---|---|
| reading goal, logistic regression on in/out-of-span reading (new participants, 5 grouped folds) | {oracle['reading_goal_lr']:.3f} |
| goal question, slowest span | {oracle['goal_question_argmax']:.3f} |
| comprehension, Bayes accuracy / AUROC | {oracle['comprehension_bayes']:.3f} / {oracle['comprehension_bayes_auroc']:.3f} |
| comprehension, logistic regression (balanced accuracy) | {oracle['comprehension_lr_balanced']:.3f} |

The oracle knows the question's critical span; the reading-goal models here see the paragraph only.

## Line assignment against the simulation's gold

{lines['fixations']:,} fixations: assigned line = gold line for {lines['line_accuracy_assigned']:.2%} of those aimed at a line;
word after assignment = gold word for {lines['word_accuracy_assigned']:.2%}{'' if hits is None else f' (raw Data Viewer box hits of the drifted positions: {hits:.2%})'}.
`scanpath.png` shows the trial whose raw box hits miss most.

## Results (`results.md`, `results.csv`, `predictions.parquet`, `roc.png`)

{results_markdown}

## Time (seconds)

| stage | s |
|---|---|
{timing}
"""


def _quick(settings: DemoSettings) -> DemoSettings:
    return replace(QUICK, seed=settings.seed)
