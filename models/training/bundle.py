"""A model bundle: a trained model and everything needed to score new recordings the way training saw them.

Over 400 lines on purpose: what a bundle holds is written, described and checked in this one file, so that the
three cannot drift apart.

``readgaze fit`` and every ``readgaze cv`` fold write ``bundle/`` beside their checkpoint:

* ``model.ckpt``: the best-on-validation checkpoint (a hard link where the file system allows, else a copy);
* ``bundle.json``: the model class and arguments; the task and its label coding; the text encoder and its
  tokenizer's fingerprint; the feature names, the feature columns the training data had and the fitted scalers
  (:class:`readgaze.features.RobustScaler`); the threshold on P(class 1) chosen on the validation
  predictions (:func:`readgaze.metrics.best_threshold`); the readgaze version; the training data (folder, how it
  was prepared, its training participants and items) and its validation and test scores per regime;
* ``model_card.md``: the same for a reader, with the scores table;
* ``config.yaml``: the run's LightningCLI config, when there is one.

:func:`load_model` reads a bundle; :meth:`ModelBundle.predict` scores every trial of a dataset folder written by
``readgaze prep``, with or without labels (``readgaze predict`` is its command, :mod:`.predict`). Before scoring it
checks the data against the bundle and stops with one :class:`readgaze.errors.ConfigError` naming what differs: a
feature column training had that the data lacks, another tokenizer under the encoder's name, another readgaze
version running or preparing the data (``allow_other_version`` lowers the versions to warnings).

A regression bundle (a task of kind ``regression``, e.g. ``reading_comprehension_skill``) has no classes and no
threshold: ``bundle.json`` records ``task_kind`` and the training target's mean, standard deviation and range
(``target``; the mean is the chance prediction), its scores are RMSE, MAE and R² per regime with chance's beside
them (:func:`readgaze.models.training.summary.regression_regime_scores`), and :meth:`ModelBundle.predict` gives each
trial its ``prediction_value`` in the target's units.

A bundle names its classes by index, per task (:data:`CLASSES`):

>>> from readgaze.models.training.bundle import CLASSES
>>> dict(enumerate(CLASSES["comprehension"]))
{0: 'incorrect', 1: 'correct'}
"""

from __future__ import annotations

import datetime
import functools
import hashlib
import importlib
import json
import os
import shutil
import sys
from pathlib import Path

import numpy as np
import polars as pl
import torch

from readgaze import __version__
from readgaze import features as feat
from readgaze.dataset import Dataset
from readgaze.errors import ConfigError
from readgaze.models.data.datamodule import FEATURE_SOURCES, ReadingDataModule
from readgaze.models.data.prediction import PredictionData
from readgaze.predictions import is_multiclass, make_predictions
from readgaze.tasks import TASKS as REGISTRY

FORMAT = "readgaze model bundle, version 1"
FILE, CHECKPOINT, CARD = "bundle.json", "model.ckpt", "model_card.md"
CLASSES = {name: list(task.classes) for name, task in REGISTRY.items() if task.classes}
"""Class names by index, per task, from the registry (:data:`readgaze.tasks.TASKS`)."""
DATA_ARGUMENTS = ("task", "text_encoder", "max_text_tokens", "trial_feature_set", "batch_size", "questions")


# ---- writing ----
def feature_columns(dataset: str | Path | Dataset) -> dict[str, list[str]]:
    """Per table, the optional feature columns a dataset folder has with at least one value
    (:data:`FEATURE_SOURCES`, the word measures).

    A column absent (or all null) in training was all-missing there; one with values in training must have values
    in new data, or every new trial would get the "missing" indicator where training trials had a number.
    """
    wanted: dict[str, set[str]] = {"word_measures": set(feat.WORD_MEASURES) - set(feat.SHARES)}
    for column, (table, _) in FEATURE_SOURCES.items():
        wanted.setdefault(table, set()).add(column)
    dataset = dataset if isinstance(dataset, Dataset) else Dataset(dataset)
    out = {}
    for table, columns in sorted(wanted.items()):
        if not dataset.has(table):
            out[table] = []
            continue
        frame = dataset.scan(table, validate=False)
        present = sorted(columns & set(frame.collect_schema().names()))
        filled = frame.select(pl.col(c).is_not_null().any() for c in present).collect().row(0) if present else ()
        out[table] = [c for c, has in zip(present, filled) if has]
    return out


