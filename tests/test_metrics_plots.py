"""plot_roc writes one panel per regime, for binary and multiclass predictions."""

from __future__ import annotations

import matplotlib.image as mpimg
import numpy as np
import polars as pl

from readgaze.plots import plot_roc


def _predictions(multiclass: bool = False) -> pl.DataFrame:
    rng = np.random.default_rng(0)
    n = 120
    label = rng.integers(0, 3 if multiclass else 2, n)
    if multiclass:
        logits = rng.normal(size=(n, 3)) + 2 * np.eye(3)[label]
        prob = (np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)).tolist()
    else:
        prob = 1 / (1 + np.exp(-(rng.normal(size=n) + 2 * label - 1)))
    regimes = np.array(["new_item", "new_participant", "new_item_participant"])[np.arange(n) % 3]
    return pl.DataFrame({"label": label, "prediction_prob": prob, "regime": regimes, "fold_index": np.arange(n) % 2,
                         "trial_id": [f"t{k}" for k in range(n)], "model": ["m"] * n})


def test_binary_roc_figure(tmp_path):
    path = plot_roc(_predictions(), tmp_path / "figs" / "roc.png")
    image = mpimg.imread(path)
    assert path.name == "roc.png" and image.shape[1] > 1.4 * image.shape[0]  # four panels, two by two, legends beside
    assert image.std() > 0.01  # something was drawn


def test_multiclass_and_one_class_panels(tmp_path):
    predictions = _predictions(multiclass=True)
    assert plot_roc(predictions, tmp_path / "roc.svg").read_text().startswith("<?xml")
    one_class = _predictions().with_columns(pl.lit(1).alias("label"))
    assert plot_roc(one_class, tmp_path / "one.png").stat().st_size > 1000
