"""OneStop's tables built from report rows: trial columns (from each trial's first row), words (from the rows of one
trial per text layout), layout versions and the trial table (:func:`readgaze.io.onestop.load_onestop`'s parts).

The columns OneStop holds constant within a trial (:data:`TRIAL_COLUMNS`) and its word features
(:data:`WORD_FEATURES`) are read from chosen rows only (:func:`readgaze.io.rows.read_rows`); their dtypes are decided on
the values kept, the boolean ones checked (:data:`BOOLEAN_COLUMNS`), and a trial whose rows disagree with the report's
own count of them is counted (:data:`TRIAL_COUNTS`).
"""

from __future__ import annotations

import hashlib
import math
from pathlib import Path

import numpy as np
import polars as pl

from readgaze.errors import ParseError
from readgaze.io import cells
from readgaze.io.csv import header
from readgaze.io.faults import text_file
from readgaze.io.rows import read_rows
from readgaze.qc import QCLog

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


def with_rows(frame: pl.DataFrame, rows) -> pl.DataFrame:
    """``frame`` (the columns of ``rows``, in order) with ``__row``."""
    row = pl.Series("__row", rows, pl.UInt32)
    return frame.with_columns(row) if frame.width else row.to_frame()


def columns_of(lf: pl.LazyFrame) -> set[str]:
    return set(lf.collect_schema().names())


def text_versions(ia: pl.LazyFrame, qc: QCLog) -> pl.DataFrame:
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


def words_table(reps: pl.LazyFrame, wide: pl.DataFrame, word_cols: list[str], path=None,
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


def split_trial_columns(lf: pl.LazyFrame, count: str, path, starts=None, *, trial_cols: list[str] | None = None,
                         wide: pl.DataFrame | None = None, qc: QCLog | None = None,
                         dialect=None) -> tuple[pl.DataFrame, pl.LazyFrame]:
    """``(per-trial table, rows without the trial columns)``: the trial-constant :data:`TRIAL_COLUMNS`
    (first value per trial) and the row count per trial (Int32, ``count``) leave the big table early.

    ``lf`` holds the columns parsed on every row and ``__row``; the other trial columns of the file
    (``trial_cols``, default all it has) come from each trial's first row: from ``wide`` (rows read
    whole, by ``__row``), else read now (:func:`readgaze.io.rows.read_rows`, ``starts`` its line
    starts). The fixation report's table also gets ``text_id`` (the unversioned paragraph id), and
    its rows lose ``__row``. The boolean trial columns are checked (:data:`BOOLEAN_COLUMNS`), and a trial whose row
    count differs from the report's own count of it (:data:`TRIAL_COUNTS`) is counted in ``qc``.
    """
    reader = dialect.reader() if dialect is not None else {}  # a readgaze.io.onestop.Dialect: separator, ...
    names = header(path, separator=reader.get("separator"), rename=reader.get("rename"))
    trial_cols = [c for c in TRIAL_COLUMNS if c in names] if trial_cols is None else trial_cols
    have = columns_of(lf)
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
        wide = with_rows(read_rows(path, rows.to_numpy(), missing, n_rows=n, starts=starts, **reader),
                         rows.to_numpy())
    part = part.join(wide.select("__row", *missing), on="__row", how="left")
    part = _redecided(part, missing)  # ``wide`` also holds rows that are not a trial's first: its dtypes are theirs too
    _check_booleans(part, path)
    cells.stray_text(part, qc, "load_onestop", "trials", path)
    if count == "ia_count":
        count_rows(part, count, qc, path)
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


def count_rows(trials: pl.DataFrame, count: str, qc: QCLog | None, path) -> None:
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


def trials_table(parts: list[pl.DataFrame]) -> pl.DataFrame:
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
