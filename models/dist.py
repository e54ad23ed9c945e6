"""DIST-style learned line assigner: fixations attend to the text's lines, then point at one.

Reference: Mercier, T. M., Budka, M., Vasilev, M. R., Kirkby, J. A., Angele, B., & Slattery, T. J. (2024).
Dual input stream transformer for vertical drift correction in eye-tracking reading data. *IEEE TPAMI*.
arXiv:2311.06095.

Idea. DIST labels every fixation of a trial with a line by a transformer over two input streams: the fixation
sequence and a picture of the page. We keep the two streams and the per-fixation labelling, and change three
things. (1) The page is given as **layout tokens**, one per text line (its vertical position in line pitches,
its rank, its horizontal extent), instead of a rendered image whose ImageNet encoder cannot be fetched offline.
(2) Fixations reach the lines by **cross-attention** (``kernels.cross_attention``) between self-attention layers
over the fixation sequence, and the head is a **pointer**: the logit of line ``l`` for fixation ``f`` is a score
between the two streams, so any number of lines and fixations works (DIST: at most 16 lines, 500 fixations).
(3) As DIST's optional "wisdom of crowds" input, the lines chosen by a few classical algorithms enter as
per-fixation, per-line indicators whose weight the model sets per fixation (a learned, context-dependent vote).

Inputs per fixation (DIST's x, y and line-overlap, plus order and saccades), with ``P`` the line pitch:
``x`` scaled to the trial's horizontal extent, ``y`` in pitches from the first midline, the line-overlap index
(the line whose band ``midline ± P/2`` holds ``y``, -1 if none) and an in-band flag, the relative order,
``dx``/``dy`` to the previous and next fixation. Duration is not used (as in DIST).

Loss: cross-entropy over the trial's lines. DIST's ordinal CORN loss needs a fixed number of classes (16) on
a global rank scale; with a pointer head the classes are the trial's own line tokens, so cross-entropy applies
directly and no line limit is needed. We did not train an ordinal variant for comparison; what ordinal losses
buy (errors to the neighbouring line are cheaper) comes here from the line tokens' positions and the votes.

Decoding. The members label each fixation from its context, but nothing ties neighbouring labels together. As in
the hidden-Markov view of reading (a reader stays on a line, moves to the next one after a return sweep and jumps
elsewhere rarely; e.g. Cohen 2013's FixAlign run rule), the ensemble's per-fixation probabilities are taken as
(tempered) emissions of an input-output HMM over lines whose transition probabilities ``P(line change | saccade)``
depend on the incoming saccade's dx (in text widths) and dy (in pitches). The table is counted on simulated
trials, the temper ``emission_power`` chosen on simulated validation trials (``experiments/train_dist.py
--decode``); each fixation gets the line of highest posterior (forward-backward). A second pass then fits each
line's course through the trial's drift to the first pass's lines (one slope per trial, one intercept per line,
as Cohen's 2013 parallel regression lines), multiplies the emissions by a Gaussian likelihood of each fixation's
distance to each course (``trend_power``, also chosen on simulation) and decodes again.

Training data: simulation only (``readgaze.simulate.simulate_line_trials``); ``experiments/train_dist.py``
trains a small ensemble (4 members, d 64, 3 layers) whose weights ship in ``models/weights/dist.pt``
(:data:`ENSEMBLE_WEIGHTS`).

Default weights. ``dist`` runs :data:`WEIGHTS` = ``models/weights/dist_small.pt``: one member (d 32, 2 layers,
about 1/20 of the ensemble's parameters and forward work) distilled from the ensemble's per-fixation
probabilities (Hinton, Vinyals & Dean 2015, "Distilling the knowledge in a neural network"), on the ensemble's
simulated training trials only (``experiments/distill_dist.py``); it keeps the ensemble's voters and decoding
table. It gives exactly the ensemble's lines on Carr et al.'s 24 gold trials and on the simulated checks of
``tests/test_lines_speed_dist.py``. Pass ``weights=ENSEMBLE_WEIGHTS`` for the 4-member ensemble (about 4x slower
end to end).
"""

from __future__ import annotations

import math
import os
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import numpy as np
import torch
from numba import njit
from torch import Tensor, nn

from kernels import cross_attention

