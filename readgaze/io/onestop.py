"""OneStop Eye Movements reports -> canonical trials, words, fixations and per-trial IA rows.

OneStop (Berzak et al. 2025, *Scientific Data*, doi:10.1038/s41597-025-06272-2) ships Data Viewer
fixation and IA reports with its design, answer and linguistic columns merged in. Mapping (one place):

* ``trial_id`` = ``{participant}_{batch}_{article}_{level}_{paragraph}_r{0|1}`` (deterministic);
  ``item_id`` = article (``{article_batch}_{article_id}``); ``text_id`` = paragraph x level
  (``{batch}_{article}_{level}_{paragraph}``, EyeBench order, e.g. ``1_2_Adv_1``).
* **Layout versions.** If trials of one text show different IA layouts (OneStop's 1-px screen-width bug
  changes line breaks; a hyphenated word split over two lines adds an IA; first-line tops of 153 vs
  154 px), every layout of that text gets ``_v`` + the first 6 hex digits of a SHA-1 of its boxes and
  labels, e.g. ``2_1_Adv_5_v3f2a1c``. The suffix depends only on the layout, so it is stable across
  loads; texts with one layout keep the plain id. Counted in the QC log (``layout_versions``).
* ``reading_goal`` from ``question_preview`` (True -> ``information_seeking``, False -> ``ordinary``);
  ``repeated_reading`` from ``repeated_reading_trial``; ``practice`` from ``practice_trial`` (else
  ``article_id == 0``, OneStop's practice article).
* ``critical_span_start_index`` / ``critical_span_end_index``: parallel ``List(Int32)`` parsed from
  ``critical_span_indices`` (``"[(4,44)]"``; end exclusive; IA indices). Same for ``distractor_``.
* **Interest-area id base**: the IA report's base is 0 if any ``IA_ID`` is 0, else 1; the
  fixation report's base is the one under which its labels agree with the IA report's
  (:func:`readgaze.io.dataviewer.detect_ia_id_base`), else a :class:`DataError` names both files.
* **Words split over a line break** (``51-year-`` / ``old``): two IA rows, one ``word_index``. Detected
  where an IA label ends in a letter or digit followed by ``-`` and the next IA starts a new line.
* **Participant aliases** (:data:`PARTICIPANT_ALIASES`): OneStop's documentation (Berzak et al., "Known issues") says
  ``l38_104`` is saved as ``l38_97``; such ids are renamed and counted.
* **Damaged input** (issue 29): each report goes through :mod:`readgaze.io.faults` (lines and bytes) and the cell
  rules of :mod:`readgaze.io.cells` (keys, ids, coordinates); the trial columns OneStop reads as booleans
  (``question_preview``, ``repeated_reading_trial``, ``practice_trial``, ``is_correct``) must hold ``True``/``False``
  (else a :class:`ParseError` naming the cell), and a trial whose rows disagree with its ``TRIAL_IA_COUNT`` /
  ``TRIAL_FIXATION_COUNT`` (a deleted row, a file cut at a line end) is counted (``rows_differ_from_trial_count``).
* **Column map** (``columns=``): reports whose columns have other names are read with them renamed to OneStop's own
  (a role of :mod:`readgaze.io.sources` -> the file's column), without rewriting the files.
"""

from __future__ import annotations

import hashlib
import math
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import cached_property, partial
from pathlib import Path

import numpy as np
import polars as pl

from readgaze.errors import ConfigError, ParseError
from readgaze.io import cells
from readgaze.io.csv import header
from readgaze.io.dataviewer import detect_ia_id_base, read_fixation_report, read_ia_report, rebase_fixations
from readgaze.io.faults import text_file
from readgaze.io.rows import line_starts, per_run, read_rows
from readgaze.io.sources import SOURCES
from readgaze.qc import QCLog

PARTICIPANT_ALIASES: dict[str, str] = {"l38_97": "l38_104"}
"""Saved id -> true id (OneStop documentation, "Known issues": "l38_104 is saved as l38_97")."""

TRIAL_COLUMNS = (
    "participant_id", "TRIAL_INDEX", "trial_index", "list_number", "article_batch", "article_id",
    "article_index", "article_title", "paragraph_id", "paragraph", "difficulty_level", "question_preview",
    "repeated_reading_trial", "practice_trial", "question", "onestopqa_question_id", "selected_answer",
    "selected_answer_position", "correct_answer_position", "answers_order", "answer_1", "answer_2",
    "answer_3", "answer_4", "is_correct", "critical_span_indices", "distractor_span_indices",
    "same_critical_span", "aspan_ind_start", "aspan_ind_end", "dspan_ind_start", "dspan_ind_end",
    "EYE_TRACKED", "NUM_RECALIBRATIONS", "TRIAL_DWELL_TIME", "TRIAL_FIXATION_COUNT", "TRIAL_IA_COUNT",
    "PARAGRAPH_RT", "PREVIEW_QUESTION_RT", "QUESTION_RT", "ANSWER_RT", "unique_paragraph_id",
    "unique_trial_id")
"""OneStop columns that are constant within a trial: they go to ``trials`` only."""

WORD_FEATURES = (
    "word_length_no_punctuation", "wordfreq_frequency", "subtlex_frequency", "gpt2_surprisal",
    "universal_pos", "ptb_pos", "Reduced_POS", "dependency_relation", "head_word_index",
    "distance_to_head", "left_dependents_count", "right_dependents_count", "morphological_features",
    "entity_type", "is_content_word")
