"""Damaged copies of the real files in ``../shared/data`` through every reader: never silent data (issue 29).

Each variant is one real file damaged by one seeded operator of :mod:`tests.damage` (truncation, ragged rows, blank
lines, NUL bytes, byte-order marks, two exports concatenated, non-numbers, odd numbers, emptied or changed key cells,
deleted / renamed / swapped columns, header only, a latin-1 byte, line ends, trailing separators, stray quotes, TABs,
duplicated rows, another separator; for ``.asc``: damaged sample and event fields, negative timestamps, deleted and
garbage lines ...). The reader runs on the undamaged copy and on the variant, and the outcome is one of

* ``correct load``: the same tables as the undamaged file's, and the same QC records and warnings;
* ``counted repair``: tables may differ, and a QC record or warning that the undamaged file did not give names it;
* ``clean error``: a :class:`readgaze.errors.ReadgazeError` naming the damaged file and a row or column (a row, for
  damage to a row); ``clean error, file only``: naming the file alone, for damage to the whole file;
* ``unclear error``: a readgaze error naming another file or no file, or no row for damage to one row;
* ``raw traceback``: any other exception;
* ``silent``: different tables and nothing said.

The test fails on the last three. ``test_fuzz_readers`` runs a fixed set of seeds (under a minute on 2 cores);
``test_fuzz_readers_long`` (marked slow) many more. ``python -m tests.test_io_fuzz [N]`` prints the table.
"""

from __future__ import annotations

import shutil
import sys
import warnings
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import polars as pl
import pytest

try:
    from tests import damage
except ImportError:  # run from the tests folder
    import damage

from readgaze.errors import ReadgazeError

OUTCOMES = ("silent", "raw traceback", "unclear error", "clean error", "clean error, file only", "correct load",
            "counted repair", "shorter valid file")
"""The last: a file cut exactly at a line end reads as the valid file it now is; no reader can tell (OneStop's reports
state each trial's row count, and those trials are counted: a ``counted repair``)."""
ROW_OPERATORS = {"delete_cell", "extra_field", "unquoted_separator", "nul_in_field", "non_number", "odd_number",
                 "empty_cell", "key_cell", "latin1_byte", "stray_quote", "tab_in_field", "bom_mid_file",
                 "sample_value", "efix_value", "esacc_value", "asc_negative_time", "asc_garbage_line", "swap_rows",
                 "asc_swap_lines", "duplicate_column", "padded_number", "decimal_comma_cell", "cut_last_line"}
"""Operators that damage one row: an error must name the row."""


@dataclass(frozen=True)
class Output:
    tables: dict[str, pl.DataFrame]
    said: tuple[str, ...]  # QC records (with counts) and warnings


@dataclass(frozen=True)
class Target:
    name: str
    files: tuple[str, ...]  # under ../shared/data (most also under tests/files)
    damaged: int  # which of them is damaged
    read: Callable[[list[Path]], Output]
    operators: tuple
    excerpt: int | None = None  # keep only the first lines of the file (a smaller real file)


def _norm(text) -> str:
    """A message or detail with its line numbers left out (a deleted line shifts every later one)."""
    import re

    return re.sub(r"\b(lines?|rows?) \d+(?:\s*[–-]\s*\d+)?", r"\1 N", str(text))


def _said(qc=None, caught=(), extra=()) -> tuple[str, ...]:
    """What a read said: its QC records (a count alone changing says nothing new; a new reason or detail does) and
    its warnings, without line numbers."""
    records = [f"{r['step']}|{r['table']}|{r['reason']}|{r['action']}|{_norm(r['detail'])}"
               for r in (qc.records if qc else []) if r["count"]]  # a reason counted 0 times says nothing
    return tuple(sorted(set(records))) + tuple(sorted({_norm(w.message) for w in caught})) + tuple(
        sorted({_norm(e) for e in extra}))


def _qc(fn, qc) -> dict:
    """``{"qc": qc}`` when ``fn`` takes a QC log (the readers before issue 29 did not all take one)."""
    import inspect

    return {"qc": qc} if "qc" in inspect.signature(fn).parameters else {}


def _fixation_report(paths):
    from readgaze.io.dataviewer import read_fixation_report
    from readgaze.qc import QCLog

    qc = QCLog()
    return {"fixations": read_fixation_report(paths[0], source="onestop", qc=qc).collect()}, qc, ()


