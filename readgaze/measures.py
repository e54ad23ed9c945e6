"""Word-level reading measures with Data Viewer's definitions (``IA_*`` columns).

The *scanpath* of a trial is its in-word fixations in time order; off-word fixations (null
``word_index``) are removed first, so they neither add to a measure nor end a regression path, and
an off-word fixation between two fixations on one word does not split the run (REFERENCE.md, "Data
Viewer interest-area measures"; the sample cannot test the last point). A *run* is a maximal
stretch of consecutive scanpath fixations on one word. "Right" means a higher ``word_index``.

Each measure is a function named after its column that returns a ``pl.Expr`` to aggregate one
word's scanpath fixations (``group_by(trial_id, word_index)``) over the helper columns that
:func:`scanpath` adds. :func:`compute_word_measures` applies them all and adds the never-fixated
words: durations null (not 0: the lab code's ``.``→0 bug, REFERENCE.md §7), total 0, count 0,
skipped True.
"""

from __future__ import annotations

import numpy as np
import polars as pl

from readgaze.errors import SchemaError


def _next_greater(values: np.ndarray, end: np.ndarray) -> np.ndarray:
    """For each i, the smallest j in (i, end[i]) with values[j] > values[i], else end[i].

    Binary lifting over a sparse table of block maxima: O(n log n), no loop over rows.
    """
    n = len(values)
    span = int((end - np.arange(n)).max()) if n else 1
    levels = [values.astype(np.int64)]
    while (1 << len(levels)) <= span:
        prev, step = levels[-1], 1 << (len(levels) - 1)
        shifted = np.full(n, np.iinfo(np.int64).min)
        shifted[: n - step] = prev[step:]
        levels.append(np.maximum(prev, shifted))
    cur = np.arange(n) + 1
    for k in range(len(levels) - 1, -1, -1):
        jump = cur + (1 << k) <= end
        idx = np.where(jump, cur, 0).clip(max=max(n - 1, 0))
        ok = jump & (levels[k][idx] <= values) if n else jump
        cur = np.where(ok, cur + (1 << k), cur)
    return np.minimum(cur, end)


def scanpath(fixations: pl.LazyFrame | pl.DataFrame, *, trial_key: str = "trial_id") -> pl.DataFrame:
    """In-word fixations in time order with the helper columns the measures aggregate.

    Adds ``prev_word``/``next_word`` (neighbouring scanpath words, null at the trial edges),
    ``run_start`` (Boolean), ``run_id`` (Int64, unique over the frame), ``prior_max_word`` (highest
    word fixated before, null for the first), ``max_word`` (highest word so far, this one included),
    ``position`` (Int64, global row), ``path_end`` (first later position on a word to the right, or
    the trial's end), ``path_duration_ms`` (sum of durations from here to ``path_end``), and per
    word: ``in_first_run`` (the fixation belongs to the word's first run) and ``in_path`` (it lies
    in the regression path that starts at the word's first fixation).

    All steps are whole-column operations on the trial-sorted frame (no per-trial windows);
    ``trial_key`` names the column that identifies a trial (an integer code sorts fastest).
    """
    sp = (fixations.lazy().filter(pl.col("word_index").is_not_null())
          .with_columns(pl.col("duration_ms").cast(pl.Float64), pl.col("word_index").cast(pl.Int64))
          .sort(trial_key, "fixation_index").collect())
    w, t = pl.col("word_index"), pl.col(trial_key)
    sp = sp.with_columns((t != t.shift(1)).fill_null(True).alias("_new_trial"),
                         (t == t.shift(-1)).fill_null(False).alias("_same_next"))
    big = 1 << 32  # trial ordinal * big + word: one global cum_max gives the per-trial running max
    sp = sp.with_columns(pl.col("_new_trial").cum_sum().cast(pl.Int64).alias("_trial_ord"))
    sp = sp.with_columns(
        pl.when(~pl.col("_new_trial")).then(w.shift(1)).alias("prev_word"),
        pl.when(pl.col("_same_next")).then(w.shift(-1)).alias("next_word"),
        ((pl.col("_trial_ord") * big + w).cum_max() - pl.col("_trial_ord") * big).alias("max_word"))
    sp = sp.with_columns(
        pl.when(~pl.col("_new_trial")).then(pl.col("max_word").shift(1)).alias("prior_max_word"),
        (pl.col("_new_trial") | (pl.col("prev_word") != w)).fill_null(True).alias("run_start"),
        pl.int_range(pl.len(), dtype=pl.Int64).alias("position"))
    sp = sp.with_columns(pl.col("run_start").cum_sum().cast(pl.Int64).alias("run_id"))
    new_trial = sp["_new_trial"].to_numpy()
    starts = np.flatnonzero(new_trial)
    trial_end = np.repeat(np.r_[starts[1:], len(sp)], np.diff(np.r_[starts, len(sp)]))
    end = _next_greater(sp["word_index"].to_numpy(), trial_end)
    cum = np.concatenate([[0.0], np.cumsum(sp["duration_ms"].to_numpy())])
    sp = sp.with_columns(pl.Series("path_end", end, pl.Int64),
                         pl.Series("path_duration_ms", cum[end] - cum[:-1], pl.Float64))
    word = ["_trial_ord", "word_index"]
    sp = sp.with_columns((pl.col("run_id") == pl.col("run_id").min().over(word)).alias("in_first_run"),
                         (pl.col("position") < pl.col("path_end").min().over(word)).alias("in_path"))
    return sp.drop("_new_trial", "_same_next", "_trial_ord").with_columns(pl.col("word_index").cast(pl.Int32))


