"""Out-of-sample ensembles of ``readgaze cv`` runs: :class:`MajorityVote` and :class:`LogisticEnsemble`.

Reference: Shubi et al. (2025), "Decoding reading goals from eye movements" (ACL 2025, arXiv:2410.20779): the
strongest goal-decoding result is an ensemble of the models' predictions. Their notebook fitted and scored the
ensemble on the same validation rows (in-sample). Here, per fold, an ensemble is **fit on that fold's validation
predictions** of the member runs and **applied to that fold's test predictions**; the test labels are never given
to the fit (the test features are built from a frame without a label column). The ensemble's own validation
predictions are cross-fitted (5 folds within the validation trials), so its threshold chosen on validation is
out-of-sample too.

* :class:`MajorityVote`: each member votes with its own threshold chosen on validation
  (:func:`readgaze.metrics.choose_thresholds`'s rule); ``prediction_prob`` is the share of positive votes
  (multiclass: the share of votes per class, ties broken by the mean probability).
* :class:`LogisticEnsemble`: a class-balanced logistic regression (scikit-learn) on the members' log-odds
  (multiclass: log-probabilities), i.e. stacking.

A regression task's runs (``prediction_value``, :func:`readgaze.predictions.is_regression`) get the regression
ensembles instead (:data:`REGRESSION_ENSEMBLES`), under the same out-of-sample protocol, scored with RMSE, MAE and R²
(:mod:`readgaze.metrics_regression`):

* :class:`MeanEnsemble`: the mean of the members' predicted values (nothing fit);
* :class:`RidgeEnsemble`: a ridge regression (scikit-learn ``RidgeCV``, penalty chosen by leave-one-out within the
  validation trials) on the members' values, predictions clipped to the validation labels' range (stacking).

``readgaze ensemble RUN_DIR ... --out DIR`` reads each run's ``predictions.parquet`` (test) and
``predictions_val.parquet`` (validation) and writes the same two files (members and ensembles) and
``results.{csv,md}``, in the format of any ``readgaze cv`` run. A run's member is its model (``run.json``);
baselines are not members.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np
import polars as pl
from sklearn.linear_model import LogisticRegression, RidgeCV

from readgaze.errors import ConfigError, DataError, ReadgazeError
from readgaze.metrics import best_threshold, evaluate, evaluate_goal_selection, goal_selection_table, write_results
from readgaze.metrics_regression import evaluate_regression, write_regression_results
from readgaze.predictions import PREDICTION_VALUE, display_name, is_multiclass, is_regression, make_predictions

BASELINES = ("majority", "reading_speed_logistic_regression", "chance_mean", "reading_speed_linear_regression")
KEY = ("trial_id", "fold_index")
KEEP = ("trial_id", "fold_index", "regime", "participant_id", "item_id")
EPS = 1e-6


class MajorityVote:
    """Each member's class at its validation-chosen threshold; the ensemble's probability is the vote share."""

    name = "MajorityVote"

    def fit(self, x: np.ndarray, y: np.ndarray) -> MajorityVote:
        """``x`` (N, M) member P(class 1), or (N, M, C) class probabilities; ``y`` (N,) validation labels."""
        self.thresholds = None if x.ndim == 3 else np.array([best_threshold(y, x[:, m])[0]
                                                             for m in range(x.shape[1])])
        return self

    def predict_proba(self, x: np.ndarray) -> np.ndarray:
        """(N,) P(class 1) as the share of positive votes, or (N, C) vote shares."""
        if x.ndim == 2:
            return (x > self.thresholds[None, :]).mean(axis=1)
        classes = x.shape[2]
        votes = np.eye(classes)[x.argmax(axis=2)].sum(axis=1) + 1e-3 * x.mean(axis=1)  # (N, C), ties by mean
        return votes / votes.sum(axis=1, keepdims=True)


class LogisticEnsemble:
    """Class-balanced logistic regression on the members' log-odds (stacking)."""

    name = "LogisticEnsemble"

    def fit(self, x: np.ndarray, y: np.ndarray) -> LogisticEnsemble:
        self.classes = x.shape[2] if x.ndim == 3 else 2
        self.model = LogisticRegression(class_weight="balanced", max_iter=1000).fit(_log_odds(x), y)
        return self

    def predict_proba(self, x: np.ndarray) -> np.ndarray:
        prob = np.zeros((x.shape[0], self.classes))
        prob[:, self.model.classes_] = self.model.predict_proba(_log_odds(x))
        return prob[:, 1] if self.classes == 2 and x.ndim == 2 else prob


ENSEMBLES = (MajorityVote, LogisticEnsemble)


