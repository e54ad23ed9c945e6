"""Per-trial line-assignment confidence in prepared datasets: agreement with the vote and slice, and the warning
that names the trials below 95 % (prep's trials.parquet, its QC log, `readgaze inspect`)."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from readgaze.data_prep.pipeline import prepare
from readgaze.lines.agreement import describe, line_agreement, low_agreement
from readgaze.simulate import simulate_line_trials

STEADY = dict(n_lines=6, line_pitch_px=60.0, long_trial_probability=0.0, noise_px=3.0, slope=0.0, shift=0.0,
              offset_px=0.0, p_within=0.0, p_between=0.0, off_text=False, proportional_probability=0.0)
# built to disagree: drift rises to 0.9 pitch upward in the middle of the trial, so the nearest midline puts the
# middle lines' fixations one line too high, while slice (and so the vote) follows the drift
DRIFTING = dict(STEADY, wave_knots=((0.0, 0.0), (0.3, -0.9), (0.7, -0.9), (1.0, 0.0)))


def _tables():
    sims = {"steady": simulate_line_trials(1, seed=3, **STEADY)[0],
            "drifting": simulate_line_trials(1, seed=3, **DRIFTING)[0]}
    words = pl.concat([t.layout.words.with_columns(text_id=pl.lit(f"text_{k}")) for k, t in sims.items()])
    trials = pl.DataFrame({"trial_id": list(sims), "participant_id": ["p1", "p2"], "item_id": "i",
                           "text_id": [f"text_{k}" for k in sims], "reading_goal": "ordinary"})
    fixations = pl.concat([pl.DataFrame({
        "trial_id": k, "fixation_index": np.arange(len(t.xy), dtype=np.int32),
        "start_ms": np.cumsum(t.duration_ms) - t.duration_ms, "duration_ms": t.duration_ms,
        "x_px": t.xy[:, 0], "y_px": t.xy[:, 1]}) for k, t in sims.items()])
    return trials, words, fixations


@pytest.fixture(scope="module")
def prepared():
    trials, words, fixations = _tables()
    return prepare(trials, words, fixations, line_assigner="nearest")


def test_prep_records_agreement_and_flags_the_trial_built_to_disagree(prepared):
    agree = {r["trial_id"]: r for r in prepared.trials.select(
        "trial_id", "line_agreement_vote", "line_agreement_slice").iter_rows(named=True)}
    assert agree["steady"]["line_agreement_vote"] == 1.0 and agree["steady"]["line_agreement_slice"] == 1.0
    # the nearest midline shifts the drifted middle lines: well under the 95 % bar against both references
    assert agree["drifting"]["line_agreement_vote"] < 0.8 and agree["drifting"]["line_agreement_slice"] < 0.8
    record = [r for r in prepared.qc.records if r["table"] == "trials" and "agree" in r["reason"]]
    assert [(r["count"], r["detail"]) for r in record] == [(1, "drifting")]
    assert low_agreement(prepared.trials)["trial_id"].to_list() == ["drifting"]
    (line,) = describe(prepared.trials)
    assert "1 trial(s) below 95% agreement (drifting)" in line and "assign-lines" in line


def test_a_reference_equal_to_the_chosen_method_is_not_run_again():
    trials, words, fixations = _tables()
    from readgaze.lines import assign_lines

    lined, _ = assign_lines(fixations, words, trials, method="slice")
    agree = line_agreement(lined, words, trials, chosen="slice").sort("trial_id")
    assert agree["line_agreement_slice"].to_list() == [1.0, 1.0]
    voted, _ = assign_lines(fixations, words, trials, method="vote")
    same = (lined.with_columns(same=(pl.col("line_index") == voted["line_index"]).cast(pl.Float64))
            .group_by("trial_id").agg(pl.col("same").mean()).sort("trial_id"))
    assert agree["line_agreement_vote"].to_list() == same["same"].to_list()
    assert agree["line_agreement_vote"].to_list()[1] == 1.0          # steady: slice and the vote agree everywhere


def test_inspect_names_the_low_agreement_trials(prepared, tmp_path, capsys):
    from readgaze.cli import main
    from readgaze.data_prep.dataset import write_dataset

    source = tmp_path / "simulated.csv"
    source.write_text("simulated by readgaze.simulate.simulate_line_trials\n")
    write_dataset(tmp_path / "ds", prepared, sources={"fixations": [str(source)]}, config={"line_assigner": "nearest"})
    assert main(["inspect", str(tmp_path / "ds")]) == 0
    out = capsys.readouterr().out
    assert "warning: line assignment: 1 trial(s) below 95% agreement (drifting)" in out


def test_a_text_whose_lines_are_not_top_to_bottom_is_left_unchecked_and_counted():
    """A layout built from a fixation report's own positions can give lines out of vertical order; the references
    cannot run on it, so its trials get null agreement and a QC record, the other trials are still checked (this
    raised "line_y_px ... strictly increasing" from inside prep before)."""
    trials, words, fixations = _tables()
    # text_steady's line 0 moved below its last line: its midlines are no longer top to bottom
    last = words.filter(pl.col("text_id") == "text_steady")["line_index"].max()
    words = words.with_columns(pl.when((pl.col("text_id") == "text_steady") & (pl.col("line_index") == 0))
                               .then(last + 1).otherwise(pl.col("line_index")).alias("line_index"))
    out = prepare(trials, words, fixations, line_assigner="nearest")
    agreement = out.trials.sort("trial_id").select("trial_id", "line_agreement_slice")
    assert agreement.filter(pl.col("trial_id") == "steady")["line_agreement_slice"].item() is None
    assert agreement.filter(pl.col("trial_id") == "drifting")["line_agreement_slice"].item() < 0.95
    alone = prepare(*(t.filter(pl.col("trial_id") == "drifting") if "trial_id" in t.columns else
                      t.filter(pl.col("text_id") == "text_drifting") for t in _tables()), line_assigner="nearest")
    assert agreement.filter(pl.col("trial_id") == "drifting").drop("trial_id").rows() == \
        alone.trials.select("line_agreement_slice").rows()  # the checked trial as if the other were absent
    records = [r for r in out.qc.records if "not top to bottom" in r["reason"]]
    assert [(r["count"], r["detail"]) for r in records] == [(1, "text_steady")]