"""OneStop's shipped linguistic features: they go to ``words`` only, under their source names."""

_SPLIT_WORD = r"[\p{L}\p{N}]-$"
BOOLEAN_COLUMNS = ("question_preview", "repeated_reading_trial", "practice_trial", "is_correct")
"""OneStop trial columns read as booleans (``True``/``False``)."""
TRIAL_COUNTS = {"ia_count": "TRIAL_IA_COUNT", "fixation_count": "TRIAL_FIXATION_COUNT"}
"""Rows per trial of each report -> the Data Viewer trial variable that states it."""


@dataclass(frozen=True)
class Dialect:
    """How one report is read: its separator, decimal commas and ``{file column: OneStop name}`` renames."""

    separator: str | None = None
    decimal_comma: bool = False
    rename: dict[str, str] | None = None

    def reader(self) -> dict:
        return {"separator": self.separator, "decimal_comma": self.decimal_comma, "rename": self.rename}


def dialect(path, table: str, columns: dict | None, separator: str | None = None,
            decimal_comma: bool = False) -> Dialect:
    """The :class:`Dialect` of a report: ``columns`` (``{role: column}``, or ``{"fixations": {...}, "ia": {...}}``)
    renames each mapped column to the name OneStop's own files use for its role (the role's first name in
    :mod:`readgaze.io.sources`, or the role itself when that is one: ``participant_id``). Roles OneStop does not
    read from a column (``trial_id``, ``text_id``) are ignored: OneStop builds those from its design columns.

    Raises
    ------
    ConfigError
        A mapped column the file does not have.
    """
    spec = (columns or {}).get(table, columns or {}) if any(k in (columns or {}) for k in ("fixations", "ia")) \
        else (columns or {})
    spec = {r: c for r, c in spec.items() if isinstance(c, str)}
    if not spec:
        return Dialect(separator, decimal_comma)
    names = header(path, separator=separator)
    defaults = SOURCES["onestop"].fixation_columns if table == "fixations" else SOURCES["onestop"].ia_columns
    rename = {}
    for role, column in spec.items():
        if role not in defaults:
            continue
        if column not in names:
            raise ConfigError(f"columns: {role!r} -> {column!r}, but the file has no column {column!r}", file=path,
                              column=column)
        rename[column] = role if role in defaults[role] else defaults[role][0]
    # a file column already under the OneStop name that another column replaces is read no more
    clash = [c for old, c in rename.items() if c in names and c != old and c not in rename]
    rename.update({c: f"{c} (replaced by the column map)" for c in clash})
    return Dialect(separator, decimal_comma, rename or None)


@dataclass
class OneStopData:
    """The four OneStop tables, all ``polars.LazyFrame``.

    Each report is parsed once into memory, in the columns needed on every row (:func:`load_onestop`);
    ``trials``, ``words`` and ``fixations`` are lazy views of frames in memory. ``ia_rows`` (every ``IA_*`` column) is
    a lazy
    scan of the IA report, built on first access (``ia_rows_factory``), so that loaders that do not use
    it never pay for its dtype pass. ``id_bases`` maps each report path (as given) to its detected
    interest-area id base.
    """

    trials: pl.LazyFrame
    words: pl.LazyFrame | None
    fixations: pl.LazyFrame
    ia_rows_factory: Callable[[], pl.LazyFrame] | None
    qc: QCLog = field(default_factory=QCLog)
    id_bases: dict[str, int] = field(default_factory=dict)

    @cached_property
    def ia_rows(self) -> pl.LazyFrame | None:
        """Trial x IA rows: ``trial_id``, ``text_id``, ``ia_index``, ``word_index`` and the ``IA_*`` columns."""
        return None if self.ia_rows_factory is None else self.ia_rows_factory()


