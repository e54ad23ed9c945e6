"""Loaders for the three ``readgaze prep`` modes, each returning canonical tables.

* ``onestop``: :func:`readgaze.io.onestop.load_onestop` (a column map, separator or decimal comma first rewrites the
  reports to OneStop's names in a temporary folder);
* ``dataviewer``: a Data Viewer fixation report with its word boxes from, in this order, an interest-area report
  (``--ia-report``), a word AOI table (``--aoi``: pymovements/PoTeC style, or any table through an ``aoi`` column
  map), or the fixation report's own interest-area columns (id and label; the boxes are then estimated from the
  fixations on each word and the report's own word assignment is kept: line assigner ``report``);
* ``asc``: EyeLink ``.asc`` recordings (:func:`readgaze.io.asc.read_asc`) plus a text layout file;
* ``samples``: gaze-sample CSVs (:func:`readgaze.io.samples.read_gaze_csv`; Tobii, SMI, pymovements datasets), their
  fixations detected with pymovements' I-VT or I-DT (:func:`readgaze.events.detect_fixations`), plus a text layout.

:func:`sniff` tells what a file looks like, so a file given to the wrong mode gets a message naming the right one.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import polars as pl

from readgaze.data_prep.columns import SAMPLE_DEFAULTS, for_table, unused
from readgaze.errors import ConfigError, ReadgazeError
from readgaze.io.samples import MISSING_GAZE
from readgaze.qc import QCLog
from readgaze.text import TextLayout, layout_from_ia_rows, read_aoi_file, read_passages


@dataclass
class Loaded:
    """Canonical input tables plus what the manifest records about loading."""

    trials: pl.DataFrame
    words: pl.DataFrame
    fixations: pl.DataFrame
    qc: QCLog
    sources: dict[str, list[str]]
    id_bases: dict = field(default_factory=dict)
    loader: str = ""
    aliases: dict[str, str] = field(default_factory=dict)
    """``{source column: trials column}`` a labels table may use as join keys (``TRIAL_INDEX`` -> ``trial``)."""
    line_assigner: str | None = None
    """The assigner the words require (``report`` when the boxes were estimated), else None."""
    warnings: list[str] = field(default_factory=list)
    """The readers' warnings (each names its file and line), printed by ``readgaze prep``."""


# --- what a file looks like -----------------------------------------------------------------------------------

KINDS = {
    "asc": "an EyeLink .asc recording: use  readgaze prep asc FILE.asc --layout LAYOUT (its own fixations), or "
           "export its samples for  readgaze prep samples",
    "onestop_fixations": "a OneStop fixation report: use  readgaze prep onestop --fixation-report F --ia-report IA",
    "onestop_ia": "a OneStop interest-area report: use  readgaze prep onestop --fixation-report F --ia-report IA",
    "fixations": "a Data Viewer fixation report: use  readgaze prep dataviewer --fixation-report FILE",
    "ia": "a Data Viewer interest-area report: give it as --ia-report (or, in asc and samples modes, as --layout)",
    "aoi": "a word AOI table: give it as --aoi (dataviewer mode) or --layout (asc and samples modes)",
    "passages": "a passages.json layout: give it as --layout in asc or samples mode",
    "sbsat_trials": "the SB-SAT trial report: give it as --trials (labels, items and answers per trial)",
    "table": "a table that is none of the above",
}


def sniff(path) -> str:
    """One of :data:`KINDS` from the file's first bytes (never the whole file)."""
    path = Path(path)
    if not path.is_file():
        raise ConfigError("no such file", file=path)
    if path.suffix.lower() == ".json":
        return "passages"
    if path.suffix.lower() in (".parquet", ".pq"):
        return "table"
    head = path.open("rb").read(8192).decode("utf-8", errors="replace").lstrip("\ufeff")
    if path.suffix.lower() == ".asc" or head.startswith("** ") or any(
            line.split("\t")[0].split(" ")[0] in ("MSG", "SFIX", "EFIX", "START") for line in head.splitlines()[:50]):
        return "asc"
    first = head.splitlines()[0] if head else ""
    if "CURRENT_FIX_" in first:
        return "onestop_fixations" if "question_preview" in first and "article_batch" in first else "fixations"
    if "IA_ID" in first and "IA_LABEL" in first:
        return "onestop_ia" if "question_preview" in first and "article_batch" in first else "ia"
    if "start_x" in first and "end_x" in first or "top_left_x" in first:
        return "aoi"
    if "INDEX" in first and "page_name" in first and "correct_answer" in first:
        return "sbsat_trials"
    return "table"


