"""What the models add to a task of :mod:`readgaze.tasks` (the one registry of tasks and labels): the second text
segment the text models read and, for ``goal_question``, the labelling from the paragraph's questions.

``TASKS`` maps the name of every task of the registry to a :class:`TaskSpec`; its label is the registry's
(``reading_goal`` 1 = information seeking; ``comprehension`` 1 = ``is_correct``; ``goal_question`` the role of the
reader's question, :data:`QUESTION_ROLES`, built here; a regression task's Float64 value, e.g.
``reading_comprehension_skill``, with ``num_classes`` 1).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import polars as pl

from readgaze.errors import ConfigError, DataError, SchemaError
from readgaze.qc import QCLog
from readgaze.tasks import QUESTION_ROLES
from readgaze.tasks import TASKS as REGISTRY


class ReadingDataModule(Protocol):
    """What a task's labelling reads of the datamodule (:class:`readgaze.models.data.ReadingDataModule`, which
    imports this module: a protocol, not an import, keeps the two out of an import loop)."""

    questions: str | None
    qc: QCLog

def _registry_trials(trials: pl.DataFrame, datamodule: ReadingDataModule) -> pl.DataFrame:
    """The registry's label (:meth:`readgaze.tasks.Task.label_expr`) of the datamodule's task; a reading regime is
    applied by the datamodule (counted)."""
    return trials.with_columns(REGISTRY[datamodule.task].label_expr())


def _goal_question_trials(trials: pl.DataFrame, datamodule: ReadingDataModule) -> pl.DataFrame:
    """Information-seeking trials labelled with the role of the reader's question (:data:`QUESTION_ROLES`).

    A paragraph is ``(item_id, paragraph_id)`` (every level and layout version of it), or ``text_id`` when
    there is no ``paragraph_id``. ``candidate_questions`` joins the paragraph's questions in role order.
    """
    if datamodule.questions:
        return _goal_question_from_onestopqa(trials, datamodule)
    paragraph = ["item_id", "paragraph_id"] if "paragraph_id" in trials.columns else ["text_id"]
    qid = "onestopqa_question_id"
    if qid not in trials.columns:
        raise SchemaError(f"task goal_question needs the column {qid} (which of the paragraph's questions the reader "
                          f"was given), or data.questions (the OneStopQA json)", column=qid)
    questions = trials.filter(pl.col(qid).is_not_null())
    lonely_flag = (pl.col("same_critical_span").fill_null(-1) == 0) if "same_critical_span" in trials.columns \
        else pl.lit(False)
    per_question = (questions.group_by(*paragraph, qid)
                    .agg(pl.col("question").drop_nulls().first(), lonely_flag.all().alias("lonely"))
                    .sort(*paragraph, qid))
    structured = (pl.col("lonely").sum().over(paragraph) == 1) & (pl.len().over(paragraph) == 3)
    rank = pl.col(qid).rank("dense").over(paragraph).cast(pl.Int64) - 1
    coupled_rank = pl.col(qid).rank("dense").over(*paragraph, "lonely").cast(pl.Int64)
    per_question = per_question.with_columns(
        pl.when(structured).then(pl.when(pl.col("lonely")).then(0).otherwise(coupled_rank)).otherwise(rank)
        .alias("label"), structured.alias("_structured"))
    unstructured = per_question.filter(~pl.col("_structured")).select(paragraph).unique().height
    datamodule.qc.add("task", "paragraphs", "no lonely/coupled structure (same_critical_span): role = rank of "
                      "onestopqa_question_id", unstructured, "changed")
    too_many = per_question.filter(pl.col("label") >= len(QUESTION_ROLES)).height
    if too_many:
        raise DataError(f"task goal_question: {too_many} questions are beyond the third of their paragraph "
                        f"(expected 3 questions per paragraph)", column=qid)
    candidates = (per_question.sort(*paragraph, "label").group_by(paragraph, maintain_order=True)
                  .agg(pl.col("question").fill_null("").str.join(" ").alias("candidate_questions")))
    keep = (pl.col("reading_goal") == "information_seeking").fill_null(False)
    roles = per_question.select(*paragraph, qid, pl.col("label").alias("_role"))
    return (trials.join(roles, on=[*paragraph, qid], how="left", nulls_equal=False)
            .join(candidates, on=paragraph, how="left")
            .with_columns(pl.when(keep).then(pl.col("_role")).alias("label")).drop("_role"))


def _normalised(column: str) -> pl.Expr:
    return pl.col(column).str.replace_all("\u2019", "'").str.replace_all(r"\s+", " ").str.strip_chars()


def _goal_question_from_onestopqa(trials: pl.DataFrame, datamodule: ReadingDataModule) -> pl.DataFrame:
    """Roles and candidates from the OneStopQA json (see ``ReadingDataModule`` ``questions``)."""
    path = Path(datamodule.questions)
    try:
        articles = json.loads(path.read_text(encoding="utf-8"))["data"]
        rows = [{"item_id": a["article_id"], "paragraph_id": int(p["paragraph_id"]), "_qid": int(q["q_ind"]),
                 "_role": int(q["question_prediction_label"]), "_question": q["question"]}
                for a in articles for p in a["paragraphs"] for q in p["qas"]]
    except (OSError, ValueError, KeyError, TypeError) as error:
        raise ConfigError(f"data.questions: cannot read OneStopQA questions ({error!r}); expected onestop_qa.json",
                          file=path) from error
    if "paragraph_id" not in trials.columns:
        raise SchemaError("data.questions matches trials on item_id and paragraph_id; trials have no paragraph_id",
                          column="paragraph_id")
    qa = pl.DataFrame(rows).with_columns(_normalised("_question").alias("_key"))
    candidates = (qa.sort("item_id", "paragraph_id", "_role").group_by("item_id", "paragraph_id", maintain_order=True)
                  .agg(_normalised("_question").str.join(" ").alias("candidate_questions")))
    keep = (pl.col("reading_goal") == "information_seeking").fill_null(False)
    matched = (trials.with_columns(pl.col("paragraph_id").cast(pl.Int64), _normalised("question").alias("_key"))
               .join(qa.drop("_question"), on=["item_id", "paragraph_id", "_key"], how="left")
               .join(candidates, on=["item_id", "paragraph_id"], how="left"))
    missed = matched.filter(keep & pl.col("_role").is_null()).height
    datamodule.qc.add("task", "trials", "question not found in the OneStopQA file (data.questions)", missed)
    return matched.with_columns(pl.when(keep).then(pl.col("_role")).alias("label")).drop("_key", "_role", "_qid")


@dataclass(frozen=True)
class TaskSpec:
    """One task: trial columns it needs, its labelling function, its second text segment, its classes (1 for a
    regression task, ``kind`` ``"regression"``: one predicted value)."""

    needs: tuple[str, ...]
    trials: Callable[[pl.DataFrame, ReadingDataModule], pl.DataFrame]
    second_segment: pl.Expr
    num_classes: int = 2
    second_max_tokens: int | None = None
    kind: str = "classification"

    @property
    def label_dtype(self) -> pl.DataType:
        """The label's dtype: Int64 class index, or Float64 value for a regression task."""
        return pl.Float64 if self.kind == "regression" else pl.Int64


QUESTION_PREFIX = "Question: "
"""Put before the comprehension question (EyeBench ``TextDataSet``: ``"Question: " + question``)."""
MAX_QUESTION_TOKENS = 30
"""Token budget of the comprehension question (EyeBench ``max_q_len``); longer questions lose their end."""


SECOND_SEGMENTS = {"comprehension": (pl.concat_str(pl.lit(QUESTION_PREFIX), pl.col("question")), MAX_QUESTION_TOKENS),
                   "goal_question": (pl.col("candidate_questions"), None)}
"""The second text segment of a task whose text model reads one (and its token budget); others read the text only."""


def _spec(name: str) -> TaskSpec:
    task = REGISTRY[name]
    second, budget = SECOND_SEGMENTS.get(name, (pl.lit(None, pl.String), None))
    return TaskSpec((*task.needs, *task.inputs), _goal_question_trials if task.label is None else _registry_trials,
                    second, num_classes=task.num_classes, second_max_tokens=budget, kind=task.kind)


TASKS: dict[str, TaskSpec] = {name: _spec(name) for name in REGISTRY}
"""Task name -> :class:`TaskSpec`; ``trials`` returns the trials with the ``label`` (Int64 class index, Float64 value
for a regression task; null = not in the task)."""
