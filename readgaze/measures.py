"""Word-level reading measures with Data Viewer's definitions (``IA_*`` columns).

The *scanpath* of a trial is its in-word fixations in time order; off-word fixations (null
``word_index``) are removed first, so they neither add to a measure nor end a regression path, and
an off-word fixation between two fixations on one word does not split the run (the definitions of
SR Research (2021), *EyeLink Data Viewer User's Manual* 4.2, "Interest Area Report"; checked on the
OneStop sample, which cannot test the last point). A *run* is a maximal stretch of consecutive
scanpath fixations on one word. "Right" means a higher ``word_index``: later in reading order, so to the
right in a left-to-right text and to the left in a right-to-left one. ``compute_word_measures(off_text=
"leave")`` keeps off-word fixations in the sequence instead (eyekit's convention; see there).

Each measure is a function named after its column. It reads one word's scanpath fixations through
:class:`Words` (the fixations grouped by trial x word, each group in time order) and returns one
value per fixated word, as a NumPy array (with a validity mask where a word can have no value).
:func:`compute_word_measures` applies them all and adds the never-fixated words: durations null
(not 0: a ``.`` read as 0 would bias every mean), total 0, count 0, skipped True. All steps are
whole-array operations (sorts, cumulative sums, ``np.add.reduceat``): no loop over trials or rows.
On large inputs (:func:`use_compiled`) the same values come from one compiled pass over the scanpath
(:mod:`readgaze._measures_pass`, numba), tested equal to these functions bit for bit.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass

import numpy as np
import polars as pl

from readgaze.errors import ConfigError, SchemaError


def _path_end(values: np.ndarray, end: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """For each i in ``rows``: the smallest j in (i, end[i]) with values[j] > values[i], else end[i].

    All rows step forward together, one position per round, and leave once they stop: the rounds are
    as many as the longest regression path, the work is the sum of the path lengths.
    """
    stop = end[rows].copy()
    j = rows + 1
    active = np.flatnonzero(j < stop)
    while active.size:
        jj = j[active]
        hit = values[jj] > values[rows[active]]
        stop[active[hit]] = jj[hit]
        active = active[~hit]
        j[active] += 1
        active = active[j[active] < stop[active]]
    return stop


def _scanpath_arrays(trial: np.ndarray, word: np.ndarray, duration: np.ndarray) -> dict[str, np.ndarray]:
    """The helper arrays of :func:`scanpath` for fixations sorted by trial, then time.

    ``prev_word`` / ``next_word`` / ``prior_max_word`` are -1 where null (word indices are >= 0).
    """
    n = len(word)
    w = word.astype(np.int64)
    new_trial = np.ones(n, bool)
    new_trial[1:] = trial[1:] != trial[:-1]
    same_next = np.zeros(n, bool)
    same_next[:-1] = ~new_trial[1:]
    prev_word = np.where(new_trial, -1, np.r_[-1, w[:-1]]) if n else w
    next_word = np.where(same_next, np.r_[w[1:], -1], -1) if n else w
    trial_ord = np.cumsum(new_trial).astype(np.int64)
    big = np.int64(1 << 32)  # trial ordinal * big + word: one running max gives the per-trial maximum
    max_word = np.maximum.accumulate(trial_ord * big + w) - trial_ord * big if n else w
    prior_max = np.where(new_trial, -1, np.r_[-1, max_word[:-1]]) if n else w
    run_start = new_trial | (prev_word != w)
    starts = np.flatnonzero(new_trial)
    trial_end = (np.repeat(np.r_[starts[1:], n], np.diff(np.r_[starts, n])) if n
                 else np.zeros(0, np.int64))  # no fixation on any word: an empty scanpath
    return {"_trial_ord": trial_ord, "prev_word": prev_word, "next_word": next_word, "max_word": max_word,
            "prior_max_word": prior_max, "run_start": run_start, "run_id": np.cumsum(run_start).astype(np.int64),
            "position": np.arange(n, dtype=np.int64), "_trial_end": trial_end}


def _add_paths(arrays: dict[str, np.ndarray], word: np.ndarray, duration: np.ndarray, rows: np.ndarray) -> None:
    """``path_end`` and ``path_duration_ms`` (regression path from each of ``rows``; -1 / NaN elsewhere)."""
    end = np.full(len(word), -1, np.int64)
    end[rows] = _path_end(word, arrays["_trial_end"], rows)
    cum = np.concatenate([[0.0], np.cumsum(duration)])
    length = np.full(len(word), np.nan)
    length[rows] = cum[end[rows]] - cum[rows]
    arrays.update(path_end=end, path_duration_ms=length)


@dataclass
class Words:
    """A trial's scanpath grouped by word: one group per (trial, word), each in time order.

    ``order`` lists the scanpath rows group by group (a stable sort by trial, then word);
    ``starts`` is the offset of each group in ``order``; ``first`` is each group's first fixation
    (a row of the scanpath); ``group`` is the group of every scanpath row; ``sp`` holds the columns.
    """

    sp: dict[str, np.ndarray]
    order: np.ndarray
    starts: np.ndarray
    first: np.ndarray
    group: np.ndarray

    @classmethod
    def of(cls, sp: dict[str, np.ndarray]) -> Words:
        key = sp["_trial_ord"] * np.int64(1 << 32) + sp["word_index"]
        order = np.argsort(key, kind="stable")
        k = key[order]
        is_start = np.ones(len(k), bool)
        is_start[1:] = k[1:] != k[:-1]
        starts = np.flatnonzero(is_start)
        group = np.empty(len(k), np.int64)
        group[order] = np.cumsum(is_start) - 1
        return cls(sp, order, starts, order[starts], group)

    def sum(self, values: np.ndarray) -> np.ndarray:
        """Per group, the sum of ``values`` (one per scanpath row) in time order."""
        if not len(self.order):
            return np.zeros(0, values.dtype)
        return np.add.reduceat(values[self.order], self.starts)

    def at_first(self, name: str) -> np.ndarray:
        """Per group, column ``name`` at the word's first fixation."""
        return self.sp[name][self.first]

    def in_first_run(self) -> np.ndarray:
        """Per scanpath row: it belongs to its word's first run."""
        return self.sp["run_id"] == self.at_first("run_id")[self.group]

    def in_path(self) -> np.ndarray:
        """Per scanpath row: it lies in the regression path that starts at its word's first fixation."""
        return self.sp["position"] < self.at_first("path_end")[self.group]


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
    trial = sp[trial_key].rle_id().to_numpy()  # sorted: equal ids are contiguous
    word, duration = sp["word_index"].to_numpy(), sp["duration_ms"].to_numpy()
    arrays = _scanpath_arrays(trial, word, duration)
    _add_paths(arrays, word, duration, np.arange(len(word)))
    g = Words.of({**arrays, "word_index": word})
    cols = {k: v for k, v in arrays.items() if k not in ("_trial_ord", "_trial_end")}
    out = sp.with_columns(pl.Series(k, v) for k, v in cols.items())
    nulls = {"prev_word": "prev_word", "next_word": "next_word", "prior_max_word": "prior_max_word"}
    return out.with_columns(
        *[pl.when(pl.col(c) >= 0).then(pl.col(c)).alias(c) for c in nulls],
        pl.Series("in_first_run", g.in_first_run()), pl.Series("in_path", g.in_path()),
        pl.col("word_index").cast(pl.Int32))