def load_onestop(fixation_report: str | Path, ia_report: str | Path | None = None, *,
                 aliases: dict[str, str] | None = None, columns: dict | None = None, separator: str | None = None,
                 decimal_comma: bool = False) -> OneStopData:
    """Load a OneStop fixation report and (optionally) its IA report into canonical tables.

    The IA report is parsed in a thread once the fixation report is parsed (while the fixations are split and
    sorted), each report only in the columns needed on every row;
    the trial-level columns are read from each trial's first row and the word features from the rows
    of the trial that represents each text layout (:func:`readgaze.io.rows.read_rows`), so the
    wide text columns are never parsed on all rows. Their dtypes are decided on those rows.

    Parameters
    ----------
    fixation_report : str or Path
        OneStop ``fixations_*.csv`` (Data Viewer fixation report plus OneStop columns).
    ia_report : str or Path, optional
        OneStop ``ia_*.csv``. Without it there are no ``words`` / ``ia_rows``, ``word_index`` is the
        fixation report's id minus 1 (Data Viewer's base, recorded as assumed), and text layouts are
        not versioned.
    aliases : dict, optional
        Participant id aliases; default :data:`PARTICIPANT_ALIASES`.
    columns : dict, optional
        Column map for reports exported under other column names: ``{role: column}`` for both reports, or
        ``{"fixations": {role: column}, "ia": {role: column}}`` (roles: :mod:`readgaze.io.sources`; :func:`dialect`).
    separator, decimal_comma
        As in :func:`readgaze.io.csv.scan_csv` (both reports).

    Returns
    -------
    OneStopData
        ``trials``: schema ``trials`` + ``practice``, ``critical_span_start_index`` /
        ``critical_span_end_index`` (List(Int32)), ``fixation_count`` / ``ia_count`` (Int32, null when
        that report lacks the trial) and the OneStop trial columns. ``words``: one row per
        (``text_id``, ``ia_index``) with ``word_index``, ``word``, ``line_index``, boxes,
        ``word_length`` (Int32), ``frequency_zipf`` (= 9 + log10 2^-wordfreq_frequency, floored at 0 like
        wordfreq's unknown words), ``surprisal_bits`` (= gpt2_surprisal) and :data:`WORD_FEATURES`.
        ``fixations``: canonical fixations (``word_index`` through the words map) + fixation-level
        source columns, sorted by (``trial_id``, ``fixation_index``; a repeated key keeps file order).
        ``ia_rows``: trial x IA with ``text_id``, ``word_index`` and the ``IA_*`` columns.

    Raises
    ------
    DataError
        Repeated trial keys, or IA labels that agree under neither id base (naming both files).
    ParseError, SchemaError
        As :func:`readgaze.io.read_fixation_report`; a OneStop boolean trial column holding something else.
    ConfigError
        A column map naming a column the report lacks.
    """
    qc, aliases = QCLog(), PARTICIPANT_ALIASES if aliases is None else aliases
    fix_qc, ia_qc = QCLog(), QCLog()  # the fixation report's records, then the IA report's (as when serial)
    # The IA report is parsed in a thread once the fixation report is parsed, while this thread splits and
    # sorts the fixations: their single-threaded steps fill the core the IA parse leaves idle, and the two
    # parses' peaks do not add up (load peak at 2.4 M rows: 1.12-1.15 GiB so, 1.11-1.15 with the IA parse after
    # the fixation steps, 1.32-1.35 with both parses at once).
    for report in (fixation_report, ia_report):  # before any thread reads them: the readers' error, in order
        if report is not None and not Path(report).is_file():
            raise ParseError("no such file", file=report)
    fix_d = dialect(fixation_report, "fixations", columns, separator, decimal_comma)
    ia_d = None if ia_report is None else dialect(ia_report, "ia", columns, separator, decimal_comma)
    parsed, failed = threading.Event(), threading.Event()
    with ThreadPoolExecutor(max_workers=1) as pool:
        ia_job = None if ia_report is None else pool.submit(_load_ia, ia_report, aliases, ia_qc, parsed, failed,
                                                             ia_d)
        try:
            fix_trials, fix = _load_fixations(fixation_report, aliases, fix_qc, parsed, fix_d)
        except BaseException:
            failed.set()  # the IA report is not parsed: this error is raised once its newline scan ends
            raise
        finally:
            parsed.set()
        if ia_report is None:
            qc.extend(fix_qc)
            fix = rebase_fixations(fix, 1)
            qc.add("load_onestop", "fixations", "ia_id_base_assumed", 0, action="warning",
                   detail="no IA report: fixation report id base assumed 1 (Data Viewer)")
            _count_fixations(fix, qc)
            return OneStopData(_trials([fix_trials]).lazy(), None, fix.collect().lazy(), None, qc,
                               {str(fixation_report): 1})
        ia, ia_starts = ia_job.result()
    qc.extend(fix_qc)
    qc.extend(ia_qc)
    n_ia = ia.select(pl.len()).collect().item()
    ia_base = 0 if ia.select(pl.col("ia_index").min()).collect().item() == 0 else 1
    ia = ia.with_columns(pl.col("ia_index") - ia_base) if ia_base else ia
    versions = _text_versions(ia, qc)
    if not versions.is_empty():
        ia = ia.join(versions.lazy(), on="trial_id", how="left", maintain_order="left").with_columns(
            pl.coalesce("versioned_text_id", "text_id").alias("text_id")).drop("versioned_text_id").collect().lazy()
    # the rows read whole: each trial's first row (trial columns) and the representative trials' rows (words)
    names = header(ia_report, separator=ia_d.separator, rename=ia_d.rename)
    trial_cols = [c for c in TRIAL_COLUMNS if c in names]
    word_cols = [c for c in ("word_length",) + WORD_FEATURES if c in names]
    absent = [c for c in WORD_FEATURES if c not in names]
    qc.add("load_onestop", "words", "OneStop word features absent from the IA report", len(absent), action="flagged",
           detail=f"{Path(ia_report).name}: {', '.join(absent)}" if absent else None)
    first = ia.group_by("trial_id").agg(pl.col("__row").min()).collect()["__row"]
    reps = ia.join(ia.group_by("text_id").agg(pl.col("trial_id").min()), on=["text_id", "trial_id"], how="semi")
    rows = pl.concat([first, reps.select("__row").collect()["__row"]]).unique().sort().to_numpy()
    wide = _with_rows(read_rows(ia_report, rows, [c for c in trial_cols + word_cols if c not in _schema(ia)],
                                n_rows=n_ia, starts=ia_starts, **ia_d.reader()), rows)
    ia_trials, ia = _split_trial_columns(ia, "ia_count", ia_report, trial_cols=trial_cols, wide=wide, qc=qc,
                                         dialect=ia_d)
    words = _words(reps, wide, word_cols, ia_report, qc)
    texts = ia.group_by("trial_id").agg(pl.col("text_id").first()).collect()  # every text: one layout now
    del ia, reps, wide  # the IA rows are done with: their memory is free before the fixation steps
    ia_rows = partial(_ia_rows, ia_report, ia_base, aliases, texts, words, ia_d)
    # All trials of a (versioned) text share one IA layout: fixations are matched to text x IA (small
    # tables) instead of trial x IA.
    # Each fixation gets its text's integer code (the rank of its versioned text id; null when the IA report
    # lacks its trial), looked up once per run of a trial's rows: the id-base check and the word map then
    # compare integers, not strings.
    names = words["text_id"].unique().sort()
    text_code = pl.col("text_id").replace_strict(names, pl.int_range(len(names), eager=True), default=None,
                                                 return_dtype=pl.Int64)
    trial_code = texts.select("trial_id", text_code.alias("code"))
    frame = fix.collect()
    fix = frame.with_columns(per_run(frame["trial_id"], lambda t: t.replace_strict(
        trial_code["trial_id"], trial_code["code"], default=None, return_dtype=pl.Int64)).alias("__code")).lazy()
    del frame
    by_text = words.lazy().select(text_code.alias("trial_id"), "ia_index", "word")
    check = detect_ia_id_base(fix.select(pl.col("__code").alias("trial_id"), "ia_index", "ia_label"), by_text,
                              fixation_file=fixation_report, ia_file=ia_report)
    fix_base = 1 if check.base is None else check.base
    fix = _word_indices(rebase_fixations(fix, fix_base), words.with_columns(text_code.alias("__code")))
    _count_fixations(fix, qc)
    ia_trials = (ia_trials.join(texts, on="trial_id", how="left")
                 .select("trial_id", "text_id", pl.exclude("trial_id", "text_id")))
    fix = fix.drop("__w", "__l").collect().lazy()  # in (trial_id, fixation_index) order since _load_fixations
    trials = _trials([ia_trials, fix_trials])
    _count_rows(trials, "fixation_count", qc, fixation_report)
    for name, table in (("words", words), ("trials", trials)):
        cells.null_counts(table, qc, "load_onestop", name, ia_report)
        cells.non_finite_counts(table, qc, "load_onestop", name, ia_report)
    return OneStopData(trials.lazy(), words.lazy(), fix, ia_rows,
                       qc, {str(fixation_report): fix_base, str(ia_report): ia_base})


