"""CopCo from its published files (``readgaze prep copco``) against the corpus authors' own word measures, and the
character-level Data Viewer route's reads, repairs and errors on its real reports (../shared/data/copco)."""

from __future__ import annotations

import polars as pl
import pytest

from readgaze.cli import main
from readgaze.errors import SchemaError
from readgaze.io.charreport import read_char_report
from readgaze.qc import QCLog

pytestmark = pytest.mark.shared_data
READERS = ("P01", "P23")  # a reader without and one with dyslexia, both with published features
PAIRS = {"first_fixation_duration_ms": "word_first_fix_dur", "gaze_duration_ms": "word_first_pass_dur",
         "total_fixation_duration_ms": "word_total_fix_dur", "fixation_count": "number_of_fixations"}


@pytest.fixture(scope="module")
def copco(shared_data):
    return shared_data / "copco"


@pytest.fixture(scope="module")
def dataset(copco, tmp_path_factory):
    out = tmp_path_factory.mktemp("copco") / "ds"
    assert main(["prep", "copco", "--data", str(copco), "--out", str(out), "--readers", *READERS, "--quiet"]) == 0
    return {name: pl.read_parquet(out / f"{name}.parquet") for name in ("trials", "words", "fixations",
                                                                       "word_measures")}


@pytest.fixture(scope="module")
def joined(dataset, copco):
    theirs = pl.concat([pl.read_csv(copco / "extracted_features" / f"{r}.csv").with_columns(pl.lit(r).alias("p"))
                        for r in READERS])
    theirs = theirs.with_columns(
        pl.concat_str("p", pl.col("speechId").cast(pl.String), pl.col("paragraphId").cast(pl.String),
                      separator="_").alias("trial_id"), pl.col("wordId").cast(pl.Int32).alias("word_index"))
    words = dataset["words"].unique(["text_id", "word_index"]).select("text_id", "word_index", "word")
    return (theirs.join(dataset["word_measures"], on=["trial_id", "word_index"], how="left")
            .join(dataset["trials"].select("trial_id", "text_id"), on="trial_id", how="left")
            .join(words, on=["text_id", "word_index"], how="left", suffix="_ours"))


def test_every_published_word_is_in_the_dataset(joined, dataset):
    assert joined.height == 8_515  # P01 5,324 + P23 3,191 words x trials (the files' rows)
    assert joined["word_ours"].null_count() == 0 and joined["fixation_count"].null_count() == 0


def test_measures_exact_against_the_authors_on_untouched_words(joined):
    """Words without a full stop and with ASCII letters only (the authors' two bugs cannot reach them)."""
    untouched = joined.filter(~pl.col("word_ours").str.contains(".", literal=True)
                              & pl.col("word_ours").str.contains(r"^[\x00-\x7f]*$"))
    assert untouched.height == 6_834
    for ours, theirs in PAIRS.items():
        same = untouched.select((pl.col(ours).cast(pl.Float64).eq_missing(pl.col(theirs).cast(pl.Float64))
                                 | ((pl.col(ours) == 0) & pl.col(theirs).is_null())).all()).item()
        assert same, ours
    assert untouched.select((pl.col("skipped").is_not_null()).all()).item()


def test_gaze_needs_runs_ended_by_off_text_fixations(dataset, joined):
    """Put the old rule back (an off-text fixation does not end a run): gaze duration then differs on words the
    authors and Data Viewer agree on."""
    from readgaze.measures import compute_word_measures

    skip = compute_word_measures(dataset["fixations"], dataset["words"], dataset["trials"], off_text="skip")
    j = joined.join(skip.collect().select("trial_id", "word_index", pl.col("gaze_duration_ms").alias("skip")),
                    on=["trial_id", "word_index"])
    ascii_words = j.filter(pl.col("word_ours").str.contains(r"^[a-zA-Z]+$"))
    differ = ascii_words.filter(pl.col("skip").cast(pl.Float64) != pl.col("word_first_pass_dur"))
    assert differ.height > 0
    assert (differ["gaze_duration_ms"].cast(pl.Float64) == differ["word_first_pass_dur"]).all()


