"""Figures for results: ROC curves per evaluation regime and scanpaths (matplotlib, Agg backend, no display).

Every figure gives a model the same colour (:func:`model_colour`).
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only; never open a window

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import polars as pl  # noqa: E402
from sklearn.metrics import roc_curve  # noqa: E402

from readgaze.metrics import check_predictions, evaluate  # noqa: E402
from readgaze.splits.regimes import ALL, REGIME_ORDER, regime_title  # noqa: E402

POSITIVE_CLASS = {"reading_goal": "information seeking", "comprehension": "correct answer"}
"""The class whose probability the ROC ranks by, per task (label 1)."""

_FIXED_COLOURS = {"majority": "0.55", "reading_speed_logistic_regression": "C3", "RoBERTEyeF": "C0",
                  "BEyeLSTM": "C1", "PostFusionEye": "C2", "TextOnly": "C4", "RoBERTEyeW": "C5", "MAGEye": "C6",
                  "PLMAS": "C8", "PLMASRM": "C9", "LogisticEnsemble": "black", "meziere_logistic_regression": "#e7298a",
                  "MajorityVote": "#393b79", "mean_total_fixation_duration_logistic_regression": "#1b9e77",
                  "words_per_paragraph_time_logistic_regression": "#808000", "Eyettention": "#d6616b",
                  "ScanpathImage": "#637939", "svm": "#4000ff", "random_forest": "#bf00ff", "knn": "#800000",
                  "gradient_boosting": "#80009f"}
"""The package's models, baselines and ensembles: any two at least 0.22 apart in RGB and none paler than matplotlib's
``C8`` (after matplotlib's first colours, dark ones far from those already taken)."""
_SPARE = ("#1b9e77", "#d95f02", "#7570b3", "#e7298a", "#66a61e", "#e6ab02", "#a6761d", "#666666")


def model_colour(model: str) -> str:
    """One colour per model name in every figure (fixed for the package's models, a stable hash otherwise)."""
    import zlib

    return _FIXED_COLOURS.get(model) or _SPARE[zlib.crc32(model.encode()) % len(_SPARE)]


def plot_roc(predictions: pl.DataFrame | pl.LazyFrame, path: str | Path, *, split: str | None = "test",
             task: str | None = None, headline: tuple[str, ...] = ()) -> Path:
    """Draw one ROC panel per regime (new item, new participant, new item & participant, all).

    Each panel has one curve per model, computed on that regime's test trials pooled over folds, with
    the legend giving the per-fold AUROC mean ± SEM of :func:`readgaze.metrics.evaluate` (the number in
    the results table). Chance is the diagonal. A model whose predictions are constant within every fold (the
    majority baseline) is drawn on that diagonal: pooling its per-fold constants would draw a curve below chance
    for a model whose every fold scores 50. Multiclass predictions (``prediction_prob`` a list) are drawn as the
    micro-averaged one-vs-rest curve. A panel whose trials hold one class says so instead of a curve. Each model
    keeps its colour in every figure (:func:`model_colour`).

    Parameters
    ----------
    predictions : polars.DataFrame or LazyFrame
        As :func:`readgaze.metrics.evaluate_folds`.
    path : str or Path
        Output image; the format follows the suffix (``.png``, ``.pdf``, ``.svg``). Parents are created.
    split : str or None, default "test"
        When a ``split`` column exists, only its rows are drawn.
    task : str, optional
        Named in the title with its positive class (:data:`POSITIVE_CLASS`).
    headline : tuple of str
        Regimes drawn first and marked "headline" (:attr:`readgaze.splits.describe` ``headline_regimes``).

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
    regimes = [*[r for r in headline if r in REGIME_ORDER], *[r for r in REGIME_ORDER if r not in headline]]
    marked = set(headline) if 0 < len(headline) < len(REGIME_ORDER) - 1 else set()
    models = frame["model"].unique(maintain_order=True).to_list()
    constant = _constant_per_fold(frame)
    figure, axes = plt.subplots(1, len(regimes), figsize=(4.2 * len(regimes), 4.4), squeeze=False)
    for ax, regime in zip(axes[0], regimes):
        cell = frame if regime == ALL else frame.filter(pl.col("regime") == regime)
        ax.plot([0, 1], [0, 1], linestyle=":", color="0.75", linewidth=0.8, label="chance: 50")
        for model in models:
            _curve(ax, cell.filter(pl.col("model") == model), model_colour(model), auroc.get((model, regime)),
                   on_diagonal=model in constant)
        n_predictions = cell.filter(pl.col("model") == cell["model"][0]).height if cell.height else 0
        title = (regime_title(regime, all_title="All regimes") + (" [headline]" if regime in marked else "")
                 + f"\n(n={n_predictions:,})")
        ax.set(xlabel="False positive rate", ylabel="True positive rate", xlim=(0, 1), ylim=(0, 1.01), aspect="equal")
        ax.set_title(title, fontsize=10, fontweight="bold" if regime in marked else "normal")
        ax.legend(loc="lower right", fontsize="small", title="AUROC %", title_fontsize="small", framealpha=0.6)
    figure.legend([plt.Line2D([], [], color=model_colour(m)) for m in models], models, loc="upper center",
                  ncol=min(len(models), 4), frameon=False, bbox_to_anchor=(0.5, 0.0))  # below the x-axis labels
    what = (f"Task {task}: ROC of P({POSITIVE_CLASS.get(task, 'class 1')})" if task else "ROC")
    figure.suptitle(f"{what} on test predictions pooled over folds (n = trial-fold pairs of the first model)\n"
                    "legend: AUROC mean ± SEM over folds" + ("; headline regimes first" if marked else ""), y=1.06)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=120, bbox_inches="tight")
    plt.close(figure)
    return path


def _constant_per_fold(frame: pl.DataFrame) -> set[str]:
    """Models whose binary ``prediction_prob`` takes one value within every fold."""
    if isinstance(frame.schema["prediction_prob"], pl.List) or "fold_index" not in frame.columns:
        return set()
    spread = frame.group_by("model", "fold_index").agg(pl.col("prediction_prob").n_unique().alias("n"))
    per_model = spread.group_by("model").agg((pl.col("n") == 1).all().alias("constant"))
    return set(per_model.filter(pl.col("constant"))["model"].to_list())


def _curve(ax, part: pl.DataFrame, colour: str, auroc: tuple | None, on_diagonal: bool = False) -> None:
    """One model's pooled ROC curve on one panel (micro one-vs-rest when multiclass)."""
    labels = part["label"].to_numpy()
    mean, sem = auroc if auroc is not None else (None, None)
    text = "n/a" if mean is None else f"{100 * mean:.1f}" + ("" if sem is None else f" ± {100 * sem:.1f}")
    if part.height == 0 or np.unique(labels).size < 2:
        ax.plot([], [], color=colour, label="one class: no curve")
        return
    if on_diagonal:
        ax.plot([0, 1], [0, 1], color=colour, linewidth=1.5, linestyle="--", label=f"{text} (constant per fold)")
        return
    if isinstance(part.schema["prediction_prob"], pl.List):
        scores = np.stack(part["prediction_prob"].to_list())
        onehot = np.eye(scores.shape[1], dtype=np.int64)[labels]
        labels, scores = onehot.ravel(), scores.ravel()
    else:
        scores = part["prediction_prob"].to_numpy()
    false_positive, true_positive, _ = roc_curve(labels, scores)
    ax.plot(false_positive, true_positive, color=colour, linewidth=1.5, label=text)


_SCANPATH_FIXATION_COLUMNS = ("x_px", "y_px", "duration_ms")
_SCANPATH_WORD_COLUMNS = ("word", "left_px", "right_px", "top_px", "bottom_px", "line_index")


def plot_scanpath(fixations: pl.DataFrame | pl.LazyFrame, words: pl.DataFrame | pl.LazyFrame, path: str | Path, *,
                  line_column: str = "line_index", highlight: tuple[int, int] | None = None,
                  title: str | None = None) -> Path:
    """Draw one trial's fixations over its text's word boxes, coloured by the line they were assigned to.

    Each word box is drawn with its word; the boxes of line ``l`` and the fixations assigned to line ``l``
    share a colour, so a fixation whose colour differs from the row it sits on shows vertical drift that line
    assignment corrected. Fixations are circles at their recorded position (area proportional to
    ``duration_ms``), joined in order by the saccade path; a short vertical tick joins each fixation to the
    midline of its assigned line. Fixations with no line (null) are grey crosses. The legend keys circle size
    (100, 250, 500 ms) and the tick.

    Parameters
    ----------
    fixations : polars.DataFrame or LazyFrame
        One trial's fixations in temporal order: ``x_px``, ``y_px`` (Float64, screen pixels, y down),
        ``duration_ms`` and ``line_column`` (Int32, 0-based, null = none).
    words : polars.DataFrame or LazyFrame
        The trial's text: ``word`` (String), ``left_px``, ``right_px``, ``top_px``, ``bottom_px`` (half-open
        boxes, pixels) and ``line_index`` (0-based); optional ``word_index`` (needed with ``highlight``).
    path : str or Path
        Output image (format from the suffix). Parents are created.
    line_column : str, default "line_index"
        The fixation column holding the assigned line.
    highlight : (int, int), optional
        Half-open ``word_index`` range shaded (e.g. a critical span).
    title : str, optional

    Returns
    -------
    Path
        ``path``.

    Raises
    ------
    SchemaError
        A needed column is missing.
    DataError
        No fixations or no words.
    """
    from matplotlib.patches import Rectangle

    from readgaze.errors import DataError, SchemaError

    fix = fixations.collect() if isinstance(fixations, pl.LazyFrame) else fixations
    box = words.collect() if isinstance(words, pl.LazyFrame) else words
    for frame, needed, name in ((fix, (*_SCANPATH_FIXATION_COLUMNS, line_column), "fixations"),
                                (box, _SCANPATH_WORD_COLUMNS + (("word_index",) if highlight else ()), "words")):
        missing = [c for c in needed if c not in frame.columns]
        if missing:
            raise SchemaError(f"plot_scanpath: {name} lack column(s) {missing}")
        if frame.height == 0:
            raise DataError(f"plot_scanpath: no {name} to draw")
    n_lines = int(box["line_index"].max()) + 1
    colours = plt.get_cmap("tab10")
    left, right = float(box["left_px"].min()), float(box["right_px"].max())
    top, bottom = float(box["top_px"].min()), float(box["bottom_px"].max())
    figure, ax = plt.subplots(figsize=(min(16.0, 2 + (right - left) / 130), 1.5 + (bottom - top) / 110))
    mid = box.group_by("line_index").agg(((pl.col("top_px") + pl.col("bottom_px")) / 2).mean().alias("mid"))
    midline = dict(zip(mid["line_index"].to_list(), mid["mid"].to_list()))
    for w in box.iter_rows(named=True):
        shaded = highlight is not None and highlight[0] <= w["word_index"] < highlight[1]
        colour = colours(w["line_index"] % 10)
        ax.add_patch(Rectangle((w["left_px"], w["top_px"]), w["right_px"] - w["left_px"], w["bottom_px"] - w["top_px"],
                               facecolor=colour, alpha=0.28 if shaded else 0.08, edgecolor=colour, linewidth=0.5))
        ax.text((w["left_px"] + w["right_px"]) / 2, (w["top_px"] + w["bottom_px"]) / 2, w["word"], ha="center",
                va="center", fontsize=6, color="0.25")
    x, y = fix["x_px"].to_numpy(), fix["y_px"].to_numpy()
    line = fix[line_column].to_numpy()
    ax.plot(x, y, color="0.4", linewidth=0.6, alpha=0.7, zorder=2)
    size = 4 + fix["duration_ms"].to_numpy() / 8
    lined = ~np.isnan(line.astype(float))
    for k in np.unique(line[lined]).astype(int):
        on = lined & (line == k)
        ax.scatter(x[on], y[on], s=size[on], color=colours(k % 10), edgecolor="black", linewidth=0.4, zorder=3)
        ax.vlines(x[on], y[on], [midline.get(k, np.nan)] * int(on.sum()), color=colours(k % 10), linewidth=0.7,
                  zorder=2)
    if (~lined).any():
        ax.scatter(x[~lined], y[~lined], s=20, marker="x", color="0.5", zorder=3, label="no line")
    for ms in (100, 250, 500):  # the size key: circle area grows with fixation duration
        ax.scatter([], [], s=4 + ms / 8, facecolor="white", edgecolor="black", linewidth=0.4, label=f"{ms} ms")
    ax.plot([], [], color="0.3", linewidth=0.7, marker="|", markersize=8, linestyle="none",
            label="tick: fixation to its assigned line")
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize="small", title="fixation duration",
              title_fontsize="small", frameon=False)
    margin = 0.6 * (bottom - top) / max(n_lines, 1)
    ax.set(xlim=(min(left, np.nanmin(x)) - 40, max(right, np.nanmax(x)) + 40),
           ylim=(max(bottom, np.nanmax(y)) + margin, min(top, np.nanmin(y)) - margin),
           xlabel="x (px)", ylabel="y (px)", aspect="equal")
    ax.set_title(title or "Scanpath: fixations coloured by assigned line over the text's word boxes", fontsize=10)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=130, bbox_inches="tight")
    plt.close(figure)
    return path
