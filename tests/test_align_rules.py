"""Fixation -> word alignment: half-open boxes, shared edges, overlaps (BR-13), off text (BR-20),
and agreement with Data Viewer's own interest-area ids on the OneStop sample."""

from __future__ import annotations

import polars as pl
import pytest

from readgaze.align import align_words
from readgaze.errors import SchemaError


def _words(path) -> pl.DataFrame:
    return pl.read_csv(path).with_columns(pl.col("word_index").alias("ia_index"))


def test_br13_shared_edge_and_overlap(small_data):
    d = small_data / "bad_inputs"
    fx = pl.read_csv(d / "BR-13_fix.csv")
    out, qc = align_words(fx, _words(d / "BR-13_words.csv"), pl.DataFrame({"trial_id": ["tr1"], "text_id": ["t1"]}))
    out = out.collect()
    assert out.height == 3  # one row per fixation
    # x = 491 lies on Robert's right edge = Myslajek's left edge: the word starting there wins
    # x = 700 inside stops; x = 738 lies in stops [662, 741) and dead. [736, 845): the lower IA id wins
    assert out["word_index"].to_list() == [1, 2, 2]
    assert qc.total(reason="overlapping_boxes", action="warning") == 1
    assert qc.total(reason="in_overlapping_boxes", action="flagged") == 1
    assert qc.total(reason="off_text", action="flagged") == 0


def test_br20_off_text_and_off_screen_counted(small_data):
    d = small_data / "bad_inputs"
    raw = pl.read_csv(d / "BR-20.csv", null_values=".")
    fx = raw.select(pl.lit("p01_1").alias("trial_id"), (pl.col("CURRENT_FIX_INDEX") - 1).alias("fixation_index"),
                    pl.col("CURRENT_FIX_START").alias("start_ms"), pl.col("CURRENT_FIX_DURATION").alias("duration_ms"),
                    pl.col("CURRENT_FIX_X").alias("x_px"), pl.col("CURRENT_FIX_Y").alias("y_px"))
    trials = pl.DataFrame({"trial_id": ["p01_1"], "text_id": ["t1"]})
    out, qc = align_words(fx, _words(d / "BR-20_words.csv"), trials, screen_px=(1280, 1024))
    out = out.collect()
    assert out["word_index"].to_list() == [0, None, 1, None, 2]  # rows 2 and 4 of the file stay null
    assert qc.total(reason="off_text", action="flagged") == 2
    assert qc.total(reason="off_screen", action="flagged") == 2
    assert qc.total(action="dropped") == 0


def test_half_open_right_and_bottom_edges():
    words = pl.DataFrame({"text_id": "t", "ia_index": [0, 1], "word_index": [0, 1], "line_index": [0, 1],
                          "left_px": [0.0, 0.0], "right_px": [100.0, 100.0], "top_px": [0.0, 50.0],
                          "bottom_px": [50.0, 100.0]})
    fx = pl.DataFrame({"trial_id": "a", "fixation_index": [0, 1, 2, 3], "x_px": [0.0, 99.9, 100.0, 10.0],
                       "y_px": [0.0, 49.9, 10.0, 50.0]})
    out, _ = align_words(fx, words, pl.DataFrame({"trial_id": ["a"], "text_id": ["t"]}))
    # x = 100 is outside [0, 100); y = 50 belongs to the line starting there
    assert out.collect()["word_index"].to_list() == [0, 0, None, 1]


def test_missing_column_raises_schema_error():
    with pytest.raises(SchemaError, match="fixations table: missing column"):
        align_words(pl.DataFrame({"trial_id": ["a"]}), pl.DataFrame({"text_id": ["t"]}),
                    pl.DataFrame({"trial_id": ["a"], "text_id": ["t"]}))


def test_onestop_sample_matches_data_viewer_ids(small_data):
    from readgaze.io.onestop import load_onestop

    s = small_data / "onestop_sample"
    data = load_onestop(s / "fixations.csv", s / "ia.csv")
    fx = data.fixations.collect().rename({"word_index": "report_word_index"})
    out, qc = align_words(fx, data.words, data.trials, screen_px=(2560, 1440))
    out = out.collect()
    assert out.height == 2249
    same = out.select(pl.col("word_index").eq_missing(pl.col("report_word_index")).sum()).item()
    assert same == 2249  # 2,248 in-word fixations on Data Viewer's word + the one off-word fixation
    assert qc.total(reason="off_text", action="flagged") == 1
    assert qc.total(reason="off_screen", action="flagged") == 0
