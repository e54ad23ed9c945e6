"""Every model and baseline readgaze offers, one line each, and the ``readgaze models`` listing.

A model is one file in ``models/`` whose class carries a ``CARD`` (a dict literal: display ``name``, ``tasks``,
``paper``, and optionally ``quick`` constructor arguments for a brief CPU run (over :data:`TINY_RECIPE` for a model
with a text encoder), ``config`` stem (default the file's name), ``sees_gaze`` and ``kind``), plus one YAML
(``experiments/configs/<config>.yaml``, for every task of the card: ``--data.task`` or the name
``<task>/<config>``). This module finds the cards by reading the model files' source (:func:`model_cards`), so
nothing imports the classes here: the listing works even while one model file is broken (``readgaze models
--check`` imports each and says which fail), and a new model file appears in ``readgaze models``, the zoo tests
and the ``learns`` tests by itself.
A model class without a card is reported by ``--check`` (and fails the zoo test), never skipped silently.

Classical baselines are listed from :data:`readgaze.baselines.BASELINES` (a new baseline appears by itself; its
paper goes in :data:`BASELINE_PAPERS`), then the out-of-sample ensembles of
:data:`readgaze.models.training.ensemble.ENSEMBLES` (:class:`~readgaze.models.training.ensemble.MajorityVote`,
:class:`~readgaze.models.training.ensemble.LogisticEnsemble`): run by ``readgaze ensemble`` on cv runs and by
``readgaze bench`` (a row each once two models ran).

Example::

    readgaze models             # the table
    readgaze models --check     # also import every class and check every config file exists
"""

from __future__ import annotations

import argparse
import ast
import importlib
import sys
from dataclasses import dataclass, field
from pathlib import Path

MODEL_FOLDER = Path(__file__).resolve().parents[1]
"""``models/`` (installed as ``readgaze/models/``): one file per model."""
ROOTS = (MODEL_FOLDER.parent / "experiments" / "configs",  # a checkout or an editable install (models/ here)
         MODEL_FOLDER.parent / "configs")                  # an installed wheel (readgaze/models/ here)
"""Folders searched, in order, for the models' configs ``<model>.yaml`` and ``<task>/<name>.yaml``
(:mod:`readgaze.models.training.configs` finds them by name)."""


def config_root() -> Path | None:
    """The first folder of :data:`ROOTS` that holds configs (None when the package ships none)."""
    return next((root for root in ROOTS if root.is_dir() and any(root.glob("*.yaml"))), None)


KINDS = ("neural", "generator", "baseline", "ensemble")
TINY_RECIPE = {"learning_rate": 3e-3, "warmup_ratio": 0.0}
"""The one training recipe of the tiny random text encoder (``text_encoder: tiny``): the base of every ``quick``
entry of a model that takes a ``text_encoder`` (its card adds only what is its own) and what ``readgaze fit
--data.text_encoder tiny`` puts in place of a pretrained encoder's settings
(:func:`tiny_recipe`).

Warm-up 0: a linear warm-up keeps AdamW's first, badly estimated steps from wrecking *pretrained* weights; the tiny
encoder has none to protect, and in a run of a few epochs a 10 % warm-up followed by linear decay spends much of the
run below the learning rate. The ``learns`` tests (tests/test_models_learn.py) of RoBERTEye-F, RoBERTEye-W, MAG-Eye
and PostFusion-Eye were measured with warm-up 0 (their cards said so); ``fit --data.text_encoder tiny`` kept the
configs' 0.1 until readgaze 0.4."""
TINY_LEARNING_RATE = TINY_RECIPE["learning_rate"]
"""Learning rate for the tiny random encoder when a config names a pretrained encoder's (< 1e-4); the demo's."""


