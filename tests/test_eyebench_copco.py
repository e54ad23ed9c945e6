"""EyeBench's CopCo tasks end to end with the classical baselines, on the real folds and planted features."""

from pathlib import Path

import numpy as np
import polars as pl
import pytest

from readgaze.errors import ConfigError, DataError, SchemaError
from readgaze.eyebench_copco import eyebench_assignment, run_copco_classical
from readgaze.qc import QCLog
from readgaze.splits import read_fold_trial_ids

EXCERPT = Path(__file__).parent / "files" / "eyebench_copco"


def _trials(folds: Path) -> pl.DataFrame:
    return read_fold_trial_ids(folds, 0).drop("fold_index", "split", "regime")


def test_assignment_counts_what_it_leaves_out():
    folds = EXCERPT / "folds"
    trials = _trials(folds)
    qc = QCLog()
    extra = pl.DataFrame({"trial_id": ["P99_1_0"], "participant_id": ["P99"], "item_id": ["1"]})
    assignment = eyebench_assignment(pl.concat([trials.tail(-2), extra], how="diagonal"), folds, qc=qc)
    assert assignment.height == 4 * 24 and assignment["fold_index"].unique().sort().to_list() == [0, 1, 2, 3]
    assert qc.total(reason="in EyeBench's fold tables, not in the dataset (left out)") == 2
    assert qc.total(reason="in the dataset, in no EyeBench fold table (left out)") == 1
    with pytest.raises(DataError, match=r"1 trials have another participant or item.*item_id must be the speech"):
        eyebench_assignment(trials.with_columns(pl.when(pl.col("trial_id") == "P27_10365_0").then(pl.lit("10365_0"))
                                                .otherwise(pl.col("item_id")).alias("item_id")), folds)


def test_task_errors():
    trials = _trials(EXCERPT / "folds")
    with pytest.raises(ConfigError, match="got task 'GOAL'"):
        run_copco_classical(trials, EXCERPT / "folds", "GOAL")
    with pytest.raises(SchemaError, match="lack column 'reading_comprehension_skill'"):
        run_copco_classical(trials.drop("reading_comprehension_skill"), EXCERPT / "folds", "RCS")
    with pytest.raises(ConfigError, match=r"rcs_missing: got nan, expected a finite number"):
        run_copco_classical(trials, EXCERPT / "folds", "RCS", rcs_missing=float("nan"))


@pytest.mark.shared_data
def test_copco_tasks_on_real_folds_with_a_planted_speed(shared_data):
    """4,782 real CopCo trial ids and labels; the reading speed is planted: slower for dyslexia and for lower skill.

    The chance rows land on EyeBench's published chance cells' scale, and reading speed beats them."""
    eyebench = shared_data / "copco" / "eyebench"
    trials = _trials(eyebench / "folds")
    rng = np.random.default_rng(0)
    reader = trials.group_by("participant_id").agg(pl.col("dyslexia", "reading_comprehension_skill").first())
    reader = reader.sort("participant_id").with_columns(pl.Series("reader_speed", rng.normal(0, 0.1, reader.height)))
    trials = trials.join(reader.select("participant_id", "reader_speed"), on="participant_id").with_columns(
        (200 * (1 + pl.col("reader_speed") - 0.3 * pl.col("dyslexia").cast(pl.Float64)
                + 0.15 * pl.col("reading_comprehension_skill").fill_null(5.0))
         * pl.Series(rng.lognormal(0, 0.1, trials.height))).alias("reading_speed_wpm"))
    typ = run_copco_classical(trials, eyebench / "folds", "TYP", kinds=("majority", "reading_speed"),
                              results=eyebench / "results")
    test_counts = typ.predictions.filter(pl.col("split") == "test").group_by("model").len()["len"].to_list()
    assert test_counts == [2118 + 2036 + 2000 + 2182] * 2  # the test trials of folds 0-3, per model
    cell = {(r["model"], r["regime"]): r for r in typ.evaluation.rows(named=True)}
    assert cell[("majority", "all")]["auroc_mean"] == pytest.approx(0.5)
    assert cell[("reading_speed_logistic_regression", "new_participant")]["auroc_mean"] > 0.8
    chance = typ.comparison.filter((pl.col("eyebench_model") == "Majority Class / Chance")
                                   & (pl.col("metric") == "auroc") & (pl.col("regime") == "all")).row(0, named=True)
    assert chance["published_mean"] == 49.9 and chance["ours_mean"] == pytest.approx(50.0) and chance["within_band"]
    assert "| Majority Class / Chance | readgaze `majority` |" in typ.table
    rcs = run_copco_classical(trials, eyebench / "folds", "RCS", kinds=("chance", "reading_speed"),
                              results=eyebench / "results")
    dropped = rcs.qc.total(reason="no reading_comprehension_skill value (dropped; 12 readers)")
    assert dropped == 2 * 1090  # the 12 readers' trials, counted by each of the two regressors
    rmse = {(r["model"], r["regime"]): r["rmse_mean"] for r in rcs.evaluation.rows(named=True)}
    assert rmse[("chance_mean", "all")] == pytest.approx(1.7475, abs=1e-4)  # the 45 scored readers only
    assert rmse[("reading_speed_linear_regression", "all")] < 0.8 * rmse[("chance_mean", "all")]
    # EyeBench's table is reproduced when the 12 readers keep the placeholder -1.0 as their score
    kept = run_copco_classical(trials, eyebench / "folds", "RCS", kinds=("chance",), results=eyebench / "results",
                               rcs_missing=-1.0)
    reason = "no reading_comprehension_skill label, given -1.0 (rcs_missing)"  # readgaze.tasks.fill_missing_label
    assert kept.qc.total(table="trials", reason=reason, action="changed") == 1090
    assert kept.qc.total(table="participants", reason=reason, action="changed") == 12
    cells = kept.comparison.filter((pl.col("eyebench_model") == "Majority Class / Chance")
                                   & (pl.col("metric") == "rmse"))
    assert cells["published_mean"].to_list() == [2.66, 2.67, 2.56, 2.66]  # Unseen Reader, Text, Text & Reader, Avg
    assert cells["ours_mean"].round(2).to_list() == [2.68, 2.68, 2.60, 2.67]
    assert cells["within_band"].all()
