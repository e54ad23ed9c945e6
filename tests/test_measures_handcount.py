"""Reading measures counted by hand on a five-word passage, plus the null semantics of BR-12/BR-20."""

from __future__ import annotations

import math

import polars as pl
import pytest

from readgaze.align import align_words
from readgaze.features import compute_trial_features
from readgaze.measures import compute_word_measures

# five words on one line, 100 px each: w0 [0,100) ... w4 [400,500), y [100, 150)
WORDS = pl.DataFrame({"text_id": "t", "ia_index": range(5), "word_index": range(5), "line_index": 0,
                      "word": ["one", "two", "three", "four", "five."],
                      "left_px": [0.0, 100.0, 200.0, 300.0, 400.0], "right_px": [100.0, 200.0, 300.0, 400.0, 500.0],
                      "top_px": 100.0, "bottom_px": 150.0})
# scanpath (word, ms): w0 200, w1 150, w1 100, w3 250 (skips w2), w2 180 (regression), w1 120 (regression),
# w3 160, w4 210, off-text 90 (y = 400), w4 100
WORD_X = [50.0, 150.0, 170.0, 350.0, 250.0, 120.0, 330.0, 420.0, 450.0, 460.0]
DUR = [200.0, 150.0, 100.0, 250.0, 180.0, 120.0, 160.0, 210.0, 90.0, 100.0]
Y = [125.0] * 8 + [400.0, 125.0]
START = [sum(DUR[:i]) + 20.0 * i for i in range(10)]
FIX = pl.DataFrame({"trial_id": "a", "fixation_index": range(10), "start_ms": START, "duration_ms": DUR,
                    "x_px": WORD_X, "y_px": Y})
TRIALS = pl.DataFrame({"trial_id": ["a"], "text_id": ["t"], "critical_span_start_index": [[1]],
                       "critical_span_end_index": [[3]]},
                      schema_overrides={"critical_span_start_index": pl.List(pl.Int32),
                                        "critical_span_end_index": pl.List(pl.Int32)})


@pytest.fixture(scope="module")
def measures() -> pl.DataFrame:
    aligned, _ = align_words(FIX, WORDS, TRIALS)
    return compute_word_measures(aligned, WORDS, TRIALS).collect()


@pytest.mark.parametrize("column, expected", [
    ("first_fixation_duration_ms", [200, 150, 180, 250, 210]),
    ("gaze_duration_ms", [200, 250, 180, 250, 310]),  # w4's run is not split by the off-text fixation
    ("total_fixation_duration_ms", [200, 370, 180, 410, 310]),
    ("regression_path_duration_ms", [200, 250, 300, 710, 310]),  # off-text 90 ms not added to w4
    ("selective_regression_path_duration_ms", [200, 250, 180, 410, 310]),
    ("single_fixation_duration_ms", [200, None, None, 250, None]),
    ("fixation_count", [1, 3, 1, 2, 2]),
    ("run_count", [1, 2, 1, 2, 1]),
    ("skipped", [False, False, True, False, False]),
    ("first_fixation_progressive", [True, True, False, True, True]),
    ("regression_in_count", [0, 1, 1, 0, 0]),
    ("regression_in", [False, True, True, False, False]),
    ("regression_out_count", [0, 0, 0, 1, 0]),  # w2 -> w1 comes after w3 was fixated: not counted
    ("regression_out", [False, False, False, True, False]),
    ("rereading_duration_ms", [0, 120, 0, 160, 0]),
    ("in_critical_span", [False, True, True, False, False]),
    ("landing_position", [0.5, 0.5, 0.5, 0.5, 0.2]),
])
def test_five_word_passage(measures, column, expected):
    assert measures["word_index"].to_list() == [0, 1, 2, 3, 4]
    assert measures[column].to_list() == expected


def test_five_word_trial_features(measures):
    aligned, _ = align_words(FIX, WORDS, TRIALS)
    f = compute_trial_features(aligned, WORDS, TRIALS).collect().row(0, named=True)
    assert f["fixation_count"] == 10
    assert f["skip_rate"] == pytest.approx(1 / 5)
    assert f["regression_rate"] == pytest.approx(2 / 6)  # 6 word changes, 2 leftward (w3->w2, w2->w1)
    assert f["mean_first_fixation_duration_ms"] == pytest.approx((200 + 150 + 180 + 250 + 210) / 5)
    assert f["reading_speed_wpm"] == pytest.approx(5 / ((START[-1] + DUR[-1]) / 60_000))
    # in-word fixations per word: 1, 3, 1, 2, 2 of 9
    p = [1 / 9, 3 / 9, 1 / 9, 2 / 9, 2 / 9]
    assert f["stationary_entropy_bits"] == pytest.approx(-sum(q * math.log2(q) for q in p))
    # transitions 0>1, 1>1, 1>3, 3>2, 2>1, 1>3, 3>4, 4>4: rows 1 (1/3, 2/3) and 3 (1/2, 1/2) are mixed
    h13 = -(1 / 3 * math.log2(1 / 3) + 2 / 3 * math.log2(2 / 3))
    assert f["gaze_transition_entropy_bits"] == pytest.approx(3 / 8 * h13 + 2 / 8 * 1.0)
    forward = [(x1 - x0, y1 - y0) for x0, x1, y0, y1 in zip(WORD_X, WORD_X[1:], Y, Y[1:]) if x1 > x0]
    assert f["mean_forward_saccade_amplitude_px"] == pytest.approx(
        sum(math.hypot(dx, dy) for dx, dy in forward) / len(forward))