def tiny_recipe(config, explicit: set[str]) -> list[str]:
    """Settings the tiny random encoder needs where a config is written for a pretrained one (changed in place).

    * learning rate below 1e-4 (a pretrained encoder's) -> the learning rate and warm-up of
      :data:`~readgaze.models.training.registry.TINY_RECIPE` (3e-3, no warm-up: the recipe the ``quick`` settings of
      the registry use; the reason for no warm-up is given there);
    * gradient accumulation -> one real batch of the same effective size (``batch_size x accumulate_grad_batches``,
      accumulation 1): on the demo's dataset RoBERTEye-F at 2 x 8 stayed constant (val AUROC 63, every probability
      within 0.002) where 16 x 1 learned.

    Values given on the command line (``explicit``) are kept. Returns what was changed, as sentences.
    """
    notes = []
    init = config["model"].get("init_args")
    rate = init.get("learning_rate") if init is not None else None
    if "learning_rate" not in explicit and rate is not None and float(rate) < 1e-4:
        init["learning_rate"] = TINY_LEARNING_RATE
        notes.append(f"learning rate {TINY_LEARNING_RATE:g} instead of the config's {float(rate):g} (a pretrained "
                     "encoder's); pass --model.init_args.learning_rate to choose")
        warmup = init.get("warmup_ratio")
        if "warmup_ratio" not in explicit and warmup is not None and float(warmup) != TINY_RECIPE["warmup_ratio"]:
            init["warmup_ratio"] = TINY_RECIPE["warmup_ratio"]
            notes.append(f"warm-up ratio {TINY_RECIPE['warmup_ratio']:g} instead of the config's {float(warmup):g} "
                         "(nothing pretrained to protect); pass --model.init_args.warmup_ratio to choose")
    trainer, data = config.get("trainer"), config["data"]
    accumulate = (trainer.get("accumulate_grad_batches") if trainer is not None else None) or 1
    if accumulate > 1 and not explicit & {"batch_size", "accumulate_grad_batches"}:
        batch = int(data.get("batch_size") or 1)
        data["batch_size"], trainer["accumulate_grad_batches"] = batch * accumulate, 1
        notes.append(f"batch size {batch * accumulate} without accumulation instead of {batch} x {accumulate} (the "
                     "same effective batch); pass --data.batch_size or --trainer.accumulate_grad_batches to choose")
    return notes


@dataclass(frozen=True)
class Entry:
    """One model: display name, ``module.Class``, tasks served, paper, config stem, CPU settings.

    ``quick`` holds constructor arguments for a brief CPU run with the tiny encoder (the ``learns`` tests and the
    demo use them); ``sees_gaze`` False marks a model that cannot learn from gaze (text-only), which the ``learns``
    tests skip. ``kind``: "neural" (a classifier: the zoo and ``learns`` tests cover it), "generator" (generates
    text; listed, not trained by those tests), "baseline" (classical, run by ``readgaze cv``), "ensemble" (combines
    the models' predictions: ``readgaze ensemble``, ``readgaze bench``).
    """

    name: str
    target: str
    tasks: tuple[str, ...]
    paper: str
    config: str
    quick: dict = field(default_factory=dict)
    sees_gaze: bool = True
    kind: str = "neural"

    def load(self) -> type:
        """The model class (imports its module)."""
        module, _, name = self.target.rpartition(".")
        return getattr(importlib.import_module(module), name)

    def build(self, **overrides):
        """An instance with :attr:`quick` settings, then ``overrides``."""
        return self.load()(**{**self.quick, **overrides})


def _model_classes(trees: dict[str, ast.Module]) -> dict[tuple[str, str], ast.ClassDef]:
    """``{(file stem, class name): class node}`` of every class that extends ``ReadingModel``, directly or through
    another model class."""
    classes = {(stem, node.name): node for stem, tree in trees.items() for node in tree.body
               if isinstance(node, ast.ClassDef)}
    models, grew = {"ReadingModel"}, True
    while grew:
        before = len(models)
        models |= {name for (_, name), node in classes.items()
                   if any(isinstance(b, ast.Name) and b.id in models for b in node.bases)}
        grew = len(models) > before
    return {key: node for key, node in classes.items() if key[1] in models and key[0] != "base"}


