"""Prep's faster steps after the load give the values of the formulations they replaced, bit for bit (#18).

clean()'s per-run lookups against whole-column expressions, the trial features' regression rate (NumPy counts)
against the polars group-by, the alignment's text codes against the public nearest_line, and the landing
position's table lookup of boxes against the binary search it falls back to.
"""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from polars.testing import assert_frame_equal

from readgaze.align import align_words, nearest_line
from readgaze.features.trial import _entropies, compute_trial_features
from readgaze.measures import compute_word_measures


def _corpus(seed: int, n_trials: int = 60, long_words: bool = True):
    """Random texts and scanpaths: regressions, refixations, off-text fixations, unknown trials, a trial
    without text, words outside the text, fractional durations and (``long_words``) words fixated 9 to 300
    times, so that the pairwise-sum branch of the sums runs."""
    rng = np.random.default_rng(seed)
    texts = [f"t{k}" for k in range(5)]
    words = []
    for k, t in enumerate(texts):
        n = int(rng.integers(3, 40))
        idx = np.sort(rng.choice(np.arange(2 * n), n, replace=False)) if k == 4 else np.arange(n)  # gaps in one
        for i, w in enumerate(idx):
            words.append({"text_id": t, "ia_index": int(w), "word_index": int(w), "left_px": 10.0 * i,
                          "right_px": 10.0 * i + float(rng.integers(3, 11)), "direction": "rtl" if k == 3 else "ltr"})
    words = pl.DataFrame(words)
    trials = pl.DataFrame({"trial_id": [f"r{i:03d}" for i in range(n_trials)],
                           "text_id": [texts[i % 5] if i != 7 else "missing" for i in range(n_trials)]})
    rows = []
    for i in range(n_trials + 2):  # the last two trials are not in the trials table
        tid = f"r{i:03d}"
        text = texts[i % 5]
        ws = words.filter(pl.col("text_id") == text)["word_index"].to_numpy()
        n = int(rng.integers(1, 400))
        pos = np.clip(np.cumsum(rng.choice([-2, -1, 0, 1, 1, 1, 2, 3], n)), 0, len(ws) - 1)
        w = ws[pos].astype(float)
        if long_words and i % 6 == 0 and n > 9:
            w[: int(rng.integers(9, min(n, 300) + 1))] = ws[0]  # one word fixated many times in a row
        w[rng.random(n) < 0.08] = np.nan  # off text
        w[rng.random(n) < 0.02] = 999  # a word index outside the text
        for j in range(n):
            rows.append({"trial_id": tid, "fixation_index": j, "word_index": None if np.isnan(w[j]) else int(w[j]),
                         "duration_ms": float(rng.integers(40, 600)) + rng.random() * (i % 2),
                         "x_px": float(rng.random() * 400) if rng.random() > 0.02 else None,
                         "y_px": float(rng.random() * 100), "start_ms": 300.0 * j})
    fx = pl.DataFrame(rows).with_columns(pl.col("word_index").cast(pl.Int32), ia_index=pl.col("word_index"))
    return fx, words, trials


def test_box_table_equals_the_binary_search_fallback():
    """Box indices far apart make the lookup table too large: the landing positions come from the binary
    search instead, and are the same."""
    fx, words, trials = _corpus(5, n_trials=30)
    want = compute_word_measures(fx, words, trials).collect()
    far = words.with_columns(pl.col("ia_index") * 100_000)
    fx_far = fx.with_columns(pl.col("ia_index") * 100_000)
    got = compute_word_measures(fx_far, far, trials).collect()
    assert_frame_equal(got, want, check_exact=True)
    assert got["landing_position"].null_count() < got.height


def _entropies_by_unique(sp: pl.DataFrame) -> pl.DataFrame:
    """The formulation before #18: the regression rate by a polars group-by (the entropies as they are)."""
    trial = sp["_trial"].to_numpy().astype(np.int64)
    word = sp["word_index"].to_numpy().astype(np.int64)
    n_trials = int(trial.max()) + 1
    shift = np.int64(21)
    keys, n = np.unique((trial << shift) | word, return_counts=True)
    k_trial = keys >> shift
    p = n / np.bincount(k_trial, weights=n, minlength=n_trials)[k_trial]
    stationary = -np.bincount(k_trial, weights=p * np.log2(p), minlength=n_trials)
    same = trial[1:] == trial[:-1]
    pair = ((trial[:-1] << (2 * shift)) | (word[:-1] << shift) | word[1:])[same]
    keys, n = np.unique(pair, return_counts=True)
    src, k_trial = keys >> shift, keys >> (2 * shift)
    _, src_inv = np.unique(src, return_inverse=True)
    n_src = np.bincount(src_inv, weights=n)[src_inv]
    n_all = np.bincount(k_trial, weights=n, minlength=n_trials)[k_trial]
    transition = -np.bincount(k_trial, weights=(n / n_all) * np.log2(n / n_src), minlength=n_trials)
    has_pairs = np.bincount(k_trial, minlength=n_trials) > 0
    present = np.bincount(trial, minlength=n_trials) > 0
    step = pl.col("word_index").diff()
    rate = sp.group_by("_trial",
                       maintain_order=True).agg(((step < 0).sum() / (step != 0).sum()).alias("regression_rate"))
    ent = pl.DataFrame({"_trial": np.flatnonzero(present).astype(np.int64),
                        "stationary_entropy_bits": stationary[present],
                        "gaze_transition_entropy_bits": np.where(has_pairs, transition, np.nan)[present]}
                       ).with_columns(pl.col("gaze_transition_entropy_bits").fill_nan(None))
    return rate.join(ent, on="_trial").select("_trial", "regression_rate", "stationary_entropy_bits",
                                              "gaze_transition_entropy_bits")


