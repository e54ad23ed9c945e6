"""The PyTorch references of ``readgaze.kernels.cross_attention`` and ``readgaze.kernels.segment_pool``: hand values
and properties.

These run on CPU in-process (``backend="reference"``); the Triton kernels are compared with these references under
the interpreter by ``tests/test_kernels_triton.py``.
"""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from readgaze.kernels import cross_attention, segment_pool


def _band(start, end):
    return torch.tensor([start]), torch.tensor([end])


# ---------------------------------------------------------------- cross_attention: hand values


def test_equal_keys_average_the_allowed_values():
    # all logits equal -> uniform weights over the allowed tokens: row 0 sees tokens 0..2 (values 0,1,2 -> mean 1),
    # row 1 sees token 3 only (value 3), row 2 sees tokens 1..3 (mean 2); padding token 3 then changes rows 1 and 2
    q = torch.ones(1, 1, 3, 2)
    k = torch.ones(1, 1, 4, 2)
    v = torch.arange(4.0).view(1, 1, 4, 1).expand(1, 1, 4, 2)
    out = cross_attention(q, k, v, allowed=_band([0, 3, 1], [3, 4, 4]), backend="reference")
    assert out[0, 0, :, 0].tolist() == pytest.approx([1.0, 3.0, 2.0])
    padded = torch.tensor([[True, True, True, False]])
    out = cross_attention(q, k, v, key_padding_mask=padded, allowed=_band([0, 3, 1], [3, 4, 4]), backend="reference")
    assert out[0, 0, :, 0].tolist() == pytest.approx([1.0, 0.0, 1.5])  # row 1's only token is padding -> zeros


def test_softmax_weights_by_hand():
    # one query, two tokens, logits scale * q.k = 1 * (0, ln 3) -> weights 1/4, 3/4 on values 4 and 8 -> 7
    q = torch.tensor([1.0, 0.0]).view(1, 1, 1, 2)
    k = torch.tensor([[0.0, 0.0], [math.log(3.0), 0.0]]).view(1, 1, 2, 2)
    v = torch.tensor([[4.0, 0.0], [8.0, 0.0]]).view(1, 1, 2, 2)
    out = cross_attention(q, k, v, scale=1.0, backend="reference")
    assert out[0, 0, 0, 0].item() == pytest.approx(7.0)


def test_row_allowed_nothing_gives_zeros_and_zero_gradient():
    torch.manual_seed(0)
    q = torch.randn(2, 2, 3, 4, requires_grad=True)
    k = torch.randn(2, 2, 5, 4, requires_grad=True)
    v = torch.randn(2, 2, 5, 4, requires_grad=True)
    start = torch.tensor([[0, 2, 4], [0, 0, 0]])
    end = torch.tensor([[2, 2, 9], [5, 5, 5]])  # row (0,1) empty band; row (0,2) sees token 4 only (9 is clipped)
    padding = torch.tensor([[True] * 5, [False] * 5])  # batch 1: all padding -> every row empty
    out = cross_attention(q, k, v, key_padding_mask=padding, allowed=(start, end), backend="reference")
    assert torch.isfinite(out).all()
    assert (out[0, :, 1] == 0).all() and (out[1] == 0).all()
    torch.testing.assert_close(out[0, :, 2], v[0, :, 4].detach())  # a single allowed token: its value, exactly
    out.square().sum().backward()
    assert torch.isfinite(q.grad).all() and (q.grad[0, :, 1] == 0).all() and (q.grad[1] == 0).all()
    assert (k.grad[1] == 0).all() and (v.grad[1] == 0).all()


def test_padding_equals_truncation():
    torch.manual_seed(1)
    q, k, v = torch.randn(1, 2, 6, 8), torch.randn(1, 2, 9, 8), torch.randn(1, 2, 9, 8)
    padding = torch.tensor([[True] * 5 + [False] * 4])
    padded = cross_attention(q, k, v, key_padding_mask=padding, backend="reference")
    truncated = cross_attention(q, k[:, :, :5], v[:, :, :5], backend="reference")
    torch.testing.assert_close(padded, truncated)  # same numbers, one fewer masked term: default fp32 tolerance