def _takes_text_encoder(node: ast.ClassDef, classes: dict[str, ast.ClassDef]) -> bool:
    """Whether the class's ``__init__`` (its own, else its first base's in ``classes``) has a ``text_encoder``
    argument."""
    while node is not None:
        init = next((f for f in node.body if isinstance(f, ast.FunctionDef) and f.name == "__init__"), None)
        if init is not None:
            return any(a.arg == "text_encoder" for a in (*init.args.args, *init.args.kwonlyargs))
        base = next((b.id for b in node.bases if isinstance(b, ast.Name)), None)
        node = classes.get(base)
    return False


def model_cards(folder: Path = MODEL_FOLDER) -> tuple[tuple[Entry, ...], list[str]]:
    """The entries of every model class's ``CARD`` in ``folder``'s ``*.py`` (read from the source, not imported),
    neural models first, each kind in file order; and the problems (a model class without a card, a card that is
    not a dict literal or lacks a key, a name used twice).

    Raises nothing: a file that does not parse is a problem of the list."""
    trees, problems = {}, []
    for path in sorted(folder.glob("*.py")):
        try:
            trees[path.stem] = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        except SyntaxError as error:
            problems.append(f"models/{path.name}: does not parse ({error.msg}, line {error.lineno})")
    entries = []
    classes = {node.name: node for tree in trees.values() for node in tree.body if isinstance(node, ast.ClassDef)}
    for (stem, name), node in _model_classes(trees).items():
        card = next((s.value for s in node.body if isinstance(s, ast.Assign)
                     and any(isinstance(t, ast.Name) and t.id == "CARD" for t in s.targets)), None)
        where = f"models/{stem}.py: class {name}"
        if card is None:
            problems.append(f"{where} has no CARD (readgaze models, the zoo and learns tests would miss it)")
            continue
        try:
            card = ast.literal_eval(card)
            quick = {**(TINY_RECIPE if _takes_text_encoder(node, classes) else {}), **card.get("quick", {})}
            entries.append(Entry(card["name"], f"readgaze.models.{stem}.{name}", tuple(card["tasks"]), card["paper"],
                                 card.get("config", stem), quick, card.get("sees_gaze", True),
                                 card.get("kind", "neural")))
        except (ValueError, TypeError, KeyError, SyntaxError) as error:
            problems.append(f"{where}: CARD must be a dict literal with name, tasks and paper ({error!r})")
    names = [e.name for e in entries]
    problems += [f"model name {n!r} is used by two cards" for n in sorted({n for n in names if names.count(n) > 1})]
    entries.sort(key=lambda e: KINDS.index(e.kind) if e.kind in KINDS else len(KINDS))
    return tuple(entries), problems


MODELS, CARD_PROBLEMS = model_cards()
"""The neural models, in the order ``readgaze models`` lists them; what is wrong with the cards (see
:func:`model_cards`)."""

BASELINE_PAPERS = {
    "majority": "-",
    "reading_speed": "readgaze (words per minute over the fixation span; not a published definition)",
    "words_per_paragraph_time": "EyeBench 'Reading Speed' (words / paragraph reading time)",
    "mean_total_fixation_duration": "Shubi et al. 2025, ACL, arXiv:2410.20779 'Reading Time' (mean total fixation "
                                    "duration per word)",
    "meziere_logistic_regression": "Mézière et al. 2023, Sci. Stud. Reading",
    "svm": "Hollenstein et al. 2022, Front. Psychol.",
    "random_forest": "Makowski et al. 2024, Appl. Sci.",
    "knn": "Shubi et al. 2024 (kNN baseline, appendix)",
    "gradient_boosting": "gradient-boosted trees (scikit-learn HistGradientBoostingClassifier)",
}
"""Paper of each classical baseline of :data:`readgaze.baselines.BASELINES`, by kind (missing: "-")."""


