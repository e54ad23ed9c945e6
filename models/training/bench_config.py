"""``readgaze bench``'s configuration: what to run (datasets, tasks, models, baselines, folds, seeds, grid), checked
in full before any unit starts, and the plan of units it expands to.

A bench YAML (every key optional but ``datasets``/``dataset``; flags of ``readgaze bench`` override it)::

    datasets: {demo: /data/demo_dataset}     # name -> dataset folder (readgaze prep); or  dataset: PATH
    tasks: [reading_goal, comprehension]     # of reading_goal, comprehension, goal_question, dyslexia
    models: [beyelstm, roberteye_f, postfusion_eye]   # packaged configs <task>/<model> (readgaze configs) or YAMLs
    baselines: default                       # default | all | none | [majority, reading_speed, ...]
    ensembles: true                          # MajorityVote and LogisticEnsemble of the models, per task
    folds: all                               # or [0, 1, 2]
    seeds: 1                                 # a count (0 .. n-1) or a list of seeds
    data: {n_folds: 3, text_encoder: tiny}   # data settings for every unit (the folds are the same for all)
    trainer: {max_epochs: 1}                 # trainer settings for every unit
    grid:                                    # per model ("*": every model): key -> values, chosen per fold on
      roberteye_f: {model.init_args.learning_rate: [1e-5, 3e-5]}   # the validation loss, as readgaze cv does
    overrides: []                            # any other LightningCLI arguments, for every unit
    ablate: []                               # [text, gaze]: each model's ablated twins as units of their own

An ablated twin (``ablate: [text]``) is the model retrained with ``--data.ablate text`` on the same folds, seeds and
grid (:mod:`readgaze.models.data.ablate`); it is the row ``<Model> (<model>_ablate_text)`` of the leaderboard. The
text-only and gaze-only twins are models of the zoo: add ``text_only`` and ``fse`` to ``models``.

A *unit* is one (dataset, task, model, fold, seed, grid point), or the baselines of one (dataset, task, fold). Its
``spec`` holds everything a worker needs (the model's YAML text, the arguments), and its ``hash`` what makes its
result: a unit folder made with another hash (another config, dataset or setting) is never reused or mixed.
"""

from __future__ import annotations

import difflib
import hashlib
import itertools
import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from readgaze.baselines import BASELINES
from readgaze.errors import ConfigError
from readgaze.tasks import TASKS as REGISTRY

TASKS = tuple(name for name, task in REGISTRY.items() if task.kind in ("classification", "regression"))
"""The tasks a bench can run: every classification task of :data:`readgaze.tasks.TASKS` (reading_goal,
comprehension, goal_question, and CopCo's reader-level ``dyslexia``) and every regression task (CopCo's
``reading_comprehension_skill``: scored by RMSE, MAE and R², its baselines the regressors of
:data:`readgaze.baselines_regression.REGRESSORS`, :func:`regressor_list`). A task no model card lists (``dyslexia``)
runs the models given as YAML files (``experiments/configs/ahn_cnn.yaml``), as ``experiments/configs/bench/copco.yaml``
does."""
KEYS = ("dataset", "datasets", "tasks", "models", "baselines", "ensembles", "folds", "seeds", "data", "trainer",
        "grid", "overrides", "ablate")
SAME_FOLDS = ("n_folds", "split_seed", "fold_files", "strict", "split_within", "reading_regime", "questions")
"""Data settings that decide the folds: given once for every unit (``data:``), never per model."""


def closest(name: str, valid, what: str) -> ConfigError:
    """``unknown <what> 'x'; did you mean 'y'? (valid: ...)``."""
    valid = [str(v) for v in valid]
    near = difflib.get_close_matches(str(name), valid, n=1, cutoff=0.5)
    hint = f"; did you mean {near[0]!r}?" if near else ""
    return ConfigError(f"unknown {what} {name!r}{hint} (valid: {', '.join(valid)})")