def test_bad_inputs_raise_one_error_listing_every_problem():
    q, k = torch.randn(1, 1, 3, 4), torch.randn(1, 1, 5, 4)
    with pytest.raises(ValueError, match="key_padding_mask.*allowed start.*allowed end"):
        cross_attention(q, k, k, key_padding_mask=torch.ones(1, 4, dtype=torch.bool),
                        allowed=(torch.zeros(1, 3, dtype=torch.int32), torch.zeros(1, 2, dtype=torch.int64)))
    with pytest.raises(ValueError, match="backend"):
        cross_attention(q, k, k, backend="cuda")


def test_dropout_changes_output_only_when_asked():
    torch.manual_seed(2)
    q, k, v = torch.randn(1, 1, 4, 8), torch.randn(1, 1, 6, 8), torch.randn(1, 1, 6, 8)
    plain = cross_attention(q, k, v, backend="reference")
    torch.testing.assert_close(cross_attention(q, k, v, dropout_p=0.0), plain)
    assert not torch.allclose(cross_attention(q, k, v, dropout_p=0.5, backend="reference"), plain)


# ---------------------------------------------------------------- cross_attention: properties


@st.composite
def _attention_case(draw):
    batch, heads = draw(st.integers(1, 2)), draw(st.integers(1, 2))
    n_fix, n_tok, d = draw(st.integers(1, 7)), draw(st.integers(1, 9)), draw(st.sampled_from([1, 4, 8]))
    start = draw(st.lists(st.integers(-2, n_tok + 1), min_size=batch * n_fix, max_size=batch * n_fix))
    width = draw(st.lists(st.integers(-1, n_tok), min_size=batch * n_fix, max_size=batch * n_fix))
    real = draw(st.lists(st.booleans(), min_size=batch * n_tok, max_size=batch * n_tok))
    seed = draw(st.integers(0, 2**16))
    start_t = torch.tensor(start).view(batch, n_fix)
    return (batch, heads, n_fix, n_tok, d, start_t, start_t + torch.tensor(width).view(batch, n_fix),
            torch.tensor(real).view(batch, n_tok), seed)


@settings(max_examples=40, deadline=None)
@given(_attention_case())
def test_masked_tokens_do_not_matter_and_rows_are_convex(case):
    batch, heads, n_fix, n_tok, d, start, end, real, seed = case
    gen = torch.Generator().manual_seed(seed)
    q, k, v = (torch.randn(batch, heads, n, d, generator=gen, dtype=torch.float64) for n in (n_fix, n_tok, n_tok))
    out = cross_attention(q, k, v, key_padding_mask=real, allowed=(start, end), backend="reference")
    token = torch.arange(n_tok)
    mask = real[:, None, :] & (token >= start[..., None]) & (token < end[..., None])  # (batch, n_fix, n_tok)
    # changing keys and values the mask hides leaves the output unchanged
    hidden = ~mask.any(dim=1)  # tokens no fixation of the trial may see
    k2 = torch.where(hidden[:, None, :, None], 100 * torch.randn_like(k), k)
    v2 = torch.where(hidden[:, None, :, None], 100 * torch.randn_like(v), v)
    torch.testing.assert_close(cross_attention(q, k2, v2, key_padding_mask=real, allowed=(start, end)), out)
    # each row is a convex combination of its allowed values (zeros when none): within their min and max
    big = torch.tensor(float("inf"), dtype=torch.float64)
    allowed_v = mask[:, None, :, :, None]  # (batch, 1, n_fix, n_tok, 1)
    v_rows = v[:, :, None, :, :]
    low = torch.where(allowed_v, v_rows, big).amin(dim=3)
    high = torch.where(allowed_v, v_rows, -big).amax(dim=3)
    empty = ~mask.any(dim=-1)[:, None, :, None].expand_as(out)
    assert (out[empty] == 0).all()
    assert (out[~empty] >= low[~empty] - 1e-12).all() and (out[~empty] <= high[~empty] + 1e-12).all()


