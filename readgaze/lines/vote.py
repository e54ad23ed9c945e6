"""``vote``: per-fixation majority over several line-assignment methods ("wisdom of the crowd").

Carr et al. (2022) and DIST combine methods this way; ties go to the method listed first. The default crowd
is slice, cluster (k-means++, as Carr et al. ran it) and warp, the set eyekit and pymovements default to.
:func:`vote_many` votes over many trials at once (each method batched where it can be).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from readgaze.errors import ConfigError


def majority(votes: np.ndarray, n_lines: int) -> tuple[np.ndarray, np.ndarray]:
    """Per-fixation majority of several methods' line choices.

    Parameters
    ----------
    votes : ndarray, int, shape (n_fixations, n_methods)
        Each method's 0-based line per fixation, columns in priority order.
    n_lines : int
        Number of text lines.

    Returns
    -------
    line : ndarray, int64, shape (n_fixations,)
        The line chosen by most methods; on a tie, the tied line chosen by the earliest method.
    agreement : ndarray, float64, shape (n_fixations,)
        Share of methods that chose the winning line (1.0 = unanimous).

    Examples
    --------
    >>> majority(np.array([[0, 1, 1], [2, 0, 1]]), 3)
    (array([1, 2]), array([0.66666667, 0.33333333]))
    """
    votes = np.asarray(votes, dtype=np.int64)
    n, k = votes.shape
    counts = np.zeros((n, n_lines), dtype=np.int64)
    np.add.at(counts, (np.repeat(np.arange(n), k), votes.ravel()), 1)
    support = np.take_along_axis(counts, votes, axis=1)           # votes for each method's choice
    first_best = (support == support.max(axis=1, keepdims=True)).argmax(axis=1)
    line = votes[np.arange(n), first_best]
    return line, support.max(axis=1) / k


def vote(xy: np.ndarray, line_y_px: np.ndarray, *, methods: Sequence[str] = ("slice", "cluster", "warp"),
         return_agreement: bool = False, **params):
    """Assign each fixation to the line most of ``methods`` choose.

    Parameters
    ----------
    xy : ndarray, float64, shape (n_fixations, 2)
        Fixation positions in px, temporal order.
    line_y_px : ndarray, float64, shape (n_lines,)
        Line midlines in px, top to bottom.
    methods : sequence of str
        Method names (see :data:`readgaze.lines.METHODS`; plugins too), in tie-break priority order.
        Default: slice, cluster, warp (the trio Carr et al. recommend).
    return_agreement : bool
        Also return the per-fixation share of methods that agree with the result.
    **params
        Passed to each method that takes them (e.g. ``word_xy`` to warp and compare, ``y_thresh`` to chain,
        merge and slice).

    Raises
    ------
    ConfigError
        No methods, or a parameter that none of the methods takes.

    Returns
    -------
    ndarray, int64, shape (n_fixations,)
        0-based line index; with ``return_agreement``, a tuple ``(line, agreement)``.

    References
    ----------
    Carr et al. (2022), doi:10.3758/s13428-021-01554-0.
    """
    word_xy, word_line = params.pop("word_xy", None), params.pop("word_line", None)
    line, agreement = vote_many([(xy, line_y_px, word_xy, word_line)], methods=methods, return_agreement=True,
                                **params)
    return (line[0], agreement[0]) if return_agreement else line[0]


def vote_many(trials: list[tuple], *, methods: Sequence[str] = ("slice", "cluster", "warp"),
              return_agreement: bool = False, **params):
    """:func:`vote` for many trials: each method runs over all trials (batched where it can), then one majority.

    Parameters
    ----------
    trials : list of (xy, line_y_px, word_xy, word_line)
        As :func:`readgaze.lines.assign_trials`.
    methods, return_agreement, **params
        As :func:`vote`.

    Returns
    -------
    list of ndarray, int64
        Each trial's lines (as :func:`vote` gives them); with ``return_agreement``, a tuple
        ``(lines, agreements)`` of two such lists (agreement float64).
    """
    from readgaze.lines.assign import assign_trials
    from readgaze.lines.protocol import LAYOUT_PARAMS
    from readgaze.lines.registry import accepted_params

    if not methods:
        raise ConfigError("vote: got an empty list of methods, expected at least one method name")
    taken = [accepted_params(m, params, strict=False) for m in methods]
    unused = set(params) - set().union(*taken) - set(LAYOUT_PARAMS)
    if unused:
        raise ConfigError(f"vote: parameter(s) {sorted(unused)} are taken by none of the methods {list(methods)}")
    if not trials:
        return ([], []) if return_agreement else []
    columns = [np.concatenate([np.zeros(0, np.int64), *assign_trials(trials, m, **kw)])
               for m, kw in zip(methods, taken)]
    n_lines = max((len(t[1]) for t in trials), default=1)
    line, agreement = majority(np.stack(columns, axis=1), n_lines)   # a line no trial has gets no votes
    cuts = np.cumsum([len(t[0]) for t in trials])[:-1]
    lines, agreements = np.split(line, cuts), np.split(agreement, cuts)
    return (lines, agreements) if return_agreement else lines


