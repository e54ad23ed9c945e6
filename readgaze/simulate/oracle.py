"""How much signal a simulated corpus holds: reading statistics and oracle accuracies.

Everything here uses the gold ``true_word_index`` (no drift, no line assignment), so it is an upper
reference for what a model reading the reports can reach.
"""

from __future__ import annotations

import numpy as np
import polars as pl

from readgaze.simulate.corpus import SimCorpus

_FEATURES = ["log_dwell_in", "log_dwell_out", "skip_in", "skip_out", "fix_per_word_in", "fix_per_word_out",
             "log_dwell_ratio", "mean_log_duration"]


def _word_fixations(corpus: SimCorpus) -> pl.DataFrame:
    spans = corpus.trials.select("trial_id", pl.col("critical_span_start_index").list.first().alias("s0"),
                                 pl.col("critical_span_end_index").list.first().alias("s1"))
    return (corpus.fixations.drop_nulls("true_word_index").join(spans, on="trial_id")
            .with_columns(in_span=pl.col("true_word_index").is_between("s0", "s1", closed="left")))


def trial_features(corpus: SimCorpus) -> pl.DataFrame:
    """Per-trial summaries inside vs outside the critical span, from gold word indices.

    Returns one row per trial: ``log_dwell_in/out`` (log ms of total fixation time per word),
    ``skip_in/out`` (share of words never fixated), ``fix_per_word_in/out``, ``log_dwell_ratio``
    (in minus out) and ``mean_log_duration``, joined to the trial's labels.
    """
    fx = _word_fixations(corpus)
    n_words = corpus.words.group_by("text_id").agg(pl.len().alias("n_words"))
    t = (corpus.trials.join(n_words, on="text_id")
         .select("trial_id", "participant_id", "reading_goal", "is_correct", "latent_p_correct", "n_words",
                 (pl.col("critical_span_end_index").list.first()
                  - pl.col("critical_span_start_index").list.first()).alias("n_in")))
    per = fx.group_by("trial_id").agg(
        dwell_in=pl.col("duration_ms").filter("in_span").sum(),
        dwell_out=pl.col("duration_ms").filter(~pl.col("in_span")).sum(),
        seen_in=pl.col("true_word_index").filter("in_span").n_unique(),
        seen_out=pl.col("true_word_index").filter(~pl.col("in_span")).n_unique(),
        fix_in=pl.col("in_span").sum(), fix_out=(~pl.col("in_span")).sum(),
        mean_log_duration=pl.col("duration_ms").log().mean())
    n_out = pl.col("n_words") - pl.col("n_in")
    return t.join(per, on="trial_id").with_columns(
        log_dwell_in=(pl.col("dwell_in") / pl.col("n_in") + 1).log(),
        log_dwell_out=(pl.col("dwell_out") / n_out + 1).log(),
        skip_in=1 - pl.col("seen_in") / pl.col("n_in"), skip_out=1 - pl.col("seen_out") / n_out,
        fix_per_word_in=pl.col("fix_in") / pl.col("n_in"), fix_per_word_out=pl.col("fix_out") / n_out,
    ).with_columns(log_dwell_ratio=pl.col("log_dwell_in") - pl.col("log_dwell_out")).sort("trial_id")


def reading_statistics(corpus: SimCorpus) -> dict[str, float]:
    """Corpus-level eye-movement statistics from gold word indices.

    Returns
    -------
    dict with ``median_fixation_ms``; ``skip_rate`` (share of words not fixated before a later
    word was, or never fixated: Data Viewer's IA_SKIP); ``regression_rate`` (share of saccades
    between two words that go to a lower word index); ``fixations_per_word``;
    ``off_word_share``; and the span slowdown ``log_dwell_ratio`` (mean over trials of log total
    time per word in the span minus outside) and accuracy for each reading goal.
    """
    fx = corpus.fixations
    on_words = fx.drop_nulls("true_word_index")
    w = on_words.with_columns(prev=pl.col("true_word_index").shift(1).over("trial_id"),
                              reached_before=pl.col("true_word_index").cum_max().shift(1).over("trial_id"))
    first = w.group_by("trial_id", "true_word_index").agg(pl.col("reached_before").first())
    n_words = corpus.trials.join(corpus.words.group_by("text_id").agg(pl.len().alias("n")), on="text_id")["n"].sum()
    first_pass = first.filter(pl.col("reached_before").is_null()
                              | (pl.col("reached_before") < pl.col("true_word_index"))).height
    moves = w.drop_nulls("prev").filter(pl.col("prev") != pl.col("true_word_index"))
    feats = trial_features(corpus)
    out = {
        "median_fixation_ms": float(fx["duration_ms"].median()),
        "skip_rate": 1 - first_pass / n_words,
        "regression_rate": float((moves["true_word_index"] < moves["prev"]).mean()),
        "fixations_per_word": on_words.height / n_words,
        "off_word_share": 1 - on_words.height / fx.height,
    }
    for goal in ("ordinary", "information_seeking"):
        g = feats.filter(pl.col("reading_goal") == goal)
        out[f"log_dwell_ratio_{goal}"] = float(g["log_dwell_ratio"].mean())
        out[f"accuracy_{goal}"] = float(corpus.trials.filter(pl.col("reading_goal") == goal)["is_correct"].mean())
    return out


