"""Triton kernels for :func:`readgaze.kernels.cross_attention`: band- and padding-masked FlashAttention, forward and
backward.

Forward (one program per ``BLOCK_M`` queries of one batch row and head): online softmax over ``BLOCK_N``-token tiles
of K and V, the mask computed inside each tile from the per-query band ``[start, end)`` and the key padding vector;
only the tiles between the lowest ``start`` and the highest ``end`` of the query block are visited, the rest are
skipped wholesale. It stores the output and the log-sum-exp of each row (base 2; 0 for a row allowed nothing).
Backward recomputes the probabilities from the log-sum-exp (FlashAttention-2): one kernel for dQ (a loop over the
query block's key tiles) and one for dK, dV (a loop over query blocks, skipping blocks whose band misses the key
tile). No ``n_fix x n_tok`` tensor exists anywhere. Softmax statistics and accumulators are float32.
Dropout multiplies the probabilities by a keep mask drawn with ``tl.rand`` (Philox) from one seed and the element's
(batch*head, query, token) index, so the two backward kernels regenerate the forward's mask instead of storing it.

Reference: Dao, T. (2023). FlashAttention-2. arXiv:2307.08691. The band bounds per query block are computed once in
PyTorch (:func:`_band_bounds`) and shared by the three kernels.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from readgaze.kernels._dispatch import interpreter_enabled

LOG2_E = 1.4426950408889634
# Fused multiply-add on, stated rather than left to Triton 3.9's default (which warns that it will flip in 3.10)
LAUNCH = {"enable_fp_fusion": True}


@triton.jit
def _dot(a, b, PRECISION: tl.constexpr):
    """``a @ b`` accumulated in float32; ``PRECISION="upcast"`` works around the interpreter's bfloat16 ``tl.dot``."""
    if PRECISION == "upcast":
        c = tl.dot(a.to(tl.float32), b.to(tl.float32))
    else:
        c = tl.dot(a, b, input_precision=PRECISION)
    return c


@triton.jit
def _scores(q, k, cols, row_start, row_end, KPM_ROW, N, qk_scale, HAS_KPM: tl.constexpr, PRECISION: tl.constexpr):
    """Scaled logits (base 2) of one tile, and the bool mask of the pairs allowed to attend."""
    s = _dot(q, tl.trans(k), PRECISION) * qk_scale
    allowed = (cols[None, :] >= row_start[:, None]) & (cols[None, :] < row_end[:, None])
    if HAS_KPM:
        real = tl.load(KPM_ROW + cols, mask=cols < N, other=0) != 0
        allowed = allowed & real[None, :]
    return s, allowed


@triton.jit
def _dropout_scale(x, seed, pid_bh, rows, cols, M, N, dropout_p):
    """``x`` times the dropout mask over ``1 - p``: Philox numbers keyed by (batch*head, query, token), so the
    backward regenerates exactly the mask of the forward."""
    offsets = (pid_bh * M + rows[:, None]) * N + cols[None, :]
    keep = tl.rand(seed, offsets) >= dropout_p
    return tl.where(keep, x / (1.0 - dropout_p), 0.0)