class MeanEnsemble:
    """The mean of the members' predicted values (a regression ensemble; nothing is fit)."""

    name = "MeanEnsemble"

    def fit(self, x: np.ndarray, y: np.ndarray) -> MeanEnsemble:
        """``x`` (N, M) member values; ``y`` (N,) validation labels (unused)."""
        return self

    def predict_value(self, x: np.ndarray) -> np.ndarray:
        """(N,) mean over the members."""
        return x.mean(axis=1)


class RidgeEnsemble:
    """Ridge regression on the members' predicted values (stacking), clipped to the validation labels' range."""

    name = "RidgeEnsemble"

    def fit(self, x: np.ndarray, y: np.ndarray) -> RidgeEnsemble:
        self.model = RidgeCV(alphas=np.logspace(-3, 3, 13)).fit(x, y)
        self.low, self.high = float(y.min()), float(y.max())
        return self

    def predict_value(self, x: np.ndarray) -> np.ndarray:
        return np.clip(self.model.predict(x), self.low, self.high)


REGRESSION_ENSEMBLES = (MeanEnsemble, RidgeEnsemble)


def _log_odds(x: np.ndarray) -> np.ndarray:
    clipped = np.clip(x, EPS, 1 - EPS)
    return np.log(clipped / (1 - clipped)) if x.ndim == 2 else np.log(clipped).reshape(len(x), -1)


def member_predictions(run_dirs: list[str | Path], members: list[str] | None = None) -> pl.DataFrame:
    """The member models' val and test predictions of ``readgaze cv`` run folders, ``model`` = member name.

    A run's member is the model in its ``run.json`` (else every non-baseline model of its predictions); two
    members of the same name get ``@<run folder>`` appended. ``members`` keeps only those names.
    Raises :class:`ConfigError` for a folder without ``predictions.parquet`` or fewer than two members.
    """
    frames, names = [], []
    for run in map(Path, run_dirs):
        path = run / "predictions.parquet"
        if not path.is_file():
            raise ConfigError("not a readgaze cv run folder (no predictions.parquet)", file=path)
        predictions = pl.read_parquet(path)
        if (run / "predictions_val.parquet").is_file():
            predictions = pl.concat([pl.read_parquet(run / "predictions_val.parquet"), predictions],
                                    how="diagonal_relaxed")
        info = run / "run.json"
        models = ([json.loads(info.read_text(encoding="utf-8"))["model"]] if info.is_file()
                  else [m for m in predictions["model"].unique().sort() if m not in BASELINES])
        for model in models:
            frames.append((run, model, predictions.filter(pl.col("model") == model)))
            names.append(model)
    renamed = []
    for run, model, frame in frames:
        name = model if names.count(model) == 1 else f"{model}@{run.name}"
        if members is None or name in members:
            renamed.append(frame.with_columns(pl.lit(name).alias("model")))
    if len(renamed) < 2:
        raise ConfigError(f"an ensemble needs at least two member models; got {len(renamed)} "
                          f"(from {len(frames)} in {[str(r) for r in run_dirs]})")
    return pl.concat(renamed, how="diagonal_relaxed")


def _wide(frame: pl.DataFrame, names: list[str]) -> tuple[pl.DataFrame, np.ndarray]:
    """One row per trial (members inner-joined on trial and fold) and the (N, M[, C]) probability array (a
    regression's (N, M) predicted values)."""
    column = PREDICTION_VALUE if is_regression(frame) else "prediction_prob"
    base = None
    for name in names:
        part = frame.filter(pl.col("model") == name).select(*KEEP, pl.col(column).alias(name))
        base = part if base is None else base.join(part.select(*KEY, name), on=list(KEY), how="inner")
    base = base.sort(list(KEY))
    x = np.stack([np.stack(base[n].to_list()) if isinstance(base.schema[n], pl.List) else base[n].to_numpy()
                  for n in names], axis=1)
    return base.select(KEEP), x.astype(np.float64)


def fit_predict_fold(ensemble, val: pl.DataFrame, test: pl.DataFrame, names: list[str]) -> dict[str, pl.DataFrame]:
    """Fit ``ensemble`` on one fold's validation predictions, predict its test trials (and cross-fitted val).

    ``val`` has ``label``; ``test`` must not be used for fitting, so its label column is dropped before its
    features are built. Returns ``{"val": frame, "test": frame}`` with ``prediction_prob`` (a regression ensemble:
    ``prediction_value``), no labels.
    """
    regression = is_regression(val)
    val_keys, x_val = _wide(val, names)
    y_val = val.filter(pl.col("model") == names[0]).sort(list(KEY)).join(
        val_keys.select(KEY), on=list(KEY), how="semi")["label"].to_numpy()
    test_keys, x_test = _wide(test.drop("label"), names)
    if np.unique(y_val).size < 2:
        raise DataError(f"fold {val['fold_index'][0]}: the validation trials have one "
                        f"{'label value' if regression else 'class'}; no ensemble can be fit")
    fitted = ensemble().fit(x_val, y_val)
    out = {"test": _frame(test_keys, _predict(fitted, x_test), regression)}
    cross = np.zeros((len(y_val), *((x_val.shape[2],) if x_val.ndim == 3 else ())))
    part = np.arange(len(y_val)) % 5
    for k in range(5):
        inside, held = part != k, part == k
        if held.any() and np.unique(y_val[inside]).size >= 2:
            cross[held] = _predict(ensemble().fit(x_val[inside], y_val[inside]), x_val[held])
        elif held.any():
            cross[held] = _predict(fitted, x_val[held])
    out["val"] = _frame(val_keys, cross, regression)
    return out