def test_br12_never_fixated_words_have_null_durations(small_data):
    from readgaze.io.csv import scan_csv
    from readgaze.text import layout_from_ia_rows

    words = layout_from_ia_rows(scan_csv(small_data / "bad_inputs" / "BR-12.csv").collect(), text_id="t").words
    trials = pl.DataFrame({"trial_id": ["p01_1"], "text_id": ["t"]})
    fx = pl.DataFrame({"trial_id": "p01_1", "fixation_index": range(4), "duration_ms": [210.0, 180.0, 120.0, 130.0],
                       "x_px": [130.0, 300.0, 450.0, 500.0], "y_px": 175.0, "start_ms": [0.0, 300.0, 600.0, 800.0]})
    aligned, _ = align_words(fx, words, trials)
    m = compute_word_measures(aligned, words, trials).collect()
    never = m.filter(pl.col("word_index").is_in([1, 3]))  # "however," and "--"
    for col in ("first_fixation_duration_ms", "gaze_duration_ms", "regression_path_duration_ms",
                "single_fixation_duration_ms", "first_fixation_progressive", "regression_in", "regression_out",
                "landing_position"):
        assert never[col].to_list() == [None, None], col
    assert never["total_fixation_duration_ms"].to_list() == [0.0, 0.0]
    assert never["fixation_count"].to_list() == [0, 0]
    assert never["skipped"].to_list() == [True, True]
    fixated = m.filter(pl.col("word_index").is_in([0, 2, 4]))
    assert fixated["first_fixation_duration_ms"].to_list() == [210.0, 180.0, 120.0]
    assert fixated["first_fixation_progressive"].to_list() == [True, True, True]


def test_br20_measures_exclude_off_text_fixations(small_data):
    d = small_data / "bad_inputs"
    raw = pl.read_csv(d / "BR-20.csv", null_values=".")
    fx = raw.select(pl.lit("p01_1").alias("trial_id"), (pl.col("CURRENT_FIX_INDEX") - 1).alias("fixation_index"),
                    pl.col("CURRENT_FIX_START").alias("start_ms"), pl.col("CURRENT_FIX_DURATION").alias("duration_ms"),
                    pl.col("CURRENT_FIX_X").alias("x_px"), pl.col("CURRENT_FIX_Y").alias("y_px"))
    words = pl.read_csv(d / "BR-20_words.csv").with_columns(pl.col("word_index").alias("ia_index"))
    trials = pl.DataFrame({"trial_id": ["p01_1"], "text_id": ["t1"]})
    aligned, _ = align_words(fx, words, trials, screen_px=(1280, 1024))
    m = compute_word_measures(aligned, words, trials).collect()
    for col in ("first_fixation_duration_ms", "gaze_duration_ms", "total_fixation_duration_ms",
                "regression_path_duration_ms"):  # The's RPD would be 360 if the off-text 160 ms counted
        assert m[col].to_list() == [200.0, 180.0, 150.0], col
    assert compute_trial_features(aligned, words, trials).collect()["fixation_count"].to_list() == [5]


def test_two_regression_rates_two_names_one_computation_each():
    """prep's ``regression_rate`` is a share of word-to-word saccades (2 leftward of 6); the classical baselines'
    and the models' ``fixation_regression_rate`` a share of fixations with a known next word (2 of 7: w0>w1,
    w1>w1, w1>w3, w3>w2, w2>w1, w1>w3, w3>w4; w4>off, off>w4 and the last have no step). Both consumers of the
    second get the same number from the one expression (the datamodule once computed 2/10 under the first name)."""
    from readgaze import features as feat
    from readgaze.features import compute_feature_sets

    aligned, _ = align_words(FIX, WORDS, TRIALS)
    measures = compute_word_measures(aligned, WORDS, TRIALS)
    prep = compute_trial_features(aligned, WORDS, TRIALS, measures).collect()
    assert prep["regression_rate"].item() == pytest.approx(2 / 6) and "fixation_regression_rate" not in prep.columns
    baseline = compute_feature_sets(aligned, WORDS.lazy(), measures, TRIALS.lazy(), sets=("meziere",))
    assert baseline["fixation_regression_rate"].item() == pytest.approx(2 / 7)
    trials = TRIALS.lazy().select(pl.lit(0, pl.UInt32).alias("trial_row"), "trial_id", "text_id")
    words = feat.word_table(WORDS.lazy())
    trial_words = feat.trial_word_table(trials, words, measures)
    fixations = feat.fixation_table(trials, aligned.lazy(), trial_words)
    model = feat.trial_feature_table(trials, fixations, trial_words).collect()
    assert "regression_rate" not in feat.TRIAL_FEATURES
    assert model["fixation_regression_rate"].item() == pytest.approx(2 / 7)