def check_kind(path, expected: tuple[str, ...], option: str) -> None:
    """Raise a :class:`ConfigError` naming the right mode when ``path`` looks like another mode's input."""
    kind = sniff(path)
    if kind in expected or kind == "table":
        return
    raise ConfigError(f"{option} looks like {KINDS[kind]}", file=path)


# --- onestop --------------------------------------------------------------------------------------------------

def load_onestop(fixation_report, ia_report, columns: dict | None = None, *, separator: str | None = None,
                 decimal_comma: bool = False) -> Loaded:
    """OneStop reports -> canonical tables through :func:`readgaze.io.onestop.load_onestop`."""
    from readgaze.io.onestop import load_onestop as _load

    loader = "readgaze.io.onestop.load_onestop"
    originals = {"fixation_report": [str(fixation_report)], "ia_report": [str(ia_report)]}
    with tempfile.TemporaryDirectory(prefix="readgaze_onestop_") as tmp:
        if columns or separator or decimal_comma:
            fixation_report = _rewrite(fixation_report, "fixations", columns or {}, separator, decimal_comma, tmp)
            ia_report = _rewrite(ia_report, "ia", columns or {}, separator, decimal_comma, tmp)
        data = _load(fixation_report, ia_report)
        fixations = data.fixations.lazy().collect()
        trials, words = data.trials.lazy().collect(), data.words.lazy().collect()
    if "report_ia_index" not in fixations.columns and "word_index" in fixations.columns:
        fixations = fixations.rename({"word_index": "report_word_index"})
    fixations = fixations.drop("line_index", "word_index", "ia_index", strict=False)
    return Loaded(trials=trials, words=words, fixations=fixations, qc=data.qc, sources=originals,
                  id_bases=dict(data.id_bases or {}), loader=loader,
                  aliases={"RECORDING_SESSION_LABEL": "participant_id"})


def _rewrite(path, table: str, spec: dict, separator, decimal_comma, tmp: str) -> Path:
    """A copy of a OneStop report with the mapped columns under OneStop's names, comma separated."""
    from readgaze.io.csv import header, scan_csv
    from readgaze.io.sources import SOURCES

    names = header(path, separator=separator)
    mapping = for_table(spec, table, names)
    defaults = SOURCES["onestop"].fixation_columns if table == "fixations" else SOURCES["onestop"].ia_columns
    rename = {}
    for role, column in mapping.items():
        if column not in names:
            raise ConfigError(f"columns: {role!r} -> {column!r}, but the file has no column {column!r}", file=path,
                              column=column)
        if role in defaults:  # the name OneStop's own files use (participant_id, not RECORDING_SESSION_LABEL)
            rename[column] = role if role in defaults[role] else defaults[role][0]
    frame = scan_csv(path, separator=separator, decimal_comma=decimal_comma)
    frame = frame.drop([new for old, new in rename.items() if new in names and new != old]).rename(rename)
    out = Path(tmp) / Path(path).name
    frame.sink_csv(out, null_value=".")
    return out


# --- dataviewer -----------------------------------------------------------------------------------------------

