"""DIST assignment: one trial or many, through the shipped weights, their decoding and the vote.

See :mod:`readgaze.models.dist` for the method.
"""

from __future__ import annotations

import os
from contextlib import contextmanager
from functools import lru_cache

import numpy as np
import torch

from readgaze.models.dist.decoding import _decoder, decode
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
                 word_line: np.ndarray | None = None, weights: str | None = None) -> np.ndarray:
    """Assign each fixation of one trial to a line with the shipped DIST-style assigner (:data:`WEIGHTS`).

    The ``readgaze.line_assigners`` entry point ``dist``: same signature as ``readgaze.lines.assign_trial``
    without ``method``.

    Parameters
    ----------
    xy : ndarray, float, shape (n_fixations, 2)
        Fixation positions in px, in temporal order.
    line_y_px : ndarray, float, shape (n_lines,)
        Midline of each text line in px, top to bottom.
    word_xy, word_line : ndarray, optional
        Word centres (n_words, 2) px in reading order and their 0-based lines, for the ``warp`` vote.
    weights : str, optional
        Path of an ensemble file (default :data:`WEIGHTS`, the distilled one-member file;
        :data:`ENSEMBLE_WEIGHTS` is the 4-member ensemble it was distilled from, same lines on the checks, about
        4x slower end to end).

    Returns
    -------
    ndarray, int64, shape (n_fixations,)
        0-based line index per fixation.
    """
    return assign_trials([(xy, line_y_px, word_xy, word_line)], weights=weights)[0]


def assign_trials(trials: list[tuple], *, weights: str | None = None, batch_size: int = 16,
                  threads: int | None = None) -> list[np.ndarray]:
    """Batched :func:`assign_trial` over ``[(xy, line_y_px, word_xy, word_line), ...]`` (word arrays may be None).

    ``threads``: torch threads for the ensemble (default: see :func:`torch_threads`). When the ensemble file has
    a decoding step (the shipped one does), each fixation gets the line of highest posterior under :func:`decode`;
    otherwise :func:`combine` with the file's ``defer_below``.
    """
    members, voters = load_ensemble(weights)
    defer = _defer_below(weights)
    decoder = _decoder(weights)
    prepared = prepare_many(trials, voters)
    with torch_threads(threads), torch.inference_mode():
        prob = predict_proba(members, prepared, batch_size)
    if decoder is not None:
        prob = decode(prob, [t[0] for t in prepared], **decoder)
        return [p.argmax(axis=1).astype(np.int64) if len(p) else np.zeros(0, np.int64) for p in prob]
    return [combine(p, t[2][:, voters.index("vote")] if defer is not None else None, defer)
            for p, t in zip(prob, prepared)]


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


@lru_cache(maxsize=4)
def _defer_below(path: str | None = None) -> float | None:
    """The ensemble file's ``defer_below`` threshold (None when it has none)."""
    blob = torch.load(path or WEIGHTS, map_location="cpu", weights_only=False)
    value = blob.get("defer_below")
    return None if value is None or "vote" not in blob["voters"] else float(value)



assign_trial.assign_many = assign_trials  # readgaze.lines.assign_lines batches the trials of a frame through this
