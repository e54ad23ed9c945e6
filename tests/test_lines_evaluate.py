"""``readgaze eval-lines`` and the gold-folder loader on a tiny hand-made folder."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

import readgaze.lines as lines
from readgaze.cli import main
from readgaze.errors import ConfigError, ParseError
from readgaze.lines.evaluate import evaluate
from readgaze.lines.gold import load_gold


def write_folder(path, gold_t2=("0", "0", "1", ""), discarded_t2=(0, 0, 0, 1)):
    """Two 2-line trials of one passage; t2 is 40 px low (nearest line is wrong on its first line)."""
    (path / "trials.csv").write_text("trial_id,passage_id,age_group\nt1,P,adult\nt2,P,child\n")
    (path / "lines.csv").write_text("passage_id,line,midline_y\nP,0,100\nP,1,164\n")
    (path / "words.csv").write_text("passage_id,word_index,line,x_center,y_center\n"
                                    "P,0,0,100,100\nP,1,0,200,100\nP,2,1,100,164\nP,3,1,200,164\n")
    rows = ["trial_id,passage_id,fixation_index,x,y,gold_line,discarded"]
    rows += [f"t1,P,{i},{x},{y},{g},0" for i, (x, y, g) in enumerate([(100, 101, 0), (200, 99, 0), (100, 165, 1),
                                                                     (200, 163, 1)])]
    ys = (140, 141, 204, 900)
    rows += [f"t2,P,{i},{x},{y},{g},{d}" for i, (x, y, g, d) in enumerate(zip((100, 200, 100, 200), ys, gold_t2,
                                                                              discarded_t2))]
    (path / "fixations.csv").write_text("\n".join(rows) + "\n")
    return path


def test_scores_count_only_kept_fixations(tmp_path):
    result = evaluate(write_folder(tmp_path), ["nearest", "slice"])
    # nearest: t1 4/4, t2 fixation 0, 1 wrong (140 is nearer 164), fixation 2 right, fixation 3 discarded
    assert result["nearest"]["pooled"] == pytest.approx(100 * 5 / 7)
    assert result["nearest"]["per_trial"] == pytest.approx({"t1": 100.0, "t2": 100 / 3})
    assert result["nearest"]["worst_trial"] == pytest.approx(100 / 3)
    assert result["nearest"]["median_trial"] == pytest.approx((100 + 100 / 3) / 2)
    assert result["nearest"]["per_group"] == pytest.approx({"adult": 100.0, "child": 100 / 3})
    assert result["slice"]["per_trial"]["t1"] == 100.0


def test_loader_reads_arrays_in_fixation_order(tmp_path):
    t1, t2 = load_gold(write_folder(tmp_path))
    assert t2.xy.tolist() == [[100, 140], [200, 141], [100, 204], [200, 900]]
    assert t2.gold_line.tolist() == [0, 0, 1, -1] and t2.scored.tolist() == [True, True, True, False]
    assert t1.line_y_px.tolist() == [100, 164] and t1.word_line.tolist() == [0, 0, 1, 1]


def test_loader_names_file_row_and_column(tmp_path):
    write_folder(tmp_path, gold_t2=("0", "", "1", ""))               # row 7: kept, but no gold line
    with pytest.raises(ParseError, match=r"fixations.csv, row 7, column gold_line"):
        load_gold(tmp_path)
    (tmp_path / "lines.csv").write_text("passage_id,line\nP,0\n")
    with pytest.raises(ParseError, match=r"lines.csv, row 1: missing column\(s\) \['midline_y'\]"):
        load_gold(tmp_path)


def test_all_skips_a_plugin_that_fails_but_naming_it_raises(tmp_path, monkeypatch, capsys):
    def broken(xy, line_y_px, **_):
        raise FileNotFoundError("weights.pt")

    monkeypatch.setattr("readgaze.lines.registry.plugins",
                        lambda: {"broken": SimpleNamespace(name="broken", load=lambda: broken)})
    folder = write_folder(tmp_path)
    out = tmp_path / "all.json"
    assert main(["eval-lines", "--data", str(folder), "--method", "all", "--json", str(out)]) == 0
    table = json.loads(out.read_text())
    assert list(table) == [*lines.CLASSICAL, "nearest", "vote", "oracle"]
    assert "skipped 'broken'" in capsys.readouterr().err
    assert table["nearest"]["pooled"] == pytest.approx(100 * 5 / 7)
    with pytest.raises(ConfigError, match="'broken' failed: FileNotFoundError"):
        evaluate(folder, ["broken"])
    assert main(["eval-lines", "--data", str(folder), "--method", "broken"]) == 2


def test_human_correctors_and_agreed_scores(tmp_path, capsys):
    """With the correctors' own labels, eval-lines scores them, and each method on the fixations they agreed on."""
    folder = write_folder(tmp_path)
    rows = (folder / "fixations.csv").read_text().splitlines()
    # t1: both correctors agree with gold everywhere; t2: jc discards fixation 1, vp puts fixation 0 on line 1
    jc = ["0,0", "0,0", "1,1", "1,1", "0,1", ",0", "1,1", ","]
    rows = [rows[0] + ",annotator_jc_line,annotator_vp_line"] + [r + "," + a for r, a in zip(rows[1:], jc)]
    (folder / "fixations.csv").write_text("\n".join(rows) + "\n")
    t1, t2 = load_gold(folder)
    assert t1.agreed.tolist() == [True] * 4
    assert t2.agreed.tolist() == [False, False, True, False]          # vp, jc disagree; fixation 3 discarded
    assert t2.human["jc"].tolist() == [0, -1, 1, -1] and t2.human["vp"].tolist() == [1, 0, 1, -1]
    result = evaluate(folder, ["nearest"])["nearest"]
    # nearest is wrong on t2's fixations 0 and 1, exactly the ones the correctors did not agree on
    assert result["pooled"] == pytest.approx(100 * 5 / 7)
    assert result["agreed_pooled"] == pytest.approx(100.0) and result["agreed_worst_trial"] == pytest.approx(100.0)
    out = tmp_path / "t.json"
    assert main(["eval-lines", "--data", str(folder), "--method", "nearest", "--json", str(out)]) == 0
    table = json.loads(out.read_text())
    assert table["human:jc"]["pooled"] == pytest.approx(100 * 6 / 7)   # misses t2 fix 1
    assert table["human:vp"]["pooled"] == pytest.approx(100 * 6 / 7)                             # misses t2 fix 0
    assert "human:jc" in capsys.readouterr().out


def test_without_corrector_columns_nothing_extra(tmp_path):
    t1, _ = load_gold(write_folder(tmp_path))
    assert t1.agreed is None and t1.human == {}
    assert "agreed_pooled" not in evaluate(tmp_path, ["nearest"])["nearest"]