@dataclass
class BenchConfig:
    datasets: dict[str, str]
    tasks: list[str] = field(default_factory=lambda: ["reading_goal"])
    models: list[str] = field(default_factory=list)
    baselines: tuple[str, ...] = ()
    ensembles: bool = True
    folds: list[int] | None = None
    seeds: list[int] = field(default_factory=lambda: [0])
    data: dict = field(default_factory=dict)
    trainer: dict = field(default_factory=dict)
    grid: dict[str, dict[str, list]] = field(default_factory=dict)
    overrides: list[str] = field(default_factory=list)
    ablate: list[str] = field(default_factory=list)
    regressors: tuple[str, ...] = ()
    """The baselines of a regression task (:func:`regressor_list` of the same ``baselines:`` value)."""

    @property
    def n_folds(self) -> int:
        if self.data.get("fold_files"):
            return len(list((Path(self.data["fold_files"]) / "items").glob("fold_*.csv")))
        return int(self.data.get("n_folds", 10))

    def fold_list(self) -> list[int]:
        return list(range(self.n_folds)) if self.folds is None else list(self.folds)


def load(path: str | None, flags: dict) -> BenchConfig:
    """The YAML at ``path`` (if any) with ``flags`` (non-None values of the command line) on top."""
    raw = {}
    if path:
        try:
            raw = yaml.safe_load(Path(path).read_text(encoding="utf-8")) or {}
        except (OSError, yaml.YAMLError) as error:
            raise ConfigError(f"cannot read the bench config: {error}", file=path) from error
        if not isinstance(raw, dict):
            raise ConfigError("a bench config is a mapping (datasets, tasks, models, ...)", file=path)
        for key in raw:
            if key not in KEYS:
                raise closest(key, KEYS, "bench config key")
    raw.update({k: v for k, v in flags.items() if v is not None and v != [] and v != {}})
    datasets = raw.get("datasets") or {}
    if isinstance(datasets, (list, tuple, str)):
        datasets = _named(_list(datasets))
    if raw.get("dataset"):
        datasets = {**datasets, **_named(_list(raw["dataset"]))}
    if not datasets:
        raise ConfigError("no dataset: give datasets: {name: folder} in the YAML, or --dataset FOLDER")
    seeds = raw.get("seeds", 1)
    seeds = list(range(int(seeds))) if isinstance(seeds, int) or str(seeds).isdigit() else [int(s) for s in seeds]
    if not seeds:
        raise ConfigError("seeds: expected a count >= 1 or a list of seeds")
    folds = raw.get("folds", "all")
    folds = None if folds in ("all", None) else [int(f) for f in (folds if isinstance(folds, list) else [folds])]
    grid = raw.get("grid") or {}
    if not isinstance(grid, dict) or not all(isinstance(v, dict) for v in grid.values()):
        raise ConfigError("grid: expected model -> {key: [values]} (model '*' for every model)")
    config = BenchConfig(datasets={str(k): str(v) for k, v in datasets.items()},
                         tasks=[str(t) for t in _list(raw.get("tasks", ["reading_goal"]))],
                         models=[str(m) for m in _list(raw.get("models", []))],
                         baselines=baseline_list(raw.get("baselines", "default")),
                         regressors=regressor_list(raw.get("baselines", "default")),
                         ensembles=bool(raw.get("ensembles", True)), folds=folds, seeds=seeds,
                         data=dict(raw.get("data") or {}), trainer=dict(raw.get("trainer") or {}),
                         grid={str(m): {str(k): list(v) if isinstance(v, list) else [v] for k, v in g.items()}
                               for m, g in grid.items()},
                         ablate=ablation_list(raw.get("ablate")))
    apply_overrides(config, [str(o) for o in _list(raw.get("overrides", []))])  # --data.X there: into data
    return config


OVERRIDE = re.compile(r"--(data|trainer)\.([A-Za-z_]\w*)(?:=(.*))?", re.DOTALL)


