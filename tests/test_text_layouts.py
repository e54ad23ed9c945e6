"""Text layouts from AOI files, passage files and IA rows (lines from box rows, hyphen splits)."""

from __future__ import annotations

import json

import polars as pl
import pytest

from readgaze.errors import ParseError
from readgaze.text import layout_from_ia_rows, read_aoi_file, read_passages


def test_potec_word_aois_build_eleven_lines(small_data):
    layout = read_aoi_file(small_data / "pymovements_examples" / "potec_word_aoi_b0.tsv", text_id="b0")
    w = layout.words
    assert w.height == 149
    assert w["ia_index"].to_list() == list(range(149))  # aoi 1.0 .. 149.0 -> 0-based
    assert w["word_index"].to_list() == list(range(149))
    assert w.row(0, named=True) | {} == {"ia_index": 0, "word": "Um", "left_px": 80.0, "right_px": 115.0,
                                          "top_px": 21.0, "bottom_px": 99.0, "line_index": 0, "word_index": 0,
                                          "text_id": "b0"}
    assert layout.n_lines == 11
    assert layout.lines["top_px"].to_list()[:3] == [21.0, 99.0, 181.0]
    assert layout.lines["top_px"][-1] == 837.0
    # reading order: line index never decreases along the ids
    assert (w["line_index"].diff().drop_nulls() >= 0).all()
    assert "Agarose-Sieb*v" in w["word"].to_list()


def test_character_aois_become_words(small_data):
    layout = read_aoi_file(small_data / "pymovements_examples" / "toy_text_1_1_aoi.csv")
    w = layout.words
    assert w["word"].to_list() == ["ABSTRACT", "pymovements:", "A", "Python", "package", "for", "eye",
                                   "movement", "data", "processing,", "ETRA", "2023"]
    assert w["line_index"].to_list() == [0] + [1] * 11
    first = w.row(0, named=True)
    assert (first["left_px"], first["right_px"], first["top_px"], first["bottom_px"]) == (400.0, 520.0, 122.0, 140.0)
    assert w["right_px"][-1] == pytest.approx(1493.0)


def test_passages_json_builds_every_passage(shared_data):
    path = shared_data / "line_assignment" / "passages.json"
    layouts = read_passages(path)
    raw = json.loads(path.read_text())["passages"]
    assert sorted(layouts) == sorted(raw)
    one = layouts["1A"]
    assert one.n_lines == 12 == raw["1A"]["n_lines"]
    assert one.words.height == len(raw["1A"]["words"])
    assert one.line_y_px.tolist() == raw["1A"]["line_y"]
    assert one.line_height_px == 64.0
    assert one.words.row(1, named=True)["word"] == "erano"
    assert one.words.row(1, named=True)["left_px"] == 392.0


def test_hyphen_split_word_keeps_one_index(small_data):
    ia = pl.read_csv(small_data / "onestop_sample" / "ia.csv", null_values=".", infer_schema_length=None)
    rows = ia.filter(pl.col("unique_trial_id") == "l25_1042_2_1_5_Adv_r0")
    layout = layout_from_ia_rows(rows, text_id="2_1_5_Adv")
    w = layout.words
    assert w.height == 142 and w["word_index"].n_unique() == 141
    split = w.filter(pl.col("ia_index").is_in([61, 62, 63, 64]))
    assert split["word"].to_list()[1:3] == ["51-year-", "old"]
    assert split["word_index"].to_list() == [61, 62, 62, 63]
    assert split["line_index"][2] == split["line_index"][1] + 1
    assert w["word_index"].max() == 140


def test_ia_rows_keep_labels_with_commas_and_quotes(small_data):
    from readgaze.io.csv import scan_csv

    layout = layout_from_ia_rows(scan_csv(small_data / "bad_inputs" / "BR-12.csv").collect())
    assert layout.words["word"].to_list() == ["The", "however,", '"Yes,"', "--", "end."]
    assert layout.words["ia_index"].to_list() == [0, 1, 2, 3, 4]  # 1-based ids re-based
    assert layout.n_lines == 1


def test_unknown_aoi_format_names_file(tmp_path):
    bad = tmp_path / "boxes.csv"
    bad.write_text("a,b\n1,2\n")
    with pytest.raises(ParseError, match="boxes.csv, row 1: columns"):
        read_aoi_file(bad)