@functools.lru_cache(maxsize=4)
def tokenizer_fingerprint(text_encoder: str) -> dict:
    """The tokenizer class, vocabulary size and a SHA-256 of its sorted vocabulary (same name, same tokens)."""
    from readgaze.models.text_encoder import load_tokenizer

    tokenizer = load_tokenizer(text_encoder)
    vocab = sorted(tokenizer.get_vocab().items())
    digest = hashlib.sha256(json.dumps(vocab, ensure_ascii=False).encode()).hexdigest()
    return {"name": text_encoder, "tokenizer": type(tokenizer).__name__, "vocab_size": len(vocab),
            "vocab_sha256": digest}


def dataset_preparation(dataset: str | Path | Dataset) -> dict:
    """What ``readgaze prep`` recorded in ``manifest.json``: format, readgaze version, line assigner, language,
    surprisal model (empty when the folder has no manifest)."""
    manifest = (dataset if isinstance(dataset, Dataset) else Dataset(dataset)).manifest
    if not manifest:
        return {}
    config = manifest.get("config") or {}
    return {"format": manifest.get("format"), "readgaze": (manifest.get("package_versions") or {}).get("readgaze"),
            "mode": config.get("mode"), "line_assigner": config.get("line_assigner"),
            "language": config.get("language"), "surprisal_model": config.get("surprisal_model")}


def write_bundle(directory: str | Path, *, checkpoint: str | Path, model, datamodule: ReadingDataModule,
                 val_predictions: str | Path | None = None, test_predictions: str | Path | None = None,
                 config: str | Path | None = None, seconds: float | None = None,
                 epochs: int | None = None) -> Path:
    """Write a bundle (module docstring) for ``model`` trained on ``datamodule``'s training split; returns its folder.

    ``val_predictions``/``test_predictions`` are the checkpoint's prediction files (``label``, ``prediction_prob``,
    ``regime``): the threshold is chosen on the validation file (0.5 without one, or for more than two classes)
    and both give the model card's scores per regime.
    """
    from readgaze.metrics import best_threshold
    from readgaze.models.training.summary import regime_scores, regression_regime_scores

    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    _link_or_copy(Path(checkpoint), directory / CHECKPOINT)
    if config is not None and Path(config).is_file():
        shutil.copyfile(config, directory / "config.yaml")
    frames = {split: pl.read_parquet(path) for split, path in (("val", val_predictions), ("test", test_predictions))
              if path is not None and Path(path).is_file()}
    regression = datamodule.task_kind == "regression"
    threshold, chosen_on = 0.5, "default (no validation predictions)"
    target = None
    if regression:
        threshold, chosen_on = None, "none: a regression predicts a value"
        mean, std = datamodule.label_stats
        labels = datamodule.trials.filter(pl.col("split") == "train")["label"]
        target = {"mean": mean, "std": std, "min": float(labels.min()), "max": float(labels.max()),
                  "chance": "the training mean for every trial"}
    elif "val" in frames and not is_multiclass(frames["val"]):
        val = frames["val"].filter(pl.col("label").is_not_null())
        threshold, balanced = best_threshold(val["label"].to_numpy(), val["prediction_prob"].to_numpy())
        chosen_on = f"validation: balanced accuracy {100 * balanced:.1f} on {val.height:,} trials"
    elif datamodule.num_classes > 2:
        threshold, chosen_on = None, "none: the predicted class is the most probable one"
    trials = datamodule.trials
    train = trials.filter(pl.col("split") == "train")
    hyperparameters = torch.load(checkpoint, map_location="cpu", weights_only=False).get("hyper_parameters", {})
    spec = {
        "format": FORMAT, "readgaze": __version__,
        "created": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "model": {"class_path": f"{type(model).__module__}.{type(model).__name__}", "name": type(model).__name__,
                  "hyperparameters": _jsonable(hyperparameters)},
        "task": datamodule.task, "reading_regime": datamodule.effective_reading_regime,
        "task_kind": datamodule.task_kind, "target": target,
        "classes": CLASSES.get(datamodule.task, [])[:datamodule.num_classes], "num_classes": datamodule.num_classes,
        "data": {k: getattr(datamodule, k) for k in DATA_ARGUMENTS},
        "encoder": dict(tokenizer_fingerprint(datamodule.text_encoder)),
        "features": {"word": list(feat.WORD_FEATURES), "fixation": list(feat.FIXATION_FEATURES),
                     "trial": list(datamodule.scalers["trial"].names), "columns": feature_columns(datamodule.path)},
        "scalers": {name: scaler.to_dict() for name, scaler in datamodule.scalers.items()},
        "threshold": threshold, "threshold_chosen_on": chosen_on,
        "training": {
            "dataset": str(Path(datamodule.path).resolve()), "preparation": dataset_preparation(datamodule.dataset),
            "fold": datamodule.fold, "n_folds": datamodule.n_folds, "split_unit": _split_unit(datamodule),
            "trials": {s: trials.filter(pl.col("split") == s).height for s in ("train", "val", "test")},
            "participants": _ids(train["participant_id"]), "items": _ids(train["item_id"]),
            "validation_participants": _ids(trials.filter(pl.col("split") == "val")["participant_id"]),
            "seconds": None if seconds is None else round(seconds, 1), "epochs": epochs},
        "scores": {split: (regression_regime_scores(frame, target["mean"]) if regression else
                           regime_scores(frame, threshold)).to_dicts() for split, frame in frames.items()},
    }
    (directory / FILE).write_text(json.dumps(spec, indent=1, ensure_ascii=False), encoding="utf-8")
    (directory / CARD).write_text(model_card(spec), encoding="utf-8")
    return directory