N_FIXATION_FEATURES = 10
N_LINE_FEATURES = 5
# The crowd (slice, cluster with k-means++, warp), its majority vote, and cheap methods that fail differently.
# regress, stretch and merge (tens of ms per trial: numerical optimisation) are left out for speed.
DEFAULT_VOTERS = ("slice", "cluster", "warp", "vote", "chain", "segment", "split", "attach")
CROWD = ("slice", "cluster", "warp")
# The 4-member ensemble trained on simulation (experiments/train_dist.py).
ENSEMBLE_WEIGHTS = Path(__file__).with_name("weights") / "dist.pt"
# The default: one member (d 32, 2 layers) distilled from the ensemble (experiments/distill_dist.py): the same lines
# on the gold and simulated checks of tests/test_lines_speed_dist.py for about a twentieth of the forward's work.
SMALL_WEIGHTS = ENSEMBLE_WEIGHTS.with_name("dist_small.pt")
WEIGHTS = SMALL_WEIGHTS
WINDOW = 160  # fixations per training window; inference reads long trials in half-overlapping windows
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
    from readgaze.lines import _assign, _checked, majority

    trials = _checked([(np.asarray(xy, dtype=np.float64).reshape(-1, 2), ly, wxy, wl) for xy, ly, wxy, wl in trials])

    def assign_trials(trials, name):                         # the trials are validated once, not once per method
        return _assign(trials, name, {}, validated=True)
    if len(methods) == 0:
        return [np.zeros((len(t[0]), 0), dtype=np.int64) for t in trials]
    columns = {}
    for name in methods:
        if name == "vote" and all(c in methods for c in CROWD):
            continue                                     # the crowd's majority, from its members' columns below
        if name in ("warp", "compare", "vote"):
            has_words = [k for k, t in enumerate(trials) if t[2] is not None]
            lines = assign_trials(trials, "attach") if len(has_words) < len(trials) else [None] * len(trials)
            for k, got in zip(has_words, assign_trials([trials[k] for k in has_words], name)):
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