def _load_ia(path, aliases: dict[str, str], qc: QCLog, start: threading.Event,
             cancel: threading.Event, d: Dialect) -> tuple[pl.LazyFrame, np.ndarray] | None:
    """The IA report's line starts (its check, :func:`readgaze.io.faults.check_text`), then (once ``start`` is set,
    unless ``cancel`` is) the report parsed (:func:`_parse`, every-row columns only) and aliased."""
    starts = line_starts(path, separator=d.separator)
    start.wait()
    if cancel.is_set():
        return None
    return _aliased(_parse(read_ia_report, path, ["participant_id"], d, qc), aliases, qc, "ia_rows"), starts


def _load_fixations(path, aliases: dict[str, str], qc: QCLog, parsed: threading.Event | None = None,
                    d: Dialect = Dialect()) -> tuple[pl.DataFrame, pl.LazyFrame]:
    """The fixation report parsed (:func:`_parse`; then ``parsed`` is set), aliased, split into its trial table
    and its rows, the rows sorted by (``trial_id``, ``fixation_index``) (:func:`_sort_order`)."""
    names = header(path, separator=d.separator, rename=d.rename)
    fix = _parse(read_fixation_report, path, [c for c in names if c not in TRIAL_COLUMNS], d, qc)
    if parsed is not None:
        parsed.set()
    starts = line_starts(path, separator=d.separator)
    fix = _aliased(fix, aliases, qc, "fixations")
    fix_trials, fix = _split_trial_columns(fix, "fixation_count", path, starts, qc=qc, dialect=d)
    del starts
    columns = fix.collect().get_columns()
    del fix  # the columns list is the only reference left: each column is freed once its sorted copy exists
    order = _sort_order(pl.DataFrame([c for c in columns if c.name in ("trial_id", "fixation_index")]))
    if order is not None:
        for k in range(len(columns)):  # the parser's many chunks made contiguous first: half the gather's cost
            columns[k] = columns[k].rechunk().gather(order)
    return fix_trials, pl.DataFrame(columns).lazy()