def baselines() -> tuple[Entry, ...]:
    """One entry per classical baseline of :mod:`readgaze.baselines`; they run inside ``readgaze cv``."""
    try:
        from readgaze.baselines import BASELINES, TASKS
    except Exception as error:  # noqa: BLE001 - the listing must survive a broken baselines module
        return (Entry("(baselines unavailable)", "readgaze.baselines", (), f"import failed: {error}", "",
                      kind="baseline"),)
    return tuple(Entry(kind, f"readgaze.baselines.BASELINES[{kind!r}]", tuple(TASKS), BASELINE_PAPERS.get(kind, "-"),
                       "", kind="baseline") for kind in BASELINES)


REGRESSOR_PAPERS = {
    "chance": "- (the training mean; EyeBench's 'Majority Class / Chance' row of a regression task)",
    "reading_speed": BASELINE_PAPERS["reading_speed"],
    "words_per_paragraph_time": BASELINE_PAPERS["words_per_paragraph_time"],
    "ridge": "Mézière et al. 2023's features; the regression counterpart of their logistic regression",
    "svr": "Hollenstein et al. 2022's features (support vector regression)",
    "random_forest": "Makowski et al. 2024's features (random forest regressor)",
    "knn": "readgaze's trial features (k nearest neighbours)",
    "gradient_boosting": "readgaze's trial features (scikit-learn HistGradientBoostingRegressor)",
}
"""Paper of each regression baseline of :data:`readgaze.baselines_regression.REGRESSORS`, by kind."""


def regressors() -> tuple[Entry, ...]:
    """One entry per regression baseline of :mod:`readgaze.baselines_regression` (named as its prediction rows are);
    they run inside ``readgaze cv`` and ``readgaze bench`` on a regression task."""
    try:
        from readgaze.baselines_regression import REGRESSORS
        from readgaze.tasks import TASKS as REGISTRY
    except Exception as error:  # noqa: BLE001 - the listing must survive a broken module
        return (Entry("(regressors unavailable)", "readgaze.baselines_regression", (), f"import failed: {error}", "",
                      kind="baseline"),)
    tasks = tuple(name for name, task in REGISTRY.items() if task.kind == "regression")
    return tuple(Entry(spec.model, f"readgaze.baselines_regression.REGRESSORS[{kind!r}]", tasks,
                       REGRESSOR_PAPERS.get(kind, "-"), "", kind="baseline") for kind, spec in REGRESSORS.items())


REGRESSOR_RUN = ("run by readgaze cv and bench on a regression task (--baselines default: chance_mean, reading speed, "
                 "ridge; --baselines all: every regressor)")


ENSEMBLE_PAPER = ("Shubi et al. 2025, ACL, arXiv:2410.20779 (ensembles of the models' predictions; here fit on "
                  "validation, applied to test)")
ENSEMBLE_RUN = ("readgaze ensemble RUN_DIR RUN_DIR ... --out DIR (cv runs of two or more models); readgaze bench "
                "(a row each with two or more models)")
ENSEMBLE_WHAT = {"MajorityVote": "each model's vote at its validation threshold",
                 "LogisticEnsemble": "logistic regression on the models' log-odds (stacking)",
                 "MeanEnsemble": "the mean of the models' predicted values (regression)",
                 "RidgeEnsemble": "ridge regression on the models' predicted values (stacking; regression)"}


def ensembles() -> tuple[Entry, ...]:
    """One entry per out-of-sample ensemble (:data:`readgaze.models.training.ensemble.ENSEMBLES`: every
    classification task, binary and multiclass; ``REGRESSION_ENSEMBLES``: every regression task)."""
    from readgaze.tasks import TASKS as REGISTRY

    tasks = tuple(name for name, task in REGISTRY.items() if task.kind == "classification")
    regression = tuple(name for name, task in REGISTRY.items() if task.kind == "regression")
    names = {"MajorityVote": tasks, "LogisticEnsemble": tasks, "MeanEnsemble": regression,
             "RidgeEnsemble": regression}  # read without importing scikit-learn; --check imports them
    return tuple(Entry(name, f"readgaze.models.training.ensemble.{name}", served,
                       f"{ENSEMBLE_PAPER}: {ENSEMBLE_WHAT[name]}", "", kind="ensemble")
                 for name, served in names.items())


