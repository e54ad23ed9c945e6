"""Figures for results: ROC curves per evaluation regime, predicted against true values per regime for a regression
(:func:`plot_regression`, from :mod:`readgaze.plots_regression`) and scanpaths (matplotlib, Agg, no display).

Every figure gives a model the same colour (:func:`model_colour`) and the same panel layout
(``readgaze._figure_style``).
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only; never open a window

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import polars as pl  # noqa: E402
from sklearn.metrics import roc_curve  # noqa: E402

from readgaze._figure_style import _FIXED_COLOURS, model_colour, model_linestyle, panel_axes, panel_regimes  # noqa: E402, F401
from readgaze.metrics import check_predictions, evaluate  # noqa: E402
from readgaze.predictions import DISPLAY_NAMES, display_name, is_multiclass  # noqa: E402, F401 (plots.display_name)
from readgaze.splits.regimes import ALL, regime_title  # noqa: E402
from readgaze.tasks import TASKS  # noqa: E402

POSITIVE_CLASS = {name: task.positive_title for name, task in TASKS.items() if task.positive_title}
"""The class whose probability the ROC ranks by, per task (label 1), from :data:`readgaze.tasks.TASKS`."""


def plot_roc(predictions: pl.DataFrame | pl.LazyFrame, path: str | Path, *, split: str | None = "test",
             task: str | None = None, headline: tuple[str, ...] = ()) -> Path:
    """Draw one ROC panel per regime (new item, new participant, new item & participant, all), two by two.

    Each panel has one curve per model, computed on that regime's test trials pooled over folds; its legend, beside
    the panel (never over the curves), names each model readably (:func:`display_name`) with its per-fold AUROC
    mean ± SEM of :func:`readgaze.metrics.evaluate` (the number in the results table), best first. Chance is the
    diagonal. Each model keeps its colour (:func:`model_colour`) and its dash pattern (:func:`model_linestyle`) in
    every figure; curves are drawn thickest first, so one under another still shows. No curve is hidden without a
    word: a model whose curve in a panel equals an earlier one's says so in the legend (``the same curve as reading
    speed (LR)``), and one that ranks every fold's trials exactly as an earlier model does (the same per-fold
    AUROC: e.g. an ensemble that follows one member) says that (``ranks every fold's trials as BEyeLSTM``). A model
    whose predictions are constant within every fold (the majority baseline) is drawn on the diagonal: pooling its
    per-fold constants would draw a curve below chance for a model whose every fold scores 50. Multiclass
    predictions (``prediction_prob`` a list) are drawn as the micro-averaged one-vs-rest curve. A panel whose
    trials hold one class says so instead of a curve. A cell from fewer than
    :data:`readgaze.metrics.SMALL_SAMPLE_TRIALS` trials per fold carries the small-sample mark.

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
    from readgaze.metrics import SMALL_MARK

    frame = check_predictions(predictions, split)
    evaluation = evaluate(frame, split=None)
    auroc = {(r["model"], r["regime"]): (r["auroc_mean"], r["auroc_sem"], r["small_sample"])
             for r in evaluation.iter_rows(named=True)}
    regimes, marked = panel_regimes(headline)
    models = frame["model"].unique(maintain_order=True).to_list()
    style = {m: (model_linestyle(m), 3.0 - 1.6 * i / max(len(models) - 1, 1)) for i, m in enumerate(models)}
    constant = _constant_per_fold(frame)
    figure, axes, height = panel_axes(len(regimes))
    any_small = False
    for ax, regime in zip(axes, regimes):
        cell = frame if regime == ALL else frame.filter(pl.col("regime") == regime)
        ax.plot([0, 1], [0, 1], linestyle=":", color="0.6", linewidth=1.0, label="chance: 50")
        drawn, entries = {}, []
        for model in models:
            part = cell.filter(pl.col("model") == model).sort("fold_index", "trial_id")
            twin = _twin(part, drawn) if model not in constant else None
            mean, sem, small = auroc.get((model, regime), (None, None, False))
            any_small |= bool(small) and mean is not None
            line = _curve(ax, part, model_colour(model), style[model], _auroc_text(mean, sem, small, SMALL_MARK),
                          on_diagonal=model in constant, twin=twin, name=display_name(model))
            if part.height and model not in constant:
                drawn[model] = part
            entries.append((-1.0 if mean is None else mean, line))
        handles = [ax.get_lines()[0], *[line for _, line in sorted(entries, key=lambda e: -e[0])]]
        ax.legend(handles=handles, labels=[h.get_label() for h in handles], loc="center left",
                  bbox_to_anchor=(1.04, 0.5), fontsize=11.5, title="AUROC % (mean ± SEM over folds)",
                  title_fontsize=11.5, frameon=False, handlelength=3.0, alignment="left")
        n_predictions = cell.filter(pl.col("model") == cell["model"][0]).height if cell.height else 0
        title = (regime_title(regime, all_title="All regimes") + (" [headline]" if regime in marked else "")
                 + f"\n(n={n_predictions:,})")
        ax.set(xlim=(0, 1), ylim=(0, 1.01), aspect="equal")
        ax.set_xlabel("False positive rate", fontsize=13)
        ax.set_ylabel("True positive rate", fontsize=13)
        ax.tick_params(labelsize=12)
        ax.set_title(title, fontsize=14, fontweight="bold" if regime in marked else "normal")
    what = (f"Task {task}: ROC of P({POSITIVE_CLASS.get(task, 'class 1')})" if task else "ROC")
    notes = ["n = trial-fold pairs of the first model", *(["headline regimes first"] if marked else []),
             *([f"{SMALL_MARK} fewer than 30 trials per fold"] if any_small else [])]
    figure.suptitle(f"{what} on the test predictions pooled over folds\n({'; '.join(notes)})", fontsize=15,
                    y=1 - 0.1 / height, va="top")
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=120, bbox_inches="tight")
    plt.close(figure)
    return path