def test_trials_carry_eyebench_ids_items_and_reader_labels(dataset, copco):
    trials = dataset["trials"]
    folds = pl.read_csv(copco / "eyebench" / "folds" / "trial_ids" / "fold_0_trial_ids_by_regime.csv")
    theirs = folds.filter(pl.col("participant_id").is_in(READERS))
    assert set(trials["trial_id"]) == set(theirs["unique_trial_id"])  # EyeBench's ids, no more, no less
    by_id = trials.join(theirs.select(pl.col("unique_trial_id").alias("trial_id"), "speech_id", "dyslexia",
                                      "RCS_score"), on="trial_id", suffix="_eb")
    assert (by_id["item_id"] == by_id["speech_id_eb"].cast(pl.String)).all()  # EyeBench holds out speeches
    assert (by_id["speech_id"] == by_id["speech_id_eb"].cast(pl.String)).all()
    assert (by_id["dyslexia"] == (by_id["dyslexia_eb"] == 1)).all()
    assert (by_id["reading_comprehension_skill"] == by_id["RCS_score"]).all()
    p23 = trials.filter(pl.col("participant_id") == "P23").row(0, named=True)
    assert p23["dyslexia"] is True and p23["reading_comprehension_skill"] == 5.2
    for column in ("participant_id", "speech_id", "paragraph_id", "part", "text_id", "reading_time_ms"):
        assert column in trials.columns
    first = trials.filter(pl.col("trial_id") == "P01_7905_0").row(0, named=True)
    assert (first["speech_id"], first["paragraph_id"], first["part"]) == ("7905", 0, 1)
    assert first["reading_time_ms"] > 0 and first["reading_speed_wpm"] > 0  # start times from the fixation labels


def test_box_positions_and_their_counts(copco):
    from readgaze.data_prep.copco import load_copco

    qc = QCLog()
    trials, words, fixations, qc, _ = load_copco(copco, ["P01"], qc=qc)
    counted = {r["reason"]: r["count"] for r in qc.records if r["step"] == "positions"}
    on_box = fixations.filter(pl.col("position_source") == "ia_box_centre")
    near = fixations.filter(pl.col("position_source") == "nearest_ia_box_centre")
    assert on_box.height + near.height == fixations.height == 7_015  # rows of speeches other than 1327, paragraph != -1
    assert counted["x_px, y_px: the centre of the fixated interest area's box (the report has no coordinates)"] \
        == on_box.height == 6_342  # those naming an IA
    assert counted["x_px, y_px: the centre of the nearest interest area's box (the report has no coordinates)"] \
        == near.height == 673
    assert (on_box["x_px"] == (on_box["char_left_px"] + on_box["char_right_px"]) / 2).all()
    assert near["report_ia_index"].null_count() == near.height  # off text: no word, whatever the position
    # P01_7905_0's 6th fixation: char IA 19, '8' of '1852' (word 4), box 530 115 545 208 in part1_IA_7905_0_chars.ias
    row = fixations.filter((pl.col("trial_id") == "P01_7905_0") & (pl.col("fixation_index") == 5)).row(0, named=True)
    assert (row["x_px"], row["y_px"], row["char_label"], row["report_ia_index"]) == (537.5, 161.5, "8", 4)


def test_double_encoded_labels_repaired(copco):
    qc = QCLog()
    fix = read_char_report(copco / "fixation_reports" / "FIX_report_P01.txt", qc=qc)
    raw = pl.read_csv(copco / "fixation_reports" / "FIX_report_P01.txt", separator="\t", quote_char=None,
                      infer_schema=False)
    raw_label = raw[raw.columns[10]]
    assert raw.columns[10] == '"CURRENT_FIX_INTEREST_AREA_LABEL"'
    broken = raw_label.is_in(['"Ã¥"', '"Ã¦"', '"Ã¸"', '"Ã†"', '"â€“"', '"â€™"'])
    assert int(broken.sum()) == 148 == next(r["count"] for r in qc.records if "double-encoded UTF-8" in r["reason"])
    assert set(fix["char_label"].filter(broken).to_list()) == {"å", "æ", "ø", "Æ", "–", "’"}
    assert not fix["char_label"].drop_nulls().str.contains("Ã").any()
    stops = fix.filter(pl.Series(raw_label == '"."'))
    assert stops.height > 0 and (stops["char_label"] == ".").all()  # a quoted full stop is a full stop
    assert fix.filter(pl.Series(raw_label == "."))["char_label"].null_count() == int((raw_label == ".").sum())


