"""``vote``: per-fixation majority over several line-assignment methods ("wisdom of the crowd").

Carr et al. (2022) and DIST combine methods this way; ties go to the method listed first.
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
    from readgaze.lines import LAYOUT_PARAMS, accepted_params, assign_trial

    if not methods:
        raise ConfigError("vote: got an empty list of methods, expected at least one method name")
    taken = [accepted_params(m, params, strict=False) for m in methods]
    unused = set(params) - set().union(*taken) - set(LAYOUT_PARAMS)
    if unused:
        raise ConfigError(f"vote: parameter(s) {sorted(unused)} are taken by none of the methods {list(methods)}")
    votes = np.stack([assign_trial(xy, line_y_px, m, **kw) for m, kw in zip(methods, taken)], axis=1)
    line, agreement = majority(votes, len(line_y_px))
    return (line, agreement) if return_agreement else line
