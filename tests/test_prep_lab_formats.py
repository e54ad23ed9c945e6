"""Labs' own formats (issue 31, item 8): reader x book labels through a declared mapping (SB-SAT's 18sat_labels.csv),
an .asc layout from the recording's own interest-area messages, and a warning when a layout does not fit."""

from __future__ import annotations

import json

import polars as pl
import pytest

from readgaze.cli import main
from readgaze.data_prep.labels import parse_key_maps, parse_rules
from readgaze.errors import ConfigError
from readgaze.simulate import simulate_corpus

SBSAT_KEYS = ["--trials-on", "participant_id=subj", "item_id=book", "--key-map", r"item_id=^\w+-(\w+)-\d+$"]


def _sbsat(shared_data, out, *extra):
    return main(["prep", "dataviewer", "--source", "sbsat", "--fixation-report",
                 str(shared_data / "pymovements_examples" / "18sat_fixfinal.csv"), "--trials",
                 str(shared_data / "sbsat" / "fixation" / "18sat_labels.csv"), *extra, "--quiet", "--out", str(out)])


def test_sbsat_reader_x_book_labels_attach_by_a_key_map_and_a_stated_rule(shared_data, tmp_path, capsys):
    """Before: 'is_correct: got ['3', '2'], expected True/False', and book dickens matched no trial
    reading-dickens-1."""
    assert _sbsat(shared_data, tmp_path / "sb", *SBSAT_KEYS, "--binarise", "is_correct=acc_level>=2") == 0
    err = capsys.readouterr().err
    trials = pl.read_parquet(tmp_path / "sb" / "trials.parquet")
    labels = pl.read_csv(shared_data / "sbsat" / "fixation" / "18sat_labels.csv")
    level = labels.filter((pl.col("subj") == "msd001") & (pl.col("book") == "dickens"))["acc_level"][0]
    assert trials.select("text_id", "item_id", "acc_level", "is_correct").row(0) == (
        "reading-dickens-1", "dickens", level, level >= 2)
    rule = labels.select((pl.col("acc_level") >= 2).sum()).item()
    assert f"is_correct = acc_level >= 2 (declared with --binarise): {rule} rows True" in err
    assert "reading-dickens-1 -> dickens" in err
    manifest = json.loads((tmp_path / "sb" / "manifest.json").read_text())
    assert manifest["config"]["binarise"] == ["is_correct=acc_level>=2"]
    assert any("key map item_id" in note for note in manifest["notes"])
    assert _sbsat(shared_data, tmp_path / "strict", *SBSAT_KEYS, "--binarise", "is_correct=acc_level>=3") == 0
    assert pl.read_parquet(tmp_path / "strict" / "trials.parquet")["is_correct"][0] == (level >= 3)
    capsys.readouterr()
    assert _sbsat(shared_data, tmp_path / "nomap", "--trials-on", "participant_id=subj", "text_id=book") == 2
    assert "no trial of" in capsys.readouterr().err  # without the key map, nothing matches


def test_label_rules_and_key_maps_are_checked(tmp_path):
    assert str(parse_rules(["is_correct = acc >= 0.75"])[0]) == "is_correct = acc >= 0.75"
    with pytest.raises(ConfigError, match="expected LABEL=COLUMN OP NUMBER"):
        parse_rules(["is_correct=acc_level"])
    with pytest.raises(ConfigError, match="only is_correct"):
        parse_rules(["reading_goal=acc>=1"])
    with pytest.raises(ConfigError, match="2 groups"):
        parse_key_maps([r"item_id=(\w+)-(\w+)"])
    table = tmp_path / "books.csv"
    table.write_text("page,book\nreading-dickens-1,dickens\n")
    key_map = parse_key_maps([f"item_id={table}"])["item_id"]
    mapped = pl.DataFrame({"v": ["reading-dickens-1", "other"]}).select(key_map.expr(pl.col("v")))
    assert mapped["v"].to_list() == ["dickens", None]


