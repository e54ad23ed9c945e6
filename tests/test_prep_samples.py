"""`readgaze prep samples`: gaze-sample CSVs -> pymovements fixation detection -> the prep pipeline.

Real 1 kHz reading samples (pymovements' toy dataset, ``../shared/data/toy_reading_raw``; its AOI file is a text
none of the trials shows, so it serves as a layout, not as a check of word assignment). The unit tests read the
first 4 s of two trials (``tests/files/toy_reading_raw``); the whole trials are checked when ``../shared`` is present.
"""

from __future__ import annotations

import json

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from readgaze.cli import main
from readgaze.events import detect_fixations
from readgaze.io.samples import ScreenGeometry, read_gaze_csv

TOY_SCREEN = ScreenGeometry(1280, 1024, 38.0, 30.2, 68.0)  # pymovements toy_dataset.yaml
SCREEN_ARGS = ["--screen-px", "1280x1024", "--screen-cm", "38x30.2", "--distance-cm", "68"]
KEEP = ["trial_id", "fixation_index", "start_ms", "duration_ms", "x_px", "y_px"]


@pytest.fixture(scope="module")
def toy(small_data):
    return small_data / "toy_reading_raw"


def _prep(files, layout, out, *extra) -> int:
    return main(["prep", "samples", *map(str, files), "--layout", str(layout), *SCREEN_ARGS, "--out", str(out),
                 "--quiet", *extra])


def _manifest_count(out, reason: str) -> int:
    return sum(r["count"] for r in json.loads((out / "manifest.json").read_text())["qc"] if r["reason"] == reason)


def test_two_recordings_give_the_detectors_fixations_aligned_and_measured(toy, tmp_path):
    files = [toy / "trial_0_1.csv", toy / "trial_1_2.csv"]
    out = tmp_path / "ds"
    assert _prep(files, toy / "toy_text_1_1_aoi.csv", out) == 0
    expected = pl.concat([detect_fixations(read_gaze_csv(f, screen=TOY_SCREEN).collect(), screen=TOY_SCREEN)[0]
                          for f in files])
    fixations = pl.read_parquet(out / "fixations.parquet")
    assert_frame_equal(fixations.select(KEEP), expected.select(KEEP), check_dtypes=False)
    assert fixations.height == 34
    trials = pl.read_parquet(out / "trials.parquet")
    assert trials.select("trial_id", "participant_id", "trial", "n_samples").rows() == [
        ("trial_0_1", "trial_0_1", "trial_0_1", 4_000), ("trial_1_2", "trial_1_2", "trial_1_2", 4_000)]
    assert set(trials["text_id"]) == {"toy_text_1_1_aoi"}
    # the detector's counts reach the manifest, summed over the files: trial_1_2's 83 samples at -32768 are missing
    assert _manifest_count(out, "missing") == 83
    assert _manifest_count(out, "in fixation") == 6_595
    assert trials["n_missing_samples"].to_list() == [0, 83]
    # every fixation on a word box is counted once in the word measures
    measures = pl.read_parquet(out / "word_measures.parquet")
    assert measures["fixation_count"].sum() == fixations["word_index"].is_not_null().sum() > 0


def test_two_whole_recordings(shared_data, tmp_path):
    toy = shared_data / "toy_reading_raw"
    out = tmp_path / "ds"
    assert _prep([toy / "trial_0_1.csv", toy / "trial_1_2.csv"], toy / "toy_text_1_1_aoi.csv", out) == 0
    assert pl.read_parquet(out / "fixations.parquet").height == 161
    assert pl.read_parquet(out / "trials.parquet")["n_samples"].to_list() == [17_223, 22_294]
    assert _manifest_count(out, "missing") == 83
    assert _manifest_count(out, "in fixation") == 14_549 + 18_759


def test_the_missing_value_sentinel_can_be_turned_off(toy, tmp_path):
    out = tmp_path / "raw"
    assert _prep([toy / "trial_1_2.csv"], toy / "toy_text_1_1_aoi.csv", out, "--missing-value", "none") == 0
    assert _manifest_count(out, "missing") == 0  # -32768 read as a position: a sample far off screen


