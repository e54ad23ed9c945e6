"""The vote guard: dist may part from the classical vote only on a few fixations of a trial, in short runs.

See :mod:`readgaze.models.dist` ("Guard"). Why: a learned model and its decoding can be confidently wrong over
whole lines when the drift is one they were not fitted to (a trend with one slope per trial cannot follow
drift that rises and recedes; dist once put two and a half lines of a real trial one line too high, where the
vote was right). The vote of slice, cluster and warp fails differently (its members' errors rarely line up),
so dist is made a *correction* of the vote instead of a replacement:

1. every fixation where dist's line differs from the vote's is a proposed departure, with a margin: the log
   ratio of dist's posterior for its own line and for the vote's line;
2. a run of more than ``max_run`` consecutive departures is a disagreement about a stretch of reading (a line
   or more shifted), not a local correction: the whole run goes back to the vote, and the trial is flagged;
3. departures with a margin below ``min_margin`` go back to the vote;
4. of the rest, at most ``floor(max_share * n_fixations)`` are kept per trial (those of highest margin);
   departures cut by this budget flag the trial too.

By construction dist and the vote then differ on at most ``max_share`` of a trial's fixations, so on any trial
dist's accuracy is at most ``100 * max_share`` points below the vote's (scored on all the trial's fixations;
if a share ``u`` of them is not scored, at most ``100 * max_share / (1 - u)`` points). With the default
``max_share = 0.01`` that is the 1-point bound.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

MAX_SHARE = 0.01
"""Most fixations of a trial on which dist may differ from the vote (share; 0.01 = the 1-point bound)."""

GUARD = dict(max_share=MAX_SHARE, max_run=4, min_margin=2.0)
"""The guard's parameters (see :func:`guard`) for a weights file without its own; the shipped default file carries
these, chosen by ``experiments/select_dist.py`` (leave-one-trial-out over the 24 dev gold trials plus simulated
stress trials; every fold chose them)."""


@dataclass(frozen=True)
class GuardReport:
    """What the guard did on each trial (arrays of shape (n_trials,)).

    proposed : int64, fixations where dist's decoded line differed from the vote's
    kept : int64, of those, fixations where dist's line was kept (at most ``floor(max_share * n)``)
    longest_run : int64, the longest run of consecutive proposed departures
    flagged : bool, the trial had a run longer than ``max_run`` or departures cut by the budget: dist and
        the vote disagree there beyond a local correction, so the trial deserves a look.
    """

    proposed: np.ndarray
    kept: np.ndarray
    longest_run: np.ndarray
    flagged: np.ndarray


def guard(dist_line: np.ndarray, vote_line: np.ndarray, margin: np.ndarray, sizes: np.ndarray, *,
          max_share: float = MAX_SHARE, max_run: int = 3, min_margin: float = 0.0
          ) -> tuple[np.ndarray, GuardReport]:
    """Lines that follow the vote except on a few, short, confident departures (see the module docstring).

    Parameters
    ----------
    dist_line, vote_line : ndarray, int64, shape (n_fixations,)
        dist's decoded line and the vote's, all trials' fixations one trial after another.
    margin : ndarray, float64, shape (n_fixations,)
        Log posterior ratio of dist's line over the vote's (0 where they agree).
    sizes : ndarray, int64, shape (n_trials,)
        Fixations per trial.
    max_share, max_run, min_margin :
        The budget (share of a trial's fixations), the longest run of consecutive departures that may be
        kept, and the smallest margin a kept departure needs.

    Returns
    -------
    lines : ndarray, int64, shape (n_fixations,)
    report : GuardReport
    """
    dist_line, vote_line = np.asarray(dist_line, np.int64), np.asarray(vote_line, np.int64)
    sizes = np.asarray(sizes, np.int64)
    n, n_trials = len(dist_line), len(sizes)
    trial = np.repeat(np.arange(n_trials), sizes)
    depart = dist_line != vote_line
    # runs of consecutive departures within a trial
    start = depart & np.r_[True, ~depart[:-1] | (trial[1:] != trial[:-1])] if n else depart
    run_id = np.cumsum(start) - 1
    length = np.zeros(n, np.int64)                                          # run length at each departure
    if depart.any():
        length[depart] = np.bincount(run_id[depart])[run_id[depart]]
    ok = depart & (length <= max_run) & (margin >= min_margin)
    budget = np.floor(max_share * sizes + 1e-9).astype(np.int64)
    order = np.lexsort((-np.where(ok, margin, -np.inf), trial))            # by trial, best margin first
    rank = np.empty(n, np.int64)
    rank[order] = np.arange(n) - np.repeat(np.cumsum(sizes) - sizes, sizes)
    keep = ok & (rank < budget[trial])
    lines = np.where(keep, dist_line, vote_line)
    proposed = np.bincount(trial[depart], minlength=n_trials)
    kept = np.bincount(trial[keep], minlength=n_trials)
    longest = np.zeros(n_trials, np.int64)
    np.maximum.at(longest, trial[depart], length[depart])
    cut = np.bincount(trial[ok & ~keep], minlength=n_trials) > 0
    return lines, GuardReport(proposed.astype(np.int64), kept.astype(np.int64), longest, (longest > max_run) | cut)
