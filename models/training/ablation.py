"""``readgaze cv --ablate text gaze text_only gaze_only``: a model beside its ablated twins, with paired tests.

Does a model read the text and the eyes, or only one of them? Each *twin* is cross-validated on the same dataset,
folds and training recipe as the model, with one modality made uninformative:

* ``text``: the same config with ``--data.ablate text`` (each trial's paragraph words permuted: tokens and lexical
  features move, gaze and layout stay; :mod:`readgaze.models.data.ablate`);
* ``gaze``: the same config with ``--data.ablate gaze`` (each trial's gaze taken from another trial of the same
  text);
* ``text_only``: the zoo's text-only encoder (:class:`readgaze.models.text_only.TextOnly`) with the model's encoder
  and recipe (the model's ``init_args`` that TextOnly takes: learning rate, weight decay, warm-up, ...);
* ``gaze_only``: the zoo's FSE (:class:`readgaze.models.fse.FSE`, fixation BiLSTM + global gaze features, no text)
  with its packaged settings for the task (``<task>/fse``) and the config's trainer and data.

Each twin is its own run (``OUT/<run>_ablate_<kind>``, no baselines); then ``OUT/<run>/ablation.{csv,md}`` compare
the model with each twin and with each classical baseline of its run, per regime: the model's and the other's
score (AUROC; accuracy for goal_question), the paired difference across folds (mean ± SEM) and two tests
(:func:`readgaze.metrics.paired_comparison`): a paired t-test over folds and a paired permutation test over the
test trials. A twin that scores as well as the model says the removed modality was not used.
"""

from __future__ import annotations

import inspect
from pathlib import Path

import polars as pl
import yaml

from readgaze.errors import ConfigError
from readgaze.metrics import PAIRED_TESTS, REGIME_ORDER, paired_comparison
from readgaze.splits import regime_title

DATA_ABLATIONS = ("text", "gaze")
TWINS = {"text_only": "readgaze.models.text_only.TextOnly", "gaze_only": "readgaze.models.fse.FSE"}
KINDS = (*DATA_ABLATIONS, *TWINS)
NAMES = {"text": "text ablated (words permuted)", "gaze": "gaze ablated (another reader's gaze)",
         "text_only": "text-only twin (TextOnly)", "gaze_only": "gaze-only twin (FSE)"}
ALPHA = 0.05


def check_kinds(kinds: list[str]) -> tuple[str, ...]:
    """The ``--ablate`` values, checked; raises :class:`ConfigError` naming the valid ones."""
    unknown = [k for k in kinds if k not in KINDS]
    if unknown:
        raise ConfigError(f"--ablate: unknown {', '.join(unknown)}; choose from {', '.join(KINDS)}")
    return tuple(dict.fromkeys(kinds))


def twin_run(config: str, kind: str, overrides: list[str], grid: dict, run_dir: Path) -> tuple[str, list[str], dict]:
    """The config, overrides and grid of one twin.

    Data ablations keep everything and add ``--data.ablate KIND``. Model twins get a YAML written to ``run_dir``: the
    config with its ``model`` replaced (see the module docstring); ``--model.*`` overrides and grid keys are dropped
    (they name the model's arguments).
    """
    if kind in DATA_ABLATIONS:
        return config, [*overrides, "--data.ablate", kind], grid
    loaded = yaml.safe_load(Path(config).read_text(encoding="utf-8")) or {}
    loaded.pop("grid", None)
    task = _task(loaded, overrides)
    target = TWINS[kind]
    if kind == "text_only":
        from readgaze.models.text_only import TextOnly

        accepted = set(inspect.signature(TextOnly).parameters)
        own = (loaded.get("model") or {}).get("init_args") or {}
        loaded["model"] = {"class_path": target, "init_args": {k: v for k, v in own.items() if k in accepted}}
    else:
        from readgaze.models.training.configs import find_config

        packaged = yaml.safe_load(find_config(f"{task}/fse").read_text(encoding="utf-8"))
        loaded["model"] = packaged["model"]
        data = dict(loaded.get("data") or {})
        data.update({k: v for k, v in (packaged.get("data") or {}).items() if k == "trial_feature_set"})
        loaded["data"] = data
    run_dir.mkdir(parents=True, exist_ok=True)
    path = run_dir / f"{Path(config).stem}.{kind}.yaml"
    path.write_text(yaml.safe_dump(loaded, sort_keys=False), encoding="utf-8")
    kept, skip = [], False
    for arg in overrides:
        if skip:
            skip = False
            continue
        if arg.startswith("--model.") or arg == "--model":
            skip = "=" not in arg
            continue
        kept.append(arg)
    return str(path), kept, {k: v for k, v in grid.items() if not k.startswith("model.")}


def _task(loaded: dict, overrides: list[str]) -> str:
    task = (loaded.get("data") or {}).get("task", "reading_goal")
    for i, arg in enumerate(overrides):
        if arg.startswith("--data.task"):
            task = arg.partition("=")[2] or (overrides[i + 1] if i + 1 < len(overrides) else task)
    return task


def model_name(run: Path) -> str:
    """The neural model's name in a run's predictions (the one that is not a baseline)."""
    import json

    return json.loads((run / "run.json").read_text(encoding="utf-8"))["model"]