def load_dataviewer(fixation_report, ia_report=None, columns: dict | None = None, source: str = "dataviewer", *,
                    aoi=None, separator: str | None = None, decimal_comma: bool = False,
                    ia_id_base: int | None = None) -> Loaded:
    """A Data Viewer fixation report with word boxes from an IA report, an AOI table or its own IA columns.

    ``columns`` is :func:`readgaze.data_prep.columns.parse_columns`'s ``{table: {role: column}}``. The fixation report's
    interest-area id base is ``ia_id_base``, else detected from the IA report's labels, else the source's.

    Raises
    ------
    ConfigError
        A file that looks like another mode's input, a column pair no file has, or no source of word boxes.
    """
    from readgaze.io import read_fixation_report, read_ia_report
    from readgaze.io.csv import header
    from readgaze.io.sources import resolve

    spec = columns or {}
    source = spec.get("source", source)
    check_kind(fixation_report, ("fixations", "onestop_fixations"), "--fixation-report")
    fix_header = header(fixation_report, separator=separator)
    headers = {"fixations": fix_header}
    if ia_report is not None and sniff(ia_report) in ("ia", "onestop_ia", "table"):
        headers["ia"] = header(ia_report, separator=separator)
    if aoi is not None:
        headers["aoi"] = _header_or_empty(aoi, separator)
    missing = unused(spec, headers)
    if missing:
        raise ConfigError(f"--columns {', '.join(missing)}: no input file has such a column "
                          f"({', '.join(Path(f).name for f in (fixation_report, ia_report, aoi) if f)})")
    fix_cols = for_table(spec, "fixations", fix_header)
    text_column = fix_cols.pop("text_id", "page_name" if source == "sbsat" else None)
    if text_column is not None and text_column not in fix_header:
        if "text_id" in spec.get("fixations", {}):
            raise ConfigError(f"columns: 'text_id' -> {text_column!r}, but the file has no such column",
                              file=fixation_report, column=text_column)
        text_column = None
    dialect = {"separator": separator, "decimal_comma": decimal_comma}
    ia = None
    if ia_report is not None:
        kind = sniff(ia_report)
        if kind in ("fixations", "onestop_fixations"):
            raise ConfigError("--ia-report is a fixation report, not an interest-area report; leave --ia-report out "
                              "to take the words from the fixation report's own interest-area columns, or give a "
                              "word AOI table with --aoi", file=ia_report)
        check_kind(ia_report, ("ia", "onestop_ia"), "--ia-report")
        ia_header = header(ia_report, separator=separator)
        headers["ia"] = ia_header
        ia_cols = for_table(spec, "ia", ia_header)
        ia = read_ia_report(ia_report, columns=ia_cols, source=source, **dialect).collect()
        resolved_ia = resolve(source, "ia", ia_header, ia_cols, ia_report)
    base = {"ia_id_base": ia_id_base} if ia_id_base is not None else {"ia_report": ia.lazy()} if ia is not None else {}
    fix = read_fixation_report(fixation_report, columns=fix_cols, source=source, **dialect, **base).collect()
    resolved = resolve(source, "fixations", fix_header, fix_cols, fixation_report)
    sources = {"fixation_report": [str(fixation_report)]}
    qc = QCLog()
    assigner = None
    if ia is not None:
        if "text_id" not in ia.columns:
            ia = ia.with_columns(pl.col("trial_id").alias("text_id"))
        box = ["text_id", "ia_index", "word", "left_px", "right_px", "top_px", "bottom_px"]
        words = ia.select(box).unique(["text_id", "ia_index"], keep="first").sort("text_id", "ia_index")
        trials = _trials(ia, resolved_ia)
        sources["ia_report"] = [str(ia_report)]
        aliases = _aliases(resolved_ia)
    else:
        if aoi is not None:
            layout = read_layout(aoi, None, columns=spec, separator=separator, decimal_comma=decimal_comma)
            tid = layout.text_id or Path(aoi).stem
            words = layout.words.with_columns(pl.lit(tid).alias("text_id"))
            fix = fix.with_columns(pl.lit(tid).alias("__text"))
            sources["aoi"] = [str(aoi)]
        else:
            words, assigner = _words_from_report(fix, text_column, fixation_report, qc)
            fix = fix.with_columns((pl.col(text_column).cast(pl.String) if text_column else pl.col("trial_id"))
                                   .alias("__text"))
        trials = _trials(fix.rename({"__text": "text_id"}), resolved)
        fix = fix.drop("__text")
        aliases = _aliases(resolved)
    for name in ("word_index", "ia_index", "line_index"):
        if name in fix.columns:
            fix = fix.rename({name: f"report_{name}"})
    return Loaded(trials=trials, words=words, fixations=fix, qc=qc, sources=sources,
                  id_bases={"columns": {k: v for k, v in spec.items() if v} or "source defaults", "source": source},
                  loader="readgaze.io", aliases=aliases, line_assigner=assigner)


def _header_or_empty(path, separator) -> list[str]:
    from readgaze.io.csv import header

    return [] if Path(path).suffix == ".json" else header(path, separator=separator)


