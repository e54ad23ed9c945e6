"""What a training run tells its user at the end: where it wrote, how well it did, and whether it learned at all.

:func:`constant_predictions` is the check behind the warning that ``readgaze fit`` and ``readgaze cv`` print when a
model's test predictions carry no information (one predicted class, or every probability within
:data:`CONSTANT_SPREAD` of the others; for a regression, every predicted value within :data:`CONSTANT_SPREAD` of the
labels' range): a balanced accuracy of 50 then means "learned nothing", not "chance task".

Regression tables (``prediction_value``, :func:`readgaze.predictions.is_regression`) get RMSE, MAE and R² where a
classification gets balanced accuracy and AUROC: :func:`regime_scores` and :func:`score_table` dispatch on the
table, :func:`metric_table` on the logged metric names.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

from readgaze.metrics import SMALL_MARK, SMALL_SAMPLE_TRIALS
from readgaze.predictions import PREDICTION_VALUE, is_multiclass, is_regression
from readgaze.splits.regimes import ALL
from readgaze.splits.regimes import REGIMES as TEST_REGIMES

CONSTANT_SPREAD = 0.02
"""Probabilities whose range (max - min) is below this are called constant."""

REGIMES = (ALL, *TEST_REGIMES)
"""The rows of the end-of-run summary: all pooled first, then each regime."""
SMALL_NOTE = (f"{SMALL_MARK} from fewer than {SMALL_SAMPLE_TRIALS} trials (or one class): too few for a score to mean "
              f"much (an AUROC from 6 trials moves by 10 points with one trial)")

ADVICE = ("try another learning rate (--model.init_args.learning_rate; 1e-5 suits a pretrained encoder, 1e-3 to "
          "3e-3 the tiny one), more epochs (--trainer.max_epochs), a pretrained encoder (--data.text_encoder minilm), "
          "and check with 'readgaze inspect DATASET' that both classes are in the training and the test trials")


def constant_predictions(predictions: pl.DataFrame) -> str | None:
    """Why a prediction table is constant, or None when it is not.

    Parameters
    ----------
    predictions : polars.DataFrame
        ``prediction_prob`` (Float64 P(class 1), or List(Float64) per class) for one model.

    Returns
    -------
    str or None
        E.g. ``"every probability lies in 0.480-0.490"`` or ``"every trial is predicted class 0"``.
    """
    if predictions.height and is_regression(predictions):
        value = predictions[PREDICTION_VALUE].drop_nulls()
        labels = predictions["label"].drop_nulls() if "label" in predictions.columns else value.head(0)
        lo, hi = float(value.min()), float(value.max())
        scale = float(labels.max() - labels.min()) if labels.len() > 1 else 0.0
        return (f"every predicted value lies in {lo:.3f}-{hi:.3f}"
                if hi - lo <= CONSTANT_SPREAD * scale or hi == lo else None)
    if predictions.height == 0 or "prediction_prob" not in predictions.columns:
        return None
    prob = predictions["prediction_prob"]
    if isinstance(prob.dtype, pl.List):
        classes = prob.list.arg_max().unique().to_list()
        spread = max(float(p.max() - p.min()) for p in (prob.list.get(k) for k in range(prob.list.len().max())))
        lo, hi = None, None
    else:
        classes = (prob > 0.5).unique().to_list()
        lo, hi = float(prob.min()), float(prob.max())
        spread = hi - lo
    if spread < CONSTANT_SPREAD:
        return (f"every probability lies in {lo:.3f}-{hi:.3f}" if lo is not None
                else f"every class probability varies by less than {CONSTANT_SPREAD}")
    if len(classes) == 1:
        return f"every trial is predicted class {int(classes[0])}"
    return None


def constant_warning(predictions: pl.DataFrame, what: str, learning_rate: float | None = None) -> str | None:
    """The one-paragraph warning for :func:`constant_predictions`, or None."""
    reason = constant_predictions(predictions)
    if reason is None:
        return None
    labels = predictions["label"].drop_nulls().unique() if "label" in predictions.columns else None
    if is_regression(predictions):
        now = "" if learning_rate is None else f" (learning rate now {learning_rate:g})"
        return (f"warning: the {what} are constant ({reason} of {predictions.height:,}): the model learned "
                f"nothing usable, so its RMSE is at best the chance row's (the training mean). To fix{now}: try "
                f"another learning rate (--model.init_args.learning_rate) or more epochs (--trainer.max_epochs).")
    if labels is not None and labels.len() == 1:  # no learning-rate advice: the data, not the model, is the cause
        return (f"warning: the {what} are constant ({reason} of {predictions.height:,}) and every label is "
                f"{labels[0]}: with one class there is nothing to learn, and no balanced accuracy or AUROC measures "
                f"anything. Use data with both classes (readgaze inspect DATASET shows the label counts per task).")
    now = "" if learning_rate is None else f" (learning rate now {learning_rate:g})"
    return (f"warning: the {what} are constant ({reason} of {predictions.height:,}): the model learned nothing "
            f"usable, so its balanced accuracy of ~50 measures nothing. To fix{now}: {ADVICE}.")


def metric_table(val: dict, test: dict | None, counts: dict | None = None) -> str:
    """Balanced accuracy and AUROC (%) per regime, validation and test, from Lightning's logged metrics.

    ``val``/``test`` map ``"<metric>_<regime>/<split>"`` (as :class:`readgaze.models.base.ReadingModel` logs them) to
    numbers.
    ``counts`` maps ``(split, regime)`` to the trials behind a cell and ``(split, regime, "classes")`` to their
    label classes (:func:`regime_counts`); without it the ``n`` columns show ``-``. A cell whose trials hold one
    class shows ``1 cls``: no balanced accuracy or AUROC measures anything there. A score from fewer than
    :data:`readgaze.metrics.SMALL_SAMPLE_TRIALS` trials carries :data:`SMALL_MARK`, explained under the table.
    """
    marked = []

    def cell(metrics: dict | None, name: str, regime: str, split: str) -> str:
        value = (metrics or {}).get(f"{name}_{regime}/{split}")
        if value is not None and (counts or {}).get((split, regime, "classes")) == 1:
            return "1 cls"
        if value is None:
            return "    -"
        n_trials = (counts or {}).get((split, regime))
        small = n_trials is not None and n_trials < SMALL_SAMPLE_TRIALS
        marked.append(small)
        return f"{100 * float(value):5.1f}" + (SMALL_MARK if small else " ")

    def n(split: str, regime: str) -> str:
        value = (counts or {}).get((split, regime))
        return "-" if value is None else f"{value:,}"

    if any(key.startswith("rmse_") for key in (*(val or {}), *(test or {}))):
        return _regression_metric_table(val, test, counts)
    rows = ["  regime                  val n  val bal.acc  val AUROC  test n  test bal.acc  test AUROC"]
    for regime in REGIMES:
        if not any(f"balanced_accuracy_{regime}/{s}" in (m or {}) for m, s in ((val, "val"), (test, "test"))):
            continue
        rows.append(f"  {regime:<22}  {n('val', regime):>5}  {cell(val, 'balanced_accuracy', regime, 'val'):>11}  "
                    f"{cell(val, 'auroc', regime, 'val'):>9}  {n('test', regime):>6}  "
                    f"{cell(test, 'balanced_accuracy', regime, 'test'):>12}  {cell(test, 'auroc', regime, 'test'):>10}")
    if any(marked):
        rows.append(f"  {SMALL_NOTE}")
    return "\n".join(rows)


def _regression_metric_table(val: dict, test: dict | None, counts: dict | None) -> str:
    """:func:`metric_table` for a regression model: RMSE, MAE (target units) and R² per regime."""
    def cell(metrics: dict | None, name: str, regime: str, split: str, width: int) -> str:
        value = (metrics or {}).get(f"{name}_{regime}/{split}")
        n_trials = (counts or {}).get((split, regime))
        small = n_trials is not None and n_trials < SMALL_SAMPLE_TRIALS
        return "-".rjust(width) if value is None else f"{float(value):{width - 1}.3f}" + (SMALL_MARK if small else " ")

    def n(split: str, regime: str) -> str:
        value = (counts or {}).get((split, regime))
        return "-" if value is None else f"{value:,}"

    rows = ["  regime                  val n  val RMSE  val MAE  val R²  test n  test RMSE  test MAE  test R²"]
    for regime in REGIMES:
        if not any(f"rmse_{regime}/{s}" in (m or {}) for m, s in ((val, "val"), (test, "test"))):
            continue
        rows.append(f"  {regime:<22}  {n('val', regime):>5}  {cell(val, 'rmse', regime, 'val', 8)}  "
                    f"{cell(val, 'mae', regime, 'val', 7)}  {cell(val, 'r2', regime, 'val', 6)}  "
                    f"{n('test', regime):>6}  {cell(test, 'rmse', regime, 'test', 9)}  "
                    f"{cell(test, 'mae', regime, 'test', 8)}  {cell(test, 'r2', regime, 'test', 7)}")
    rows.append("  RMSE and MAE in the target's units; R² only where the labels vary")
    return "\n".join(rows)


def regime_counts(predictions: pl.DataFrame, split: str) -> dict[tuple, int]:
    """``{(split, regime): trials, (split, regime, "classes"): label classes}`` of one split's prediction table
    (``"all"``: every row), for :func:`metric_table`."""
    label = pl.col("label").drop_nulls().n_unique() if "label" in predictions.columns else pl.lit(None)
    counts = {}
    parts = [("all", predictions)]
    if "regime" in predictions.columns:
        parts += [(r, part) for (r,), part in predictions.group_by(["regime"], maintain_order=True)]
    for regime, part in parts:
        n, classes = part.select(pl.len(), label.alias("classes")).row(0)
        counts[(split, regime)] = n
        if classes is not None:
            counts[(split, regime, "classes")] = classes
    return counts


def written(folder: Path) -> str:
    """The files of a run folder, by name (checkpoints under ``checkpoints/``)."""
    names = sorted(p.name for p in folder.glob("*") if p.is_file())
    names += [f"checkpoints/{p.name}" for p in sorted((folder / "checkpoints").glob("*.ckpt"))]
    return ", ".join(names)


BASELINES_CONSTANT_BY_DESIGN = ("majority", "chance_mean")


def constant_warnings(predictions: pl.DataFrame, split: str = "test") -> list[str]:
    """:func:`constant_warning` for every model of a cv prediction table (the majority baseline is constant by
    design and skipped)."""
    frame = predictions.filter(pl.col("split") == split) if "split" in predictions.columns else predictions
    out = []
    for (model,), part in frame.group_by(["model"], maintain_order=True):
        if model in BASELINES_CONSTANT_BY_DESIGN:
            continue
        warning = constant_warning(part, f"{model} {split} predictions")
        if warning:
            out.append(warning)
    return out


def regime_scores(predictions: pl.DataFrame, threshold: float | None = None) -> pl.DataFrame:
    """Scores of labelled predictions per regime present and pooled (``all``), each with its sample size.

    Parameters
    ----------
    predictions : polars.DataFrame
        ``label`` (Int64; null rows are left out), ``prediction_prob`` (Float64 P(class 1), or List(Float64) per
        class) and ``regime`` (String; optional, else only ``all``).
    threshold : float, optional
        Binary: the validation-chosen threshold (class 1 when ``prediction_prob > threshold``); default 0.5.

    Returns
    -------
    polars.DataFrame
        ``regime``, ``n_trials``, ``n_classes``, ``balanced_accuracy`` (at 0.5, the argmax),
        ``balanced_accuracy_at_threshold``, ``auroc`` (null with one class), ``small_sample`` (fewer than
        :data:`readgaze.metrics.SMALL_SAMPLE_TRIALS` trials or one class); fractions, not %.
    """
    import numpy as np
    from sklearn.metrics import roc_auc_score

    from readgaze.metrics import _balanced_accuracy

    if is_regression(predictions):
        raise ValueError("regime_scores: a regression table has predicted values; use regression_regime_scores")
    labelled = predictions.filter(pl.col("label").is_not_null()) if "label" in predictions.columns else \
        predictions.head(0)
    rows = []
    for regime, part in _regime_parts(labelled):
        labels = part["label"].to_numpy().astype(np.int64)
        multiclass = is_multiclass(part)
        scores = np.stack(part["prediction_prob"].to_list()) if multiclass else part["prediction_prob"].to_numpy()
        classes = int(np.unique(labels).size)
        if multiclass:
            predicted = tuned = scores.argmax(axis=1)
            auroc = (roc_auc_score(labels, scores, multi_class="ovr") if classes == scores.shape[1] else None)
        else:
            predicted = (scores > 0.5).astype(np.int64)
            tuned = (scores > (0.5 if threshold is None else threshold)).astype(np.int64)
            auroc = roc_auc_score(labels, scores) if classes == 2 else None
        rows.append({"regime": regime, "n_trials": part.height, "n_classes": classes,
                     "balanced_accuracy": _balanced_accuracy(labels, predicted),
                     "balanced_accuracy_at_threshold": _balanced_accuracy(labels, tuned),
                     "auroc": None if auroc is None else float(auroc),
                     "small_sample": part.height < SMALL_SAMPLE_TRIALS or classes < 2})
    schema = {"regime": pl.String, "n_trials": pl.Int64, "n_classes": pl.Int64, "balanced_accuracy": pl.Float64,
              "balanced_accuracy_at_threshold": pl.Float64, "auroc": pl.Float64, "small_sample": pl.Boolean}
    return pl.DataFrame(rows, schema=schema)


def _regime_parts(labelled: pl.DataFrame) -> list[tuple[str, pl.DataFrame]]:
    """``[("all", every row), (regime, its rows) ...]`` in the order seen, new item, new participant, both."""
    parts = [("all", labelled)]
    if "regime" in labelled.columns:
        order = {r: i for i, r in enumerate(("seen", *REGIMES[1:]))}
        parts += sorted(((r, p) for (r,), p in labelled.group_by(["regime"])), key=lambda rp: order.get(rp[0], 9))
    return [(regime, part) for regime, part in parts if part.height]


def regression_regime_scores(predictions: pl.DataFrame, chance: float | None = None) -> pl.DataFrame:
    """RMSE, MAE and R² (:func:`readgaze.metrics_regression.regression_scores`) of labelled regression predictions
    per regime present and pooled (``all``), with the chance row's beside them.

    Parameters
    ----------
    predictions : polars.DataFrame
        ``label`` (Float64; null rows are left out), ``prediction_value`` (Float64) and ``regime`` (optional).
    chance : float, optional
        The chance prediction, the training labels' mean (every trial predicted it): gives ``chance_rmse``,
        ``chance_mae`` and ``chance_r2``, null without it.

    Returns
    -------
    polars.DataFrame
        ``regime``, ``n_trials``, ``rmse``, ``mae``, ``r2`` (null where the labels are all equal), ``chance_rmse``,
        ``chance_mae``, ``chance_r2``, ``small_sample`` (fewer than :data:`readgaze.metrics.SMALL_SAMPLE_TRIALS`
        trials or all labels equal); target units, R² unitless.
    """
    from readgaze.metrics_regression import regression_scores

    labelled = predictions.filter(pl.col("label").is_not_null()) if "label" in predictions.columns else \
        predictions.head(0)
    rows = []
    for regime, part in _regime_parts(labelled):
        labels = part["label"].cast(pl.Float64).to_numpy()
        model = regression_scores(labels, part[PREDICTION_VALUE].to_numpy())
        base = regression_scores(labels, pl.Series([chance] * part.height, dtype=pl.Float64).to_numpy()) \
            if chance is not None else {"rmse": None, "mae": None, "r2": None}
        rows.append({"regime": regime, "n_trials": part.height, "rmse": model["rmse"], "mae": model["mae"],
                     "r2": model["r2"], "chance_rmse": base["rmse"], "chance_mae": base["mae"],
                     "chance_r2": base["r2"], "small_sample": part.height < SMALL_SAMPLE_TRIALS or model["r2_skipped"]})
    schema = {"regime": pl.String, "n_trials": pl.Int64, "rmse": pl.Float64, "mae": pl.Float64, "r2": pl.Float64,
              "chance_rmse": pl.Float64, "chance_mae": pl.Float64, "chance_r2": pl.Float64,
              "small_sample": pl.Boolean}
    return pl.DataFrame(rows, schema=schema)


def score_table(scores: pl.DataFrame, indent: str = "  ") -> str:
    """:func:`regime_scores` as text: one row per regime, % with :data:`SMALL_MARK` on small samples
    (:func:`regression_regime_scores`: RMSE, MAE and R² with chance beside, in the target's units)."""
    if "rmse" in scores.columns:
        return _regression_score_table(scores, indent)
    def pct(value, small):
        return "    - " if value is None else f"{100 * value:5.1f}" + (SMALL_MARK if small else " ")

    rows = [f"{indent}{'regime':<22}  {'n':>6}  {'bal.acc':>8}  {'bal.acc @ val thr.':>18}  {'AUROC':>7}"]
    for r in scores.iter_rows(named=True):
        one = r["n_classes"] < 2
        rows.append(f"{indent}{r['regime']:<22}  {r['n_trials']:>6,}  "
                    f"{'1 cls' if one else pct(r['balanced_accuracy'], r['small_sample']):>8}  "
                    f"{'1 cls' if one else pct(r['balanced_accuracy_at_threshold'], r['small_sample']):>18}  "
                    f"{'1 cls' if one else pct(r['auroc'], r['small_sample']):>7}")
    if scores.height and scores["small_sample"].any():
        rows.append(f"{indent}{SMALL_NOTE}")
    return "\n".join(rows)


def write_predictions(frame, out, threshold: float | None, chance: float | None = None) -> dict:
    """Write ``frame`` to ``out`` (Parquet, or CSV by suffix) and, with labels, ``<stem>_scores.csv`` beside it
    (:func:`regime_scores`; :func:`regression_regime_scores` with ``chance``, the training mean, for a regression
    table). Returns ``{"predictions": path}`` plus ``"scores"`` when written."""
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    if out.suffix.lower() == ".csv":
        from readgaze.data_prep.dataset import csv_ready

        csv_ready(frame).write_csv(out)
    else:
        frame.write_parquet(out)
    paths = {"predictions": out}
    if frame["label"].drop_nulls().len():
        scores = out.with_name(f"{out.stem}_scores.csv")
        (regression_regime_scores(frame, chance) if is_regression(frame) else regime_scores(frame, threshold)
         ).write_csv(scores)
        paths["scores"] = scores
    return paths


def _regression_score_table(scores: pl.DataFrame, indent: str) -> str:
    """:func:`regression_regime_scores` as text: model and chance RMSE, MAE, R² per regime."""
    def number(value, small: bool = False) -> str:
        return "-" if value is None else f"{value:.3f}" + (SMALL_MARK if small else "")

    rows = [f"{indent}{'regime':<22}  {'n':>6}  {'RMSE':>8}  {'chance':>8}  {'MAE':>8}  {'chance':>8}  "
            f"{'R²':>8}  {'chance':>8}"]
    for r in scores.iter_rows(named=True):
        small = bool(r["small_sample"])
        rows.append(f"{indent}{r['regime']:<22}  {r['n_trials']:>6,}  {number(r['rmse'], small):>8}  "
                    f"{number(r['chance_rmse']):>8}  {number(r['mae'], small):>8}  {number(r['chance_mae']):>8}  "
                    f"{number(r['r2'], small):>8}  {number(r['chance_r2']):>8}")
    rows.append(f"{indent}RMSE and MAE in the target's units, lower is better; R² higher is better; chance = the "
                f"training mean for every trial")
    if scores.height and scores["small_sample"].any():
        rows.append(f"{indent}{SMALL_MARK} from fewer than {SMALL_SAMPLE_TRIALS} trials, or all labels equal")
    return "\n".join(rows)