def _ids(column: pl.Series) -> list[str]:
    return sorted(column.drop_nulls().cast(pl.String).unique().to_list())


def _split_unit(datamodule) -> str:
    fallback = any(r["reason"] == "split_unit_fallback_to_trial" for r in datamodule.qc.records)
    return "trial" if datamodule.split_unit == "trial" or fallback else "participant_item"


def _link_or_copy(source: Path, target: Path) -> None:
    if target.exists():
        target.unlink()
    try:
        os.link(source, target)
    except OSError:  # another file system, or links not allowed
        shutil.copy2(source, target)


def _number(value) -> str:
    return "none" if value is None else f"{value:.4g}"


def _jsonable(value):
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items() if not str(k).startswith("_")}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    return str(value)


def model_card(spec: dict) -> str:
    """``model_card.md``: what the model decodes, from what data, how well, and how to use it."""
    from readgaze.models.training.summary import score_table

    training, data = spec["training"], spec["data"]
    prep = training["preparation"]
    classes = ", ".join(f"{i} = {c}" for i, c in enumerate(spec["classes"]))
    target = spec.get("target") if spec.get("task_kind") == "regression" else None
    what = (f"a regression: the predicted value in the target's units (training values {target['min']:.4g} to "
            f"{target['max']:.4g}, mean {target['mean']:.4g}, standard deviation {target['std']:.4g})"
            if target else f"classes {classes}")
    lines = [f"# {spec['model']['name']}: {spec['task']}", "",
             f"- Task: {spec['task']} (reading regime {spec['reading_regime']}); {what}.",
             f"- Model: `{spec['model']['class_path']}`; text encoder `{data['text_encoder']}` "
             f"({spec['encoder']['tokenizer']}, {spec['encoder']['vocab_size']:,} tokens); trial features "
             f"`{data['trial_feature_set']}`.",
             f"- Training data: `{training['dataset']}` (prepared by readgaze {prep.get('readgaze') or '?'}, "
             f"{prep.get('mode') or '?'} mode, line assigner {prep.get('line_assigner') or '?'}); fold "
             f"{training['fold']} of {training['n_folds']} ({training['split_unit']} folds): "
             f"{training['trials']['train']:,} training, {training['trials']['val']:,} validation, "
             f"{training['trials']['test']:,} test trials; {len(training['participants'])} training participants, "
             f"{len(training['items'])} items.",
             (f"- Chance: the training mean {target['mean']:.4g} for every trial (its scores beside the model's "
              f"below)." if target else
              f"- Threshold on P(class 1): {_number(spec['threshold'])} ({spec['threshold_chosen_on']})."),
             f"- Made by readgaze {spec['readgaze']} on {spec['created']}"
             + (f" in {training['seconds']:.0f} s" if training.get("seconds") else "")
             + (f", {training['epochs']} epochs" if training.get("epochs") else "") + "."]
    for split, title in (("val", "Validation"), ("test", "Test")):
        if spec["scores"].get(split):
            lines += ["", f"## {title} scores per regime ({'RMSE, MAE, R²' if target else '%'})", "", "```",
                      score_table(pl.DataFrame(spec["scores"][split]), indent=""), "```"]
    lines += ["", "## Use", "", "```bash", "readgaze predict BUNDLE DATASET --out predictions.parquet", "```", "",
              ("Each trial gets its predicted value (`prediction_value`, the target's units)" if target else
               "Each trial gets P(class 1), the class at the threshold above,")
              + " and whether its participant and item "
              "were among the training trials' (`regime`: seen, new_item, new_participant, new_item_participant). "
              "Scores above are from held-out participants and items; on seen ones a model does better than on new.",
              ""]
    return "\n".join(lines)


