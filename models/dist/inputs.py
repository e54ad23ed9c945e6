"""DIST inputs: per-fixation and per-line features of a trial, the classical methods' votes, and batching.

See :mod:`readgaze.models.dist` for the method. ``prepare_many`` turns ``(xy, line_y_px, word_xy, word_line)`` trials
into ``(fixation_features, line_features, votes, target)`` tuples; ``collate`` pads them into a :class:`LineBatch`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch
from numba import njit
from torch import Tensor

N_FIXATION_FEATURES = 10
N_LINE_FEATURES = 5
# The crowd (slice, cluster with k-means++, warp), its majority vote, and cheap methods that fail differently.
# regress, stretch and merge (tens of ms per trial: numerical optimisation) are left out for speed.
DEFAULT_VOTERS = ("slice", "cluster", "warp", "vote", "chain", "segment", "split", "attach")
CROWD = ("slice", "cluster", "warp")


@dataclass
class LineBatch:
    """A padded batch of trials for the line assigner.

    B trials, F fixations (padded), L lines (padded), M voting methods.

    fixation_features : float32 (B, F, 10), padding 0
    fixation_mask     : bool (B, F), True = real fixation
    line_features     : float32 (B, L, 5), padding 0
    line_mask         : bool (B, L), True = real line
    votes             : float32 (B, F, L, M) one-hot line chosen by each method, padding 0
    position          : int64 (B, F) index of the fixation in its whole trial (training crops windows)
    target            : int64 (B, F) gold line, -100 = padding / unknown
    """

    fixation_features: Tensor
    fixation_mask: Tensor
    line_features: Tensor
    line_mask: Tensor
    votes: Tensor
    position: Tensor
    target: Tensor = field(default=None)


def trial_features(xy: np.ndarray, line_y_px: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per-fixation (n, 10) and per-line (n_lines, 5) float32 features of one trial (see module docstring)."""
    xy = np.asarray(xy, dtype=np.float64).reshape(-1, 2)
    line_y = np.sort(np.asarray(line_y_px, dtype=np.float64))
    n, n_lines = len(xy), len(line_y)
    pitch = float(np.median(np.diff(line_y))) if n_lines > 1 else 40.0
    if n:
        x_lo, x_hi = np.percentile(xy[:, 0], [2, 98])
    else:
        x_lo, x_hi = 0.0, 1.0
    width = max(x_hi - x_lo, pitch)
    x = (xy[:, 0] - x_lo) / width
    y = (xy[:, 1] - line_y[0]) / pitch
    line_pos = (line_y - line_y[0]) / pitch
    nearest = np.abs(y[:, None] - line_pos[None, :]).argmin(axis=1) if n else np.zeros(0, int)
    in_band = np.abs(y - line_pos[nearest]) <= 0.5 if n else np.zeros(0, bool)
    overlap = np.where(in_band, nearest, -1).astype(np.float64)
    dx_prev = np.diff(x, prepend=x[:1]) if n else x
    dy_prev = np.diff(y, prepend=y[:1]) if n else y
    dx_next = np.diff(x, append=x[-1:]) if n else x
    dy_next = np.diff(y, append=y[-1:]) if n else y
    order = np.arange(n) / max(n - 1, 1)
    scale = max(n_lines - 1, 1)
    fix = np.stack([x, y / scale, overlap / scale, in_band.astype(float), order,
                    dx_prev, np.clip(dy_prev, -5, 5), dx_next, np.clip(dy_next, -5, 5),
                    y - np.round(y)], axis=1)
    lines = np.stack([line_pos / scale, np.arange(n_lines) / scale, (np.arange(n_lines) == 0).astype(float),
                      (np.arange(n_lines) == n_lines - 1).astype(float), np.full(n_lines, n_lines / 16.0)], axis=1)
    return fix.astype(np.float32), lines.astype(np.float32)


