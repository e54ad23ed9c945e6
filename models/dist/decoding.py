"""DIST decoding: an input-output HMM over lines (transitions by incoming saccade), then a second pass along
each line's fitted course through the trial's drift. See :mod:`readgaze.models.dist` ("Decoding").
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np
import torch
from numba import njit

from readgaze.models.dist.inputs import N_FIXATION_FEATURES, _group_median, _rows
from readgaze.models.dist.network import WEIGHTS

# Sequence decoding: an input-output HMM over lines (module docstring, "Decoding").
DX_EDGES = (-0.6, -0.3, -0.1, -0.02, 0.02, 0.1, 0.3, 0.6)           # incoming saccade dx, text widths
DY_EDGES = (-3.5, -2.5, -1.75, -1.25, -0.75, -0.25, 0.25, 0.75, 1.25, 1.75, 2.5, 3.5)  # dy, line pitches
MAX_JUMP = 3                # line changes -3..3 have their own probability; larger ones share one, spread evenly


def saccade_bins(fixation_features: np.ndarray, dx_edges=DX_EDGES, dy_edges=DY_EDGES) -> np.ndarray:
    """Bin of the saccade into each fixation, int64 (n,), from :func:`trial_features` columns dx_prev, dy_prev."""
    dx = np.searchsorted(np.asarray(dx_edges), fixation_features[:, 5])
    return (dx * (len(dy_edges) + 1) + np.searchsorted(np.asarray(dy_edges), fixation_features[:, 6])).astype(np.int64)


def fit_transitions(trials: list, dx_edges=DX_EDGES, dy_edges=DY_EDGES, max_jump: int = MAX_JUMP,
                    smoothing: float = 8.0) -> np.ndarray:
    """Count ``P(line change | saccade bin)`` on prepared trials with gold lines (simulated training trials).

    Returns float64 (n_bins, 2 * max_jump + 2): columns -max_jump..max_jump, then "farther". Pairs of consecutive
    fixations with an unknown line (target -100) are not counted. Each bin gets ``smoothing`` pseudo-counts
    spread like the pooled distribution, so a rare bin falls back to it.
    """
    n_bins = (len(dx_edges) + 1) * (len(dy_edges) + 1)
    counts = np.zeros((n_bins, 2 * max_jump + 2))
    for fix, _lines, _votes, target, *_ in trials:
        ok = (target[1:] >= 0) & (target[:-1] >= 0)
        jump = (target[1:] - target[:-1])[ok]
        np.add.at(counts, (saccade_bins(fix, dx_edges, dy_edges)[1:][ok],
                           np.where(np.abs(jump) <= max_jump, jump + max_jump, 2 * max_jump + 1)), 1.0)
    pooled = (counts.sum(axis=0) + 1.0) / (counts.sum() + counts.shape[1])
    counts += smoothing * pooled
    return counts / counts.sum(axis=1, keepdims=True)


def transition_matrices(transitions: np.ndarray, n_lines: int, max_jump: int = MAX_JUMP) -> np.ndarray:
    """``P(line j at t+1 | line i at t)`` per saccade bin for a trial of ``n_lines`` lines, (n_bins, L, L) float64.

    A jump farther than ``max_jump`` shares the table's last column evenly among the lines it can reach from i;
    each row is then renormalised over the trial's lines (top and bottom lines have fewer neighbours).
    """
    line = np.arange(n_lines)
    jump = line[None, :] - line[:, None]                                                  # L L (from, to)
    far = np.abs(jump) > max_jump
    col = np.where(far, 2 * max_jump + 1, jump + max_jump)
    m = np.asarray(transitions, dtype=np.float64)[:, col] / np.where(far, np.maximum(far.sum(1, keepdims=True), 1), 1)
    return m / m.sum(axis=2, keepdims=True)


def decode(prob: list[np.ndarray], fixation_features: list[np.ndarray], transitions: np.ndarray,
           emission_power: float, trend_power: float = 0.0, dx_edges=DX_EDGES, dy_edges=DY_EDGES,
           max_jump: int = MAX_JUMP) -> list[np.ndarray]:
    """Posterior line probabilities per fixation under the saccade-conditioned HMM (forward-backward).

    Parameters
    ----------
    prob : list of ndarray, (n_fixations, n_lines) float
        The ensemble's probabilities (:func:`predict_proba`); ``prob ** emission_power`` are the emissions.
    fixation_features : list of ndarray, (n_fixations, 10) float32
        :func:`trial_features` of the same trials (for the incoming saccades).
    transitions : ndarray, (n_bins, 2 * max_jump + 2) float
        :func:`fit_transitions`' table (see :func:`transition_matrices`).
    trend_power : float
        If > 0, a second pass: each line's course through the trial is fitted to the first pass's lines
        (:func:`line_trends`), and the emissions are multiplied by :func:`trend_likelihood` ``** trend_power``.

    Returns
    -------
    list of ndarray, (n_fixations, n_lines) float64, rows summing to 1.
    """
    post = forward_backward(prob, fixation_features, transitions, emission_power, dx_edges, dy_edges, max_jump)
    if trend_power <= 0:
        return post
    # The second pass on all trials' values at once: the same numbers as, trial by trial,
    # e = clip(p) ** emission_power * trend_likelihood(d, trend_power); e / e.sum(axis=1) (tested bit for bit).
    n = np.array([len(p) for p in prob], dtype=np.int64)
    k = np.array([np.shape(p)[1] for p in prob], dtype=np.int64)
    if n.sum() == 0:
        return post
    distance = _line_trends_flat(post, fixation_features)
    flat = np.concatenate([np.asarray(p, dtype=np.float64).ravel() for p in prob])
    emit = np.clip(flat, 1e-9, 1.0) ** emission_power * _trend_likelihood_flat(distance, n, k, trend_power)
    width = np.repeat(k, n)                                                  # lines of each fixation's trial
    emit /= _row_sums(emit, width)[np.repeat(np.arange(len(width)), width)]
    features = np.concatenate([np.zeros((0, N_FIXATION_FEATURES), np.float32), *fixation_features])
    return _forward_backward_flat(np.clip(emit, 1e-9, 1.0), n, k, features, transitions, dx_edges, dy_edges,
                                  max_jump)                                  # pass 2: emission power 1


def forward_backward(prob: list[np.ndarray], fixation_features: list[np.ndarray], transitions: np.ndarray,
                     emission_power: float, dx_edges=DX_EDGES, dy_edges=DY_EDGES, max_jump: int = MAX_JUMP
                     ) -> list[np.ndarray]:
    """One pass of :func:`decode`: the posterior with emissions ``prob ** emission_power``.

    Scaled forward-backward (Rabiner 1989), every step normalised; all trials in one compiled pass (numba),
    each with its own number of lines.
    """
    n = np.array([len(p) for p in prob], dtype=np.int64)
    k = np.array([np.shape(p)[1] for p in prob], dtype=np.int64)
    if n.sum() == 0:
        return [np.zeros(np.shape(p), dtype=np.float64) for p in prob]
    emit = np.concatenate([np.clip(p, 1e-9, 1.0).ravel() for p in prob if len(p)]) ** emission_power
    features = np.concatenate([np.zeros((0, N_FIXATION_FEATURES), np.float32),
                               *[f for f, p in zip(fixation_features, prob) if len(p)]])
    return _forward_backward_flat(emit, n, k, features, transitions, dx_edges, dy_edges, max_jump)


def _forward_backward_flat(emit, n, k, features, transitions, dx_edges, dy_edges, max_jump) -> list[np.ndarray]:
    """:func:`forward_backward` of the emissions ``emit`` (all trials' ``(n[i], k[i])`` rows, flat; trials with no
    fixation hold nothing) and the fixations' features (trials with fixations, concatenated)."""
    live = n > 0
    nl, kl = n[live], k[live]
    widths = np.unique(kl)
    table, table_t = _transition_table(np.asarray(transitions, dtype=np.float64), tuple(int(w) for w in widths),
                                       max_jump)
    bins = saccade_bins(features, dx_edges, dy_edges)
    emit_start, fix_start = np.concatenate([[0], np.cumsum(nl * kl)]), np.concatenate([[0], np.cumsum(nl)])
    post = _forward_backward_kernel(emit, emit_start, fix_start, kl, np.searchsorted(widths, kl), bins, table,
                                    table_t)
    pieces = iter(np.split(post, emit_start[1:-1]))
    return [next(pieces).reshape(a, b) if a else np.zeros((0, b)) for a, b in zip(n, k)]