def __getattr__(name: str):
    """``readgaze.plots.plot_regression`` (defined in :mod:`readgaze.plots_regression`, which imports this module)."""
    if name == "plot_regression":
        from readgaze.plots_regression import plot_regression

        return plot_regression
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _auroc_text(mean, sem, small: bool, mark: str) -> str:
    if mean is None:
        return "n/a"
    return f"{100 * mean:.1f}" + ("" if sem is None else f" ± {100 * sem:.1f}") + (f" {mark}" if small else "")


def _constant_per_fold(frame: pl.DataFrame) -> set[str]:
    """Models whose binary ``prediction_prob`` takes one value within every fold."""
    if is_multiclass(frame) or "fold_index" not in frame.columns:
        return set()
    spread = frame.group_by("model", "fold_index").agg(pl.col("prediction_prob").n_unique().alias("n"))
    per_model = spread.group_by("model").agg((pl.col("n") == 1).all().alias("constant"))
    return set(per_model.filter(pl.col("constant"))["model"].to_list())


def _pooled_roc(part: pl.DataFrame) -> tuple[np.ndarray, np.ndarray] | None:
    """``(false positive rate, true positive rate)`` of the pooled trials (micro one-vs-rest when multiclass); None
    for no trials or one class."""
    labels = part["label"].to_numpy()
    if part.height == 0 or np.unique(labels).size < 2:
        return None
    if is_multiclass(part):
        scores = np.stack(part["prediction_prob"].to_list())
        onehot = np.eye(scores.shape[1], dtype=np.int64)[labels]
        labels, scores = onehot.ravel(), scores.ravel()
    else:
        scores = part["prediction_prob"].to_numpy()
    false_positive, true_positive, _ = roc_curve(labels, scores)
    return false_positive, true_positive


def _twin(part: pl.DataFrame, drawn: dict[str, pl.DataFrame]) -> tuple[str, str] | None:
    """``(earlier model, "curve" | "ranks")`` when ``part`` (sorted by fold, trial) draws exactly an earlier model's
    curve, or ranks every fold's trials as it does (binary); else None."""
    if part.height == 0:
        return None
    mine = _pooled_roc(part)
    for other, frame in drawn.items():
        if frame.height != part.height or not frame["trial_id"].equals(part["trial_id"]):
            continue
        theirs = _pooled_roc(frame)
        if mine is not None and theirs is not None and all(a.shape == b.shape and np.allclose(a, b, atol=1e-12)
                                                           for a, b in zip(mine, theirs)):
            return display_name(other), "curve"
        if not is_multiclass(part):
            rank = pl.col("prediction_prob").rank("average").over("fold_index")
            if frame.select(rank)["prediction_prob"].equals(part.select(rank)["prediction_prob"]):
                return display_name(other), "ranks"
    return None


def _curve(ax, part: pl.DataFrame, colour: str, style: tuple, text: str, *, on_diagonal: bool = False,
           twin: tuple[str, str] | None = None, name: str = ""):
    """One model's pooled ROC curve on one panel (micro one-vs-rest when multiclass); returns its legend line."""
    dashes, width = style
    label = f"{name}: {text}" if name else text
    curve = _pooled_roc(part)
    if curve is None:
        return ax.plot([], [], color=colour, label=f"{name}: one class, no curve" if name else "one class: no curve")[0]
    if twin is not None:
        label += (f"\n    the same curve as {twin[0]}" if twin[1] == "curve" else
                  f"\n    ranks every fold's trials as {twin[0]} does")
    if on_diagonal:
        return ax.plot([0, 1], [0, 1], color=colour, linewidth=width, linestyle=(0, (4, 3)),
                       label=f"{label}\n    constant per fold: on the diagonal")[0]
    return ax.plot(*curve, color=colour, linewidth=width, linestyle=dashes, label=label)[0]