def test_three_quote_label_repaired_with_its_lines_and_no_merged_row(copco):
    path = copco / "fixation_reports" / "FIX_report_P43.txt"
    qc = QCLog()
    fix = read_char_report(path, qc=qc)
    lines = sum(1 for _ in open(path, "rb"))
    assert fix.height == lines - 1 == 9_767  # one row per line: nothing merged
    record = next(r for r in qc.records if "three quotes" in r["reason"])
    assert record["count"] == 2 and record["detail"] == "FIX_report_P43.txt lines 9307, 9308"
    assert fix.filter(pl.col("report_row") == 9308)["char_label"].item() == '"'
    assert fix.filter(pl.col("report_row") == 9309)["fixation_index"].item() == 150  # CURRENT_FIX_INDEX 151


def _excerpt(copco, tmp_path, lines: int, edit):
    text = (copco / "fixation_reports" / "FIX_report_P01.txt").read_text(encoding="utf-8-sig").splitlines()[:lines]
    out = tmp_path / "report.txt"
    out.write_text("\n".join(edit(text)) + "\n", encoding="utf-8")
    return out


def test_coordinate_columns_all_missing_is_an_error(copco, tmp_path):
    """The issue's silent corruption: two all-'.' coordinate columns let prep make every character a word."""
    report = _excerpt(copco, tmp_path, 300, lambda t: [t[0] + '\t"CURRENT_FIX_X"\t"CURRENT_FIX_Y"']
                      + [line + "\t.\t." for line in t[1:]])
    from readgaze.io.dataviewer import read_fixation_report

    with pytest.raises(SchemaError, match="every value is missing.*CURRENT_FIX_X, CURRENT_FIX_Y") as error:
        read_fixation_report(report, separator="\t", decimal_comma=True, ia_id_base=1)
    assert error.value.column == "CURRENT_FIX_X"
    assert main(["prep", "dataviewer", "--fixation-report", str(report), "--separator", "tab", "--decimal-comma",
                 "--ia-id-base", "1", "--out", str(tmp_path / "ds"), "--quiet"]) == 2
    assert not (tmp_path / "ds" / "words.parquet").exists()


def test_a_required_column_all_missing_in_a_char_report_is_an_error(copco, tmp_path):
    def blank_duration(text):  # CURRENT_FIX_DURATION (the 3rd field) '.' on every row
        rows = [line.split("\t") for line in text[1:]]
        return [text[0]] + ["\t".join("." if i == 2 else f for i, f in enumerate(row)) for row in rows]

    report = _excerpt(copco, tmp_path, 50, blank_duration)
    with pytest.raises(SchemaError, match="every value is missing") as error:
        read_char_report(report)
    assert error.value.column == "CURRENT_FIX_DURATION" and error.value.file == str(report)


def test_inspect_reads_a_report_and_the_dataset(copco, capsys):
    assert main(["inspect", str(copco / "fixation_reports" / "FIX_report_P43.txt")]) == 0
    out = capsys.readouterr().out
    assert "character interest areas and no fixation coordinates" in out and "fixations: 9,767" in out
    assert "lines 9307, 9308" in out