_TABLES: dict = {}


def _transition_table(transitions: np.ndarray, widths: tuple[int, ...], max_jump: int
                      ) -> tuple[np.ndarray, np.ndarray]:
    """:func:`transition_matrices` for each trial width, padded into one (n_widths, n_bins, L, L) float64 array
    (width, bin, from, to), and the same with from and to swapped (for the backward pass's contiguous rows).

    Cached on the table's bytes, the widths and ``max_jump`` (decode's two passes and every call with the
    shipped file ask for the same few); the arrays are read-only.
    """
    key = (transitions.tobytes(), transitions.shape, widths, max_jump)
    tables = _TABLES.get(key)
    if tables is None:
        table = np.zeros((len(widths), len(transitions), widths[-1], widths[-1]))      # width, bin, from, to
        for w, n_lines in enumerate(widths):
            table[w, :, :n_lines, :n_lines] = transition_matrices(transitions, n_lines, max_jump)
        tables = (table, np.ascontiguousarray(table.transpose(0, 1, 3, 2)))
        for t in tables:
            t.flags.writeable = False
        if len(_TABLES) > 64:
            _TABLES.clear()
        _TABLES[key] = tables
    return tables


@njit(cache=True)
def _forward_backward_kernel(emit, emit_start, fix_start, n_lines, width, bins, table, table_t):
    """Posteriors of every trial, flat like ``emit`` (trial ``k``: ``(n, n_lines[k])`` at ``emit_start[k]``).

    Each sum over the previous (forward) or next (backward) line adds its terms in line order; the sums of all
    lines run side by side (one accumulator per line, over the contiguous rows of ``table`` / ``table_t``).
    """
    out = np.empty_like(emit)
    for k in range(len(n_lines)):
        n, size, e0, f0 = fix_start[k + 1] - fix_start[k], n_lines[k], emit_start[k], fix_start[k]
        e = emit[e0:e0 + n * size].reshape(n, size)
        fwd, bwd = np.empty((n, size)), np.ones((n, size))
        acc = np.empty(size)
        fwd[0] = e[0] / e[0].sum()
        for t in range(1, n):
            trans = table[width[k], bins[f0 + t]]                  # from, to
            acc[:] = 0.0
            for i in range(size):
                f = fwd[t - 1, i]
                for j in range(size):
                    acc[j] += f * trans[i, j]
            for j in range(size):
                fwd[t, j] = acc[j] * e[t, j]
            fwd[t] /= fwd[t].sum()
        for t in range(n - 2, -1, -1):
            trans_t = table_t[width[k], bins[f0 + t + 1]]          # to, from
            acc[:] = 0.0
            for j in range(size):
                eb = e[t + 1, j] * bwd[t + 1, j]
                for i in range(size):
                    acc[i] += trans_t[j, i] * eb
            for i in range(size):
                bwd[t, i] = acc[i]
            bwd[t] /= bwd[t].sum()
        post = fwd * bwd
        for t in range(n):
            post[t] /= post[t].sum()
        out[e0:e0 + n * size] = post.ravel()
    return out