@triton.jit
def _forward_kernel(
    Q, K, V, O, LSE, START, END, BLOCK_LO, BLOCK_HI, KPM,  # noqa: E741 (the papers' Q, K, V, O)
    sqb, sqh, sqm, sqd, skb, skh, skn, skd, svb, svh, svn, svd, sob, soh, som, sod,
    H, M, N, D, n_query_blocks, qk_scale, dropout_p, seed,
    HAS_KPM: tl.constexpr, HAS_DROPOUT: tl.constexpr, PRECISION: tl.constexpr,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_D: tl.constexpr,
):
    pid_m = tl.program_id(0)
    pid_bh = tl.program_id(1)
    b = pid_bh // H
    h = pid_bh % H
    rows = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, BLOCK_D)
    row_ok = rows < M
    d_ok = offs_d < D
    q = tl.load(Q + b * sqb + h * sqh + rows[:, None] * sqm + offs_d[None, :] * sqd,
                mask=row_ok[:, None] & d_ok[None, :], other=0.0)
    row_start = tl.load(START + b * M + rows, mask=row_ok, other=0)
    row_end = tl.load(END + b * M + rows, mask=row_ok, other=0)
    lo = tl.load(BLOCK_LO + b * n_query_blocks + pid_m)
    hi = tl.load(BLOCK_HI + b * n_query_blocks + pid_m)
    lo = (lo // BLOCK_N) * BLOCK_N
    k_base = K + b * skb + h * skh
    v_base = V + b * svb + h * svh
    m_i = tl.full([BLOCK_M], float("-inf"), tl.float32)
    l_i = tl.zeros([BLOCK_M], tl.float32)
    acc = tl.zeros([BLOCK_M, BLOCK_D], tl.float32)
    for n0 in range(lo, hi, BLOCK_N):
        cols = n0 + offs_n
        tile_ok = (cols < N)[:, None] & d_ok[None, :]
        k = tl.load(k_base + cols[:, None] * skn + offs_d[None, :] * skd, mask=tile_ok, other=0.0)
        s, allowed = _scores(q, k, cols, row_start, row_end, KPM + b * N, N, qk_scale, HAS_KPM, PRECISION)
        s = tl.where(allowed, s, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, 1))
        m_safe = tl.where(m_new == float("-inf"), 0.0, m_new)  # a row with nothing allowed yet: avoid -inf - -inf
        alpha = tl.exp2(m_i - m_safe)
        p = tl.exp2(s - m_safe[:, None])
        l_i = l_i * alpha + tl.sum(p, 1)
        v = tl.load(v_base + cols[:, None] * svn + offs_d[None, :] * svd, mask=tile_ok, other=0.0)
        if HAS_DROPOUT:  # the normaliser l_i sums the probabilities before dropout, as softmax-then-dropout does
            p = _dropout_scale(p, seed, pid_bh, rows, cols, M, N, dropout_p)
        acc = acc * alpha[:, None] + _dot(p.to(v.dtype), v, PRECISION)
        m_i = m_new
    empty = l_i == 0.0
    l_safe = tl.where(empty, 1.0, l_i)
    out = acc / l_safe[:, None]
    tl.store(O + b * sob + h * soh + rows[:, None] * som + offs_d[None, :] * sod, out.to(O.dtype.element_ty),
             mask=row_ok[:, None] & d_ok[None, :])
    tl.store(LSE + pid_bh * M + rows, tl.where(empty, 0.0, m_i + tl.log2(l_safe)), mask=row_ok)