# --- one expression per column (aggregations over one word's scanpath fixations) ------------------

def fixation_count() -> pl.Expr:
    """Number of fixations on the word (``IA_FIXATION_COUNT``)."""
    return pl.len().cast(pl.Int32).alias("fixation_count")


def total_fixation_duration_ms() -> pl.Expr:
    """Sum of the word's fixation durations, ms (``IA_DWELL_TIME``)."""
    return pl.col("duration_ms").sum().alias("total_fixation_duration_ms")


def first_fixation_duration_ms() -> pl.Expr:
    """Duration of the word's first fixation, whether or not it was skipped in first pass."""
    return pl.col("duration_ms").first().alias("first_fixation_duration_ms")


def gaze_duration_ms() -> pl.Expr:
    """Sum over the word's first run (``IA_FIRST_RUN_DWELL_TIME``), skipped-then-fixated words too."""
    return (pl.col("duration_ms") * pl.col("in_first_run")).sum().alias("gaze_duration_ms")


def skipped() -> pl.Expr:
    """A word to the right was fixated before the word's first fixation (``IA_SKIP``)."""
    return (pl.col("prior_max_word").first() > pl.col("word_index").first()).fill_null(False).alias("skipped")


def first_fixation_progressive() -> pl.Expr:
    """The first fixation came before any word to the right was fixated (``IA_FIRST_FIX_PROGRESSIVE``)."""
    return (~skipped()).alias("first_fixation_progressive")


def single_fixation_duration_ms() -> pl.Expr:
    """Duration of the first-pass fixation when first pass holds exactly one fixation, else null."""
    one = pl.col("in_first_run").sum() == 1
    return (pl.when(one & ~skipped()).then(pl.col("duration_ms").first())
            .alias("single_fixation_duration_ms"))


def regression_path_duration_ms() -> pl.Expr:
    """Go-past time: from the word's first fixation (any pass) up to the first fixation on a word to
    its right, or the trial's end (``IA_REGRESSION_PATH_DURATION``)."""
    return pl.col("path_duration_ms").first().alias("regression_path_duration_ms")


def selective_regression_path_duration_ms() -> pl.Expr:
    """Fixations on the word itself inside its regression path
    (``IA_SELECTIVE_REGRESSION_PATH_DURATION``)."""
    return (pl.col("duration_ms") * pl.col("in_path")).sum().alias("selective_regression_path_duration_ms")


def run_count() -> pl.Expr:
    """Number of runs on the word (``IA_RUN_COUNT``)."""
    return pl.col("run_start").sum().cast(pl.Int32).alias("run_count")


def regression_in_count() -> pl.Expr:
    """Entries into the word from a word to its right, at any time (``IA_REGRESSION_IN_COUNT``)."""
    entry = pl.col("run_start") & (pl.col("prev_word") > pl.col("word_index")).fill_null(False)
    return entry.sum().cast(pl.Int32).alias("regression_in_count")


def regression_out_count() -> pl.Expr:
    """Exits to a word on the left made while no word to the right had been fixated yet
    (``IA_REGRESSION_OUT_COUNT``; 0 for words skipped in first pass)."""
    exit_left = (pl.col("next_word") < pl.col("word_index")).fill_null(False)
    return (exit_left & (pl.col("max_word") == pl.col("word_index"))).sum().cast(pl.Int32) \
        .alias("regression_out_count")