def line_trends(post: list[np.ndarray], fixation_features: list[np.ndarray], min_fixations: int = 3
                ) -> list[np.ndarray]:
    """Each fixation's vertical distance to each line's fitted course, in pitches: one (n, n_lines) array per trial.

    With the lines of highest posterior ``post``, one slope per trial (pooled within-line least squares of y on
    x, as Cohen's 2013 parallel regression lines) and one intercept per line (the median of y - slope * x over
    its fixations) give each line's course through the trial's drift. A line with fewer than ``min_fixations``
    fixations sits at its midline plus the trial's median offset.
    """
    n = np.array([len(p) for p in post], dtype=np.int64)
    n_lines = np.array([p.shape[1] for p in post], dtype=np.int64)
    if n.sum() == 0:
        return [np.zeros(np.shape(p)) for p in post]
    flat = _line_trends_flat(post, fixation_features, min_fixations)
    pieces = iter(np.split(flat, np.cumsum(n * n_lines)[:-1]))
    return [next(pieces).reshape(a, b) for a, b in zip(n, n_lines)]


def _line_trends_flat(post: list[np.ndarray], fixation_features: list[np.ndarray], min_fixations: int = 3
                      ) -> np.ndarray:
    """:func:`line_trends` of all trials as one flat float64 array (each trial's (n, n_lines) rows in turn)."""
    n = np.array([len(p) for p in post], dtype=np.int64)
    n_lines = np.array([p.shape[1] for p in post], dtype=np.int64)
    trial = np.repeat(np.arange(len(post)), n)
    z = np.concatenate([p.argmax(axis=1) for p in post if len(p)])
    fix = np.concatenate([f for f, p in zip(fixation_features, post) if len(p)]).astype(np.float64)
    x, y = fix[:, 0], fix[:, 1] * np.maximum(n_lines - 1, 1)[trial]          # text widths; pitches from line 0
    offset = np.concatenate([[0], np.cumsum(n_lines)[:-1]])
    group, n_groups = offset[trial] + z, int(n_lines.sum())
    count = np.bincount(group, minlength=n_groups)
    xt = x - (np.bincount(group, x, n_groups) / np.maximum(count, 1))[group]
    yt = y - (np.bincount(group, y, n_groups) / np.maximum(count, 1))[group]
    slope = np.bincount(trial, xt * yt, len(post)) / np.maximum(np.bincount(trial, xt * xt, len(post)), 1e-9)
    r = y - np.clip(slope, -3.0, 3.0)[trial] * x
    line_of_group = np.arange(n_groups) - np.repeat(offset, n_lines)
    trial_of_group = np.repeat(np.arange(len(post)), n_lines)
    intercept = np.where(count >= min_fixations, _group_median(r, group, n_groups), np.nan)
    ok = np.isfinite(intercept)
    shift = np.nan_to_num(_group_median((intercept - line_of_group)[ok], trial_of_group[ok], len(post)))
    intercept = np.where(ok, intercept, line_of_group + shift[trial_of_group])
    width = np.repeat(n_lines, n)                                            # lines of each fixation's trial
    row, col = _rows(width)
    return r[row] - intercept[np.repeat(offset[trial], width) + col]


