"""DIST network: fixations attend to the text's lines through cross-attention, and a pointer head scores
each line for each fixation; loading a weights file and the ensemble's per-fixation probabilities.

See :mod:`readgaze.models.dist` for the method.
"""

from __future__ import annotations

import math
from functools import lru_cache
from pathlib import Path

import numpy as np
import torch
from torch import Tensor, nn

from readgaze.kernels import cross_attention
from readgaze.models.dist.inputs import DEFAULT_VOTERS, N_FIXATION_FEATURES, N_LINE_FEATURES, LineBatch, collate

# The 4-member ensemble trained on simulation (experiments/train_dist.py).
ENSEMBLE_WEIGHTS = Path(__file__).with_name("weights") / "dist.pt"
# One member (d 32, 2 layers) distilled from the ensemble (experiments/distill_dist.py): the same lines on the gold
# and simulated checks of tests/test_dist_fast_paths.py for about a twentieth of the forward's work.
SMALL_WEIGHTS = ENSEMBLE_WEIGHTS.with_name("dist_small.pt")
# The default: one member of the same size trained directly on simulation, half of it the stress mix (drift that
# rises and recedes or tilts, return sweeps landing between lines, skipped and re-read lines, look-backs;
# experiments/train_dist.py --stress-share 0.5), with the decode and vote guard chosen by experiments/select_dist.py.
STRESS_WEIGHTS = ENSEMBLE_WEIGHTS.with_name("dist_stress.pt")
WEIGHTS = STRESS_WEIGHTS
WINDOW = 160  # fixations per training window; inference reads long trials in half-overlapping windows


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
        with the padding masks ``readgaze.kernels.cross_attention`` passes it: none when nothing is padded), in the same
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


@lru_cache(maxsize=4)
def load_ensemble(path: str | None = None) -> tuple[list[DISTAssigner], tuple[str, ...]]:
    """Load an ensemble file (default :data:`WEIGHTS`) on CPU, in eval mode; cached."""
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