def _predict(fitted, x: np.ndarray) -> np.ndarray:
    """A fitted ensemble's output: predicted values (regression) or class probabilities."""
    return fitted.predict_value(x) if hasattr(fitted, "predict_value") else fitted.predict_proba(x)


def _frame(keys: pl.DataFrame, output: np.ndarray, regression: bool = False) -> pl.DataFrame:
    return make_predictions(keys, value=output) if regression else make_predictions(keys, output)


def run_ensembles(run_dirs: list[str | Path], out: str | Path, members: list[str] | None = None) -> dict[str, Path]:
    """Fit every ensemble of :data:`ENSEMBLES` per fold and write predictions and results under ``out``.

    Returns ``{"predictions", "csv", "markdown"}`` paths. Raises :class:`ConfigError` (see
    :func:`member_predictions`) and :class:`DataError` (a fold without validation predictions, or one class).
    """
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    predictions = member_predictions(run_dirs, members)
    regression = is_regression(predictions)
    names = predictions["model"].unique(maintain_order=True).to_list()
    labels = predictions.filter(pl.col("model") == names[0]).select(*KEY, "split", "label")
    rows = []
    for fold in predictions["fold_index"].unique().sort().to_list():
        in_fold = predictions.filter(pl.col("fold_index") == fold)
        val, test = in_fold.filter(pl.col("split") == "val"), in_fold.filter(pl.col("split") == "test")
        if val.height == 0:
            raise DataError(f"fold {fold}: no validation predictions in the runs (re-run readgaze cv)")
        for ensemble in REGRESSION_ENSEMBLES if regression else ENSEMBLES:
            for split, frame in fit_predict_fold(ensemble, val, test, names).items():
                rows.append(frame.with_columns(pl.lit(split).alias("split"), pl.lit(ensemble.name).alias("model"),
                                               pl.lit(display_name(ensemble.name)).alias("model_display")))
    ensembles = pl.concat(rows, how="diagonal_relaxed").join(labels, on=[*KEY, "split"], how="left")
    combined = pl.concat([predictions, ensembles], how="diagonal_relaxed")
    path = out / "predictions.parquet"
    combined.filter(pl.col("split") == "test").write_parquet(path)
    combined.filter(pl.col("split") == "val").write_parquet(out / "predictions_val.parquet")
    note = (f"Ensembles of {', '.join(names)}: fit per fold on the members' validation predictions, applied to "
            f"the test predictions (out of sample; ensemble validation rows are 5-fold cross-fitted).",)
    if regression:
        paths = write_regression_results(evaluate_regression(combined), out, notes=note)
        return {"predictions": path, **paths}
    paths = write_results(evaluate(combined), out, notes=note)
    if is_multiclass(combined):
        scored = combined.filter(pl.col("prediction_prob").list.len() == 3)
        if scored.height:
            table = goal_selection_table(evaluate_goal_selection(scored))
            paths["markdown"].write_text(paths["markdown"].read_text(encoding="utf-8") + "\n## Goal selection\n\n"
                                         + table, encoding="utf-8")
    return {"predictions": path, **paths}


def main(argv: list[str] | None = None) -> int:
    """``readgaze ensemble RUN_DIR ... --out DIR``; ``argv[0]`` is ``"ensemble"``."""
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = argparse.ArgumentParser(prog="readgaze ensemble", description="out-of-sample ensembles of cv runs")
    parser.add_argument("runs", nargs="+", help="readgaze cv run folders (two or more members)")
    parser.add_argument("--out", required=True, help="folder for predictions.parquet and results.{csv,md}")
    parser.add_argument("--members", nargs="+", help="member model names to keep (default: every run's model)")
    args = parser.parse_args(argv[1:])
    try:
        paths = run_ensembles(args.runs, args.out, args.members)
    except ReadgazeError as error:
        print(f"readgaze ensemble: error: {error}", file=sys.stderr)
        return 2
    print(paths["markdown"].read_text(encoding="utf-8"))
    print(f"written to {args.out}")
    return 0
