"""Masked cross-attention from fixations to text tokens: one public op, a PyTorch reference, a Triton kernel on CUDA.

The multimodal models (PostFusion-Eye, the DIST-style line assigner) let each fixation attend to the text tokens,
usually only to the tokens of the fixated word and a few neighbours. That band is given compactly, one half-open
token range ``[start, end)`` per fixation, never as a dense ``n_fix x n_tok`` matrix: the Triton kernel
(:mod:`readgaze.kernels._triton_attention`) computes the mask from the indices inside each tile and skips tiles outside
the
band; the reference below builds the dense mask and calls :func:`torch.nn.functional.scaled_dot_product_attention`.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from readgaze.kernels._dispatch import resolve_backend

__all__ = ["cross_attention"]


def cross_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    key_padding_mask: torch.Tensor | None = None,
    allowed: tuple[torch.Tensor, torch.Tensor] | None = None,
    dropout_p: float = 0.0,
    scale: float | None = None,
    backend: str = "auto",
) -> torch.Tensor:
    """Attend from each fixation (query) to the text tokens (keys) it is allowed to see.

    ``out[b, h, i] = sum_t softmax_t(scale * q[b, h, i] . k[b, h, t]) v[b, h, t]`` where the softmax runs only over the
    tokens ``t`` that fixation ``i`` may attend: real tokens (``key_padding_mask[b, t]`` true) inside its band
    (``start[b, i] <= t < end[b, i]``). A fixation allowed no token at all (a padded fixation, an off-text fixation
    with an empty band, a trial whose text is all padding) gets an output row of zeros and zero gradient, never NaN.

    Parameters
    ----------
    q : torch.Tensor
        Queries, shape ``(batch, heads, n_fix, d)``; float32, float16 or bfloat16. Any strides.
    k, v : torch.Tensor
        Keys and values, shape ``(batch, heads, n_tok, d)``, same dtype and device as ``q``.
    key_padding_mask : torch.Tensor, optional
        Bool ``(batch, n_tok)``; **True marks a real token** that may be attended, False a padding token.
        None: every token is real.
    allowed : tuple of two torch.Tensor, optional
        The band ``(start, end)``: two int64 tensors of shape ``(batch, n_fix)``; fixation ``i`` may attend tokens
        ``start <= t < end`` (half-open, 0-based; values outside ``[0, n_tok]`` are clipped, ``end <= start`` means
        nothing). None: every token.
    dropout_p : float
        Dropout probability on the attention probabilities. Pass it in training only (``p if self.training else
        0.0``), as with :func:`~torch.nn.functional.scaled_dot_product_attention`; ``0 <= dropout_p < 1``.
    scale : float, optional
        Logit scale; default ``1 / sqrt(d)``.
    backend : {"auto", "reference", "triton"}
        ``"auto"``: the Triton kernel for CUDA tensors (float32, float16, bfloat16; ``d <= 128``) when triton
        imports, the reference otherwise.
        ``"triton"`` forces the kernel (on CPU tensors only under ``TRITON_INTERPRET=1``, which the tests use).

    Returns
    -------
    torch.Tensor
        Shape ``(batch, heads, n_fix, d)``, dtype of ``q``.

    Raises
    ------
    ValueError
        On mismatched shapes, devices or dtypes, or an unknown backend (``kernels`` imports only torch, so it
        raises built-in errors, not ``readgaze.errors``).

    Notes
    -----
    Tolerance between the kernel and the reference (see ``tests/kernels_interp_check.py``): float32 agree to
    1e-5 (different summation order, online softmax); bfloat16 outputs and gradients lie within 3e-2 (absolute and
    relative) of the float32 reference (one bf16 rounding of the probabilities before ``P @ V``, FlashAttention-2).
    Dropout: the kernel draws its mask with Triton's Philox generator, seeded from torch's CPU generator (so
    ``torch.manual_seed`` reproduces a run) and regenerated in the backward; the masks differ from the reference's,
    so with ``dropout_p > 0`` the two agree in distribution, not value. The tests check the kernel exactly against
    a dense reference that applies the kernel's own mask.

    References
    ----------
    Dao, T. (2023). FlashAttention-2: Faster attention with better parallelism and work partitioning.
    arXiv:2307.08691.

    Examples
    --------
    >>> q, k = torch.ones(1, 1, 2, 4), torch.ones(1, 1, 3, 4)
    >>> v = torch.arange(3.0).view(1, 1, 3, 1).expand(1, 1, 3, 4)  # token t has value t
    >>> start = torch.tensor([[0, 2]]); end = torch.tensor([[2, 2]])
    >>> cross_attention(q, k, v, allowed=(start, end))[0, 0, :, 0]
    tensor([0.5000, 0.0000])
    """
    _check_inputs(q, k, v, key_padding_mask, allowed)
    if scale is None:
        scale = 1.0 / math.sqrt(q.shape[-1])
    if not 0.0 <= dropout_p < 1.0:
        raise ValueError(f"cross_attention: dropout_p: got {dropout_p}, expected 0 <= dropout_p < 1")
    if resolve_backend(backend, q, max_feature_size=128) == "triton":
        from readgaze.kernels._triton_attention import triton_cross_attention

        return triton_cross_attention(q, k, v, key_padding_mask, allowed, scale, dropout_p)
    return reference_cross_attention(q, k, v, key_padding_mask, allowed, dropout_p, scale)


def reference_cross_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    key_padding_mask: torch.Tensor | None,
    allowed: tuple[torch.Tensor, torch.Tensor] | None,
    dropout_p: float,
    scale: float,
) -> torch.Tensor:
    """The reference: a dense bool mask and ``scaled_dot_product_attention``; contract of :func:`cross_attention`.

    With padding only (no band) and a real key in every batch row, the padding mask goes to
    ``scaled_dot_product_attention`` broadcast as ``(batch, 1, 1, n_tok)`` (none when nothing is padded) instead of
    the dense mask: the same values, without building and checking a ``(batch, n_fix, n_tok)`` mask.
    """
    if allowed is None and key_padding_mask is not None and bool(key_padding_mask.any(dim=1).all()):
        padding = None if bool(key_padding_mask.all()) else key_padding_mask[:, None, None, :]
        return F.scaled_dot_product_attention(q, k, v, attn_mask=padding, dropout_p=dropout_p, scale=scale)
    mask = dense_mask(key_padding_mask, allowed, q.shape[0], q.shape[2], k.shape[2], q.device)
    if mask is None:
        return F.scaled_dot_product_attention(q, k, v, dropout_p=dropout_p, scale=scale)
    row_has_key = mask.any(dim=-1)  # (batch, n_fix)
    # A row with no allowed key would be a softmax over nothing (NaN); let it see everything, then zero it.
    safe_mask = mask | ~row_has_key[..., None]
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=safe_mask[:, None], dropout_p=dropout_p, scale=scale)
    return out * row_has_key[:, None, :, None].to(out.dtype)


def dense_mask(
    key_padding_mask: torch.Tensor | None,
    allowed: tuple[torch.Tensor, torch.Tensor] | None,
    batch: int,
    n_fix: int,
    n_tok: int,
    device: torch.device,
) -> torch.Tensor | None:
    """The dense bool mask ``(batch, n_fix, n_tok)``, True = may attend, of the band and padding; None if neither."""
    if key_padding_mask is None and allowed is None:
        return None
    mask = torch.ones(batch, n_fix, n_tok, dtype=torch.bool, device=device)
    if key_padding_mask is not None:
        mask &= key_padding_mask[:, None, :]
    if allowed is not None:
        start, end = allowed
        token = torch.arange(n_tok, device=device)
        mask &= (token >= start[..., None]) & (token < end[..., None])
    return mask


def _check_inputs(q, k, v, key_padding_mask, allowed) -> None:
    """Check shapes, dtypes and devices all at once; raise one ValueError listing every problem."""
    problems = []
    if q.dim() != 4 or k.dim() != 4 or v.dim() != 4:
        raise ValueError(
            f"cross_attention: q, k, v must be 4-d (batch, heads, n, d); got {tuple(q.shape)}, "
            f"{tuple(k.shape)}, {tuple(v.shape)}"
        )
    batch, heads, n_fix, d = q.shape
    if k.shape != v.shape:
        problems.append(f"k {tuple(k.shape)} and v {tuple(v.shape)} differ")
    if k.shape[0] != batch or k.shape[1] != heads or k.shape[3] != d:
        problems.append(f"k {tuple(k.shape)} does not match q {tuple(q.shape)} in batch, heads or d")
    if not (q.dtype == k.dtype == v.dtype) or not q.is_floating_point():
        problems.append(f"q, k, v dtypes {q.dtype}, {k.dtype}, {v.dtype}: expected one floating dtype")
    if not (q.device == k.device == v.device):
        problems.append(f"q, k, v on devices {q.device}, {k.device}, {v.device}: expected one device")
    n_tok = k.shape[2]
    if key_padding_mask is not None:
        if key_padding_mask.dtype != torch.bool or tuple(key_padding_mask.shape) != (batch, n_tok):
            problems.append(
                f"key_padding_mask {key_padding_mask.dtype} {tuple(key_padding_mask.shape)}: "
                f"expected torch.bool {(batch, n_tok)} (True = real token)"
            )
    if allowed is not None:
        if len(allowed) != 2:
            problems.append("allowed: expected a pair (start, end)")
        else:
            for name, bound in zip(("start", "end"), allowed):
                if bound.dtype != torch.int64 or tuple(bound.shape) != (batch, n_fix):
                    problems.append(
                        f"allowed {name} {bound.dtype} {tuple(bound.shape)}: expected torch.int64 {(batch, n_fix)}"
                    )
    if problems:
        raise ValueError("cross_attention: " + "; ".join(problems))
