"""A lab's own export to a dataset folder: labels from a table, column maps, dialects, word boxes, mode hints.

Issue 17's frictions 1-3, 6, 9, 13 and 14 (the training end of the path is in test_training_lab_export.py).
"""

from __future__ import annotations

import json

import polars as pl
import pytest

from readgaze.cli import main
from readgaze.simulate.lab_export import write_lab_export

KEYS = ["--trials-on", "participant_id=subject", "trial=trial_no"]
TEXT = ["--columns", "ia.text_id=passage", "trials.item_id=passage_id"]


@pytest.fixture(scope="module")
def export(tmp_path_factory):
    return write_lab_export(tmp_path_factory.mktemp("export"), n_participants=6, n_items=3)


def prep(*args) -> int:
    return main(["prep", *map(str, args), "--quiet"])


def test_labels_table_joins_on_named_keys(export, tmp_path, capsys):
    out = tmp_path / "ds"
    assert prep("dataviewer", "--fixation-report", export["fixations"], "--ia-report", export["ia"], *TEXT,
                "--trials", export["labels"], *KEYS, "--out", out) == 0
    trials = pl.read_parquet(out / "trials.parquet").sort("participant_id", "trial")
    labels = pl.read_csv(export["labels"]).sort("subject", "trial_no")
    assert trials.height == labels.height == 18
    assert trials["reading_goal"].to_list() == labels["reading_goal"].to_list()
    assert trials["is_correct"].to_list() == labels["is_correct"].to_list()
    assert trials["item_id"].to_list() == labels["passage_id"].to_list()  # items from the table, not one per trial
    assert trials["item_id"].n_unique() == 3 and trials["text_id"].n_unique() == 6  # 3 items x 2 levels
    assert set(trials["reading_goal"]) == {"ordinary", "information_seeking"}
    err = capsys.readouterr().err
    assert "18 of 18 trials matched a row of labels.csv on participant_id = subject, trial = trial_no" in err


def test_labels_matched_by_name_and_unmatched_counted(export, tmp_path, capsys):
    labels = pl.read_csv(export["labels"]).rename({"subject": "RECORDING_SESSION_LABEL", "trial_no": "TRIAL_INDEX"})
    extra = pl.DataFrame({"RECORDING_SESSION_LABEL": ["s99"], "TRIAL_INDEX": [1]})
    table = tmp_path / "labels.parquet"
    pl.concat([labels.slice(2), extra], how="diagonal").write_parquet(table)  # 2 trials lack a row, 1 row no trial
    out = tmp_path / "ds"
    assert prep("dataviewer", "--fixation-report", export["fixations"], "--ia-report", export["ia"],
                "--trials", table, "--out", out) == 0
    err = capsys.readouterr().err
    assert "16 of 18 trials matched" in err
    assert "on participant_id = RECORDING_SESSION_LABEL, trial = TRIAL_INDEX" in err
    assert "2 trial(s) have no row (labels left null), e.g. s01_1, s01_2" in err
    assert "1 row(s) of labels.parquet match no trial, e.g. [('s99', '1')]" in err
    manifest = json.loads((out / "manifest.json").read_text())
    counts = {(r["table"], r["reason"]): r["count"] for r in manifest["qc"] if r["step"] == "labels"}
    assert counts == {("trials", "no_label_row"): 2, ("labels", "row_without_trial"): 1}
    trials = pl.read_parquet(out / "trials.parquet")
    assert trials["reading_goal"].null_count() == 2


def test_labels_zero_matches_names_both_files_and_keys(export, tmp_path, capsys):
    table = tmp_path / "labels.csv"
    pl.read_csv(export["labels"]).with_columns(pl.col("trial_no") + 100).write_csv(table)
    assert prep("dataviewer", "--fixation-report", export["fixations"], "--ia-report", export["ia"],
                "--trials", table, *KEYS, "--out", tmp_path / "ds") == 2
    err = capsys.readouterr().err
    assert "no trial of fixations.tsv matches a row of labels.csv on participant_id = subject, trial = trial_no" in err
    assert "Traceback" not in err


