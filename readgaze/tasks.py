"""The tasks readgaze decodes: one registry (:data:`TASKS`) of what each task is and how its label is built.

Everything that builds or names a label reads it here: the classical baselines, the models' datamodule
(``readgaze.models.data.tasks`` adds only what a text model reads besides the gaze), ``readgaze inspect``, the demo,
model bundles (class names) and the ROC figure (the positive class). A task is a :class:`Task`: its label
expression over the trials table, its kind (classification with named classes and a positive class, or
regression), the trial columns the label needs and those the models read as input, the level its label varies at
(``trial``, or ``reader`` for a label constant within a participant) and its display name. Adding a task is one
:func:`register` call (or one entry of :data:`TASKS`).

Labels: ``reading_goal`` 1 = information seeking, 0 = ordinary (other goals: not in the task); ``comprehension``
1 = the question answered correctly; ``goal_question`` the role of the reader's question among the paragraph's
three (the models build it from several trials: ``readgaze.models.data.tasks``); ``dyslexia`` 1 = a reader with
dyslexia (CopCo; true/false or yes/no); ``reading_comprehension_skill`` the reader's comprehension score (CopCo,
regression).

A regression task's trials without a label are dropped by default (counted); :func:`fill_missing_label` gives them a
value instead (EyeBench's published CopCo_RCS table scores CopCo's 12 readers without a test score as -1.0): the one
definition that the classical baselines (:func:`readgaze.eyebench_copco.run_copco_classical` ``rcs_missing``) and
the models' datamodule (``missing_label``) both call.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

import polars as pl

from readgaze.errors import ConfigError, SchemaError
from readgaze.qc import QCLog

QUESTION_ROLES = ("lonely", "coupled_1", "coupled_2")
"""goal_question classes: the paragraph's question on its own critical span, then the two sharing one span."""


@dataclass(frozen=True)
class Task:
    """One task.

    Attributes
    ----------
    name : str
        The task's name (``--data.task``, the ``task`` of a bundle).
    display_name : str
        How figures and tables name it.
    kind : {"classification", "regression"}
    needs : tuple of str
        The trials-table columns its label is built from.
    label : callable returning a polars expression, or None
        The label over the trials table: Int64 class index (classification) or Float64 value (regression); null =
        the trial is not in the task. None: the label needs more than one trial's row (goal_question: the models
        build it).
    classes : tuple of str
        Class names by label index (classification).
    positive : int or None
        The index of the positive class (two classes): the class whose probability a ROC ranks by.
    positive_title : str
        How a figure names the positive class.
    inputs : tuple of str
        Trials-table columns the models read as input besides the gaze (comprehension: the question).
    level : {"trial", "reader"}
        ``reader``: the label is constant within a participant (a reader's trait).
    """

    name: str
    display_name: str
    kind: Literal["classification", "regression"]
    needs: tuple[str, ...]
    label: Callable[[], pl.Expr] | None
    classes: tuple[str, ...] = ()
    positive: int | None = None
    positive_title: str = ""
    inputs: tuple[str, ...] = ()
    level: Literal["trial", "reader"] = "trial"

    @property
    def num_classes(self) -> int:
        """Number of classes (1 for a regression task: one output)."""
        return len(self.classes) if self.kind == "classification" else 1

    @property
    def positive_class(self) -> str | None:
        """The positive class's name (``classes[positive]``), None without one."""
        return None if self.positive is None else self.classes[self.positive]

    def label_expr(self) -> pl.Expr:
        """The label expression, named ``label``.

        Raises
        ------
        ConfigError
            The task's label needs more than a trial's own row (``label`` is None).
        """
        if self.label is None:
            raise ConfigError(f"task {self.name!r} needs a 'label' column of class indices in trials; readgaze "
                              f"derives labels for {', '.join(n for n, t in TASKS.items() if t.label)}")
        return self.label().alias("label")

    def missing(self, columns, *, inputs: bool = True) -> list[str]:
        """The columns of :attr:`needs` (and :attr:`inputs`) that ``columns`` lacks."""
        return [c for c in (*self.needs, *(self.inputs if inputs else ())) if c not in columns]

    def labelled(self, trials: pl.DataFrame | pl.LazyFrame, *, source: str | None = None):
        """``trials`` with the Int64 (Float64 for regression) ``label`` column; trials outside the task keep a
        null label.

        Raises
        ------
        SchemaError
            A column the label needs is missing (naming ``source``, the trials file, when given).
        """
        have = trials.collect_schema().names() if isinstance(trials, pl.LazyFrame) else trials.columns
        missing = self.missing(have, inputs=False)
        if missing:
            raise SchemaError(f"task {self.name} needs trials column(s) {missing}", file=source, column=missing[0])
        return trials.with_columns(self.label_expr())


def _reading_goal() -> pl.Expr:
    goal = pl.col("reading_goal")
    return pl.when(goal.is_in(["ordinary", "information_seeking"])).then(
        (goal == "information_seeking").cast(pl.Int64))