def _trials(frame: pl.DataFrame, resolved: dict[str, str]) -> pl.DataFrame:
    """One row per trial: ``trial_id``, ``participant_id``, ``text_id``, ``item_id`` (= text) and ``trial``."""
    cols = [c for c in ("trial_id", "participant_id", "text_id") if c in frame.columns]
    trial_col = resolved.get("trial")
    extra = [pl.col(trial_col).cast(pl.String).alias("trial")] if trial_col and trial_col in frame.columns else []
    trials = frame.select(*cols, *extra).unique("trial_id", keep="first").sort("trial_id")
    if "item_id" not in trials.columns:
        trials = trials.with_columns(pl.col("text_id").alias("item_id"))
    return trials


def _aliases(resolved: dict[str, str]) -> dict[str, str]:
    out = {}
    if resolved.get("trial"):
        out[resolved["trial"]] = "trial"
    if resolved.get("participant_id"):
        out[resolved["participant_id"]] = "participant_id"
    return out


def _words_from_report(fix: pl.DataFrame, text_column: str | None, path, qc: QCLog):
    """Words from a fixation report's own interest-area id and label, boxes estimated from their fixations.

    Only fixated interest areas are known; the ids never fixated are counted (``ia_never_fixated``).
    """
    if fix["ia_index"].drop_nulls().len() == 0 or fix["ia_label"].drop_nulls().len() == 0:
        raise ConfigError("no word boxes: the fixation report has no interest-area id and label columns "
                          "(CURRENT_FIX_INTEREST_AREA_ID/_LABEL); give --ia-report (Data Viewer IA report) or "
                          "--aoi (word AOI table)", file=path)
    text = pl.col(text_column).cast(pl.String) if text_column else pl.col("trial_id")
    words = (fix.filter(pl.col("ia_index").is_not_null()).with_columns(text.alias("text_id"))
             .group_by("text_id", "ia_index")
             .agg(pl.col("ia_label").drop_nulls().first().alias("word"), pl.col("x_px").min().alias("left_px"),
                  (pl.col("x_px").max() + 1).alias("right_px"), pl.col("y_px").min().alias("top_px"),
                  (pl.col("y_px").max() + 1).alias("bottom_px"))
             .with_columns(pl.col("ia_index").alias("word_index"))
             .sort("text_id", "ia_index"))
    never = words.group_by("text_id").agg((pl.col("ia_index").max() + 1 - pl.len()).alias("n"))["n"].sum()
    qc.add("load", "words", "boxes_estimated_from_fixations", words.height, action="flagged",
           detail="no IA report: word boxes are the extent of each word's fixations; the report's word kept")
    qc.add("load", "words", "ia_never_fixated", int(never or 0), action="flagged",
           detail="interest-area ids below a text's highest fixated id that no fixation names (absent from words)")
    return words, "report"


# --- layouts (asc mode, --aoi) --------------------------------------------------------------------------------

def read_layout(path, text_id: str | None = None, *, columns: dict | None = None, separator: str | None = None,
                decimal_comma: bool = False) -> TextLayout:
    """The one layout of :func:`read_layouts`: a file of several texts needs ``text_id``. Every error names the
    file."""
    layouts = read_layouts(path, text_id, columns=columns, separator=separator, decimal_comma=decimal_comma)
    if len(layouts) > 1:
        raise ConfigError(f"this layout file holds {len(layouts)} trials/texts (e.g. "
                          f"{', '.join(map(str, list(layouts)[:4]))}); pass --text-id with the one every recording "
                          "shows, or prep the Data Viewer reports with  readgaze prep dataviewer", file=path)
    return next(iter(layouts.values()))


def read_layouts(path, text_id: str | None = None, *, columns: dict | None = None, separator: str | None = None,
                 decimal_comma: bool = False) -> dict[str, TextLayout]:
    """The layouts of a passages.json, an AOI file or an IA report, by text id.

    ``text_id`` picks one passage of a passages.json, or one trial or text of an IA report. Without it, a file of
    several texts gives every text (an IA report's ``text_id``, in sorted order); a file of one text gives it, keyed by
    its id (else the file name without its extension). Every error names the file.
    """
    path = Path(path)
    try:
        layouts = _read_layouts(path, text_id, columns or {}, separator, decimal_comma)
    except ReadgazeError as error:
        if error.file is None:
            raise type(error)(error.message, file=path, row=error.row, column=error.column) from None
        raise
    return {lay.text_id or path.stem: lay for lay in layouts} if len(layouts) == 1 else {
        lay.text_id: lay for lay in layouts}


