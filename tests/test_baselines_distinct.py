"""No two default baselines of ``readgaze cv`` are the same model under two names (on the demo's data).

"reading speed (LR)" and "words / paragraph time (LR)" were equal in every cell of the demo table: without
PARAGRAPH_RT both are logistic regressions on words per the fixation span (predictions equal to 3.3e-16).
"""

from __future__ import annotations

import itertools

import numpy as np
import polars as pl
from scipy.stats import spearmanr

from readgaze.baselines import run_baseline, with_baseline_features
from readgaze.models.demo.settings import QUICK
from readgaze.models.training.cv import DEFAULT_BASELINES, PARAGRAPH_TIME_BASELINE
from readgaze.simulate import simulate_corpus, write_onestop_reports
from readgaze.splits import assign_fold, make_splits


def _demo_dataset(tmp_path):
    from readgaze.data_prep import sources
    from readgaze.data_prep.dataset import write_dataset
    from readgaze.data_prep.pipeline import prepare

    s = QUICK
    corpus = simulate_corpus(s.n_participants, s.n_items, s.paragraphs_per_item, seed=s.seed)
    loaded = sources.load_onestop(*write_onestop_reports(corpus, tmp_path / "reports"))
    prepared = prepare(loaded.trials, loaded.words, loaded.fixations, loaded.qc, line_assigner="slice",
                       screen_px=(2560.0, 1440.0))
    return write_dataset(tmp_path / "dataset", prepared, sources=loaded.sources, config={"mode": "onestop"},
                         id_bases=loaded.id_bases, force=True)


def test_no_two_default_baselines_rank_the_demo_trials_alike(tmp_path):
    dataset = _demo_dataset(tmp_path)
    trials = pl.read_parquet(dataset / "trials.parquet")
    assert "PARAGRAPH_RT" not in trials.columns and PARAGRAPH_TIME_BASELINE not in DEFAULT_BASELINES
    trials = with_baseline_features(trials, dataset)  # every feature set, reading_speed_wpm included
    splits = make_splits(trials, n_folds=3, seed=0, stratify_by="reading_goal")
    assignment = assign_fold(trials, splits, 0)
    scores = {kind: run_baseline(trials, assignment, "reading_goal", kind).sort("trial_id")["prediction_prob"]
              .to_numpy() for kind in [*DEFAULT_BASELINES, PARAGRAPH_TIME_BASELINE]}
    for a, b in itertools.combinations(DEFAULT_BASELINES, 2):
        assert np.abs(scores[a] - scores[b]).max() > 1e-3, (a, b)
        if np.ptp(scores[a]) > 0 and np.ptp(scores[b]) > 0:
            assert spearmanr(scores[a], scores[b]).statistic < 0.999, (a, b)
    # the one left out is reading_speed again on this data: the reason it is not a default
    assert np.abs(scores["reading_speed"] - scores[PARAGRAPH_TIME_BASELINE]).max() < 1e-9