_SCANPATH_FIXATION_COLUMNS = ("x_px", "y_px", "duration_ms")
_SCANPATH_WORD_COLUMNS = ("word", "left_px", "right_px", "top_px", "bottom_px", "line_index")


def plot_scanpath(fixations: pl.DataFrame | pl.LazyFrame, words: pl.DataFrame | pl.LazyFrame, path: str | Path, *,
                  line_column: str = "line_index", highlight: tuple[int, int] | None = None,
                  title: str | None = None, compare_raw: bool = False) -> Path:
    """Draw one trial's fixations over its text's word boxes, coloured by the line they were assigned to.

    Each word box is drawn with its word, at a size readable on a slide (about 10 pt on a 13-inch-wide figure); the
    boxes of line ``l`` and the fixations assigned to line ``l`` share a colour, so a fixation whose colour differs
    from the row it sits on shows vertical drift that line assignment corrected. Fixations are circles at their
    recorded position (area proportional to ``duration_ms``), joined in order by the saccade path; a short vertical
    tick joins each fixation to the midline of its assigned line. Fixations with no line (null) are grey crosses.
    The axes hold the text (plus half a line of margin): a fixation beyond them (off screen, far from the text) is
    drawn at the edge as a hollow triangle pointing where it lies, and the legend counts them. The legend keys
    circle size (100, 250, 500 ms) and the tick.

    With ``compare_raw`` two panels are stacked: above, the recording as it is, each fixation coloured by the line
    nearest its recorded y (what an uncorrected analysis assumes); below, the correction, each fixation moved onto
    the line it was assigned to (a fifth of a line below its top, above the word labels).

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
    compare_raw : bool, default False
        Raw (nearest line by recorded y) above corrected (assigned line) instead of one panel.

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
    left, right = float(box["left_px"].min()), float(box["right_px"].max())
    top, bottom = float(box["top_px"].min()), float(box["bottom_px"].max())
    n_lines = int(box["line_index"].max()) + 1
    pitch = (bottom - top) / max(n_lines, 1)
    limits = (left - 0.5 * pitch, right + 0.5 * pitch, top - 0.6 * pitch, bottom + 0.6 * pitch)
    mid = box.group_by("line_index").agg(((pl.col("top_px") + pl.col("bottom_px")) / 2).mean().alias("mid"))
    midline = dict(zip(mid["line_index"].to_list(), mid["mid"].to_list()))
    x, y = fix["x_px"].to_numpy().astype(float), fix["y_px"].to_numpy().astype(float)
    assigned = fix[line_column].to_numpy().astype(float)
    panels = [("assigned", x, y, assigned)]
    if compare_raw:
        lines = np.array(sorted(midline))
        mids = np.array([midline[k] for k in lines])
        raw = lines[np.abs(y[:, None] - mids[None, :]).argmin(axis=1)].astype(float)
        raw[np.isnan(y)] = np.nan
        tops = dict(box.group_by("line_index").agg(pl.col("top_px").min(), pl.col("bottom_px").max())
                    .select("line_index", pl.col("top_px") + 0.22 * (pl.col("bottom_px") - pl.col("top_px")))
                    .iter_rows())  # above the word labels, which sit on the midline
        moved = np.array([tops.get(int(k), np.nan) if not np.isnan(k) else v for k, v in zip(assigned, y)])
        panels = [("raw", x, y, raw), ("corrected", x, moved, assigned)]
    width_in = 13.0
    axes_width = width_in - 3.2  # the legend's column on the right
    height_in = axes_width * (limits[3] - limits[2]) / (limits[1] - limits[0])
    figure, axes = plt.subplots(len(panels), 1, figsize=(width_in, len(panels) * (height_in + 0.9) + 0.4),
                                squeeze=False)
    font = _word_font_size(box, axes_width / (limits[1] - limits[0]))
    for ax, (kind, px, py, line) in zip(axes[:, 0], panels):
        _draw_words(ax, box, highlight, font)
        outside = _draw_fixations(ax, fix, px, py, line, midline, limits, ticks=kind == "assigned")
        ax.set(xlim=limits[:2], ylim=(limits[3], limits[2]), aspect="equal")
        ax.set_xlabel("x (px)", fontsize=12)
        ax.set_ylabel("y (px)", fontsize=12)
        ax.tick_params(labelsize=11)
        _scanpath_legend(ax, kind, outside)
        if compare_raw:
            ax.set_title({"raw": "Raw: recorded positions, coloured by the nearest line (no correction)",
                          "corrected": f"Corrected: each fixation moved to the line it was assigned ({line_column})"
                          }[kind], fontsize=13, loc="left")
    figure.suptitle(title or "Scanpath: fixations coloured by assigned line over the text's word boxes", fontsize=14)
    figure.tight_layout()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=130, bbox_inches="tight")
    plt.close(figure)
    return path


def _word_font_size(box: pl.DataFrame, inches_per_px: float) -> float:
    """A word-label size (pt) at which 90 % of the words fill at most 85 % of their boxes (a character ~0.62 em),
    within 7-11 pt."""
    width_pt = (box["right_px"] - box["left_px"]).to_numpy() * inches_per_px * 72
    chars = np.maximum(box["word"].str.len_chars().to_numpy(), 1)
    return float(np.clip(np.percentile(0.85 * width_pt / (0.62 * chars), 10), 7.0, 11.0))


def _draw_words(ax, box: pl.DataFrame, highlight, font: float) -> None:
    from matplotlib.patches import Rectangle

    colours = plt.get_cmap("tab10")
    for w in box.iter_rows(named=True):
        shaded = highlight is not None and highlight[0] <= w["word_index"] < highlight[1]
        colour = colours(w["line_index"] % 10)
        ax.add_patch(Rectangle((w["left_px"], w["top_px"]), w["right_px"] - w["left_px"], w["bottom_px"] - w["top_px"],
                               facecolor=colour, alpha=0.28 if shaded else 0.08, edgecolor=colour, linewidth=0.5))
        ax.text((w["left_px"] + w["right_px"]) / 2, (w["top_px"] + w["bottom_px"]) / 2, w["word"], ha="center",
                va="center", fontsize=font, color="0.2")


def _draw_fixations(ax, fix: pl.DataFrame, x, y, line, midline: dict, limits, ticks: bool) -> int:
    """Fixations, saccade path and ticks; those beyond ``limits`` at the edge as triangles. Returns their count."""
    colours = plt.get_cmap("tab10")
    x0, x1, y0, y1 = limits
    inset = 0.15 * (y1 - y0) / 10
    cx, cy = np.clip(x, x0 + inset, x1 - inset), np.clip(y, y0 + inset, y1 - inset)
    beyond = (cx != x) | (cy != y)
    ax.plot(cx, cy, color="0.4", linewidth=0.7, alpha=0.7, zorder=2)
    size = 6 + fix["duration_ms"].to_numpy() / 6
    lined = ~np.isnan(line)
    for k in np.unique(line[lined]).astype(int):
        on = lined & (line == k) & ~beyond
        ax.scatter(cx[on], cy[on], s=size[on], color=colours(k % 10), edgecolor="black", linewidth=0.4, zorder=3)
        if ticks:
            ax.vlines(cx[on], cy[on], [midline.get(k, np.nan)] * int(on.sum()), color=colours(k % 10),
                      linewidth=0.8, zorder=2)
    if (~lined & ~beyond).any():
        ax.scatter(cx[~lined & ~beyond], cy[~lined & ~beyond], s=30, marker="x", color="0.45", zorder=3,
                   label="no line")
    for index in np.flatnonzero(beyond):  # pointing where the fixation really lies
        dx, dy = np.sign(x[index] - cx[index]), np.sign(y[index] - cy[index])
        marker = ">" if dx > 0 else "<" if dx < 0 else "v" if dy > 0 else "^"
        colour = colours(int(line[index]) % 10) if lined[index] else "0.45"
        ax.scatter([cx[index]], [cy[index]], s=90, marker=marker, facecolor="white", edgecolor=colour, linewidth=1.5,
                   zorder=4)
    return int(beyond.sum())


def _scanpath_legend(ax, kind: str, outside: int) -> None:
    for ms in (100, 250, 500):  # the size key: circle area grows with fixation duration
        ax.scatter([], [], s=6 + ms / 6, facecolor="white", edgecolor="black", linewidth=0.4, label=f"{ms} ms")
    if kind == "assigned":
        ax.plot([], [], color="0.3", linewidth=0.8, marker="|", markersize=9, linestyle="none",
                label="tick: fixation to its assigned line")
    if outside:
        ax.scatter([], [], s=90, marker=">", facecolor="white", edgecolor="0.3", linewidth=1.5,
                   label=f"{outside} fixation(s) beyond the text:\ndrawn at the edge, pointing to them")
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=11, title="fixation duration",
              title_fontsize=11, frameon=False)
