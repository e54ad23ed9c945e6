"""The .ias reader and the grouping of character interest areas into words (readgaze.io.ias), the text repairs of
readgaze.io.textfix, and off-text fixations ending runs (compute_word_measures(off_text="dataviewer"))."""

from __future__ import annotations

import polars as pl
import pytest

from readgaze.errors import ParseError
from readgaze.io.ias import read_ias, read_ias_files, words_from_chars
from readgaze.io.textfix import repair_double_encoding, unquote
from readgaze.measures import compute_word_measures
from readgaze.qc import QCLog

GOOD = "0 RECTANGLE\t1\t190\t113\t215\t206\tK\n0 RECTANGLE\t2\t215\t113\t230\t206\tæ\n"


def test_reads_boxes_labels_and_question_screen(tmp_path):
    f = tmp_path / "a.ias"
    f.write_bytes(("\ufeff" + GOOD + "-417 RECTANGLE\t3\t190\t115\t360\t208\tHar\r\n\n").encode())
    got = read_ias(f)
    assert got.rows() == [(1, 190.0, 113.0, 215.0, 206.0, "K", 0, False),
                          (2, 215.0, 113.0, 230.0, 206.0, "æ", 0, False),
                          (3, 190.0, 115.0, 360.0, 208.0, "Har", -417, True)]


@pytest.mark.parametrize("line, row, text", [
    pytest.param("0 RECTANGLE\t3\t245\t113\t267\n", 3, "expected 7 TAB-separated fields", id="fields"),
    pytest.param("0 RECTANGLE\t3\t245\tx13\t267\t206\te\n", 3, "field top_px: expected a number", id="number"),
    pytest.param("0 ELLIPSE\t3\t245\t113\t267\t206\te\n", 3, "only RECTANGLE", id="shape"),
    pytest.param("RECTANGLE\t3\t245\t113\t267\t206\te\n", 3, "expected 'TIME RECTANGLE'", id="no-time"),
    pytest.param("0 RECTANGLE\t3\t245\t113\t240\t206\te\n", 3, "box right 240 < left 245", id="box"),
])
def test_a_broken_line_names_file_and_line(tmp_path, line, row, text):
    f = tmp_path / "part1_IA_1_0_chars.ias"
    f.write_text(GOOD + line)
    with pytest.raises(ParseError, match=text) as error:
        read_ias_files([f])
    assert error.value.row == row and error.value.file == str(f)
    assert str(error.value).startswith(f"part1_IA_1_0_chars.ias, row {row}: ")


def test_a_file_in_another_encoding_is_named(tmp_path):
    f = tmp_path / "latin.ias"
    f.write_bytes(GOOD.encode("latin-1"))
    with pytest.raises(ParseError, match="not utf-8 text.*encoding='cp1252'") as error:
        read_ias(f)
    assert error.value.row == 2  # the æ is on line 2
    assert read_ias(f, encoding="latin-1")["label"].to_list() == ["K", "æ"]


@pytest.fixture(scope="module")
def paragraph(shared_data):
    aois = shared_data / "copco" / "aois"
    both = read_ias_files([aois / "part1_IA_7905_0_chars.ias", aois / "part1_IA_7905_0_words.ias"])
    both = both.filter(~pl.col("question_screen")).with_columns(pl.lit("7905_0").alias("text_id"))
    level = pl.col("file").str.ends_with("chars.ias")
    return both.filter(level), both.filter(~level)


@pytest.mark.shared_data
def test_characters_go_to_the_word_box_holding_them(paragraph):
    chars, words = paragraph
    grouped = words_from_chars(chars, words=words)
    assert grouped["word_id"].null_count() == 0
    spelled = grouped.group_by("word_id", maintain_order=True).agg(pl.col("label").str.join(""))
    assert spelled["label"].to_list() == words["label"].to_list()  # every word spelled from its letters
    assert spelled["label"].head(5).to_list() == ["I", "slutningen", "af", "juli", "1852"]


@pytest.mark.shared_data
def test_labels_and_whitespace_group_a_char_export_without_ias_words_or_map(paragraph):
    """A character export whose spaces are interest areas (as many labs export it), grouped with no word layout and
    no table: the same words as the word .ias, the space IAs going to the word before them."""
    chars, words = paragraph
    truth = words_from_chars(chars, words=words)
    last = truth.filter(pl.col("word_id") != pl.col("word_id").shift(-1).fill_null(-1))
    spaces = last.filter(pl.col("word_id") != truth["word_id"].max()).with_columns(
        pl.col("right_px").alias("left_px"), pl.lit(" ").alias("label"), pl.col("ia_id") + 0.5)
    export = (pl.concat([truth.with_columns(pl.col("ia_id").cast(pl.Float64)), spaces.cast({"ia_id": pl.Float64})])
              .sort("ia_id").drop("word_id"))
    grouped = words_from_chars(export, by="text_id")
    letters = grouped.filter(pl.col("label") != " ")
    assert letters["word_id"].to_list() == (truth["word_id"] - 1).to_list()
    on_space = grouped.filter(pl.col("label") == " ")
    assert on_space.height == words.height - 1 and on_space["word_id"].is_not_null().all()
    before = grouped["word_id"].shift(1).filter(grouped["label"] == " ")
    assert on_space["word_id"].to_list() == before.to_list()