def _sort_order(frame: pl.DataFrame) -> pl.Series | None:
    """The row order of ``frame.sort("trial_id", "fixation_index", maintain_order=True)`` (stable: a repeated
    key keeps its file order), or None when the rows are in that order.

    The order comes from the runs of equal trial ids (a report keeps a trial's rows together, in fixation
    order): when each id is one run whose fixation index rises, the runs are put in id order whole; else from
    one integer key per row (the rank of its trial id, its fixation index), sorted stably. Nulls in either key:
    polars' own stable sort.
    """
    t, i = frame["trial_id"], frame["fixation_index"]
    if frame.height < 2:
        return None
    if t.null_count() or i.null_count():
        return frame.select(pl.arg_sort_by(["trial_id", "fixation_index"], maintain_order=True)).to_series()
    inner = i.cast(pl.Int64).to_numpy()
    run = t.rle_id().to_numpy()
    first = np.flatnonzero(np.r_[True, run[1:] != run[:-1]])  # each run's first row
    ids = t.gather(first)
    names = ids.unique().sort()
    rank = ids.replace_strict(names, pl.int_range(len(names), eager=True), return_dtype=pl.Int64).to_numpy()
    rising = bool((np.diff(inner)[np.diff(run) == 0] > 0).all())
    if len(names) == len(first) and rising:  # one run per trial, in fixation order: order the runs
        by_id = np.argsort(rank)
        if bool((by_id == np.arange(len(by_id))).all()):
            return None
        size = np.diff(np.r_[first, len(run)])[by_id]
        order = np.arange(len(run)) - np.repeat(np.cumsum(size) - size - first[by_id], size)
    else:
        lo = int(inner.min())
        if int(inner.max()) - lo >= (1 << 31):
            return frame.select(pl.arg_sort_by(["trial_id", "fixation_index"], maintain_order=True)).to_series()
        key = rank[run] * np.int64(1 << 31) + (inner - lo)
        if bool((key[1:] >= key[:-1]).all()):
            return None
        order = np.argsort(key, kind="stable")
    return pl.Series(order, dtype=pl.UInt32)


def _with_rows(frame: pl.DataFrame, rows) -> pl.DataFrame:
    """``frame`` (the columns of ``rows``, in order) with ``__row``."""
    row = pl.Series("__row", rows, pl.UInt32)
    return frame.with_columns(row) if frame.width else row.to_frame()


def _schema(lf: pl.LazyFrame) -> set[str]:
    return set(lf.collect_schema().names())


def _parse(reader, path, keep: list[str], d: Dialect, qc: QCLog) -> pl.LazyFrame:
    """A report parsed once, in the columns ``keep`` (+ the mapped and trial-id ones), held in memory as
    canonical columns with ``__row`` (the data row in the file, or in its cleaned copy: :mod:`readgaze.io.faults`).

    Every later step collects this frame several times; a lazy scan would re-parse the CSV each time.
    """
    return (reader(path, source="onestop", ia_id_base=0, in_memory=True, keep=keep, qc=qc, **d.reader())
            .with_row_index("__row").collect().lazy())


def _ia_rows(path, base: int, aliases: dict[str, str], texts: pl.DataFrame, words: pl.DataFrame,
             d: Dialect = Dialect()) -> pl.LazyFrame:
    """Lazy trial x IA rows (all ``IA_*`` columns) from a scan of the whole IA report.

    ``texts`` (``trial_id`` -> versioned ``text_id``) and ``words`` (``word_index`` per text and IA)
    come from the rows the loader held in memory. Called on first use of :attr:`OneStopData.ia_rows`
    (the dtype pass over the whole file is paid only by callers that want these rows).
    """
    rows = _alias(read_ia_report(path, source="onestop", ia_id_base=base, check_keys=False, **d.reader()), aliases)
    rows = (rows.join(texts.lazy().rename({"text_id": "__t"}), on="trial_id", how="left", maintain_order="left")
            .with_columns(pl.coalesce("__t", "text_id").alias("text_id")).drop("__t")
            .join(words.lazy().select("text_id", "ia_index", "word_index"), on=["text_id", "ia_index"],
                  how="left", maintain_order="left"))
    rows = rows.drop(_present(rows, TRIAL_COLUMNS[1:] + WORD_FEATURES + ("word_length",)))
    return rows.select("trial_id", "text_id", "ia_index", "word_index",
                       pl.exclude("trial_id", "text_id", "ia_index", "word_index"))


def _word_indices(fix: pl.LazyFrame, words: pl.DataFrame) -> pl.LazyFrame:
    """Fixations (with ``__code``, their trial's text code; null when the IA report lacks the trial) with
    ``word_index`` from the words map (with the same ``__code`` per text), plus ``__w`` / ``__l`` (the fixated
    IA's word index and label in the IA report; null when the trial's IA rows lack that id) for the QC counts."""
    # a lookup by one integer key (text code, IA index) per fixation: no join, no copy of the other columns
    def key(code: pl.Expr, ia: pl.Expr) -> pl.Expr:
        return code * (1 << 32) + ia.cast(pl.Int64)

    wk = words.select(key(pl.col("__code"), pl.col("ia_index")).alias("k"), "word_index", "word")
    fk = key(pl.col("__code"), pl.col("ia_index"))
    return (fix.with_columns(fk.replace_strict(wk["k"], wk["word_index"], default=None).alias("__w"),
                             fk.replace_strict(wk["k"], wk["word"], default=None).alias("__l"))
            .with_columns(pl.when(pl.col("__w").is_not_null()).then(pl.col("__w"))
                          .otherwise(pl.col("word_index")).alias("word_index"))
            .drop("__code").collect().lazy())


def _present(lf: pl.LazyFrame, names) -> list[str]:
    have = set(lf.collect_schema().names())
    return [n for n in names if n in have]


def _aliased(lf: pl.LazyFrame, aliases: dict[str, str], qc: QCLog, table: str) -> pl.LazyFrame:
    """Rename aliased participant ids (and the trial-id prefix), counting the rows changed."""
    if not aliases:
        return lf
    hit = pl.col("participant_id").is_in(list(aliases))
    n = lf.select(hit.sum()).collect().item()
    qc.add("load_onestop", table, "participant_alias", n, action="changed",
           detail="rows of a saved participant id renamed to its true id (0: none in this report): "
                  + ", ".join(f"{k} -> {v}" for k, v in aliases.items()))
    return _alias(lf, aliases).collect().lazy() if n else lf


