"""The Triton kernels against the PyTorch references, forward and backward (run by ``test_kernels_triton.py``).

Not collected by the main test run (its name does not start with ``test_``): Triton's interpreter has to be chosen
before the kernels are imported, so ``tests/test_kernels_triton.py`` runs this file in a fresh process with
``TRITON_INTERPRET=1`` (on a CUDA machine, natively on the GPU). To run it alone:
``TRITON_INTERPRET=1 python -m pytest -q tests/kernels_interp_check.py``.

Under the interpreter the tiles are 16 x 16, so the small shapes below still span several query and key tiles.
"""

from __future__ import annotations

import os

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from readgaze.kernels import cross_attention, segment_pool
from readgaze.kernels.cross_attention import dense_mask, reference_cross_attention
from readgaze.kernels.segment_pool import reference_segment_pool

pytest.importorskip("triton")
INTERPRET = os.environ.get("TRITON_INTERPRET", "0") not in ("", "0")
if not INTERPRET and not torch.cuda.is_available():
    pytest.skip("needs TRITON_INTERPRET=1 or a CUDA device", allow_module_level=True)
DEVICE = "cpu" if INTERPRET else "cuda"

from readgaze.kernels._triton_attention import dropout_keep_mask, triton_cross_attention  # noqa: E402  (after the skip)

# float32: the kernel sums in another order (tiles, online softmax rescaling) -> ~1e-6 absolute on O(1) values
FP32 = dict(atol=1e-5, rtol=1e-5)
# bfloat16: both sides are compared with the float32 reference; the kernel rounds the probabilities to bf16 once
# before P @ V (FlashAttention-2) and the interpreter truncates instead of rounding -> a few bf16 ulps (2^-8 each)
BF16 = dict(atol=3e-2, rtol=3e-2)


def _inputs(batch, heads, n_fix, n_tok, d, dtype=torch.float32, seed=0):
    gen = torch.Generator().manual_seed(seed)
    return [torch.randn(batch, heads, n, d, generator=gen).to(DEVICE, dtype).requires_grad_()
            for n in (n_fix, n_tok, n_tok)]


def _masks(kind, batch, n_fix, n_tok, seed=0):
    """Key padding (ragged: each trial its own text length, one all padding) and a band with empty/clipped rows."""
    gen = torch.Generator().manual_seed(seed)
    lengths = torch.tensor([n_tok, n_tok - 13, 0][:batch])
    padding = torch.arange(n_tok)[None, :] < lengths[:, None]
    padding[0, 7] = False  # a hole inside the text, not only trailing padding
    start = torch.randint(-3, n_tok + 2, (batch, n_fix), generator=gen)
    end = start + torch.randint(-2, 12, (batch, n_fix), generator=gen)  # some empty (end <= start), some past n_tok
    end[0, :4] = start[0, :4]  # a few rows of a full trial allowed nothing
    band = (start.to(DEVICE), end.to(DEVICE))
    return {"none": (None, None), "padding": (padding.to(DEVICE), None), "band": (None, band),
            "band+padding": (padding.to(DEVICE), band)}[kind]


def _grads(out, inputs, seed=1):
    gen = torch.Generator().manual_seed(seed)
    grad_out = torch.randn(out.shape, generator=gen).to(out.device, out.dtype)
    return torch.autograd.grad(out, inputs, grad_out)


@pytest.mark.parametrize("kind", ["none", "padding", "band", "band+padding"])
def test_attention_matches_reference_float32(kind):
    q, k, v = _inputs(3, 1, 37, 45, 24)  # d = 24 is not a power of two: the kernel pads it to 32
    padding, band = _masks(kind, 3, 37, 45)
    expected = cross_attention(q, k, v, padding, band, backend="reference")
    got = cross_attention(q, k, v, padding, band, backend="triton")
    torch.testing.assert_close(got, expected, **FP32)
    for got_grad, expected_grad in zip(_grads(got, (q, k, v)), _grads(expected, (q, k, v))):
        torch.testing.assert_close(got_grad, expected_grad, **FP32)


def test_attention_rows_allowed_nothing_are_zero_with_zero_gradient():
    q, k, v = _inputs(3, 2, 37, 45, 16)
    padding, band = _masks("band+padding", 3, 37, 45)
    out = cross_attention(q, k, v, padding, band, backend="triton")
    grad_q, grad_k, grad_v = _grads(out, (q, k, v))
    empty = band[1] <= band[0]
    assert empty[0, :4].all() and torch.isfinite(out).all() and torch.isfinite(grad_q).all()
    assert (out[0, :, :4] == 0).all() and (grad_q[0, :, :4] == 0).all()
    assert (out[2] == 0).all() and (grad_q[2] == 0).all()  # trial 2's text is all padding
    assert (grad_k[~padding[:, None, :].expand(-1, 2, -1)] == 0).all()  # padded tokens get no gradient
    assert (grad_v[~padding[:, None, :].expand(-1, 2, -1)] == 0).all()