def test_labels_repeated_key_and_bad_goal_are_errors(export, tmp_path, capsys):
    labels = pl.read_csv(export["labels"])
    twice = tmp_path / "twice.csv"
    pl.concat([labels, labels.head(1)]).write_csv(twice)
    assert prep("dataviewer", "--fixation-report", export["fixations"], "--ia-report", export["ia"],
                "--trials", twice, *KEYS, "--out", tmp_path / "a") == 2
    assert "2 rows repeat a key (subject, trial_no): row 2: subject=s01, trial_no=1" in capsys.readouterr().err
    coded = tmp_path / "coded.csv"
    labels.with_columns(pl.col("reading_goal").replace({"ordinary": "no_preview"})).write_csv(coded)
    assert prep("dataviewer", "--fixation-report", export["fixations"], "--ia-report", export["ia"],
                "--trials", coded, *KEYS, "--out", tmp_path / "b") == 2
    assert "reading_goal: got ['no_preview'], expected ['ordinary', 'information_seeking']" in capsys.readouterr().err


def test_renamed_export_with_role_pairs_and_list_roles(tmp_path, capsys):
    export = write_lab_export(tmp_path / "renamed", n_participants=4, n_items=2, renamed=True)
    out = tmp_path / "ds"
    pairs = ["participant_id=Subject", "trial=Trial", "fixation_index=FixNr", "start_ms=FixStart",
             "duration_ms=FixDur", "x_px=PosX", "y_px=PosY", "fixations.ia_id=IA_Nr", "ia_label=IA_Word"]
    assert prep("dataviewer", "--fixation-report", export["fixations"], "--ia-report", export["ia"],
                "--columns", *pairs, "--trials", export["labels"], *KEYS, "--out", out) == 0
    fix = pl.read_parquet(out / "fixations.parquet")
    raw = pl.read_csv(export["fixations"], separator="\t", null_values=".")
    assert fix.height == raw.height and fix["duration_ms"].sum() == raw["FixDur"].sum()
    assert prep("dataviewer", "--fixation-report", export["fixations"], "--ia-report", export["ia"],
                "--columns", "x_px=PosXX", "--out", tmp_path / "typo") == 2
    assert "--columns x_px=PosXX: no input file has such a column" in capsys.readouterr().err
    assert prep("dataviewer", "--fixation-report", export["fixations"], "--columns", "xpx=PosX",
                "--out", tmp_path / "typo2") == 2
    assert "unknown role 'xpx'; did you mean x_px" in capsys.readouterr().err
    assert main(["prep", "--list-roles"]) == 0
    roles = capsys.readouterr().out
    assert "duration_ms     CURRENT_FIX_DURATION" in roles and "required" in roles and "IA_LABEL" in roles


def test_decimal_comma_export(export, tmp_path):
    """Friction 6: a ';'-separated export with decimal commas reads with --separator ';' --decimal-comma."""
    fix = pl.read_csv(export["fixations"], separator="\t", null_values=".").with_columns(
        (pl.col("CURRENT_FIX_X") + 0.25).alias("CURRENT_FIX_X"))
    text = fix.with_columns(pl.col("CURRENT_FIX_X").cast(pl.String).str.replace(".", ",", literal=True)).write_csv(
        separator=";", null_value=".")
    path, ia = tmp_path / "fix_de.csv", tmp_path / "ia_de.csv"
    path.write_text(text)
    ia.write_text(export["ia"].read_text().replace("\t", ";"))
    out = tmp_path / "ds"
    assert prep("dataviewer", "--fixation-report", path, "--ia-report", ia, "--separator", ";",
                "--decimal-comma", "--out", out) == 0
    got = pl.read_parquet(out / "fixations.parquet")
    assert got["x_px"].sum() == pytest.approx(fix["CURRENT_FIX_X"].sum())


