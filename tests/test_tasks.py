"""readgaze.tasks is the one registry of tasks: the baselines, the models' datamodule, inspect, the demo, model
bundles and the ROC figure build and name every label from it, and a task is one registry entry (the reader-level
CopCo tasks are two). Runs from a clone (no ../shared)."""

from __future__ import annotations

import dataclasses

import polars as pl
import pytest

from readgaze.errors import ConfigError, SchemaError
from readgaze.tasks import TASKS, Task, get_task, register

TRIALS = pl.DataFrame({
    "trial_id": [f"t{i}" for i in range(6)], "participant_id": ["p1", "p1", "p2", "p2", "p3", "p3"],
    "item_id": ["i1", "i2"] * 3,
    "reading_goal": ["ordinary", "information_seeking", "ordinary", "skim", "information_seeking", None],
    "is_correct": [True, False, True, True, None, False], "question": ["q"] * 6,
    "dyslexia": ["yes", "yes", "no", "no", "Yes", "yes"],
    "reading_comprehension_skill": [0.5, 0.5, 0.9, 0.9, 0.7, 0.7]})


def test_labels_come_from_the_registry():
    labels = {name: get_task(name).labelled(TRIALS)["label"].to_list()
              for name in ("reading_goal", "comprehension", "dyslexia", "reading_comprehension_skill")}
    assert labels == {"reading_goal": [0, 1, 0, None, 1, None], "comprehension": [1, 0, 1, 1, None, 0],
                      "dyslexia": [1, 1, 0, 0, 1, 1], "reading_comprehension_skill": [0.5, 0.5, 0.9, 0.9, 0.7, 0.7]}
    boolean = TRIALS.with_columns(pl.col("dyslexia") == "yes")  # a Boolean column codes the same
    assert get_task("dyslexia").labelled(boolean)["label"].to_list() == [1, 1, 0, 0, 0, 1]
    assert get_task("dyslexia").level == get_task("reading_comprehension_skill").level == "reader"
    assert get_task("reading_comprehension_skill").kind == "regression"
    with pytest.raises(SchemaError, match="task reading_goal needs trials column"):
        get_task("reading_goal").labelled(TRIALS.drop("reading_goal"))
    with pytest.raises(ConfigError, match="expected one of"):
        get_task("reading_speed")


def test_every_consumer_takes_the_registry():
    from readgaze.baselines import TASKS as BASELINE_TASKS
    from readgaze.baselines import task_labels
    from readgaze.models.data.tasks import TASKS as MODEL_TASKS
    from readgaze.models.demo.settings import label_frame
    from readgaze.models.training.bundle import CLASSES
    from readgaze.plots import POSITIVE_CLASS

    for name in ("reading_goal", "comprehension"):
        assert TRIALS.select(task_labels(TRIALS, name))["label"].equals(get_task(name).labelled(TRIALS)["label"])
        assert label_frame(TRIALS, name)["label"].to_list() == get_task(name).labelled(TRIALS)["label"].drop_nulls(
        ).to_list()
    assert set(BASELINE_TASKS) == {n for n, t in TASKS.items() if t.kind == "classification"} >= {"dyslexia"}
    assert MODEL_TASKS["comprehension"].needs == ("is_correct", "question")  # the label's column and the input
    assert MODEL_TASKS["goal_question"].num_classes == 3 and MODEL_TASKS["reading_goal"].num_classes == 2
    assert CLASSES["comprehension"] == ["incorrect", "correct"] and CLASSES["goal_question"][0] == "lonely"
    assert POSITIVE_CLASS == {"reading_goal": "information seeking", "comprehension": "correct answer",
                              "dyslexia": "dyslexia"}