@triton.jit
def _backward_query_kernel(
    Q, K, V, DO, DQ, LSE, DELTA, START, END, BLOCK_LO, BLOCK_HI, KPM,
    sqb, sqh, sqm, sqd, skb, skh, skn, skd, svb, svh, svn, svd,
    sdob, sdoh, sdom, sdod, sdqb, sdqh, sdqm, sdqd,
    H, M, N, D, n_query_blocks, qk_scale, scale, dropout_p, seed,
    HAS_KPM: tl.constexpr, HAS_DROPOUT: tl.constexpr, PRECISION: tl.constexpr,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_D: tl.constexpr,
):
    pid_m = tl.program_id(0)
    pid_bh = tl.program_id(1)
    b = pid_bh // H
    h = pid_bh % H
    rows = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, BLOCK_D)
    row_ok = rows < M
    d_ok = offs_d < D
    qd_ok = row_ok[:, None] & d_ok[None, :]
    q = tl.load(Q + b * sqb + h * sqh + rows[:, None] * sqm + offs_d[None, :] * sqd, mask=qd_ok, other=0.0)
    do = tl.load(DO + b * sdob + h * sdoh + rows[:, None] * sdom + offs_d[None, :] * sdod, mask=qd_ok, other=0.0)
    lse = tl.load(LSE + pid_bh * M + rows, mask=row_ok, other=0.0)
    delta = tl.load(DELTA + pid_bh * M + rows, mask=row_ok, other=0.0)
    row_start = tl.load(START + b * M + rows, mask=row_ok, other=0)
    row_end = tl.load(END + b * M + rows, mask=row_ok, other=0)
    lo = tl.load(BLOCK_LO + b * n_query_blocks + pid_m)
    hi = tl.load(BLOCK_HI + b * n_query_blocks + pid_m)
    lo = (lo // BLOCK_N) * BLOCK_N
    k_base = K + b * skb + h * skh
    v_base = V + b * svb + h * svh
    dq = tl.zeros([BLOCK_M, BLOCK_D], tl.float32)
    for n0 in range(lo, hi, BLOCK_N):
        cols = n0 + offs_n
        tile_ok = (cols < N)[:, None] & d_ok[None, :]
        k = tl.load(k_base + cols[:, None] * skn + offs_d[None, :] * skd, mask=tile_ok, other=0.0)
        v = tl.load(v_base + cols[:, None] * svn + offs_d[None, :] * svd, mask=tile_ok, other=0.0)
        s, allowed = _scores(q, k, cols, row_start, row_end, KPM + b * N, N, qk_scale, HAS_KPM, PRECISION)
        p = tl.where(allowed, tl.exp2(s - lse[:, None]), 0.0)
        dp = _dot(do, tl.trans(v), PRECISION)
        if HAS_DROPOUT:
            dp = _dropout_scale(dp, seed, pid_bh, rows, cols, M, N, dropout_p)
        ds = p * (dp - delta[:, None])
        dq += _dot(ds.to(k.dtype), k, PRECISION)
    tl.store(DQ + b * sdqb + h * sdqh + rows[:, None] * sdqm + offs_d[None, :] * sdqd,
             (dq * scale).to(DQ.dtype.element_ty), mask=qd_ok)


@triton.jit
def _backward_key_kernel(
    Q, K, V, DO, DK, DV, LSE, DELTA, START, END, BLOCK_LO, BLOCK_HI, KPM,
    sqb, sqh, sqm, sqd, skb, skh, skn, skd, svb, svh, svn, svd, sdob, sdoh, sdom, sdod,
    H, M, N, D, n_query_blocks, qk_scale, scale, dropout_p, seed,
    HAS_KPM: tl.constexpr, HAS_DROPOUT: tl.constexpr, PRECISION: tl.constexpr,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_D: tl.constexpr,
):
    pid_n = tl.program_id(0)
    pid_bh = tl.program_id(1)
    b = pid_bh // H
    h = pid_bh % H
    tile_start = pid_n * BLOCK_N
    cols = tile_start + tl.arange(0, BLOCK_N)
    offs_m = tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, BLOCK_D)
    d_ok = offs_d < D
    tile_ok = (cols < N)[:, None] & d_ok[None, :]
    k = tl.load(K + b * skb + h * skh + cols[:, None] * skn + offs_d[None, :] * skd, mask=tile_ok, other=0.0)
    v = tl.load(V + b * svb + h * svh + cols[:, None] * svn + offs_d[None, :] * svd, mask=tile_ok, other=0.0)
    dk = tl.zeros([BLOCK_N, BLOCK_D], tl.float32)
    dv = tl.zeros([BLOCK_N, BLOCK_D], tl.float32)
    for block in range(0, n_query_blocks):
        lo = tl.load(BLOCK_LO + b * n_query_blocks + block)
        hi = tl.load(BLOCK_HI + b * n_query_blocks + block)
        if (lo < tile_start + BLOCK_N) & (hi > tile_start):  # else no query of the block may see this tile
            rows = block * BLOCK_M + offs_m
            row_ok = rows < M
            qd_ok = row_ok[:, None] & d_ok[None, :]
            q = tl.load(Q + b * sqb + h * sqh + rows[:, None] * sqm + offs_d[None, :] * sqd, mask=qd_ok, other=0.0)
            do = tl.load(DO + b * sdob + h * sdoh + rows[:, None] * sdom + offs_d[None, :] * sdod,
                         mask=qd_ok, other=0.0)
            lse = tl.load(LSE + pid_bh * M + rows, mask=row_ok, other=0.0)
            delta = tl.load(DELTA + pid_bh * M + rows, mask=row_ok, other=0.0)
            row_start = tl.load(START + b * M + rows, mask=row_ok, other=0)
            row_end = tl.load(END + b * M + rows, mask=row_ok, other=0)
            s, allowed = _scores(q, k, cols, row_start, row_end, KPM + b * N, N, qk_scale, HAS_KPM, PRECISION)
            p = tl.where(allowed, tl.exp2(s - lse[:, None]), 0.0)
            if HAS_DROPOUT:
                dv += _dot(tl.trans(_dropout_scale(p, seed, pid_bh, rows, cols, M, N, dropout_p).to(do.dtype)), do,
                           PRECISION)
            else:
                dv += _dot(tl.trans(p.to(do.dtype)), do, PRECISION)
            dp = _dot(do, tl.trans(v), PRECISION)
            if HAS_DROPOUT:
                dp = _dropout_scale(dp, seed, pid_bh, rows, cols, M, N, dropout_p)
            ds = p * (dp - delta[:, None])
            dk += _dot(tl.trans(ds.to(q.dtype)), q, PRECISION)
    # dK and dV are allocated contiguous (batch, heads, n_tok, d)
    out = pid_bh * N * D + cols[:, None] * D + offs_d[None, :]
    tl.store(DK + out, (dk * scale).to(DK.dtype.element_ty), mask=tile_ok)
    tl.store(DV + out, dv.to(DV.dtype.element_ty), mask=tile_ok)


