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

import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import cached_property, partial
from pathlib import Path

import numpy as np
import polars as pl

from readgaze.errors import ParseError
from readgaze.io import cells
from readgaze.io.csv import header
from readgaze.io.dataviewer import detect_ia_id_base, read_fixation_report, read_ia_report, rebase_fixations
from readgaze.io.onestop_dialect import Dialect, dialect  # noqa: F401 -- Dialect: public here too
from readgaze.io.onestop_tables import (  # noqa: F401 -- TRIAL_COLUMNS, WORD_FEATURES: public here too
    TRIAL_COLUMNS,
    WORD_FEATURES,
    columns_of,
    count_rows,
    split_trial_columns,
    text_versions,
    trials_table,
    with_rows,
    words_table,
)
from readgaze.io.rows import line_starts, per_run, read_rows
from readgaze.qc import QCLog

PARTICIPANT_ALIASES: dict[str, str] = {"l38_97": "l38_104"}
"""Saved id -> true id (OneStop documentation, "Known issues": "l38_104 is saved as l38_97")."""


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
            return OneStopData(trials_table([fix_trials]).lazy(), None, fix.collect().lazy(), None, qc,
                               {str(fixation_report): 1})
        ia, ia_starts = ia_job.result()
    qc.extend(fix_qc)
    qc.extend(ia_qc)
    n_ia = ia.select(pl.len()).collect().item()
    ia_base = 0 if ia.select(pl.col("ia_index").min()).collect().item() == 0 else 1
    ia = ia.with_columns(pl.col("ia_index") - ia_base) if ia_base else ia
    versions = text_versions(ia, qc)
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
    wide = with_rows(read_rows(ia_report, rows, [c for c in trial_cols + word_cols if c not in columns_of(ia)],
                                n_rows=n_ia, starts=ia_starts, **ia_d.reader()), rows)
    ia_trials, ia = split_trial_columns(ia, "ia_count", ia_report, trial_cols=trial_cols, wide=wide, qc=qc,
                                         dialect=ia_d)
    words = words_table(reps, wide, word_cols, ia_report, qc)
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
    trials = trials_table([ia_trials, fix_trials])
    count_rows(trials, "fixation_count", qc, fixation_report)
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
                    d: Dialect = Dialect()) -> tuple[pl.DataFrame, pl.LazyFrame]:  # noqa: B008 -- a frozen dataclass
    """The fixation report parsed (:func:`_parse`; then ``parsed`` is set), aliased, split into its trial table
    and its rows, the rows sorted by (``trial_id``, ``fixation_index``) (:func:`_sort_order`)."""
    names = header(path, separator=d.separator, rename=d.rename)
    fix = _parse(read_fixation_report, path, [c for c in names if c not in TRIAL_COLUMNS], d, qc)
    if parsed is not None:
        parsed.set()
    starts = line_starts(path, separator=d.separator)
    fix = _aliased(fix, aliases, qc, "fixations")
    fix_trials, fix = split_trial_columns(fix, "fixation_count", path, starts, qc=qc, dialect=d)
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


def _parse(reader, path, keep: list[str], d: Dialect, qc: QCLog) -> pl.LazyFrame:
    """A report parsed once, in the columns ``keep`` (+ the mapped and trial-id ones), held in memory as
    canonical columns with ``__row`` (the data row in the file, or in its cleaned copy: :mod:`readgaze.io.faults`).

    Every later step collects this frame several times; a lazy scan would re-parse the CSV each time.
    """
    return (reader(path, source="onestop", ia_id_base=0, in_memory=True, keep=keep, qc=qc, **d.reader())
            .with_row_index("__row").collect().lazy())


def _ia_rows(path, base: int, aliases: dict[str, str], texts: pl.DataFrame, words: pl.DataFrame,
             d: Dialect = Dialect()) -> pl.LazyFrame:  # noqa: B008 -- a frozen dataclass
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