# ---------------------------------------------------------------- segment_pool


def test_segment_pool_by_hand():
    values = torch.tensor([[[1.0, -1.0], [3.0, 5.0], [5.0, 2.0], [7.0, 0.0], [9.0, 9.0]]])
    ids = torch.tensor([[0, 0, -1, 2, 0]])  # segment 1 empty, row 2 ignored
    assert segment_pool(values, ids, 3, "sum", backend="reference")[0].tolist() == [[13, 13], [0, 0], [7, 0]]
    mean = segment_pool(values, ids, 3, "mean", backend="reference")[0]
    torch.testing.assert_close(mean, torch.tensor([[13 / 3, 13 / 3], [0, 0], [7, 0]]))
    assert segment_pool(values, ids, 3, "max", backend="reference")[0].tolist() == [[9, 9], [0, 0], [7, 0]]


def test_segment_pool_max_of_negative_values_is_not_clipped_at_zero():
    values = torch.tensor([[[-4.0], [-2.0]]])
    assert segment_pool(values, torch.tensor([[1, 1]]), 2, "max")[0, :, 0].tolist() == [0.0, -2.0]


@pytest.mark.parametrize("reduce, expected", [("sum", [1, 1, 0, 1, 0]), ("mean", [0.5, 0.5, 0, 1, 0]),
                                              ("max", [0, 1, 0, 1, 0])])
def test_segment_pool_gradient_by_hand(reduce, expected):
    values = torch.tensor([[[1.0], [2.0], [3.0], [4.0], [2.0]]], requires_grad=True)
    ids = torch.tensor([[0, 0, -1, 1, -1]])
    segment_pool(values, ids, 2, reduce).sum().backward()
    assert values.grad[0, :, 0].tolist() == expected


@pytest.mark.parametrize("column", [[2.0, 2.0, 1.0], [0.0, 0.0, -1.0]])
def test_segment_pool_max_gradient_splits_between_ties(column):
    # the second case is a maximum of exactly 0, where a zero-initialised scatter_reduce would count a third "tie"
    values = torch.tensor(column).view(1, 3, 1).requires_grad_()
    segment_pool(values, torch.tensor([[0, 0, 0]]), 1, "max").sum().backward()
    assert values.grad[0, :, 0].tolist() == [0.5, 0.5, 0.0]


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 3), st.integers(0, 12), st.integers(1, 5), st.integers(0, 6), st.integers(0, 2**16))
def test_segment_pool_sum_is_a_one_hot_product(batch, n, d, n_segments, seed):
    gen = torch.Generator().manual_seed(seed)
    values = torch.randn(batch, n, d, generator=gen, dtype=torch.float64)
    ids = torch.randint(-1, max(n_segments, 0), (batch, n), generator=gen) if n_segments else torch.full((batch, n), -1)
    one_hot = (ids[:, None, :] == torch.arange(n_segments)[None, :, None]).to(values.dtype)  # (batch, n_seg, n)
    torch.testing.assert_close(segment_pool(values, ids, n_segments, "sum"), one_hot @ values)
    count = one_hot.sum(-1, keepdim=True)
    torch.testing.assert_close(segment_pool(values, ids, n_segments, "mean"), one_hot @ values / count.clamp(min=1))
    pooled_max = segment_pool(values, ids, n_segments, "max")
    for s in range(n_segments):  # max over each segment's rows (zeros when it has none)
        member = (ids == s)[..., None]
        expected = torch.where(member, values, -torch.inf).amax(dim=1) if n else values.new_zeros(batch, d)
        expected = torch.where(member.any(dim=1), expected, 0.0)
        torch.testing.assert_close(pooled_max[:, s], expected)


def test_segment_pool_bad_inputs():
    values = torch.zeros(1, 3, 2)
    with pytest.raises(ValueError, match=r"got values in \[-1, 5\]"):
        segment_pool(values, torch.tensor([[0, -1, 5]]), 3)
    with pytest.raises(ValueError, match="reduce.*segment_ids"):
        segment_pool(values, torch.zeros(1, 3, dtype=torch.int32), 3, reduce="median")
