"""Simulated OneStop reports: the real sample's format, Data Viewer measures, and the real loader."""

from __future__ import annotations

import csv

import numpy as np
import polars as pl
import pytest

from readgaze.simulate import simulate_corpus, write_onestop_reports
from readgaze.simulate._ia_measures import ia_measures


@pytest.fixture(scope="module")
def reports(tmp_path_factory):
    corpus = simulate_corpus(n_participants=4, n_items=2, paragraphs_per_item=2, seed=2)
    fix_path, ia_path = write_onestop_reports(corpus, tmp_path_factory.mktemp("sim"))
    return corpus, fix_path, ia_path


def _read(path):
    return pl.read_csv(path, null_values=".", infer_schema_length=None)


def test_columns_order_and_dtypes_match_the_real_sample(reports, small_data):
    _, fix_path, ia_path = reports
    for ours, real in ((fix_path, small_data / "onestop_sample" / "fixations.csv"),
                       (ia_path, small_data / "onestop_sample" / "ia.csv")):
        a, b = _read(ours), _read(real)
        assert a.columns[:b.width] == b.columns  # the sample's columns, in its order, then extras
        wrong = {c: (a.schema[c], b.schema[c]) for c in b.columns if a.schema[c] != b.schema[c]}
        assert wrong == {}


def test_raw_text_conventions(reports):
    _, fix_path, ia_path = reports
    fix_lines = fix_path.read_text().splitlines()
    header = fix_lines[0].split(",")
    assert ",True," in fix_lines[1] or ",False," in fix_lines[1]  # pandas-style booleans
    fix = _read(fix_path)
    last = fix.group_by("unique_trial_id").agg(pl.col("CURRENT_FIX_INDEX").max())
    assert fix.group_by("unique_trial_id").len()["len"].sort().to_list() == last["CURRENT_FIX_INDEX"].sort().to_list()
    # after a trial's last fixation the amplitude field is empty and the direction is "."
    amp, direction = header.index("NEXT_SAC_AMPLITUDE"), header.index("NEXT_SAC_DIRECTION")
    trial_col = header.index("unique_trial_id")
    rows = list(csv.reader(fix_lines[1:]))
    last_rows = [r for r, nxt in zip(rows, rows[1:] + [None]) if nxt is None or nxt[0:2] != r[0:2]]
    assert len(last_rows) == fix["unique_trial_id"].n_unique()
    assert all(r[amp] == "" and r[direction] == "." for r in last_rows)
    assert all(r[amp] != "" for r, nxt in zip(rows, rows[1:]) if nxt[0:2] == r[0:2])
    assert trial_col > direction
    off = fix.filter(pl.col("CURRENT_FIX_INTEREST_AREA_ID").is_null())
    assert off.height > 0 and (off["CURRENT_FIX_INTEREST_AREA_INDEX"] == 0).all()
    assert ia_path.read_text().count('"[(') > 0  # spans as "[(start,end)]"


def test_interest_area_ids_one_based_in_fixations_zero_based_in_ia(reports):
    _, fix_path, ia_path = reports
    fix, ia = _read(fix_path), _read(ia_path)
    assert ia["IA_ID"].min() == 0 and fix["CURRENT_FIX_INTEREST_AREA_ID"].min() == 1
    joined = fix.drop_nulls("CURRENT_FIX_INTEREST_AREA_ID").join(
        ia.select("unique_trial_id", "IA_ID", "IA_LABEL", "IA_LEFT", "IA_RIGHT", "IA_TOP", "IA_BOTTOM"),
        left_on=["unique_trial_id", pl.col("CURRENT_FIX_INTEREST_AREA_ID") - 1], right_on=["unique_trial_id", "IA_ID"])
    assert joined.height == fix["CURRENT_FIX_INTEREST_AREA_ID"].count()
    assert (joined["CURRENT_FIX_INTEREST_AREA_LABEL"] == joined["IA_LABEL"]).all()
    inside = ((joined["IA_LEFT"] <= joined["CURRENT_FIX_X"]) & (joined["CURRENT_FIX_X"] < joined["IA_RIGHT"])
              & (joined["IA_TOP"] <= joined["CURRENT_FIX_Y"]) & (joined["CURRENT_FIX_Y"] < joined["IA_BOTTOM"]))
    assert inside.all()
    counts = ia.group_by("unique_trial_id").agg(pl.col("IA_FIXATION_COUNT").sum())
    on_word = fix.drop_nulls("CURRENT_FIX_INTEREST_AREA_ID").group_by("unique_trial_id").len()
    both = counts.join(on_word, on="unique_trial_id")
    assert (both["IA_FIXATION_COUNT"] == both["len"]).all()