def trial_features_many(trials: list[tuple]) -> list[tuple[np.ndarray, np.ndarray]]:
    """:func:`trial_features` of ``[(xy, line_y_px, ...), ...]``: all trials' fixations in one set of array operations.

    Bit-identical to :func:`trial_features` trial by trial: each trial's 2nd / 98th x percentiles are NumPy's
    ``linear`` percentile (the same index, weight and ``_lerp`` rounding), its pitch the median line gap, and every
    other column the same float64 operation on the same values before the cast to float32.
    """
    xy = [np.asarray(t[0], dtype=np.float64).reshape(-1, 2) for t in trials]
    n = np.array([len(v) for v in xy], dtype=np.int64)
    k = np.array([len(np.asarray(t[1]).reshape(-1)) for t in trials], dtype=np.int64)
    if len(trials) == 0:
        return []
    tr, pos = _rows(n)                                                  # trial of each fixation, index in trial
    ltr, lpos = _rows(k)
    xy_all = np.concatenate([np.zeros((0, 2)), *xy])
    ly = np.concatenate([np.zeros(0), *[np.asarray(t[1], dtype=np.float64).reshape(-1) for t in trials]])
    ly = ly[np.lexsort((ly, ltr))]                                      # each trial's midlines sorted
    lstart = np.cumsum(k) - k
    gap = np.diff(ly)
    inner = np.ones(len(gap), dtype=bool)
    inner[(lstart[1:] - 1)[k[1:] > 0]] = False                          # no gap across two trials
    gap_trial = ltr[1:][inner] if len(gap) else np.zeros(0, np.int64)
    pitch = np.where(k > 1, _group_median(gap[inner], gap_trial, len(trials)) if len(gap) else 40.0, 40.0)
    x_sorted = xy_all[:, 0][np.lexsort((xy_all[:, 0], tr))]
    x_lo = np.where(n > 0, _percentile_runs(x_sorted, n, 2), 0.0)
    x_hi = np.where(n > 0, _percentile_runs(x_sorted, n, 98), 1.0)
    width = np.maximum(x_hi - x_lo, pitch)
    first = ly[np.minimum(lstart, len(ly) - 1)]
    x = (xy_all[:, 0] - x_lo[tr]) / width[tr]
    y = (xy_all[:, 1] - first[tr]) / pitch[tr]
    line_pos = (ly - first[ltr]) / pitch[ltr]
    padded = np.full((len(trials), max(int(k.max()), 1)), np.inf)
    padded[ltr, lpos] = line_pos
    nearest = np.abs(y[:, None] - padded[tr]).argmin(axis=1)
    in_band = np.abs(y - padded[tr, nearest]) <= 0.5
    overlap = np.where(in_band, nearest, -1).astype(np.float64)
    row = np.arange(len(tr))
    prev, nxt = np.where(pos == 0, row, row - 1), np.where(pos == n[tr] - 1, row, row + 1)   # a trial's ends: 0
    dx_prev, dy_prev = x - x[prev], y - y[prev]
    dx_next, dy_next = x[nxt] - x, y[nxt] - y
    order = pos / np.maximum(n - 1, 1)[tr]
    scale = np.maximum(k - 1, 1)
    fix = np.stack([x, y / scale[tr], overlap / scale[tr], in_band.astype(float), order,
                    dx_prev, np.clip(dy_prev, -5, 5), dx_next, np.clip(dy_next, -5, 5),
                    y - np.round(y)], axis=1).astype(np.float32)
    lines = np.stack([line_pos / scale[ltr], lpos / scale[ltr], (lpos == 0).astype(float),
                      (lpos == k[ltr] - 1).astype(float), k[ltr] / 16.0], axis=1).astype(np.float32)
    return list(zip(np.split(fix, np.cumsum(n)[:-1]), np.split(lines, np.cumsum(k)[:-1])))


def _percentile_runs(values: np.ndarray, n: np.ndarray, q: float) -> np.ndarray:
    """``np.percentile(run, q)`` (method "linear") of each run of ``n[i]`` sorted values of ``values``, float64.

    NumPy's rule: index ``(n - 1) q / 100``, and between its two neighbours ``a``, ``b`` the value
    ``a + (b - a) t``, or ``b - (b - a)(1 - t)`` when ``t >= 0.5``; so the values are NumPy's bit for bit.
    An empty run gives 0.
    """
    start, last = np.cumsum(n) - n, np.maximum(n - 1, 0)
    index = last * (q / 100)
    below = np.floor(index).astype(np.int64)
    t = index - below
    if len(values) == 0:
        return np.zeros(len(n))
    a = values[np.minimum(start + below, len(values) - 1)]
    b = values[np.minimum(start + np.minimum(below + 1, last), len(values) - 1)]
    diff = b - a
    return np.where(n > 0, np.where(t >= 0.5, b - diff * (1 - t), a + diff * t), 0.0)


