"""Loaders for the four ``readgaze prep`` modes, each returning canonical tables (:class:`Loaded`).

* ``onestop``: :func:`readgaze.io.onestop.load_onestop` (its column map, separator and decimal comma applied as the
  reports are parsed);
* ``dataviewer``: a Data Viewer fixation report with its word boxes from, in this order, an interest-area report
  (``--ia-report``), a word AOI table (``--aoi``: pymovements/PoTeC style, or any table through an ``aoi`` column
  map), or the fixation report's own interest-area columns (id and label; the boxes are then estimated from the
  fixations on each word and the report's own word assignment is kept: line assigner ``report``);
* ``asc``: EyeLink ``.asc`` recordings (:func:`readgaze.io.asc.read_asc`) plus a text layout file
  (:mod:`readgaze.data_prep.layouts`);
* ``samples``: gaze-sample CSVs (:func:`readgaze.io.samples.read_gaze_csv`; Tobii, SMI, pymovements datasets), their
  fixations detected with pymovements' I-VT or I-DT (:func:`readgaze.events.detect_fixations`), plus a text layout
  (:func:`load_samples`, in :mod:`readgaze.data_prep.samples_mode`).

What a file looks like (:func:`sniff`, so a file given to the wrong mode gets a message naming the right one) and
:class:`Loaded` live in :mod:`readgaze.data_prep.inputs`.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

from readgaze.data_prep.columns import for_table, unused
from readgaze.data_prep.inputs import KINDS, Loaded, check_kind, sniff  # noqa: F401 -- the modes' shared names
from readgaze.data_prep.layouts import (  # noqa: F401 -- read_layouts and require_trial_texts: used by the cli
    layout_words,
    one_text,
    read_layout,
    read_layouts,
    require_trial_texts,
)
from readgaze.data_prep.samples_mode import (  # noqa: F401 -- load_samples: the samples mode, used by the api
    FEW_FIXATIONS_PER_S,
    header_or_empty,
    load_samples,
)
from readgaze.errors import ConfigError
from readgaze.qc import QCLog

# --- onestop --------------------------------------------------------------------------------------------------

def load_onestop(fixation_report, ia_report, columns: dict | None = None, *, separator: str | None = None,
                 decimal_comma: bool = False) -> Loaded:
    """OneStop reports -> the canonical tables ``readgaze prep`` writes, read by
    :func:`readgaze.io.onestop.load_onestop` (the one OneStop loader; its column map renames a report's columns to
    OneStop's own names as it parses them). ``columns`` is :func:`readgaze.data_prep.columns.parse_columns`'s
    ``{table: {role: column}}``."""
    from readgaze.io.csv import header
    from readgaze.io.onestop import load_onestop as read_onestop

    spec = columns or {}
    maps = {table: for_table(spec, table, header(path, separator=separator))
            for table, path in (("fixations", fixation_report), ("ia", ia_report))} if spec else None
    data = read_onestop(fixation_report, ia_report, columns=maps, separator=separator, decimal_comma=decimal_comma)
    fixations = data.fixations.lazy().collect()
    trials, words = data.trials.lazy().collect(), data.words.lazy().collect()
    if "report_ia_index" not in fixations.columns and "word_index" in fixations.columns:
        fixations = fixations.rename({"word_index": "report_word_index"})
    fixations = fixations.drop("line_index", "word_index", "ia_index", strict=False)
    return Loaded(trials=trials, words=words, fixations=fixations, qc=data.qc,
                  sources={"fixation_report": [str(fixation_report)], "ia_report": [str(ia_report)]},
                  id_bases=dict(data.id_bases or {}), loader="readgaze.io.onestop.load_onestop",
                  aliases={"RECORDING_SESSION_LABEL": "participant_id"})


# --- dataviewer -----------------------------------------------------------------------------------------------

def load_dataviewer(fixation_report, ia_report=None, columns: dict | None = None, source: str = "dataviewer", *,
                    aoi=None, separator: str | None = None, decimal_comma: bool = False,
                    ia_id_base: int | None = None, encoding: str = "utf-8") -> Loaded:
    """A Data Viewer fixation report with word boxes from an IA report, an AOI table or its own IA columns.

    ``encoding`` is the reports' text encoding (``"cp1252"`` for a Windows export).

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
    fix_header = header(fixation_report, separator=separator, encoding=encoding)
    headers = {"fixations": fix_header}
    if ia_report is not None and sniff(ia_report) in ("ia", "onestop_ia", "table"):
        headers["ia"] = header(ia_report, separator=separator)
    if aoi is not None:
        headers["aoi"] = header_or_empty(aoi, separator)
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
    qc = QCLog()  # the readers' repairs and flags, then the loader's counts
    dialect = {"separator": separator, "decimal_comma": decimal_comma, "encoding": encoding}
    ia = None
    if ia_report is not None:
        kind = sniff(ia_report)
        if kind in ("fixations", "onestop_fixations"):
            raise ConfigError("--ia-report is a fixation report, not an interest-area report; leave --ia-report out "
                              "to take the words from the fixation report's own interest-area columns, or give a "
                              "word AOI table with --aoi", file=ia_report)
        check_kind(ia_report, ("ia", "onestop_ia"), "--ia-report")
        ia_header = header(ia_report, separator=separator, encoding=encoding)
        headers["ia"] = ia_header
        ia_cols = for_table(spec, "ia", ia_header)
        ia = read_ia_report(ia_report, columns=ia_cols, source=source, qc=qc, **dialect).collect()
        resolved_ia = resolve(source, "ia", ia_header, ia_cols, ia_report)
    base = {"ia_id_base": ia_id_base} if ia_id_base is not None else {"ia_report": ia.lazy()} if ia is not None else {}
    fix = read_fixation_report(fixation_report, columns=fix_cols, source=source, qc=qc, **dialect, **base).collect()
    resolved = resolve(source, "fixations", fix_header, fix_cols, fixation_report)
    sources = {"fixation_report": [str(fixation_report)]}
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
    from readgaze.io.textfix import repair_labels

    words, fix = repair_labels(words, fix, qc)
    return Loaded(trials=trials, words=words, fixations=fix, qc=qc, sources=sources,
                  id_bases={"columns": {k: v for k, v in spec.items() if v} or "source defaults", "source": source},
                  loader="readgaze.io", aliases=aliases, line_assigner=assigner)


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
    if layout is None:  # no --layout: the recordings' own interest-area messages
        return load_asc_ia_messages(files, encoding=encoding, screen_px=screen_px)
    tid, words = layout_words(layout, text_id, columns, separator, decimal_comma)
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
    if not sum(x.height for x in fixations):  # else the pipeline drops every trial and finds no words to align to
        n_samples = sum(int(t["n_samples"].sum() or 0) for t in trials if "n_samples" in t.columns)
        names = ", ".join(Path(f).name for f in files)
        raise ConfigError(f"no fixation (EFIX line) in {len(files)} recording(s) ({names}; "
                          f"{sum(t.height for t in trials)} trial(s), {n_samples:,} samples): is the recording cut "
                          "short, or were its events not exported (edf2asc without -e)? readgaze inspect FILE.asc "
                          "lists what it holds", file=files[0])
    return Loaded(trials=one_text(pl.concat(trials, how="diagonal_relaxed"), tid), words=words,
                  fixations=pl.concat(fixations, how="diagonal_relaxed"), qc=qc,
                  sources={"asc": [str(f) for f in files], "layout": [str(layout)]}, loader="readgaze.io.asc",
                  warnings=warnings)


def load_asc_ia_messages(files, *, encoding: str = "utf-8", screen_px: tuple[float, float] | None = None) -> Loaded:
    """EyeLink recordings whose layout is their own ``!V IAREA`` messages (no ``--layout``).

    Each trial's text is the set of interest areas its messages draw
    (:func:`readgaze.text.layouts_from_ia_messages`): trials showing the same areas share a text (and item, unless a
    labels table names one), named ``ia_<hash>``. Trials as :func:`load_asc`. A trial without interest areas is
    dropped (QC ``no interest-area messages``).

    Raises
    ------
    ConfigError
        No recording has ``!V IAREA`` messages: then a ``--layout`` is needed.
    """
    from readgaze.io.asc import read_asc
    from readgaze.text import layouts_from_ia_messages

    trials, fixations, texts, qc, warnings = [], [], {}, QCLog(), []
    for f in files:
        rec = read_asc(f, samples="none", encoding=encoding, screen_px=screen_px)
        qc.extend(rec.qc)
        warnings.extend(rec.warnings)
        t, x = rec.trials.lazy().collect(), rec.fixations.lazy().collect()
        layouts, text_of, notes = layouts_from_ia_messages(rec.messages, Path(f).parent, t)
        warnings += [f"{Path(f).name}: {note}" for note in notes]
        texts.update(layouts)
        stem = Path(f).stem
        t = t.with_columns(pl.col("trial_id").cast(pl.String).alias("trial"),
                           pl.col("trial_id").cast(pl.String).replace_strict(text_of, default=None,
                                                                             return_dtype=pl.String).alias("text_id"))
        if len(files) > 1:
            tid_expr = pl.lit(stem + "_") + pl.col("trial_id").cast(pl.String)
            t, x = t.with_columns(tid_expr.alias("trial_id")), x.with_columns(tid_expr.alias("trial_id"))
        if "participant_id" not in t.columns:
            t = t.with_columns(pl.lit(stem).alias("participant_id"))
        trials.append(t)
        fixations.append(x)
    if not texts:
        raise ConfigError("no --layout was given and the recording(s) hold no '!V IAREA' interest-area messages; "
                          "give the text's layout with --layout (passages.json, an AOI file or an IA report)",
                          file=files[0])
    trials = pl.concat(trials, how="diagonal_relaxed")
    lacking = trials.filter(pl.col("text_id").is_null())
    qc.add("load", "trials", "no interest-area messages", lacking.height, "dropped",
           "trials whose recording drew no !V IAREA interest areas: no text to align their fixations to")
    if lacking.height:
        warnings.append(f"{lacking.height} trial(s) have no interest-area messages and are dropped, e.g. "
                        f"{lacking['trial_id'].head(3).to_list()}")
    trials = trials.filter(pl.col("text_id").is_not_null())
    if "item_id" not in trials.columns:
        trials = trials.with_columns(pl.col("text_id").alias("item_id"))
    fixations = pl.concat(fixations, how="diagonal_relaxed").join(trials.select("trial_id"), on="trial_id",
                                                                  how="semi")
    words = pl.concat([lay.words.with_columns(pl.lit(t).alias("text_id")) for t, lay in texts.items()],
                      how="vertical_relaxed")
    return Loaded(trials=trials, words=words, fixations=fixations, qc=qc,
                  sources={"asc": [str(f) for f in files]}, loader="readgaze.io.asc (layout: !V IAREA messages)",
                  warnings=warnings)