def _alias(lf: pl.LazyFrame, aliases: dict[str, str]) -> pl.LazyFrame:
    """Lazily rename aliased participant ids and the trial-id prefix."""
    if not aliases:
        return lf
    hit = pl.col("participant_id").is_in(list(aliases))
    new = pl.col("participant_id").replace(aliases)
    return lf.with_columns(
        pl.when(hit).then(new + pl.col("trial_id").str.slice(pl.col("participant_id").str.len_chars()))
        .otherwise(pl.col("trial_id")).alias("trial_id"), new.alias("participant_id"))


def _count_fixations(fix: pl.LazyFrame, qc: QCLog) -> None:
    have = fix.collect_schema().names()
    exprs = [pl.len().alias("n"), pl.col("word_index").is_null().sum().alias("off")]
    if "__w" in have:
        exprs += [(pl.col("ia_index").is_not_null() & pl.col("__w").is_null()).sum().alias("no_ia"),
                  (pl.col("__l").is_not_null() & (pl.col("__l") != pl.col("ia_label"))).sum().alias("mismatch")]
    c = fix.select(exprs).collect().row(0, named=True)  # off-word fixations: counted by read_fixation_report
    if "__w" in have:
        qc.add("load_onestop", "fixations", "no_ia_row", c["no_ia"], action="flagged",
               detail="fixated IA id has no IA-report row: word_index = id - base, unchecked")
        qc.add("load_onestop", "fixations", "ia_label_mismatch", c["mismatch"], action="flagged",
               detail="fixation report label differs from the IA report's")


def _text_versions(ia: pl.LazyFrame, qc: QCLog) -> pl.DataFrame:
    """``trial_id -> versioned_text_id`` for texts shown with more than one IA layout.

    Layouts are compared by a per-trial signature (XOR of a seeded, hence deterministic, hash of each
    IA row's index, label and integer box, plus the IA count): one vectorised pass, no per-row strings.
    The suffix itself is the SHA-1 of the layout's text (``index,label,left,top,right,bottom`` rows
    joined by ``|``), built only for one representative trial per layout.
    """
    box = [pl.col(c).cast(pl.Int64, strict=False) for c in ("left_px", "top_px", "right_px", "bottom_px")]
    row_hash = pl.struct(pl.col("ia_index"), pl.col("word"), *box).hash(seed=0)
    sig = (ia.group_by("trial_id", "text_id")
           .agg(row_hash.bitwise_xor().alias("layout"), pl.len().alias("n_ia"))
           .with_columns(pl.struct("layout", "n_ia").alias("layout")).drop("n_ia")
           .collect())
    multi = sig.group_by("text_id").agg(pl.col("layout").n_unique().alias("n")).filter(pl.col("n") > 1)
    qc.add("load_onestop", "words", "layout_versions", int(multi["n"].sum() or 0), action="flagged",
           detail=f"{multi.height} texts shown with more than one IA layout get a _v<hash> suffix")
    if multi.is_empty():
        return pl.DataFrame(schema={"trial_id": pl.String, "versioned_text_id": pl.String})
    sig = sig.join(multi.select("text_id"), on="text_id", how="semi")
    reps = sig.sort("trial_id").group_by("text_id", "layout").agg(pl.col("trial_id").first().alias("rep"))
    row = pl.concat_str([pl.col("ia_index"), pl.col("word"), *box], separator=",", ignore_nulls=True)
    content = (ia.join(reps.lazy().select(pl.col("rep").alias("trial_id")), on="trial_id", how="semi")
               .group_by("trial_id").agg(row.sort_by(pl.col("ia_index")).str.join("|").alias("s")).collect())
    digest = {t: hashlib.sha1(s.encode()).hexdigest()[:6] for t, s in content.iter_rows()}
    reps = reps.with_columns(pl.col("rep").replace_strict(digest, return_dtype=pl.String).alias("digest"))
    return (sig.join(reps, on=["text_id", "layout"])
            .select("trial_id", (pl.col("text_id") + "_v" + pl.col("digest")).alias("versioned_text_id")))


def _check_numbers(frame: pl.DataFrame, columns: list[str], path) -> None:
    """The word features readgaze computes with must be numbers: a :class:`ParseError` names the first other value's
    row (``__row``) and column."""
    for c in columns:
        if frame.schema[c] != pl.String:
            continue
        bad = frame.filter(pl.col(c).is_not_null() & pl.col(c).str.strip_chars().cast(pl.Float64, strict=False)
                           .is_null()).sort("__row")
        if bad.height:
            known = text_file(path)
            row = int(bad["__row"][0])
            raise ParseError(f"got {bad[c][0]!r}, expected a number (OneStop's word feature {c})", file=path,
                             row=known.user_line(row) if known is not None else row + 2, column=c)