class FusionLayer(nn.Module):
    """Self-attention over fixations, then cross-attention from fixations to line tokens, then a feed-forward."""

    def __init__(self, d_model: int, n_heads: int, dropout: float) -> None:
        super().__init__()
        self.n_heads = n_heads
        self.self_attn = nn.MultiheadAttention(d_model, n_heads, dropout=dropout, batch_first=True)
        self.q = nn.Linear(d_model, d_model)
        self.kv = nn.Linear(d_model, 2 * d_model)
        self.out = nn.Linear(d_model, d_model)
        self.ff = nn.Sequential(nn.Linear(d_model, 2 * d_model), nn.GELU(), nn.Linear(2 * d_model, d_model))
        self.norms = nn.ModuleList(nn.LayerNorm(d_model) for _ in range(3))
        self.dropout = nn.Dropout(dropout)
        self.p = dropout

    def forward(self, h: Tensor, h_mask: Tensor, lines: Tensor, line_mask: Tensor) -> Tensor:
        b, f, d = h.shape
        heads = lambda t: t.view(b, -1, self.n_heads, d // self.n_heads).transpose(1, 2)  # noqa: E731
        # Self-attention with nn.MultiheadAttention's weights, through the same attention op as the lines
        # (MultiheadAttention's CPU inference path with a padding mask spends most of its time in a masked
        # softmax: about 45 % of the ensemble's time).
        q, k, v = nn.functional.linear(self.norms[0](h), self.self_attn.in_proj_weight,
                                       self.self_attn.in_proj_bias).chunk(3, dim=-1)                 # B F D each
        att = cross_attention(heads(q), heads(k), heads(v), key_padding_mask=h_mask,
                              dropout_p=self.p if self.training else 0.0)      # B H F D/H
        h = h + self.dropout(self.self_attn.out_proj(att.transpose(1, 2).reshape(b, f, d)))       # B F D
        k, v = self.kv(lines).chunk(2, dim=-1)                                              # B L D each
        att = cross_attention(heads(self.q(self.norms[1](h))), heads(k), heads(v), key_padding_mask=line_mask,
                              dropout_p=self.p if self.training else 0.0)                  # B H F D/H
        h = h + self.dropout(self.out(att.transpose(1, 2).reshape(b, f, d)))                # B F D
        return h + self.dropout(self.ff(self.norms[2](h)))


class DISTAssigner(nn.Module):
    """Per-fixation line pointer over layout tokens.

    Legend: B trials, F fixations, L lines, M voting methods, D hidden size.

    ::

        fixation features (B,F,10) ─ Linear ─┐                  line features (B,L,5) ─ MLP ─ line tokens (B,L,D)
              + sinusoidal order             │                                              │
                                             ▼                                              │
                 [ self-attn(fixations) → cross-attn(fixations → lines) → FFN ] × n_layers ◄┘
                                             │ (B,F,D)
              pointer: q(h)·k(lines)/√D  +  Σ_m gate_m(h)·vote_m  ─►  logits (B,F,L), padded lines = -inf

    Parameters
    ----------
    d_model : int
        Hidden size D (DIST: 512; 64 is enough here and keeps the shipped ensemble < 10 MB).
    n_heads : int
        Attention heads (DIST: 8).
    n_layers : int
        Fusion layers (DIST: 4 BERT layers over the concatenated streams).
    n_voters : int
        Number of classical methods whose choices enter as votes (0 disables the vote input).
    dropout : float
        Dropout in attention and feed-forward (DIST: 0.1).
    """

    def __init__(self, d_model: int = 64, n_heads: int = 4, n_layers: int = 3, n_voters: int = len(DEFAULT_VOTERS),
                 dropout: float = 0.1) -> None:
        super().__init__()
        self.fix_in = nn.Linear(N_FIXATION_FEATURES, d_model)
        self.line_in = nn.Sequential(nn.Linear(N_LINE_FEATURES, d_model), nn.GELU(), nn.Linear(d_model, d_model))
        self.layers = nn.ModuleList(FusionLayer(d_model, n_heads, dropout) for _ in range(n_layers))
        self.norm = nn.LayerNorm(d_model)
        self.query = nn.Linear(d_model, d_model)
        self.key = nn.Linear(d_model, d_model)
        self.gate = nn.Linear(d_model, max(n_voters, 1))
        self.n_voters = n_voters
        self.d_model = d_model

    def forward(self, batch: LineBatch) -> Tensor:
        """Return line logits (B, F, L), float32; padded lines get -inf."""
        h = self.fix_in(batch.fixation_features) + _sinusoid(batch.position, self.d_model)          # B F D
        lines = self.line_in(batch.line_features)                                       # B L D
        for layer in self.layers:
            h = layer(h, batch.fixation_mask, lines, batch.line_mask)                    # B F D
        h = self.norm(h)
        logits = torch.einsum("bfd,bld->bfl", self.query(h), self.key(lines)) / math.sqrt(self.d_model)
        if self.n_voters:
            logits = logits + torch.einsum("bflm,bfm->bfl", batch.votes, self.gate(h))  # B F L
        return logits.masked_fill(~batch.line_mask[:, None, :], float("-inf"))

    def infer(self, batch: LineBatch) -> Tensor:
        """:meth:`forward` in eval mode, bit for bit, without the per-module call overhead (for inference).

        The same functional ops on the same weights (linear, layer norm, GELU, ``scaled_dot_product_attention``
        with the padding masks ``kernels.cross_attention`` passes it: none when nothing is padded), in the same
        order; only the ``nn.Module`` dispatch, the dropout no-ops and the input checks are skipped.
        """
        if not (bool(batch.fixation_mask.any(dim=1).all()) and bool(batch.line_mask.any(dim=1).all())):
            return self.forward(batch)       # a window with no fixation or no line: cross_attention's dense path
        b, f, _ = batch.fixation_features.shape
        d = self.d_model
        scale = 1.0 / math.sqrt(d // self.layers[0].n_heads) if len(self.layers) else 1.0
        attention = lambda q, k, v, mask: nn.functional.scaled_dot_product_attention(  # noqa: E731
            q, k, v, attn_mask=mask, scale=scale)
        linear = lambda x, m: nn.functional.linear(x, m.weight, m.bias)                      # noqa: E731
        norm = lambda x, m: nn.functional.layer_norm(x, (d,), m.weight, m.bias, m.eps)          # noqa: E731
        h = linear(batch.fixation_features, self.fix_in) + _sinusoid_table(int(batch.position.max()) + 1, d)[
            batch.position]                                                                     # B F D
        lines = linear(nn.functional.gelu(linear(batch.line_features, self.line_in[0])), self.line_in[2])  # B L D
        fix_mask = None if bool(batch.fixation_mask.all()) else batch.fixation_mask[:, None, None, :]
        line_mask = None if bool(batch.line_mask.all()) else batch.line_mask[:, None, None, :]
        for layer in self.layers:
            heads = lambda t: t.view(b, -1, layer.n_heads, d // layer.n_heads).transpose(1, 2)  # noqa: E731
            q, k, v = nn.functional.linear(norm(h, layer.norms[0]), layer.self_attn.in_proj_weight,
                                           layer.self_attn.in_proj_bias).chunk(3, dim=-1)
            att = attention(heads(q), heads(k), heads(v), fix_mask)                # B H F D/H
            h = h + linear(att.transpose(1, 2).reshape(b, f, d), layer.self_attn.out_proj)
            k, v = linear(lines, layer.kv).chunk(2, dim=-1)
            att = attention(heads(linear(norm(h, layer.norms[1]), layer.q)), heads(k), heads(v), line_mask)
            h = h + linear(att.transpose(1, 2).reshape(b, f, d), layer.out)
            h = h + linear(nn.functional.gelu(linear(norm(h, layer.norms[2]), layer.ff[0])), layer.ff[2])
        h = norm(h, self.norm)
        logits = torch.einsum("bfd,bld->bfl", linear(h, self.query), linear(lines, self.key)) / math.sqrt(d)
        if self.n_voters:
            logits = logits + torch.einsum("bflm,bfm->bfl", batch.votes, linear(h, self.gate))
        return logits.masked_fill(~batch.line_mask[:, None, :], float("-inf"))


_SINUSOIDS: dict = {}


def _sinusoid_table(n: int, d: int) -> Tensor:
    """:func:`_sinusoid` of positions ``0..N-1`` (N >= n, a power of two), (N, d), cached; a row is the encoding
    of its position bit for bit (the same elementwise ops; tested)."""
    size = 1 << max(int(n) - 1, 1).bit_length()
    table = _SINUSOIDS.get(d)
    if table is None or len(table) < size:
        table = _SINUSOIDS[d] = _sinusoid(torch.arange(size)[None, :], d)[0]
    return table


def _sinusoid(position: Tensor, d: int) -> Tensor:
    """Sinusoidal encoding (Vaswani et al. 2017) of integer positions (B, F) -> (B, F, d)."""
    freq = torch.exp(torch.arange(0, d, 2, device=position.device, dtype=torch.float32) * (-math.log(10000.0) / d))
    angle = position.float()[..., None] * freq                                                   # B F d/2
    return torch.stack([angle.sin(), angle.cos()], dim=-1).flatten(-2)


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


@lru_cache(maxsize=4)
def load_ensemble(path: str | None = None) -> tuple[list[DISTAssigner], tuple[str, ...]]:
    """Load an ensemble file (default :data:`WEIGHTS`, the distilled one-member file) on CPU, in eval mode; cached."""
    blob = torch.load(path or WEIGHTS, map_location="cpu", weights_only=False)
    members = []
    for state in blob["members"]:
        m = DISTAssigner(**blob["config"])
        m.load_state_dict(state)
        members.append(m.eval())
    return members, tuple(blob["voters"])


@torch.no_grad()
def predict_proba(members: list[DISTAssigner], trials: list, batch_size: int = 16,
                  window: int | None = WINDOW) -> list[np.ndarray]:
    """Line probabilities per fixation for prepared trials, (n_fixations, n_lines) float64 per trial.

    The members' softmax outputs are averaged. Trials longer than ``window`` fixations are read in windows of
    that length overlapping by half (as the members were trained on windows); each fixation averages the
    windows that hold it. ``window=None`` reads every trial whole. Windows are batched by length, so a batch
    pads little.
    """
    pieces = []                                                    # (trial number, start, cropped trial)
    for i, (fix, lines, votes, *_rest) in enumerate(trials):
        n = len(fix)
        starts = [0] if window is None or n <= window else sorted(
            {*range(0, n - window + 1, window // 2), n - window})
        w = n if window is None else window
        pieces += [(i, s, (fix[s:s + w], lines, votes[s:s + w], None, s)) for s in starts]
    pieces.sort(key=lambda c: len(c[2][0]))                         # similar lengths together: less padding
    prob_sum = [np.zeros((len(t[0]), len(t[1]))) for t in trials]
    for j in range(0, len(pieces), batch_size):
        chunk = pieces[j:j + batch_size]
        batch = collate([c[2] for c in chunk])
        prob = (sum(torch.softmax(m(batch) if m.training else m.infer(batch), dim=-1) for m in members)
                / len(members)).numpy()                                                       # B F L
        for b, (i, start, piece) in enumerate(chunk):
            n, k = len(piece[0]), len(piece[1])
            prob_sum[i][start:start + n] += prob[b, :n, :k]
    return [p / np.maximum(p.sum(axis=1, keepdims=True), 1e-12) for p in prob_sum]


def predict_lines(members: list[DISTAssigner], trials: list, batch_size: int = 16,
                  window: int | None = WINDOW) -> list[np.ndarray]:
    """Line per fixation for prepared trials: the argmax of :func:`predict_proba`."""
    return [p.argmax(-1) if len(p) else np.zeros(0, np.int64)
            for p in predict_proba(members, trials, batch_size, window)]


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


assign_trial.assign_many = assign_trials  # readgaze.lines.assign_lines batches the trials of a frame through this