def apply_overrides(config: BenchConfig, args: list[str]) -> None:
    """The command line's other flags, as ``readgaze cv`` and ``fit`` take them: ``--data.KEY VALUE`` and
    ``--trainer.KEY VALUE`` (or ``--KEY=VALUE``) go into ``config.data`` / ``config.trainer`` (on top of the YAML's;
    so they decide the folds, the array cache and every check, as the YAML's do); everything else (``--model.*``,
    ``--seed_everything``, a nested ``--trainer.logger.*``) goes to every model unit as given. A value is read as
    YAML (``4`` is a number, ``true`` a boolean, ``null`` None), as LightningCLI reads it.

    Raises :class:`ConfigError` for a ``--data.KEY`` or ``--trainer.KEY`` without a value.
    """
    rest, i = [], 0
    while i < len(args):
        match = OVERRIDE.fullmatch(args[i])
        if match is None:
            rest.append(args[i])
            i += 1
            continue
        section, key, value = match.groups()
        if value is None:
            if i + 1 >= len(args) or args[i + 1].startswith("--"):
                raise ConfigError(f"--{section}.{key}: expected a value (--{section}.{key} VALUE)")
            value, i = args[i + 1], i + 1
        i += 1
        try:
            parsed = yaml.safe_load(value) if value.strip() else value
        except yaml.YAMLError:
            parsed = value
        (config.data if section == "data" else config.trainer)[key] = parsed
    config.overrides += rest


def ablation_list(value) -> list[str]:
    """``ablate:`` checked: a subset of ``text``, ``gaze`` (the model twins are models: ``text_only``, ``fse``)."""
    from readgaze.models.data.ablate import ABLATIONS

    kinds = [str(k) for k in _list(value)] if value not in (None, [], "none") else []
    for kind in kinds:
        if kind in ("text_only", "gaze_only"):
            raise ConfigError(f"ablate: {kind} is a model in readgaze bench: add "
                              f"{'text_only' if kind == 'text_only' else 'fse'} to models")
        if kind not in ABLATIONS:
            raise closest(kind, ABLATIONS, "ablation")
    return list(dict.fromkeys(kinds))


def _list(value) -> list:
    return list(value) if isinstance(value, (list, tuple)) else [value]


def _named(items) -> dict[str, str]:
    """``["name=path", "path"]`` -> ``{name: path, <folder name>: path}``."""
    out = {}
    for item in items:
        name, sep, folder = str(item).partition("=")
        if not sep:
            name, folder = Path(str(item)).resolve().name or "data", str(item)
        out[name] = folder
    return out


def baseline_list(value) -> tuple[str, ...]:
    """``default`` (:data:`readgaze.models.training.cv.DEFAULT_BASELINES`), ``all``, ``none`` or a list of kinds;
    ``majority`` is always added (the leaderboard's majority row). A kind only a regression task has (``ridge``,
    ``svr``, ``chance``: :func:`regressor_list`) is left to the regression tasks."""
    from readgaze.models.training.cv import DEFAULT_BASELINES

    if value in (None, False, "none", []):
        return ()
    from readgaze.baselines_regression import REGRESSORS

    kinds = list(DEFAULT_BASELINES if value in ("default", True) else BASELINES if value == "all" else _list(value))
    for kind in kinds:
        if kind not in BASELINES and kind not in REGRESSORS:
            raise closest(kind, BASELINES, "baseline")
    return tuple(dict.fromkeys(["majority", *[k for k in kinds if k in BASELINES]]))  # regressors: regressor_list


def is_regression(task: str) -> bool:
    """Whether ``task`` is a regression task of :data:`readgaze.tasks.TASKS`."""
    return task in REGISTRY and REGISTRY[task].kind == "regression"