def _trend_likelihood_flat(distance: np.ndarray, n: np.ndarray, k: np.ndarray, power: float) -> np.ndarray:
    """:func:`trend_likelihood` of every trial at once; ``distance`` flat as :func:`_line_trends_flat` gives it.

    The same numbers: the nearest course per fixation is a minimum, the trial's median a sorted middle
    (:func:`_group_median`, NumPy's median), and every other step the same elementwise operation.
    """
    width = np.repeat(k, n)
    row = np.repeat(np.arange(len(width)), width)
    own = np.minimum.reduceat(np.abs(distance), np.cumsum(width) - width)
    trial_of_row = np.repeat(np.arange(len(n)), n)
    sd = np.clip(1.4826 * _group_median(own, trial_of_row, len(n)), 0.05, 0.5)
    return np.exp(-power * (distance ** 2 - own[row] ** 2) / (2 * sd[trial_of_row][row] ** 2))


def _row_sums(values: np.ndarray, width: np.ndarray) -> np.ndarray:
    """Sum of each row of flat ``values`` (row ``i`` has ``width[i]`` entries), as ``ndarray.sum(axis=1)`` of the
    rows' own (n, width) array gives it: rows of one width are summed together in one 2-D array."""
    out = np.empty(len(width))
    per_value = np.repeat(width, width)
    for w in np.unique(width):
        out[width == w] = values[per_value == w].reshape(-1, w).sum(axis=1)
    return out


def trend_likelihood(distance: np.ndarray, power: float) -> np.ndarray:
    """``N(distance; 0, sd) ** power`` up to a constant per fixation, (n, n_lines) float64.

    ``distance``: (n, n_lines) pitches, from :func:`line_trends`. ``sd`` = 1.4826 x the trial's median absolute
    distance of a fixation to its nearest course (a robust SD), clipped to 0.05-0.5 pitch.
    """
    if distance.size == 0:
        return np.ones_like(distance)
    own = np.abs(distance).min(axis=1)
    sd = float(np.clip(1.4826 * np.median(own), 0.05, 0.5))
    return np.exp(-power * (distance ** 2 - own[:, None] ** 2) / (2 * sd ** 2))


@lru_cache(maxsize=4)
def _decoder(path: str | None = None) -> dict | None:
    """The ensemble file's decoding parameters for :func:`decode` (None when it has none)."""
    blob = torch.load(path or WEIGHTS, map_location="cpu", weights_only=False)
    d = blob.get("decode")
    if not d:
        return None
    return {"transitions": np.asarray(d["transitions"], dtype=np.float64), "emission_power": float(d["emission_power"]),
            "trend_power": float(d.get("trend_power") or 0.0), "dx_edges": tuple(d["dx_edges"]),
            "dy_edges": tuple(d["dy_edges"]), "max_jump": int(d["max_jump"])}
