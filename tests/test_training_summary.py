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
    table = metric_table({}, logged, counts)
    rows = {line.split()[0]: line.split()[1:] for line in table.splitlines()[1:]}
    assert rows["new_item"] == ["-", "-", "-", "3", "1", "cls", "1", "cls"]
    assert rows["new_participant"] == ["-", "-", "-", "3", "100.0†", "100.0†"]  # 3 trials: marked (issue 31)
    assert rows["all"][3:] == ["6", "100.0†", "100.0†"]
    assert table.splitlines()[-1].strip().startswith("† from fewer than 30 trials")
    big = {**counts, ("test", "all"): 30}
    assert "100.0†" not in metric_table({}, {"auroc_all/test": 1.0, "balanced_accuracy_all/test": 1.0}, big)


def test_regime_scores_mark_small_samples_and_use_the_threshold():
    from readgaze.models.training.summary import regime_scores, score_table

    frame = pl.DataFrame({"label": [0, 1] * 20, "prediction_prob": [0.3, 0.45] * 20,
                          "regime": ["seen"] * 36 + ["new_participant"] * 4})
    scores = {r["regime"]: r for r in regime_scores(frame, threshold=0.4).iter_rows(named=True)}
    assert scores["all"]["n_trials"] == 40 and not scores["all"]["small_sample"]
    assert scores["new_participant"]["small_sample"] and scores["seen"]["n_trials"] == 36
    assert scores["all"]["balanced_accuracy"] == 0.5 and scores["all"]["balanced_accuracy_at_threshold"] == 1.0
    assert "†" in score_table(regime_scores(frame, 0.4))


def test_cv_tables_mark_cells_from_few_trials_per_fold():
    """'validation new_item_participant n = 6 -> 100.0' was printed like any other number."""
    from readgaze.metrics import evaluate, results_table

    rows = []
    for fold in range(3):
        for k in range(40):
            regime = "new_item_participant" if k < 6 else "new_item"
            rows.append({"label": k % 2, "prediction_prob": 0.2 + 0.4 * (k % 2) + 0.005 * k, "regime": regime,
                         "fold_index": fold, "trial_id": f"t{k}", "model": "m"})
    evaluation = evaluate(pl.DataFrame(rows))
    small = dict(zip(evaluation["regime"], evaluation["small_sample"]))
    assert small == {"new_item": False, "new_item_participant": True, "all": False}
    table = results_table(evaluation)
    row = next(line for line in table.splitlines() if line.startswith("| m | AUROC"))
    assert row.count("†") == 1 and "trials on average" in table
