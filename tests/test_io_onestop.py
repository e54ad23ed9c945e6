"""OneStop loader on the real sample (scanpath-studio subset of OneStop; counts from its README).

The unit tests read ``tests/files/onestop_sample`` (the sample's trials of paragraphs 1, 4, 5 and 6, rows unchanged);
the whole-sample figures are checked on ``../shared/data/onestop_sample`` when it is present."""

from __future__ import annotations

import polars as pl
import pytest

from readgaze.errors import DataError
from readgaze.io.onestop import load_onestop
from readgaze.schema import validate


@pytest.fixture(scope="module")
def sample(small_data):
    d = small_data / "onestop_sample"
    return d, load_onestop(d / "fixations.csv", d / "ia.csv")


def test_counts_and_id_bases(sample):
    d, data = sample
    trials, fix, ia = data.trials.collect(), data.fixations.collect(), data.ia_rows.collect()
    assert fix.height == 2249 and fix["trial_id"].n_unique() == 16 and fix["participant_id"].n_unique() == 2
    assert ia.height == 2554 and ia["trial_id"].n_unique() == 24 and ia["participant_id"].n_unique() == 3
    assert trials.height == 24 and trials["fixation_count"].null_count() == 8  # l25_1042: no fixations
    assert trials.filter(pl.col("fixation_count").is_null())["participant_id"].unique().to_list() == ["l25_1042"]
    assert data.id_bases == {str(d / "fixations.csv"): 1, str(d / "ia.csv"): 0}
    for frame, table in ((data.trials, "trials"), (data.words, "words"), (data.fixations, "fixations")):
        validate(frame, table)


def test_whole_sample_counts(shared_data):
    """The sample as staged: 3,209 fixations of 24 trials, 3,922 IA rows of 36 (README); 20 versioned layouts."""
    d = shared_data / "onestop_sample"
    data = load_onestop(d / "fixations.csv", d / "ia.csv")
    trials, fix, ia = data.trials.collect(), data.fixations.collect(), data.ia_rows.collect()
    assert fix.height == 3209 and fix["trial_id"].n_unique() == 24 and fix["participant_id"].n_unique() == 2
    assert ia.height == 3922 and ia["trial_id"].n_unique() == 36 and ia["participant_id"].n_unique() == 3
    assert trials.height == 36 and trials["fixation_count"].null_count() == 12  # l25_1042: no fixations
    assert fix["ia_index"].is_not_null().sum() == 3208 and data.qc.total(reason="off_word", action="flagged") == 1
    assert sorted(trials["text_id"].unique().str.contains("_v").value_counts()["count"].to_list()) == [2, 20]
    assert data.qc.total(reason="layout_versions", action="flagged") == 20


def test_every_fixation_with_an_id_maps_to_the_same_label(sample):
    _, data = sample
    fix = data.fixations.collect()
    on_word = fix.filter(pl.col("ia_index").is_not_null())
    assert on_word.height == 2248
    j = on_word.join(data.ia_rows.collect(), on=["trial_id", "ia_index"], how="left")
    assert (j["ia_label"] == j["word"]).sum() == 2248  # 100 %
    # and each lies inside its (half-open) box
    inside = ((j["left_px"] <= j["x_px"]) & (j["x_px"] < j["right_px"])
              & (j["top_px"] <= j["y_px"]) & (j["y_px"] < j["bottom_px"]))
    assert inside.sum() == 2248
    off = fix.filter(pl.col("word_index").is_null())
    assert off.height == 1 and off["trial_id"].item().startswith("l37_1129")
    assert data.qc.total(reason="off_word", action="flagged") == 1
    assert data.qc.total(reason="ia_label_mismatch", action="flagged") == 0
    assert fix.select((pl.col("fixation_index").diff().over("trial_id").fill_null(1) == 1).all()).item()
    first = fix.filter(pl.col("trial_id") == "l37_1129_2_2_Adv_1_r0").head(2)
    assert first["fixation_index"].to_list() == [0, 1]  # file order kept
    assert first["ia_label"].to_list() == ["Robert", "Robert"] and first["word_index"].to_list() == [0, 0]


def test_trials_columns(sample):
    _, data = sample
    t = data.trials.collect()
    r = t.filter(pl.col("trial_id") == "l37_1129_2_2_Adv_1_r0").row(0, named=True)
    assert r["item_id"] == "2_2" and r["text_id"].startswith("2_2_Adv_1")
    assert r["reading_goal"] == "information_seeking" and r["repeated_reading"] is False and r["practice"] is False
    assert r["critical_span_start_index"] == [4] and r["critical_span_end_index"] == [44]
    assert r["is_correct"] is True and r["selected_answer"] == "A" and r["fixation_count"] == 178
    assert r["question"] == "How does Myslajek react to what he sees between the two paw prints?"
    assert t.schema["critical_span_start_index"] == pl.List(pl.Int32)
    two = t.filter(pl.col("distractor_span_indices") == "[(46,48), (48,50)]").row(0, named=True)
    assert two["distractor_span_start_index"] == [46, 48] and two["distractor_span_end_index"] == [48, 50]
    wrong = t.filter(~pl.col("is_correct"))["trial_id"].sort().to_list()
    assert wrong == ["l25_1042_2_1_Ele_6_r0", "l25_1042_2_2_Adv_1_r0"]
    assert t["reading_goal"].unique().to_list() == ["information_seeking"]


