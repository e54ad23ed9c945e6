"""What a ``readgaze cv`` run is asked to do, read and checked before any fold starts.

A config's ``task``, fold count and ``grid:`` block after the command line's ``--data.X`` overrides
(:func:`run_settings`; ``split_unit`` must be ``participant_item``, at least 3 folds); the ``--grid KEY=V1,V2``
points (:func:`parse_grid`); the config copy without its ``grid:`` block that LightningCLI reads
(:func:`config_without_grid`); a dataset with fewer participants or items than folds refused
(:func:`check_design`, also ``readgaze bench``'s check); and the baseline rows a run adds
(:func:`baseline_kinds`, :data:`DEFAULT_BASELINES`). Each problem is a :class:`readgaze.errors.ConfigError` naming
the config or dataset file. :mod:`readgaze.models.training.cv` runs the folds.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import polars as pl
import yaml

from readgaze.baselines import BASELINES
from readgaze.dataset import Dataset
from readgaze.errors import ConfigError


def parse_grid(items: list[str]) -> dict[str, list[str]]:
    """``["model.init_args.learning_rate=1e-5,3e-5"]`` -> ``{"model.init_args.learning_rate": ["1e-5", "3e-5"]}``."""
    grid = {}
    for item in items:
        key, sep, values = item.partition("=")
        if not sep or not key or not values:
            raise ConfigError(f"--grid: got {item!r}, expected KEY=V1,V2,... (e.g. model.init_args.learning_rate="
                              f"1e-5,3e-5)")
        grid[key.removeprefix("--")] = [v for v in values.split(",") if v != ""]
    return grid


def check_design(data_path: str, n_folds: int, command: str = "cv") -> None:
    """Refuse, before any fold starts, a dataset with fewer participants or items than folds (``command`` names
    the command in the message)."""
    dataset = Dataset(data_path)
    counts = dataset.scan("trials", validate=False).select(pl.col("participant_id").n_unique(),
                                                           pl.col("item_id").n_unique()).collect()
    participants, items = counts.row(0)
    if min(participants, items) < n_folds:
        fix = (f"use --data.n_folds {min(participants, items)} or fewer (at least 3)" if min(participants, items) >= 3
               else f"{command} needs at least 3 participants and 3 items (readgaze fit can smoke-run smaller data)")
        raise ConfigError(f"readgaze {command} holds out participants and items in {n_folds} folds, but this dataset "
                          f"has {participants} participants and {items} items; {fix}", file=dataset.file("trials"))


def run_settings(config: str, overrides: list[str]) -> dict:
    """``task``, ``n_folds`` and ``grid`` of a config after overrides (``--data.X v`` or ``--data.X=v``)."""
    try:
        loaded = yaml.safe_load(Path(config).read_text(encoding="utf-8")) or {}
    except (OSError, yaml.YAMLError) as error:
        raise ConfigError(f"cannot read config: {error}", file=config) from error
    data = dict(loaded.get("data") or {})
    grid = loaded.get("grid") or {}
    if not isinstance(grid, dict) or not all(isinstance(v, list) and v for v in grid.values()):
        raise ConfigError("grid: expected a mapping from a key (e.g. model.init_args.learning_rate) to a non-empty "
                          "list of values", file=config)
    pairs = {}
    for i, arg in enumerate(overrides):
        if arg.startswith("--data."):
            key, _, value = arg[len("--data."):].partition("=")
            pairs[key] = value if value else (overrides[i + 1] if i + 1 < len(overrides) else "")
    data.update(pairs)
    if data.get("fold_files"):
        n_folds = len(list((Path(data["fold_files"]) / "items").glob("fold_*.csv")))
    else:
        n_folds = int(data.get("n_folds", 10))
    if data.get("split_unit", "auto") not in ("auto", "participant_item"):
        raise ConfigError("cv scores the participant x item regimes; data.split_unit must be participant_item",
                          file=config)
    if n_folds < 3:
        raise ConfigError(f"data.n_folds: got {n_folds}, expected at least 3", file=config)
    return {"task": data.get("task", "reading_goal"), "n_folds": n_folds,
            "grid": {str(k): [str(v) for v in values] for k, values in grid.items()}}


def config_without_grid(config: str, run_dir: Path) -> str:
    """A copy of the YAML without its ``grid:`` block (LightningCLI does not know the key), in the run folder."""
    loaded = yaml.safe_load(Path(config).read_text(encoding="utf-8"))
    loaded.pop("grid", None)
    path = run_dir / f"{Path(config).stem}.fit.yaml"
    path.write_text(yaml.safe_dump(loaded, sort_keys=False), encoding="utf-8")
    return str(path)


DEFAULT_BASELINES = ("majority", "reading_speed", "mean_total_fixation_duration", "meziere_logistic_regression")
"""The baseline rows ``readgaze cv`` adds by default: majority class, the reading-time baselines and Mézière's
logistic regression (the grid-searched SVM, random forest, kNN and gradient boosting with ``--baselines all``).
``words_per_paragraph_time`` joins them only for data with Data Viewer's ``PARAGRAPH_RT``
(:data:`PARAGRAPH_TIME_BASELINE`): without it the paragraph time is the fixation span and that baseline is
``reading_speed`` again (a logistic regression on words per the same time; predictions equal to 3e-16)."""
PARAGRAPH_TIME_BASELINE = "words_per_paragraph_time"


DEFAULT_REGRESSORS = ("chance", "reading_speed", "ridge")
"""The baseline rows ``readgaze cv`` adds by default for a regression task
(:data:`readgaze.baselines_regression.REGRESSORS`): chance (the training mean), reading speed and ridge regression
on Mézière et al.'s features (SVR, random forest, kNN and gradient boosting with ``--baselines all``)."""


def baseline_kinds(baselines: bool | Sequence[str], *, regression: bool = False) -> tuple[str, ...]:
    """``True`` -> :data:`DEFAULT_BASELINES` (:data:`DEFAULT_REGRESSORS` for a regression task), ``False`` -> none,
    ``["all"]`` -> every kind; names are checked against :data:`readgaze.baselines.BASELINES` (classification) or
    :data:`readgaze.baselines_regression.REGRESSORS` (regression).

    Raises :class:`ConfigError` naming an unknown kind and the valid ones.
    """
    from readgaze.baselines_regression import REGRESSORS

    known = REGRESSORS if regression else BASELINES
    if baselines is True:
        return DEFAULT_REGRESSORS if regression else DEFAULT_BASELINES
    if not baselines:
        return ()
    kinds = tuple(known) if list(baselines) == ["all"] else tuple(baselines)
    unknown = [k for k in kinds if k not in known]
    if unknown:
        what = "regression task's baselines" if regression else "baselines"
        raise ConfigError(f"--baselines: unknown {', '.join(unknown)}; the {what} are {', '.join(known)} or 'all'")
    return kinds