def goal_question_accuracy(corpus: SimCorpus) -> float:
    """Share of information-seeking trials whose question is the one with the slowest-read span.

    For each of the paragraph's three critical spans, the log of total fixation time per word inside
    minus outside (gold word indices); the prediction is the span with the largest value.
    """
    words = corpus.words.select("text_id", "word_index", *[f"in_critical_span_q{q}" for q in range(3)])
    seekers = corpus.trials.filter(pl.col("reading_goal") == "information_seeking").select(
        "trial_id", "text_id", "onestopqa_question_id")
    fx = (corpus.fixations.drop_nulls("true_word_index").join(seekers, on="trial_id")
          .join(words, left_on=["text_id", "true_word_index"], right_on=["text_id", "word_index"]))
    n = words.group_by("text_id").agg(pl.len().alias("n"),
                                      *[pl.col(f"in_critical_span_q{q}").sum().alias(f"n{q}") for q in range(3)])
    ratio = [((pl.col("duration_ms").filter(f"in_critical_span_q{q}").sum() / pl.col(f"n{q}").first() + 1).log()
              - (pl.col("duration_ms").filter(~pl.col(f"in_critical_span_q{q}")).sum()
                 / (pl.col("n").first() - pl.col(f"n{q}").first()) + 1).log()).alias(f"r{q}") for q in range(3)]
    per = fx.join(n, on="text_id").group_by("trial_id", "onestopqa_question_id").agg(ratio)
    guess = per.select(pl.concat_list("r0", "r1", "r2").list.arg_max().alias("guess"), "onestopqa_question_id")
    return float((guess["guess"] == guess["onestopqa_question_id"]).mean())


def oracle_accuracy(corpus: SimCorpus, n_folds: int = 5, seed: int = 0) -> dict[str, float]:
    """Reference accuracies for the reading-goal and comprehension tasks.

    * ``reading_goal_lr``: logistic regression on :func:`trial_features` (gold word indices),
      cross-validated with participants grouped (every test participant unseen), accuracy. (With
      no signal, ``goal_effect=0``, this falls *below* 0.5: each training fold's majority class is
      the test fold's minority, a known artefact of grouped folds on a balanced label.)
    * ``reading_goal_lr_auroc``: the same model's AUROC (out-of-fold probabilities pooled).
    * ``goal_question_argmax``: :func:`goal_question_accuracy` (chance 1/3).
    * ``comprehension_bayes``: mean of ``max(p, 1 - p)`` over trials, ``p`` the generating
      probability of a correct answer: no classifier can beat it on average.
    * ``comprehension_bayes_auroc``: AUROC of ``p`` itself, the best ranking any model can reach.
    * ``comprehension_lr_balanced``: balanced accuracy of a class-balanced logistic regression on
      :func:`trial_features`, participants grouped.
    * ``comprehension_span_vs_distractor_auroc``: AUROC for a correct answer of the log time per word on the
      critical span minus on the distractor span (gold words): what a model that finds both spans in the text can
      reach on the planted ``question_span`` corpus (near 0.5 on the default corpus).

    The reading-goal entries are None when every trial has one reading goal (``planted="question_span"``).
    """
    from sklearn.linear_model import LogisticRegression
    from sklearn.metrics import balanced_accuracy_score, roc_auc_score
    from sklearn.model_selection import GroupKFold, cross_val_predict
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    f = trial_features(corpus)
    x = f.select(_FEATURES).to_numpy()
    groups = f["participant_id"].to_numpy()
    cv = GroupKFold(n_splits=n_folds)
    goal = (f["reading_goal"] == "information_seeking").to_numpy()
    model = make_pipeline(StandardScaler(), LogisticRegression(max_iter=1000))
    two_goals = np.unique(goal).size == 2
    if two_goals:
        goal_pred = cross_val_predict(model, x, goal, cv=cv, groups=groups)
        goal_prob = cross_val_predict(model, x, goal, cv=cv, groups=groups, method="predict_proba")[:, 1]
    correct = f["is_correct"].to_numpy()
    p = f["latent_p_correct"].to_numpy()
    balanced = make_pipeline(StandardScaler(), LogisticRegression(max_iter=1000, class_weight="balanced"))
    corr_pred = cross_val_predict(balanced, x, correct, cv=cv, groups=groups)
    return {
        "reading_goal_lr": float((goal_pred == goal).mean()) if two_goals else None,
        "reading_goal_lr_auroc": float(roc_auc_score(goal, goal_prob)) if two_goals else None,
        "goal_question_argmax": goal_question_accuracy(corpus),
        "comprehension_bayes": float(np.maximum(p, 1 - p).mean()),
        "comprehension_bayes_auroc": float(roc_auc_score(correct, p)),
        "comprehension_lr_balanced": float(balanced_accuracy_score(correct, corr_pred)),
        "share_correct": float(correct.mean()),
        "comprehension_span_vs_distractor_auroc": float(roc_auc_score(correct, _span_minus_distractor(corpus, f))),
    }


def _span_minus_distractor(corpus: SimCorpus, features: pl.DataFrame) -> np.ndarray:
    """Per trial (in ``features`` order): log ms per word on the critical span minus on the distractor span."""
    spans = corpus.trials.select("trial_id", *[pl.col(f"{k}_span_{e}_index").list.first().alias(f"{k[0]}{e[0]}")
                                               for k in ("critical", "distractor") for e in ("start", "end")])
    fx = corpus.fixations.drop_nulls("true_word_index").join(spans, on="trial_id")
    w = pl.col("true_word_index")
    per = fx.group_by("trial_id").agg(
        (pl.col("duration_ms").filter(w.is_between("cs", "ce", closed="left")).sum()
         / (pl.col("ce") - pl.col("cs")).first()).alias("critical"),
        (pl.col("duration_ms").filter(w.is_between("ds", "de", closed="left")).sum()
         / (pl.col("de") - pl.col("ds")).first()).alias("distractor"))
    score = features.select("trial_id").join(per, on="trial_id", how="left").fill_null(0.0)
    return ((score["critical"] + 1).log() - (score["distractor"] + 1).log()).to_numpy()