def landing_position() -> pl.Expr:
    """Where the first fixation landed in its box, as a fraction of the box width (0 = left edge)."""
    return (((pl.col("x_px") - pl.col("_box_left")) / (pl.col("_box_right") - pl.col("_box_left")))
            .first().alias("landing_position"))


MEASURES = (first_fixation_duration_ms, single_fixation_duration_ms, gaze_duration_ms,
            total_fixation_duration_ms, regression_path_duration_ms, selective_regression_path_duration_ms,
            fixation_count, run_count, skipped, first_fixation_progressive, regression_in_count,
            regression_out_count)


def trial_codes(trial_id: pl.Series, trials: pl.Series) -> np.ndarray:
    """Integer code of each trial id: its row in ``trials`` (sorted, unique); -1 when absent."""
    code = trial_id.replace_strict(trials, pl.int_range(len(trials), eager=True), default=-1,
                                   return_dtype=pl.Int64)
    return code.fill_null(-1).to_numpy()


def _in_critical_span(grid: pl.DataFrame, trials: pl.DataFrame) -> pl.Series:
    """``in_critical_span`` for a grid sorted by (``_trial``, ``word_index``): word in any
    ``[start, end)`` of the trial's ``critical_span_start_index`` / ``critical_span_end_index``."""
    if not {"critical_span_start_index", "critical_span_end_index"} <= set(trials.columns):
        return pl.Series("in_critical_span", [None] * grid.height, pl.Boolean)
    spans = (trials.select(pl.int_range(pl.len()).alias("_trial"), "critical_span_start_index",
                           "critical_span_end_index")
             .explode("critical_span_start_index", "critical_span_end_index").drop_nulls())
    big = float(1 << 32)
    keys = grid["_trial"].to_numpy() * big + grid["word_index"].to_numpy()
    t = spans["_trial"].to_numpy() * big
    lo = np.searchsorted(keys, t + spans["critical_span_start_index"].to_numpy())
    hi = np.searchsorted(keys, t + spans["critical_span_end_index"].to_numpy())
    marks = np.zeros(len(keys) + 1, np.int64)  # +1 where a span starts, -1 where it ends
    np.add.at(marks, lo, 1)
    np.add.at(marks, np.maximum(hi, lo), -1)
    return pl.Series("in_critical_span", np.cumsum(marks)[:-1] > 0, pl.Boolean)