def _asc(corpus, participant: str, with_ia: bool = True) -> str:
    """An EyeLink recording of one simulated reader: per trial TRIALID, !V IAREA RECTANGLE per word, EFIX events."""
    lines = ["** CONVERTED FROM r.edf using edfapi 4.2.1 Linux", "**", "",
             "MSG\t10 DISPLAY_COORDS 0 0 2559 1439"]
    t = 1000
    trials = corpus.trials.filter(pl.col("participant_id") == participant).sort("trial_index")
    for k, (trial_id, text_id) in enumerate(trials.select("trial_id", "text_id").iter_rows()):
        lines.append(f"MSG\t{t} TRIALID {k + 1}")
        if with_ia:
            for w in corpus.layouts[text_id].words.iter_rows(named=True):
                lines.append(f"MSG\t{t + 1} !V IAREA RECTANGLE {w['ia_index'] + 1} {w['left_px']:.0f} "
                             f"{w['top_px']:.0f} {w['right_px']:.0f} {w['bottom_px']:.0f} {w['word']}")
        rate = "GAZE\tRIGHT\tRATE\t 500.00\tTRACKING\tCR\tFILTER\t2"
        lines += [f"START\t{t + 2} \tRIGHT\tSAMPLES\tEVENTS", f"EVENTS\t{rate}", f"SAMPLES\t{rate}"]
        fixations = corpus.fixations.filter(pl.col("trial_id") == trial_id).sort("fixation_index")
        for f in fixations.iter_rows(named=True):
            start = t + 4 + int(f["start_ms"])
            end = start + int(f["duration_ms"])
            lines += [f"SFIX R   {start}", f"{start}\t  {f['x_px']:.1f}\t  {f['y_px']:.1f}\t 1000.0\t...",
                      f"EFIX R   {start}\t{end}\t{end - start}\t  {f['x_px']:.1f}\t  {f['y_px']:.1f}\t   1000"]
        t = start + int(f["duration_ms"]) + 100
        lines.append(f"END\t{t} \tEVENTS\tRES\t  38.00\t  36.00")
        t += 1000
    return "\n".join(lines) + "\n"


@pytest.fixture(scope="module")
def recordings(tmp_path_factory):
    """Two readers of the same two paragraphs, one .asc each, with and without interest-area messages."""
    folder = tmp_path_factory.mktemp("asc")
    corpus = simulate_corpus(2, 2, 1, seed=3, levels=("Adv",))
    paths = {}
    for with_ia in (True, False):
        for p in corpus.trials["participant_id"].unique(maintain_order=True):
            path = folder / ("ia" if with_ia else "plain") / f"{p}.asc"
            path.parent.mkdir(exist_ok=True)
            path.write_text(_asc(corpus, p, with_ia))
            paths.setdefault(with_ia, []).append(path)
    return corpus, paths


def test_an_asc_layout_comes_from_its_own_interest_area_messages(recordings, tmp_path, capsys):
    corpus, paths = recordings
    assert main(["prep", "asc", *map(str, paths[True]), "--quiet", "--out", str(tmp_path / "ds")]) == 0
    err = capsys.readouterr().err
    words = pl.read_parquet(tmp_path / "ds" / "words.parquet")
    trials = pl.read_parquet(tmp_path / "ds" / "trials.parquet")
    assert trials.height == 4 and words["text_id"].n_unique() == 2  # each text shared by both readers
    assert trials.group_by("text_id").agg(pl.col("participant_id").n_unique())["participant_id"].to_list() == [2, 2]
    assert words.height == sum(lay.words.height for lay in corpus.layouts.values())
    assert "does not fit" not in err and "off the text" not in err
    fixations = pl.read_parquet(tmp_path / "ds" / "fixations.parquet")
    assert fixations.height == corpus.fixations.height
    assert fixations["word_index"].is_not_null().mean() > 0.9
    with pytest.raises(ConfigError, match="no '!V IAREA' interest-area messages"):
        from readgaze.data_prep.sources import load_asc

        load_asc(paths[False], None)


def test_a_layout_of_another_text_is_warned_about(recordings, shared_data, tmp_path, capsys):
    """Before: a layout of an unrelated text got only the generic off-text warning (or none, once line assignment
    had pulled the fixations onto its lines)."""
    _, paths = recordings
    other = shared_data / "line_assignment" / "passages.json"
    assert main(["prep", "asc", str(paths[False][0]), "--layout", str(other), "--text-id", "1A", "--quiet",
                 "--out", str(tmp_path / "wrong")]) == 0
    err = capsys.readouterr().err
    assert "Is the layout the text these recordings show" in err
    assert "does not fit the layout's lines" in err or "lie off the layout's lines" in err