def _read_layouts(path: Path, text_id, spec, separator, decimal_comma) -> list[TextLayout]:
    if not path.is_file():
        raise ConfigError("no such layout file")
    if path.suffix == ".json":
        layouts = read_passages(path)
        if text_id is None:
            return list(layouts.values())
        if text_id not in layouts:
            raise ConfigError(f"--text-id {text_id!r} is not a passage of the file; expected one of "
                              f"{sorted(layouts)}", file=path)
        return [layouts[text_id]]
    from readgaze.io.csv import header, scan_csv

    names = header(path, separator=separator)
    aoi_map = for_table(spec, "aoi", names)
    if aoi_map:
        raw = scan_csv(path, separator=separator, decimal_comma=decimal_comma).collect()
        renamed = raw.select([pl.col(c).alias("ia_index" if r == "ia_id" else r) for r, c in aoi_map.items()])
        return [layout_from_ia_rows(renamed, text_id=text_id or path.stem)]
    if "IA_LEFT" in names or for_table(spec, "ia", names):
        from readgaze.io import read_ia_report

        ia = read_ia_report(path, columns=for_table(spec, "ia", names) or None, separator=separator,
                            decimal_comma=decimal_comma, check_keys=False).collect()
        box = ("ia_index", "word", "left_px", "right_px", "top_px", "bottom_px")
        texts = ia["text_id"].unique().sort().to_list() if "text_id" in ia.columns else []
        if len(texts) > 1:
            if text_id is None:  # every text, one read
                parts = ia.partition_by("text_id", as_dict=True)
                return [layout_from_ia_rows(parts[(t,)].select(box), text_id=t) for t in texts if t is not None]
            ia = ia.filter((pl.col("text_id") == text_id) | (pl.col("trial_id") == text_id))
            if ia.height == 0:
                raise ConfigError(f"--text-id {text_id!r} is neither a trial nor a text of the report; it has e.g. "
                                  f"{', '.join(map(str, texts[:4]))}", file=path)
        return [layout_from_ia_rows(ia.select(box), text_id=text_id or path.stem)]
    return [read_aoi_file(path, text_id=text_id or path.stem)]


# --- asc ------------------------------------------------------------------------------------------------------

def load_asc(files, layout, text_id: str | None = None, *, columns: dict | None = None,
             separator: str | None = None, decimal_comma: bool = False, encoding: str = "utf-8",
             screen_px: tuple[float, float] | None = None) -> Loaded:
    """EyeLink recordings read with :func:`readgaze.io.asc.read_asc`; every trial shows ``layout``.

    With several files, trial ids become ``<file stem>_<trial id>``; ``participant_id`` is the file
    stem unless the recording names it; ``trial`` keeps the recording's own trial id (a labels table's key).
    The samples are streamed, counted (``n_samples``, QC) and not kept (``read_asc(samples="none")``), so
    memory does not grow with a recording's length. ``encoding`` and ``screen_px`` go to ``read_asc`` (the
    recordings' text encoding; the screen size when a recording declares none).
    """
    from readgaze.io.asc import read_asc

    for f in files:
        check_kind(f, ("asc",), "the recording")
    tid, words = _layout_words(layout, text_id, columns, separator, decimal_comma)
    trials, fixations, qc, warnings = [], [], QCLog(), []
    for f in files:
        rec = read_asc(f, samples="none", encoding=encoding, screen_px=screen_px)
        qc.extend(rec.qc)
        warnings.extend(rec.warnings)
        # one recording per participant: trial ids are made unique across files by the file's stem
        stem, tid_expr = Path(f).stem, pl.lit(Path(f).stem + "_") + pl.col("trial_id").cast(pl.String)
        t, x = rec.trials.lazy().collect(), rec.fixations.lazy().collect()
        t = t.with_columns(pl.col("trial_id").cast(pl.String).alias("trial"))
        if len(files) > 1:
            t, x = t.with_columns(tid_expr.alias("trial_id")), x.with_columns(tid_expr.alias("trial_id"))
        if "participant_id" not in t.columns:
            t = t.with_columns(pl.lit(stem).alias("participant_id"))
        trials.append(t)
        fixations.append(x)
    return Loaded(trials=_one_text(pl.concat(trials, how="diagonal_relaxed"), tid), words=words,
                  fixations=pl.concat(fixations, how="diagonal_relaxed"), qc=qc,
                  sources={"asc": [str(f) for f in files], "layout": [str(layout)]}, loader="readgaze.io.asc",
                  warnings=warnings)