def test_format_csv_and_both(export, tmp_path):
    """Friction 14: CSV tables for R users (nested columns as JSON text)."""
    out = tmp_path / "both"
    assert prep("dataviewer", "--fixation-report", export["fixations"], "--ia-report", export["ia"],
                "--format", "both", "--out", out) == 0
    for name in ("trials", "words", "fixations", "word_measures"):
        assert pl.read_csv(out / f"{name}.csv").height == pl.read_parquet(out / f"{name}.parquet").height
    csv_only = tmp_path / "csv"
    assert prep("dataviewer", "--fixation-report", export["fixations"], "--ia-report", export["ia"],
                "--format", "csv", "--out", csv_only) == 0
    assert not list(csv_only.glob("*.parquet")) and (csv_only / "word_measures.csv").is_file()


def test_wrong_mode_hints(small_data, export, tmp_path, capsys):
    """Friction 13: an .asc to prep dataviewer, an IA report as fixation report, a fixation report as IA report."""
    asc = small_data / "eyelink_asc" / "eyelink_monocular_example.asc"
    assert prep("dataviewer", "--fixation-report", asc, "--ia-report", export["ia"], "--out", tmp_path / "a") == 2
    err = capsys.readouterr().err
    assert "looks like an EyeLink .asc recording: use  readgaze prep asc FILE.asc --layout LAYOUT" in err
    assert "Schema" not in err and "Traceback" not in err
    assert prep("dataviewer", "--fixation-report", export["ia"], "--out", tmp_path / "b") == 2
    assert "looks like a Data Viewer interest-area report" in capsys.readouterr().err
    assert prep("asc", export["fixations"], "--layout", export["ia"], "--out", tmp_path / "c") == 2
    assert "looks like a Data Viewer fixation report: use  readgaze prep dataviewer" in capsys.readouterr().err


def test_sbsat_fixation_report_alone_with_its_trial_report(small_data, tmp_path, capsys):
    """Friction 2: SB-SAT's real fixation report (no IA report) + its real trial report as the labels table."""
    fix = small_data / "pymovements_examples" / "18sat_fixfinal.csv"
    trial_report = small_data / "sbsat" / "fixation" / "18sat_trialfinal.csv"
    assert prep("dataviewer", "--fixation-report", fix, "--ia-report", fix, "--out", tmp_path / "x") == 2
    assert "--ia-report is a fixation report" in capsys.readouterr().err
    out = tmp_path / "sb"
    assert prep("dataviewer", "--source", "sbsat", "--fixation-report", fix, "--trials", trial_report,
                "--out", out) == 0
    err = capsys.readouterr().err
    assert "1 of 1 trials matched a row of 18sat_trialfinal.csv on trial_id = trial_id" in err
    trials = pl.read_parquet(out / "trials.parquet")
    assert trials.select("trial_id", "participant_id", "item_id", "text_id").row(0) == (
        "msd001_1", "msd001", "dickens", "reading-dickens-1")
    fx = pl.read_parquet(out / "fixations.parquet")
    raw = pl.read_csv(fix, null_values=".")
    assert fx.height == raw.height == 112
    # the report's own word per fixation is kept (line assigner 'report'); off-word fixations stay null
    assert fx["word_index"].null_count() == raw["CURRENT_FIX_INTEREST_AREA_ID"].null_count()
    assert (fx["word_index"].drop_nulls() + 1).to_list() == raw["CURRENT_FIX_INTEREST_AREA_ID"].drop_nulls().to_list()
    words = pl.read_parquet(out / "words.parquet")
    assert words.filter(pl.col("ia_index") == 23)["word"].item() == "long"  # IA 24 of the report's first fixation
    wm = pl.read_parquet(out / "word_measures.parquet")
    assert wm["fixation_count"].sum() == raw["CURRENT_FIX_INTEREST_AREA_ID"].drop_nulls().len()
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["config"]["line_assigner"] == "report"
    assert {r["reason"] for r in manifest["qc"] if r["step"] == "load"} >= {"boxes_estimated_from_fixations"}