def _words(reps: pl.LazyFrame, wide: pl.DataFrame, word_cols: list[str], path=None,
           qc: QCLog | None = None) -> pl.DataFrame:
    """One row per (text_id, ia_index) from ``reps``, the IA rows of the first trial (by trial_id) of each
    text layout, with their word features (``word_cols``) from ``wide`` (rows read whole, by ``__row``)."""
    w = (reps.join(wide.lazy().select("__row", *word_cols), on="__row", how="left")
         .select("text_id", "ia_index", "word", "left_px", "right_px", "top_px", "bottom_px", *word_cols, "__row")
         .sort("text_id", "ia_index").collect())
    _check_numbers(w, [c for c in ("word_length", "wordfreq_frequency", "gpt2_surprisal") if c in w.columns], path)
    cells.stray_text(w.select("__row", *word_cols), qc, "load_onestop", "words", path)
    w = w.drop("__row")
    prev = {c: pl.col(c).shift(1).over("text_id") for c in ("word", "top_px", "bottom_px", "left_px")}
    continued = (prev["word"].str.contains(_SPLIT_WORD) & (pl.col("top_px") > prev["top_px"])).fill_null(False)
    new_line = ((pl.col("top_px") >= prev["bottom_px"]) | (pl.col("left_px") < prev["left_px"])).fill_null(False)
    w = w.with_columns(
        (pl.col("ia_index") - continued.cast(pl.Int32).cum_sum().over("text_id")).cast(pl.Int32).alias("word_index"),
        new_line.cast(pl.Int32).cum_sum().over("text_id").cast(pl.Int32).alias("line_index"))
    extra = []
    if "word_length" in w.columns:
        extra.append(pl.col("word_length").cast(pl.Float64).cast(pl.Int32, strict=False))
    else:
        extra.append(pl.col("word").str.len_chars().cast(pl.Int32).alias("word_length"))
    if "wordfreq_frequency" in w.columns:
        zipf = 9 - pl.col("wordfreq_frequency").cast(pl.Float64) * math.log10(2)
        extra.append(zipf.clip(lower_bound=0.0).alias("frequency_zipf"))
    if "gpt2_surprisal" in w.columns:
        extra.append(pl.col("gpt2_surprisal").cast(pl.Float64).alias("surprisal_bits"))
    w = w.with_columns(extra)
    first = ["text_id", "ia_index", "word_index", "word", "line_index", "left_px", "right_px", "top_px",
             "bottom_px", "word_length"]
    return w.select(first + [c for c in w.columns if c not in first])


def _spans(column: str, prefix: str) -> list[pl.Expr]:
    nums = pl.col(column).cast(pl.String).str.extract_all(r"\d+").list.eval(pl.element().cast(pl.Int32))
    return [nums.list.gather_every(2).alias(f"{prefix}_start_index"),
            nums.list.gather_every(2, offset=1).alias(f"{prefix}_end_index")]


def _split_trial_columns(lf: pl.LazyFrame, count: str, path, starts=None, *, trial_cols: list[str] | None = None,
                         wide: pl.DataFrame | None = None, qc: QCLog | None = None,
                         dialect: Dialect = Dialect()) -> tuple[pl.DataFrame, pl.LazyFrame]:
    """``(per-trial table, rows without the trial columns)``: the trial-constant :data:`TRIAL_COLUMNS`
    (first value per trial) and the row count per trial (Int32, ``count``) leave the big table early.

    ``lf`` holds the columns parsed on every row and ``__row``; the other trial columns of the file
    (``trial_cols``, default all it has) come from each trial's first row: from ``wide`` (rows read
    whole, by ``__row``), else read now (:func:`readgaze.io.rows.read_rows`, ``starts`` its line
    starts). The fixation report's table also gets ``text_id`` (the unversioned paragraph id), and
    its rows lose ``__row``. The boolean trial columns are checked (:data:`BOOLEAN_COLUMNS`), and a trial whose row
    count differs from the report's own count of it (:data:`TRIAL_COUNTS`) is counted in ``qc``.
    """
    names = header(path, separator=dialect.separator, rename=dialect.rename)
    trial_cols = [c for c in TRIAL_COLUMNS if c in names] if trial_cols is None else trial_cols
    have = _schema(lf)
    text = []
    if count == "fixation_count":
        text = [pl.concat_str([pl.col(c) for c in ("article_batch", "article_id", "difficulty_level", "paragraph_id")],
                              separator="_").first().alias("text_id")]
    # a trial's first row is the first row of its first run of rows: group the runs' first rows (few), not all rows
    frame = lf.collect()
    run = frame["trial_id"].rle_id().to_numpy()
    first = np.flatnonzero(np.r_[True, run[1:] != run[:-1]]) if len(run) else np.zeros(0, np.int64)
    runs = frame[first].with_columns(pl.Series("__n", np.diff(np.r_[first, len(run)]), pl.Int64))
    del frame, run
    part = runs.group_by("trial_id").agg(*text, pl.col("__row").first(),
                                         *[pl.col(c).first() for c in trial_cols if c in have],
                                         pl.col("__n").sum().cast(pl.Int32).alias(count))
    missing = [c for c in trial_cols if c not in have]
    if wide is None:
        rows = part["__row"].sort()
        n = lf.select(pl.len()).collect().item()
        wide = _with_rows(read_rows(path, rows.to_numpy(), missing, n_rows=n, starts=starts, **dialect.reader()),
                          rows.to_numpy())
    part = part.join(wide.select("__row", *missing), on="__row", how="left")
    part = _redecided(part, missing)  # ``wide`` also holds rows that are not a trial's first: its dtypes are theirs too
    _check_booleans(part, path)
    cells.stray_text(part, qc, "load_onestop", "trials", path)
    if count == "ia_count":
        _count_rows(part, count, qc, path)
    part = part.select("trial_id", *[e.meta.output_name() for e in text], *trial_cols, count)
    rest = lf.drop([c for c in trial_cols if c in have and c != "participant_id"]
                   + (["__row"] if count == "fixation_count" else []))
    return part, rest.collect().lazy()