# ---- reading and scoring ----
def find_bundle(path: str | Path) -> Path:
    """The bundle folder at ``path``: the folder itself, its ``bundle.json``, or the one bundle under it.

    Raises :class:`ConfigError` when there is none, or several (a ``cv`` run has one per fold: they are listed).
    """
    path = Path(path)
    if path.is_file() and path.name == FILE:
        return path.parent
    if (path / FILE).is_file():
        return path
    if not path.exists():
        raise ConfigError("no such model bundle (a folder with bundle.json, written by readgaze fit or cv)", file=path)
    found = sorted(p.parent for p in path.rglob(FILE))
    if len(found) == 1:
        return found[0]
    if not found:
        raise ConfigError("no bundle.json under this folder; readgaze fit and cv write one beside each checkpoint "
                          "(<run>/bundle/)", file=path)
    shown = ", ".join(str(p) for p in found[:4]) + (", ..." if len(found) > 4 else "")
    raise ConfigError(f"{len(found)} bundles under this folder (a cv run has one per fold): pass one, e.g. {shown}",
                      file=path)


def load_model(bundle: str | Path) -> ModelBundle:
    """Read a model bundle (a folder, or a run folder holding exactly one); score data with ``.predict(dataset)``.

    Examples
    --------
    >>> model = readgaze.load_model("runs/reading_goal/roberteye_f/csv/version_0/bundle")  # doctest: +SKIP
    >>> predictions = model.predict("next_month_dataset")                                  # doctest: +SKIP
    """
    return ModelBundle(find_bundle(bundle))