def classical_votes(xy: np.ndarray, line_y_px: np.ndarray, methods=DEFAULT_VOTERS, word_xy=None,
                    word_line=None) -> np.ndarray:
    """Line chosen by each classical method, shape (n, len(methods)), int64 (see :func:`classical_votes_many`)."""
    return classical_votes_many([(xy, line_y_px, word_xy, word_line)], methods)[0]


def classical_votes_many(trials: list[tuple], methods=DEFAULT_VOTERS) -> list[np.ndarray]:
    """Each classical method's lines for many trials, one (n_fixations, len(methods)) int64 array per trial.

    ``trials``: ``[(xy, line_y_px, word_xy, word_line), ...]``. Every method runs over all trials in one
    ``readgaze.lines.assign_trials`` call (batched where it batches) with readgaze's defaults, whose pixel
    thresholds scale with the trial's line pitch (Carr et al.'s published values on a 64-px pitch). ``vote``
    is the majority of the crowd's columns when slice, cluster and warp are voters too. ``warp`` needs the
    word centres; a trial without them gets ``attach``'s lines in that column.
    """
    from readgaze.lines import CheckedTrials, assign_trials, check_trials, majority

    # validated once (a CheckedTrials list is not checked again by each method's assign_trials)
    trials = check_trials([(np.asarray(xy, dtype=np.float64).reshape(-1, 2), ly, wxy, wl) for xy, ly, wxy, wl in trials])
    if len(methods) == 0:
        return [np.zeros((len(t[0]), 0), dtype=np.int64) for t in trials]
    columns = {}
    for name in methods:
        if name == "vote" and all(c in methods for c in CROWD):
            continue                                     # the crowd's majority, from its members' columns below
        if name in ("warp", "compare", "vote"):
            has_words = [k for k, t in enumerate(trials) if t[2] is not None]
            lines = assign_trials(trials, "attach") if len(has_words) < len(trials) else [None] * len(trials)
            for k, got in zip(has_words, assign_trials(CheckedTrials(trials[k] for k in has_words), name)):
                lines[k] = got
            columns[name] = lines
        else:
            columns[name] = assign_trials(trials, name)
    if "vote" in methods and "vote" not in columns:                  # one majority over all trials' fixations
        crowd = np.stack([np.concatenate([np.zeros(0, np.int64), *columns[m]]) for m in CROWD], axis=1)
        line = majority(crowd, max((len(t[1]) for t in trials), default=1))[0]
        columns["vote"] = np.split(line, np.cumsum([len(t[0]) for t in trials])[:-1])
    return [np.stack([columns[m][k] for m in methods], axis=1).astype(np.int64).reshape(len(t[0]), len(methods))
            for k, t in enumerate(trials)]


def crop(trial: tuple, max_len: int, rng: np.random.Generator) -> tuple:
    """A random window of at most ``max_len`` consecutive fixations of a prepared trial (for training)."""
    fix, lines, votes, target = trial[:4]
    start = int(rng.integers(0, max(len(fix) - max_len, 0) + 1))
    window = slice(start, start + max_len)
    return fix[window], lines, votes[window], None if target is None else target[window], start


