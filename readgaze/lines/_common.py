"""Small helpers shared by the line-assignment algorithms (one trial, NumPy arrays; and the compiled pieces that
``chain``, ``split`` and ``segment`` share to assign many trials at once).

Conventions for every algorithm in :mod:`readgaze.lines`: ``xy`` is an ``(n_fixations, 2)`` float array of
fixation positions in px (screen origin top left, y grows downwards) in temporal order; ``line_y_px`` is the
``(n_lines,)`` array of line midlines in px, top to bottom; the result is an ``(n_fixations,)`` int64 array
of 0-based line indices. Nothing here mutates its input.
"""

from __future__ import annotations

import numpy as np

from readgaze._pairwise import pairwise, pairwise_block, pairwise_stack  # noqa: F401  (the kernels' sums)
from readgaze.errors import ConfigError
from readgaze.lines._jit import njit  # numba, imported on first call

PARALLEL_FROM = 200_000
"""Work units (a kernel's own measure, e.g. cost-matrix cells) from which :func:`in_parts` splits the trials."""


def kernel_threads() -> int:
    """Threads a batched kernel may use: ``NUMBA_NUM_THREADS`` when set (pytest's workers set 1), else the cores
    this process may run on (at most 8)."""
    import os

    env = os.environ.get("NUMBA_NUM_THREADS", "").strip()
    if env.isdigit() and int(env) > 0:
        return int(env)
    try:
        return max(1, min(8, len(os.sched_getaffinity(0))))
    except AttributeError:  # no affinity API (macOS, Windows)
        return max(1, min(8, os.cpu_count() or 1))


def in_parts(part, work: np.ndarray) -> np.ndarray:
    """``part(0, n)`` for ``n = len(work)`` trials, computed as the concatenation of ``part(a, b)`` over consecutive
    ranges of trials of about equal ``work`` (per trial), run side by side in threads.

    ``part`` must call a compiled kernel that releases the GIL (``nogil``) and treats every trial on its own, so
    the concatenated parts equal the one call, value for value. One call when the work is small (below
    :data:`PARALLEL_FROM`) or one thread is allowed (:func:`kernel_threads`).
    """
    n = len(work)
    total = float(np.sum(work))
    threads = min(kernel_threads(), n)
    if threads < 2 or total < PARALLEL_FROM:
        return part(0, n)
    cum = np.cumsum(work, dtype=np.float64)
    cuts = np.searchsorted(cum, total * np.arange(1, threads) / threads, side="left") + 1
    edges = np.unique(np.concatenate([[0], np.minimum(cuts, n), [n]])).tolist()
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(len(edges) - 1, "readgaze-kernel") as pool:
        done = list(pool.map(part, edges[:-1], edges[1:]))
    return np.concatenate(done)


def nearest_line(y: np.ndarray, line_y_px: np.ndarray) -> np.ndarray:
    """Index of the midline nearest to each ``y`` (ties go to the upper line), int64, shape of ``y``."""
    y = np.asarray(y, dtype=np.float64)
    return np.abs(y[..., None] - line_y_px).argmin(axis=-1).astype(np.int64)


def line_pitch(line_y_px: np.ndarray) -> float:
    """Mean distance between successive midlines in px (1.0 for a one-line text)."""
    return float(np.mean(np.diff(line_y_px))) if len(line_y_px) > 1 else 1.0


# Line pitch of Carr et al.'s (2022) layout (20-pt Courier New, 64 px between midlines): the published pixel
# thresholds of chain, compare, merge, regress, slice and stretch were set for it.
CARR_PITCH_PX = 64.0


def pitch_scale(line_y_px: np.ndarray) -> float:
    """Median spacing of the midlines divided by Carr et al.'s 64 px (1.0 for a one-line text).

    The median, not the mean, so that a paragraph gap or one irregular line does not change the scale.
    """
    return float(np.median(np.diff(line_y_px))) / CARR_PITCH_PX if len(line_y_px) > 1 else 1.0


def scaled_px(value: float | None, carr_px: float, scale: float) -> float:
    """``value`` in px when given; ``None`` -> Carr et al.'s ``carr_px`` times ``scale`` (see :func:`pitch_scale`)."""
    return carr_px * scale if value is None else float(value)


def scaled_bounds(value: tuple[float, float] | None, carr_px: tuple[float, float],
                  scale: float) -> tuple[float, float]:
    """Like :func:`scaled_px` for a ``(low, high)`` pair of px bounds."""
    if value is None:
        return carr_px[0] * scale, carr_px[1] * scale
    low, high = value
    return float(low), float(high)


def break_points(mask: np.ndarray) -> np.ndarray:
    """Start index of every segment of a sequence cut before each saccade where ``mask`` is true.

    ``mask`` has one entry per saccade (``n_fixations - 1``); a true entry at ``i`` starts a new segment at
    fixation ``i + 1``. Returns the segment starts, int64, beginning with 0.
    """
    return np.concatenate([[0], np.flatnonzero(mask) + 1]).astype(np.int64)


def segment_ids(starts: np.ndarray, n: int) -> np.ndarray:
    """Segment number of each of ``n`` fixations given the segment starts (see :func:`break_points`)."""
    ids = np.zeros(n, dtype=np.int64)
    ids[starts[1:]] = 1
    return np.cumsum(ids)


def segment_means(values: np.ndarray, ids: np.ndarray) -> np.ndarray:
    """Mean of ``values`` within each segment id (ids 0..k-1, every id present)."""
    return np.bincount(ids, weights=values) / np.bincount(ids)


