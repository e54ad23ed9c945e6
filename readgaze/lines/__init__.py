"""Line assignment: which text line each fixation was aimed at, correcting vertical drift.

One interface for every method. :func:`assign_trial` works on one trial's NumPy arrays, :func:`assign_trials`
on many, :func:`assign_batch` on a :class:`~readgaze.lines.batch.Batch` of flat arrays, and :func:`assign_lines`
on canonical ``fixations`` / ``words`` / ``trials`` frames (adding ``line_index``). A method is a
:class:`~readgaze.lines.protocol.LineAssigner` (one trial, many trials, a batch; :mod:`readgaze.lines.protocol`):
``method=`` is looked up in :data:`METHODS` at the foot of this module, then among the plugins of the entry point
group ``readgaze.line_assigners`` (e.g. ``dist`` from ``readgaze.models.dist``; readgaze never imports models).
``slice``, ``cluster``, ``warp``, ``chain``, ``split``, ``segment`` and ``vote`` assign many trials in one
batched pass; ``slice`` and ``attach`` also work across a Batch's trials with array operations.

The 11 classical algorithms follow Carr et al. (2022) and the definitions in their papers; readgaze's own
code, validated against gold labels on Carr et al.'s 24-trial developer set (``readgaze eval-lines``).
Departure from eyekit: pixel thresholds scale with line pitch. Each px default (slice, chain, merge, regress,
stretch, compare) is ``None``, meaning Carr et al.'s value times (median midline spacing / 64 px), so it equals
the published number on their 64-px layout; a number passed explicitly is px. ``merge`` and ``stretch`` scale
down only (factor ``min(1, pitch / 64)``): their thresholds bound tracker error, not layout (see each method).
``slice`` also drops empty edge
phantom lines (``edge_phantoms=True`` restores eyekit's behaviour).

References
----------
Carr, J. W., Pescuma, V. N., Furlan, M., Ktori, M., & Crepaldi, D. (2022). Algorithms for the automated
correction of vertical drift in eye-tracking data. Behavior Research Methods, 54(1), 287-310.
doi:10.3758/s13428-021-01554-0
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from importlib.metadata import entry_points

import numpy as np

from readgaze.errors import ConfigError
from readgaze.lines._common import check_trial
from readgaze.lines.attach import attach, attach_batch
from readgaze.lines.chain import chain, chain_many
from readgaze.lines.cluster import cluster, cluster_many
from readgaze.lines.compare import compare
from readgaze.lines.merge import merge
from readgaze.lines.protocol import LAYOUT_PARAMS, LineAssigner, Method, ReportingLineAssigner, TrialFlags, as_assigner
from readgaze.lines.regress import regress
from readgaze.lines.segment import segment, segment_many
from readgaze.lines.slice import slice, slice_batch, slice_many  # noqa: A004 (the method's published name)
from readgaze.lines.split import split, split_many
from readgaze.lines.stretch import stretch
from readgaze.lines.vote import majority, vote, vote_many
from readgaze.lines.warp import warp, warp_many

ENTRY_POINT_GROUP = "readgaze.line_assigners"


@cache
def plugins() -> dict[str, object]:
    """Entry points of the ``readgaze.line_assigners`` group, by name (not yet imported)."""
    return {ep.name: ep for ep in entry_points(group=ENTRY_POINT_GROUP)}


def get_method(method: str | Callable | LineAssigner) -> LineAssigner:
    """The :class:`~readgaze.lines.protocol.LineAssigner` for a method name, a one-trial function or an assigner.

    Raises
    ------
    ConfigError
        If the name is neither in :data:`METHODS` nor a ``readgaze.line_assigners`` plugin, or the plugin
        fails to import or is neither a function nor a LineAssigner.
    """
    if not isinstance(method, str):
        return as_assigner(method)
    if method in METHODS:
        return METHODS[method]
    if method in plugins():
        try:
            loaded = plugins()[method].load()
        except Exception as e:  # a plugin's import error is the user's configuration problem
            raise ConfigError(f"line assigner {method!r}: its plugin failed to import ({type(e).__name__}: {e})") from e
        return as_assigner(loaded, method)
    raise ConfigError(f"line assignment method: got {method!r}, expected one of "
                      f"{sorted(METHODS) + sorted(plugins())}")


def accepted_params(method: str | Callable | LineAssigner, params: dict, *, strict: bool = True) -> dict:
    """The entries of ``params`` that ``method`` takes.

    Layout arrays (``word_xy``, ``word_line``) are dropped silently for methods that do not use them; any
    other parameter the method does not take raises :class:`ConfigError` when ``strict``.
    """
    fn = get_method(method)
    sig = fn.parameters()
    if any(p.kind is p.VAR_KEYWORD for p in sig.values()):
        return dict(params)
    unknown = [k for k in params if k not in sig and k not in LAYOUT_PARAMS]
    if unknown and strict:
        raise ConfigError(f"method {fn.name!r}: got parameter(s) {unknown}, expected some of {sorted(sig)}")
    return {k: v for k, v in params.items() if k in sig}


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


from readgaze.lines.frame import assign_lines  # noqa: E402 (uses assign_trial above)

# The methods (one name per published method; "nearest" is readgaze's name for attach).
METHODS: dict[str, Method] = {
    "attach": Method("attach", attach, batch=attach_batch),
    "chain": Method("chain", chain, many=chain_many),
    "cluster": Method("cluster", cluster, many=cluster_many),
    "compare": Method("compare", compare),
    "merge": Method("merge", merge),
    "regress": Method("regress", regress),
    "segment": Method("segment", segment, many=segment_many),
    "slice": Method("slice", slice, many=slice_many, batch=slice_batch),
    "split": Method("split", split, many=split_many),
    "stretch": Method("stretch", stretch),
    "warp": Method("warp", warp, many=warp_many),
    "vote": Method("vote", vote, many=vote_many),
}
METHODS["nearest"] = METHODS["attach"]
CLASSICAL = ("attach", "chain", "cluster", "compare", "merge", "regress", "segment", "slice", "split",
             "stretch", "warp")

__all__ = ["assign_trial", "assign_trials", "assign_trials_reported", "assign_batch", "assign_lines", "check_trials",
           "CheckedTrials", "get_method", "accepted_params", "majority", "LineAssigner", "Method",
           "ReportingLineAssigner", "TrialFlags", "METHODS", "CLASSICAL"]