def ablation_frame(full: Path, twins: dict[str, Path], *, n_permutations: int = 1000) -> pl.DataFrame:
    """The model of run ``full`` against each twin run and each classical baseline of ``full``.

    Returns :func:`readgaze.metrics.paired_comparison` rows with ``comparison`` (what the model is compared with)
    and ``model`` first.
    """
    name = model_name(full)
    predictions = pl.read_parquet(full / "predictions.parquet")
    parts = [predictions]
    others = []
    for kind, run in twins.items():
        twin = pl.read_parquet(run / "predictions.parquet")
        label = f"{name} [{kind}]"
        parts.append(twin.filter(pl.col("model") == model_name(run)).with_columns(pl.lit(label).alias("model")))
        others.append((NAMES[kind], label))
    baselines = [m for m in predictions["model"].unique(maintain_order=True).to_list() if m != name]
    others += [(f"baseline: {m}", m) for m in baselines]
    table = pl.concat(parts, how="diagonal_relaxed")
    rows = [paired_comparison(table, name, other, n_permutations=n_permutations)
            .with_columns(pl.lit(name).alias("model"), pl.lit(title).alias("comparison"))
            for title, other in others]
    frame = pl.concat(rows, how="vertical_relaxed")
    return frame.select("model", "comparison", *[c for c in frame.columns if c not in ("model", "comparison")])


def ablation_markdown(frame: pl.DataFrame, *, headline: tuple[str, ...] = ()) -> str:
    """One row per comparison, one column per regime: the other's score, the difference and both p-values (%).

    The first row is the model itself. A cell reads ``62.5 (-12.5 ± 3.1; t .041, perm .020)``: the other's score,
    the model minus the other (mean ± SEM over folds), the t-test and permutation p-values; as in ``readgaze
    bench``'s leaderboard, ``*`` marks a t-test p below :data:`ALPHA`, ``+`` a permutation p below it (``†`` is kept
    for small samples in every table).
    """
    if frame.height == 0:
        return "No comparison could be made (no shared test trials).\n"
    name, metric = frame["model"][0], frame["metric"][0].upper()
    present = set(frame["regime"])
    regimes = [r for r in (*headline, *[r for r in REGIME_ORDER if r not in headline]) if r in present]
    cells = {(r["comparison"], r["regime"]): r for r in frame.iter_rows(named=True)}
    first = frame["comparison"][0]
    lines = ["| " + metric + " (%) | " + " | ".join(regime_title(r) for r in regimes) + " |",
             "|---|" + "---|" * len(regimes),
             f"| **{name}** (full) | " + " | ".join(_own(cells.get((first, r))) for r in regimes) + " |"]
    for comparison in frame["comparison"].unique(maintain_order=True):
        lines.append(f"| {comparison} | " + " | ".join(_cell(cells.get((comparison, r))) for r in regimes) + " |")
    folds = sorted(set(frame["n_folds"].to_list()))
    notes = [f"Each cell: the other's {metric}, then ({name} minus the other, mean ± SEM over "
             f"{'/'.join(map(str, folds))} fold(s) on the same test trials; t = paired t-test p, perm = paired "
             f"permutation test p). * t-test p < {ALPHA}; + permutation p < {ALPHA} (no t-test with fewer than "
             f"3 folds).",
             f"Tests: {PAIRED_TESTS[0]}; {PAIRED_TESTS[1]}. With few folds the t-test has little power (3 folds: "
             f"df 2); the permutation test uses every test trial.",
             "A twin as good as the model (no significant difference) means the model did not use what the twin "
             "lacks. text ablated: each trial's paragraph words permuted (tokens and lexical features move; gaze, "
             "layout and question stay). gaze ablated: each trial's gaze from another trial of the same text. "
             "Twins are retrained with the model's recipe (readgaze.models.training.ablation); baselines are the "
             "run's classical baselines, fit on the same training trials."]
    return "\n".join(lines) + "\n\n" + "\n".join(f"- {n}" for n in notes) + "\n"


def _own(row: dict | None) -> str:
    return "–" if row is None else f"{100 * row['reference_mean']:.1f}"


def _cell(row: dict | None) -> str:
    if row is None:
        return "–"
    sem = "" if row["difference_sem"] is None else f" ± {100 * row['difference_sem']:.1f}"
    t_p = "" if row["t_test_p"] is None else f"t {_p(row['t_test_p'])}, "
    marks = ("*" if row["t_test_p"] is not None and row["t_test_p"] < ALPHA else "") + (
        "+" if row["permutation_p"] < ALPHA else "")
    return (f"{100 * row['other_mean']:.1f} ({100 * row['difference_mean']:+.1f}{sem}; {t_p}perm "
            f"{_p(row['permutation_p'])}){marks}")


def _p(p: float) -> str:
    return f"{p:.3f}".removeprefix("0") if p >= 0.001 else "<.001"


def write_ablation(full: Path, twins: dict[str, Path], *, headline: tuple[str, ...] = ()) -> dict[str, Path]:
    """``ablation.csv`` and ``ablation.md`` in the run folder ``full``; returns their paths."""
    frame = ablation_frame(full, twins)
    paths = {"csv": full / "ablation.csv", "markdown": full / "ablation.md"}
    frame.write_csv(paths["csv"])
    paths["markdown"].write_text(f"# {model_name(full)}: ablations and baselines\n\n"
                                 + ablation_markdown(frame, headline=headline), encoding="utf-8")
    return paths