# --- one function per column: a value per fixated word (group of Words) ------------------------

def fixation_count(g: Words) -> np.ndarray:
    """Number of fixations on the word (``IA_FIXATION_COUNT``)."""
    return np.diff(np.r_[g.starts, len(g.order)]).astype(np.int32)


def total_fixation_duration_ms(g: Words) -> np.ndarray:
    """Sum of the word's fixation durations, ms (``IA_DWELL_TIME``)."""
    return g.sum(g.sp["duration_ms"])


def first_fixation_duration_ms(g: Words) -> np.ndarray:
    """Duration of the word's first fixation, whether or not it was skipped in first pass."""
    return g.at_first("duration_ms")


def gaze_duration_ms(g: Words) -> np.ndarray:
    """Sum over the word's first run (``IA_FIRST_RUN_DWELL_TIME``), skipped-then-fixated words too."""
    return g.sum(g.sp["duration_ms"] * g.in_first_run())


def skipped(g: Words) -> np.ndarray:
    """A word to the right was fixated before the word's first fixation (``IA_SKIP``)."""
    return g.at_first("prior_max_word") > g.at_first("word_index")  # -1 (none before) is never greater


def first_fixation_progressive(g: Words) -> np.ndarray:
    """The first fixation came before any word to the right was fixated (``IA_FIRST_FIX_PROGRESSIVE``)."""
    return ~skipped(g)