def _ia_report(paths):
    from readgaze.io.dataviewer import read_ia_report
    from readgaze.qc import QCLog

    qc = QCLog()
    return {"ia": read_ia_report(paths[0], source="onestop", **_qc(read_ia_report, qc)).collect()}, qc, ()


def _onestop(paths):
    from readgaze.io.onestop import load_onestop

    data = load_onestop(paths[0], paths[1])
    return ({"trials": data.trials.collect(), "words": data.words.collect(), "fixations": data.fixations.collect()},
            data.qc, ())


def _sbsat_fixations(paths):
    from readgaze.io.sbsat import read_sbsat_fixations
    from readgaze.qc import QCLog

    qc = QCLog()
    return {"fixations": read_sbsat_fixations(paths[0], qc=qc).collect()}, qc, ()


def _sbsat_trials(paths):
    from readgaze.io.sbsat import read_sbsat_trials
    from readgaze.qc import QCLog

    qc = QCLog()
    return {"trials": read_sbsat_trials(paths[0], **_qc(read_sbsat_trials, qc)).collect()}, qc, ()


def _gaze(paths):
    from readgaze.events import detect_fixations
    from readgaze.io.samples import ScreenGeometry, read_gaze_csv
    from readgaze.qc import QCLog

    qc = QCLog()
    screen = ScreenGeometry(1280, 1024, 38.0, 30.2, 68.0)
    samples = read_gaze_csv(paths[0], **_qc(read_gaze_csv, qc)).collect()
    fixations, found = detect_fixations(samples, screen=screen)
    qc.extend(found)
    return {"samples": samples, "fixations": fixations}, qc, ()


def _asc(paths):
    from readgaze.io.asc import read_asc

    rec = read_asc(paths[0])
    return ({"samples": rec.samples, "fixations": rec.fixations, "trials": rec.trials, "saccades": rec.saccades},
            rec.qc, tuple(rec.warnings))


def _labels(paths):
    """A labels table read and joined onto the SB-SAT trials (participant x book): the join's keys are checked."""
    from readgaze.data_prep.labels import attach_labels, read_table
    from readgaze.io.sbsat import read_sbsat_trials
    from readgaze.qc import QCLog

    qc = QCLog()
    table = read_table(paths[0], **_qc(read_table, qc))
    table = table.sort(table.columns)  # one row per participant x book: their order means nothing
    trials = read_sbsat_trials(paths[1]).collect()
    joined = attach_labels(trials, table, trials_file=str(paths[1]), table_file=str(paths[0]),
                           keys=[("participant_id", "subj"), ("item_id", "book")], qc=qc)
    return {"labels": table, "trials": joined.trials}, qc, tuple(joined.messages)


def _aoi(paths):
    from readgaze.qc import QCLog
    from readgaze.text import read_aoi_file

    qc = QCLog()
    layout = read_aoi_file(paths[0], **_qc(read_aoi_file, qc))
    return {"words": layout.words, "lines": layout.lines}, qc, ()


def _prep(argv: list[str], out: Path) -> tuple[dict, None, tuple]:
    """``readgaze prep ...`` run as the command runs it (its errors raised): the dataset's tables, and its QC records
    and notes as what it said."""
    import argparse
    import json

    from readgaze.data_prep import cli

    parser = argparse.ArgumentParser()
    cli.add_arguments(parser)
    cli.run(parser.parse_args([*argv, "--out", str(out), "--quiet", "--force", "--format", "parquet"]))
    manifest = json.loads((out / "manifest.json").read_text())
    tables = {name: pl.read_parquet(out / f"{name}.parquet") for name in ("trials", "words", "fixations",
                                                                          "word_measures")}
    if "samples_file" in tables["trials"].columns:  # the path of the file read: the same name in another folder
        tables["trials"] = tables["trials"].with_columns(pl.col("samples_file").str.extract(r"([^/]+)$"))
    said = tuple(f"{r['step']}|{r['table']}|{r['reason']}|{r['action']}|{_norm(r['detail'])}"
                 for r in manifest["qc"]) + tuple(manifest.get("notes", []))
    return tables, None, said