def chains_to_nearest_line(xy: np.ndarray, line_y_px: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """Assign each segment (given by its starts) to the line nearest to the segment's mean y."""
    ids = segment_ids(starts, len(xy))
    return nearest_line(segment_means(xy[:, 1], ids), line_y_px)[ids]


def check_trial(xy: np.ndarray, line_y_px: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Return ``xy`` as ``(n, 2)`` float64 and ``line_y_px`` as ``(n_lines,)`` float64, or raise ConfigError."""
    xy = np.asarray(xy, dtype=np.float64)
    line_y_px = np.asarray(line_y_px, dtype=np.float64).reshape(-1)
    if xy.ndim != 2 or xy.shape[1] != 2:
        raise ConfigError(f"xy: got shape {xy.shape}, expected (n_fixations, 2)")
    if len(line_y_px) == 0:
        raise ConfigError("line_y_px: got no lines, expected at least one midline")
    if not np.all(np.isfinite(xy)) or not np.all(np.isfinite(line_y_px)):
        raise ConfigError("xy/line_y_px: got NaN or infinite values, expected finite pixel positions")
    if np.any(np.diff(line_y_px) <= 0):
        raise ConfigError(f"line_y_px: got {line_y_px.tolist()}, expected strictly increasing midlines (top to bottom)")
    return xy, line_y_px


def word_lines(word_xy: np.ndarray | None, word_line: np.ndarray | None, line_y_px: np.ndarray,
               method: str) -> tuple[np.ndarray, np.ndarray]:
    """Validate word centres for the methods that use the text (``warp``, ``compare``).

    Returns ``word_xy`` as ``(n_words, 2)`` float64 and the 0-based line of each word (``word_line``, or the
    line nearest to each word's y when it is not given).
    """
    if word_xy is None:
        raise ConfigError(f"method {method!r} needs the word centres: pass word_xy=(n_words, 2) px in reading order "
                          "(assign_lines passes them from the words frame)")
    word_xy = np.asarray(word_xy, dtype=np.float64)
    if word_xy.ndim != 2 or word_xy.shape[1] != 2 or len(word_xy) == 0:
        raise ConfigError(f"word_xy: got shape {word_xy.shape}, expected (n_words, 2) with n_words >= 1")
    if word_line is None:
        word_line = nearest_line(word_xy[:, 1], line_y_px)
    return word_xy, np.asarray(word_line, dtype=np.int64)


# Many trials at once (the many-trial functions of chain, split and segment): flat arrays, one compiled pass.

def flat_trials(trials: list[tuple]) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``(x, y, start, line_y, line_start)`` of ``[(xy, line_y_px, ...), ...]``: every trial's fixations and
    midlines concatenated, float64; trial ``t`` holds rows ``start[t]:start[t + 1]`` and midlines
    ``line_start[t]:line_start[t + 1]`` (int64, length ``len(trials) + 1``)."""
    xy = [np.asarray(t[0], dtype=np.float64).reshape(-1, 2) for t in trials]
    ly = [np.asarray(t[1], dtype=np.float64).reshape(-1) for t in trials]
    start = np.zeros(len(trials) + 1, dtype=np.int64)
    np.cumsum([len(v) for v in xy], out=start[1:])
    line_start = np.zeros(len(trials) + 1, dtype=np.int64)
    np.cumsum([len(v) for v in ly], out=line_start[1:])
    xy_all = np.concatenate([np.zeros((0, 2)), *xy])
    return (np.ascontiguousarray(xy_all[:, 0]), np.ascontiguousarray(xy_all[:, 1]), start,
            np.concatenate([np.zeros(0), *ly]), line_start)


@njit(cache=True)
def _pitch_scale_kernel(line_y, lo, k):
    """:func:`pitch_scale` of the ``k`` midlines ``line_y[lo:lo + k]`` (the same median, bit for bit)."""
    if k < 2:
        return 1.0
    gaps = np.empty(k - 1)
    for j in range(k - 1):
        gaps[j] = line_y[lo + j + 1] - line_y[lo + j]
    gaps.sort()
    m = k - 1
    median = gaps[m // 2] if m % 2 else (gaps[m // 2 - 1] + gaps[m // 2]) / 2
    return median / CARR_PITCH_PX


@njit(cache=True)
def _chains_to_lines_kernel(y, start, cut, line_y, line_start, out):
    """:func:`chains_to_nearest_line` of every trial: a chain starts at each row with ``cut`` true (and at each
    trial's first row); its mean y is the sum in time order over its length, as ``np.bincount`` sums; its
    line is the first nearest midline, as ``argmin``."""
    for t in range(len(start) - 1):
        lo, hi, l0, l1 = start[t], start[t + 1], line_start[t], line_start[t + 1]
        i = lo
        while i < hi:
            total, j = 0.0 + y[i], i + 1
            while j < hi and not cut[j]:
                total += y[j]
                j += 1
            mean = total / (j - i)
            best, best_d = 0, np.inf
            for line in range(l1 - l0):
                d = abs(mean - line_y[l0 + line])
                if d < best_d:
                    best, best_d = line, d
            out[i:j] = best
            i = j


@njit(cache=True)
def saccades_ranked(x, lo, n):
    """The ``n`` horizontal saccades ``dx = x[lo + i + 1] - x[lo + i]`` of a trial starting at ``lo``, and their
    stable ascending order (``np.argsort(kind="mergesort")``): the most negative, return sweeps, first."""
    dx = np.empty(n)
    for i in range(n):
        dx[i] = x[lo + i + 1] - x[lo + i]
    return dx, np.argsort(dx, kind="mergesort")
