"""One YAML per model, the task chosen by ``data.task``: every documented ``-c TASK/MODEL`` name still resolves to
the effective configuration it had when each task had its own copy (readgaze 0.3).

``tests/files/effective_configs_v03.json`` holds, per name, the configuration LightningCLI parsed from the per-task
YAMLs of readgaze 0.3 (``-c TASK/MODEL --data.path DATASET``), and the same with ``--data.text_encoder tiny`` after
:func:`~readgaze.models.training.cli.tiny_recipe` (key ``"TASK/MODEL tiny"``); recorded on main before the YAMLs were
merged. The only change since: the tiny recipe's warm-up is 0 everywhere (it was the configs' 0.1 for the
RoBERTa-style models under ``fit --data.text_encoder tiny``, 0 in the registry's ``quick`` settings).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from readgaze.errors import ConfigError
from readgaze.models.training.cli import ParseOnlyCLI, make_cli, resolve_config_args, tiny_recipe
from readgaze.models.training.configs import find_config, list_configs, model_configs
from readgaze.models.training.registry import TINY_RECIPE

RECORDED = json.loads((Path(__file__).parent / "files" / "effective_configs_v03.json").read_text(encoding="utf-8"))
NAMES = sorted(name for name in RECORDED if not name.endswith(" tiny"))
ADDED = {"task_kind": "classification"}
"""Model arguments added since the record, with the value a recorded config now gets: ``task_kind`` (issue 37,
linked from the datamodule; every task recorded is a classification)."""
DATA_ADDED = {"missing_label": None}
"""Datamodule arguments added since the record, with the default a recorded config now gets: ``missing_label``
(issue 37: EyeBench's CopCo_RCS setting; null drops unlabelled trials, as every recorded config did). The
goal-reconstruction datamodule has none of them."""


def recorded(name: str) -> dict:
    """The recorded effective config of ``name`` plus :data:`ADDED` for a model that takes those arguments."""
    import importlib

    from readgaze.models.base import init_arguments

    config = json.loads(json.dumps(RECORDED[name]))
    module, _, cls = config["model"]["class_path"].rpartition(".")
    takes = set(init_arguments(getattr(importlib.import_module(module), cls)))
    config["model"]["init_args"].update({k: v for k, v in ADDED.items() if k in takes})
    if config["data"].get("task") != "goal_reconstruction":
        config["data"].update(DATA_ADDED)
    return config


def effective(*args: str) -> dict:
    """The configuration ``readgaze fit`` parses from ``args`` (names resolved as ``main`` does), nothing built."""
    cli = make_cli(resolve_config_args([*args, "--data.path", "DATASET"]), run=False, cli_class=ParseOnlyCLI)
    config = json.loads(json.dumps(cli.config.as_dict(), default=str))
    config.pop("config", None)
    return config


def test_every_documented_name_is_listed_and_there_is_one_yaml_per_model():
    assert list_configs() == NAMES  # 29 names: 13 models x their card's tasks + DalEye's two goal_reconstruction
    assert len(NAMES) == 29 and len(model_configs()) == 13
    root = find_config("roberteye_f").parent
    assert sorted(p.relative_to(root).as_posix() for p in root.glob("*/*.yaml")) == [
        "goal_reconstruction/daleye.yaml", "goal_reconstruction/text_only.yaml"]


def test_every_documented_name_has_the_effective_config_it_had():
    changed = {name: effective("-c", name) for name in NAMES}
    assert [name for name in NAMES if changed[name] != recorded(name)] == []
    assert changed["comprehension/roberteye_f"]["trainer"]["default_root_dir"] == "runs/comprehension/roberteye_f"
    assert changed["comprehension/roberteye_f"]["data"]["task"] == "comprehension"


@pytest.mark.slow
def test_every_documented_name_with_the_tiny_encoder_has_its_config_but_the_one_warmup():
    moved = []
    for name in NAMES:
        if f"{name} tiny" not in RECORDED:
            continue
        now = effective("-c", name, "--data.text_encoder", "tiny")
        tiny_recipe(now, set())
        before = recorded(f"{name} tiny")
        if now["model"]["init_args"].get("warmup_ratio") != before["model"]["init_args"].get("warmup_ratio"):
            moved.append(name)
            before["model"]["init_args"]["warmup_ratio"] = TINY_RECIPE["warmup_ratio"]
        assert now == before, name
    assert moved == [f"{task}/{model}" for task in ("comprehension", "goal_question", "reading_goal")
                     for model in ("mag_eye", "postfusion_eye", "roberteye_f", "roberteye_w", "text_only")
                     if task != "goal_question" or model == "roberteye_f"]


def test_a_model_yaml_with_data_task_is_the_task_name():
    """``-c roberteye_f --data.task comprehension`` is ``-c comprehension/roberteye_f``, output folder included; a
    task the model's card lacks is refused for a TASK/MODEL name, and left to the datamodule with ``--data.task``."""
    assert effective("-c", "roberteye_f", "--data.task", "comprehension") == recorded("comprehension/roberteye_f")
    assert effective("-c", "roberteye_f") == recorded("reading_goal/roberteye_f")
    assert find_config("roberteye_f", "not_a_task") == find_config("roberteye_f")
    with pytest.raises(ConfigError, match="serves the tasks reading_goal \\(its card\\), not 'comprehension'"):
        find_config("comprehension/eyettention")