def test_fixation_report_with_a_pymovements_word_aoi_table(small_data, tmp_path):
    """Friction 2: word boxes from a separate PoTeC word AOI file (one text every trial shows)."""
    aoi = small_data / "pymovements_examples" / "potec_word_aoi_b0.tsv"
    boxes = pl.read_csv(aoi, separator="\t")
    centres = boxes.head(5).select(((pl.col("start_x") + pl.col("end_x")) / 2).alias("CURRENT_FIX_X"),
                                   ((pl.col("start_y") + pl.col("end_y")) / 2).alias("CURRENT_FIX_Y"))
    fix = centres.with_columns(RECORDING_SESSION_LABEL=pl.lit("p1"), TRIAL_INDEX=pl.lit(1),
                               CURRENT_FIX_DURATION=pl.lit(200), CURRENT_FIX_INDEX=pl.int_range(1, 6))
    path = tmp_path / "fix.csv"
    fix.write_csv(path)
    out = tmp_path / "ds"
    assert prep("dataviewer", "--fixation-report", path, "--aoi", aoi, "--ia-id-base", "1", "--language", "de",
                "--line-assigner", "nearest", "--out", out) == 0
    fx = pl.read_parquet(out / "fixations.parquet")
    words = pl.read_parquet(out / "words.parquet")
    assert [words["word"][i] for i in fx["word_index"]] == boxes["character"].head(5).to_list()


def test_asc_with_no_fixation_on_a_word_and_a_multi_trial_ia_layout(small_data, tmp_path, capsys):
    """Friction 3: no raw ValueError when no fixation lands on a word; a multi-trial IA layout names the file."""
    asc = small_data / "eyelink_asc" / "eyelink_monocular_example.asc"
    toy = small_data / "pymovements_examples" / "toy_text_1_1_aoi.csv"
    out = tmp_path / "a"
    assert prep("asc", asc, "--layout", toy, "--line-assigner", "nearest", "--out", out) == 0
    assert "none of the 2 fixations lies on a word box" in capsys.readouterr().err
    wm = pl.read_parquet(out / "word_measures.parquet")
    assert wm.height == 12 and wm["first_fixation_duration_ms"].null_count() == 12
    ia = small_data / "onestop_sample" / "ia.csv"
    assert prep("asc", asc, "--layout", ia, "--out", tmp_path / "b") == 2
    err = capsys.readouterr().err
    assert err.startswith("readgaze prep: error: ia.csv: the layout holds 24 texts (l25_1042_17, ")
    assert "pass --text-id when every trial shows one; Data Viewer reports: readgaze prep dataviewer" in err


def test_asc_trials_join_labels_on_the_recording_trial(small_data, tmp_path, capsys):
    a = small_data / "eyelink_asc"
    files = [a / "eyelink_monocular_example.asc", a / "eyelink_binocular_example.asc"]
    layout = small_data / "pymovements_examples" / "potec_word_aoi_b0.tsv"
    first = tmp_path / "first"
    assert prep("asc", *files, "--layout", layout, "--language", "de", "--out", first) == 0
    trials = pl.read_parquet(first / "trials.parquet")
    table = tmp_path / "labels.csv"
    trials.select("participant_id", "trial").with_columns(
        pl.Series("reading_goal", ["ordinary", "information_seeking"][: trials.height])).write_csv(table)
    out = tmp_path / "labelled"
    assert prep("asc", *files, "--layout", layout, "--language", "de", "--trials", table, "--out", out) == 0
    got = pl.read_parquet(out / "trials.parquet").sort("participant_id")
    assert got["reading_goal"].to_list() == pl.read_csv(table).sort("participant_id")["reading_goal"].to_list()


def test_onestop_mode_takes_a_column_map(small_data, tmp_path):
    """Friction 9: prep onestop --columns (the sample with its participant column renamed)."""
    d = small_data / "onestop_sample"
    fix, ia = tmp_path / "fixations.csv", tmp_path / "ia.csv"
    fix.write_text((d / "fixations.csv").read_text().replace("participant_id", "subject", 1))
    ia.write_text((d / "ia.csv").read_text().replace("participant_id", "subject", 1))
    out = tmp_path / "os"
    assert prep("onestop", "--fixation-report", fix, "--ia-report", ia, "--columns", "participant_id=subject",
                "--out", out) == 0
    assert pl.read_parquet(out / "trials.parquet")["participant_id"].n_unique() == 2


