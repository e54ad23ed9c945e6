"""Figures that say what they show (issue 17, friction 12): chance is the diagonal and the majority baseline sits on
it, the task and positive class are in the title, headline regimes come first and are marked, a model keeps its
colour across figures, and the scanpath keys its circle sizes and ticks."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

import readgaze.plots as plots


@pytest.fixture
def figures(monkeypatch):
    """The figures plot_* would close, kept for inspection."""
    kept = []
    monkeypatch.setattr(plots.plt, "close", lambda figure=None: kept.append(figure))
    yield kept
    for figure in kept:
        plots.plt.figure(figure.number)
        plots.plt.clf()


def _predictions(models=("RoBERTEyeF", "majority")) -> pl.DataFrame:
    rng = np.random.default_rng(0)
    n = 120
    label = rng.integers(0, 2, n)
    fold = np.arange(n) % 2
    regimes = np.array(["new_item", "new_participant", "new_item_participant"])[np.arange(n) % 3]
    frames = []
    for model in models:
        if model == "majority":  # a per-fold constant: the training folds' prior differs (0.4 vs 0.6)
            prob = np.where(fold == 0, 0.4, 0.6)
        else:
            prob = 1 / (1 + np.exp(-(rng.normal(size=n) + 2 * label - 1)))
        frames.append(pl.DataFrame({"label": label, "prediction_prob": prob, "regime": regimes, "fold_index": fold,
                                    "trial_id": [f"t{k}" for k in range(n)], "model": [model] * n}))
    return pl.concat(frames)


def test_roc_majority_on_the_chance_diagonal_and_titles(tmp_path, figures):
    plots.plot_roc(_predictions(), tmp_path / "roc.png", task="reading_goal",
                   headline=("new_participant", "new_item_participant"))
    figure = figures[-1]
    assert figure._suptitle.get_text().startswith("Task reading_goal: ROC of P(information seeking)")
    titles = [ax.get_title() for ax in figure.axes]
    assert titles[0].startswith("New participant [headline]\n(n=")
    assert titles[1].startswith("New item & participant [headline]\n(n=")
    assert "headline" not in titles[2] and titles[3].startswith("All regimes")
    for ax in figure.axes:
        grey = [line for line in ax.get_lines() if line.get_color() == plots.model_colour("majority")]
        assert len(grey) == 1
        assert list(grey[0].get_xdata()) == [0, 1] and list(grey[0].get_ydata()) == [0, 1]
        labels = [t.get_text() for t in ax.get_legend().get_texts()]
        assert labels[0] == "chance: 50" and any("constant per fold" in t for t in labels)


def test_a_model_keeps_its_colour_in_every_figure(tmp_path, figures):
    plots.plot_roc(_predictions(("RoBERTEyeF", "majority")), tmp_path / "a.png")
    plots.plot_roc(_predictions(("BEyeLSTM", "LabModel", "RoBERTEyeF")), tmp_path / "b.png")

    def colours(figure):
        legend = figure.axes[0].get_legend()
        return {t.get_text().split(":")[0]: h.get_color() for t, h in zip(legend.get_texts(), legend.legend_handles)
                if not t.get_text().startswith("chance")}

    first, second = colours(figures[0]), colours(figures[1])
    assert first["RoBERTEye-F"] == second["RoBERTEye-F"] == plots.model_colour("RoBERTEyeF")
    assert len(set(second.values())) == 3
    assert plots.model_colour("LabModel") == plots.model_colour("LabModel")


def test_the_package_models_baselines_and_ensembles_get_distinct_visible_colours():
    """The demo drew BEyeLSTM (C1) and MajorityVote (hashed #d95f02) in two oranges 0.20 apart, and Eyettention /
    ScanpathImage in PLM-AS-RM's / RoBERTEye-W's very colours: any two now differ by at least 0.22 in RGB."""
    import itertools

    from matplotlib.colors import to_rgb

    from readgaze.baselines import BASELINES
    from readgaze.models.training.ensemble import LogisticEnsemble, MajorityVote

    names = [*plots._FIXED_COLOURS, *(b.model for b in BASELINES.values()), LogisticEnsemble.__name__,
             MajorityVote.__name__]
    rgb = {n: np.array(to_rgb(plots.model_colour(n))) for n in names}
    close = [(a, b) for a, b in itertools.combinations(rgb, 2) if np.linalg.norm(rgb[a] - rgb[b]) < 0.22]
    assert not close, close
    assert all(float(np.dot(c, [0.2126, 0.7152, 0.0722])) < 0.72 for c in rgb.values())  # none paler than C8


def test_scanpath_keys_circle_size_and_ticks(tmp_path, figures):
    words = pl.DataFrame({"word": ["The", "cat", "sat", "down"], "left_px": [0.0, 50.0, 0.0, 50.0],
                          "right_px": [50.0, 100.0, 50.0, 100.0], "top_px": [0.0, 0.0, 40.0, 40.0],
                          "bottom_px": [40.0, 40.0, 80.0, 80.0], "line_index": [0, 0, 1, 1]})
    fixations = pl.DataFrame({"x_px": [20.0, 70.0, 20.0], "y_px": [25.0, 15.0, 50.0],
                              "duration_ms": [100.0, 300.0, 200.0], "line_index": [0, 0, None]})
    plots.plot_scanpath(fixations, words, tmp_path / "scan.png")
    texts = [t.get_text() for t in figures[-1].axes[0].get_legend().get_texts()]
    assert texts == ["no line", "100 ms", "250 ms", "500 ms", "tick: fixation to its assigned line"]


def test_roc_legends_sit_beside_the_curves_with_readable_names_and_aurocs(tmp_path, figures):
    """Issue 31: each panel's legend sat over the curves, its values had no names (snake_case ones in a separate
    legend), and the reading-speed curve was hidden under an identical one."""
    predictions = _predictions(("RoBERTEyeF", "majority", "reading_speed_logistic_regression"))
    twin = predictions.filter(pl.col("model") == "reading_speed_logistic_regression").with_columns(
        pl.lit("words_per_paragraph_time_logistic_regression").alias("model"))
    plots.plot_roc(pl.concat([predictions, twin]), tmp_path / "roc.png", task="reading_goal")
    figure = figures[-1]
    figure.canvas.draw()
    renderer = figure.canvas.get_renderer()
    for ax in figure.axes:
        legend = ax.get_legend()
        assert legend.get_window_extent(renderer).x0 > ax.get_window_extent(renderer).x1  # beside, not over
        others = [o.get_window_extent(renderer) for o in figure.axes if o is not ax]
        assert not any(legend.get_window_extent(renderer).overlaps(o) for o in others)
        texts = [t.get_text() for t in legend.get_texts()]
        assert not any("_" in t for t in texts), texts
        assert any(t.startswith("RoBERTEye-F: ") and "±" in t for t in texts)
        assert any(t.startswith("words / paragraph time (LR): ") and "the same curve as reading speed (LR)" in t
                   for t in texts)
        styles = {line.get_label().split(":")[0]: (line.get_linestyle(), line.get_linewidth())
                  for line in ax.get_lines()}
        assert styles["reading speed (LR)"] != styles["words / paragraph time (LR)"]  # the twin drawn visibly


def test_scanpath_is_clipped_to_the_text_and_marks_fixations_beyond_it(tmp_path, figures):
    """One off-screen fixation at x = 2480 stretched the axis so the text filled 70 % of the width."""
    words = pl.DataFrame({"word": ["The", "cat", "sat", "down"], "left_px": [100.0, 150.0, 100.0, 150.0],
                          "right_px": [150.0, 200.0, 150.0, 200.0], "top_px": [100.0, 100.0, 140.0, 140.0],
                          "bottom_px": [140.0, 140.0, 180.0, 180.0], "line_index": [0, 0, 1, 1]})
    fixations = pl.DataFrame({"x_px": [120.0, 170.0, 2480.0, 130.0], "y_px": [125.0, 128.0, 120.0, 150.0],
                              "duration_ms": [100.0, 300.0, 200.0, 250.0], "line_index": [0, 0, 0, 1]})
    plots.plot_scanpath(fixations, words, tmp_path / "scan.png")
    ax = figures[-1].axes[0]
    x0, x1 = ax.get_xlim()
    assert 60 <= x0 < 100 and 200 < x1 <= 240
    texts = [t.get_text() for t in ax.get_legend().get_texts()]
    assert any(t.startswith("1 fixation(s) beyond the text") for t in texts)
    assert all(t.get_fontsize() >= 7 for t in ax.texts)
    plots.plot_scanpath(fixations, words, tmp_path / "both.png", compare_raw=True)
    raw, corrected = figures[-1].axes
    assert raw.get_title(loc="left").startswith("Raw") and corrected.get_title(loc="left").startswith("Corrected")