def test_renamed_columns_and_trials_within_a_file(toy, tmp_path, capsys):
    """A file per participant with a trial column and other column names (SB-SAT style): the same fixations."""
    raw = read_gaze_csv(toy / "trial_0_1.csv", screen=TOY_SCREEN).collect()
    half = raw.height // 2
    samples = (pl.read_csv(toy / "trial_0_1.csv", separator="\t")
               .rename({"timestamp": "time", "x": "x_left", "y": "y_left"})
               .with_columns(pl.when(pl.int_range(pl.len()) < half).then(pl.lit("a")).otherwise(pl.lit("b"))
                             .alias("trial_no"), pl.lit("p07").alias("subject")))
    samples.write_csv(tmp_path / "s1.csv")
    samples.with_columns(pl.lit("p08").alias("subject")).write_csv(tmp_path / "s2.csv")
    layout, columns = toy / "toy_text_1_1_aoi.csv", ["--columns", "time_ms=time", "x_px=x_left", "y_px=y_left",
                                                     "trial=trial_no"]
    out = tmp_path / "ds"
    assert _prep([tmp_path / "s1.csv", tmp_path / "s2.csv"], layout, out, *columns, "participant_id=subject") == 0
    trials = pl.read_parquet(out / "trials.parquet")
    assert trials.select("trial_id", "participant_id", "trial").rows() == [
        ("p07_a", "p07", "a"), ("p07_b", "p07", "b"), ("p08_a", "p08", "a"), ("p08_b", "p08", "b")]
    split = raw.with_columns(pl.when(pl.int_range(pl.len()) < half).then(pl.lit("p07_a")).otherwise(pl.lit("p07_b"))
                             .alias("trial_id"))
    expected, _ = detect_fixations(split, screen=TOY_SCREEN)
    got = pl.read_parquet(out / "fixations.parquet").filter(pl.col("trial_id").str.starts_with("p07_"))
    assert_frame_equal(got.select(KEEP), expected.select(KEEP), check_dtypes=False)
    # without a participant column the file names the participant
    assert _prep([tmp_path / "s1.csv", tmp_path / "s2.csv"], layout, tmp_path / "ds2", *columns) == 0
    assert pl.read_parquet(tmp_path / "ds2" / "trials.parquet")["trial_id"].to_list() == ["s1_a", "s1_b", "s2_a",
                                                                                          "s2_b"]
    # one participant's trial in two files would merge two recordings: an error naming both files
    samples.write_csv(tmp_path / "s3.csv")
    assert _prep([tmp_path / "s1.csv", tmp_path / "s3.csv"], layout, tmp_path / "ds3", *columns,
                 "participant_id=subject") == 2
    assert "trial 'p07_a' is in several gaze-sample files" in capsys.readouterr().err


def test_labels_join_on_the_trial_ids(toy, tmp_path):
    labels = tmp_path / "labels.csv"
    pl.DataFrame({"trial_id": ["trial_0_1", "trial_1_2"],
                  "reading_goal": ["ordinary", "information_seeking"]}).write_csv(labels)
    out = tmp_path / "ds"
    assert _prep([toy / "trial_0_1.csv", toy / "trial_1_2.csv"], toy / "toy_text_1_1_aoi.csv", out,
                 "--trials", str(labels)) == 0
    assert pl.read_parquet(out / "trials.parquet")["reading_goal"].to_list() == ["ordinary", "information_seeking"]


def test_bad_input_gets_one_message_naming_the_file(toy, small_data, tmp_path, capsys):
    layout = toy / "toy_text_1_1_aoi.csv"
    assert main(["prep", "samples", str(toy / "trial_0_1.csv"), "--layout", str(layout), "--out",
                 str(tmp_path / "a"), "--quiet"]) == 2
    assert "--screen-cm" in capsys.readouterr().err
    report = small_data / "onestop_sample" / "fixations.csv"
    assert _prep([report], layout, tmp_path / "b") == 2
    err = capsys.readouterr().err
    assert "fixations.csv" in err and "readgaze prep onestop" in err
    assert _prep([toy / "trial_0_1.csv"], layout, tmp_path / "c", "--columns", "x_px=PosX") == 2
    assert "x_px=PosX" in capsys.readouterr().err
    twin = tmp_path / "other"
    twin.mkdir()
    (twin / "trial_0_1.csv").write_bytes((toy / "trial_0_1.csv").read_bytes())
    assert _prep([toy / "trial_0_1.csv", twin / "trial_0_1.csv"], layout, tmp_path / "d") == 2
    err = capsys.readouterr().err
    assert "'trial_0_1' is in several gaze-sample files" in err and str(twin / "trial_0_1.csv") in err
    comma = tmp_path / "comma.csv"
    lines = (toy / "trial_0_1.csv").read_text().splitlines()
    lines[500] = lines[500].replace("\t", ";").replace(".", ",").replace(";", "\t")  # 390,6 on data row 500
    comma.write_text("\n".join(lines) + "\n")
    assert _prep([comma], layout, tmp_path / "e") == 2
    err = capsys.readouterr().err
    assert "comma.csv" in err and "501" in err and "not a number" in err