def compute_word_measures(fixations, words, trials) -> pl.LazyFrame:
    """Compute Data Viewer's word-level reading measures for every word of every trial's text.

    Parameters
    ----------
    fixations : polars.LazyFrame or DataFrame
        Aligned fixations: ``trial_id``, ``fixation_index``, ``duration_ms`` (ms), ``word_index``
        (Int32, null off text); ``x_px`` and ``ia_index`` (the box hit) for ``landing_position``.
    words : polars.LazyFrame or DataFrame
        ``text_id``, ``word_index``, ``ia_index``, ``left_px``, ``right_px`` (one row per box).
    trials : polars.LazyFrame or DataFrame
        ``trial_id``, ``text_id``; optional ``critical_span_start_index`` /
        ``critical_span_end_index`` (List(Int32), end exclusive) for ``in_critical_span``.

    Returns
    -------
    polars.LazyFrame
        One row per trial x word of its text, sorted by (``trial_id``, ``word_index``): the canonical
        ``word_measures`` columns plus ``single_fixation_duration_ms``,
        ``selective_regression_path_duration_ms``, ``run_count``, ``regression_in_count``,
        ``regression_out_count``, ``first_fixation_progressive``, ``landing_position`` (Float64,
        fraction of the box width) and ``in_critical_span``. A never-fixated word has null
        durations, ``total_fixation_duration_ms`` 0, ``fixation_count`` and ``run_count`` 0,
        ``skipped`` True and null regression flags, counts and progressive flag (Data Viewer ``.``).

    Raises
    ------
    SchemaError
        When ``word_index`` or another needed column is missing (align first).

    Examples
    --------
    >>> import polars as pl
    >>> words = pl.DataFrame({"text_id": "t", "ia_index": [0, 1, 2], "word_index": [0, 1, 2],
    ...     "left_px": [0.0, 10.0, 20.0], "right_px": [10.0, 20.0, 30.0]})
    >>> fx = pl.DataFrame({"trial_id": "a", "fixation_index": [0, 1, 2], "duration_ms": [200.0, 150.0, 100.0],
    ...     "x_px": [5.0, 25.0, 2.0], "word_index": [0, 2, 0], "ia_index": [0, 2, 0]})
    >>> m = compute_word_measures(fx, words, pl.DataFrame({"trial_id": ["a"], "text_id": ["t"]})).collect()
    >>> m["regression_path_duration_ms"].to_list(), m["skipped"].to_list()
    ([200.0, None, 250.0], [False, True, False])
    """
    fixations, words, trials = (f.lazy() for f in (fixations, words, trials))
    have = fixations.collect_schema().names()
    missing = [c for c in ("trial_id", "fixation_index", "duration_ms", "word_index") if c not in have]
    if missing:
        raise SchemaError(f"fixations table: missing column(s) {', '.join(missing)} (run align_words first)")
    tr = trials.unique("trial_id", keep="first").collect().sort("trial_id")
    words = words.with_columns(pl.col("word_index", "ia_index").cast(pl.Int32)).collect()
    texts = words["text_id"].unique().sort()
    tr_text = trial_codes(tr["text_id"], texts)  # text code of each trial (same helper, other table)
    needed = [c for c in ("trial_id", "fixation_index", "duration_ms", "word_index", "x_px", "ia_index") if c in have]
    fx = fixations.select(needed).filter(pl.col("word_index").is_not_null()).collect()
    fx = fx.with_columns(pl.Series("_trial", trial_codes(fx["trial_id"], tr["trial_id"])),
                         pl.col("word_index").cast(pl.Int32)).drop("trial_id").filter(pl.col("_trial") >= 0)
    sp = scanpath(fx, trial_key="_trial")
    aggs = [m() for m in MEASURES]
    if "x_px" in have:
        key = "ia_index" if "ia_index" in have else "word_index"
        boxes = words.group_by("text_id", key, maintain_order=True).agg(
            pl.col("left_px").first().alias("_box_left"), pl.col("right_px").first().alias("_box_right"))
        boxes = boxes.with_columns(pl.Series("_text", trial_codes(boxes["text_id"], texts))).drop("text_id")
        sp = sp.with_columns(pl.Series("_text", tr_text[sp["_trial"].to_numpy()]), pl.col(key).cast(pl.Int32))
        sp = sp.join(boxes, on=["_text", key], how="left", maintain_order="left")
        aggs.append(landing_position())
    per_word = (sp.lazy().group_by("_trial", "word_index").agg(aggs)
                .with_columns((pl.col("regression_in_count") > 0).alias("regression_in"),
                              (pl.col("regression_out_count") > 0).alias("regression_out")))
    text_words = words.select("text_id", "word_index").unique()
    text_words = text_words.with_columns(pl.Series("_text", trial_codes(text_words["text_id"], texts))).drop("text_id")
    grid = pl.DataFrame({"_trial": np.arange(tr.height, dtype=np.int64), "_text": tr_text})
    grid = grid.join(text_words, on="_text", how="inner").drop("_text").sort("_trial", "word_index")
    out = grid.lazy().join(per_word, on=["_trial", "word_index"], how="left", maintain_order="left").collect()
    out = out.with_columns(pl.col("total_fixation_duration_ms").fill_null(0.0),
                           pl.col("fixation_count", "run_count").fill_null(0),
                           pl.col("skipped").fill_null(True),
                           (pl.col("total_fixation_duration_ms") - pl.col("gaze_duration_ms"))
                           .alias("rereading_duration_ms"),
                           _in_critical_span(grid, tr),
                           pl.Series("trial_id", tr["trial_id"].gather(grid["_trial"])))
    if "landing_position" not in out.columns:
        out = out.with_columns(pl.lit(None, pl.Float64).alias("landing_position"))
    order = ["trial_id", "word_index", "first_fixation_duration_ms", "gaze_duration_ms",
             "total_fixation_duration_ms", "regression_path_duration_ms", "fixation_count", "skipped",
             "regression_in", "regression_out", "rereading_duration_ms", "single_fixation_duration_ms",
             "selective_regression_path_duration_ms", "run_count", "regression_in_count",
             "regression_out_count", "first_fixation_progressive", "landing_position", "in_critical_span"]
    return out.select(order).lazy()  # grid order: sorted by (trial_id, word_index)
