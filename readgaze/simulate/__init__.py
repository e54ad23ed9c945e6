"""readgaze.simulate: a synthetic reader that writes OneStop-shaped eye-movement data.

No real dataset with both reading goals can ship with readgaze, and nothing is downloaded at run
time, so this package simulates one, offline:

* :func:`simulate_corpus` — texts (words drawn from wordfreq's built-in English list) laid out on a
  OneStop-like screen, three questions per paragraph each with a critical span, participants with
  individual differences (speed, skipping, regressions, refixations, calibration drift) and a
  constant reading goal, and one trial per participant and paragraph. Information seekers skim
  outside the critical span and slow down inside it; the answer's correctness depends on how the
  span was read (:mod:`readgaze.simulate.reader`, :mod:`readgaze.simulate.corpus`).
* :func:`write_onestop_reports` — the Data Viewer fixation and IA reports the OneStop loader reads.
* :func:`simulate_line_trials` — line-assignment trials with gold labels, varied layouts and Carr
  et al.'s (2022) drift phenomena, combined (:mod:`readgaze.simulate.lines`); :func:`stress_trials` — named
  stress conditions for line assigners (drift that rises and recedes, skipped and re-read lines, look-backs,
  return-sweep undershoot; :mod:`readgaze.simulate.stress`).
* :func:`reading_statistics`, :func:`oracle_accuracy` — what a corpus holds.

Statistics and oracle accuracy at the defaults (24 participants x 12 paragraphs = 288 trials,
``seed=0``, and the mean over seeds 0-4), from ``c = simulate_corpus(seed=s)`` then
``reading_statistics(c)`` and ``oracle_accuracy(c)``:

=====================================  =========  =============  ======================================
quantity                               seed 0     seeds 0-4      note
=====================================  =========  =============  ======================================
median fixation duration (ms)          210        210            OneStop sample: 190
skip rate (Data Viewer IA_SKIP)        0.352      0.350
regression rate (saccades to a lower   0.110      0.115
word index, among word-to-word moves)
fixations per word                     0.88       0.89           OneStop: 2.4 M / 2.6 M = 0.92
off-word fixations (gold)              1.7 %      1.6 %          OneStop raw: 1.3 %
span slowdown, ordinary (log ratio)    -0.05      -0.03          time per word, span vs outside
span slowdown, info seeking            0.57       0.60
share correct                          0.81       0.81           OneStop ordinary reading: 0.81
reading_goal, logistic regression      0.767      0.806          new participants, 5 grouped folds
goal_question, slowest span            0.80       0.83           chance 1/3
comprehension, Bayes accuracy          0.83       0.83           from the generating P(correct)
comprehension, Bayes AUROC             0.84       0.82           best ranking any model can reach
comprehension, logistic regression     0.69       0.70           balanced accuracy, grouped folds
=====================================  =========  =============  ======================================

With ``goal_effect=0`` the goal question is at chance (0.42, 0.34, 0.40, 0.29 for seeds 0-3) and
the reading-goal regression falls below chance (0.16; see :func:`oracle_accuracy`); with
``comprehension_effect=0`` the comprehension regression drops to 0.57 (balanced accuracy).
All figures use gold word indices: models reading the drifted reports see less.

``goal_effect`` and ``comprehension_effect`` scale the two signals (0 removes them).
"""

from readgaze.simulate.corpus import SimCorpus, simulate_corpus
from readgaze.simulate.drift import Drift
from readgaze.simulate.line_events import LineEvents
from readgaze.simulate.lines import LineTrial, simulate_line_trials
from readgaze.simulate.oracle import oracle_accuracy, reading_statistics, trial_features
from readgaze.simulate.reports import write_onestop_reports
from readgaze.simulate.stress import STRESS_CONDITIONS, stress_trials

__all__ = ["STRESS_CONDITIONS", "Drift", "LineEvents", "LineTrial", "SimCorpus", "oracle_accuracy",
           "reading_statistics", "simulate_corpus", "simulate_line_trials", "stress_trials", "trial_features",
           "write_onestop_reports"]
