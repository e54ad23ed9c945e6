"""DIST assignment: one trial or many, through the shipped weights, their decoding and the vote.

See :mod:`readgaze.models.dist` for the method.
"""

from __future__ import annotations

import os
from contextlib import contextmanager
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import torch

from readgaze.lines.protocol import Method, TrialFlags
from readgaze.models.dist.decoding import _decoder, decode
from readgaze.models.dist.guard import GUARD, MAX_SHARE, GuardReport, guard
from readgaze.models.dist.inputs import prepare_many
from readgaze.models.dist.network import WEIGHTS, load_ensemble, predict_proba

THREADS_ENV = "READGAZE_TORCH_THREADS"


@contextmanager
def torch_threads(n: int | None = None):
    """Run the block with ``n`` torch intra-op threads, then restore the previous count.

    Default: the environment variable ``READGAZE_TORCH_THREADS`` if set, else 1. The ensemble is small
    (batches of a few thousand fixation tokens at hidden size 64); with more threads on a loaded machine,
    torch's thread pool competes with every other process for the cores (measured on 2 shared cores:
    1.37 s/trial with torch's default, 52 ms/trial with one thread). Set ``READGAZE_TORCH_THREADS=4`` (or
    pass ``n``) on an idle multi-core machine.
    """
    if n is None:
        text = os.environ.get(THREADS_ENV, "1")
        try:
            n = int(text)
        except ValueError:
            from readgaze.errors import ConfigError
            raise ConfigError(f"{THREADS_ENV}: got {text!r}, expected a whole number of threads (e.g. 1)") from None
    before = torch.get_num_threads()
    if n != before:
        torch.set_num_threads(max(int(n), 1))
    try:
        yield
    finally:
        if torch.get_num_threads() != before:
            torch.set_num_threads(before)


def assign_trial(xy: np.ndarray, line_y_px: np.ndarray, *, word_xy: np.ndarray | None = None,
                 word_line: np.ndarray | None = None, weights: str | None = None, guarded: bool = True) -> np.ndarray:
    """Assign each fixation of one trial to a line with the shipped DIST-style assigner (:data:`WEIGHTS`).

    Same signature as ``readgaze.lines.assign_trial`` without ``method`` (the ``readgaze.line_assigners`` entry
    point ``dist`` is :data:`readgaze.models.dist.ASSIGNER`, which wraps this function and :func:`assign_trials`).

    Parameters
    ----------
    xy : ndarray, float, shape (n_fixations, 2)
        Fixation positions in px, in temporal order.
    line_y_px : ndarray, float, shape (n_lines,)
        Midline of each text line in px, top to bottom.
    word_xy, word_line : ndarray, optional
        Word centres (n_words, 2) px in reading order and their 0-based lines, for the ``warp`` vote.
    weights : str, optional
        Path of a weights file (default :data:`WEIGHTS`; :data:`SMALL_WEIGHTS` and :data:`ENSEMBLE_WEIGHTS` are
        the earlier distilled member and 4-member ensemble, trained on the default simulation only).
    guarded : bool
        Keep the vote guard (:mod:`readgaze.models.dist.guard`; default): dist differs from the vote of slice,
        cluster and warp on at most 1 % of the trial's fixations, in short confident runs. ``False`` gives the
        decoded lines unguarded (for experiments: they may shift whole lines).

    Returns
    -------
    ndarray, int64, shape (n_fixations,)
        0-based line index per fixation.
    """
    return assign_trials([(xy, line_y_px, word_xy, word_line)], weights=weights, guarded=guarded)[0]


def assign_trials(trials: list[tuple], *, weights: str | None = None, batch_size: int = 16,
                  threads: int | None = None, guarded: bool = True, report: bool = False):
    """Batched :func:`assign_trial` over ``[(xy, line_y_px, word_xy, word_line), ...]`` (word arrays may be None).

    ``threads``: torch threads for the ensemble (default: see :func:`torch_threads`). Each fixation first gets
    the line of highest posterior under :func:`decode` (the file's decoding step; a file without one: the
    ensemble's argmax), then, when ``guarded``, the vote guard (:func:`readgaze.models.dist.guard.guard`, with the
    weights file's parameters, :func:`guard_params`). With ``report``, returns ``(lines, GuardReport)`` (None
    unguarded).
    """
    prepared, post = posteriors(trials, weights=weights, batch_size=batch_size, threads=threads)
    lines = [p.argmax(axis=1).astype(np.int64) if len(p) else np.zeros(0, np.int64) for p in post]
    if not guarded:
        return (lines, None) if report else lines
    _, voters = load_ensemble(weights)
    out, rep = guard_lines(lines, post, [t[2][:, voters.index("vote")] for t in prepared], **guard_params(weights))
    return (out, rep) if report else out