def regressor_list(value) -> tuple[str, ...]:
    """The baselines of a regression task for the same ``baselines:`` value: ``default``
    (:data:`readgaze.models.training.cv_settings.DEFAULT_REGRESSORS`), ``all`` (every regressor), ``none``, or a
    list: its kinds that are regressors (``majority`` is ``chance``); ``chance`` (the training mean, the regression
    leaderboard's chance row) is always added."""
    from readgaze.baselines_regression import REGRESSORS
    from readgaze.models.training.cv_settings import DEFAULT_REGRESSORS

    if value in (None, False, "none", []):
        return ()
    kinds = list(DEFAULT_REGRESSORS if value in ("default", True) else REGRESSORS if value == "all" else
                 ["chance" if k == "majority" else k for k in map(str, _list(value))])
    return tuple(dict.fromkeys(["chance", *[k for k in kinds if k in REGRESSORS]]))


def model_configs(config: BenchConfig) -> tuple[dict[tuple[str, str], Path], list[str]]:
    """``{(task, model): config file}`` and notes for models without a config for a task.

    A model is a packaged config name (``<task>/<model>.yaml``) or a YAML file (used for every task, with
    ``--data.task``). Raises :class:`ConfigError` for a task or model name that exists nowhere, naming the closest.
    """
    from readgaze.models.training.configs import find_config, list_configs

    for task in config.tasks:
        if task not in TASKS:
            raise closest(task, TASKS, "task")
    if not config.models and not config.baselines:
        raise ConfigError("nothing to run: give models (e.g. models: [beyelstm, roberteye_f]) or baselines")
    packaged = list_configs()
    names = sorted({name.split("/", 1)[1] for name in packaged if name.split("/", 1)[0] in TASKS})
    found, notes = {}, []
    for model in config.models:
        if Path(model).suffix in (".yaml", ".yml"):
            path = find_config(model)
            found.update({(task, model): path for task in config.tasks})
            continue
        if model not in names:
            raise closest(model, names, "model")
        for task in config.tasks:
            if f"{task}/{model}" in packaged:
                found[(task, model)] = find_config(f"{task}/{model}")
            else:
                notes.append(f"{model} has no {task} config (readgaze configs): not run on {task}")
    stems = [Path(m).stem for m in config.models]  # a YAML file's model is named by its stem
    for model in config.grid:
        if model == "*" or model in stems:
            continue
        if model not in names:  # a typo; a model of the zoo left out of this run (--models) only gets a note
            raise closest(model, ["*", *stems], "grid model")
        notes.append(f"grid for {model}: not among this run's models, not used")
    return found, notes


def grid_points(config: BenchConfig, model: str, path: Path) -> list[dict[str, str]]:
    """The cartesian product of the model's YAML ``grid:`` block, the bench's ``grid["*"]`` and ``grid[model]``."""
    own = (yaml.safe_load(path.read_text(encoding="utf-8")) or {}).get("grid") or {}
    grid = {**{k: list(v) for k, v in own.items()}, **config.grid.get("*", {}),
            **config.grid.get(Path(model).stem, {})}
    grid = {key.removeprefix("--"): [arg_value(v) for v in values] for key, values in grid.items()}
    return [dict(zip(grid, values)) for values in itertools.product(*grid.values())] or [{}]


def arg_value(value) -> str:
    """A YAML value as a LightningCLI argument."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    return value if isinstance(value, str) else json.dumps(value)


def common_args(config: BenchConfig, task: str) -> list[str]:
    """The arguments every model unit of ``task`` gets: the task, the data and trainer settings, the overrides."""
    args = ["--data.task", task]
    args += [f"--data.{k}={arg_value(v)}" for k, v in config.data.items()]
    args += [f"--trainer.{k}={arg_value(v)}" for k, v in config.trainer.items()]
    return [*args, *config.overrides]


def config_text(path: Path) -> str:
    """The model's YAML without its ``grid:`` block (the grid becomes units)."""
    loaded = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    loaded.pop("grid", None)
    return yaml.safe_dump(loaded, sort_keys=False)


