"""Structured errors: an error that a setting resolves carries it as data (readgaze.errors.Option), spelled as a
Python keyword for a Python caller and as the command's option inside ``readgaze``; no layer rewrites another's
message."""

from __future__ import annotations

import pickle
import re
import subprocess
import sys
from pathlib import Path

import pytest

from readgaze.cli import main
from readgaze.errors import ConfigError, Option, command_spelling

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def export(tmp_path_factory):
    """A simulated lab export: its fixation report's lowest interest-area id is 1 (base unknown without the IA
    report)."""
    from readgaze.simulate.lab_export import write_lab_export

    out = tmp_path_factory.mktemp("export")
    write_lab_export(out, n_participants=2, n_items=2, paragraphs_per_item=1)
    return out


def test_the_reader_names_its_keywords_and_the_command_its_options(export, tmp_path, capsys):
    from readgaze.io import read_fixation_report

    with pytest.raises(ConfigError) as error:
        read_fixation_report(export / "fixations.tsv").collect()
    assert str(error.value).endswith("pass ia_id_base=1 (Data Viewer's own numbering), ia_id_base=0 or "
                                     "ia_report=IA_REPORT (to detect it from the IA labels)")
    assert main(["prep", "dataviewer", "--fixation-report", str(export / "fixations.tsv"), "--out",
                 str(tmp_path / "ds"), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("readgaze prep: error: fixations.tsv, column CURRENT_FIX_INTEREST_AREA_ID: the "
                          "interest-area id base of this fixation report is unknown")
    assert err.rstrip().endswith("pass --ia-id-base 1 (Data Viewer's own numbering), --ia-id-base 0 or "
                                 "--ia-report IA_REPORT (to detect it from the IA labels)")
    assert main(["prep", "dataviewer", "--fixation-report", str(export / "fixations.tsv"), "--ia-id-base", "1",
                 "--out", str(tmp_path / "ds"), "--quiet"]) == 0  # the option it names works


def test_an_error_keeps_its_fields_across_processes():
    error = ConfigError("output folder exists and is not empty", file="/data/ds", row=3, column="x",
                        options=(Option("force=True", "--force", "to overwrite it"),))
    back = pickle.loads(pickle.dumps(error))
    assert (back.file, back.row, back.column, back.options) == ("/data/ds", 3, "x", error.options)
    assert str(back) == "ds, row 3, column x: output folder exists and is not empty: pass force=True (to overwrite it)"
    with command_spelling():
        assert str(back).endswith("pass --force (to overwrite it)")
    assert str(back).endswith("pass force=True (to overwrite it)")  # the spelling is the block's, not the error's


def test_no_layer_rewrites_another_layers_message():
    """The old prep turned the reader's 'pass ia_id_base=1' into '--ia-id-base 1' with str.replace."""
    rewrites = []
    for path in sorted(p for folder in ("readgaze", "data_prep", "models") for p in (REPO / folder).rglob("*.py")):
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if re.search(r"\.message\.replace\(|str\((error|e|err)\)\.replace\(", line):
                rewrites.append(f"{path.relative_to(REPO)}:{n}: {line.strip()}")
    assert not rewrites, "\n".join(rewrites)


def test_a_reader_that_leaves_early_is_no_traceback():
    """``readgaze models | head -c 0``: the pipe closes before readgaze writes; it stops with 0 and says nothing."""
    code = "import sys; from readgaze.cli import main; sys.exit(main(['models']))"
    done = subprocess.run(["bash", "-o", "pipefail", "-c", f'"{sys.executable}" -c "{code}" | head -c 0'],
                          capture_output=True, text=True)
    assert (done.returncode, done.stderr) == (0, "")