def test_a_time_column_in_microseconds_is_caught_and_converted(toy, tmp_path, capsys):
    layout = toy / "toy_text_1_1_aoi.csv"
    us = tmp_path / "tobii.csv"
    pl.read_csv(toy / "trial_0_1.csv", separator="\t").with_columns(pl.col("timestamp") * 1000).write_csv(us)
    assert _prep([us], layout, tmp_path / "bad") == 2
    err = capsys.readouterr().err
    assert "median step between samples is 1000 ms" in err and "--time-unit" in err
    assert _prep([us], layout, tmp_path / "us", "--time-unit", "us") == 0
    assert _prep([toy / "trial_0_1.csv"], layout, tmp_path / "ms") == 0
    got, want = (pl.read_parquet(tmp_path / d / "fixations.parquet").select(KEEP[1:]) for d in ("us", "ms"))
    assert got.height == 18
    assert_frame_equal(got, want)


def test_implausible_detections_and_layouts_are_warned_about(toy, small_data, tmp_path, capsys):
    layout = toy / "toy_text_1_1_aoi.csv"
    assert _prep([toy / "trial_0_1.csv"], layout, tmp_path / "a") == 0
    err = capsys.readouterr().err
    assert "only 4 of the 18 fixations (22%) lie on a word box" in err  # the toy AOI is not this trial's text
    assert "fewer than 1 fixation per second" not in err
    far = ["--screen-px", "1280x1024", "--screen-cm", "38x30.2", "--distance-cm", "680"]  # 68 cm, typed wrong
    assert main(["prep", "samples", str(toy / "trial_0_1.csv"), "--layout", str(layout), *far, "--out",
                 str(tmp_path / "b"), "--quiet"]) == 0
    assert "trial_0_1: 3 in 4.0 s; reading makes 3-5" in capsys.readouterr().err
    sparse = small_data / "bad_inputs" / "BR-11.csv"  # 130 samples, the first 100 without coordinates
    assert _prep([sparse], layout, tmp_path / "c") == 2
    assert "--columns, e.g. --columns time_ms=timestamp_ms" in capsys.readouterr().err
    assert _prep([sparse], layout, tmp_path / "d", "--columns", "time_ms=timestamp_ms") == 2
    assert "no fixation detected in 1 gaze-sample file(s) (130 samples)" in capsys.readouterr().err


def test_column_pairs_override_a_yaml_map_in_either_order(tmp_path):
    from readgaze.data_prep.columns import for_table, parse_columns
    from readgaze.errors import ConfigError

    yaml = tmp_path / "map.yaml"
    yaml.write_text("samples: {time_ms: t_us, x_px: gx, trial: TrialIndex}\n")
    header = ["t_us", "gx", "gx_right", "TrialIndex", "Stimulus"]
    for values in ([str(yaml), "trial=Stimulus"], ["trial=Stimulus", str(yaml)]):
        assert for_table(parse_columns(values), "samples", header) == {
            "time_ms": "t_us", "x_px": "gx", "trial": "Stimulus"}
    spec = parse_columns(["samples.x_px=gx_right", str(yaml)])
    assert for_table(spec, "samples", header)["x_px"] == "gx_right"  # the right eye, as asked on the command line
    assert for_table(parse_columns([str(yaml)]), "samples", header)["trial"] == "TrialIndex"
    yaml.write_text("sample: {time_ms: t_us}\n")  # a misspelled section was ignored, and the defaults then blamed
    with pytest.raises(ConfigError, match="unknown table 'sample'; did you mean samples"):
        parse_columns([str(yaml)])
    yaml.write_text("samples: {time: t_us}\n")
    with pytest.raises(ConfigError, match="unknown role 'time' of table samples; did you mean time_ms"):
        parse_columns([str(yaml)])


