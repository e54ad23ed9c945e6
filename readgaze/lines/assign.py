"""One interface for every line-assignment method: :func:`assign_trial` works on one trial's NumPy arrays,
:func:`assign_trials` (and :func:`assign_trials_reported`, with the trials a method flags) on many, and
:func:`assign_batch` on a :class:`~readgaze.lines.batch.Batch` of flat arrays. Each looks the method up
(:func:`readgaze.lines.registry.get_method`), keeps the parameters it takes, checks the arrays
(:func:`check_trials`), gives trials without a fixation or with one line their trivial answer, and checks the shape of
what the method returns. :func:`readgaze.lines.frame.assign_lines` does the same on frames.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from readgaze.errors import ConfigError
from readgaze.lines._common import check_trial
from readgaze.lines.protocol import LineAssigner, ReportingLineAssigner, TrialFlags
from readgaze.lines.registry import accepted_params, get_method


def assign_trial(xy: np.ndarray, line_y_px: np.ndarray, method: str | Callable | LineAssigner = "slice",
                 **params) -> np.ndarray:
    """Assign each fixation of one trial to the text line it was aimed at.

    Parameters
    ----------
    xy : ndarray, float, shape (n_fixations, 2)
        Fixation positions in px (screen origin top left), in temporal order.
    line_y_px : ndarray, float, shape (n_lines,)
        Midline of each text line in px, top to bottom (strictly increasing).
    method : str, callable or LineAssigner
        A name in :data:`METHODS` (``attach``/``nearest``, ``chain``, ``cluster``, ``compare``, ``merge``,
        ``regress``, ``segment``, ``slice``, ``split``, ``stretch``, ``warp``, ``vote``), a
        ``readgaze.line_assigners`` plugin name (e.g. ``dist``), a function with this signature minus
        ``method``, or a :class:`~readgaze.lines.protocol.LineAssigner`.
    **params
        Method parameters (see each method). ``word_xy`` ((n_words, 2) px word centres in reading order) and
        ``word_line`` ((n_words,) 0-based) are needed by ``warp`` and ``compare`` and ignored by the others.

    Returns
    -------
    ndarray, int64, shape (n_fixations,)
        0-based line index per fixation (every fixation gets a line). A one-line text gives all zeros.

    Raises
    ------
    ConfigError
        Unknown method or parameter, malformed arrays, or ``warp``/``compare`` without ``word_xy``.

    Examples
    --------
    >>> assign_trial(np.array([[10.0, 98.0], [50.0, 161.0]]), np.array([100.0, 150.0]), "nearest")
    array([0, 1])
    """
    xy, line_y_px = check_trial(xy, line_y_px)
    fn = get_method(method)
    kwargs = accepted_params(fn, params)
    if len(xy) == 0:
        return np.zeros(0, dtype=np.int64)
    if len(line_y_px) == 1:
        return np.zeros(len(xy), dtype=np.int64)
    out = np.asarray(fn.assign_trial(xy, line_y_px, **kwargs))
    if out.shape != (len(xy),):
        raise ConfigError(f"method {fn.name!r} returned shape {out.shape}, expected ({len(xy)},)")
    return out.astype(np.int64)


def assign_trials(trials: list[tuple], method: str | Callable | LineAssigner = "slice", **params) -> list[np.ndarray]:
    """:func:`assign_trial` for many trials, through the method's many-trial entry point (batched where it batches).

    Parameters
    ----------
    trials : list of (xy, line_y_px, word_xy, word_line)
        One tuple per trial, arrays as in :func:`assign_trial`; ``word_xy``/``word_line`` may be None for
        methods that do not use the text. A :class:`CheckedTrials` (from :func:`check_trials`) is not checked
        again (callers that run several methods on the same trials validate them once).
    method, **params
        As in :func:`assign_trial`.

    Returns
    -------
    list of ndarray, int64, shape (n_fixations,)
        The lines :func:`assign_trial` gives each trial (a batched method returns the same lines).

    Raises
    ------
    ConfigError
        As :func:`assign_trial`, naming the trial's position in ``trials``.
    """
    return assign_trials_reported(trials, method, **params)[0]


def assign_trials_reported(trials: list[tuple], method: str | Callable | LineAssigner = "slice", **params
                           ) -> tuple[list[np.ndarray], TrialFlags | None]:
    """:func:`assign_trials`, and the trials the method flags for a look (a
    :class:`~readgaze.lines.protocol.ReportingLineAssigner`, such as ``dist``), else None.

    Returns ``(lines, flags)``; ``flags.flagged`` is bool, shape (len(trials),) (False for trials the method
    did not see: no fixation or one line).
    """
    fn = get_method(method)
    kwargs = accepted_params(fn, params)
    checked = trials if isinstance(trials, CheckedTrials) else check_trials(trials)
    out: list[np.ndarray | None] = [None] * len(checked)
    todo = []
    for k, t in enumerate(checked):
        if len(t[0]) == 0 or len(t[1]) == 1:
            out[k] = np.zeros(len(t[0]), dtype=np.int64)
        else:
            todo.append(k)
    flags = None
    if not todo:
        got = []
    elif isinstance(fn, ReportingLineAssigner):
        got, seen = fn.assign_trials_reported([checked[k] for k in todo], **kwargs)
        flagged = np.zeros(len(checked), dtype=bool)
        flagged[todo] = np.asarray(seen.flagged, dtype=bool)
        flags = TrialFlags(flagged, seen.reason)
    else:
        got = fn.assign_trials([checked[k] for k in todo], **kwargs)
    for k, lines in zip(todo, got):
        lines = np.asarray(lines)
        if lines.shape != (len(checked[k][0]),):
            raise ConfigError(f"method {fn.name!r} returned shape {lines.shape} for trial {k}, "
                              f"expected ({len(checked[k][0])},)")
        out[k] = lines.astype(np.int64)
    return out, flags


def assign_batch(batch, method: str | Callable | LineAssigner = "slice", **params) -> np.ndarray:
    """Lines for every trial of a :class:`~readgaze.lines.batch.Batch`, as :func:`assign_trial` gives them.

    Parameters
    ----------
    batch : readgaze.lines.batch.Batch
        Trials and their texts as flat arrays (positions finite, midlines checked by the caller).
    method, **params
        As :func:`assign_trial`.

    Returns
    -------
    ndarray, int64, shape (n_fixations,)
        0-based line (within each trial's text) per fixation, trial after trial.

    Notes
    -----
    The method's ``assign_batch`` gets the trials with fixations and at least two lines in one call (``slice``
    and ``attach`` work across them with array operations; a :class:`~readgaze.lines.protocol.Method` without
    a batch function goes through its many-trial function).
    """
    fn = get_method(method)
    kwargs = accepted_params(fn, params)
    multi = (batch.n_lines > 1) & (batch.sizes > 0)
    every = bool(multi.all())                                # then no copy of the batch
    rows = np.repeat(multi, batch.sizes)
    out = np.zeros(len(batch.xy), dtype=np.int64)
    if rows.any():
        lines = np.asarray(fn.assign_batch(batch if every else batch.select(multi), **kwargs))
        if lines.shape != (int(rows.sum()),):
            raise ConfigError(f"method {fn.name!r} returned shape {lines.shape}, expected ({int(rows.sum())},)")
        if every:
            return lines.astype(np.int64, copy=False)
        out[rows] = lines
    return out


class CheckedTrials(list):
    """Trials :func:`check_trials` validated: float64 arrays, finite positions, strictly increasing midlines."""


def check_trials(trials: list[tuple]) -> CheckedTrials:
    """``trials`` with float64 arrays, validated as :func:`assign_trial` validates one, as a :class:`CheckedTrials`.

    The finiteness check runs once over all fixations, and each distinct midline array (trials of one text
    share it) is checked once.

    Raises
    ------
    ConfigError
        A malformed trial, naming its position in ``trials``.
    """
    out, layouts = CheckedTrials(), {}
    for k, (xy, line_y_px, word_xy, word_line) in enumerate(trials):
        xy = np.asarray(xy, dtype=np.float64)
        key = id(line_y_px)
        if key not in layouts or xy.ndim != 2 or xy.shape[-1] != 2:
            try:
                xy, layouts[key] = check_trial(xy, line_y_px)
            except ConfigError as e:
                raise ConfigError(f"trial {k}: {e}") from e
        out.append((xy, layouts[key], word_xy, word_line))
    if out and not np.isfinite(np.concatenate([t[0].reshape(-1) for t in out])).all():
        for k, t in enumerate(out):
            try:
                check_trial(t[0], t[1])
            except ConfigError as e:
                raise ConfigError(f"trial {k}: {e}") from e
    return out
