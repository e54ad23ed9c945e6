"""Trial codes and the trial x word grid: the index arithmetic the word measures (:mod:`readgaze.measures`), the
trial features and the alignment share. Private to the ``readgaze`` package.

A trial (or text) is coded by its row in a sorted table of ids (:func:`trial_codes`), so every later step works
on integer arrays. The *grid* is every (trial, word of its text) in (trial, word) order: one row per
``word_measures`` row (:func:`word_grid`). Nothing here loops over trials or rows.
"""

from __future__ import annotations

import numpy as np
import polars as pl


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


def in_critical_span(grid: pl.DataFrame, trials: pl.DataFrame) -> pl.Series:
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


def word_grid(trial_text: np.ndarray, words: pl.DataFrame, texts: pl.Series):
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


def box_edges(fx_trial: np.ndarray, fx_key: pl.Series, words: pl.DataFrame, texts: pl.Series, trial_text: np.ndarray,
           key: str) -> dict[str, np.ndarray]:
    """Left/right edge (px) of each fixation's box (the first box row of its text and ``key``), for fixations
    of trial codes ``fx_trial`` hitting box ``fx_key`` (the fixations' ``key`` column)."""
    w = words.select("text_id", key, "left_px", "right_px").drop_nulls([key])
    wk = trial_codes(w["text_id"], texts) * np.int64(1 << 32) + w[key].to_numpy().astype(np.int64)
    uniq, first = np.unique(wk, return_index=True)  # first box row of each (text, key)
    text = trial_text[fx_trial]
    k = fx_key.fill_null(-1).to_numpy().astype(np.int64)
    u_text = uniq >> np.int64(32)
    table = (word_rank_table(np.r_[0, np.cumsum(np.bincount(u_text, minlength=len(texts)))].astype(np.int64),
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


def word_rank_table(text_start: np.ndarray, text_words: np.ndarray):
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
