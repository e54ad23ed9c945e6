"""Prep computes the measures and trial features in blocks of whole trials, to bound its memory (#18).

The blocks must hold every trial exactly once, never split one, and give the same values, bit for bit, as one
computation over the whole tables. (The peak RSS itself is a benchmark figure: experiments/bench_prep.py.)
"""

from __future__ import annotations

import polars as pl
from polars.testing import assert_frame_equal

import readgaze.data_prep.pipeline as pipeline
from readgaze.data_prep import sources
from readgaze.data_prep.pipeline import prepare, release_freed_memory, trial_blocks
from readgaze.qc import QCLog


def _tables():
    # trials "0" (before every fixation's id), "d" (between) and "z" (after) have no fixations
    trials = pl.DataFrame({"trial_id": ["e", "0", "c", "z", "i", "d", "g"], "text_id": "t"})
    fix_ids = ["c"] * 3 + ["e"] * 5 + ["g"] * 2 + ["i"] * 4
    fixations = pl.DataFrame({"trial_id": fix_ids, "fixation_index": list(range(len(fix_ids)))})
    measures = pl.DataFrame({"trial_id": ["0", "c", "c", "d", "e", "g", "i", "i", "z"], "word_index": range(9)})
    return trials, fixations, measures


def test_trial_blocks_hold_every_trial_once_and_whole():
    trials, fixations, measures = _tables()
    blocks = list(trial_blocks(trials, fixations, measures, rows=4))
    # rows: c 0-2, e 3-7, g 8-9, i 10-13; a block ends where the first trial starting at or after row 4 (8: g)
    # or row 8 (g again) or row 12 (none) begins
    assert [b[1]["trial_id"].unique(maintain_order=True).to_list() for b in blocks] == [["c", "e"], ["g", "i"]]
    assert [sorted(b[0]["trial_id"]) for b in blocks] == [["0", "c", "d", "e"], ["g", "i", "z"]]
    assert len(list(trial_blocks(trials, fixations, measures, rows=3))) == 4  # c | e | g | i
    assert_frame_equal(pl.concat([b[1] for b in blocks]), fixations)
    assert_frame_equal(pl.concat([b[2] for b in blocks]), measures)
    for tr, fx, wm in blocks:  # each block's rows belong to its trials, and no trial is split
        assert set(fx["trial_id"]) <= set(tr["trial_id"]) and set(wm["trial_id"]) <= set(tr["trial_id"])
    seen = [t for b in blocks for t in b[0]["trial_id"]]
    assert sorted(seen) == sorted(trials["trial_id"])


def test_small_tables_or_null_ids_are_one_block():
    trials, fixations, measures = _tables()
    assert len(list(trial_blocks(trials, fixations, measures))) == 1  # 14 rows < BLOCK_FIXATIONS
    nulls = fixations.with_columns(pl.when(pl.int_range(pl.len()) == 0).then(None)
                                   .otherwise(pl.col("trial_id")).alias("trial_id"))
    (only,) = trial_blocks(trials, nulls, rows=2)
    assert only[1] is nulls


def test_prepare_in_blocks_equals_one_block(small_data, monkeypatch):
    s = small_data / "onestop_sample"
    loaded = sources.load_onestop(s / "fixations.csv", s / "ia.csv", None)

    def run():
        return prepare(loaded.trials, loaded.words, loaded.fixations, QCLog(list(loaded.qc.records)),
                       screen_px=(2560.0, 1440.0))

    whole = run()
    monkeypatch.setattr(pipeline, "BLOCK_FIXATIONS", 400)  # 6 blocks of the excerpt's 2,249 fixations
    assert len(list(trial_blocks(whole.trials, whole.fixations))) > 5
    blocked = run()
    for name in ("trials", "words", "fixations", "word_measures"):
        assert_frame_equal(getattr(blocked, name), getattr(whole, name), check_exact=True)
    assert blocked.qc.records == whole.qc.records
    release_freed_memory()  # callable twice, a no-op where there is no malloc_trim
    release_freed_memory()