class ModelBundle:
    """A bundle read from disk (:func:`load_model`).

    Attributes
    ----------
    path : Path
        The bundle folder.
    spec : dict
        ``bundle.json``.
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        try:
            self.spec = json.loads((self.path / FILE).read_text(encoding="utf-8"))
        except (OSError, ValueError) as error:
            raise ConfigError(f"cannot read the model bundle: {error}", file=self.path / FILE) from None
        if self.spec.get("format") != FORMAT:
            raise ConfigError(f"not a model bundle of this readgaze (format {self.spec.get('format')!r}, expected "
                              f"{FORMAT!r})", file=self.path / FILE)
        self._model = None

    def __repr__(self) -> str:
        return (f"ModelBundle({self.spec['model']['name']}, task {self.task}, threshold {self.threshold}, "
                f"{len(self.training_participants)} training participants; {self.path})")

    @property
    def task(self) -> str:
        return self.spec["task"]

    @property
    def is_regression(self) -> bool:
        """Whether the bundle's task is a regression (it predicts a value, not a class)."""
        return self.spec.get("task_kind") == "regression"

    @property
    def chance(self) -> float | None:
        """Regression: the chance prediction, the training target's mean (None for classification)."""
        return (self.spec.get("target") or {}).get("mean") if self.is_regression else None

    @property
    def threshold(self) -> float | None:
        """P(class 1) above which a trial is predicted class 1 (chosen on validation)."""
        return self.spec["threshold"]

    @property
    def training_participants(self) -> list[str]:
        return self.spec["training"]["participants"]

    @property
    def training_items(self) -> list[str]:
        return self.spec["training"]["items"]

    @property
    def card(self) -> str:
        """The model card (``model_card.md``)."""
        return (self.path / CARD).read_text(encoding="utf-8")

    def check(self, dataset: str | Path, *, allow_other_version: bool = False) -> list[str]:
        """Check that ``dataset`` can be scored as training data was; returns warnings.

        Raises
        ------
        ConfigError
            Naming what differs: another readgaze version running or preparing the data (unless
            ``allow_other_version``), another dataset format, a feature column training had that the data lacks,
            another tokenizer under the encoder's name, or a trial column the task reads that the data lacks.
        """
        dataset = Dataset(dataset)
        errors, warnings = [], []
        versions = errors if not allow_other_version else warnings
        if self.spec["readgaze"] != __version__:
            versions.append(f"the bundle was made by readgaze {self.spec['readgaze']}, this is readgaze "
                            f"{__version__}: features and models may have changed between them")
        trained, now = self.spec["training"]["preparation"], dataset_preparation(dataset)
        if trained.get("format") and now.get("format") and trained["format"] != now["format"]:
            errors.append(f"dataset format: training data {trained['format']!r}, this data {now['format']!r}")
        if trained.get("readgaze") and now.get("readgaze") and trained["readgaze"] != now["readgaze"]:
            versions.append(f"preparation: the training data was prepared by readgaze {trained['readgaze']}, this "
                            f"data by readgaze {now['readgaze']} (re-prepare it with the same version)")
        for key, what in (("line_assigner", "line assigner"), ("language", "word-frequency language"),
                          ("surprisal_model", "surprisal model")):
            if trained.get(key) != now.get(key) and now:
                warnings.append(f"{what}: training data {trained.get(key)!r}, this data {now.get(key)!r} "
                                f"(readgaze prep --{key.replace('_', '-')})")
        have = feature_columns(dataset)
        sources = dict(FEATURE_SOURCES)
        for table, columns in self.spec["features"]["columns"].items():
            for column in columns:
                if column not in have.get(table, []):
                    how = sources.get(column, (table, "readgaze prep"))[1]
                    errors.append(f"feature {column}: the training data's {table}.parquet had it, this data's has "
                                  f"no values for it (make it with {how})")
        names = dataset.columns("trials")
        task = REGISTRY[self.task]  # the label's own columns may be absent: unlabelled data is scored all the same
        needed = list(task.inputs if task.label is not None else (*task.needs, *task.inputs))
        needed += [c for c in ("trial_id", "participant_id", "item_id", "text_id") if c not in needed]
        missing = [c for c in needed if c not in names]
        if missing:
            errors.append(f"trials.parquet lacks column(s) {missing}, which task {self.task} reads as input")
        encoder = self.spec["encoder"]
        current = dict(tokenizer_fingerprint(encoder["name"]))
        different = [k for k in ("tokenizer", "vocab_size", "vocab_sha256") if current[k] != encoder[k]]
        if different:
            errors.append(f"text encoder {encoder['name']!r}: its tokenizer here differs from training's in "
                          f"{', '.join(different)} ({encoder['tokenizer']} with {encoder['vocab_size']:,} tokens "
                          f"then, {current['tokenizer']} with {current['vocab_size']:,} now)")
        if errors:
            raise ConfigError(f"the model bundle does not fit this dataset: {'; '.join(errors)}"
                              + ("" if allow_other_version else
                                 " (versions only: pass allow_other_version / --allow-other-version to go on)"),
                              file=dataset.path)
        return warnings

    def model(self, device: str | torch.device = "cpu"):
        """The trained model (a :class:`readgaze.models.base.ReadingModel`), in eval mode on ``device``."""
        if self._model is None:
            module, _, name = self.spec["model"]["class_path"].rpartition(".")
            cls = getattr(importlib.import_module(module), name)
            self._model = cls.load_from_checkpoint(self.path / CHECKPOINT, map_location="cpu", weights_only=False)
        return self._model.to(device).eval()

    def predict(self, dataset: str | Path, *, out: str | Path | None = None, batch_size: int | None = None,
                device: str | None = None, allow_other_version: bool = False) -> pl.DataFrame:
        """Score every trial of a dataset folder (with or without labels).

        Parameters
        ----------
        dataset : str or Path
            A folder written by ``readgaze prep``.
        out : str or Path, optional
            Also write the predictions there (``.parquet``, or ``.csv`` by suffix); with labels, their scores per
            regime go beside it (``<stem>_scores.csv``).
        batch_size : int, optional
            Default: the training batch size.
        device : str, optional
            ``"cpu"`` (default), ``"cuda"``, ...
        allow_other_version : bool
            Warn instead of stopping when readgaze versions differ (:meth:`check`).

        Returns
        -------
        polars.DataFrame
            A regression bundle: the columns below with ``prediction_value`` (Float64, the target's units) in
            place of ``prediction_prob``, ``predicted_class``, ``predicted_label`` and ``threshold``, and a Float64
            ``label``. Otherwise one row per trial: ``trial_id``, ``participant_id``, ``item_id``, ``text_id``,
            ``prediction_prob``
            (Float64 P(class 1); List(Float64) per class for more than two), ``predicted_class`` (Int64: above
            the threshold, or the most probable class), ``predicted_label`` (the class name), ``threshold``,
            ``participant_seen``, ``item_seen`` (Boolean: among the training trials'), ``regime`` (``seen``,
            ``new_item``, ``new_participant``, ``new_item_participant``), ``label`` (Int64, null without labels),
            ``fold_index`` (Int32, null: no fold), ``split`` (``"predict"``), ``model``: a superset of
            :data:`readgaze.schema.PREDICTION_COLUMNS`. The warnings of :meth:`check` are printed to standard error.

        Raises
        ------
        ConfigError
            As :meth:`check`.
        """
        warnings = self.check(dataset, allow_other_version=allow_other_version)
        for warning in warnings:
            print(f"readgaze predict: warning: {warning}", file=sys.stderr)
        settings = self.spec["data"]
        data = PredictionData(dataset, task=self.task, text_encoder=settings["text_encoder"],
                              max_text_tokens=settings["max_text_tokens"],
                              trial_feature_set=settings["trial_feature_set"], questions=settings.get("questions"),
                              reading_regime=self.spec.get("reading_regime"), scalers=self.spec["scalers"],
                              training_participants=self.training_participants, training_items=self.training_items,
                              batch_size=batch_size or settings["batch_size"])
        data.setup("predict")
        model = self.model(device or "cpu")
        outputs, ids = [], []
        with torch.inference_mode():
            for batch in data.predict_dataloader():
                batch = batch.to(model.device) if hasattr(batch, "to") else batch
                output = model(batch).float()
                outputs.append((model.predicted_value(output) if self.is_regression
                                else torch.softmax(output, dim=-1)).cpu())
                ids += list(batch.trial_id)
        width = () if self.is_regression else (self.spec["num_classes"],)
        scored = torch.cat(outputs).numpy() if outputs else np.zeros((0, *width))
        frame = self._value_frame(data.trials, ids, scored) if self.is_regression else \
            self._frame(data.trials, ids, scored)
        if out is not None:
            from readgaze.models.training.summary import write_predictions

            write_predictions(frame, out, self.threshold, self.chance)
        return frame

    def _value_frame(self, trials: pl.DataFrame, ids: list[str], value: np.ndarray) -> pl.DataFrame:
        """A regression bundle's predictions: :meth:`predict`'s columns with ``prediction_value`` (Float64, the
        target's units) in place of the probability, class and threshold columns."""
        scored = make_predictions(pl.DataFrame({"trial_id": ids}), value=value, model=self.spec["model"]["name"],
                                  split="predict")
        keep = [c for c in ("trial_id", "participant_id", "item_id", "text_id", "label", "participant_seen",
                            "item_seen", "regime") if c in trials.columns]
        return (trials.select(keep).join(scored, on="trial_id", how="left")
                .with_columns(pl.col("label").cast(pl.Float64), pl.lit(None, pl.Int32).alias("fold_index"))
                .select("trial_id", "participant_id", "item_id", "text_id", "prediction_value", "participant_seen",
                        "item_seen", "regime", "label", "fold_index", "split", "model", "model_display"))

    def _frame(self, trials: pl.DataFrame, ids: list[str], prob: np.ndarray) -> pl.DataFrame:
        binary = prob.shape[1] == 2
        predicted = (prob[:, 1] > self.threshold if binary else prob.argmax(axis=1)).astype(np.int64)
        scored = make_predictions(pl.DataFrame({"trial_id": ids}), prob, model=self.spec["model"]["name"],
                                  split="predict").with_columns(pl.Series("predicted_class", predicted))
        names = self.spec["classes"]
        keep = [c for c in ("trial_id", "participant_id", "item_id", "text_id", "label", "participant_seen",
                            "item_seen", "regime") if c in trials.columns]
        return (trials.select(keep).join(scored, on="trial_id", how="left")
                .with_columns(pl.col("predicted_class").replace_strict(dict(enumerate(names)), default=None,
                                                                       return_dtype=pl.String)
                              .alias("predicted_label"),
                              pl.lit(self.threshold, pl.Float64).alias("threshold"),
                              pl.lit(None, pl.Int32).alias("fold_index"))
                .select("trial_id", "participant_id", "item_id", "text_id", "prediction_prob", "predicted_class",
                        "predicted_label", "threshold", "participant_seen", "item_seen", "regime", "label",
                        "fold_index", "split", "model", "model_display"))