def _cp1252_copy(copco, tmp_path):
    """600 lines of P01's report with its labels repaired, coordinate columns added, written in Windows-1252."""
    from readgaze.io.textfix import _undo

    def repaired(field: str) -> str:
        core = field[1:-1] if len(field) >= 2 and field[0] == field[-1] == '"' else field
        fixed = _undo(core)
        return field.replace(core, fixed) if fixed else field

    text = (copco / "fixation_reports" / "FIX_report_P01.txt").read_text(encoding="utf-8-sig").splitlines()[:600]
    rows = [text[0] + '\t"CURRENT_FIX_X"\t"CURRENT_FIX_Y"']
    rows += ["\t".join(repaired(f) for f in line.split("\t")) + "\t100,5\t200" for line in text[1:]]
    out = tmp_path / "windows.txt"
    out.write_text("\n".join(rows) + "\n", encoding="cp1252", errors="replace")
    return out


def test_prep_and_inspect_take_the_encoding_and_dialect(copco, tmp_path, capsys):
    report = _cp1252_copy(copco, tmp_path)
    options = ["--separator", "tab", "--decimal-comma", "--ia-id-base", "1", "--quiet"]
    assert main(["prep", "dataviewer", "--fixation-report", str(report), *options, "--out", str(tmp_path / "a")]) == 2
    assert "is not UTF-8" in capsys.readouterr().err
    assert main(["prep", "dataviewer", "--fixation-report", str(report), *options, "--encoding", "cp1252",
                 "--out", str(tmp_path / "b")]) == 0
    words = pl.read_parquet(tmp_path / "b" / "words.parquet")["word"]
    assert {"æ", "ø"} <= set(words.to_list()) and not words.str.contains("Ã").any()
    assert main(["inspect", str(report), "--separator", "tab", "--decimal-comma", "--encoding", "cp1252"]) == 0
    assert "fixations: 599" in capsys.readouterr().out


def test_double_encoded_labels_repaired_in_the_dataviewer_route(copco, tmp_path, capsys):
    report = _excerpt(copco, tmp_path, 600, lambda t: [t[0] + '\t"CURRENT_FIX_X"\t"CURRENT_FIX_Y"']
                      + [line + "\t100,5\t200" for line in t[1:]])
    assert main(["prep", "dataviewer", "--fixation-report", str(report), "--separator", "tab", "--decimal-comma",
                 "--ia-id-base", "1", "--out", str(tmp_path / "ds")]) == 0
    assert "changed 15 words (load: word: double-encoded UTF-8" in capsys.readouterr().err
    words = pl.read_parquet(tmp_path / "ds" / "words.parquet")["word"]
    assert not words.str.contains("Ã").any() and "ø" in words.to_list()


def test_early_later_line_fixations_flagged_and_left_out_on_request(copco):
    from readgaze.data_prep.copco import load_copco
    from readgaze.data_prep.screens import flag_early_later_line

    trials, words, fixations, qc, _ = load_copco(copco, ["P01"])
    flagged, kept = flag_early_later_line(trials, fixations, words, QCLog())
    assert kept.height == fixations.height
    first = flagged.filter(pl.col("trial_id") == "P01_7905_0").row(0, named=True)
    assert first["early_later_line_fixations"] == 1  # its first fixation lands on 'havde', on a later line
    log = QCLog()
    _, left = flag_early_later_line(trials, fixations, words, log, leave_out=True)
    n = int(flagged["early_later_line_fixations"].sum())
    assert fixations.height - left.height == n == next(r["count"] for r in log.records if r["table"] == "fixations")
    tops = words.select("text_id", "ia_index", pl.col("top_px").rank("dense").over("text_id").alias("line"))
    starts = (left.sort("trial_id", "fixation_index").filter(pl.col("report_ia_index").is_not_null())
              .group_by("trial_id").first().join(trials.select("trial_id", "text_id"), on="trial_id")
              .join(tops, left_on=["text_id", "report_ia_index"], right_on=["text_id", "ia_index"]))
    assert (starts["line"] == 1).all()  # every trial's first word fixation is now on the first line