def test_double_encoding_repaired_and_lost_bytes_counted():
    values, counts = repair_double_encoding(pl.Series(["på", "pÃ¥", "Ã¦", "â€“", "Ì\ufffd", "Ã", None]))
    assert values.to_list() == ["på", "på", "æ", "–", "Ì\ufffd", "Ã", None]
    assert counts == {"repaired": 3, "unrepairable": 1}


def test_unquote_reads_a_quoted_full_stop_and_a_lone_quote():
    got = pl.DataFrame({"v": ['"."', ".", '"""', '"e"', '"a""b"', "7"]}).select(unquote("v").alias("v"))["v"].to_list()
    assert got == [".", ".", '"', "e", 'a"b', "7"]


def test_an_off_text_fixation_ends_a_run_as_in_data_viewer():
    """word 0, off text, word 0, word 1: Data Viewer's run ends at the off-text fixation (its run ids in CopCo's
    reports); first fixation, total, count and go-past do not change."""
    words = pl.DataFrame({"text_id": "t", "ia_index": [0, 1], "word_index": [0, 1], "left_px": [0.0, 10.0],
                          "right_px": [10.0, 20.0]})
    fx = pl.DataFrame({"trial_id": "a", "fixation_index": [0, 1, 2, 3], "duration_ms": [200.0, 150.0, 100.0, 250.0],
                       "word_index": [0, None, 0, 1]})
    trials = pl.DataFrame({"trial_id": ["a"], "text_id": ["t"]})
    dv = compute_word_measures(fx, words, trials, off_text="dataviewer").collect().row(0, named=True)
    skip = compute_word_measures(fx, words, trials, off_text="skip").collect().row(0, named=True)
    assert (dv["gaze_duration_ms"], dv["run_count"], dv["rereading_duration_ms"]) == (200.0, 2, 100.0)
    assert (skip["gaze_duration_ms"], skip["run_count"]) == (300.0, 1)
    assert dv["single_fixation_duration_ms"] == 200.0 and skip["single_fixation_duration_ms"] is None
    for same in ("first_fixation_duration_ms", "total_fixation_duration_ms", "fixation_count",
                 "regression_path_duration_ms"):
        assert dv[same] == skip[same]
    for compiled in (True, False):
        again = compute_word_measures(fx, words, trials, off_text="dataviewer", compiled=compiled).collect()
        assert again.row(0, named=True)["gaze_duration_ms"] == 200.0


@pytest.mark.shared_data
def test_char_layout_with_and_without_a_words_file(shared_data, tmp_path):
    """Two screens: one with its words file (word boxes), one with only its characters, spaces added as IAs (labels
    and whitespace): both give the same words, ranks and character -> box map as the words file does."""
    from readgaze.io.charlayout import char_layout, ias_index

    aois = shared_data / "copco" / "aois"
    index = ias_index(aois, r"part(?P<part>\d+)_IA_(?P<speech>7905)_(?P<paragraph>0|1)_(?P<level>chars|words)\.ias")
    assert sorted(index.select("paragraph", "level").rows()) == [("0", "chars"), ("0", "words"), ("1", "chars"),
                                                                 ("1", "words")]
    ias = read_ias_files(index["path"].to_list()).join(
        index.select(pl.col("path").alias("file"), "level", pl.col("paragraph").alias("text_id")), on="file")
    words, chars = char_layout(ias, by="text_id")
    # screen "1" again, as an export without a words file and with a space IA after each word
    one = chars.filter(pl.col("text_id") == "1")
    last = one.filter(pl.col("word_id") != pl.col("word_id").shift(-1).fill_null(-1)).head(-1)
    spaces = last.with_columns(pl.col("right_px").alias("left_px"), pl.lit(" ").alias("label"),
                               pl.col("ia_id") * 10 + 5)
    export = pl.concat([one.with_columns(pl.col("ia_id") * 10), spaces]).sort("ia_id").with_columns(
        pl.lit("1b").alias("text_id"), pl.lit("chars").alias("level"), pl.lit(False).alias("question_screen"),
        pl.lit(0, pl.Int64).alias("time_ms"), pl.lit("x").alias("file")).drop("word_id")
    qc = QCLog()
    words_b, chars_b = char_layout(export.select(ias.columns), by="text_id", qc=qc)
    assert words_b["word"].to_list() == words.filter(pl.col("text_id") == "1")["word"].to_list()
    assert chars_b.filter(pl.col("label") != " ")["word_id"].to_list() == one["word_id"].to_list()
    assert {r["reason"]: r["count"] for r in qc.records}["screen without a words file: words from the labels and "
                                                         "whitespace"] == 1
    assert (words["word_index"] == words["ia_index"]).all()  # no word of these two screens is broken across lines
    assert words.filter(pl.col("text_id") == "0")["word"].head(3).to_list() == ["I", "slutningen", "af"]