def test_ia_measures_hand_counted():
    # fixated words in time order 0 1 1 3 2 (off) 4 1; word 5 never fixated
    word = np.array([0, 1, 1, 3, 2, -1, 4, 1])
    dur = np.array([100, 200, 50, 300, 150, 80, 120, 90])
    m = ia_measures(word, dur, 6)
    assert m["IA_FIXATION_COUNT"].tolist() == [1, 3, 1, 1, 1, 0]
    assert m["IA_DWELL_TIME"].tolist() == [100, 340, 150, 300, 120, 0]
    assert m["IA_FIRST_FIXATION_DURATION"].tolist() == [100, 200, 150, 300, 120, 0]
    assert m["IA_FIRST_RUN_DWELL_TIME"].tolist() == [100, 250, 150, 300, 120, 0]
    assert m["IA_LAST_RUN_DWELL_TIME"].tolist() == [100, 90, 150, 300, 120, 0]
    assert np.isnan(m["IA_SECOND_RUN_DWELL_TIME"]).tolist() == [True, False, True, True, True, True]
    assert m["IA_SECOND_RUN_DWELL_TIME"][1] == 90
    assert m["IA_SKIP"].tolist() == [0, 0, 1, 0, 0, 1]
    # the off-word fixation neither adds to word 4's path nor ends word 3's
    assert m["IA_REGRESSION_PATH_DURATION"].tolist() == [100, 250, 150, 450, 210, 0]
    assert m["IA_REGRESSION_IN_COUNT"].tolist() == [0, 1, 1, 0, 0, 0]
    assert m["IA_REGRESSION_OUT_COUNT"].tolist() == [0, 0, 0, 1, 1, 0]
    assert np.isnan(m["IA_REGRESSION_IN"][5]) and m["IA_REGRESSION_IN"][:5].tolist() == [0, 1, 1, 0, 0]


def test_real_onestop_loader_reads_the_reports(reports):
    from readgaze.io import onestop
    corpus, fix_path, ia_path = reports
    data = onestop.load_onestop(fix_path, ia_path)
    trials = data.trials.collect().sort("trial_id")
    ours = corpus.trials.sort("trial_id")
    assert trials["trial_id"].to_list() == ours["trial_id"].to_list()
    for col in ("participant_id", "item_id", "text_id", "reading_goal", "is_correct", "question",
                "critical_span_start_index", "critical_span_end_index"):
        assert trials[col].to_list() == ours[col].to_list(), col
    fix = data.fixations.collect()
    assert fix.height == corpus.fixations.height
    assert fix.sort("trial_id", "fixation_index")["duration_ms"].to_list() == \
        corpus.fixations.sort("trial_id", "fixation_index")["duration_ms"].to_list()


def test_ia_report_agrees_with_readgaze_measures(reports):
    from readgaze import measures
    from readgaze.io import onestop
    _, fix_path, ia_path = reports
    data = onestop.load_onestop(fix_path, ia_path)
    ours = measures.compute_word_measures(data.fixations, data.words, data.trials).collect()
    ia = _read(ia_path).join(data.trials.collect().select("trial_id", "unique_trial_id"), on="unique_trial_id")
    both = ours.join(ia.with_columns(pl.col("IA_ID").cast(pl.Int32).alias("word_index")),
                     on=["trial_id", "word_index"]).filter(pl.col("IA_FIXATION_COUNT") > 0)
    assert both.height > 500
    for mine, theirs in (("fixation_count", "IA_FIXATION_COUNT"), ("total_fixation_duration_ms", "IA_DWELL_TIME"),
                         ("first_fixation_duration_ms", "IA_FIRST_FIXATION_DURATION"),
                         ("gaze_duration_ms", "IA_FIRST_RUN_DWELL_TIME"),
                         ("regression_path_duration_ms", "IA_REGRESSION_PATH_DURATION"), ("skipped", "IA_SKIP"),
                         ("regression_in", "IA_REGRESSION_IN"), ("regression_out", "IA_REGRESSION_OUT")):
        assert (both[mine].cast(pl.Float64) == both[theirs].cast(pl.Float64)).all(), mine
