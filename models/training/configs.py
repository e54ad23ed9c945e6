"""The packaged configs: one YAML per model, found by name from any directory, listed by ``readgaze configs``.

In the repository they live in ``experiments/configs/<model>.yaml`` (the task is ``data.task``: the file's default,
or ``--data.task``); a config that is a task's own variant lives in ``experiments/configs/<task>/<name>.yaml``
(``goal_reconstruction/text_only``: DalEye without the scanpath). An installed wheel carries the same files under
``readgaze/configs/`` (``setup.py`` maps the folder). :func:`find_config` turns a name into a file, so
``readgaze fit -c roberteye_f`` works outside the checkout; a path that is a file is used as it is.

The documented ``<task>/<model>`` names (``readgaze fit -c comprehension/roberteye_f``, users' scripts call them)
keep working: :func:`task_config` writes the model's YAML with ``data.task: <task>`` and the output folder
``runs/<task>/<model>`` (what the per-task copies of readgaze 0.3 said) to a cache folder and returns that file, so
the effective configuration of every name is the one it had (``tests/test_configs_per_model.py``).
"""

from __future__ import annotations

import os
import re
import sys
import tempfile
from pathlib import Path

from readgaze.errors import ConfigError
from readgaze.models.training.registry import MODELS, ROOTS, config_root

__all__ = ["ROOTS", "config_root", "find_config", "list_configs", "model_configs", "task_config"]
_TASK_LINE = re.compile(r"^(data:\n(?:[ #].*\n|\n)*?  task: *)(\w+)", re.MULTILINE)
_ROOT_LINE = re.compile(r"^(  default_root_dir: *runs/)(\w+)(/)", re.MULTILINE)


def list_configs() -> list[str]:
    """Names of every packaged config, sorted: ``<task>/<model>`` for each task a model's card serves (its YAML with
    that task, :func:`task_config`) and each task's own ``<task>/<name>``; the model names alone are in
    :func:`model_configs`."""
    root = config_root()
    if root is None:
        return []
    names = {f"{p.parent.name}/{p.stem}" for p in root.glob("*/*.yaml")}
    names |= {f"{task}/{model}" for model, tasks in model_tasks(root).items() for task in tasks}
    return sorted(names)


def model_configs() -> list[str]:
    """The per-model config names (``roberteye_f``), sorted."""
    root = config_root()
    return [] if root is None else sorted(p.stem for p in root.glob("*.yaml"))


def model_tasks(root: Path) -> dict[str, tuple[str, ...]]:
    """``{config stem: tasks}`` of the models' cards (:mod:`readgaze.models.training.registry`) whose YAML is in
    ``root``."""
    return {e.config: e.tasks for e in MODELS if (root / f"{e.config}.yaml").is_file()}


def find_config(name: str | Path, task: str | None = None) -> Path:
    """The config file for ``name``: a path that exists, else a packaged ``<model>`` or ``<task>/<name>`` config.

    ``<task>/<model>`` (also ``experiments/configs/<task>/<model>.yaml`` as readgaze 0.3 laid them out) is the
    model's YAML for that task (:func:`task_config`); so is ``<model>`` with ``task`` (``--data.task``), so that
    ``-c roberteye_f --data.task comprehension`` writes to ``runs/comprehension/roberteye_f`` as
    ``-c comprehension/roberteye_f`` does.

    Raises
    ------
    ConfigError
        Neither a file nor a packaged config, or a task the model's card does not list; names the closest packaged
        ones.
    """
    path = Path(name)
    if path.is_file():
        if task and path.suffix == ".yaml" and any(path.resolve().parent == root.resolve() for root in ROOTS):
            return task_config(path, task, strict=False)  # a packaged model config named by its path
        return upgrade_class_paths(path)
    key = str(name).removesuffix(".yaml").replace("\\", "/")
    parts = key.split("/")  # experiments/configs/<task>/<model> given from outside the checkout
    for root in ROOTS:
        for size in (2, 1):
            if len(parts) < size:
                continue
            candidate = root / f"{'/'.join(parts[-size:])}.yaml"
            if candidate.is_file():
                return task_config(candidate, task, strict=False) if size == 1 and task else candidate
            model = root / f"{parts[-1]}.yaml"
            if size == 2 and model.is_file() and parts[-2] != root.name:
                return task_config(model, parts[-2])
    import difflib

    names = list_configs()
    close = difflib.get_close_matches(key, names, n=3, cutoff=0.4)
    hint = f"did you mean {', '.join(close)}? " if close else ""
    raise ConfigError(f"config {str(name)!r} is neither a file nor a packaged config; {hint}"
                      "'readgaze configs' lists the packaged ones")