def _prep_onestop(paths):
    return _prep(["onestop", "--fixation-report", str(paths[0]), "--ia-report", str(paths[1]), "--no-cache"],
                 paths[0].parent / "ds")


def _prep_samples(paths):
    return _prep(["samples", str(paths[0]), "--layout", str(paths[1]), "--screen-px", "1280x1024", "--screen-cm",
                  "38x30.2", "--distance-cm", "68"], paths[0].parent / "ds")


def _prep_asc(paths):
    return _prep(["asc", str(paths[0]), "--layout", str(paths[1]), "--language", "de"], paths[0].parent / "ds")


ONESTOP = ("onestop_sample/fixations.csv", "onestop_sample/ia.csv")
CSV, ASC = damage.CSV_OPERATORS, damage.ASC_OPERATORS
UNORDERED_CSV = tuple(op for op in CSV if op.__name__ != "swap_rows")
"""For a report without a fixation number or time (SB-SAT's ``18sat_fixfinal.csv``): two rows swapped make another
valid report, which no reader can tell from the true one."""
ONESTOP_KEYS = ("participant_id", "TRIAL_INDEX", "article_batch", "article_id", "difficulty_level", "paragraph_id",
                "repeated_reading_trial", "question_preview", "CURRENT_FIX_INDEX", "IA_ID")
ROLES = damage.role_cell(("CURRENT_FIX_X", "CURRENT_FIX_Y", "CURRENT_FIX_START", "x", "y", "timestamp"),
                         ("CURRENT_FIX_DURATION", "CURRENT_FIX_INTEREST_AREA_ID", "IA_ID", "IA_LEFT", "IA_RIGHT",
                          "IA_TOP", "IA_BOTTOM", "start_x", "end_x", "start_y", "end_y"))
TARGETS = (
    Target("read_fixation_report", ONESTOP[:1], 0, _fixation_report, CSV + (damage.key_cell(ONESTOP_KEYS), ROLES),
           excerpt=800),
    Target("read_ia_report", ONESTOP[1:], 0, _ia_report, CSV + (damage.key_cell(ONESTOP_KEYS), ROLES), excerpt=800),
    Target("load_onestop (fixations damaged)", ONESTOP, 0, _onestop, CSV + (damage.key_cell(ONESTOP_KEYS), ROLES)),
    Target("load_onestop (IA report damaged)", ONESTOP, 1, _onestop, CSV + (damage.key_cell(ONESTOP_KEYS), ROLES)),
    Target("read_sbsat_fixations", ("pymovements_examples/18sat_fixfinal.csv",), 0, _sbsat_fixations,
           UNORDERED_CSV + (damage.key_cell(("RECORDING_SESSION_LABEL", "TRIAL_INDEX")), ROLES)),
    Target("read_sbsat_trials", ("sbsat/fixation/18sat_trialfinal.csv",), 0, _sbsat_trials,
           CSV + (damage.key_cell(("RECORDING_SESSION_LABEL", "INDEX", "page_name")),), excerpt=600),
    Target("read_gaze_csv + detect_fixations", ("toy_reading_raw/trial_0_1.csv",), 0, _gaze, CSV + (ROLES,),
           excerpt=1500),
    Target("read_asc (binocular)", ("eyelink_asc/eyelink_binocular_example.asc",), 0, _asc, ASC),
    Target("read_asc (monocular)", ("eyelink_asc/eyelink_monocular_example.asc",), 0, _asc, ASC),
    Target("read_asc (no END)", ("eyelink_asc/eyelink_monocular_no_dummy_example.asc",), 0, _asc, ASC),
    Target("labels read_table + attach_labels", ("sbsat/fixation/18sat_labels.csv",
                                                 "sbsat/fixation/18sat_trialfinal.csv"), 0, _labels,
           CSV + (damage.key_cell(("subj", "book")),)),
    Target("read_aoi_file (PoTeC words)", ("pymovements_examples/potec_word_aoi_b0.tsv",), 0, _aoi, CSV + (ROLES,)),
)


