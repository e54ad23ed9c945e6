"""The regression counterpart of :func:`readgaze.plots.plot_roc`: predicted against true values per evaluation
regime, with the chance line (matplotlib, Agg backend, no display). Reached as ``readgaze.plots.plot_regression``
too; colours and panel layout are those of every result figure (``readgaze._figure_style``).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl

from readgaze._figure_style import model_colour, panel_axes, panel_regimes, plt
from readgaze.predictions import display_name
from readgaze.splits.regimes import ALL, regime_title
from readgaze.tasks import TASKS


def plot_regression(predictions: pl.DataFrame | pl.LazyFrame, path: str | Path, *, split: str | None = "test",
                    task: str | None = None, headline: tuple[str, ...] = (),
                    chance_model: str = "chance_mean") -> Path:
    """Draw predicted against true values, one panel per regime (new item, new participant, new item & participant,
    all), two by two: the regression counterpart of :func:`plot_roc`.

    Each panel holds one point per (trial, fold) per model, the test trials pooled over folds, in the model's colour
    (:func:`model_colour`); the dotted diagonal is a perfect prediction. The chance row (``chance_model``: the
    training mean, constant within a fold) is drawn as a horizontal line at its mean prediction instead of points;
    without one, no chance line is drawn and the legend says so. The legend, beside the panel, names each model
    (:func:`display_name`) with its per-fold RMSE mean ± SEM of
    :func:`readgaze.metrics_regression.evaluate_regression` (the number in the results table, in the target's
    units), best first. A cell from fewer than :data:`readgaze.metrics.SMALL_SAMPLE_TRIALS` trials per fold, or
    whose labels are all equal in a fold, carries the small-sample mark.

    Parameters
    ----------
    predictions : polars.DataFrame or LazyFrame
        A regression prediction table (``label`` and ``prediction_value`` Float64, ``regime``, ``fold_index``,
        ``trial_id``, optional ``model`` and ``split``): :func:`readgaze.metrics_regression.evaluate_regression`'s
        input.
    path : str or Path
        Output image; the format follows the suffix. Parents are created.
    split : str or None, default "test"
        When a ``split`` column exists, only its rows are drawn.
    task : str, optional
        Named in the title (its display name in :data:`readgaze.tasks.TASKS`).
    headline : tuple of str
        Regimes drawn first and marked "headline".
    chance_model : str, default "chance_mean"
        The model drawn as the chance line (:data:`readgaze.baselines_regression.REGRESSORS` ``chance``).

    Returns
    -------
    Path
        ``path``.

    Raises
    ------
    SchemaError, DataError
        As :func:`readgaze.metrics_regression.check_regression_predictions`.
    """
    from readgaze.metrics import SMALL_MARK
    from readgaze.metrics_regression import PREDICTION_VALUE, check_regression_predictions, evaluate_regression

    frame = check_regression_predictions(predictions, split)
    rmse = {(r["model"], r["regime"]): (r["rmse_mean"], r["rmse_sem"], r["small_sample"])
            for r in evaluate_regression(frame, split=None).iter_rows(named=True)}
    regimes, marked = panel_regimes(headline)
    models = frame["model"].unique(maintain_order=True).to_list()
    values = np.concatenate([frame["label"].to_numpy(), frame[PREDICTION_VALUE].to_numpy()])
    low, high = float(values.min()), float(values.max())
    margin = 0.05 * (high - low) or 0.5
    limits = (low - margin, high + margin)
    figure, axes, height = panel_axes(len(regimes))
    colours = distinct_colours(models)
    any_small = False
    for ax, regime in zip(axes, regimes):
        cell = frame if regime == ALL else frame.filter(pl.col("regime") == regime)
        ax.plot(limits, limits, linestyle=":", color="0.6", linewidth=1.0, label="perfect prediction")
        entries = []
        for model in reversed(models):  # the first model (a cv run's own) drawn last, on top of the baselines
            part = cell.filter(pl.col("model") == model)
            mean, sem, small = rmse.get((model, regime), (None, None, False))
            any_small |= bool(small) and mean is not None
            label = f"{display_name(model)}: {_rmse_text(mean, sem, small, SMALL_MARK)}"
            if model == chance_model and part.height:
                level = float(part[PREDICTION_VALUE].mean())
                handle = ax.axhline(level, color=CHANCE_COLOUR, linestyle=(0, (4, 3)), linewidth=1.8,
                                    label=f"{label}\n    predicts {level:.2f} for every trial (dashed line)")
            else:
                handle = ax.scatter(part["label"].to_numpy(), part[PREDICTION_VALUE].to_numpy(), s=10, alpha=0.4,
                                    color=colours[model], linewidths=0, label=label)
            entries.append((float("inf") if mean is None else mean, handle))
        handles = [ax.get_lines()[0], *[h for _, h in sorted(entries, key=lambda e: e[0])]]
        if chance_model not in models:
            handles.append(ax.plot([], [], color="none", label="no chance row in these predictions")[0])
        ax.legend(handles=handles, labels=[h.get_label() for h in handles], loc="center left",
                  bbox_to_anchor=(1.04, 0.5), fontsize=11.5, title="RMSE (mean ± SEM over folds)",
                  title_fontsize=11.5, frameon=False, alignment="left", markerscale=2.0)
        n_predictions = cell.filter(pl.col("model") == cell["model"][0]).height if cell.height else 0
        ax.set(xlim=limits, ylim=limits, aspect="equal")
        ax.set_xlabel("True value", fontsize=13)
        ax.set_ylabel("Predicted value", fontsize=13)
        ax.tick_params(labelsize=12)
        ax.set_title(regime_title(regime, all_title="All regimes") + (" [headline]" if regime in marked else "")
                     + f"\n(n={n_predictions:,})", fontsize=14, fontweight="bold" if regime in marked else "normal")
    what = f"Task {TASKS[task].display_name if task in TASKS else task}: predicted" if task else "Predicted"
    notes = ["n = trial-fold pairs of the first model", *(["headline regimes first"] if marked else []),
             *([f"{SMALL_MARK} fewer than 30 trials per fold, or all labels equal"] if any_small else [])]
    figure.suptitle(f"{what} against true values on the test predictions pooled over folds\n({'; '.join(notes)})",
                    fontsize=15, y=1 - 0.1 / height, va="top")
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=120, bbox_inches="tight")
    plt.close(figure)
    return path


CHANCE_COLOUR = "0.3"
"""The chance line's colour (a dark grey, as the majority baseline's in the ROC figure)."""
_FALLBACK = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#bcbd22")


def distinct_colours(models: list[str]) -> dict[str, str]:
    """Each model's colour (:func:`readgaze.plots.model_colour`), or, where an earlier model of the figure already
    has it (two names hashed to one spare colour), the first of matplotlib's tab10 colours not yet used."""
    colours: dict[str, str] = {}
    for model in models:
        colour = model_colour(model)
        if colour in colours.values():
            colour = next((c for c in _FALLBACK if c not in colours.values()), colour)
        colours[model] = colour
    return colours


def _rmse_text(mean, sem, small: bool, mark: str) -> str:
    if mean is None:
        return "RMSE n/a"
    return f"RMSE {mean:.2f}" + ("" if sem is None else f" ± {sem:.2f}") + (f" {mark}" if small else "")