def single_fixation_duration_ms(g: Words) -> tuple[np.ndarray, np.ndarray]:
    """Duration of the first-pass fixation when first pass holds exactly one fixation, else null."""
    one = g.sum(g.in_first_run().astype(np.int64)) == 1
    return g.at_first("duration_ms"), one & ~skipped(g)


def regression_path_duration_ms(g: Words) -> np.ndarray:
    """Go-past time: from the word's first fixation (any pass) up to the first fixation on a word to
    its right, or the trial's end (``IA_REGRESSION_PATH_DURATION``)."""
    return g.at_first("path_duration_ms")


def selective_regression_path_duration_ms(g: Words) -> np.ndarray:
    """Fixations on the word itself inside its regression path
    (``IA_SELECTIVE_REGRESSION_PATH_DURATION``)."""
    return g.sum(g.sp["duration_ms"] * g.in_path())


def run_count(g: Words) -> np.ndarray:
    """Number of runs on the word (``IA_RUN_COUNT``)."""
    return g.sum(g.sp["run_start"].astype(np.int32)).astype(np.int32)


def regression_in_count(g: Words) -> np.ndarray:
    """Entries into the word from a word to its right, at any time (``IA_REGRESSION_IN_COUNT``)."""
    entry = g.sp["run_start"] & (g.sp["prev_word"] > g.sp["word_index"])
    return g.sum(entry.astype(np.int32)).astype(np.int32)


def regression_out_count(g: Words) -> np.ndarray:
    """Exits to a word on the left made while no word to the right had been fixated yet
    (``IA_REGRESSION_OUT_COUNT``; 0 for words skipped in first pass)."""
    sp = g.sp
    exit_left = (sp["next_word"] >= 0) & (sp["next_word"] < sp["word_index"])
    return g.sum((exit_left & (sp["max_word"] == sp["word_index"])).astype(np.int32)).astype(np.int32)


MEASURES = (first_fixation_duration_ms, single_fixation_duration_ms, gaze_duration_ms,
            total_fixation_duration_ms, regression_path_duration_ms, selective_regression_path_duration_ms,
            fixation_count, run_count, skipped, first_fixation_progressive, regression_in_count,
            regression_out_count)


def trial_codes(trial_id: pl.Series, trials: pl.Series) -> np.ndarray:
    """Integer code of each trial id: its row in ``trials`` (sorted, unique); -1 when absent or null.

    Looked up once per run of equal ids (a table's rows of one trial are usually together), then repeated.
    """
    if len(trial_id) < 2:
        run, ids = np.zeros(len(trial_id), np.int64), trial_id
    else:
        run = trial_id.rle_id().to_numpy()
        ids = trial_id.filter(pl.Series(np.r_[True, run[1:] != run[:-1]]))
    code = ids.replace_strict(trials, pl.int_range(len(trials), eager=True), default=-1, return_dtype=pl.Int64)
    return code.fill_null(-1).to_numpy()[run]


def ordered(frame: pl.DataFrame, trial: str, index: str) -> pl.DataFrame:
    """``frame.filter(trial >= 0).sort(trial, index)`` for an integer trial code (-1: unknown trial), skipping
    the filter when no code is -1 and the sort when the (trial, index) pairs already strictly increase (a
    prepared table's own order; with ties the rows are sorted)."""
    if frame.height and frame[trial].min() < 0:
        frame = frame.filter(pl.col(trial) >= 0)
    if frame.height > 1:
        t, i = frame[trial].to_numpy(), frame[index].to_numpy()
        if not ((t[1:] > t[:-1]) | ((t[1:] == t[:-1]) & (i[1:] > i[:-1]))).all():
            frame = frame.sort(trial, index)
    return frame


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


