"""Triton kernels for :func:`readgaze.kernels.segment_pool`: deterministic segment sum, mean and max, forward and
backward.

Forward: one program per ``(BLOCK_S segments, batch row, BLOCK_D features)`` streams over the rows in tiles and
folds in the rows whose segment index falls in its block: ``sum``/``mean`` as a one-hot ``tl.dot`` (float32, full
precision), ``max`` as a masked maximum that also counts the rows tied at the maximum (for the backward). No
atomics, so the result does not depend on scheduling, unlike ``scatter_add`` on CUDA.
Backward: one program per tile of rows gathers the gradient of each row's segment (divided by the row count for
``mean``; for ``max`` only rows equal to the maximum, divided by the tie count, as ``torch.scatter_reduce`` does).
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from readgaze.kernels._dispatch import interpreter_enabled
from readgaze.kernels._triton_attention import LAUNCH

_REDUCE_CODE = {"sum": 0, "mean": 1, "max": 2}


@triton.jit
def _pool_forward_kernel(
    VALUES, IDS, OUT, COUNT, TIES, N, S, D, svb, svn, svd,
    REDUCE: tl.constexpr, BLOCK_S: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_D: tl.constexpr,
):
    pid_s = tl.program_id(0)
    b = tl.program_id(1)
    pid_d = tl.program_id(2)
    segs = pid_s * BLOCK_S + tl.arange(0, BLOCK_S)
    offs_d = pid_d * BLOCK_D + tl.arange(0, BLOCK_D)
    offs_n = tl.arange(0, BLOCK_N)
    d_ok = offs_d < D
    if REDUCE == 2:
        acc = tl.full([BLOCK_S, BLOCK_D], float("-inf"), tl.float32)
        ties = tl.zeros([BLOCK_S, BLOCK_D], tl.int32)
    else:
        acc = tl.zeros([BLOCK_S, BLOCK_D], tl.float32)
        count = tl.zeros([BLOCK_S], tl.float32)
    for n0 in range(0, N, BLOCK_N):
        rows = n0 + offs_n
        ids = tl.load(IDS + b * N + rows, mask=rows < N, other=-1)
        x = tl.load(VALUES + b * svb + rows[:, None] * svn + offs_d[None, :] * svd,
                    mask=(rows < N)[:, None] & d_ok[None, :], other=0.0).to(tl.float32)
        member = ids[None, :] == segs[:, None]  # (BLOCK_S, BLOCK_N)
        if REDUCE == 2:
            hit = member[:, :, None]
            candidates = tl.where(hit, x[None, :, :], float("-inf"))  # (BLOCK_S, BLOCK_N, BLOCK_D)
            tile_max = tl.max(candidates, 1)
            tile_ties = tl.sum((hit & (candidates == tile_max[:, None, :])).to(tl.int32), 1)
            new_max = tl.maximum(acc, tile_max)
            ties = tl.where(acc == new_max, ties, 0) + tl.where(tile_max == new_max, tile_ties, 0)
            acc = new_max
        else:
            acc += tl.dot(member.to(tl.float32), x, input_precision="ieee")
            count += tl.sum(member.to(tl.float32), 1)
    seg_ok = segs < S
    out_at = b * S * D + segs[:, None] * D + offs_d[None, :]
    out_ok = seg_ok[:, None] & d_ok[None, :]
    if REDUCE == 2:
        acc = tl.where(ties > 0, acc, 0.0)  # an empty segment gives 0
        tl.store(TIES + out_at, ties, mask=out_ok)
    else:
        if REDUCE == 1:
            acc = acc / tl.maximum(count, 1.0)[:, None]
        if pid_d == 0:
            tl.store(COUNT + b * S + segs, count, mask=seg_ok)
    tl.store(OUT + out_at, acc.to(OUT.dtype.element_ty), mask=out_ok)


@triton.jit
def _pool_backward_kernel(
    GRAD_OUT, VALUES, IDS, OUT, COUNT, TIES, GRAD_VALUES, N, S, D, svb, svn, svd, sgb, sgs, sgd,
    REDUCE: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_D: tl.constexpr,
):
    pid_n = tl.program_id(0)
    b = tl.program_id(1)
    pid_d = tl.program_id(2)
    rows = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_d = pid_d * BLOCK_D + tl.arange(0, BLOCK_D)
    row_ok = rows < N
    d_ok = offs_d < D
    ids = tl.load(IDS + b * N + rows, mask=row_ok, other=-1)
    pooled = (ids >= 0)[:, None] & d_ok[None, :]
    seg = tl.where(ids >= 0, ids, 0)
    grad = tl.load(GRAD_OUT + b * sgb + seg[:, None] * sgs + offs_d[None, :] * sgd, mask=pooled, other=0.0)
    grad = grad.to(tl.float32)
    if REDUCE == 1:
        count = tl.load(COUNT + b * S + seg, mask=ids >= 0, other=1.0)
        grad = grad / count[:, None]
    if REDUCE == 2:
        at = b * S * D + seg[:, None] * D + offs_d[None, :]
        best = tl.load(OUT + at, mask=pooled, other=0.0)
        ties = tl.load(TIES + at, mask=pooled, other=1)
        x = tl.load(VALUES + b * svb + rows[:, None] * svn + offs_d[None, :] * svd, mask=pooled, other=0.0)
        grad = tl.where(x == best, grad / ties.to(tl.float32), 0.0)
    grad = tl.where(pooled, grad, 0.0)
    tl.store(GRAD_VALUES + b * N * D + rows[:, None] * D + offs_d[None, :], grad.to(GRAD_VALUES.dtype.element_ty),
             mask=row_ok[:, None] & d_ok[None, :])


def _blocks(d: int, reduce: str, device: torch.device) -> tuple[int, int, int]:
    """(BLOCK_S, BLOCK_N, BLOCK_D); the max reduction holds a (BLOCK_S, BLOCK_N, BLOCK_D) tile, so it stays small."""
    block_d = min(64, max(16, triton.next_power_of_2(d)))
    if reduce == "max":
        return 16, 16, min(block_d, 32)
    if device.type != "cuda" or interpreter_enabled():
        return 16, 16, block_d
    return 32, 64, block_d


class _SegmentPool(torch.autograd.Function):
    @staticmethod
    def forward(ctx, values, segment_ids, n_segments, reduce):
        batch, n, d = values.shape
        block_s, block_n, block_d = _blocks(d, reduce, values.device)
        ids = segment_ids.contiguous()
        out = torch.empty(batch, n_segments, d, dtype=values.dtype, device=values.device)
        count = torch.empty(batch, n_segments, dtype=torch.float32, device=values.device)
        ties = torch.empty(batch, n_segments, d, dtype=torch.int32, device=values.device) if reduce == "max" else count
        grid = (triton.cdiv(n_segments, block_s), batch, triton.cdiv(d, block_d))
        _pool_forward_kernel[grid](
            values, ids, out, count, ties, n, n_segments, d, *values.stride(),
            REDUCE=_REDUCE_CODE[reduce], BLOCK_S=block_s, BLOCK_N=block_n, BLOCK_D=block_d, **LAUNCH,
        )
        ctx.save_for_backward(values, ids, out, count, ties)
        ctx.reduce = reduce
        return out

    @staticmethod
    def backward(ctx, grad_out):
        values, ids, out, count, ties = ctx.saved_tensors
        batch, n, d = values.shape
        n_segments = out.shape[1]
        _, block_n, block_d = _blocks(d, ctx.reduce, values.device)
        grad_values = torch.empty(batch, n, d, dtype=values.dtype, device=values.device)
        grid = (triton.cdiv(n, block_n), batch, triton.cdiv(d, block_d))
        _pool_backward_kernel[grid](
            grad_out, values, ids, out, count, ties, grad_values, n, n_segments, d,
            *values.stride(), *grad_out.stride(),
            REDUCE=_REDUCE_CODE[ctx.reduce], BLOCK_N=block_n, BLOCK_D=block_d, **LAUNCH,
        )
        return grad_values, None, None, None


def triton_segment_pool(values, segment_ids, n_segments, reduce):
    """Run the Triton kernels; same contract as :func:`readgaze.kernels.segment_pool` (inputs already checked)."""
    batch, n, d = values.shape
    if batch == 0 or n == 0 or d == 0 or n_segments == 0:
        return values.new_zeros(batch, n_segments, d) + 0 * values.sum()  # nothing to pool; keeps the graph
    return _SegmentPool.apply(values, segment_ids, n_segments, reduce)