def _block_sizes(d: int, device: torch.device) -> tuple[int, int, int]:
    """(BLOCK_M, BLOCK_N, BLOCK_D): 64 x 64 tiles on a GPU (16 under the interpreter, to exercise many tiles)."""
    block_d = max(16, triton.next_power_of_2(d))
    if device.type != "cuda" or interpreter_enabled():
        return 16, 16, block_d
    return (64, 64, block_d) if block_d <= 64 else (64, 32, block_d)


def _band_bounds(key_padding_mask, allowed, batch, n_fix, n_tok, block_m, device):
    """Per-row band ``[start, end)`` and per-query-block bounds ``[lo, hi)``, all int32, tightened by the padding.

    A row's band is clipped to ``[0, n_tok]`` and to the span from the first to the last real token; a row allowed
    nothing gets ``start = n_tok, end = 0`` so it widens no block bound. A block's ``lo``/``hi`` is the min start
    and max end of its rows (``lo >= hi``: the block sees nothing and every tile is skipped).
    """
    if allowed is None:
        start = torch.zeros(batch, n_fix, dtype=torch.int64, device=device)
        end = torch.full((batch, n_fix), n_tok, dtype=torch.int64, device=device)
    else:
        start, end = (bound.clamp(0, n_tok) for bound in allowed)
    if key_padding_mask is not None:
        token = torch.arange(n_tok, device=device)
        first_real = torch.where(key_padding_mask, token, n_tok).amin(dim=1, keepdim=True)
        last_real = torch.where(key_padding_mask, token + 1, 0).amax(dim=1, keepdim=True)
        start, end = torch.maximum(start, first_real), torch.minimum(end, last_real)
    empty = end <= start
    start = torch.where(empty, n_tok, start)
    end = torch.where(empty, 0, end)
    n_blocks = triton.cdiv(n_fix, block_m)
    pad = n_blocks * block_m - n_fix
    lo = torch.nn.functional.pad(start, (0, pad), value=n_tok).view(batch, n_blocks, block_m).amin(dim=2)
    hi = torch.nn.functional.pad(end, (0, pad), value=0).view(batch, n_blocks, block_m).amax(dim=2)
    as_int = lambda t: t.to(torch.int32).contiguous()  # noqa: E731
    return as_int(start), as_int(end), as_int(lo), as_int(hi), n_blocks


def _precision(dtype: torch.dtype) -> str:
    """float32 dots in full precision unless PyTorch itself allows TF32 matmuls; 16-bit dots are exact anyway.

    Triton 3.9's interpreter reads bfloat16 ``tl.dot`` operands as garbage (checked on CPU: errors ~1e10), so under
    the interpreter bfloat16 operands are converted to float32 first; float32 accumulation is what the GPU does too.
    """
    if dtype == torch.bfloat16 and interpreter_enabled():
        return "upcast"
    if dtype == torch.float32 and not torch.backends.cuda.matmul.allow_tf32:
        return "ieee"
    return "tf32"