def test_attention_bfloat16_is_as_close_to_float32_as_the_reference():
    q, k, v = _inputs(2, 2, 37, 45, 32, dtype=torch.bfloat16)
    padding, band = _masks("band+padding", 2, 37, 45)
    q32, k32, v32 = (t.detach().float().requires_grad_() for t in (q, k, v))
    truth = reference_cross_attention(q32, k32, v32, padding, band, 0.0, 32**-0.5)
    got = cross_attention(q, k, v, padding, band, backend="triton")
    assert got.dtype == torch.bfloat16
    torch.testing.assert_close(got.float(), truth, **BF16)
    for got_grad, truth_grad in zip(_grads(got, (q, k, v)), _grads(truth, (q32, k32, v32))):
        torch.testing.assert_close(got_grad.float(), truth_grad, **BF16)


def test_attention_skips_tiles_outside_every_band():
    # bands stay in tokens [0, 64); tokens 64..127 (whole tiles for 16- and 64-wide tiles) hold NaN: a kernel that
    # read them would return NaN (0 * NaN in P @ V), so finite outputs prove those tiles were skipped
    q, k, v = _inputs(2, 1, 32, 128, 16)
    start = torch.randint(0, 60, (2, 32)).to(DEVICE)
    band = (start, start + 4)
    expected = _grads(reference_cross_attention(q, k, v, None, band, 0.0, 0.25), (q, k, v))
    with torch.no_grad():
        k[:, :, 64:] = float("nan")
        v[:, :, 64:] = float("nan")
    out = cross_attention(q, k, v, allowed=band, backend="triton")
    grad_q, grad_k, grad_v = _grads(out, (q, k, v))
    assert torch.isfinite(out).all() and torch.isfinite(grad_q).all()
    assert (grad_k[:, :, 64:] == 0).all() and (grad_v[:, :, 64:] == 0).all()
    torch.testing.assert_close(grad_q, expected[0], **FP32)
    torch.testing.assert_close(grad_v[:, :, :64], expected[2][:, :, :64], **FP32)