def test_reading_time_from_the_labels_matches_the_fixation_span(dataset):
    trials, fixations = dataset["trials"], dataset["fixations"]
    span = fixations.group_by("trial_id").agg(((pl.col("start_ms") + pl.col("duration_ms")).max()
                                               - pl.col("start_ms").min()).alias("span_ms"))
    both = trials.join(span, on="trial_id").filter(pl.col("reading_time_ms").is_not_null())
    assert both.height > 50
    assert both.select(pl.corr("reading_time_ms", "span_ms")).item() > 0.95
    assert 0.95 < both.select((pl.col("reading_time_ms") / pl.col("span_ms")).median()).item() < 1.05


PATTERN = r"part\d+_IA_(?P<speechid>-?\d+)_(?P<paragraphid>-?\d+)_(?P<level>chars|words)\.ias"


def test_any_labs_char_level_route_gives_the_recipes_measures(copco, dataset, tmp_path):
    """readgaze prep dataviewer --ias DIR --ias-pattern REGEX (no CopCo knowledge: trials by TRIAL_INDEX, screens by
    the pattern's groups) on P01: the same word measures as the copco recipe on every paragraph both keep."""
    out = tmp_path / "generic"
    assert main(["prep", "dataviewer", "--fixation-report", str(copco / "fixation_reports" / "FIX_report_P01.txt"),
                 "--ias", str(copco / "aois"), "--ias-pattern", PATTERN, "--out", str(out), "--quiet"]) == 0
    trials = pl.read_parquet(out / "trials.parquet")
    assert trials.height == 94 and set(trials["trial_id"].head(3)) <= {f"P01_{i}" for i in range(1, 200)}
    generic = pl.read_parquet(out / "word_measures.parquet").join(
        trials.select("trial_id", pl.concat_str(pl.lit("P01"), "speechid", "paragraphid", separator="_")
                      .alias("recipe_id")), on="trial_id")
    recipe = dataset["word_measures"].filter(pl.col("trial_id").str.starts_with("P01_"))
    both = recipe.join(generic, left_on=["trial_id", "word_index"], right_on=["recipe_id", "word_index"],
                       suffix="_generic")
    assert both.height == recipe.height == 5_324  # every word of the recipe's 81 trials
    for column in ("first_fixation_duration_ms", "gaze_duration_ms", "total_fixation_duration_ms",
                   "regression_path_duration_ms", "fixation_count", "skipped"):
        assert both.select(pl.col(column).eq_missing(pl.col(f"{column}_generic")).all()).item(), column
    manifest = (out / "manifest.json").read_text()
    assert "several .ias files for one screen" in manifest  # the practice speech's files are in both parts


def test_prep_names_the_reader_level_tasks_it_found(copco, tmp_path, capsys):
    """The summary names every task whose labels the dataset carries, CopCo's dyslexia among them."""
    assert main(["prep", "copco", "--data", str(copco), "--out", str(tmp_path / "ds"), "--readers", "P23",
                 "--quiet"]) == 0
    out = capsys.readouterr().err  # the summary goes to stderr
    for task in ("comprehension", "dyslexia", "reading_comprehension_skill"):
        assert f"  task {task}: labels present; check them with  readgaze inspect" in out, task
    assert "task reading_goal" not in out


def test_line_agreement_is_null_and_counted_where_positions_are_box_centres(copco, tmp_path):
    """Vote and slice re-assigning positions that the report's own lines made measured nothing (prep flagged 95
    CopCo trials "below 95 %", one at 0 % against the vote and 100 % against slice, and told the user to re-assign
    them): the columns are null and one QC record says why."""
    import json

    dataset = tmp_path / "ds"
    assert main(["prep", "copco", "--data", str(copco), "--out", str(dataset), "--readers", "P07", "--quiet"]) == 0
    trials = pl.read_parquet(dataset / "trials.parquet")
    assert trials.select(pl.col("line_agreement_vote", "line_agreement_slice").null_count()).row(0) == (
        trials.height, trials.height)
    qc = [r for r in json.loads((dataset / "manifest.json").read_text())["qc"] if r["step"] == "assign_lines"]
    low = next(r for r in qc if "under 95%" in r["reason"])
    boxes = next(r for r in qc if "interest-area box centres" in r["reason"])
    assert low["count"] == 0 and boxes["count"] == trials.height
