"""``figures/leaderboard.png`` of ``readgaze bench``: one metric's table of :mod:`readgaze.models.training.bench_report`
as a picture, in the style of every readgaze figure.

Rows: the models under their display names (:func:`readgaze.plots.display_name`), in the table's order; columns:
(dataset,) task x regime with :mod:`readgaze.splits`' titles and order. Colour: the mean, on a colour-blind-safe
sequential map (:data:`CMAP`, perceptually uniform, readable in grey) with the fixed range 0–100 %, so two runs'
figures compare by eye; chance is marked on the colour bar. Each cell: ``mean±SEM``, the significance marks of the
table (``*`` t-test over folds, ``+`` permutation test over trials) and ``†`` for a cell from fewer than
:data:`readgaze.metrics.SMALL_SAMPLE_TRIALS` trials per fold; the best per column is bold and boxed.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl

from readgaze.metrics import SMALL_MARK, SMALL_SAMPLE_TRIALS
from readgaze.models.training.bench_report import METRICS, REGIMES, marks, small
from readgaze.splits import regime_title

CMAP = "viridis"
"""Colour map of the cells: dark blue (0 %) through green to yellow (100 %): perceptually uniform, readable by
readers with colour-vision deficiency and in grey (matplotlib's default sequential map)."""
RANGE = (0.0, 100.0)
"""The fixed colour range (%)."""


def plot_leaderboard(board: pl.DataFrame, path: Path, metric: str = "auroc") -> Path | None:
    """Draw ``metric``'s rows of the leaderboard (``board``: :func:`~readgaze.models.training.bench_report.leaderboard`)
    to ``path`` (format from the suffix; parents created). Returns ``path``, or None when no row has the metric."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from readgaze.plots import display_name

    part = board.filter((pl.col("metric") == metric) & (pl.col("kind") != "chance"))
    if part.height == 0:
        return None
    present = set(part.select("dataset", "task", "regime").unique().rows())
    columns = [(d, t, r) for d, t in part.select("dataset", "task").unique(maintain_order=True).rows()
               for r in REGIMES if (d, t, r) in present]
    models = part.select("model").unique(maintain_order=True).to_series().to_list()
    cells = {(r["model"], r["dataset"], r["task"], r["regime"]): r for r in part.iter_rows(named=True)}
    values = np.full((len(models), len(columns)), np.nan)
    for i, model in enumerate(models):
        for j, column in enumerate(columns):
            row = cells.get((model, *column))
            if row is not None:
                values[i, j] = 100 * row["mean"]
    several = part["dataset"].n_unique() > 1
    figure, ax = plt.subplots(figsize=(1.45 * len(columns) + 3.0, 0.42 * len(models) + 1.9))
    cmap = plt.get_cmap(CMAP)
    image = ax.imshow(values, cmap=cmap, vmin=RANGE[0], vmax=RANGE[1], aspect="auto")
    any_small = False
    for i, model in enumerate(models):
        for j, column in enumerate(columns):
            row = cells.get((model, *column))
            if row is None or np.isnan(values[i, j]):
                continue
            any_small |= bool(row.get("small_sample"))
            text = f"{values[i, j]:.1f}" + ("" if row["sem"] is None else f"±{100 * row['sem']:.1f}")
            red, green, blue, _ = cmap((values[i, j] - RANGE[0]) / (RANGE[1] - RANGE[0]))
            dark = 0.2126 * red + 0.7152 * green + 0.0722 * blue < 0.45
            ax.text(j, i, text + marks(row) + small(row), ha="center", va="center", fontsize=7.5,
                    color="white" if dark else "black", fontweight="bold" if row["best"] else "normal")
            if row["best"]:
                for colour, width in (("white", 3.2), ("black", 1.4)):  # seen on dark and on light cells
                    ax.add_patch(plt.Rectangle((j - 0.46, i - 0.44), 0.92, 0.88, fill=False, edgecolor=colour,
                                               linewidth=width))
    labels = [f"{(d + '/') if several else ''}{t}\n{regime_title(r)}".replace(" & ", " &\n") for d, t, r in columns]
    ax.set_xticks(range(len(columns)), labels, fontsize=7.5)
    ax.set_yticks(range(len(models)), [display_name(m) for m in models], fontsize=8.5)
    bar = figure.colorbar(image, ax=ax, fraction=0.03, pad=0.01)
    bar.set_label(f"{METRICS[metric]} % (fixed range {RANGE[0]:.0f}–{RANGE[1]:.0f})", fontsize=8)
    ticks = {0.0: "0", 25.0: "25", 50.0: "50", 75.0: "75", 100.0: "100"}
    chance = board.filter((pl.col("metric") == metric) & (pl.col("kind") == "chance"))["mean"].unique()
    if chance.len() == 1:  # the metric's chance level (the table's Chance row), on the bar
        ticks[round(100 * chance[0], 1)] = f"chance {100 * chance[0]:.0f}"
        bar.ax.axhline(100 * chance[0], color="white", linewidth=1.5)
    bar.set_ticks(sorted(ticks), labels=[ticks[k] for k in sorted(ticks)], fontsize=7.5)
    notes = ["mean±SEM over folds, boxed = best per column",
             "* t-test over folds, + permutation test over trials, vs the column's strongest baseline (Holm)"]
    if any_small:
        notes.append(f"{SMALL_MARK} fewer than {SMALL_SAMPLE_TRIALS} trials per fold")
    ax.set_title(f"{METRICS[metric]} (%)\n" + "; ".join(notes[:1]) + "\n" + "; ".join(notes[1:]), fontsize=8)
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=130, bbox_inches="tight")
    plt.close(figure)
    return path
