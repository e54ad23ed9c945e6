"""A trial's scanpath as the word measures read it: in-word fixations in time order, their runs and regression
paths, grouped by word.

The *scanpath* of a trial is its in-word fixations in time order; off-word fixations (null ``word_index``) are
removed first (Data Viewer's convention; :func:`readgaze.measures.compute_word_measures` also offers eyekit's). A
*run* is a maximal stretch of consecutive scanpath fixations on one word; the *regression path* of a fixation runs
from it up to the first later fixation on a word to its right (a higher ``word_index``), or the trial's end (SR
Research (2021), *EyeLink Data Viewer User's Manual* 4.2, "Interest Area Report"). Everything here is whole-array
NumPy on trial-sorted fixations (sorts, cumulative sums, ``np.add.reduceat``): no loop over trials or rows.

:class:`Words` groups the scanpath by (trial, word); each measure of :mod:`readgaze.measures` is one function of a
:class:`Words`. :func:`scanpath` returns the same helper columns as a table, for inspection.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import polars as pl


def path_end(values: np.ndarray, end: np.ndarray, rows: np.ndarray) -> np.ndarray:
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


def scanpath_arrays(trial: np.ndarray, word: np.ndarray, duration: np.ndarray) -> dict[str, np.ndarray]:
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


def add_paths(arrays: dict[str, np.ndarray], word: np.ndarray, duration: np.ndarray, rows: np.ndarray) -> None:
    """``path_end`` and ``path_duration_ms`` (regression path from each of ``rows``; -1 / NaN elsewhere)."""
    end = np.full(len(word), -1, np.int64)
    end[rows] = path_end(word, arrays["_trial_end"], rows)
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
    arrays = scanpath_arrays(trial, word, duration)
    add_paths(arrays, word, duration, np.arange(len(word)))
    g = Words.of({**arrays, "word_index": word})
    cols = {k: v for k, v in arrays.items() if k not in ("_trial_ord", "_trial_end")}
    out = sp.with_columns(pl.Series(k, v) for k, v in cols.items())
    nulls = {"prev_word": "prev_word", "next_word": "next_word", "prior_max_word": "prior_max_word"}
    return out.with_columns(
        *[pl.when(pl.col(c) >= 0).then(pl.col(c)).alias(c) for c in nulls],
        pl.Series("in_first_run", g.in_first_run()), pl.Series("in_path", g.in_path()),
        pl.col("word_index").cast(pl.Int32))
