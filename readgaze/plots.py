"""Figures for results: ROC curves per evaluation regime (matplotlib, Agg backend, no display needed)."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only; never open a window

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import polars as pl  # noqa: E402
from sklearn.metrics import roc_curve  # noqa: E402

from readgaze.metrics import ALL, REGIME_ORDER, check_predictions, evaluate  # noqa: E402

_TITLES = {"new_item": "New item", "new_participant": "New participant",
           "new_item_participant": "New item & participant", ALL: "All regimes"}


def plot_roc(predictions: pl.DataFrame | pl.LazyFrame, path: str | Path, *, split: str | None = "test") -> Path:
    """Draw one ROC panel per regime (new item, new participant, new item & participant, all).

    Each panel has one curve per model, computed on that regime's test trials pooled over folds, with
    the legend giving the per-fold AUROC mean ± SEM of :func:`readgaze.metrics.evaluate` (the number in
    the results table). Multiclass predictions (``prediction_prob`` a list) are drawn as the
    micro-averaged one-vs-rest curve. A panel whose trials hold one class says so instead of a curve.

    Parameters
    ----------
    predictions : polars.DataFrame or LazyFrame
        As :func:`readgaze.metrics.evaluate_folds`.
    path : str or Path
        Output image; the format follows the suffix (``.png``, ``.pdf``, ``.svg``). Parents are created.
    split : str or None, default "test"
        When a ``split`` column exists, only its rows are drawn.

    Returns
    -------
    Path
        ``path``.

    Raises
    ------
    SchemaError, DataError
        As :func:`readgaze.metrics.evaluate_folds`.
    """
    frame = check_predictions(predictions, split)
    evaluation = evaluate(frame, split=None)
    auroc = {(r["model"], r["regime"]): (r["auroc_mean"], r["auroc_sem"]) for r in evaluation.iter_rows(named=True)}
    figure, axes = plt.subplots(1, len(REGIME_ORDER), figsize=(4.2 * len(REGIME_ORDER), 4.4), squeeze=False)
    for ax, regime in zip(axes[0], REGIME_ORDER):
        cell = frame if regime == ALL else frame.filter(pl.col("regime") == regime)
        for k, model in enumerate(frame["model"].unique(maintain_order=True)):
            _curve(ax, cell.filter(pl.col("model") == model), f"C{k}", auroc.get((model, regime)))
        ax.plot([0, 1], [0, 1], linestyle="--", color="grey", linewidth=0.8)
        n_predictions = cell.filter(pl.col("model") == cell["model"][0]).height if cell.height else 0
        ax.set(title=f"{_TITLES[regime]} (n={n_predictions:,})", xlabel="False positive rate",
               ylabel="True positive rate", xlim=(0, 1), ylim=(0, 1.01), aspect="equal")
        ax.legend(loc="lower right", fontsize="small", title="AUROC %", title_fontsize="small")
    models = frame["model"].unique(maintain_order=True).to_list()
    colours = [f"C{k}" for k in range(len(models))]
    figure.legend([plt.Line2D([], [], color=c) for c in colours], models, loc="lower center",
                  ncol=min(len(models), 4), frameon=False, bbox_to_anchor=(0.5, -0.04))
    figure.suptitle("ROC on test predictions pooled over folds (n = trial-fold pairs of the first model); "
                    "legend: AUROC mean ± SEM over folds")
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=120, bbox_inches="tight")
    plt.close(figure)
    return path


def _curve(ax, part: pl.DataFrame, colour: str, auroc: tuple | None) -> None:
    """One model's pooled ROC curve on one panel (micro one-vs-rest when multiclass)."""
    labels = part["label"].to_numpy()
    if isinstance(part.schema["prediction_prob"], pl.List):
        scores = np.stack(part["prediction_prob"].to_list())
        onehot = np.eye(scores.shape[1], dtype=np.int64)[labels]
        labels, scores = onehot.ravel(), scores.ravel()
    else:
        scores = part["prediction_prob"].to_numpy()
    if part.height == 0 or np.unique(labels).size < 2:
        ax.plot([], [], color=colour, label="one class: no curve")
        return
    false_positive, true_positive, _ = roc_curve(labels, scores)
    mean, sem = auroc if auroc is not None else (None, None)
    text = "n/a" if mean is None else f"{100 * mean:.1f}" + ("" if sem is None else f" ± {100 * sem:.1f}")
    ax.plot(false_positive, true_positive, color=colour, linewidth=1.5, label=text)