def find(name: str) -> Entry:
    """The entry named ``name`` (display name or config stem). Raises ``KeyError`` naming the known ones."""
    for entry in MODELS:
        if name in (entry.name, entry.config):
            return entry
    raise KeyError(f"no model {name!r}; known: {', '.join(e.name for e in MODELS)}")


def config_status(entry: Entry) -> dict[str, str | None]:
    """``{task: "<task>/<config>" if the model's YAML (or the task's own) exists, else None}`` for every task the
    entry serves (the model's YAML serves each task of its card: :func:`~.configs.task_config`)."""
    if entry.kind in ("baseline", "ensemble"):
        return {}
    root = config_root()
    return {task: (f"{task}/{entry.config}" if root is not None and any(
        path.is_file() for path in (root / f"{entry.config}.yaml", root / task / f"{entry.config}.yaml"))
        else None) for task in entry.tasks}


def rows(check: bool = False) -> list[dict[str, str]]:
    """The listing as plain rows (``name, kind, tasks, paper, configs`` and, with ``check``, ``status``)."""
    out = []
    for entry in (*MODELS, *baselines(), *regressors(), *ensembles()):
        configs = config_status(entry)
        run = {"baseline": "run by readgaze cv", "ensemble": ENSEMBLE_RUN}.get(entry.kind)
        if entry.target.startswith("readgaze.baselines_regression"):
            run = REGRESSOR_RUN
        row = {"name": entry.name, "kind": entry.kind, "tasks": ", ".join(entry.tasks), "paper": entry.paper,
               "configs": run or ", ".join(c or f"{t}/{entry.config} (missing)" for t, c in configs.items())}
        if check:
            try:
                if entry.kind == "baseline":
                    from readgaze.baselines import BASELINES
                    from readgaze.baselines_regression import REGRESSORS

                    by_name = {spec.model: spec for spec in REGRESSORS.values()} | BASELINES
                    by_name[entry.name].estimator_class()  # a dotted name: imports scikit-learn's module
                    row["status"] = "ok"
                elif entry.kind == "ensemble":
                    from readgaze.models.training.ensemble import ENSEMBLES, REGRESSION_ENSEMBLES

                    row["status"] = ("ok" if entry.load() in ENSEMBLES + REGRESSION_ENSEMBLES
                                     else "not in ensemble.ENSEMBLES")
                else:
                    entry.load()
                    row["status"] = "ok" if all(configs.values()) else "config missing"
            except Exception as error:  # noqa: BLE001 - report, keep listing
                row["status"] = f"import failed: {type(error).__name__}: {error}"
        out.append(row)
    return out


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``readgaze models``; ``argv[0]`` is ``"models"``. Returns 1 when ``--check`` finds a problem."""
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = argparse.ArgumentParser(prog="readgaze models", description="list every model, baseline and ensemble")
    parser.add_argument("--check", action="store_true", help="import every model class and check its configs")
    args = parser.parse_args(argv[1:])
    table = rows(check=args.check)
    if args.check:
        for problem in CARD_PROBLEMS:
            print(f"readgaze models: {problem}", file=sys.stderr)
    if sys.stdout.isatty():
        from rich.console import Console
        from rich.table import Table

        view = Table(title="readgaze models (configs: readgaze fit -c <config> --data.path DIR)")
        for column in table[0]:
            view.add_column(column, overflow="fold")
        for row in table:
            view.add_row(*row.values())
        Console().print(view)
    else:  # piped or captured: one tab-separated line per entry, nothing cut to a terminal width
        print("\t".join(table[0]))
        for row in table:
            print("\t".join(row.get(column, "") for column in table[0]))
    return int(args.check and (bool(CARD_PROBLEMS)
                               or any(r.get("status", "ok") != "ok" for r in table if r["kind"] != "baseline")))


if __name__ == "__main__":
    raise SystemExit(main())
