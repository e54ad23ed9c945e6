"""Line assignment: which text line each fixation was aimed at, correcting vertical drift.

One interface for every method. :func:`assign_trial` works on one trial's NumPy arrays, :func:`assign_trials`
on many (batched where the method offers ``assign_many``: ``slice``, ``cluster``, ``warp``, ``vote``, ``dist``), and
:func:`assign_batch` on a :class:`~readgaze.lines.batch.Batch` of flat arrays (``slice`` and ``attach`` work
across its trials with array operations);
:func:`assign_lines` works on canonical ``fixations`` / ``words`` / ``trials`` frames and adds ``line_index``.
``method=`` is looked up in :data:`METHODS` at the foot of this module, then among the plugins of the entry
point group ``readgaze.line_assigners`` (e.g. ``dist`` from ``readgaze.models.dist``; readgaze never imports models).

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

import inspect
from collections.abc import Callable
from functools import cache
from importlib.metadata import entry_points

import numpy as np

from readgaze.errors import ConfigError
from readgaze.lines._common import check_trial
from readgaze.lines.attach import attach
from readgaze.lines.chain import chain
from readgaze.lines.cluster import cluster
from readgaze.lines.compare import compare
from readgaze.lines.merge import merge
from readgaze.lines.regress import regress
from readgaze.lines.segment import segment
from readgaze.lines.slice import slice  # noqa: A004 (the method's published name)
from readgaze.lines.split import split
from readgaze.lines.stretch import stretch
from readgaze.lines.vote import majority, vote
from readgaze.lines.warp import warp

ENTRY_POINT_GROUP = "readgaze.line_assigners"
# Layout arrays that assign_lines offers to every method; a method receives them only if it takes them.
LAYOUT_PARAMS = ("word_xy", "word_line")


@cache
def plugins() -> dict[str, object]:
    """Entry points of the ``readgaze.line_assigners`` group, by name (not yet imported)."""
    return {ep.name: ep for ep in entry_points(group=ENTRY_POINT_GROUP)}


def get_method(method: str | Callable) -> Callable:
    """Return the assigner function for a method name (or the callable itself).

    Raises
    ------
    ConfigError
        If the name is neither in :data:`METHODS` nor a ``readgaze.line_assigners`` plugin, or the plugin
        fails to import.
    """
    if callable(method):
        return method
    if method in METHODS:
        return METHODS[method]
    if method in plugins():
        try:
            return plugins()[method].load()
        except Exception as e:  # a plugin's import error is the user's configuration problem
            raise ConfigError(f"line assigner {method!r}: its plugin failed to import ({type(e).__name__}: {e})") from e
    raise ConfigError(f"line assignment method: got {method!r}, expected one of "
                      f"{sorted(METHODS) + sorted(plugins())}")


def accepted_params(method: str | Callable, params: dict, *, strict: bool = True) -> dict:
    """The entries of ``params`` that ``method`` takes.

    Layout arrays (``word_xy``, ``word_line``) are dropped silently for methods that do not use them; any
    other parameter the method does not take raises :class:`ConfigError` when ``strict``.
    """
    fn = get_method(method)
    sig = inspect.signature(fn).parameters
    if any(p.kind is p.VAR_KEYWORD for p in sig.values()):
        return dict(params)
    names = set(sig) - {"xy", "line_y_px"}
    unknown = [k for k in params if k not in names and k not in LAYOUT_PARAMS]
    if unknown and strict:
        raise ConfigError(f"method {getattr(fn, '__name__', method)!r}: got parameter(s) {unknown}, "
                          f"expected some of {sorted(names)}")
    return {k: v for k, v in params.items() if k in names}


def assign_trial(xy: np.ndarray, line_y_px: np.ndarray, method: str | Callable = "slice", **params) -> np.ndarray:
    """Assign each fixation of one trial to the text line it was aimed at.

    Parameters
    ----------
    xy : ndarray, float, shape (n_fixations, 2)
        Fixation positions in px (screen origin top left), in temporal order.
    line_y_px : ndarray, float, shape (n_lines,)
        Midline of each text line in px, top to bottom (strictly increasing).
    method : str or callable
        A name in :data:`METHODS` (``attach``/``nearest``, ``chain``, ``cluster``, ``compare``, ``merge``,
        ``regress``, ``segment``, ``slice``, ``split``, ``stretch``, ``warp``, ``vote``), a
        ``readgaze.line_assigners`` plugin name (e.g. ``dist``), or a function with this signature minus
        ``method``.
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
    out = np.asarray(fn(xy, line_y_px, **kwargs))
    if out.shape != (len(xy),):
        raise ConfigError(f"method {method!r} returned shape {out.shape}, expected ({len(xy)},)")
    return out.astype(np.int64)