def dataset_fingerprint(folder: str | Path) -> str:
    """:meth:`readgaze.Dataset.fingerprint` of the folder: a re-prepared dataset differs."""
    from readgaze.dataset import Dataset

    return Dataset(folder).fingerprint()


@dataclass
class Unit:
    """One unit: ``id`` (its folder under ``units/``), ``kind`` ("model" or "baselines"), ``spec`` (what the worker
    gets) and ``hash`` (what makes its result)."""

    id: str
    kind: str
    spec: dict
    hash: str

    def summary(self) -> dict:
        """What ``plan.json`` keeps of the unit (no YAML text)."""
        keep = ("dataset_name", "task", "model_name", "fold", "seed", "point_index", "point", "baselines")
        return {"id": self.id, "kind": self.kind, "hash": self.hash, **{k: self.spec.get(k) for k in keep}}


def plan(config: BenchConfig, configs: dict[tuple[str, str], Path]) -> list[Unit]:
    """Every unit, fold-major (every model's fold 0 first), baselines first within a fold."""
    units = []
    data = {k: v for k, v in config.data.items()}
    for fold in config.fold_list():
        for name, folder in config.datasets.items():
            fingerprint = dataset_fingerprint(folder)
            for task in config.tasks:
                base = {"dataset": str(Path(folder).resolve()), "dataset_name": name, "task": task, "fold": fold,
                        "fingerprint": fingerprint, "data": data}
                kinds = config.regressors if is_regression(task) else config.baselines
                if kinds:
                    spec = {**base, "kind": "baselines", "baselines": list(kinds)}
                    units.append(_unit(f"{name}/{task}/baselines/fold_{fold}", "baselines", spec))
                args = common_args(config, task)
                for model in config.models:
                    if (task, model) not in configs:
                        continue
                    path = configs[(task, model)]
                    points = grid_points(config, model, path)
                    for ablate in (None, *config.ablate):  # the model, then its ablated twins
                        stem = Path(model).stem + (f"_ablate_{ablate}" if ablate else "")
                        unit_args = [*args, "--data.ablate", ablate] if ablate else args
                        for seed in config.seeds:
                            for index, point in enumerate(points):
                                spec = {**base, "kind": "model", "model_name": stem, "config_text": config_text(path),
                                        "args": unit_args, "seed": seed, "point": point, "point_index": index}
                                uid = f"{name}/{task}/{stem}/fold_{fold}/seed_{seed}"
                                units.append(_unit(uid + (f"/grid_{index}" if len(points) > 1 else ""), "model",
                                                   spec))
    return units


def _unit(uid: str, kind: str, spec: dict) -> Unit:
    made_of = {k: v for k, v in spec.items() if k not in ("dataset", "dataset_name")}
    digest = hashlib.sha256(json.dumps(made_of, sort_keys=True, default=str).encode()).hexdigest()[:16]
    return Unit(uid, kind, {**spec, "id": uid}, digest)


def check_parses(config_file: Path, dataset: str, args: list[str], points: list[dict]) -> None:
    """Parse the model's config with the unit arguments and a grid point, without building anything; a bad key
    raises :class:`ConfigError` naming the closest valid one (the LightningCLI's own check)."""
    from readgaze.models.training.cli import ParseOnlyCLI, make_cli

    text = config_text(config_file)
    tmp = Path(os.environ.get("TMPDIR", "/tmp")) / f"readgaze-bench-check-{os.getpid()}.yaml"
    tmp.write_text(text, encoding="utf-8")
    try:  # the first grid point: every point has the same keys (a bad value fails its unit, recorded)
        extra = [f"--{k}={v}" for k, v in points[0].items()]
        make_cli(["-c", str(tmp), "--data.path", dataset, *args, *extra], run=False, cli_class=ParseOnlyCLI)
    except ConfigError as error:
        raise ConfigError(f"{config_file.parent.name}/{config_file.stem}: {error.message}") from None
    finally:
        tmp.unlink(missing_ok=True)
