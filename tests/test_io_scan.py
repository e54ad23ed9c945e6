"""The load's fast paths equal the plain ones: one pass for SHA-256 and line starts, started before the imports
(prefetch), the IA report parsed beside the fixations, the id-base check per distinct (interest area, label)."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from readgaze.io import scan
from readgaze.io.dataviewer import detect_ia_id_base
from readgaze.io.rows import line_starts

CASES = {
    "lf": b"a,b\n1,2\n3,4\n",
    "no_final_break": b"a,b\n1,2\n3,4",
    "crlf": b"a,b\r\n1,2\r\n3,4\r\n",
    "crlf_no_final": b"a,b\r\n1,2\r\n3,4",
    "quoted_break": b'a,b\n1,"x\ny"\n3,4\n',
    "blank_lines": b"a,b\n\n\n1,2\n",
    "header_only": b"a,b",
    "empty": b"",
}


def _naive_starts(data: bytes) -> list[int]:
    """Every line's first byte: 0, and the byte after each line break except a final one."""
    starts = [0] + [i + 1 for i, b in enumerate(data) if b == 10]
    return starts[:-1] if len(starts) > 1 and starts[-1] == len(data) else starts


@pytest.mark.parametrize("block", [scan.BLOCK, 1, 3, 7])
@pytest.mark.parametrize("name", sorted(CASES))
def test_one_pass_equals_hashlib_and_the_newline_index(tmp_path, monkeypatch, name, block):
    monkeypatch.setattr(scan, "BLOCK", block)  # small blocks: line breaks at and across block edges
    data = CASES[name]
    path = tmp_path / f"{name}.csv"
    path.write_bytes(data)
    got = scan.scan_file(path)
    assert got.sha256 == hashlib.sha256(data).hexdigest()
    assert got.starts.dtype == np.int64 and got.starts.tolist() == _naive_starts(data)
    only_lines = scan.scan_file(path, sha256=False)
    assert only_lines.sha256 is None and only_lines.starts.tolist() == _naive_starts(data)
    assert scan.scan_file(path, lines=False).starts is None
    if name not in ("blank_lines", "header_only", "empty", "no_final_break", "crlf_no_final"):
        assert line_starts(path).tolist() == _naive_starts(data)  # the others are repaired or refused (io.faults)
    if name in ("no_final_break", "crlf_no_final"):  # the last line, without its line break, is dropped (cut?)
        assert len(line_starts(path)) == len(_naive_starts(data)) - 1


def test_a_larger_file_across_many_blocks(tmp_path, monkeypatch):
    monkeypatch.setattr(scan, "BLOCK", 4096)
    rng = np.random.default_rng(3)
    data = b"".join(b"x" * int(n) + (b"\r\n" if n % 3 else b"\n") for n in rng.integers(0, 300, 2000))
    path = tmp_path / "big.csv"
    path.write_bytes(data)
    got = scan.scan_file(path)
    assert got.sha256 == hashlib.sha256(data).hexdigest()
    assert got.starts.tolist() == _naive_starts(data)


def test_prefetched_pass_is_taken_once_and_only_for_the_file_as_it_is(tmp_path):
    path = tmp_path / "r.csv"
    path.write_bytes(CASES["crlf"])
    scan.prefetch([path, tmp_path / "missing.csv"])
    assert scan.take_line_starts(path).tolist() == _naive_starts(CASES["crlf"])
    assert scan.take_line_starts(path) is None  # taken: the array is not kept
    assert scan.take_sha256(path) == hashlib.sha256(CASES["crlf"]).hexdigest()
    assert scan.take_sha256(path) is None
    assert str(path.resolve()) not in scan._SCANS  # both taken: the entry is gone
    assert scan.take_sha256(tmp_path / "missing.csv") is None

    scan.prefetch([path], sha256=False)
    scan._SCANS[str(path.resolve())][1].result()
    path.write_bytes(CASES["lf"] + b"5,6\n")  # changed after its pass: the consumer reads it again
    assert scan.take_line_starts(path) is None
    assert line_starts(path).tolist() == _naive_starts(CASES["lf"] + b"5,6\n")


def test_the_cache_checksum_takes_the_prefetched_sha256(tmp_path, monkeypatch):
    from readgaze.data_prep import cache

    path = tmp_path / "r.csv"
    path.write_bytes(CASES["quoted_break"])
    scan.prefetch([path])
    scan._SCANS[str(path.resolve())][1].result()
    expected, real, calls = hashlib.sha256(CASES["quoted_break"]).hexdigest(), hashlib.sha256, []
    monkeypatch.setattr(hashlib, "sha256", lambda *a: calls.append(a) or real(*a))
    assert cache.checksum(path, tmp_path / "c") == expected
    assert calls == []  # not hashed again
    assert cache.checksum(path, tmp_path / "c2") == expected
    assert len(calls) == 1  # nothing prefetched any more: hashed here
    scan.take_line_starts(path)