def _layout_words(layout, text_id, columns, separator, decimal_comma) -> tuple[str | None, pl.DataFrame]:
    """(text id, words) of the one layout every recording shows; or, for a file of several texts and no
    ``text_id`` (:func:`read_layouts`), (None, the words of every text, keyed by its id): each trial's text then comes
    from a labels table's ``text_id`` (:func:`require_trial_texts`)."""
    layouts = read_layouts(layout, text_id, columns=columns, separator=separator, decimal_comma=decimal_comma)
    words = pl.concat([lay.words.with_columns(pl.lit(t).alias("text_id")) for t, lay in layouts.items()],
                      how="vertical_relaxed")
    return (next(iter(layouts)) if len(layouts) == 1 else None), words


def _one_text(trials: pl.DataFrame, text_id: str | None) -> pl.DataFrame:
    """Every trial shows ``text_id`` (None: not known yet, :func:`require_trial_texts`); it is also the item unless
    the trials name one."""
    trials = trials.with_columns(pl.lit(text_id, pl.String).alias("text_id"))
    return trials if "item_id" in trials.columns else trials.with_columns(pl.lit(text_id, pl.String).alias("item_id"))


def require_trial_texts(trials: pl.DataFrame, words: pl.DataFrame, layout, labels) -> pl.DataFrame:
    """For a layout of several texts: check that the labels table named each trial's text (``text_id``), and
    take the text as the trial's item where the table names none.

    Raises
    ------
    ConfigError
        No trial has a ``text_id`` (no labels table, or one without the column), or a ``text_id`` that the layout
        lacks (the first few named).
    """
    texts = words["text_id"].unique().sort()
    known = ", ".join(texts.head(6).to_list()) + (", ..." if len(texts) > 6 else "")
    if trials["text_id"].null_count() == trials.height:
        hint = "" if Path(layout).suffix == ".json" else "; Data Viewer reports: readgaze prep dataviewer"
        raise ConfigError(f"the layout holds {len(texts)} texts ({known}): name each trial's text in a --trials "
                          f"table with a text_id column, or pass --text-id when every trial shows one{hint}",
                          file=layout)
    unknown = trials.filter(pl.col("text_id").is_not_null() & ~pl.col("text_id").is_in(texts.implode()))
    if unknown.height:
        raise ConfigError(f"{unknown.height} trial(s) name a text_id the layout lacks, e.g. "
                          f"{unknown['text_id'].unique().head(3).to_list()}; it holds {known}", file=labels,
                          column="text_id")
    return trials.with_columns(pl.coalesce("item_id", "text_id").alias("item_id"))


# --- samples --------------------------------------------------------------------------------------------------

