"""The simulator's planted tasks: ``question_span`` puts the answer in the text only, ``reading_speed`` the goal in
the speed only."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from sklearn.metrics import roc_auc_score

from readgaze.simulate import oracle_accuracy, simulate_corpus, trial_features
from readgaze.simulate.text import KEYWORDS


@pytest.fixture(scope="module")
def question_span():
    return simulate_corpus(24, 8, 1, seed=0, goal_effect=3.0, drift_scale=0.0, words_per_paragraph=(30, 45),
                           planted="question_span")


def test_question_span_keyword_is_in_the_critical_span_and_not_in_the_distractor(question_span):
    assert set(question_span.trials["reading_goal"]) == {"information_seeking"}
    for text_id, paragraph in question_span.paragraphs.items():
        words = [w.strip(".,").lower() for w in paragraph.words]
        keywords = set()
        for question, (c0, c1), (d0, d1) in zip(paragraph.questions, paragraph.critical_spans,
                                                 paragraph.distractor_spans):
            keyword = question.removeprefix("What does the text say about ").removesuffix("?")
            assert keyword in KEYWORDS and keyword in words[c0:c1], (text_id, question)
            assert not set(words[d0:d1]) & set(KEYWORDS)  # the distractor holds no keyword at all
            assert d1 - d0 == c1 - c0 and (d1 <= c0 or d0 >= c1)
            keywords.add(keyword)
        assert len(keywords) == 3  # three questions, three keywords


def test_question_span_correctness_is_in_which_span_was_read_not_in_the_speed(question_span):
    trials = question_span.trials
    found = trials["latent_found_span"].to_numpy()
    assert 0.35 < found.mean() < 0.65
    assert trials.filter(pl.col("latent_found_span"))["is_correct"].mean() > 0.8
    assert trials.filter(~pl.col("latent_found_span"))["is_correct"].mean() < 0.2
    total = question_span.fixations.group_by("trial_id").agg(pl.col("duration_ms").sum())
    total = trials.select("trial_id", "is_correct").join(total, on="trial_id")
    assert 0.4 < roc_auc_score(total["is_correct"], total["duration_ms"]) < 0.6  # speed: no signal
    oracle = oracle_accuracy(question_span)
    assert oracle["comprehension_span_vs_distractor_auroc"] > 0.85  # which span was read: the whole signal
    assert oracle["reading_goal_lr"] is None  # one reading goal only


def test_reading_speed_goal_is_in_the_speed_not_on_the_span():
    corpus = simulate_corpus(24, 6, 1, seed=1, goal_effect=3.0, drift_scale=0.0, words_per_paragraph=(30, 45),
                             planted="reading_speed")
    features = trial_features(corpus)
    seeking = features.filter(pl.col("reading_goal") == "information_seeking")
    ordinary = features.filter(pl.col("reading_goal") == "ordinary")
    assert ordinary["mean_log_duration"].mean() - seeking["mean_log_duration"].mean() > 0.15  # faster everywhere
    assert abs(seeking["log_dwell_ratio"].mean() - ordinary["log_dwell_ratio"].mean()) < 0.1  # not on the span
    goal = (features["reading_goal"] == "information_seeking").to_numpy()
    assert roc_auc_score(goal, -features["mean_log_duration"].to_numpy()) > 0.7  # one summary of speed suffices


def test_planted_default_leaves_the_corpus_as_it_was_and_an_unknown_task_is_refused():
    a = simulate_corpus(4, 1, 2, seed=3)
    b = simulate_corpus(4, 1, 2, seed=3, planted=None)
    assert a.trials.equals(b.trials) and a.fixations.equals(b.fixations)
    assert "latent_found_span" not in a.trials.columns
    assert np.isclose(a.trials["latent_p_correct"].to_numpy(), b.trials["latent_p_correct"].to_numpy()).all()
    with pytest.raises(ValueError, match="planted"):
        simulate_corpus(2, 1, 1, planted="speed")