def _grid(trial_text: np.ndarray, words: pl.DataFrame, texts: pl.Series):
    """Every (trial code, word_index) of each trial's text, sorted by trial, then word; with each text's
    sorted word indices (``text_words[text_start[k]:text_start[k + 1]]``) and each trial's first grid row."""
    tw = words.select("text_id", "word_index").unique()
    tw = tw.with_columns(pl.Series("_text", trial_codes(tw["text_id"], texts))).sort("_text", "word_index")
    per_text = np.bincount(tw["_text"].to_numpy(), minlength=len(texts))
    text_start = np.r_[0, np.cumsum(per_text)].astype(np.int64)
    text_words = tw["word_index"].to_numpy().astype(np.int64)
    trial = np.flatnonzero(trial_text >= 0)
    n = per_text[trial_text[trial]]
    rows = np.repeat(text_start[trial_text[trial]] - np.r_[0, np.cumsum(n)[:-1]], n) + np.arange(n.sum())
    per_trial = np.zeros(len(trial_text), np.int64)
    per_trial[trial] = n
    grid_start = np.r_[0, np.cumsum(per_trial)[:-1]].astype(np.int64)
    grid = pl.DataFrame({"_trial": np.repeat(trial, n).astype(np.int64),
                         "word_index": text_words[rows].astype(np.int32)})
    return grid, text_start, text_words, grid_start


def _boxes(fx_trial: np.ndarray, fx_key: pl.Series, words: pl.DataFrame, texts: pl.Series, trial_text: np.ndarray,
           key: str) -> dict[str, np.ndarray]:
    """Left/right edge (px) of each fixation's box (the first box row of its text and ``key``), for fixations
    of trial codes ``fx_trial`` hitting box ``fx_key`` (the fixations' ``key`` column)."""
    w = words.select("text_id", key, "left_px", "right_px").drop_nulls([key])
    wk = trial_codes(w["text_id"], texts) * np.int64(1 << 32) + w[key].to_numpy().astype(np.int64)
    uniq, first = np.unique(wk, return_index=True)  # first box row of each (text, key)
    text = trial_text[fx_trial]
    k = fx_key.fill_null(-1).to_numpy().astype(np.int64)
    u_text = uniq >> np.int64(32)
    table = (_word_table(np.r_[0, np.cumsum(np.bincount(u_text, minlength=len(texts)))].astype(np.int64),
                         uniq - (u_text << np.int64(32)))
             if len(uniq) and w[key].min() >= 0 and w[key].max() < (1 << 31) else None)
    if table is not None:  # a table lookup per fixation: the row of (text, key) in uniq
        table_start, low, ranks = table
        ok = (text >= 0) & (k >= 0)
        t = np.where(ok, text, 0)
        r = k - low[t]
        ok &= (r >= 0) & (r < table_start[t + 1] - table_start[t])
        j = np.where(ok, ranks[np.where(ok, table_start[t] + r, 0)], -1)
        hit = ok & (j >= 0)
        j = np.where(hit, np.searchsorted(u_text, np.arange(len(texts)))[t] + j, 0)  # text's first row + rank
    else:
        fk = text * np.int64(1 << 32) + k
        j = np.searchsorted(uniq, fk).clip(max=max(len(uniq) - 1, 0))
        hit = (text >= 0) & (k >= 0) & (uniq[j] == fk) if len(uniq) else np.zeros(len(fk), bool)
    left = w["left_px"].cast(pl.Float64).to_numpy()[first][j] if len(uniq) else np.zeros(len(fk))
    right = w["right_px"].cast(pl.Float64).to_numpy()[first][j] if len(uniq) else np.zeros(len(fk))
    valid = hit & ~np.isnan(left) & ~np.isnan(right)
    return {"_box_left": left, "_box_right": right, "_box_valid": valid}