PREP_TARGETS = (
    Target("prep onestop (IA report damaged)", ONESTOP, 1, _prep_onestop, CSV + (damage.key_cell(ONESTOP_KEYS), ROLES)),
    Target("prep samples", ("toy_reading_raw/trial_0_1.csv", "toy_reading_raw/toy_text_1_1_aoi.csv"), 0,
           _prep_samples, CSV + (ROLES,), excerpt=1500),
    Target("prep asc", ("eyelink_asc/eyelink_monocular_example.asc", "pymovements_examples/potec_word_aoi_b0.tsv"),
           0, _prep_asc, ASC),
)
"""``readgaze prep`` end to end (its errors, its dataset, its manifest): the slow test only (seconds per variant)."""


def _copy(shared: Path, target: Target, folder: Path) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    out = []
    for i, name in enumerate(target.files):
        dest = folder / Path(name).name
        data = (shared / name).read_bytes()
        if target.excerpt and i == target.damaged:
            data = b"".join(data.splitlines(keepends=True)[:target.excerpt])
        dest.write_bytes(data)
        out.append(dest)
    return out


def _run(target: Target, paths: list[Path]) -> Output:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        tables, qc, extra = target.read(paths)
    tables = {k: (v.collect() if isinstance(v, pl.LazyFrame) else v) for k, v in tables.items()}
    return Output(tables, _said(qc, [w for w in caught if issubclass(w.category, UserWarning)], extra))


LINE_COLUMNS = ("line", "start_line", "end_line")
"""Where an ``.asc`` record lies in its file: a line added or deleted above shifts it, as it shifts in an editor."""


def _same(a: pl.DataFrame, b: pl.DataFrame, renamed: dict[str, str], dropped: str | None) -> bool:
    """Equal values under the same names: a renamed, moved or deleted free column is read as the file says, and
    ``.asc`` line numbers follow the file."""
    a = a.drop([*renamed, *renamed.values()], strict=False)  # a renamed column is read under its new name (or, in a
    b = b.drop([*renamed, *renamed.values()], strict=False)  # loader that places columns by name, elsewhere)
    b = b.drop([c for c in (dropped,) if c and c not in a.columns], strict=False)
    a, b = a.drop(LINE_COLUMNS, strict=False), b.drop(LINE_COLUMNS, strict=False)
    return set(a.columns) == set(b.columns) and a.select(sorted(a.columns)).equals(b.select(sorted(b.columns)))


def _renamed(what: str) -> dict[str, str]:
    import re

    hit = re.match(r"column '(.*)' renamed '(.*)'$", what)
    return {hit.group(2): hit.group(1)} if hit else {}


def _dropped(what: str) -> str | None:
    import re

    hit = re.match(r"column '(.*)' deleted$", what)
    return hit.group(1) if hit else None


def classify(target: Target, reference: Output, paths: list[Path], op: str, what: str = "") -> tuple[str, str]:
    """``(outcome, detail)`` of one damaged variant (module docstring)."""
    damaged = paths[target.damaged].name
    try:
        out = _run(target, paths)
    except ReadgazeError as error:
        if str(error).startswith("internal error"):  # readgaze prep's catch-all: a library exception got through
            return "raw traceback", str(error)[:300]
        named = error.file is not None and Path(error.file).name == damaged
        where = error.row is not None or " line " in str(error) or " lines " in str(error)
        if not named or (op in ROW_OPERATORS and not where):
            return "unclear error", f"{type(error).__name__}: {error}"
        if not where and error.column is None:  # damage to the whole file (header only, another encoding ...)
            return "clean error, file only", f"{type(error).__name__}: {error}"
        return "clean error", f"{type(error).__name__}: {error}"
    except Exception as error:  # noqa: BLE001 -- what the test looks for
        return "raw traceback", f"{type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''}"
    if out.said != reference.said:
        new = sorted(set(out.said) - set(reference.said))
        if not what.endswith("at a line end") or any("rows_differ" in n for n in new):
            return "counted repair", "; ".join(new)[:300]
        return "shorter valid file", "; ".join(new)[:300]  # fewer rows change counts, but nothing names the cut
    renamed, dropped = _renamed(what), _dropped(what)
    differ = [k for k in out.tables if k not in reference.tables or not _same(out.tables[k], reference.tables[k],
                                                                               renamed, dropped)]
    if not differ:
        return "correct load", ""
    if what.endswith("at a line end"):
        return "shorter valid file", f"tables differ: {differ}"
    return "silent", f"tables differ: {differ}"