def test_inspect_lists_the_tasks_of_the_registry():
    from readgaze.inspect import describe_tasks

    text = "\n".join(describe_tasks(TRIALS))
    assert "task comprehension: 5 labelled trials; labels correct 3, incorrect 2" in text
    assert "task dyslexia: 6 labelled trials; labels dyslexia 4, no_dyslexia 2" in text
    assert "task reading_comprehension_skill: 6 labelled trials; labels 0.5-0.9 (3 distinct values) 6" in text
    bare = "\n".join(describe_tasks(TRIALS.drop("dyslexia", "reading_comprehension_skill")))
    assert "dyslexia" not in bare and "reading_comprehension_skill" not in bare  # reader traits: listed when present
    assert "task goal_question: not available (no onestopqa_question_id column" in bare
    one_reader = "\n".join(describe_tasks(TRIALS.with_columns(reading_comprehension_skill=pl.lit(0.5))))
    assert "labels 0.5-0.5 (1 distinct values) 6\n" in one_reader  # CopCo's P01 and P02: one reader has a score
    assert "warning: one value only (0.5): a model of this task measures nothing" in one_reader
    assert "constant within every" not in one_reader.split("reading_comprehension_skill")[1]


def test_a_task_is_one_registry_entry(monkeypatch):
    """A made-up reader-level binary task, registered once, is labelled by the baselines and listed by inspect."""
    from readgaze import tasks
    from readgaze.baselines import run_baseline
    from readgaze.inspect import describe_tasks

    monkeypatch.setattr(tasks, "TASKS", dict(tasks.TASKS))
    monkeypatch.setattr("readgaze.baselines.REGISTRY", tasks.TASKS)
    monkeypatch.setattr("readgaze.inspect.TASKS", tasks.TASKS)
    register(dataclasses.replace(get_task("dyslexia"), name="bilingual", needs=("bilingual",),
                                 label=lambda: pl.col("bilingual").cast(pl.Int64), classes=("no", "yes")))
    trials = pl.concat([TRIALS.with_columns(pl.col("trial_id") + f"_{k}", pl.col("item_id") + f"_{k}")
                        for k in range(4)]).with_columns(bilingual=pl.col("participant_id") != "p1")
    assert "task bilingual: 24 labelled trials; labels no 8, yes 16" in "\n".join(describe_tasks(trials))
    assignment = trials.select("trial_id", pl.lit(0, pl.Int32).alias("fold_index"),
                               pl.when(pl.col("item_id").str.ends_with("_3")).then(pl.lit("test"))
                               .otherwise(pl.lit("train")).alias("split"), pl.lit("new_item").alias("regime"))
    out = run_baseline(trials, assignment, "bilingual", "majority")
    assert out.height == 6 and out["label"].to_list() == [0, 0, 1, 1, 1, 1]
    assert isinstance(get_task("bilingual"), Task)


def test_the_models_take_a_reader_level_task_from_its_registry_entry(tmp_path):
    """dyslexia, registered once, is a task of the datamodule: labels from the trials' yes/no column."""
    pytest.importorskip("torch")
    from synthetic import write_synthetic_dataset

    from readgaze.models.data import ReadingDataModule

    folder = write_synthetic_dataset(tmp_path / "ds", n_participants=6, n_items=6, n_words=12)
    trials = pl.read_parquet(folder / "trials.parquet")
    readers = sorted(trials["participant_id"].unique())
    coded = trials.with_columns(dyslexia=pl.col("participant_id").is_in(readers[:3]).replace_strict(
        {True: "yes", False: "no"}, return_dtype=pl.String))
    coded.write_parquet(folder / "trials.parquet")
    dm = ReadingDataModule(str(folder), task="dyslexia", n_folds=3, split_unit="participant_item")
    dm.setup("fit")
    assert dm.num_classes == 2 and dm.effective_reading_regime == "all"
    got = dm.trials.join(coded.select("trial_id", "dyslexia"), on="trial_id")
    assert (got["label"] == (got["dyslexia"] == "yes").cast(pl.Int64)).all() and got["label"].n_unique() == 2