class _CrossAttention(torch.autograd.Function):
    @staticmethod
    def forward(ctx, q, k, v, kpm, start, end, lo, hi, n_blocks, scale, dropout_p, seed, blocks):
        batch, heads, n_fix, d = q.shape
        n_tok = k.shape[2]
        block_m, block_n, block_d = blocks
        out = torch.empty(batch, heads, n_fix, d, dtype=q.dtype, device=q.device)
        lse = torch.empty(batch, heads, n_fix, dtype=torch.float32, device=q.device)
        has_kpm = kpm is not None
        kpm_arg = kpm if has_kpm else start  # never read when HAS_KPM is False
        _forward_kernel[(n_blocks, batch * heads)](
            q, k, v, out, lse, start, end, lo, hi, kpm_arg,
            *q.stride(), *k.stride(), *v.stride(), *out.stride(),
            heads, n_fix, n_tok, d, n_blocks, scale * LOG2_E, dropout_p, seed,
            HAS_KPM=has_kpm, HAS_DROPOUT=dropout_p > 0, PRECISION=_precision(q.dtype), BLOCK_M=block_m,
            BLOCK_N=block_n, BLOCK_D=block_d, **LAUNCH,
        )
        ctx.save_for_backward(q, k, v, out, lse, kpm, start, end, lo, hi)
        ctx.n_blocks, ctx.scale, ctx.blocks = n_blocks, scale, blocks
        ctx.dropout_p, ctx.seed = dropout_p, seed
        return out

    @staticmethod
    def backward(ctx, grad_out):
        q, k, v, out, lse, kpm, start, end, lo, hi = ctx.saved_tensors
        batch, heads, n_fix, d = q.shape
        n_tok = k.shape[2]
        block_m, block_n, block_d = ctx.blocks
        delta = (grad_out.float() * out.float()).sum(dim=-1).contiguous()  # (batch, heads, n_fix): rowsum(dO * O)
        grad_q = torch.empty(batch, heads, n_fix, d, dtype=q.dtype, device=q.device)
        grad_k = torch.empty(batch, heads, n_tok, d, dtype=k.dtype, device=k.device)
        grad_v = torch.empty(batch, heads, n_tok, d, dtype=v.dtype, device=v.device)
        has_kpm = kpm is not None
        common = dict(HAS_KPM=has_kpm, HAS_DROPOUT=ctx.dropout_p > 0, PRECISION=_precision(q.dtype), BLOCK_M=block_m,
                      BLOCK_N=block_n, BLOCK_D=block_d)
        kpm_arg = kpm if has_kpm else start
        qk_scale = ctx.scale * LOG2_E
        _backward_query_kernel[(ctx.n_blocks, batch * heads)](
            q, k, v, grad_out, grad_q, lse, delta, start, end, lo, hi, kpm_arg,
            *q.stride(), *k.stride(), *v.stride(), *grad_out.stride(), *grad_q.stride(),
            heads, n_fix, n_tok, d, ctx.n_blocks, qk_scale, ctx.scale, ctx.dropout_p, ctx.seed, **common, **LAUNCH,
        )
        _backward_key_kernel[(triton.cdiv(n_tok, block_n), batch * heads)](
            q, k, v, grad_out, grad_k, grad_v, lse, delta, start, end, lo, hi, kpm_arg,
            *q.stride(), *k.stride(), *v.stride(), *grad_out.stride(),
            heads, n_fix, n_tok, d, ctx.n_blocks, qk_scale, ctx.scale, ctx.dropout_p, ctx.seed, **common, **LAUNCH,
        )
        return grad_q, grad_k, grad_v, None, None, None, None, None, None, None, None, None, None


def triton_cross_attention(q, k, v, key_padding_mask, allowed, scale, dropout_p=0.0, seed=None, blocks=None):
    """Run the Triton kernels; same contract as :func:`readgaze.kernels.cross_attention` (inputs already checked).

    ``seed``: the dropout seed; default drawn from torch's CPU generator (so ``torch.manual_seed`` reproduces a run).
    ``blocks``: optional ``(BLOCK_M, BLOCK_N, BLOCK_D)`` override, for tests.
    """
    if dropout_p > 0 and seed is None:
        seed = int(torch.randint(0, 2**31 - 1, ()).item())
    batch, _, n_fix, d = q.shape
    n_tok = k.shape[2]
    if n_fix == 0 or n_tok == 0 or batch == 0 or q.shape[1] == 0:
        return q.new_zeros(q.shape) + 0 * (q.sum() + k.sum() + v.sum())  # keeps the graph; nothing to attend
    blocks = blocks or _block_sizes(d, q.device)
    start, end, lo, hi, n_blocks = _band_bounds(key_padding_mask, allowed, batch, n_fix, n_tok, blocks[0], q.device)
    kpm = key_padding_mask.to(torch.int8).contiguous() if key_padding_mask is not None else None
    return _CrossAttention.apply(q, k, v, kpm, start, end, lo, hi, n_blocks, float(scale), float(dropout_p),
                                 seed or 0, blocks)


@triton.jit
def _keep_mask_kernel(OUT, seed, M, N, dropout_p, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    pid_bh = tl.program_id(2)
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    kept = _dropout_scale(tl.full([BLOCK_M, BLOCK_N], 1.0 - dropout_p, tl.float32), seed, pid_bh, rows, cols, M, N,
                          dropout_p)
    inside = (rows < M)[:, None] & (cols < N)[None, :]
    tl.store(OUT + (pid_bh * M + rows[:, None]) * N + cols[None, :], kept, mask=inside)


def dropout_keep_mask(batch, heads, n_fix, n_tok, dropout_p, seed, device):
    """The dropout mask the kernels draw for ``seed``: dense float ``(batch, heads, n_fix, n_tok)`` of 0/1 (tests)."""
    out = torch.empty(batch, heads, n_fix, n_tok, dtype=torch.float32, device=device)
    grid = (triton.cdiv(n_fix, 16), triton.cdiv(n_tok, 16), batch * heads)
    _keep_mask_kernel[grid](out, seed, n_fix, n_tok, float(dropout_p), BLOCK_M=16, BLOCK_N=16, **LAUNCH)
    return out
