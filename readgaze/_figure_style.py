"""What the result figures share (:func:`readgaze.plots.plot_roc`, :func:`readgaze.plots_regression.plot_regression`):
one colour and dash pattern per model (:func:`model_colour`, :func:`model_linestyle`; public as ``readgaze.plots``')
and the panel layout (:func:`panel_axes`, :func:`panel_regimes`)."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")  # files only; never open a window

import matplotlib.pyplot as plt  # noqa: E402

from readgaze.splits.regimes import REGIME_ORDER  # noqa: E402


def panel_axes(n_panels: int):
    """A figure with ``n_panels`` square panels, two per row, each with its legend in a column of its own beside it
    (never over the data or a neighbour). Returns ``(figure, axes, height in inches)``."""
    columns = 2 if n_panels > 2 else n_panels
    rows = -(-n_panels // columns)
    panel, label_gap, legend_width, title_gap = 3.7, 0.85, 4.6, 0.9  # fixed inches
    width, height = columns * (label_gap + panel + legend_width), rows * (panel + title_gap + 0.6) + 0.8
    figure = plt.figure(figsize=(width, height))
    axes = [figure.add_axes(((k % columns * (label_gap + panel + legend_width) + label_gap) / width,
                             (height - 0.8 - (k // columns + 1) * (panel + title_gap + 0.6) + 0.6) / height,
                             panel / width, panel / height)) for k in range(n_panels)]
    return figure, axes, height


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


def model_linestyle(model: str):
    """One line style (a matplotlib dash pattern) per model name in every figure: fixed for the package's models
    (their place in the colour table, so neighbours differ), a stable hash otherwise."""
    import zlib

    names = list(_FIXED_COLOURS)
    index = names.index(model) if model in names else zlib.crc32(model.encode())
    return _LINESTYLES[index % len(_LINESTYLES)]


_LINESTYLES = ("-", (0, (5, 2)), (0, (1, 1.5)), (0, (6, 2, 1, 2)), (0, (2, 2)), (0, (8, 2, 1, 2, 1, 2)))


def panel_regimes(headline: tuple[str, ...]) -> tuple[list[str], set[str]]:
    """The panels' regimes, headline ones first, then the rest in :data:`readgaze.splits.REGIME_ORDER`, and those
    to mark "headline" (none when all or all but one are headline: the mark would single nothing out)."""
    regimes = [*[r for r in headline if r in REGIME_ORDER], *[r for r in REGIME_ORDER if r not in headline]]
    return regimes, set(headline) if 0 < len(headline) < len(REGIME_ORDER) - 1 else set()
