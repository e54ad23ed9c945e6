"""The constant-prediction warning names the cause: one class in the labels, or a model that learned nothing."""

import polars as pl

from readgaze.models.training.summary import constant_warning


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


def test_the_metric_table_counts_trials_and_blanks_one_class_scores():
    """A new user saw 'test bal.acc 100.0' from 6 trials of one class: the table now gives n and says '1 cls'."""
    from readgaze.models.training.summary import metric_table, regime_counts

    test = pl.DataFrame({"label": [1, 1, 1, 0, 1, 1], "regime": ["new_item"] * 3 + ["new_participant"] * 3,
                         "prediction_prob": [0.9, 0.8, 0.7, 0.2, 0.6, 0.9]})
    counts = regime_counts(test, "test")
    assert counts[("test", "all")] == 6 and counts[("test", "new_item")] == 3
    assert (counts[("test", "new_item", "classes")], counts[("test", "new_participant", "classes")]) == (1, 2)
    logged = {f"{m}_{r}/test": 1.0 for m in ("balanced_accuracy", "auroc") for r in ("all", "new_item",
                                                                                    "new_participant")}
    rows = {line.split()[0]: line.split()[1:] for line in metric_table({}, logged, counts).splitlines()[1:]}
    assert rows["new_item"] == ["-", "-", "-", "3", "1", "cls", "1", "cls"]
    assert rows["new_participant"] == ["-", "-", "-", "3", "100.0", "100.0"]
    assert rows["all"][3:] == ["6", "100.0", "100.0"]
