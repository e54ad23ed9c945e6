"""``readgaze inspect PATH...``: summarise reports, EyeLink ``.asc`` files and dataset folders.

For a Data Viewer fixation or interest-area report (OneStop, SB-SAT or generic; detected from the
columns) it prints participants, trials, fixations or IA rows, the interest-area id base, null counts
per canonical column and repeated keys. When a fixation report and an IA report are inspected together,
the fixation report's id base is found by label agreement with the IA report; alone, it is 0 when an
id is 0 and otherwise reported as unknown (never assumed). ``.asc`` files go to :func:`readgaze.io.asc.inspect_asc`; a
dataset folder (with ``manifest.json``) shows its tables' row counts. An IA report also lists the
interest-area faults of :func:`readgaze.text.ia_quirks`. Nothing is modified.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import polars as pl

from readgaze.dataset import MANIFEST, table_file
from readgaze.errors import ReadgazeError
from readgaze.io.csv import detect_separator, scan_csv
from readgaze.io.dataviewer import detect_ia_id_base, read_fixation_report, read_ia_report
from readgaze.io.samples import MISSING_GAZE
from readgaze.schema import TABLES
from readgaze.tasks import TASKS

_IA_CANONICAL = ("trial_id", "text_id", "ia_index", "word", "left_px", "right_px", "top_px", "bottom_px")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("paths", nargs="+", metavar="PATH",
                        help="fixation / IA / trial report (.csv, .tsv), .asc file, or dataset folder")
    parser.add_argument("--source", choices=("dataviewer", "onestop", "sbsat"), default=None,
                        help="report source (default: detected from the columns)")
    parser.add_argument("--encoding", default="utf-8",
                        help="text encoding of .asc files and reports (default utf-8; e.g. cp1252)")
    parser.add_argument("--separator", default=None,
                        help="field separator of the reports (default: detected; 'tab', ';', ',')")
    parser.add_argument("--decimal-comma", action="store_true", help="report numbers written 390,6")
    parser.add_argument("--screen-px", default=None, metavar="WIDTHxHEIGHT",
                        help=".asc screen size for off-screen flags, e.g. 1280x1024 (default: DISPLAY_COORDS, "
                        "else GAZE_COORDS)")
    parser.add_argument("--trial-message", default=None,
                        help=".asc regex on message text that starts a trial (default: one trial per block)")


def run(args: argparse.Namespace) -> int:
    text, ok = inspect_paths(args.paths, source=args.source, encoding=args.encoding,
                             screen_px=_screen_px(args.screen_px),
                             trial_message=args.trial_message, separator=args.separator,
                             decimal_comma=args.decimal_comma)
    print(text)
    return 0 if ok else 2


def _screen_px(text: str | None) -> tuple[float, float] | None:
    if text is None:
        return None
    try:
        width, height = (float(v) for v in text.lower().split("x"))
    except ValueError:
        raise ReadgazeError(f"--screen-px {text!r}: expected WIDTHxHEIGHT, e.g. 1280x1024") from None
    return width, height


def inspect_paths(paths: list[str | Path], *, source: str | None = None, encoding: str = "utf-8",
                  screen_px: tuple[float, float] | None = None,
                  trial_message: str | None = None, separator: str | None = None,
                  decimal_comma: bool = False) -> tuple[str, bool]:
    """Return the printed summary of every path and whether all could be read.

    ``encoding``, ``screen_px`` and ``trial_message`` apply to ``.asc`` files
    (:func:`readgaze.io.asc.read_asc`); ``encoding``, ``separator`` and ``decimal_comma`` to reports. A fixation
    report with character interest areas and no coordinates (CopCo's) is read by
    :func:`readgaze.io.charreport.read_char_report`. An unreadable path gives one line, ``PATH: error: <file, row:
    message>``.
    """
    asc_options = {"encoding": encoding, "screen_px": screen_px, "trial_message": trial_message}
    named = {"tab": "\t", "\\t": "\t", "comma": ",", "semicolon": ";", "space": " "}  # as readgaze prep takes it
    separator = named.get(separator.lower(), separator) if separator else None
    if separator is not None and len(separator) != 1:
        raise ReadgazeError(f"--separator {separator!r}: expected one character, or tab / comma / semicolon")
    dialect = {"separator": separator, "decimal_comma": decimal_comma, "encoding": encoding}
    kinds = {}
    for p in map(Path, paths):
        try:
            kinds[p] = _kind(p, **dialect)
        except ReadgazeError as e:
            kinds[p] = ("error", str(e))
    ia_partner = next((p for p, k in kinds.items() if k[0] == "ia"), None)
    blocks, ok = [], True
    for p, (kind, detail) in kinds.items():
        try:
            if kind == "error":
                raise ReadgazeError(detail)
            extra = (asc_options if kind == "asc" else dialect if kind in ("fixations", "ia")
                     else {"encoding": encoding} if kind == "char_fixations" else {})
            blocks.append(_FORMATTERS[kind](p, source or detail, ia_partner, **extra))
        except ReadgazeError as e:
            blocks.append(f"{p}: error: {e}")
            ok = False
    return "\n\n".join(blocks), ok


def _kind(path: Path, separator: str | None = None, encoding: str = "utf-8", decimal_comma: bool = False
          ) -> tuple[str, str | None]:
    if path.is_dir():
        if (path / MANIFEST).is_file():
            return "dataset", None
        raise ReadgazeError(f"{path}: a folder without {MANIFEST} is not a readgaze dataset")
    if path.suffix.lower() == ".asc":
        return "asc", None
    try:
        cols = set(scan_csv(path, separator=separator, encoding=encoding, decimal_comma=decimal_comma)
                   .collect_schema().names())
    except ReadgazeError:  # a damaged body (e.g. a three-quote label): the header still tells the kind
        cols = _header_names(path)
        if "CURRENT_FIX_X" in cols or "CURRENT_FIX_INTEREST_AREA_ID" not in cols:
            raise
    source = ("onestop" if {"article_batch", "question_preview"} <= cols
              else "sbsat" if "page_name" in cols else "dataviewer")
    if "CURRENT_FIX_X" not in cols and {"CURRENT_FIX_DURATION", "CURRENT_FIX_INTEREST_AREA_ID"} <= cols:
        return "char_fixations", source
    if {"CURRENT_FIX_X", "CURRENT_FIX_DURATION"} & cols:
        return "fixations", source
    if {"IA_ID", "IA_LABEL"} <= cols:
        return "ia", source
    if {"INDEX", "FIXATION_COUNT"} <= cols:
        return "trial_report", source
    return "table", source


def _header_names(path: Path) -> set[str]:
    """The column names of a report's first line (TAB, ';' or ','-separated; BOM and quotes removed)."""
    with open(path, "rb") as f:
        line = f.readline().decode("utf-8-sig", errors="replace").rstrip("\r\n")
    sep = next((c for c in "\t;," if c in line), "\t")
    return {name.strip().strip('"') for name in line.split(sep)}


def _fmt(n) -> str:
    return f"{n:,}" if isinstance(n, int) else str(n)


def _nulls(lf: pl.LazyFrame, columns) -> str:
    have = lf.collect_schema().names()
    if not any(c in have for c in columns):
        return ""
    counts = lf.select([pl.col(c).null_count() for c in columns if c in have]).collect().row(0, named=True)
    return ", ".join(f"{c} {_fmt(n)}" for c, n in counts.items())


def _duplicates(lf: pl.LazyFrame, key: list[str]) -> int:
    return lf.group_by(key).agg(pl.len()).select((pl.col("len") - 1).sum()).collect().item() or 0


def _char_fixations(path: Path, _source, _partner, encoding: str = "utf-8") -> str:
    """A fixation report without coordinates whose interest areas are characters."""
    from readgaze.io.charreport import describe_char_report

    return "\n".join(describe_char_report(path, encoding=encoding))


def _fixations(path: Path, source: str, ia_partner: Path | None, **dialect) -> str:
    fix0 = read_fixation_report(path, source=source, ia_id_base=0, check_keys=False, **dialect)
    low = fix0.select(pl.col("ia_index").min()).collect().item()
    if source != "dataviewer":
        base, how = 1, f"the {source} convention; give the IA report too to check it"
    elif low == 0:
        base, how = 0, "an interest-area id is 0"
    else:
        base, how = None, "unknown: give the IA report too, or pass ia_id_base= when reading"
    pairing = []
    if ia_partner is not None:
        ia = read_ia_report(ia_partner, source=source, check_keys=False)
        pairing = _pairing(fix0, ia, ia_partner.name)
        check = detect_ia_id_base(fix0, ia, fixation_file=path, ia_file=ia_partner)
        if check.base is not None:
            base = check.base
            how = (f"label agreement with {ia_partner.name}: base 1 {check.agreement[1]:.1%}, "
                   f"base 0 {check.agreement[0]:.1%} of {_fmt(check.checked)} fixations")
    shift = base or 0  # unknown base: off-word counts do not depend on it
    fix = fix0.with_columns(*(pl.when(pl.col(c) - shift >= 0).then(pl.col(c) - shift).alias(c)
                              for c in ("ia_index", "word_index")))
    c = fix.select(pl.col("participant_id").n_unique().alias("p") if "participant_id" in
                   fix.collect_schema().names() else pl.lit(None).alias("p"),
                   pl.col("trial_id").n_unique().alias("t"), pl.len().alias("n"),
                   pl.col("word_index").is_null().sum().alias("off")).collect().row(0, named=True)
    return "\n".join([
        f"{path}: Data Viewer fixation report (source {source}, separator {detect_separator(path)!r})",
        f"  participants: {_fmt(c['p'])}", f"  trials: {_fmt(c['t'])}", f"  fixations: {_fmt(c['n'])}",
        f"  interest-area id base: {base} ({how})",
        f"  off-word fixations (word_index null): {_fmt(c['off'])}",
        f"  duplicate keys (trial_id, fixation_index): {_fmt(_duplicates(fix, ['trial_id', 'fixation_index']))}",
        f"  nulls per canonical column: {_nulls(fix, TABLES['fixations'])}", *pairing])


def _pairing(fix: pl.LazyFrame, ia: pl.LazyFrame, ia_name: str) -> list[str]:
    """What ``readgaze prep`` will drop for want of a partner: participants and trials in one report only."""
    lines = []
    keys = [k for k in ("participant_id", "trial_id")
            if k in fix.collect_schema().names() and k in ia.collect_schema().names()]
    if not keys:
        return lines
    ids = [f.select(pl.col(k).unique().implode() for k in keys).collect().row(0, named=True) for f in (fix, ia)]
    for key, what in (("participant_id", "participants"), ("trial_id", "trials")):
        if key not in keys:
            continue
        ours, theirs = pl.Series(ids[0][key]), pl.Series(ids[1][key])
        for label, only in ((f"in this report only (no rows in {ia_name})", ours.filter(~ours.is_in(theirs.implode()))),
                            (f"in {ia_name} only (no fixation rows)", theirs.filter(~theirs.is_in(ours.implode())))):
            names = only.drop_nulls().sort().to_list()
            shown = ", ".join(map(str, names[:5])) + (f", and {len(names) - 5:,} more" if len(names) > 5 else "")
            lines.append(f"  {what} {label}: {_fmt(len(names))}" + (f" ({shown})" if names else ""))
    if lines:
        lines.append("  (readgaze prep drops fixations of trials without interest areas and trials without "
                     "fixations, and counts both)")
    return lines


def _ia(path: Path, source: str, _partner, **dialect) -> str:
    ia0 = read_ia_report(path, source=source, ia_id_base=0, check_keys=False, **dialect)
    base = 0 if ia0.select(pl.col("ia_index").min()).collect().item() == 0 else 1
    c = ia0.select(pl.col("participant_id").n_unique().alias("p") if "participant_id" in
                   ia0.collect_schema().names() else pl.lit(None).alias("p"),
                   pl.col("trial_id").n_unique().alias("t"), pl.col("text_id").n_unique().alias("x"),
                   pl.len().alias("n")).collect().row(0, named=True)
    measures = [n for n in ia0.collect_schema().names() if n.startswith("IA_")]
    return "\n".join([
        f"{path}: Data Viewer interest-area report (source {source}, separator {detect_separator(path)!r})",
        f"  participants: {_fmt(c['p'])}", f"  trials: {_fmt(c['t'])}", f"  texts: {_fmt(c['x'])}",
        f"  words (IA rows): {_fmt(c['n'])}",
        f"  interest-area id base: {base} ({'an IA_ID is 0' if base == 0 else 'no IA_ID is 0'})",
        f"  duplicate keys (trial_id, ia_index): {_fmt(_duplicates(ia0, ['trial_id', 'ia_index']))}",
        f"  nulls per canonical column: {_nulls(ia0, _IA_CANONICAL)}",
        f"  nulls per IA_* column: {_nulls(ia0, measures) or 'none'}",
        *_quirks(ia0, path)])


def _quirks(ia: pl.LazyFrame, path: Path) -> list[str]:
    from readgaze.text import ia_quirks

    found = [r for r in ia_quirks(ia, name=path.name).records if r["count"]]
    return [f"  {r['action']}: {r['reason']}: {_fmt(r['count'])} ({r['detail']})" for r in found] or [
        "  interest-area quirks: none"]


def _trial_report(path: Path, source: str, _partner) -> str:
    from readgaze.io.sbsat import read_sbsat_trials
    t = read_sbsat_trials(path)
    c = t.select(pl.col("participant_id").n_unique().alias("p"), pl.len().alias("n"),
                 pl.col("text_id").n_unique().alias("x")).collect().row(0, named=True)
    return "\n".join([f"{path}: SB-SAT trial report", f"  participants: {_fmt(c['p'])}",
                      f"  trials: {_fmt(c['n'])}", f"  texts (pages): {_fmt(c['x'])}",
                      f"  duplicate trial_id: {_fmt(_duplicates(t, ['trial_id']))}",
                      f"  nulls per canonical column: {_nulls(t, TABLES['trials'])}"])


def _table(path: Path, source: str, _partner) -> str:
    lf = scan_csv(path)
    n = lf.select(pl.len()).collect().item()
    schema = lf.collect_schema()
    lines = [f"{path}: table (separator {detect_separator(path)!r}), {_fmt(n)} rows",
             "  columns: " + ", ".join(f"{k} ({v})" for k, v in schema.items()),
             f"  nulls: {_nulls(lf, schema.names())}"]
    numeric = [c for c, t in schema.items() if t.is_numeric()]
    if numeric:  # EyeLink's (and pymovements') "no gaze" value in a sample export
        counts = lf.select((pl.col(c) == MISSING_GAZE).sum() for c in numeric).collect().row(0, named=True)
        found = {c: k for c, k in counts.items() if k}
        if found:
            lines.append(f"  {MISSING_GAZE:g} (no gaze, EyeLink's missing value): "
                         + ", ".join(f"{c} {_fmt(k)}" for c, k in found.items())
                         + "; readgaze prep samples reads these as missing (--missing-value)")
    return "\n".join(lines)


def _asc(path: Path, _source, _partner, **options) -> str:
    from readgaze.io.asc import inspect_asc

    return inspect_asc(path, **options)


def _dataset(path: Path, _source, _partner) -> str:
    lines = [f"{path}: readgaze dataset folder"]
    for f in sorted([*path.glob("*.parquet"), *path.glob("*.csv")]):
        scan = pl.scan_parquet(f) if f.suffix == ".parquet" else pl.scan_csv(f, infer_schema=False)
        name = f.stem if f.suffix == ".parquet" else f.name
        lines.append(f"  {name}: {_fmt(scan.select(pl.len()).collect().item())} rows")
    lines += _manifest_lines(json.loads((path / MANIFEST).read_text()))
    trials = path / table_file("trials")
    trials = trials if trials.is_file() else path / table_file("trials", "csv")
    if trials.is_file():
        frame = pl.read_parquet(trials) if trials.suffix == ".parquet" else pl.read_csv(trials)
        from readgaze.lines.agreement import describe as describe_agreement

        lines += [f"  warning: {line}" for line in describe_agreement(frame)]
        lines += describe_tasks(frame)
    return "\n".join(lines)


def _manifest_lines(manifest: dict) -> list[str]:
    """How a dataset was prepared (``readgaze prep``'s manifest): mode and line assigner, each source, rows in and
    out, and every nonzero count of dropped, changed and flagged rows by reason."""
    lines = []
    config = manifest.get("config", {})
    if config:
        lines.append("  prepared: " + ", ".join(f"{k} {config[k]}" for k in ("mode", "line_assigner", "loader")
                                                 if config.get(k)))
        shown = ("screen_px", "screen_cm", "distance_cm", "origin", "detector", "time_unit", "separator",
                 "decimal_comma", "columns")
        if any(config.get(k) for k in shown):
            text = {k: json.dumps(v) if isinstance(v, dict) else v for k, v in config.items()}
            lines.append("  settings: " + ", ".join(f"{k} {text[k]}" for k in shown if config.get(k)))
    for role, files in sorted(manifest.get("sources", {}).items()):
        files = files if isinstance(files, list) else [files]
        if len(files) > 6:  # e.g. one .ias file per screen: the first three and how many
            lines.append(f"  source {role}: {len(files):,} files, e.g.:")
            files = files[:3]
        for f in files:
            if isinstance(f, dict):
                lines.append(f"  source {role}: {f.get('path', f.get('name'))} ({_fmt(f.get('bytes', '?'))} bytes, "
                             f"sha256 {str(f.get('sha256', '?'))[:12]}...)")
            else:
                lines.append(f"  source {role}: {f}")
    rows_in, rows_out = manifest.get("rows_in", {}), manifest.get("rows_out", {})
    if rows_out:
        lines.append("  rows (in -> out): " + ", ".join(
            f"{t} {_fmt(rows_in[t])} -> {_fmt(n)}" if t in rows_in else f"{t} {_fmt(n)}" for t, n in rows_out.items()))
    lines += [f"  prep said: {note}" for note in manifest.get("notes", [])]
    for table, actions in sorted(manifest.get("qc_summary", {}).items()):
        for action in ("dropped", "changed", "flagged", "warning"):
            counted = {r: n for r, n in actions.get(action, {}).items() if n}
            if counted:
                lines.append(f"  {action} {table}: " + ", ".join(f"{r} {_fmt(n)}" for r, n in counted.items()))
    return lines


N_FOLDS = 10
"""The configs' default ``data.n_folds``."""


def _task_labels(trials: pl.DataFrame) -> dict[str, pl.DataFrame]:
    """Per task of the registry (:data:`readgaze.tasks.TASKS`), its trials with a ``label`` column (the class name,
    or the value of a regression task), or the reason it has none. goal_question's label (the question's role) needs
    the paragraph's questions: its trials are shown by their question id."""
    out: dict = {}
    for name, task in TASKS.items():
        missing = task.missing(trials.columns)
        if task.label is None:  # goal_question
            missing = [c for c in ("reading_goal", "onestopqa_question_id") if c not in trials.columns]
        if missing and task.level == "reader":  # a reader's trait (CopCo): listed when the data has it
            continue
        if missing:
            out[name] = f"no {missing[0]} column"
        elif task.label is None:
            out[name] = trials.filter((pl.col("reading_goal") == "information_seeking")
                                      & pl.col("onestopqa_question_id").is_not_null()).with_columns(
                pl.col("onestopqa_question_id").cast(pl.String).alias("label"))
        else:
            labelled = task.labelled(trials).filter(pl.col("label").is_not_null())
            out[name] = labelled if task.kind == "regression" else labelled.with_columns(
                pl.col("label").replace_strict(dict(enumerate(task.classes)), return_dtype=pl.String))
    return out


def describe_tasks(trials: pl.DataFrame) -> list[str]:
    """Per task: label counts, participants, items, whether its folds can be built, and warnings.

    Warnings: one label value (the task measures nothing); a label constant within every participant (a model can
    read it off a participant seen in training: only the new-participant regimes measure decoding) or item.
    Attach labels with ``readgaze prep ... --trials LABELS.csv``.
    """
    lines = []
    for task, labelled in _task_labels(trials).items():
        if isinstance(labelled, str) or labelled.height == 0:
            why = labelled if isinstance(labelled, str) else "no trial has a label"
            lines.append(f"  task {task}: not available ({why}; attach labels with readgaze prep ... "
                         "--trials LABELS.csv)")
            continue
        if TASKS[task].kind == "regression":  # one line of values instead of label counts
            values = labelled["label"]
            counts = pl.DataFrame({"label": [f"{values.min():.4g}-{values.max():.4g} ({values.n_unique():,} "
                                             f"distinct values)"], "len": [labelled.height]})
        else:
            counts = labelled.group_by("label").len().sort("label")
        participants = labelled["participant_id"].n_unique() if "participant_id" in labelled.columns else 0
        items = labelled["item_id"].n_unique() if "item_id" in labelled.columns else 0
        smallest = min(participants, items)
        folds = (f"yes ({N_FOLDS} participant x item folds)" if smallest >= N_FOLDS else
                 f"not with {N_FOLDS}: use --data.n_folds {smallest} (or fewer, at least 3)" if smallest >= 3 else
                 "no: cv needs at least 3 participants and 3 items (fit falls back to random trial folds, "
                 "which leak participants and items)")
        lines += [f"  task {task}: {labelled.height:,} labelled trials; labels "
                  + ", ".join(f"{r['label']} {r['len']:,}" for r in counts.iter_rows(named=True)),
                  f"    participants {participants:,}, items {items:,}; folds: {folds}"]
        if counts.height < 2 and TASKS[task].kind != "regression":
            lines.append(f"    warning: one class only ({counts['label'][0]}): a model of this task measures "
                         "nothing")
            continue
        if TASKS[task].kind == "regression" and labelled["label"].n_unique() < 2:
            lines.append(f"    warning: one value only ({labelled['label'][0]:.4g}): a model of this task measures "
                         "nothing")
            continue
        for unit, column in (("participant", "participant_id"), ("item", "item_id")):
            if column in labelled.columns:
                per = labelled.group_by(column).agg(pl.col("label").n_unique().alias("n"))
                if per.height > 1 and per["n"].max() == 1:
                    article = "an" if unit == "item" else "a"
                    lines.append(f"    warning: the label is constant within every {unit} ({per.height:,}): a model "
                                 f"can read it off {article} {unit} seen in training, so only the new-{unit} regimes "
                                 "measure decoding")
    return lines


_FORMATTERS = {"fixations": _fixations, "char_fixations": _char_fixations, "ia": _ia, "trial_report": _trial_report,
               "table": _table, "asc": _asc, "dataset": _dataset}
