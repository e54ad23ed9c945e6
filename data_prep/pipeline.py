"""The preprocessing pipeline: loaded tables → clean → lines → words → measures → features.

:func:`prepare` takes canonical ``trials``, ``words`` and ``fixations`` (from any loader in
:mod:`readgaze.data_prep.sources`) and returns the four dataset tables plus one :class:`QCLog` with every
dropped, changed or flagged row counted per reason. :func:`readgaze.data_prep.dataset.write_dataset` writes
them. Each step is a readgaze function; this module only orders them and counts.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from contextlib import nullcontext
from dataclasses import dataclass, field

import numpy as np
import polars as pl

from readgaze.align import align_words
from readgaze.features import compute_trial_features
from readgaze.measures import compute_word_measures, use_compiled
from readgaze.qc import QCLog
from readgaze.text import assign_box_lines, merge_hyphen_splits
from readgaze.word_features import add_word_features


@dataclass
class Prepared:
    """The dataset tables (sorted DataFrames), the QC log and the manifest notes."""

    trials: pl.DataFrame
    words: pl.DataFrame
    fixations: pl.DataFrame
    word_measures: pl.DataFrame
    qc: QCLog
    rows_in: dict[str, int]
    features: dict[str, str] = field(default_factory=dict)


def complete_layout(words: pl.DataFrame) -> pl.DataFrame:
    """Fill ``line_index`` (from box rows) and ``word_index`` (hyphen splits merged) when absent."""
    if "line_index" not in words.columns or words["line_index"].null_count():
        words = assign_box_lines(words, by="text_id")
    if "word_index" not in words.columns or words["word_index"].null_count():
        words = merge_hyphen_splits(words, by="text_id")
    return words.with_columns(pl.col("ia_index", "word_index", "line_index").cast(pl.Int32),
                              pl.col("left_px", "right_px", "top_px", "bottom_px").cast(pl.Float64))


def clean(trials: pl.DataFrame, words: pl.DataFrame, fixations: pl.DataFrame, qc: QCLog):
    """Drop rows no step can use, counting each reason (a zero count is recorded too).

    * fixations with a null or non-positive ``duration_ms`` (``invalid_duration``);
    * fixations whose trial is not in ``trials`` (``unknown_trial``);
    * duplicate (``trial_id``, ``fixation_index``) fixations beyond the first (``duplicate_fixation``);
    * trials with no text in ``words`` (``no_text``) or without any fixation (``no_fixations``),
      with their fixations (``trial_dropped``).
    """
    step = "clean"
    bad = pl.col("duration_ms").is_null() | (pl.col("duration_ms") <= 0)
    first = fixations.lazy().filter(bad).select("trial_id", "fixation_index", "duration_ms").head(1).collect()
    detail = (f"first: trial {first['trial_id'][0]}, fixation_index {first['fixation_index'][0]}, duration_ms "
              f"{first['duration_ms'][0]}") if first.height else None  # so a user can find the cell
    fixations = _drop(fixations, ~bad, qc, step, "fixations", "invalid_duration", detail=detail)
    runs = _Runs(fixations["trial_id"])
    fixations, runs = runs.drop(fixations, runs.first.is_in(trials["trial_id"].implode()), qc, step, "unknown_trial")
    n = fixations.height
    if not _keys_unique(fixations, runs):
        fixations = fixations.unique(["trial_id", "fixation_index"], keep="first", maintain_order=True)
        runs = _Runs(fixations["trial_id"])
    qc.add(step, "fixations", "duplicate_fixation", n - fixations.height)
    has_text = pl.col("text_id").is_in(words["text_id"].unique().implode())
    trials = _drop(trials, has_text, qc, step, "trials", "no_text")
    has_fix = pl.col("trial_id").is_in(runs.first.unique().implode())  # every distinct id starts a run
    trials = _drop(trials, has_fix, qc, step, "trials", "no_fixations",
                   detail="trial has interest-area rows but no fixation rows")
    fixations, _ = runs.drop(fixations, runs.first.is_in(trials["trial_id"].implode()), qc, step, "trial_dropped")
    used = pl.col("text_id").is_in(trials["text_id"].unique().implode())
    words = _drop(words, used, qc, step, "words", "text_not_read", detail="interest areas of texts no kept trial shows")
    return trials, words, fixations


class _Runs:
    """The runs of equal consecutive ``trial_id`` of a fixations table: a report keeps each trial's rows
    together, so a per-trial test is evaluated once per run (``first``: each run's id) and repeated."""

    def __init__(self, trial_id: pl.Series):
        self.run = trial_id.rle_id().to_numpy() if len(trial_id) else np.zeros(0, np.uint32)
        self.new = np.r_[True, self.run[1:] != self.run[:-1]] if len(trial_id) else np.zeros(0, bool)
        self.first = trial_id.filter(pl.Series(self.new))

    def drop(self, fixations: pl.DataFrame, keep_run: pl.Series, qc: QCLog, step: str, reason: str):
        """:func:`_drop` of the fixations whose run's ``keep_run`` (one Boolean per run) is False or null;
        returns the kept rows and their runs."""
        keep = keep_run.fill_null(False).to_numpy()[self.run]
        n = int(len(keep) - keep.sum())
        qc.add(step, "fixations", reason, n)
        if not n:
            return fixations, self
        fixations = fixations.filter(pl.Series(keep))
        return fixations, _Runs(fixations["trial_id"])


def _drop(frame: pl.DataFrame, keep: pl.Expr, qc: QCLog, step: str, table: str, reason: str, **kw) -> pl.DataFrame:
    """``frame.filter(keep)``, the rows it drops (``keep`` False or null) counted in ``qc``; no copy when it
    drops none."""
    n = frame.select((~keep.fill_null(False)).sum()).item()
    qc.add(step, table, reason, n, **kw)
    return frame.filter(keep) if n else frame


def _keys_unique(fixations: pl.DataFrame, runs: _Runs) -> bool:
    """True when no (trial_id, fixation_index) repeats, by a cheap sufficient test: each trial's rows are
    contiguous with a strictly increasing fixation index (a report's own order). False: check it whole."""
    if fixations.height < 2:
        return True
    if len(runs.first) != runs.first.n_unique():  # a trial's rows in two runs or more
        return False
    i = fixations["fixation_index"]
    rising = pl.Series(runs.new[1:]) | (i.slice(1) > i.slice(0, len(i) - 1))  # null index: not rising
    return bool(rising.fill_null(False).all())


def _compare_with_report(fixations: pl.DataFrame, qc: QCLog) -> None:
    """Flag fixations whose word box differs from the one the source report names (when it does)."""
    for ours, theirs in (("ia_index", "report_ia_index"), ("word_index", "report_word_index")):
        if theirs in fixations.columns:
            differ = fixations.select(pl.col(ours).ne_missing(pl.col(theirs)).sum()).item()
            qc.add("align", "fixations", f"{ours}_differs_from_report", differ, action="flagged",
                   detail=f"readgaze's {ours} != the source report's interest area (null = off text)")


def report_alignment(fixations: pl.DataFrame, words: pl.DataFrame, trials: pl.DataFrame):
    """Keep the source report's interest area per fixation (line assigner ``report``).

    ``ia_index``/``word_index`` are the report's (``report_ia_index``, 0-based), ``line_index`` that word's line;
    fixations on no interest area, or on one the words lack, stay null and are counted ``off_text``.
    """
    qc = QCLog()
    text = trials.select("trial_id", "text_id")
    boxes = words.select("text_id", pl.col("ia_index").alias("report_ia_index"), "word_index", "line_index")
    out = (fixations.drop("ia_index", "word_index", "line_index", strict=False)
           .join(text, on="trial_id", how="left", maintain_order="left")
           .join(boxes, on=["text_id", "report_ia_index"], how="left", maintain_order="left")
           .with_columns(pl.when(pl.col("word_index").is_not_null()).then(pl.col("report_ia_index"))
                         .cast(pl.Int32).alias("ia_index"))
           .drop("text_id"))
    qc.add("align", "fixations", "off_text", out.select(pl.col("word_index").is_null().sum()).item(),
           action="flagged", detail="line assigner 'report': the report names no interest area of the words")
    return out.lazy(), qc


def prepare(trials, words, fixations, qc: QCLog | None = None, *, line_assigner: str = "slice",
            screen_px: tuple[float, float] | None = None, surprisal_model: str | None = None,
            language: str = "en", progress=None, sink=None, corrections: pl.DataFrame | None = None,
            off_text: str = "skip") -> Prepared:
    """Run clean → line assignment → alignment → measures → features on canonical tables.

    Parameters
    ----------
    trials, words, fixations : polars.DataFrame or LazyFrame
        Canonical tables (``readgaze.schema``); extra source columns are kept.
    qc : QCLog, optional
        The loader's log; the pipeline's records are appended.
    line_assigner : str, default "slice"
        See :func:`readgaze.align.align_words`: ``"nearest"`` keeps the recorded y (what Data Viewer's
        reports use); ``"slice"`` corrects vertical drift (Glandorf & Schroeder 2021, thresholds scaled to the
        text's line pitch; :func:`readgaze.lines.slice.slice`); ``"dist"`` is the learned assigner.
    screen_px : (width, height), optional
        For the ``off_screen`` count.
    surprisal_model : str, optional
        Local path of a Hugging Face causal LM; surprisal is skipped (and recorded) without it.
    progress : callable, optional
        ``progress(step_name)`` returns a context manager shown while a step runs.
    sink : callable, optional
        ``sink(table_name, frame)`` receives each final (sorted) table as soon as it is ready, e.g.
        :meth:`readgaze.data_prep.dataset.DatasetWriter.put`, so that writing overlaps the later steps.
    corrections : polars.DataFrame, optional
        A reviewer's corrections log (:func:`readgaze.corrections.read_log`), re-applied after line assignment
        (:func:`readgaze.corrections.reapply`): excluded trials dropped, corrected lines set, counted in ``qc``.
    off_text : {"skip", "dataviewer", "leave"}
        What an off-text fixation does to the word measures (:func:`readgaze.measures.compute_word_measures`).

    Returns
    -------
    Prepared
    """
    step = progress or (lambda name: nullcontext())
    sink = sink or (lambda name, frame: None)
    qc = qc if qc is not None else QCLog()
    trials, words, fixations = (f.lazy().collect() for f in (trials, words, fixations))
    rows_in = {"trials": trials.height, "words": words.height, "fixations": fixations.height}
    with step("clean"):
        words = complete_layout(words)
        trials, words, fixations = clean(trials, words, fixations, qc)
    with step(f"line assignment ({line_assigner}) and word alignment"):
        if line_assigner == "report":
            aligned, align_qc = report_alignment(fixations, words, trials)
        else:
            aligned, align_qc = align_words(fixations, words, trials, line_assigner=line_assigner,
                                            screen_px=screen_px)
        fixations = sort_rows(aligned.collect(), "trial_id", "fixation_index")
        del aligned
        release_freed_memory()
        qc.extend(align_qc)
        _compare_with_report(fixations, qc)
        if corrections is not None:  # the reviewer's log on top of the automatic assignment (readgaze review)
            from readgaze.corrections import reapply

            trials, fixations = reapply(trials, words, fixations, corrections, qc)
    sink("fixations", fixations)  # written while the agreement and the measures are computed
    # per-trial agreement with the vote and slice, before the measures: its compiled kernels run on every core
    # (readgaze.lines._common.in_parts), and its working arrays (0.4 GiB at 2.4 M fixations) are freed before the
    # measures' tables grow (side by side, the two peaks added up: 1.6-1.7 GiB). Its QC records are added below,
    # in a fixed place.
    agreement, records = _line_agreement(fixations, words, trials, line_assigner)
    release_freed_memory()
    compiled = use_compiled(fixations.height)  # the compiled measures or NumPy's: decided once for all blocks
    # Per block of trials (a block's NumPy working arrays, not the whole table's): a block's trial features are
    # computed in a second thread while the main thread computes the next block's word measures.
    with step("reading measures and trial features"), ThreadPoolExecutor(1, "readgaze-features") as pool:
        blocks, feats = [], []
        for tr, fx in trial_blocks(trials, fixations):
            measured = compute_word_measures(fx, words, tr, compiled=compiled, off_text=off_text)
            blocks.append(sort_rows(measured.collect(), "trial_id", "word_index"))
            feats.append(pool.submit(_trial_features, fx, words, tr, blocks[-1]))
        # blocks in trial_id order: no sort; kept as chunks (no 0.26 GiB copy of the table at 2.4 M fixations)
        measures = sort_rows(pl.concat(blocks, rechunk=False), "trial_id", "word_index")
        del blocks
        sink("word_measures", measures)
        feats = pl.concat([f.result() for f in feats])
        release_freed_memory()
        trials = trials.drop([c for c in feats.columns if c != "trial_id"], strict=False)
        for record in records:
            qc.add(**record)
        trials = sort_rows(trials.join(feats, on="trial_id", how="left")
                           .join(agreement, on="trial_id", how="left"), "trial_id")
    sink("trials", trials)
    with step("word features"):
        words, features = add_word_features(words, language=language, surprisal_model=surprisal_model)
        words = sort_rows(words, "text_id", "ia_index")
    sink("words", words)
    return Prepared(trials=trials, words=words, fixations=fixations, word_measures=measures, qc=qc,
                    rows_in=rows_in, features=features)


def _line_agreement(fixations: pl.DataFrame, words: pl.DataFrame, trials: pl.DataFrame, line_assigner: str
                    ) -> tuple[pl.DataFrame, list[dict]]:
    """Per trial, the share of fixations whose line agrees with the vote and with slice
    (:func:`readgaze.lines.agreement.line_agreement`), and the QC records (``QCLog.add``'s arguments) flagging the
    trials below 95 % and counting those not checked (their text's lines are not top to bottom, e.g. a layout
    built from a fixation report's own positions)."""
    from readgaze.lines.agreement import THRESHOLD, line_agreement, low_agreement, unordered_texts

    skipped = unordered_texts(words)
    agreement = line_agreement(fixations, words, trials, chosen=line_assigner, unordered=skipped)
    agreement = agreement.with_columns(pl.col("trial_id").cast(trials.schema["trial_id"]))
    synthesised = _synthesised_position_trials(fixations)
    if synthesised is not None:  # no recorded positions to check the lines against: null, counted below
        recorded = ~pl.col("trial_id").is_in(synthesised.implode())
        agreement = agreement.with_columns(pl.when(recorded).then(pl.exclude("trial_id")))
    low = low_agreement(agreement)
    shown = ", ".join(map(str, low["trial_id"].head(10).to_list())) + (", ..." if low.height > 10 else "")
    records = [dict(step="assign_lines", table="trials", count=low.height, action="flagged",
                    reason=f"lines agree with the vote or slice on under {THRESHOLD:.0%} of fixations",
                    detail=shown or None)]
    if skipped:
        unchecked = trials.filter(pl.col("text_id").cast(pl.String).is_in(skipped)).height
        records.append(dict(step="assign_lines", table="trials", count=unchecked, action="flagged",
                            reason="line agreement not computed (null): the text's lines are not top to bottom",
                            detail=", ".join(skipped[:10]) + (", ..." if len(skipped) > 10 else "")))
    if synthesised is not None:
        records.append(dict(step="assign_lines", table="trials", count=synthesised.len(), action="flagged",
                            reason="line agreement not computed (null): positions are interest-area box centres"))
    return agreement, records


def _synthesised_position_trials(fixations: pl.DataFrame) -> pl.Series | None:
    """Trials with a fixation at an interest-area box centre (``position_source``: reports without coordinates,
    :mod:`readgaze.io.charreport`), or None: vote and slice would only re-assign the report's own lines there."""
    from readgaze.io.charreport import POSITION_SOURCES

    ids = (fixations.filter(pl.col("position_source").is_in(POSITION_SOURCES))["trial_id"].unique()
           if "position_source" in fixations.columns else pl.Series([]))
    return ids if ids.len() else None


def _trial_features(fixations: pl.DataFrame, words: pl.DataFrame, trials: pl.DataFrame,
                    word_measures: pl.DataFrame) -> pl.DataFrame:
    return compute_trial_features(fixations, words, trials, word_measures=word_measures.lazy()).collect()


BLOCK_FIXATIONS = 1 << 18
"""Fixations per block of :func:`trial_blocks` (about 0.05 GiB of the measures' working arrays; two blocks are in
flight, one in the measures and one in the trial features: peak 1.34-1.35 GiB at 2.4 M fixations, against
1.44-1.45 with blocks of 2^19)."""


def trial_blocks(trials: pl.DataFrame, fixations: pl.DataFrame, *more: pl.DataFrame, rows: int | None = None):
    """Yield ``(trials, fixations, *more)`` blocks of whole trials, about ``rows`` fixations each, in ``trial_id``
    order.

    ``fixations`` and each of ``more`` (e.g. the word measures) must be sorted by ``trial_id``. A block holds the
    rows whose id sorts in its fixations' id range (the first block is open below, the last above), so every
    trial is in one block, and a per-trial computation over the blocks, concatenated, equals the one over the
    whole tables. One block (the tables themselves) when they are small or an id is null. ``rows``: default
    :data:`BLOCK_FIXATIONS`.
    """
    rows = BLOCK_FIXATIONS if rows is None else rows
    ids = fixations["trial_id"]
    tables = (fixations, *more)
    if fixations.height <= rows or any(t["trial_id"].null_count() for t in (trials, *tables)):
        yield trials, *tables
        return
    starts = np.flatnonzero(_Runs(ids).new)  # first row of each trial
    at = np.searchsorted(starts, np.arange(rows, fixations.height, rows))  # the first trial from each multiple on
    cuts = np.unique(starts[at[at < len(starts)]])
    edges = [None, *(ids[int(c)] for c in cuts if c > 0), None]  # trial ids where the blocks start
    for lo, hi in zip(edges[:-1], edges[1:]):
        keep = pl.lit(True)
        if lo is not None:
            keep = keep & (pl.col("trial_id") >= lo)
        if hi is not None:
            keep = keep & (pl.col("trial_id") < hi)
        parts = []
        for t in tables:
            a = 0 if lo is None else t["trial_id"].search_sorted(lo, side="left")
            b = t.height if hi is None else t["trial_id"].search_sorted(hi, side="left")
            parts.append(t.slice(a, b - a))
        yield trials.filter(keep), *parts


_TRIM = None  # glibc's malloc_trim once looked up; False where there is none


def release_freed_memory() -> None:
    """Return the C heap's free pages to the operating system (glibc ``malloc_trim``; a no-op elsewhere).

    NumPy's working arrays come from the C heap, which keeps the pages of freed arrays mapped (0.3-0.4 GiB
    after the alignment or the measures at 2.4 M fixations); Polars allocates from its own allocator and
    cannot reuse them.
    """
    global _TRIM
    if _TRIM is None:
        import ctypes
        import ctypes.util

        try:
            _TRIM = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6").malloc_trim
        except (OSError, AttributeError, TypeError):
            _TRIM = False
    if _TRIM:
        _TRIM(0)


def sort_rows(frame: pl.DataFrame, key: str, *more: str) -> pl.DataFrame:
    """``frame.sort(key, *more)`` (nulls first), skipping the sort when the rows are in that order already.

    A String ``key`` with one integer column after it is sorted through integer codes (the rank of each
    distinct string): the same order as the string sort, without comparing strings row by row.
    """
    cols = [key, *more]
    if frame.height < 2 or _sorted_by(frame, cols):
        return frame
    if (len(more) == 1 and frame.schema[key] == pl.String and frame.schema[more[0]].is_integer()
            and not frame.select(pl.any_horizontal(pl.col(cols).is_null().any())).item()):
        names = frame[key].unique().sort()
        code = frame[key].replace_strict(names, pl.int_range(len(names), eager=True), return_dtype=pl.Int64)
        inner = frame[more[0]].cast(pl.Int64)
        lo = inner.min()
        if inner.max() - lo < (1 << 31):
            order = np.argsort((code * (1 << 31) + (inner - lo)).to_numpy(), kind="stable")
            return frame[order]
    return frame.sort(cols)


def _sorted_by(frame: pl.DataFrame, cols: list[str]) -> bool:
    """True when the rows are sorted by ``cols`` (:func:`_in_order`). For a String key and one integer column
    without nulls (a trial id and an index), the strings are compared once per run of equal keys: the runs'
    keys strictly increase (a key in two runs is out of order) and the index does not fall within a run."""
    key, *more = cols
    if (len(more) == 1 and frame.schema[key] == pl.String and frame.schema[more[0]].is_integer()
            and not frame[key].null_count() and not frame[more[0]].null_count()):
        run = frame[key].rle_id().to_numpy()
        new = np.r_[True, run[1:] != run[:-1]]
        firsts = frame[key].filter(pl.Series(new))
        if len(firsts) > 1 and not (firsts.slice(1) > firsts.slice(0, len(firsts) - 1)).all():
            return False
        inner = frame[more[0]].to_numpy()
        return bool((new[1:] | (inner[1:] >= inner[:-1])).all())
    return frame.select(_in_order(cols)).item()


def _in_order(cols: list[str]) -> pl.Expr:
    """True when the rows are sorted by ``cols`` (lexicographic, nulls first, ties allowed)."""
    ok, tie = pl.lit(False), pl.lit(True)
    for c in cols:
        a, b = pl.col(c).shift(1), pl.col(c)
        less = (a.is_null() & b.is_not_null()) | (a < b).fill_null(False)
        ok, tie = ok | (tie & less), tie & a.eq_missing(b)
    return (ok | tie).slice(1).all()