def test_attention_band_edges_on_tile_boundaries():
    # each block of 16 queries sees one or two tokens right at a tile edge (16, 32, 48, 64), so the tile-skipping
    # tests (lo < tile end, hi > tile start) decide every gradient here: one off-by-one loses a token
    pattern = [[(15, 16), (16, 17)], [(32, 33)], [(47, 48), (63, 65), (5, 5)]]
    bands = torch.tensor([pattern[i // 16][i % len(pattern[i // 16])] for i in range(48)])
    band = (bands[None, :, 0].to(DEVICE), bands[None, :, 1].to(DEVICE))
    q, k, v = _inputs(1, 1, 48, 80, 16)
    expected = cross_attention(q, k, v, allowed=band, backend="reference")
    got = cross_attention(q, k, v, allowed=band, backend="triton")
    torch.testing.assert_close(got, expected, **FP32)
    for got_grad, expected_grad in zip(_grads(got, (q, k, v)), _grads(expected, (q, k, v))):
        torch.testing.assert_close(got_grad, expected_grad, **FP32)


@settings(max_examples=6, deadline=None, derandomize=True)  # few: each example is a second under the interpreter
@given(st.integers(1, 2), st.integers(1, 2), st.integers(1, 40), st.integers(1, 40), st.sampled_from([8, 24, 40]),
       st.integers(0, 2**16))
def test_attention_matches_reference_on_random_shapes(batch, heads, n_fix, n_tok, d, seed):
    q, k, v = _inputs(batch, heads, n_fix, n_tok, d, seed=seed)
    gen = torch.Generator().manual_seed(seed)
    padding = (torch.rand(batch, n_tok, generator=gen) < 0.8).to(DEVICE)
    start = torch.randint(-2, n_tok + 1, (batch, n_fix), generator=gen)
    band = (start.to(DEVICE), (start + torch.randint(-1, 10, (batch, n_fix), generator=gen)).to(DEVICE))
    expected = cross_attention(q, k, v, padding, band, backend="reference")
    got = cross_attention(q, k, v, padding, band, backend="triton")
    torch.testing.assert_close(got, expected, **FP32)
    for got_grad, expected_grad in zip(_grads(got, (q, k, v)), _grads(expected, (q, k, v))):
        torch.testing.assert_close(got_grad, expected_grad, **FP32)


def test_attention_accepts_strided_heads():
    # the models split heads with .view(b, n, h, d).transpose(1, 2): the kernel reads strides, no copy needed
    q, k, v = (t.detach().transpose(1, 2).contiguous().transpose(1, 2).requires_grad_()
               for t in _inputs(2, 3, 20, 30, 16))
    assert not q.is_contiguous()
    padding, band = _masks("band+padding", 2, 20, 30)
    expected = cross_attention(q, k, v, padding, band, backend="reference")
    got = cross_attention(q, k, v, padding, band, backend="triton")
    torch.testing.assert_close(got, expected, **FP32)
    for got_grad, expected_grad in zip(_grads(got, (q, k, v)), _grads(expected, (q, k, v))):
        torch.testing.assert_close(got_grad, expected_grad, **FP32)


def test_attention_dispatch():
    q, k, v = _inputs(1, 1, 5, 7, 16)
    auto = cross_attention(q, k, v)  # CPU tensors -> reference even with the interpreter on; CUDA -> the kernel
    torch.testing.assert_close(auto, cross_attention(q, k, v, backend="reference"), **FP32)
    torch.manual_seed(0)
    dropped = cross_attention(q, k, v, dropout_p=0.5, backend="triton")
    torch.manual_seed(0)
    assert torch.equal(cross_attention(q, k, v, dropout_p=0.5, backend="triton"), dropped)  # seeded by torch
    assert not torch.allclose(dropped, auto)


def test_attention_dropout_matches_dense_attention_with_the_kernel_mask():
    q, k, v = _inputs(2, 2, 37, 45, 16)
    padding, band = _masks("band+padding", 2, 37, 45)
    keep = dropout_keep_mask(2, 2, 37, 45, 0.3, seed=1234, device=DEVICE)
    # 6660 Bernoulli(0.7) draws: the kept share is 0.7 +- 0.0056 (one standard deviation); allow 5 of them
    assert abs(keep.mean().item() - 0.7) < 0.028
    got = triton_cross_attention(q, k, v, padding, band, 0.25, dropout_p=0.3, seed=1234)
    # oracle: softmax over the allowed tokens, then the same mask and 1 / (1 - p) rescaling, then P @ V
    mask = dense_mask(padding, band, 2, 37, 45, DEVICE)[:, None]
    weights = (q @ k.transpose(-1, -2) * 0.25).masked_fill(~mask, float("-inf")).softmax(-1).nan_to_num(0.0)
    expected = (weights * keep / 0.7) @ v
    torch.testing.assert_close(got, expected, **FP32)
    for got_grad, expected_grad in zip(_grads(got, (q, k, v)), _grads(expected, (q, k, v))):
        torch.testing.assert_close(got_grad, expected_grad, **FP32)


# ---------------------------------------------------------------- segment_pool


def _pool_inputs(batch, n, d, n_segments, dtype=torch.float32, integer_values=False, seed=0):
    gen = torch.Generator().manual_seed(seed)
    if integer_values:  # few distinct values: many ties at the maximum, including ties at exactly 0
        values = torch.randint(-3, 3, (batch, n, d), generator=gen).to(dtype)
    else:
        values = torch.randn(batch, n, d, generator=gen).to(dtype)
    ids = torch.randint(-1, n_segments, (batch, n), generator=gen)
    ids[-1] = -1  # a trial whose fixations are all off text
    return values.to(DEVICE).requires_grad_(), ids.to(DEVICE)


@pytest.mark.parametrize("reduce", ["sum", "mean", "max"])
@pytest.mark.parametrize("d", [20, 70])  # 70: several feature blocks
def test_segment_pool_matches_reference_float32(reduce, d):
    values, ids = _pool_inputs(3, 29, d, 40, integer_values=reduce == "max")  # 40 segments: several blocks, some empty
    expected = segment_pool(values, ids, 40, reduce, backend="reference")
    got = segment_pool(values, ids, 40, reduce, backend="triton")
    torch.testing.assert_close(got, expected, **FP32)  # max: exact in practice; sum/mean: summation order
    (got_grad,), (expected_grad,) = _grads(got, (values,)), _grads(expected, (values,))
    torch.testing.assert_close(got_grad, expected_grad, **FP32)


@pytest.mark.parametrize("reduce", ["sum", "mean", "max"])
def test_segment_pool_bfloat16(reduce):
    values, ids = _pool_inputs(2, 37, 24, 9, dtype=torch.bfloat16)
    values32 = values.detach().float().requires_grad_()
    truth = reference_segment_pool(values32, ids, 9, reduce)
    got = segment_pool(values, ids, 9, reduce, backend="triton")
    # the kernel accumulates in float32 and rounds once: within one bf16 ulp (2^-7 relative) of the float32 result
    torch.testing.assert_close(got.float(), truth, atol=1e-2, rtol=2**-7)
    (got_grad,), (truth_grad,) = _grads(got, (values,)), _grads(truth, (values32,))
    torch.testing.assert_close(got_grad.float(), truth_grad, atol=1e-2, rtol=2**-7)


def test_segment_pool_strided_values():
    values, ids = _pool_inputs(2, 30, 16, 8)
    strided = values.detach().transpose(1, 2).contiguous().transpose(1, 2).requires_grad_()
    got = segment_pool(strided, ids, 8, "mean", backend="triton")
    torch.testing.assert_close(got, reference_segment_pool(strided, ids, 8, "mean"), **FP32)
