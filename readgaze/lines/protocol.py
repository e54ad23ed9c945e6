"""The line-assignment method protocol: what a method offers :mod:`readgaze.lines` (one trial, many trials, a batch).

A method is any object with a ``name`` and three entry points, :class:`LineAssigner`. :class:`Method` builds one
from plain functions: the one-trial function (required) and, where the method has them, a function over a list
of trials and one over a :class:`~readgaze.lines.batch.Batch` of flat arrays; whatever is missing is derived
from what is there. Every built-in method is a :class:`Method` (:data:`readgaze.lines.METHODS`); a plug-in of
the entry-point group ``readgaze.line_assigners`` may be a :class:`LineAssigner` or a plain one-trial function
(wrapped in a :class:`Method`).

The contract. :func:`readgaze.lines.assign_trial`, :func:`~readgaze.lines.assign_trials` and
:func:`~readgaze.lines.assign_batch` validate the arrays and answer trials without fixations or with one line
themselves; a method's entry points see only trials with at least one fixation and two lines, float64 arrays
(``xy`` (n, 2) px, ``line_y_px`` strictly increasing px), and only the parameters its one-trial function
takes. ``word_xy`` ((n_words, 2) px centres in reading order) and ``word_line`` ((n_words,) 0-based) reach
:meth:`LineAssigner.assign_trial` as keywords when it takes them. Each returns 0-based lines, int64.

A method that can tell where its own lines deserve a look (``dist``: where it parted from the classical vote
beyond a local correction) also offers :class:`ReportingLineAssigner`'s ``assign_trials_reported``;
:func:`readgaze.lines.assign_lines` then counts the flagged trials in its QC log.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

import numpy as np

from readgaze.lines.batch import Batch

Trial = tuple  # (xy, line_y_px, word_xy or None, word_line or None)
LAYOUT_PARAMS = ("word_xy", "word_line")


@runtime_checkable
class LineAssigner(Protocol):
    """A line-assignment method (see the module docstring for the contract)."""

    name: str

    def assign_trial(self, xy: np.ndarray, line_y_px: np.ndarray, **params) -> np.ndarray:
        """(n_fixations,) int64 lines of one trial."""

    def assign_trials(self, trials: list[Trial], **params) -> list[np.ndarray]:
        """Lines of each ``(xy, line_y_px, word_xy, word_line)`` trial."""

    def assign_batch(self, batch: Batch, **params) -> np.ndarray:
        """(n_fixations,) int64 lines of every trial of ``batch``, trial after trial."""

    def parameters(self) -> dict[str, inspect.Parameter]:
        """The parameters the method takes (besides ``xy`` and ``line_y_px``), by name."""


@dataclass(frozen=True)
class TrialFlags:
    """Trials a method flags for a look: ``flagged`` (n_trials,) bool, and why, in one sentence."""

    flagged: np.ndarray
    reason: str


@runtime_checkable
class ReportingLineAssigner(LineAssigner, Protocol):
    """A :class:`LineAssigner` that also says which trials' lines deserve a look."""

    def assign_trials_reported(self, trials: list[Trial], **params) -> tuple[list[np.ndarray], TrialFlags]:
        """:meth:`assign_trials` and the :class:`TrialFlags` of the same trials."""


@dataclass(frozen=True)
class Method:
    """A :class:`LineAssigner` made of functions.

    Parameters
    ----------
    name : str
    trial : callable
        ``trial(xy, line_y_px, **params) -> (n,) lines``; its signature says which parameters the method takes.
    many : callable, optional
        ``many(trials, **params) -> list of lines`` over ``(xy, line_y_px, word_xy, word_line)`` tuples.
    batch : callable, optional
        ``batch(batch, **params) -> (n_fixations,) lines`` over a :class:`~readgaze.lines.batch.Batch` (array
        operations across trials; only for methods that do not read the text's words).
    """

    name: str
    trial: Callable
    many: Callable | None = None
    batch: Callable | None = None
    _signature: dict = field(default=None, init=False, repr=False, compare=False)

    def __call__(self, xy: np.ndarray, line_y_px: np.ndarray, **params) -> np.ndarray:
        """The one-trial function (so a :class:`Method` is called like the function it wraps)."""
        return self.trial(xy, line_y_px, **params)

    def parameters(self) -> dict[str, inspect.Parameter]:
        if self._signature is None:
            sig = dict(inspect.signature(self.trial).parameters)
            object.__setattr__(self, "_signature", {k: v for k, v in sig.items() if k not in ("xy", "line_y_px")})
        return self._signature

    @property
    def uses_text(self) -> bool:
        """Whether the one-trial function takes the text's words (``word_xy``)."""
        params = self.parameters()
        return "word_xy" in params or any(p.kind is p.VAR_KEYWORD for p in params.values())

    def assign_trial(self, xy: np.ndarray, line_y_px: np.ndarray, **params) -> np.ndarray:
        return self.trial(xy, line_y_px, **params)

    def assign_trials(self, trials: list[Trial], **params) -> list[np.ndarray]:
        if not trials:
            return []
        if self.many is not None:
            return self.many(trials, **params)
        if self.batch is not None and not self.uses_text:
            batch = Batch.from_trials([(t[0], t[1], None, None) for t in trials])
            return batch.split(self.batch(batch, **params))
        takes = [k for k in LAYOUT_PARAMS if k in self.parameters()]
        return [self.trial(xy, ly, **{k: v for k, v in zip(LAYOUT_PARAMS, words) if k in takes}, **params)
                for xy, ly, *words in trials]

    def assign_batch(self, batch: Batch, **params) -> np.ndarray:
        if self.batch is not None:
            return self.batch(batch, **params)
        return np.concatenate([np.zeros(0, np.int64), *self.assign_trials(batch.trials(), **params)])


def as_assigner(obj, name: str | None = None) -> LineAssigner:
    """``obj`` itself when it is a :class:`LineAssigner`, else a :class:`Method` around the one-trial function."""
    if isinstance(obj, LineAssigner):
        return obj
    if not callable(obj):
        from readgaze.errors import ConfigError

        raise ConfigError(f"line assigner {name or obj!r}: got {type(obj).__name__}, expected a function "
                          "(xy, line_y_px, **params) -> lines or a readgaze.lines.protocol.LineAssigner")
    return Method(name or getattr(obj, "__name__", "custom"), obj)
