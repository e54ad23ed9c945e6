"""The constant-prediction warning names the cause: one class in the labels, or a model that learned nothing."""

import polars as pl

from models.summary import constant_warning


def _predictions(labels):
    return pl.DataFrame({"trial_id": [f"t{i}" for i in range(len(labels))], "label": labels,
                         "prediction_prob": [0.7] * len(labels)})


def test_one_class_is_named_and_gets_no_learning_rate_advice():
    warning = constant_warning(_predictions([1, 1, 1, 1]), "model test predictions", learning_rate=1e-3)
    assert warning is not None and "every label is 1" in warning and "one class" in warning
    assert "learning rate" not in warning


def test_two_classes_keep_the_training_advice():
    warning = constant_warning(_predictions([0, 1, 0, 1]), "model test predictions", learning_rate=1e-3)
    assert warning is not None and "learning rate now 0.001" in warning and "one class" not in warning