def load_samples(files, layout, text_id: str | None = None, *, screen, columns: dict | None = None,
                 detector: str = "ivt", missing_value: float | None = MISSING_GAZE,
                 sampling_rate_hz: float | None = None,
                 eye: str | None = None, time_unit: str = "ms", separator: str | None = None,
                 decimal_comma: bool = False) -> Loaded:
    """Gaze-sample CSVs: fixations detected per trial (:func:`readgaze.events.detect_fixations`); every trial
    shows ``layout``.

    Each file is read with :func:`readgaze.io.samples.read_gaze_csv`, its columns named by the ``samples`` roles of
    ``columns`` (default ``timestamp``, ``x``, ``y``; ``readgaze prep --list-roles``). A file's trials are the values
    of its ``trial`` column within each participant, else the file is one trial. ``participant_id`` is the
    ``participant_id`` column (else the file stem); trial ids are ``<participant>_<trial>`` (``<file stem>_<trial>``
    without a participant column; the file stem without a trial column), and a trial id found in two files is an
    error. ``trial`` keeps the file's own trial id (a labels table's key), ``n_samples`` and ``n_missing_samples``
    count the trial's samples and those without a position, ``samples_file`` names its file. A trial with fewer
    than :data:`FEW_FIXATIONS_PER_S` fixations per second of samples is warned about. The detector's
    counts (samples in fixation / saccade / missing, fixations dropped as too short or merged) go to the QC log.

    Parameters
    ----------
    screen : readgaze.io.samples.ScreenGeometry
        Converts pixels to degrees of visual angle for the detector (and moves a ``"center"`` origin).
    detector : {"ivt", "idt"}
        pymovements' velocity- or dispersion-threshold detector with readgaze's defaults (:mod:`readgaze.events`).
    missing_value : float, optional
        The coordinate that means "no gaze" (EyeLink and pymovements: -32768); such samples are missing.
    sampling_rate_hz : float, optional
        Default: each trial's median time step.
    time_unit : {"ms", "s", "us"}
        Unit of the time column (:data:`readgaze.io.samples.TIME_UNITS`).

    Raises
    ------
    ParseError
        A named column is absent or holds a value that is not a number (file, row and column).
    ConfigError
        A file that is another mode's input, an unknown detector, a layout that cannot be read, a trial id in two
        files, no fixation detected in any file, or a median time step outside 0.1-100 ms (10 Hz to 10 kHz: the
        time column's unit is not ``time_unit``).
    """
    from readgaze.events import detect_fixations
    from readgaze.io.csv import header
    from readgaze.io.samples import read_gaze_csv

    for f in files:
        check_kind(f, (), "the gaze-sample file")
    tid, words = _layout_words(layout, text_id, columns, separator, decimal_comma)
    spec = columns or {}
    headers = {str(f): header(f, separator=separator) for f in files}
    missing = unused({"any": spec.get("any", {})}, {**headers, "layout": _header_or_empty(layout, separator)})
    if missing:
        import difflib

        names = sorted({c for h in headers.values() for c in h})
        wanted = missing[0].partition("=")[2]
        lower = {c.lower(): c for c in names}
        close = [lower[wanted.lower()]] if wanted.lower() in lower else [
            lower[c] for c in difflib.get_close_matches(wanted.lower(), list(lower), n=1)]
        raise ConfigError(f"--columns {', '.join(missing)}: no gaze-sample file has such a column "
                          f"({', '.join(Path(f).name for f in files)} have {', '.join(names)})"
                          + (f"; did you mean {close[0]!r}?" if close else ""))
    trials, fixations, logs, warnings = [], [], [], []
    for f in files:
        names = headers[str(f)]
        role = {**SAMPLE_DEFAULTS, **for_table(spec, "samples", names)}
        absent = [f"{r}={c}" for r, c in role.items() if c not in names]
        if absent:
            timed = next((n for n in names if "time" in n.lower()), "COLUMN")
            raise ConfigError(f"no column for {', '.join(absent)} (the header has {', '.join(names)}): name yours "
                              f"with --columns, e.g. --columns time_ms={timed} x_px=... y_px=...", file=f, row=1)
        stem = Path(f).stem
        samples = read_gaze_csv(f, separator=separator, missing_value=missing_value, time_column=role["time_ms"],
                                x_column=role["x_px"], y_column=role["y_px"], pupil_column=role.get("pupil"),
                                trial_id=stem, eye=eye, screen=screen, sampling_rate_hz=sampling_rate_hz,
                                decimal_comma=decimal_comma, time_unit=time_unit)
        who = pl.col(role["participant_id"]).cast(pl.String) if "participant_id" in role else pl.lit(stem)
        if "trial" in role:  # a trial of a participant (else of the file): "<participant or file stem>_<trial>"
            trial = pl.col(role["trial"]).cast(pl.String)
            samples = samples.with_columns(pl.concat_str(who, pl.lit("_"), trial).alias("trial_id"),
                                           trial.alias("_trial"))
        else:  # the file is one trial
            samples = samples.with_columns(pl.lit(stem).alias("_trial"))
        samples = samples.with_columns(who.alias("_participant")).collect()
        unnamed = QCLog()  # a sample whose trial or participant cell is empty belongs to no trial
        unnamed.add("load_samples", "samples", "no trial id (empty trial or participant cell)",
                    samples["trial_id"].null_count(), detail="dropped before fixation detection")
        logs.append((Path(f).name, unnamed))
        samples = samples.filter(pl.col("trial_id").is_not_null())
        _check_time_step(samples, f, role["time_ms"], time_unit)
        found, found_qc = detect_fixations(samples, method=detector, screen=screen, sampling_rate_hz=sampling_rate_hz)
        logs.append((Path(f).name, found_qc))
        per_trial = samples.group_by("trial_id", maintain_order=True).agg(
            pl.col("_participant").first().alias("participant_id"), pl.col("_trial").first().alias("trial"),
            pl.len().cast(pl.Int64).alias("n_samples"),
            (pl.col("x_px").is_null() | pl.col("y_px").is_null()).sum().cast(pl.Int64).alias("n_missing_samples"),
            (pl.col("time_ms").max() - pl.col("time_ms").min()).alias("_span_ms"))
        warnings += _few_fixations(per_trial, found, f)
        trials.append(per_trial.drop("_span_ms").with_columns(pl.lit(str(f)).alias("samples_file")))
        fixations.append(found)
    if not sum(x.height for x in fixations):
        raise ConfigError(f"no fixation detected in {len(files)} gaze-sample file(s) "
                          f"({sum(t['n_samples'].sum() for t in trials):,} samples): check --screen-px, --screen-cm, "
                          "--distance-cm and --time-unit (and that x and y are the gaze columns)", file=files[0])
    trials = pl.concat(trials)
    repeated = trials.filter(pl.col("trial_id").is_duplicated())
    if repeated.height:
        first = repeated["trial_id"][0]
        raise ConfigError(f"trial {first!r} is in several gaze-sample files "
                          f"({', '.join(repeated.filter(pl.col('trial_id') == first)['samples_file'])}): a trial's "
                          "samples must be in one file (name the participant with --columns participant_id=COLUMN, or "
                          "rename files of the same name)")
    return Loaded(trials=_one_text(trials, tid), words=words, fixations=pl.concat(fixations), qc=_summed(logs),
                  sources={"samples": [str(f) for f in files], "layout": [str(layout)]},
                  loader=f"readgaze.io.samples + readgaze.events ({detector}, pymovements)", warnings=warnings)