def test_regression_rate_by_counts_equals_the_group_by():
    rng = np.random.default_rng(4)
    sizes = rng.integers(1, 300, 400)
    sizes[:3] = 1  # trials with one in-word fixation: no transition, regression rate 0 / 0
    trial = np.repeat(np.arange(0, 800, 2), sizes)  # codes with gaps: absent trials
    sp = pl.DataFrame({"_trial": trial, "word_index": rng.integers(0, 150, len(trial)).astype(np.int32)})
    sp = sp.with_columns(pl.when(pl.int_range(pl.len()) % 7 == 0).then(pl.col("word_index").shift(1))
                         .otherwise(pl.col("word_index")).fill_null(0).alias("word_index"))  # refixations
    assert_frame_equal(_entropies(sp), _entropies_by_unique(sp), check_exact=True)
    single = pl.DataFrame({"_trial": [0, 2, 3], "word_index": [4, 1, 0]})  # no transition at all
    assert_frame_equal(_entropies(single), _entropies_by_unique(single), check_exact=True)


def test_trial_features_unchanged_on_a_random_corpus():
    fx, words, trials = _corpus(6)
    got = compute_trial_features(fx, words, trials).collect()
    assert got.height == trials.height
    assert got["regression_rate"].null_count() < got.height and got["stationary_entropy_bits"].min() >= 0


def test_align_with_trial_text_codes_equals_public_nearest_line():
    fx, words, trials = _corpus(7, long_words=False)
    fx = fx.drop("word_index", "ia_index").with_columns(pl.col("y_px") * 0 + 5.0)
    words = words.with_columns(line_index=pl.lit(0, pl.Int32), top_px=0.0, bottom_px=10.0)
    out, qc = align_words(fx, words, trials, line_assigner="nearest")
    out = out.collect()
    text = fx.join(trials, on="trial_id", how="left", maintain_order="left")
    ref = nearest_line(text.lazy(), words.lazy()).collect()
    assert out["line_index"].equals(ref["line_index"])
    assert out.columns == [*fx.columns, "line_index", "word_index", "ia_index"]  # no text_id added
    unknown = fx.filter(~pl.col("trial_id").is_in(trials["trial_id"].implode())).height
    missing = fx.filter(pl.col("trial_id") == "r007").height  # its text is not in the words
    assert qc.total(reason="trial_without_text", action="flagged") == unknown
    assert out.filter(pl.col("trial_id") == "r007")["word_index"].null_count() == missing


def _clean_by_expressions(trials, words, fixations):
    """clean()'s rules as whole-column polars expressions (the formulation before its per-run lookups)."""
    counts = {}

    def drop(frame, keep, reason):
        counts[reason] = frame.select((~keep.fill_null(False)).sum()).item()
        return frame.filter(keep)

    fixations = drop(fixations, ~(pl.col("duration_ms").is_null() | (pl.col("duration_ms") <= 0)), "invalid_duration")
    fixations = drop(fixations, pl.col("trial_id").is_in(trials["trial_id"].implode()), "unknown_trial")
    n = fixations.height
    fixations = fixations.unique(["trial_id", "fixation_index"], keep="first", maintain_order=True)
    counts["duplicate_fixation"] = n - fixations.height
    trials = drop(trials, pl.col("text_id").is_in(words["text_id"].unique().implode()), "no_text")
    trials = drop(trials, pl.col("trial_id").is_in(fixations["trial_id"].unique().implode()), "no_fixations")
    fixations = drop(fixations, pl.col("trial_id").is_in(trials["trial_id"].implode()), "trial_dropped")
    words = drop(words, pl.col("text_id").is_in(trials["text_id"].unique().implode()), "text_not_read")
    return trials, words, fixations, counts


@pytest.mark.parametrize("shuffle, null_index", [(False, False), (False, True), (True, True)])
def test_clean_per_run_lookups_equal_the_expressions(shuffle, null_index):
    from readgaze.data_prep.pipeline import clean
    from readgaze.qc import QCLog

    rng = np.random.default_rng(8)
    n = 3000
    fix = pl.DataFrame({"trial_id": np.repeat([f"r{i:02d}" for i in range(40)], n // 40),
                        "fixation_index": np.tile(np.arange(n // 40), 40).astype(np.int32),
                        "duration_ms": rng.integers(-5, 300, n).astype(float)})
    fix = fix.with_columns(pl.when(pl.int_range(pl.len()) % 97 == 0).then(None).otherwise(pl.col("trial_id"))
                           .alias("trial_id"),  # null ids
                           pl.when((pl.int_range(pl.len()) % 89 == 0) & null_index).then(None)
                           .otherwise(pl.col("fixation_index")).alias("fixation_index"))
    fix = pl.concat([fix, fix.slice(700, 30)])  # repeated keys, a trial in two runs
    if shuffle:
        fix = fix.sample(fraction=1.0, shuffle=True, seed=2)
    trials = pl.DataFrame({"trial_id": [f"r{i:02d}" for i in range(3, 45)],  # r00-r02 unknown, r40-r44 unfixated
                           "text_id": [f"t{i % 4}" if i != 5 else "none" for i in range(3, 45)]})
    words = pl.DataFrame({"text_id": ["t0", "t1", "t2", "t3", "t9"], "ia_index": [0, 0, 0, 0, 0]})
    qc = QCLog()
    got = clean(trials, words, fix, qc)
    *want, counts = _clean_by_expressions(trials, words, fix)
    for a, b in zip(got, want):
        assert_frame_equal(a, b)
    assert {r["reason"]: r["count"] for r in qc.records} == counts
    assert min(counts.values()) > 0