def task_config(model_config: Path, task: str, strict: bool = True) -> Path:
    """``model_config`` (a packaged ``<model>.yaml``) for ``task``: the same text with ``data.task: <task>`` and
    ``trainer.default_root_dir: runs/<task>/<model>``, written once to ``$TMPDIR/readgaze-configs-<uid>/<task>/``
    (the folder name is the task, as ``readgaze bench`` and ``cv`` read it); ``model_config`` itself when ``task``
    is its default, or (``strict`` False: ``--data.task`` given on the command line) when the model's card does not
    list ``task`` (the datamodule then judges the task; the output folder stays the file's).

    Raises
    ------
    ConfigError
        ``strict`` and ``task`` is not one of the model's card's tasks (:mod:`readgaze.models.training.registry`).
    """
    text = model_config.read_text(encoding="utf-8")
    found = _TASK_LINE.search(text)
    if found is None:
        raise ConfigError(f"{model_config}: no data.task line to choose the task {task!r} in", column="data.task")
    tasks = model_tasks(model_config.parent).get(model_config.stem, (found.group(2),))
    if task not in tasks and not strict:
        return model_config
    if task not in tasks:
        raise ConfigError(f"config {model_config.stem!r} serves the tasks {', '.join(tasks)} (its card), not "
                          f"{task!r}; 'readgaze configs' lists the packaged names", column="data.task")
    if task == found.group(2):
        return model_config
    text = _TASK_LINE.sub(lambda m: m.group(1) + task, text, count=1)
    text = _ROOT_LINE.sub(lambda m: m.group(1) + task + m.group(3), text, count=1)
    folder = Path(tempfile.gettempdir()) / f"readgaze-configs-{os.getuid() if hasattr(os, 'getuid') else 0}" / task
    folder.mkdir(parents=True, exist_ok=True)
    out = folder / model_config.name
    if not out.is_file() or out.read_text(encoding="utf-8") != text:
        part = out.with_suffix(f".{os.getpid()}.part")
        part.write_text(text, encoding="utf-8")
        os.replace(part, out)  # another process may write the same text at the same time
    return out


OLD_MODULES = {
    "models.batch": "readgaze.models.data.batch", "models.features": "readgaze.features",
    "models.data": "readgaze.models.data", "models.goal_data": "readgaze.models.data.goal",
    "models.cli": "readgaze.models.training.cli", "models.cv": "readgaze.models.training.cv",
    "models.ensemble": "readgaze.models.training.ensemble", "models.registry": "readgaze.models.training.registry",
    "models.demo": "readgaze.models.demo", "models.dist": "readgaze.models.dist",
}
"""Modules of readgaze 0.1 (when ``models`` was a top-level package) that moved into a folder by role."""
_OLD_PATH = re.compile(r"(?<![\w.])(models|kernels|data_prep)\.([A-Za-z_][\w.]*)")


def upgrade_class_paths(path: Path) -> Path:
    """``path``, or for a config naming readgaze 0.1's class paths (``models.roberteye_f.RoBERTEyeF``), an upgraded
    copy in a temporary folder (``readgaze.models.roberteye_f.RoBERTEyeF``), with a warning saying how to convert
    the file for good. Since 0.2 the one installed package is ``readgaze``; its parts ``models``, ``kernels`` and
    ``data_prep`` live under it."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return path  # the config parser reports it, naming the file
    matches = [m for m in _OLD_PATH.finditer(text) if _is_class_path_line(text, m.start())]
    if not matches:
        return path
    found = sorted({m.group(0) for m in matches})

    def new(match: re.Match) -> str:
        if not _is_class_path_line(text, match.start()):
            return match.group(0)
        dotted = match.group(0)
        for old, moved in sorted(OLD_MODULES.items(), key=lambda kv: -len(kv[0])):
            if dotted == old or dotted.startswith(old + "."):
                return moved + dotted[len(old):]
        return "readgaze." + dotted

    upgraded = _OLD_PATH.sub(new, text)
    import tempfile
    import warnings

    folder = Path(tempfile.mkdtemp(prefix="readgaze-config-"))
    copy = folder / path.name
    copy.write_text(upgraded, encoding="utf-8")
    warnings.warn(f"{path}: names readgaze 0.1 class paths ({', '.join(found[:3])}); read as "
                  f"{new(matches[0])} (since 0.2 everything lives under the one package readgaze); to convert the "
                  f"file: "
                  f"sed -i 's/class_path: models\\./class_path: readgaze.models./' {path}", stacklevel=2)
    return copy


def _is_class_path_line(text: str, position: int) -> bool:
    line = text[text.rfind("\n", 0, position) + 1:position]
    return "class_path" in line


def main(argv: list[str] | None = None) -> int:
    """``readgaze configs``: print every packaged config with its first comment line."""
    root = config_root()
    if root is None:
        print("readgaze configs: this installation ships no configs", file=sys.stderr)
        return 2
    print(f"packaged configs ({root}); use them as  readgaze fit -c <task>/<model> --data.path DATASET  (or -c "
          "<model> --data.task TASK)\n")
    for name in list_configs():
        own = root / f"{name}.yaml"
        text = (own if own.is_file() else root / f"{name.rpartition('/')[2]}.yaml").read_text(encoding="utf-8")
        print(f"  {name:<30} {_about(text)}")
    return 0


def _about(text: str) -> str:
    """The first sentence of a config's leading comment, which may run over several lines (up to a blank comment
    line or a ``Paper:``/``Run`` line)."""
    words = []
    for line in text.splitlines():
        if not line.startswith("#"):
            break
        line = line.lstrip("# ").strip()
        if not line or re.match(r"(Paper|Papers|Run|Source)\b", line):
            break
        words.append(line)
    about = " ".join(words)
    end = re.search(r"\.(\s|$)", about)
    return about[:end.start() + 1] if end else about