def _files(tmp_path):
    fix, ia = tmp_path / "fixations.csv", tmp_path / "ia.csv"
    fix.write_bytes(b"a\n1\n")
    ia.write_bytes(b"b\n2\n")
    return str(fix), str(ia)


def test_prep_prefetches_what_its_load_will_read(tmp_path, monkeypatch):
    import readgaze.data_prep.api as api
    import readgaze.io.scan as s

    calls = []
    monkeypatch.setattr(s, "prefetch", lambda paths, **kw: calls.append(kw))
    monkeypatch.setenv("READGAZE_CACHE_DIR", str(tmp_path / "cache"))
    files = _files(tmp_path)
    api._prefetch(*files, cache=True)
    api._prefetch(*files, cache=False)
    # without the cache it still hashes (the manifest records the SHA-256); the line starts always (the check of the
    # lines, readgaze.io.faults: a column map or dialect is applied as the reports are parsed, no rewritten copies)
    assert calls == [{"sha256": True, "lines": True}] * 2
    from readgaze.data_prep.cache import checksum

    for f in files:
        checksum(f)  # the memo knows both files now: a likely cache hit reads nothing
    calls.clear()
    api._prefetch(*files, cache=True)
    assert calls == []


def test_the_command_modules_import_no_polars():
    code = ("import sys, readgaze, readgaze.cli, readgaze.data_prep.cli, readgaze.data_prep.api, "
            "readgaze.data_prep.cache, readgaze.io.scan\n"
            "assert 'polars' not in sys.modules and 'numpy' not in sys.modules, 'heavy import'\n"
            "from readgaze import read_fixation_report, validate\n"
            "from readgaze.io import read_ia_report, scan_csv\n"
            "assert 'polars' in sys.modules and callable(read_fixation_report) and callable(scan_csv)\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr


def test_id_base_agreement_counted_per_fixation():
    # trial t0 shows IA 0..2 ("a", "b c" with a no-break space, "d"); the fixations name raw ids under base 1
    ia = pl.LazyFrame({"trial_id": ["t0"] * 3 + ["t1"], "ia_index": [0, 1, 2, 0], "word": ["a", "b\u00a0c", "d", "z"]})
    fix = pl.LazyFrame({
        "trial_id": ["t0"] * 7 + ["t1", "t9", "t0"],
        "ia_index": [1, 1, 2, 2, 3, 3, None, 1, 1, 1],
        "ia_label": ["a", "a", "b c", "b c", "d", "x", "a", "z", "a", None],
    })
    check = detect_ia_id_base(fix, ia, fixation_file="f.csv", ia_file="i.csv", threshold=0.5)
    # checked: the 7 rows with an id, a label and a trial the IA report has; base 1 agrees on 6 (not "x"),
    # repeated (IA, label) pairs counted once per fixation
    assert check.checked == 7 and check.base == 1
    assert check.agreement == {1: 6 / 7, 0: 0.0}


def _reports(tmp_path, bad_fix: bool = False, bad_ia: bool = False):
    common = {"participant_id": "l1_1", "TRIAL_INDEX": 1, "article_batch": 1, "article_id": 2,
              "difficulty_level": "Adv", "paragraph_id": 1, "repeated_reading_trial": False, "question_preview": True}
    fix = [{**common, "CURRENT_FIX_INDEX": i, "CURRENT_FIX_X": "oops" if bad_fix and i == 2 else 15.0 * i,
            "CURRENT_FIX_Y": 120.0, "CURRENT_FIX_DURATION": 200, "CURRENT_FIX_START": 250 * i,
            "CURRENT_FIX_INTEREST_AREA_ID": i, "CURRENT_FIX_INTEREST_AREA_LABEL": f"w{i}"} for i in (1, 2, 3)]
    ia = [{**common, "IA_ID": k, "IA_LABEL": f"w{k}", "IA_LEFT": "left" if bad_ia and k == 2 else 10 * k,
           "IA_RIGHT": 10 * k + 9, "IA_TOP": 100, "IA_BOTTOM": 140} for k in (1, 2, 3)]
    paths = tmp_path / "fixations.csv", tmp_path / "ia.csv"
    pl.DataFrame(fix).write_csv(paths[0])
    pl.DataFrame(ia).write_csv(paths[1])
    return paths


def test_the_ia_report_parsed_beside_the_fixations_gives_the_same_tables_and_errors(tmp_path, monkeypatch):
    import readgaze.io.onestop as onestop
    from readgaze.errors import ParseError

    fix, ia = _reports(tmp_path)
    data = onestop.load_onestop(fix, ia)
    got = data.fixations.collect()
    assert got["word_index"].to_list() == [0, 1, 2] and data.id_bases == {str(fix): 1, str(ia): 1}
    assert data.words.collect()["word"].to_list() == ["w1", "w2", "w3"]
    reasons = [r["reason"] for r in data.qc.records]  # the fixation report's records before the IA report's
    assert reasons.index("participant_alias") < len(reasons) - 1
    tables = [r["table"] for r in data.qc.records if r["reason"] == "participant_alias"]
    assert tables == ["fixations", "ia_rows"]

    parsed = []
    real = onestop._parse
    monkeypatch.setattr(onestop, "_parse", lambda reader, path, *a: parsed.append(path) or real(reader, path, *a))
    fix, ia = _reports(tmp_path, bad_fix=True, bad_ia=True)
    with pytest.raises(ParseError) as e:
        onestop.load_onestop(fix, ia)
    assert str(e.value.file) == str(fix) and e.value.column == "CURRENT_FIX_X" and e.value.row == 3
    assert parsed == [fix]  # the fixation report failed: the IA report was not parsed
    fix, ia = _reports(tmp_path, bad_ia=True)
    with pytest.raises(ParseError) as e:
        onestop.load_onestop(fix, ia)
    assert str(e.value.file) == str(ia) and e.value.column == "IA_LEFT" and e.value.row == 3


def test_a_missing_report_is_a_parse_error_naming_it(tmp_path):
    """Either report missing: the readers' ParseError naming that file, not a FileNotFoundError from the thread that
    scans its lines (the IA report's newline scan starts before either parse)."""
    from readgaze.errors import ParseError
    from readgaze.io.onestop import load_onestop

    fix = tmp_path / "fixations.csv"
    fix.write_text("participant_id,CURRENT_FIX_INDEX\np1,1\n")
    with pytest.raises(ParseError, match="nope_ia.csv") as got:
        load_onestop(fix, tmp_path / "nope_ia.csv")
    assert "no such file" in str(got.value)
    with pytest.raises(ParseError, match="nope_fix.csv"):
        load_onestop(tmp_path / "nope_fix.csv", tmp_path / "nope_ia.csv")


def test_prep_keeps_no_prefetched_pass_it_did_not_take(tmp_path, monkeypatch):
    """A cache hit after a memo miss never takes the line starts, and an early error takes nothing: `prep` drops what
    its load left, so an in-process caller does not keep tens of MB per report."""
    from readgaze.cli import main

    fix, ia = tmp_path / "fixations.csv", tmp_path / "ia.csv"
    fix.write_bytes(b"participant_id,CURRENT_FIX_INDEX\np1,1\n")
    ia.write_bytes(b"not,a,onestop,ia,report\n1,2,3,4,5\n")
    monkeypatch.setenv("READGAZE_CACHE_DIR", str(tmp_path / "cache"))
    code = main(["prep", "onestop", "--fixation-report", str(fix), "--ia-report", str(ia), "--out",
                 str(tmp_path / "out"), "--quiet"])
    assert code != 0  # refused early (check_kind): the prefetched passes were never taken
    assert str(fix.resolve()) not in scan._SCANS and str(ia.resolve()) not in scan._SCANS


def test_the_parse_cache_key_follows_the_loading_code_only(tmp_path):
    """A change to the steps after the load (pipeline, measures) keeps the cached parse; one to a loader drops it."""
    from readgaze.data_prep.cache import code_fingerprint

    root = Path(__file__).resolve().parents[1]
    for pkg in ("readgaze", "readgaze/io", "data_prep"):
        (tmp_path / pkg).mkdir(parents=True)
        for f in (root / pkg).glob("*.py"):
            (tmp_path / pkg / f.name).write_bytes(f.read_bytes())
    base = code_fingerprint(tmp_path)
    assert code_fingerprint(root) == base  # the same sources, wherever they lie
    for after_load in ("data_prep/pipeline.py", "data_prep/dataset.py", "readgaze/measures.py"):
        (tmp_path / after_load).write_text((tmp_path / after_load).read_text() + "\n# edited\n")
        assert code_fingerprint(tmp_path) == base, after_load
    for loader in ("readgaze/io/onestop.py", "data_prep/sources.py", "readgaze/text.py"):
        path = tmp_path / loader
        before = path.read_bytes()
        path.write_text(before.decode() + "\n# edited\n")
        assert code_fingerprint(tmp_path) != base, loader
        path.write_bytes(before)
    assert code_fingerprint(tmp_path) == base