def _yes_no(column: str) -> Callable[[], pl.Expr]:
    """1 for true / yes / 1, 0 for false / no / 0 (any case; a Boolean column too), else null."""
    coding = {"true": 1, "yes": 1, "1": 1, "false": 0, "no": 0, "0": 0}
    return lambda: (pl.col(column).cast(pl.String).str.strip_chars().str.to_lowercase()
                    .replace_strict(coding, default=None, return_dtype=pl.Int64))


TASKS: dict[str, Task] = {}
"""Task name -> :class:`Task`, in registration order."""


def register(task: Task) -> Task:
    """Add ``task`` to :data:`TASKS` (replacing one of the same name) and return it."""
    if task.kind == "classification" and task.positive is not None and not 0 <= task.positive < len(task.classes):
        raise ConfigError(f"task {task.name}: positive class {task.positive} is not one of its {len(task.classes)}")
    TASKS[task.name] = task
    return task


def get_task(name: str) -> Task:
    """The registered task ``name``; :class:`ConfigError` naming the known ones otherwise."""
    if name not in TASKS:
        raise ConfigError(f"task: got {name!r}, expected one of {sorted(TASKS)}")
    return TASKS[name]


register(Task("reading_goal", "reading goal", "classification", ("reading_goal",), _reading_goal,
              classes=("ordinary", "information_seeking"), positive=1, positive_title="information seeking"))
register(Task("comprehension", "comprehension", "classification", ("is_correct",),
              lambda: pl.col("is_correct").cast(pl.Int64), classes=("incorrect", "correct"), positive=1,
              positive_title="correct answer", inputs=("question",)))
register(Task("goal_question", "goal question", "classification", ("reading_goal", "question"), None,
              classes=QUESTION_ROLES))
register(Task("dyslexia", "dyslexia", "classification", ("dyslexia",), _yes_no("dyslexia"),
              classes=("no_dyslexia", "dyslexia"), positive=1, positive_title="dyslexia", level="reader"))
register(Task("reading_comprehension_skill", "reading comprehension skill", "regression",
              ("reading_comprehension_skill",), lambda: pl.col("reading_comprehension_skill").cast(pl.Float64),
              level="reader"))


def check_missing_label(task: str, value: float | None, *, option: str = "missing_label") -> float | None:
    """``value`` as a float when ``task`` is a regression task of :data:`TASKS`; None stays None.

    Raises
    ------
    ConfigError
        Naming ``option``: the task is not a regression (a class index cannot be invented for an unlabelled trial),
        or ``value`` is not a finite number.
    """
    if value is None:
        return None
    spec = get_task(task)
    if spec.kind != "regression":
        regression = [n for n, t in TASKS.items() if t.kind == "regression"]
        raise ConfigError(f"{option}: set to {value!r} for task {task!r}, a {spec.kind} task; it gives unlabelled "
                          f"trials a value, so it is only for a regression task ({', '.join(regression)}); leave it "
                          f"unset (null) to drop them")
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ConfigError(f"{option}: got {value!r}, expected a finite number (EyeBench's CopCo_RCS: -1.0) or null")
    return float(value)


def fill_missing_label(trials: pl.DataFrame, task: str, value: float, *, column: str = "label",
                       qc: QCLog | None = None, step: str = "task", option: str = "missing_label") -> pl.DataFrame:
    """``trials`` with the nulls of ``column`` (the regression ``task``'s label) set to ``value``, counted.

    What EyeBench's published CopCo_RCS table does with CopCo's readers without a comprehension score (the fold
    files' placeholder -1.0): they stay in every split with that score. The default elsewhere is to drop them.

    Parameters
    ----------
    trials : polars.DataFrame
        With ``column`` and, to count readers, ``participant_id``.
    task : str
        A regression task of :data:`TASKS` (:func:`check_missing_label`).
    value : float
        The label given to the unlabelled trials.
    column : str, default "label"
        The label column (the classical baselines fill the task's own column, e.g. ``reading_comprehension_skill``).
    qc : QCLog, optional
        Gets two ``changed`` records under ``step``: the trials and the readers (``participants``) given ``value``.
    option : str
        The option's name in errors and QC records.

    Raises
    ------
    ConfigError
        As :func:`check_missing_label`.
    SchemaError
        ``column`` is missing.
    """
    value = check_missing_label(task, value, option=option)
    if column not in trials.columns:
        raise SchemaError(f"{option}: trials have no column {column!r} (the {task} label)", column=column)
    missing = trials.filter(pl.col(column).is_null())
    readers = missing["participant_id"].n_unique() if "participant_id" in trials.columns else 0
    if qc is not None:
        reason = f"no {task} label, given {value} ({option})"
        qc.add(step, "trials", reason, missing.height, "changed")
        qc.add(step, "participants", reason, readers, "changed")
    return trials.with_columns(pl.col(column).fill_null(value))
