"""The compiled searches of readgaze.align (readgaze/_align_search.py) give np.searchsorted's positions.

Checked on random grouped keys (empty groups, equal keys, queries on keys, below and above every key of their
group, keys rounded by ``align._key``), and through ``align_words`` on the OneStop sample and on simulated
trials with boxes on several lines: the same tables compiled or not, for ``nearest`` and ``slice``.
"""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

import readgaze.align as align
from readgaze._align_search import search_right
from readgaze.align import _key, align_words
from readgaze.simulate import simulate_line_trials


def test_search_right_equals_searchsorted_within_groups():
    rng = np.random.default_rng(0)
    for case in range(12):
        n_groups = int(rng.integers(1, 300))
        count = rng.integers(0 if case % 3 == 0 else 1, 25, n_groups)
        start = np.r_[0, np.cumsum(count)]
        group = np.repeat(np.arange(n_groups), count)
        values = np.round(rng.uniform(-60, 2600, start[-1]), int(rng.integers(0, 3)))
        values[::5] = 300.0                                            # equal keys within a group
        values = values[np.lexsort((values, group))]
        keys = _key(group.astype(float), values)
        g = rng.integers(-1, n_groups, 30000)
        v = np.round(rng.uniform(-3000, 5000, len(g)), 1)
        on = g >= 0
        v[on & (np.arange(len(g)) % 7 == 0)] = values[np.minimum(start[g[on & (np.arange(len(g)) % 7 == 0)]],
                                                                max(len(values) - 1, 0))] if len(values) else 0.0
        v[::13] = 1e-7 + v[::13]                                        # below the keys' resolution
        v[::17] = rng.choice([1e300, -1e300, 2.0 ** 20, -(2.0 ** 20)], len(v[::17]))
        q = _key(np.where(on, g, -1).astype(float), v)
        want = np.searchsorted(keys, q, side="right")
        got = search_right(keys, start, q, g)
        np.testing.assert_array_equal(got[on], want[on], err_msg=f"case {case}")
        assert (got[~on] == 0).all() and (want[~on] == 0).all()


def _sim_tables():
    """Fixations (some y null), word boxes (one text per trial, every 4th box overlapping the next) and trials of
    simulated reading."""
    fix, words, trials = [], [], []
    for k, t in enumerate(simulate_line_trials(24, seed=3, child_probability=0.3)):
        w, text = t.word_xy, f"p{k:02d}"
        words.append(pl.DataFrame({"text_id": text, "ia_index": np.arange(len(w)), "word_index": np.arange(len(w)),
                                   "line_index": t.word_line, "left_px": w[:, 0] - 22.0,
                                   "right_px": w[:, 0] + 22.0 + 6.0 * (np.arange(len(w)) % 4 == 0),
                                   "top_px": t.line_y_px[t.word_line] - 14.0,
                                   "bottom_px": t.line_y_px[t.word_line] + 8.0}))
        fix.append(pl.DataFrame({"trial_id": f"t{k:02d}", "fixation_index": np.arange(len(t.xy)),
                                 "x_px": t.xy[:, 0], "y_px": t.xy[:, 1]}))
        trials.append((f"t{k:02d}", text))
    fix = pl.concat(fix).with_columns(pl.when(pl.int_range(pl.len()) % 31 == 0).then(None).otherwise(pl.col("y_px"))
                                      .alias("y_px"))
    return fix, pl.concat(words), pl.DataFrame(trials, schema=["trial_id", "text_id"], orient="row")


@pytest.mark.parametrize("method", ["nearest", "slice"])
def test_align_words_is_the_same_compiled_or_not(method, monkeypatch):
    fix, words, trials = _sim_tables()
    calls = []
    real = align.search_right if hasattr(align, "search_right") else None
    import readgaze._align_search as compiled

    monkeypatch.setattr(compiled, "search_right", lambda *a: calls.append(1) or search_right(*a))
    monkeypatch.setattr(align, "_use_compiled", lambda n: False)
    a, qa = align_words(fix, words, trials, line_assigner=method)
    assert calls == [] and real is None
    monkeypatch.setattr(align, "_use_compiled", lambda n: True)
    b, qb = align_words(fix, words, trials, line_assigner=method)
    assert len(calls) == (2 if method == "nearest" else 1)
    a, b = a.collect(), b.collect()
    assert a.equals(b) and qa.records == qb.records
    assert b["word_index"].null_count() < b.height // 2 and b["word_index"].n_unique() > 50


def test_onestop_sample_compiled_matches_data_viewer_ids(small_data, monkeypatch):
    from readgaze.io.onestop import load_onestop

    monkeypatch.setattr(align, "_use_compiled", lambda n: True)
    s = small_data / "onestop_sample"
    data = load_onestop(s / "fixations.csv", s / "ia.csv")
    fx = data.fixations.collect().rename({"word_index": "report_word_index"})
    out, qc = align_words(fx, data.words, data.trials, screen_px=(2560, 1440))
    out = out.collect()
    assert out.select(pl.col("word_index").eq_missing(pl.col("report_word_index")).sum()).item() == 2249
    assert qc.total(reason="off_text", action="flagged") == 1
