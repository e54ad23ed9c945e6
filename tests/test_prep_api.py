"""readgaze.prepare, the Python entry point of prep: the command only wraps it, so both write the same folder (byte
for byte), print the same summary and raise the same errors, each spelled for its caller."""

from __future__ import annotations

import polars as pl
import pytest

import readgaze
from readgaze.cli import main
from readgaze.errors import ConfigError


def _files(folder):
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


def test_prepare_writes_what_the_command_writes(small_data, tmp_path, capsys):
    fix, ia = small_data / "onestop_sample" / "fixations.csv", small_data / "onestop_sample" / "ia.csv"
    assert main(["prep", "onestop", "--fixation-report", str(fix), "--ia-report", str(ia), "--out",
                 str(tmp_path / "cli"), "--quiet", "--no-cache"]) == 0
    printed = capsys.readouterr().err.replace(str(tmp_path / "cli"), "OUT")
    result = readgaze.prepare("onestop", fixation_report=fix, ia_report=ia, out=tmp_path / "py", cache=False)
    assert result.out == tmp_path / "py" and result.format == "parquet"
    assert _files(tmp_path / "py") == _files(tmp_path / "cli")  # tables and manifest (QC, notes, config)
    assert "\n".join(result.summary()).replace(str(tmp_path / "py"), "OUT") + "\n" == printed
    assert printed.startswith("wrote OUT (parquet): trials 16, words ")
    assert result.prepared.trials.height == 16 and result.prepared.qc.records


def test_prepare_takes_a_labels_table_and_names_its_keywords_in_errors(tmp_path):
    from readgaze.simulate.lab_export import write_lab_export

    write_lab_export(tmp_path / "export", n_participants=3, n_items=2, paragraphs_per_item=1)
    export = tmp_path / "export"
    with pytest.raises(ConfigError) as error:  # without the IA report the id base is unknown
        readgaze.prepare("dataviewer", fixation_report=export / "fixations.tsv", out=tmp_path / "ds")
    assert "pass ia_id_base=1 (Data Viewer's own numbering)" in str(error.value)
    result = readgaze.prepare("dataviewer", fixation_report=export / "fixations.tsv", ia_report=export / "ia.tsv",
                              columns=["ia.text_id=passage", "trials.item_id=passage_id"],
                              trials=export / "labels.csv", trials_on=["participant_id=subject", "trial=trial_no"],
                              out=tmp_path / "ds")
    trials = pl.read_parquet(tmp_path / "ds" / "trials.parquet")
    labels = pl.read_csv(export / "labels.csv")
    assert trials.height == labels.height == result.prepared.trials.height
    assert trials["reading_goal"].null_count() == 0 and set(trials["reading_goal"]) <= {"ordinary",
                                                                                         "information_seeking"}
    assert any(line.startswith("  task reading_goal: labels present") for line in result.summary())
    with pytest.raises(ConfigError, match="output folder exists and is not empty: pass force=True"):
        readgaze.prepare("dataviewer", fixation_report=export / "fixations.tsv", ia_report=export / "ia.tsv",
                         out=tmp_path / "ds")
    with pytest.raises(ConfigError, match="prep samples needs the screen .*: pass screen_px=\\(1280, 1024\\)"):
        readgaze.prepare("samples", files=[export / "fixations.tsv"], layout=export / "ia.tsv", out=tmp_path / "s")