CI_SEEDS = 8
"""Seeds per target in CI."""
SHIFT = 6
"""Target ``t`` starts at operator ``6 t``: with :data:`CI_SEEDS`, the targets together draw every operator (a test
checks it)."""


def fuzz(shared: Path, folder: Path, seeds: range, targets=TARGETS) -> list[dict]:
    """Every (target, seed) variant's outcome: one dict per variant that applies."""
    rows = []
    for t, target in enumerate(targets):
        clean = _copy(shared, target, folder / "clean")
        reference = _run(target, clean)
        for seed in seeds:
            data = clean[target.damaged].read_bytes()
            drawn = damage.mutate(data, seed, target.operators, target.name, shift=t * SHIFT)
            if drawn is None:
                continue
            op, what, damaged = drawn
            variant = folder / f"v{seed}"
            shutil.rmtree(variant, ignore_errors=True)
            paths = _copy(shared, target, variant)
            paths[target.damaged].write_bytes(damaged)
            outcome, detail = classify(target, reference, paths, op, what)
            rows.append({"target": target.name, "seed": seed, "operator": op, "damage": what, "outcome": outcome,
                         "detail": detail})
            shutil.rmtree(variant, ignore_errors=True)
        shutil.rmtree(folder / "clean", ignore_errors=True)
    return rows


def table(rows: list[dict]) -> str:
    counts = Counter(r["outcome"] for r in rows)
    lines = ["| outcome | variants |", "|---|---|"] + [f"| {o} | {counts.get(o, 0)} |" for o in OUTCOMES]
    return "\n".join(lines)


def _failures(rows: list[dict]) -> list[str]:
    bad = [r for r in rows if r["outcome"] in ("silent", "raw traceback", "unclear error")]
    return [f"{r['target']} seed {r['seed']} {r['operator']} ({r['damage']}): {r['outcome']}: {r['detail']}"
            for r in bad]


def _present(root: Path, targets=TARGETS) -> tuple[Target, ...]:
    """The targets whose files are all under ``root``."""
    return tuple(t for t in targets if all((root / f).is_file() for f in t.files))


def test_fuzz_readers(small_data, tmp_path):
    """Every operator at least once (about 95 variants; ~35 s on 2 busy cores), on the excerpts of ``tests/files``
    (every target but the SB-SAT labels, which stay in ``../shared``: they hold the readers' personal attributes)."""
    targets = _present(small_data)
    assert [t.name for t in TARGETS if t not in targets] == ["labels read_table + attach_labels"]
    rows = fuzz(small_data, tmp_path, range(CI_SEEDS), targets)
    drawn = {r["operator"] for r in rows}
    every = {op.__name__ for target in TARGETS for op in target.operators}
    assert len(rows) > 60 and drawn == every, sorted(every - drawn)
    assert not _failures(rows), "\n".join([table(rows), *_failures(rows)])


@pytest.mark.slow
def test_fuzz_readers_long(shared_data, tmp_path):
    """About 1,180 variants, 100 seeds per target (about 3 minutes on 2 busy cores)."""
    rows = fuzz(shared_data, tmp_path, range(100, 200))
    assert len(rows) > 1000
    assert not _failures(rows), "\n".join([table(rows), *_failures(rows)])


@pytest.mark.slow
def test_fuzz_prep(shared_data, tmp_path):
    """``readgaze prep`` on damaged inputs: 12 seeds x 3 modes (about 20 s on 2 busy cores)."""
    rows = fuzz(shared_data, tmp_path, range(12), PREP_TARGETS)
    assert not _failures(rows), "\n".join([table(rows), *_failures(rows)])


if __name__ == "__main__":  # python -m tests.test_io_fuzz [first seed] [number of seeds] [prep]
    import tempfile

    from tests.conftest import SHARED_DATA

    first, n = (int(a) for a in (sys.argv[1:3] + ["0", "12"][len(sys.argv[1:3]):]))
    with tempfile.TemporaryDirectory() as tmp:
        found = fuzz(SHARED_DATA, Path(tmp), range(first, first + n), PREP_TARGETS if "prep" in sys.argv else TARGETS)
    print(table(found))
    for r in found:
        if r["outcome"] not in ("correct load",):
            print(f"{r['outcome']:15} {r['target']:35} {r['seed']:4} {r['operator']:20} {r['damage'][:60]}  "
                  f"{r['detail'][:200]}")