def _reference_cells(trial: np.ndarray, word: np.ndarray, duration: np.ndarray, trial_text: np.ndarray,
                     grid: pl.DataFrame) -> dict[str, np.ndarray]:
    """The per-cell aggregates of :func:`readgaze._measures_pass.word_pass`, by the measure functions above
    (the reference the compiled pass is tested against)."""
    arrays = _scanpath_arrays(trial, word, duration)
    arrays.update(word_index=word, duration_ms=duration)
    g = Words.of(arrays)
    _add_paths(arrays, word, duration, g.first)
    big = np.int64(1 << 32)
    gkey = grid["_trial"].to_numpy() * big + grid["word_index"].to_numpy()
    wkey = trial[g.first] * big + word[g.first]
    pos = np.searchsorted(gkey, wkey).clip(max=max(len(gkey) - 1, 0))
    placed = (gkey[pos] == wkey) if len(gkey) else np.zeros(len(wkey), bool)
    pos = pos[placed]

    def spread(values: np.ndarray, fill) -> np.ndarray:
        out = np.full(len(gkey), fill, dtype=values.dtype)
        out[pos] = values[placed]
        return out

    single, one = single_fixation_duration_ms(g)
    return {"first": spread(g.first, -1), "fixation_count": spread(fixation_count(g), 0),
            "run_count": spread(run_count(g), 0), "regression_in_count": spread(regression_in_count(g), 0),
            "regression_out_count": spread(regression_out_count(g), 0), "skipped": spread(skipped(g), False),
            "single": spread(one, False), "total": spread(total_fixation_duration_ms(g), 0.0),
            "gaze": spread(gaze_duration_ms(g), np.nan), "path": spread(regression_path_duration_ms(g), np.nan),
            "selective": spread(selective_regression_path_duration_ms(g), np.nan)}


def _word_table(text_start: np.ndarray, text_words: np.ndarray):
    """Each text's word index → its rank among the text's words, as one table over ``[lowest, highest]`` word
    index of each text (-1 where a text has no such word); None when the table would be far larger than
    the words (sparse indices)."""
    n_texts = len(text_start) - 1
    has = np.diff(text_start) > 0
    low = np.zeros(n_texts, np.int64)
    high = np.full(n_texts, -1, np.int64)
    low[has] = text_words[text_start[:-1][has]]
    high[has] = text_words[text_start[1:][has] - 1]
    span = high - low + 1
    if span.sum() > 4 * len(text_words) + (1 << 16):
        return None
    table_start = np.r_[0, np.cumsum(span)].astype(np.int64)
    table = np.full(table_start[-1], -1, np.int64)
    text = np.repeat(np.arange(n_texts), np.diff(text_start))
    table[table_start[text] + text_words - low[text]] = np.arange(len(text_words)) - text_start[text]
    return table_start, low, table


def _compiled_cells(trial: np.ndarray, word: np.ndarray, duration: np.ndarray, trial_text: np.ndarray, grid,
                    text_start: np.ndarray, text_words: np.ndarray, grid_start: np.ndarray) -> dict[str, np.ndarray]:
    table = _word_table(text_start, text_words)
    if table is None:  # word indices far apart: the whole-array reference
        return _reference_cells(trial, word, duration, trial_text, grid)
    from readgaze._measures_pass import word_pass

    got = word_pass(trial.astype(np.int64), word.astype(np.int64), duration.astype(np.float64),
                    trial_text.astype(np.int64), *table, grid_start, grid.height)
    names = ("first", "fixation_count", "run_count", "regression_in_count", "regression_out_count", "skipped",
             "single", "total", "gaze", "path", "selective")
    return dict(zip(names, got))


COMPILED_FROM = 3_000_000
"""Fixations from which :func:`use_compiled` chooses the compiled pass when numba is not loaded yet: it saves
about 0.3 CPU s per million fixations against the NumPy functions (0.75 s at 2.4 M), and loading numba and
the pass costs about 0.8-1.0 CPU s once per process, so alone it pays from about 3 M fixations on."""

COMPILED_LOADED_FROM = 300_000
"""Fixations from which :func:`use_compiled` chooses the compiled pass when another step loaded numba already:
then only the pass itself is loaded from numba's cache (about 0.1 CPU s)."""


def use_compiled(n_fixations: int) -> bool:
    """Whether the word measures of ``n_fixations`` fixations should run compiled (numba): from
    :data:`COMPILED_FROM` on, or from :data:`COMPILED_LOADED_FROM` on when numba is loaded (another step, such
    as a compiled line assigner, paid its fixed cost)."""
    return n_fixations >= COMPILED_FROM or ("numba" in sys.modules and n_fixations >= COMPILED_LOADED_FROM)