def collate(trials: list[tuple]) -> LineBatch:
    """Pad ``[(fixation_features, line_features, votes, target or None[, start]), ...]`` into a LineBatch.

    Every field is filled by one scatter over all trials' rows (trial number, position within the trial).
    """
    b = len(trials)
    n = np.array([len(t[0]) for t in trials], dtype=np.int64)
    k = np.array([len(t[1]) for t in trials], dtype=np.int64)
    f_max, l_max, m = max(int(n.max()), 1), int(k.max()), trials[0][2].shape[1]
    row, col = _rows(n)                                                  # one entry per real fixation
    line_row, line_col = _rows(k)
    start = np.array([t[4] if len(t) > 4 else 0 for t in trials], dtype=np.int64)
    fx = np.zeros((b, f_max, N_FIXATION_FEATURES), dtype=np.float32)      # filled in NumPy, then shared with torch
    fm = np.zeros((b, f_max), dtype=bool)
    lf = np.zeros((b, l_max, N_LINE_FEATURES), dtype=np.float32)
    lm = np.zeros((b, l_max), dtype=bool)
    votes = np.zeros((b, f_max, l_max, m), dtype=np.float32)
    target = np.full((b, f_max), -100, dtype=np.int64)
    position = np.zeros((b, f_max), dtype=np.int64)
    position[row, col] = col + start[row]
    fx[row, col] = np.concatenate([np.asarray(t[0]).reshape(-1, N_FIXATION_FEATURES) for t in trials])
    fm[row, col] = True
    lf[line_row, line_col] = np.concatenate([np.asarray(t[1]).reshape(-1, N_LINE_FEATURES) for t in trials])
    lm[line_row, line_col] = True
    if m and len(row):
        vv = np.clip(np.concatenate([t[2] for t in trials]), 0, (k - 1)[row][:, None])          # N M
        votes[row[:, None], col[:, None], vv, np.arange(m)[None, :]] = 1.0
    has_target = [i for i, t in enumerate(trials) if t[3] is not None]
    if has_target:
        r, c = _rows(n[has_target])
        target[np.asarray(has_target, dtype=np.int64)[r], c] = np.concatenate(
            [np.asarray(trials[i][3], dtype=np.int64) for i in has_target])
    fx, fm, lf, lm, votes, position, target = map(torch.from_numpy, (fx, fm, lf, lm, votes, position, target))
    return LineBatch(fx, fm, lf, lm, votes, position, target)


def _rows(counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(group number, index within the group), int64, for ``counts[g]`` consecutive entries per group ``g``."""
    group = np.repeat(np.arange(len(counts)), counts)
    return group, np.arange(len(group)) - np.repeat(np.cumsum(counts) - counts, counts)


def prepare(xy: np.ndarray, line_y_px: np.ndarray, voters=DEFAULT_VOTERS, target=None, word_xy=None,
            word_line=None):
    """Features, votes and target (-100 where unknown) of one trial, ready for :func:`collate`."""
    return prepare_many([(xy, line_y_px, word_xy, word_line)], voters, [target])[0]


def prepare_many(trials: list[tuple], voters=DEFAULT_VOTERS, targets=None) -> list[tuple]:
    """:func:`prepare` for ``[(xy, line_y_px, word_xy, word_line), ...]``, the votes batched across trials."""
    votes = classical_votes_many(trials, voters)
    out = []
    for (fix, lines), v, target in zip(trial_features_many(trials), votes, targets or [None] * len(trials)):
        if target is not None:
            target = np.where(np.asarray(target) < 0, -100, np.asarray(target)).astype(np.int64)
        out.append((fix, lines, v, target))
    return out


def _group_median(values: np.ndarray, groups: np.ndarray, n_groups: int) -> np.ndarray:
    """Median of ``values`` per group id in ``0..n_groups-1`` (NaN for an empty group), float64 (n_groups,).

    NumPy's median of each group: the middle value, or the mean of the two middle values, of the group's values
    in stable sorted order (so a zero's sign is the one of the earlier of equal values); compiled: one bucket
    pass, then a stable sort per group.
    """
    return _group_median_kernel(np.ascontiguousarray(values, dtype=np.float64),
                                np.ascontiguousarray(groups, dtype=np.int64), int(n_groups))


@njit(cache=True)
def _group_median_kernel(values, groups, n_groups):
    start = np.zeros(n_groups + 1, dtype=np.int64)
    for g in groups:
        start[g + 1] += 1
    for g in range(n_groups):
        start[g + 1] += start[g]
    bucket, fill = np.empty(len(values)), start[:-1].copy()
    for i in range(len(values)):                       # each group's values in their original order
        bucket[fill[groups[i]]] = values[i]
        fill[groups[i]] += 1
    out = np.full(n_groups, np.nan)
    for g in range(n_groups):
        count = start[g + 1] - start[g]
        if count:
            part = bucket[start[g]:start[g + 1]]
            order = np.argsort(part, kind="mergesort")
            out[g] = (part[order[(count - 1) // 2]] + part[order[count // 2]]) / 2
    return out