def posteriors(trials: list[tuple], *, weights: str | None = None, batch_size: int = 16, threads: int | None = None,
               decoder: dict | None = None) -> tuple[list[tuple], list[np.ndarray]]:
    """The prepared trials (:func:`prepare_many`) and dist's per-fixation line probabilities after decoding.

    ``decoder`` overrides the weights file's decoding parameters (keys of :func:`decode`); a file without a
    decoding step gives the members' averaged probabilities. Returns ``(prepared, [(n, n_lines) float64])``.
    """
    members, voters = load_ensemble(weights)
    decoder = decoder if decoder is not None else _decoder(weights)
    prepared = prepare_many(trials, voters)
    with torch_threads(threads), torch.inference_mode():
        prob = predict_proba(members, prepared, batch_size)
    if decoder is not None:
        prob = decode(prob, [t[0] for t in prepared], **decoder)
    return prepared, prob


def guard_lines(lines: list[np.ndarray], post: list[np.ndarray], vote: list[np.ndarray], **params
                ) -> tuple[list[np.ndarray], GuardReport]:
    """:func:`readgaze.models.dist.guard.guard` over per-trial lists: dist's lines, its posteriors, the vote's lines.

    The margin of a departure is ``log post[dist line] - log post[vote line]``. ``params`` override :data:`GUARD`
    (a weights file's own guard parameters come through ``params``).
    """
    sizes = np.array([len(x) for x in lines], dtype=np.int64)
    if sizes.sum() == 0:
        return [np.zeros(0, np.int64) for _ in lines], guard(np.zeros(0), np.zeros(0), np.zeros(0), sizes)[1]
    d = np.concatenate(lines)
    v = np.concatenate([np.asarray(x, np.int64) for x in vote])
    rows = np.arange(len(d))
    flat = [p for p in post if len(p)]
    width = max(p.shape[1] for p in flat)
    padded = np.concatenate([np.pad(p, ((0, 0), (0, width - p.shape[1]))) for p in flat])
    margin = np.log(np.maximum(padded[rows, d], 1e-300)) - np.log(np.maximum(padded[rows, v], 1e-300))
    out, rep = guard(d, v, margin, sizes, **{**GUARD, **params})
    return np.split(out, np.cumsum(sizes)[:-1]), rep


def combine(prob: np.ndarray, vote: np.ndarray | None, defer_below: float | None) -> np.ndarray:
    """The ensemble's line per fixation, or the crowd's vote where the ensemble is less sure than ``defer_below``.

    DIST's authors combine their ensemble with classical methods by a vote; here the crowd's majority is kept
    wherever the ensemble's top probability is below ``defer_below`` (chosen on simulated validation trials by
    ``experiments/train_dist.py --calibrate``; None = never defer). Returns int64, shape (n_fixations,).
    """
    if len(prob) == 0:
        return np.zeros(0, dtype=np.int64)
    line = prob.argmax(axis=1)
    if defer_below is not None and vote is not None:
        line = np.where(prob.max(axis=1) >= defer_below, line, vote)
    return line.astype(np.int64)


FLAG_REASON = ("dist parted from the vote of slice, cluster and warp over a run of fixations or beyond its budget "
               "(1 % of the trial) and kept the vote's lines there: check the trial's lines")


@dataclass(frozen=True)
class DistLineAssigner(Method):
    """``dist`` as a :class:`readgaze.lines.protocol.ReportingLineAssigner`: :func:`assign_trial`,
    :func:`assign_trials`, and the trials the vote guard flagged (:class:`GuardReport`)."""

    def assign_trials_reported(self, trials: list[tuple], **params) -> tuple[list[np.ndarray], TrialFlags]:
        lines, report = assign_trials(trials, report=True, **params)
        flagged = report.flagged if report is not None else np.zeros(len(trials), dtype=bool)
        return lines, TrialFlags(flagged, FLAG_REASON)


ASSIGNER = DistLineAssigner("dist", assign_trial, many=assign_trials)
"""The ``readgaze.line_assigners`` entry point ``dist``."""


@lru_cache(maxsize=4)
def guard_params(path: str | None = None) -> dict:
    """The weights file's vote-guard parameters (``max_share``, ``max_run``, ``min_margin``); {} when it has none
    (then :data:`GUARD`). A file may not loosen the budget past :data:`MAX_SHARE` (the 1-point bound)."""
    blob = torch.load(path or WEIGHTS, map_location="cpu", weights_only=False)
    params = {k: v for k, v in (blob.get("guard") or {}).items() if k in GUARD}
    params["max_share"] = min(float(params.get("max_share", MAX_SHARE)), MAX_SHARE)
    return params