OFF_TEXT = ("skip", "leave")
"""Conventions for off-text fixations (null ``word_index``), see :func:`compute_word_measures`."""


def _rtl_texts(words: pl.DataFrame, texts: pl.Series, direction: str | None) -> np.ndarray:
    """Per text code: read right to left (``direction``, else the ``direction`` column, else no)."""
    from readgaze.text import check_direction

    if direction is not None:
        return np.full(len(texts), check_direction(direction) == "rtl")
    if "direction" not in words.columns:
        return np.zeros(len(texts), bool)
    rtl = words.filter(pl.col("direction") == "rtl")["text_id"].unique()
    return texts.is_in(rtl.implode()).to_numpy()


def compute_word_measures(fixations, words, trials, *, off_text: str = "skip",
                          direction: str | None = None, compiled: bool | None = None) -> pl.LazyFrame:
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
    off_text : {"skip", "leave"}
        What an off-text fixation (outside every word box, null ``word_index``) does.

        * ``"skip"`` (default, Data Viewer): it is removed from the scanpath, so it adds nothing, ends
          no run and no regression path. Evidence: on the OneStop sample (24 trials, 1,780 fixated
          words) this reproduces Data Viewer's ``IA_REGRESSION_PATH_DURATION`` on every word; counting
          the one off-text fixation's duration instead changes 2 words (99.89 %).
        * ``"leave"`` (eyekit's reading of it): it stays in the sequence as a fixation on no word. It
          ends the current run (a later fixation on the same word starts a new run), it is neither a
          word to the right nor to the left (no regression in or out), and its duration counts in any
          regression path still open.
    direction : {"ltr", "rtl"}, optional
        Reading direction, for ``landing_position`` (measured from the word's beginning: the left edge
        in a left-to-right text, the right edge in a right-to-left one). Default: a ``direction``
        column of ``words`` (per text) if present, else ``"ltr"``. The other measures need no setting:
        their "right" is a higher ``word_index``, i.e. later in reading order in either direction.
    compiled : bool, optional
        False: compute with the measure functions of this module (whole-array NumPy); True: with the
        compiled pass of :mod:`readgaze._measures_pass` (numba; NumPy still when word indices are too far
        apart for its lookup table). The values are the same, bit for bit (tested). Default:
        :func:`use_compiled` of the fixations given.

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
    if off_text not in OFF_TEXT:
        raise ConfigError(f"off_text: got {off_text!r}, expected 'skip' (Data Viewer) or 'leave' (eyekit)")
    span_cols = [c for c in ("critical_span_start_index", "critical_span_end_index")
                 if c in trials.collect_schema().names()]
    tr = (trials.select("trial_id", "text_id", *span_cols).collect()  # eager unique: 30x a lazy one's speed here
          .unique("trial_id", keep="first").sort("trial_id"))
    word_cols = [c for c in ("text_id", "word_index", "ia_index", "left_px", "right_px", "direction")
                 if c in words.collect_schema().names()]
    words = words.select(word_cols).with_columns(pl.col("word_index", "ia_index").cast(pl.Int32)).collect()
    texts = words["text_id"].unique().sort()
    tr_text = trial_codes(tr["text_id"], texts)  # text code of each trial (same helper, other table)
    needed = [c for c in ("trial_id", "fixation_index", "duration_ms", "word_index", "x_px", "ia_index") if c in have]
    fx = fixations.select(needed)  # "leave": an off-text fixation is word -1 (never right, never placed)
    fx = (fx.filter(pl.col("word_index").is_not_null()) if off_text == "skip"
          else fx.with_columns(pl.col("word_index").fill_null(-1))).collect()
    fx = ordered(fx.with_columns(pl.Series("_trial", trial_codes(fx["trial_id"], tr["trial_id"])),
                                 pl.col("word_index").cast(pl.Int32), pl.col("duration_ms").cast(pl.Float64))
                 .drop("trial_id"), "_trial", "fixation_index")
    trial = fx["_trial"].to_numpy()
    word = fx["word_index"].to_numpy().astype(np.int64)
    duration = fx["duration_ms"].to_numpy()
    grid, text_start, text_words, grid_start = _grid(tr_text, words, texts)
    if compiled is None:
        compiled = use_compiled(len(trial))
    cells = (_reference_cells(trial, word, duration, tr_text, grid) if not compiled else
             _compiled_cells(trial, word, duration, tr_text, grid, text_start, text_words, grid_start))
    first = cells["first"]
    fixated = first >= 0
    at = first[fixated]  # the first fixation (a scanpath row) of each fixated cell
    on = pl.Series(fixated)

    def column(name: str, values: np.ndarray, fill=None, valid: np.ndarray | None = None) -> pl.Series:
        """Per cell: ``values`` where fixated (and ``valid``), else ``fill`` (null when None)."""
        if fill is not None:
            return pl.Series(name, np.where(fixated, values, fill))
        ok = on if valid is None else pl.Series(valid & fixated)
        return pl.select(pl.when(ok).then(pl.Series(name, values))).to_series()

    first_duration = np.full(len(first), np.nan)
    first_duration[fixated] = duration[at]
    cols = [column("first_fixation_duration_ms", first_duration), column("gaze_duration_ms", cells["gaze"]),
            column("total_fixation_duration_ms", cells["total"], 0.0),
            column("regression_path_duration_ms", cells["path"]),
            column("fixation_count", cells["fixation_count"], np.int32(0)),
            column("skipped", cells["skipped"], True),
            column("single_fixation_duration_ms", first_duration, valid=cells["single"]),
            column("selective_regression_path_duration_ms", cells["selective"]),
            column("run_count", cells["run_count"], np.int32(0)),
            column("regression_in_count", cells["regression_in_count"]),
            column("regression_out_count", cells["regression_out_count"]),
            column("first_fixation_progressive", ~cells["skipped"])]
    del cells
    if "x_px" in have:  # where the first fixation landed in its box
        x = fx["x_px"].cast(pl.Float64).gather(at)
        box = _boxes(trial[at], fx["ia_index" if "ia_index" in have else "word_index"].gather(at), words, texts,
                     tr_text, "ia_index" if "ia_index" in have else "word_index")
        rtl = _rtl_texts(words, texts, direction)[np.maximum(tr_text[trial[at]], 0)] if len(texts) else \
            np.zeros(len(at), bool)
        left, right, x_np = box["_box_left"], box["_box_right"], x.fill_null(np.nan).to_numpy()
        with np.errstate(divide="ignore", invalid="ignore"):
            landing = np.where(rtl, right - x_np, x_np - left) / (right - left)
        values = np.full(len(first), np.nan)
        values[fixated] = landing
        valid = np.zeros(len(first), bool)
        valid[fixated] = x.is_not_null().to_numpy() & box["_box_valid"]
        cols.append(column("landing_position", values, valid=valid))
    del fx
    frame = pl.DataFrame(cols)
    del cols
    frame = frame.with_columns((pl.col("regression_in_count") > 0).alias("regression_in"),
                               (pl.col("regression_out_count") > 0).alias("regression_out"),
                               (pl.col("total_fixation_duration_ms") - pl.col("gaze_duration_ms"))
                               .alias("rereading_duration_ms"))
    if "landing_position" not in frame.columns:
        frame = frame.with_columns(pl.lit(None, pl.Float64).alias("landing_position"))
    out = pl.concat([grid.select(pl.Series("trial_id", tr["trial_id"].gather(grid["_trial"])), "word_index"),
                     frame, _in_critical_span(grid, tr).to_frame()], how="horizontal")
    order = ["trial_id", "word_index", "first_fixation_duration_ms", "gaze_duration_ms",
             "total_fixation_duration_ms", "regression_path_duration_ms", "fixation_count", "skipped",
             "regression_in", "regression_out", "rereading_duration_ms", "single_fixation_duration_ms",
             "selective_regression_path_duration_ms", "run_count", "regression_in_count",
             "regression_out_count", "first_fixation_progressive", "landing_position", "in_critical_span"]
    return out.select(order).lazy()  # grid order: sorted by (trial_id, word_index)