def _redecided(frame: pl.DataFrame, columns: list[str]) -> pl.DataFrame:
    """``frame`` with each text column of ``columns`` whose values are all whole numbers (or all numbers) cast to
    Int64 (Float64): the dtype :func:`readgaze.io.csv.read_csv` would give these values alone."""
    texts = [c for c in columns if frame.schema.get(c) == pl.String]
    if not texts:
        return frame
    fits = frame.select([e for c in texts for e in (
        (pl.col(c).str.strip_chars().cast(pl.Int64, strict=False).null_count() == pl.col(c).null_count()).alias(
            f"i{c}"),
        (pl.col(c).str.strip_chars().cast(pl.Float64, strict=False).null_count() == pl.col(c).null_count()).alias(
            f"f{c}"),
        (pl.col(c).null_count() < pl.len()).alias(f"n{c}"))]).row(0, named=True)
    casts = [pl.col(c).str.strip_chars().cast(pl.Int64 if fits[f"i{c}"] else pl.Float64) for c in texts
             if fits[f"n{c}"] and (fits[f"i{c}"] or fits[f"f{c}"])]
    return frame.with_columns(casts) if casts else frame


def _check_booleans(part: pl.DataFrame, path) -> None:
    """Each :data:`BOOLEAN_COLUMNS` column of a trial table (with ``__row``, the trial's first data row) holds
    ``True``/``False`` or nothing; else a :class:`ParseError` names the trial's first row and the column."""
    for c in BOOLEAN_COLUMNS:
        if c not in part.columns or part.schema[c] == pl.Boolean:
            continue
        text = pl.col(c).cast(pl.String).str.to_lowercase()
        bad = part.filter(pl.col(c).is_not_null() & ~text.is_in(["true", "false"])).sort("__row")
        if bad.height:
            known = text_file(path)
            row = int(bad["__row"][0])
            raise ParseError(f"got {bad[c][0]!r}, expected True or False (OneStop's {c})", file=path,
                             row=known.user_line(row) if known is not None else row + 2, column=c)
        part.replace_column(part.get_column_index(c), (part[c].cast(pl.String).str.to_lowercase() == "true")
                            .alias(c))


def _count_rows(trials: pl.DataFrame, count: str, qc: QCLog | None, path) -> None:
    """Count the trials whose rows (``count``) differ from the report's own count of them (:data:`TRIAL_COUNTS`):
    a deleted row, or a file cut at a line end."""
    stated = TRIAL_COUNTS[count]
    if qc is None or stated not in trials.columns or count not in trials.columns:
        return
    want = pl.col(stated).cast(pl.Int64, strict=False)
    odd = trials.filter(pl.col(count).is_not_null() & want.is_not_null() & (want != pl.col(count).cast(pl.Int64))
                        ).sort("trial_id")
    detail = None
    if odd.height:
        r = odd.row(0, named=True)
        detail = (f"{Path(path).name}: first trial {r['trial_id']}: {r[count]} rows, {stated} {r[stated]} (a row "
                  "deleted, or the file cut short?)")
    qc.add("load_onestop", "trials", f"rows_differ_from_{stated}", odd.height, action="flagged", detail=detail)


def _trials(parts: list[pl.DataFrame]) -> pl.DataFrame:
    """One row per trial from both reports' trial tables (IA report values first), with canonical trial columns."""
    t = (pl.concat(parts, how="diagonal_relaxed").group_by("trial_id", maintain_order=True)
         .agg(pl.all().drop_nulls().first()).sort("trial_id"))
    have = t.columns
    if "question_preview" not in have:
        from readgaze.errors import SchemaError

        raise SchemaError("OneStop reports: no question_preview column in either report (the reading goal: True = "
                          "information seeking, False = ordinary reading)")
    goal = pl.col("question_preview").cast(pl.Boolean)
    practice = (pl.col("practice_trial").cast(pl.Boolean) if "practice_trial" in have
                else pl.col("article_id").cast(pl.Int64) == 0)
    derived = [
        pl.concat_str([pl.col("article_batch"), pl.col("article_id")], separator="_").alias("item_id"),
        pl.when(goal).then(pl.lit("information_seeking")).when(goal.not_()).then(pl.lit("ordinary"))
        .alias("reading_goal"),
        pl.col("repeated_reading_trial").cast(pl.Boolean).alias("repeated_reading"),
        practice.alias("practice"),
    ]
    for c, prefix in (("critical_span_indices", "critical_span"), ("distractor_span_indices", "distractor_span")):
        if c in have:
            derived += _spans(c, prefix)
    t = t.with_columns(derived)
    for c, dtype in (("question", pl.String), ("selected_answer", pl.String), ("is_correct", pl.Boolean)):
        t = t.with_columns((pl.col(c) if c in have else pl.lit(None)).cast(dtype).alias(c))
    first = ["trial_id", "participant_id", "item_id", "text_id", "reading_goal", "question", "selected_answer",
             "is_correct", "repeated_reading", "practice"]
    return t.select(first + [c for c in t.columns if c not in first])
