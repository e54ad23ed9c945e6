"""What ``readgaze inspect DATASET`` says about each prediction task (:data:`readgaze.tasks.TASKS`): its label counts,
participants and items, whether cross-validation folds can be built on it, and warnings for a label that cannot
measure decoding (one class, or constant within every participant or item). :mod:`readgaze.inspect` prints it
after the dataset's tables and manifest.
"""

from __future__ import annotations

import polars as pl

from readgaze.splits.folds import N_FOLDS
from readgaze.tasks import TASKS


def _task_labels(trials: pl.DataFrame) -> dict[str, pl.DataFrame]:
    """Per task of the registry (:data:`readgaze.tasks.TASKS`), its trials with a ``label`` column (the class name,
    or the value of a regression task), or the reason it has none. goal_question's label (the question's role) needs
    the paragraph's questions: its trials are shown by their question id."""
    out: dict = {}
    for name, task in TASKS.items():
        missing = task.missing(trials.columns)
        if task.label is None:  # goal_question
            missing = [c for c in ("reading_goal", "onestopqa_question_id") if c not in trials.columns]
        if missing and task.level == "reader":  # a reader's trait (CopCo): listed when the data has it
            continue
        if missing:
            out[name] = f"no {missing[0]} column"
        elif task.label is None:
            out[name] = trials.filter((pl.col("reading_goal") == "information_seeking")
                                      & pl.col("onestopqa_question_id").is_not_null()).with_columns(
                pl.col("onestopqa_question_id").cast(pl.String).alias("label"))
        else:
            labelled = task.labelled(trials).filter(pl.col("label").is_not_null())
            out[name] = labelled if task.kind == "regression" else labelled.with_columns(
                pl.col("label").replace_strict(dict(enumerate(task.classes)), return_dtype=pl.String))
    return out


def describe_tasks(trials: pl.DataFrame) -> list[str]:
    """Per task: label counts, participants, items, whether its folds can be built, and warnings.

    Warnings: one label value (the task measures nothing); a label constant within every participant (a model can
    read it off a participant seen in training: only the new-participant regimes measure decoding) or item.
    Attach labels with ``readgaze prep ... --trials LABELS.csv``.
    """
    lines = []
    for task, labelled in _task_labels(trials).items():
        if isinstance(labelled, str) or labelled.height == 0:
            why = labelled if isinstance(labelled, str) else "no trial has a label"
            lines.append(f"  task {task}: not available ({why}; attach labels with readgaze prep ... "
                         "--trials LABELS.csv)")
            continue
        if TASKS[task].kind == "regression":  # one line of values instead of label counts
            values = labelled["label"]
            counts = pl.DataFrame({"label": [f"{values.min():.4g}-{values.max():.4g} ({values.n_unique():,} "
                                             f"distinct values)"], "len": [labelled.height]})
        else:
            counts = labelled.group_by("label").len().sort("label")
        participants = labelled["participant_id"].n_unique() if "participant_id" in labelled.columns else 0
        items = labelled["item_id"].n_unique() if "item_id" in labelled.columns else 0
        smallest = min(participants, items)
        folds = (f"yes ({N_FOLDS} participant x item folds)" if smallest >= N_FOLDS else
                 f"not with {N_FOLDS}: use --data.n_folds {smallest} (or fewer, at least 3)" if smallest >= 3 else
                 "no: cv needs at least 3 participants and 3 items (fit falls back to random trial folds, "
                 "which leak participants and items)")
        lines += [f"  task {task}: {labelled.height:,} labelled trials; labels "
                  + ", ".join(f"{r['label']} {r['len']:,}" for r in counts.iter_rows(named=True)),
                  f"    participants {participants:,}, items {items:,}; folds: {folds}"]
        if counts.height < 2 and TASKS[task].kind != "regression":
            lines.append(f"    warning: one class only ({counts['label'][0]}): a model of this task measures "
                         "nothing")
            continue
        if TASKS[task].kind == "regression" and labelled["label"].n_unique() < 2:
            lines.append(f"    warning: one value only ({labelled['label'][0]:.4g}): a model of this task measures "
                         "nothing")
            continue
        for unit, column in (("participant", "participant_id"), ("item", "item_id")):
            if column in labelled.columns:
                per = labelled.group_by(column).agg(pl.col("label").n_unique().alias("n"))
                if per.height > 1 and per["n"].max() == 1:
                    article = "an" if unit == "item" else "a"
                    lines.append(f"    warning: the label is constant within every {unit} ({per.height:,}): a model "
                                 f"can read it off {article} {unit} seen in training, so only the new-{unit} regimes "
                                 "measure decoding")
    return lines