def test_inspect_dataset_shows_labels_per_task(export, tmp_path, capsys):
    """Friction 11: inspect on a dataset folder reveals the labels, the folds and a label constant per participant."""
    out = tmp_path / "ds"
    assert prep("dataviewer", "--fixation-report", export["fixations"], "--ia-report", export["ia"], *TEXT,
                "--trials", export["labels"], *KEYS, "--out", out) == 0
    capsys.readouterr()
    assert main(["inspect", str(out)]) == 0
    text = capsys.readouterr().out
    labels = pl.read_csv(export["labels"])
    seekers = labels.filter(pl.col("reading_goal") == "information_seeking").height
    assert (f"task reading_goal: 18 labelled trials; labels information_seeking {seekers}, ordinary {18 - seekers}"
            in text)
    assert "participants 6, items 3; folds: not with 10: use --data.n_folds 3 (or fewer, at least 3)" in text
    assert "warning: the label is constant within every participant (6)" in text
    correct = labels["is_correct"].sum()
    assert f"task comprehension: 18 labelled trials; labels correct {correct}, incorrect {18 - correct}" in text
    assert "task goal_question: not available (no onestopqa_question_id column" in text
    bare = tmp_path / "bare"
    assert prep("dataviewer", "--fixation-report", export["fixations"], "--ia-report", export["ia"],
                "--out", bare) == 0
    err = capsys.readouterr().err
    assert "no label columns (reading_goal, is_correct): ready for readgaze predict" in err
    assert main(["inspect", str(bare)]) == 0
    assert "task reading_goal: not available (no reading_goal column; attach labels" in capsys.readouterr().out


def test_one_class_label_is_warned(tmp_path, capsys):
    from readgaze.inspect import describe_tasks

    trials = pl.DataFrame({"trial_id": ["a", "b", "c"], "participant_id": ["p1", "p2", "p3"],
                           "item_id": ["i1", "i2", "i3"], "reading_goal": ["information_seeking"] * 3})
    lines = describe_tasks(trials)
    assert "    warning: one class only (information_seeking): a model of this task measures nothing" in lines


def test_prep_asc_passes_encoding_and_screen_size_to_the_reader(small_data, tmp_path, capsys):
    """``prep asc --encoding`` decodes a cp1252 recording; ``--screen-px`` stands in for a missing DISPLAY_COORDS."""
    samples = "\n".join(f"{1002 + 2 * i}\t  100.0\t  200.0\t 1000.0\t..." for i in range(10))
    text = ("** CONVERTED FROM t.edf using edfapi 4.2.1 Linux\n**\n\nMSG\t1000 TRIALID caf\u00e9\n"
            "START\t1002 \tRIGHT\tSAMPLES\tEVENTS\nPRESCALER\t1\nVPRESCALER\t1\nPUPIL\tAREA\n"
            "EVENTS\tGAZE\tRIGHT\tRATE\t 500.00\tTRACKING\tCR\tFILTER\t2\n"
            "SAMPLES\tGAZE\tRIGHT\tRATE\t 500.00\tTRACKING\tCR\tFILTER\t2\nSFIX R   1002\n" + samples +
            "\nEFIX R   1002\t1020\t20\t  100.0\t  200.0\t   1000\n"
            "END\t1022 \tSAMPLES\tEVENTS\tRES\t  38.00\t  36.00\n")
    asc = tmp_path / "rec.asc"
    asc.write_bytes(text.encode("cp1252"))
    toy = small_data / "pymovements_examples" / "toy_text_1_1_aoi.csv"
    assert prep("asc", asc, "--layout", toy, "--line-assigner", "nearest", "--out", tmp_path / "plain") == 0
    err = capsys.readouterr().err
    assert "not valid utf-8" in err and "off-screen detection is off" in err
    assert pl.read_parquet(tmp_path / "plain" / "trials.parquet")["trial"].to_list() == ["caf\ufffd"]
    out = tmp_path / "decoded"
    assert prep("asc", asc, "--layout", toy, "--line-assigner", "nearest", "--encoding", "cp1252",
                "--screen-px", "1280x1024", "--out", out) == 0
    err = capsys.readouterr().err
    assert "not valid utf-8" not in err and "off-screen detection is off" not in err
    assert pl.read_parquet(out / "trials.parquet")["trial"].to_list() == ["caf\u00e9"]