def test_hyphen_split_word_and_layout_versions(sample):
    _, data = sample
    w = data.words.collect()
    t = data.trials.collect()
    text = t.filter(pl.col("trial_id") == "l25_1042_2_1_Adv_5_r0")["text_id"].item()
    other = t.filter(pl.col("trial_id") == "l37_1129_2_1_Adv_5_r0")["text_id"].item()
    assert text != other and text.startswith("2_1_Adv_5_v") and other.startswith("2_1_Adv_5_v")
    split = w.filter(pl.col("text_id") == text).sort("ia_index")
    assert split.height == 142 and split["word_index"].n_unique() == 141
    pair = split.filter(pl.col("ia_index").is_in([62, 63]))
    assert pair["word"].to_list() == ["51-year-", "old"] and pair["word_index"].to_list() == [62, 62]
    assert pair["line_index"][1] == pair["line_index"][0] + 1
    assert split["word_index"][-1] == 140
    assert w.filter(pl.col("text_id") == other).height == 141
    # 7 of the 8 paragraphs were shown to l25_1042 with another layout; 1 text (2_2_Ele_4) keeps its plain id
    assert sorted(t["text_id"].unique().str.contains("_v").value_counts()["count"].to_list()) == [1, 14]
    assert data.qc.total(reason="layout_versions", action="flagged") == 14


def test_words_lines_and_features(sample):
    _, data = sample
    w = data.words.collect()
    assert w.select(pl.struct("text_id", "ia_index").is_unique().all()).item()
    lines = w.group_by("text_id").agg(pl.col("line_index").max() + 1, pl.col("top_px").n_unique())
    assert (lines["line_index"] == lines["top_px"]).all()
    robert = w.filter(pl.col("word") == "Robert").row(0, named=True)
    assert robert["frequency_zipf"] == pytest.approx(4.85, abs=1e-3)  # wordfreq zipf_frequency('Robert')
    assert robert["surprisal_bits"] == pytest.approx(9.164876773953438)
    assert robert["universal_pos"] == "PROPN" and robert["word_length"] == 6
    assert w.filter(pl.col("word") == "Myslajek")["frequency_zipf"].to_list()[0] == 0.0  # unknown word
    assert "IA_DWELL_TIME" not in w.columns and "IA_DWELL_TIME" in data.ia_rows.collect_schema().names()


def test_alias_and_base_disagreement(small_data, tmp_path):
    d = small_data / "onestop_sample"
    fix = pl.read_csv(d / "fixations.csv", null_values=".", infer_schema_length=None)
    ia = pl.read_csv(d / "ia.csv", null_values=".", infer_schema_length=None)
    fix.with_columns(pl.col("participant_id").replace({"l7_1090": "l38_97"})).write_csv(tmp_path / "f.csv")
    ia.with_columns(pl.col("participant_id").replace({"l7_1090": "l38_97"})).write_csv(tmp_path / "i.csv")
    data = load_onestop(tmp_path / "f.csv", tmp_path / "i.csv")
    f = data.fixations.collect()
    assert "l38_97" not in f["participant_id"].to_list() and (f["participant_id"] == "l38_104").sum() == 876
    assert data.qc.total(reason="participant_alias", table="fixations", action="changed") == 876
    assert data.trials.collect()["trial_id"].str.starts_with("l38_104_").sum() == 8
    ia.with_columns(pl.col("IA_ID") + 5).write_csv(tmp_path / "shifted.csv")
    with pytest.raises(DataError) as e:
        load_onestop(d / "fixations.csv", tmp_path / "shifted.csv")
    assert "fixations.csv" in str(e.value) and "shifted.csv" in str(e.value)


def test_layout_version_ids_are_stable_across_processes(sample):
    """The _v suffix is a SHA-1 of the layout and the grouping hash is seeded: same ids in a fresh process."""
    import subprocess
    import sys

    _, data = sample
    ours = data.trials.select("trial_id", "text_id").sort("trial_id").collect()
    assert ours.filter(pl.col("trial_id") == "l25_1042_2_1_Adv_5_r0")["text_id"].item() == "2_1_Adv_5_ve1fdcb"
    d, _ = sample
    code = ("from readgaze.io.onestop import load_onestop\n"
            f"t = load_onestop({str(d / 'fixations.csv')!r}, {str(d / 'ia.csv')!r}).trials.sort('trial_id').collect()\n"
            "print(';'.join(t['text_id']))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={**__import__("os").environ, "PYTHONHASHSEED": "12345"}).stdout.strip()
    assert out.split(";") == ours["text_id"].to_list()


def test_ia_rows_are_built_on_first_use(sample):
    d, _ = sample
    data = load_onestop(d / "fixations.csv", d / "ia.csv")
    assert "ia_rows" not in vars(data)  # the loader did not scan the IA measures
    rows = data.ia_rows
    assert "ia_rows" in vars(data) and rows is data.ia_rows
    assert {"IA_DWELL_TIME", "word_index", "text_id"} <= set(rows.collect_schema().names())