FEW_FIXATIONS_PER_S = 1.0
"""Fewer detected fixations per second of samples than this draws a warning: reading makes about 3-5 (Rayner 1998,
*Psychological Bulletin* 124: fixations of 200-250 ms)."""


def _few_fixations(per_trial: pl.DataFrame, found: pl.DataFrame, path) -> list[str]:
    """Warnings for trials whose detected fixation rate is below :data:`FEW_FIXATIONS_PER_S`."""
    rate = (per_trial.select("trial_id", "_span_ms")
            .join(found.group_by("trial_id").agg(pl.len().alias("n")), on="trial_id", how="left")
            .with_columns(pl.col("n").fill_null(0))
            .filter(pl.col("_span_ms") > 1000.0)
            .filter(pl.col("n") < FEW_FIXATIONS_PER_S * pl.col("_span_ms") / 1000.0))
    if not rate.height:
        return []
    t = rate.row(0, named=True)
    return [f"{path}: {rate.height} trial(s) with fewer than {FEW_FIXATIONS_PER_S:g} fixation per second of samples "
            f"(e.g. {t['trial_id']}: {t['n']} in {t['_span_ms'] / 1000.0:.1f} s; reading makes 3-5): check "
            "--screen-cm, --distance-cm and --time-unit"]


def _check_time_step(samples: pl.DataFrame, path, column: str, unit: str) -> None:
    """A median step between samples outside 0.1-100 ms means the time column is in another unit."""
    step = samples.select(pl.col("time_ms").diff().over("trial_id").median()).item()
    if step is not None and not 0.1 <= step <= 100.0:
        raise ConfigError(f"the median step between samples is {step:g} ms ({1000.0 / step:g} Hz) with "
                          f"--time-unit {unit}: a tracker samples at 10 Hz to 10 kHz; is the time column in s or us? "
                          f"(--time-unit s|ms|us)", file=path, column=column)


def _summed(logs: list[tuple[str, QCLog]]) -> QCLog:
    """One record per (step, table, reason, action): the files' counts summed, each file's count in ``detail``
    (the first five files) when there are several."""
    groups: dict[tuple, list[tuple[str, int]]] = {}
    for name, log in logs:
        for r in log.records:
            groups.setdefault((r["step"], r["table"], r["reason"], r["action"]), []).append((name, r["count"]))
    qc = QCLog()
    for (step, table, reason, action), counts in groups.items():
        detail = None
        if len(counts) > 1:
            detail = "per file: " + ", ".join(f"{n} {c:,}" for n, c in counts[:5]) + (
                f", and {len(counts) - 5} more" if len(counts) > 5 else "")
        qc.add(step, table, reason, sum(c for _, c in counts), action, detail=detail)
    return qc