def assign_trials(trials: list[tuple], method: str | Callable = "slice", **params) -> list[np.ndarray]:
    """:func:`assign_trial` for many trials, batched when the method has an ``assign_many``.

    Parameters
    ----------
    trials : list of (xy, line_y_px, word_xy, word_line)
        One tuple per trial, arrays as in :func:`assign_trial`; ``word_xy``/``word_line`` may be None for
        methods that do not use the text.
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

    Notes
    -----
    A method batches by offering ``fn.assign_many(trials, **params) -> list of lines`` with ``trials`` as
    here (only trials with fixations and at least two lines reach it).
    """
    return _assign(trials, method, params, validated=False)


def _assign(trials: list[tuple], method: str | Callable, params: dict, *, validated: bool) -> list[np.ndarray]:
    """:func:`assign_trials`; with ``validated``, ``trials`` are :func:`_checked`'s output already (callers that
    run several methods on the same trials, such as dist's votes, validate them once)."""
    fn = get_method(method)
    kwargs = accepted_params(fn, params)
    takes_layout = set(accepted_params(fn, dict.fromkeys(LAYOUT_PARAMS)))
    out: list[np.ndarray | None] = [None] * len(trials)
    todo = []
    for k, (xy, line_y_px, word_xy, word_line) in enumerate(trials if validated else _checked(trials)):
        if len(xy) == 0 or len(line_y_px) == 1:
            out[k] = np.zeros(len(xy), dtype=np.int64)
        else:
            todo.append((k, (xy, line_y_px, word_xy, word_line)))
    many = getattr(fn, "assign_many", None)
    if many is None and getattr(fn, "assign_batch", None) is not None and todo:
        from readgaze.lines.batch import Batch

        batch = Batch.from_trials([(t[0], t[1], None, None) for _, t in todo])   # text-free methods
        got = batch.split(fn.assign_batch(batch, **kwargs))
    elif many is not None:
        got = many([t for _, t in todo], **kwargs) if todo else []
    else:
        got = []
        for _, (xy, line_y_px, word_xy, word_line) in todo:
            layout = {k: v for k, v in (("word_xy", word_xy), ("word_line", word_line)) if k in takes_layout}
            got.append(fn(xy, line_y_px, **layout, **kwargs))
    for (k, (xy, *_)), lines in zip(todo, got):
        lines = np.asarray(lines)
        if lines.shape != (len(xy),):
            raise ConfigError(f"method {method!r} returned shape {lines.shape} for trial {k}, expected ({len(xy)},)")
        out[k] = lines.astype(np.int64)
    return out


def assign_batch(batch, method: str | Callable = "slice", **params) -> np.ndarray:
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
    A method that offers ``fn.assign_batch(batch, **params)`` (``slice``, ``attach``) gets the trials with at
    least two lines in one call and works across them with array operations; any other goes through
    :func:`assign_trials` (its ``assign_many``, else trial by trial).
    """
    fn = get_method(method)
    kwargs = accepted_params(fn, params)
    many = getattr(fn, "assign_batch", None)
    if many is None:
        got = assign_trials(batch.trials(), fn, **params)
        return np.concatenate([np.zeros(0, dtype=np.int64), *got])
    multi = batch.n_lines > 1
    every = bool(multi.all())                                # then no copy of the batch
    rows = np.repeat(multi, batch.sizes)
    out = np.zeros(len(batch.xy), dtype=np.int64)
    if rows.any():
        lines = np.asarray(many(batch if every else batch.select(multi), **kwargs))
        if lines.shape != (int(rows.sum()),):
            raise ConfigError(f"method {method!r} returned shape {lines.shape}, expected ({int(rows.sum())},)")
        if every:
            return lines.astype(np.int64, copy=False)
        out[rows] = lines
    return out


def _checked(trials: list[tuple]) -> list[tuple]:
    """``trials`` with float64 arrays, validated as :func:`check_trial` does, raising ConfigError naming the trial.

    The finiteness check runs once over all fixations, and each distinct midline array (trials of one text
    share it) is checked once.
    """
    out, layouts = [], {}
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

# The method dict (one name per published method; "nearest" is readgaze's name for attach).
METHODS: dict[str, Callable] = {
    "attach": attach,
    "nearest": attach,
    "chain": chain,
    "cluster": cluster,
    "compare": compare,
    "merge": merge,
    "regress": regress,
    "segment": segment,
    "slice": slice,
    "split": split,
    "stretch": stretch,
    "warp": warp,
    "vote": vote,
}
CLASSICAL = ("attach", "chain", "cluster", "compare", "merge", "regress", "segment", "slice", "split",
             "stretch", "warp")

__all__ = ["assign_trial", "assign_trials", "assign_batch", "assign_lines", "get_method", "accepted_params", "majority",
           "METHODS", "CLASSICAL"]