def test_a_tobii_style_study_with_comma_labels_keeps_its_settings_and_warnings(shared_data, tmp_path, capsys):
    """Tab-separated decimal-comma exports in microseconds, labels written as a plain CSV."""
    toy = shared_data / "toy_reading_raw"
    study = []
    for name, trials in (("P01", ["trial_0_1", "trial_1_1"]), ("P02", ["trial_2_1"])):
        parts = [pl.read_csv(toy / f"{t}.csv", separator="\t").with_columns(pl.lit(t).alias("Stimulus"))
                 for t in trials]
        frame = pl.concat(parts).select(
            (pl.col("timestamp") * 1000).cast(pl.Int64).alias("Recording timestamp [us]"),
            pl.col("x").cast(pl.String).str.replace(".", ",", literal=True).alias("Gaze point X"),
            pl.col("y").cast(pl.String).str.replace(".", ",", literal=True).alias("Gaze point Y"), "Stimulus",
            pl.lit(name).alias("Participant"))
        frame.write_csv(tmp_path / f"{name}.tsv", separator="\t")
        study.append(tmp_path / f"{name}.tsv")
    labels = tmp_path / "labels.csv"
    labels.write_text("participant_id,trial,reading_goal\nP01,trial_0_1,ordinary\nP01,trial_1_1,information_seeking\n"
                      "P02,trial_2_1,ordinary\n")
    out = tmp_path / "ds"
    assert _prep(study, toy / "toy_text_1_1_aoi.csv", out, "--separator", "tab", "--decimal-comma", "--time-unit",
                 "us", "--columns", "time_ms=Recording timestamp [us]", "x_px=Gaze point X", "y_px=Gaze point Y",
                 "trial=Stimulus", "participant_id=Participant", "--trials", str(labels)) == 0
    trials = pl.read_parquet(out / "trials.parquet")
    assert trials.select("trial_id", "reading_goal").rows() == [
        ("P01_trial_0_1", "ordinary"), ("P01_trial_1_1", "information_seeking"), ("P02_trial_2_1", "ordinary")]
    manifest = json.loads((out / "manifest.json").read_text())
    assert {k: manifest["config"][k] for k in ("time_unit", "distance_cm", "screen_cm", "detector", "separator")} == {
        "time_unit": "us", "distance_cm": 68.0, "screen_cm": "38x30.2", "detector": "ivt", "separator": "\t"}
    assert any(n.startswith("warning: only ") and "lie on a word box" in n for n in manifest["notes"])
    capsys.readouterr()
    assert main(["inspect", str(out)]) == 0
    shown = capsys.readouterr().out
    assert "  prep said: warning: only " in shown and "time_unit us" in shown and "detector ivt" in shown
    assert _prep(study, toy / "toy_text_1_1_aoi.csv", tmp_path / "x", "--separator", "tab", "--columns",
                 "time_ms=Recording timestamp [us]", "x_px=Gaze point x") == 2
    assert "did you mean 'Gaze point X'?" in capsys.readouterr().err


def test_a_layout_of_several_texts_takes_each_trials_text_from_the_labels(toy, shared_data, tmp_path, capsys):
    passages = shared_data / "line_assignment" / "passages.json"  # 12 passages, 1A ... 6B
    files = [toy / "trial_0_1.csv", toy / "trial_1_2.csv"]
    assert _prep(files, passages, tmp_path / "a") == 2
    assert "the layout holds 12 texts (1A, 1B, 2A, 2B, 3A, 3B, ...): name each trial's text" in capsys.readouterr().err
    labels = tmp_path / "labels.csv"
    labels.write_text("trial_id,text_id,reading_goal\ntrial_0_1,2B,ordinary\ntrial_1_2,5A,information_seeking\n")
    out = tmp_path / "ds"
    assert _prep(files, passages, out, "--trials", str(labels)) == 0
    trials = pl.read_parquet(out / "trials.parquet")
    assert trials.select("trial_id", "text_id", "item_id").rows() == [("trial_0_1", "2B", "2B"),
                                                                     ("trial_1_2", "5A", "5A")]
    words = pl.read_parquet(out / "words.parquet")
    assert sorted(words["text_id"].unique()) == ["2B", "5A"]  # the texts no trial shows are dropped, and counted
    measures = pl.read_parquet(out / "word_measures.parquet")
    per_trial = measures.group_by("trial_id").len().sort("trial_id")["len"].to_list()
    assert per_trial == [words.filter(pl.col("text_id") == t).select(pl.col("word_index").n_unique()).item()
                         for t in ("2B", "5A")]
    labels.write_text("trial_id,text_id\ntrial_0_1,2B\ntrial_1_2,9Z\n")
    assert _prep(files, passages, tmp_path / "b", "--trials", str(labels)) == 2
    assert "1 trial(s) name a text_id the layout lacks, e.g. ['9Z']" in capsys.readouterr().err
    assert _prep(files, passages, tmp_path / "c", "--text-id", "3A") == 0  # one text for every trial, as before
    assert set(pl.read_parquet(tmp_path / "c" / "trials.parquet")["text_id"]) == {"3A"}


def test_samples_of_no_trial_are_dropped_and_counted(toy, tmp_path):
    frame = pl.read_csv(toy / "trial_0_1.csv", separator="\t").with_columns(
        pl.when(pl.int_range(pl.len()) < 1000).then(None).otherwise(pl.lit("t1")).alias("trial_no"))
    frame.write_csv(tmp_path / "s.csv")
    out = tmp_path / "ds"
    assert _prep([tmp_path / "s.csv"], toy / "toy_text_1_1_aoi.csv", out, "--columns", "trial=trial_no") == 0
    assert _manifest_count(out, "no trial id (empty trial or participant cell)") == 1000
    assert pl.read_parquet(out / "trials.parquet")["n_samples"].to_list() == [frame.height - 1000]
