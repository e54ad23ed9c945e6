"""Pool fixation features into word (or token) features: one public op, a PyTorch reference, a Triton kernel on CUDA.

Each fixation carries the index of the segment it falls on (its word, or its subword token); fixations on no segment
carry -1 and are ignored. The reference is one scatter over the fixations (``scatter_add`` / ``scatter_reduce``);
the Triton kernel (:mod:`readgaze.kernels._triton_segment_pool`) does the same in one pass without the ``(batch, n, d)``
index tensor.
"""

from __future__ import annotations

import torch

from readgaze.kernels._dispatch import resolve_backend

__all__ = ["segment_pool"]

REDUCTIONS = ("mean", "sum", "max")


def segment_pool(
    values: torch.Tensor,
    segment_ids: torch.Tensor,
    n_segments: int,
    reduce: str = "mean",
    backend: str = "auto",
) -> torch.Tensor:
    """Pool the rows of ``values`` that share a segment index into one row per segment.

    ``out[b, s] = reduce({values[b, i] : segment_ids[b, i] == s})``. Rows with ``segment_ids == -1`` (an off-text
    fixation, a padded fixation) are ignored. A segment no row falls in (a skipped word, a padded word) gives a row
    of zeros, for every ``reduce``. The gradient flows back to the pooled rows: ``sum`` copies it, ``mean`` divides
    it by the segment's row count, ``max`` sends it to the row holding the maximum (split evenly between tied rows,
    as :func:`torch.scatter_reduce` does).

    Parameters
    ----------
    values : torch.Tensor
        Float ``(batch, n, d)``, e.g. fixation features ``(batch, n_fix, d)``.
    segment_ids : torch.Tensor
        int64 ``(batch, n)``; 0-based segment index per row, or -1 to ignore the row.
    n_segments : int
        Number of segments per batch row, e.g. the padded word count.
    reduce : {"mean", "sum", "max"}
        How the rows of one segment are combined.
    backend : {"auto", "reference", "triton"}
        As in :func:`readgaze.kernels.cross_attention`: Triton for CUDA tensors, the reference elsewhere.

    Returns
    -------
    torch.Tensor
        ``(batch, n_segments, d)``, dtype of ``values``.

    Raises
    ------
    ValueError
        On mismatched shapes, a non-int64 ``segment_ids``, an index outside ``[-1, n_segments)``, or an unknown
        ``reduce`` or backend.

    Notes
    -----
    Tolerance between the kernel and the reference: ``sum``/``mean`` differ only in summation order (float32
    ~1e-6; bfloat16 ~1e-2, one rounding of the result); ``max`` is exact.

    Examples
    --------
    >>> values = torch.tensor([[[1.0], [3.0], [5.0], [7.0]]])
    >>> segment_pool(values, torch.tensor([[0, 0, -1, 2]]), n_segments=3)[0, :, 0]
    tensor([2., 0., 7.])
    """
    _check_inputs(values, segment_ids, n_segments, reduce)
    if resolve_backend(backend, values) == "triton":
        from readgaze.kernels._triton_segment_pool import triton_segment_pool

        return triton_segment_pool(values, segment_ids, n_segments, reduce)
    return reference_segment_pool(values, segment_ids, n_segments, reduce)


def reference_segment_pool(
    values: torch.Tensor, segment_ids: torch.Tensor, n_segments: int, reduce: str
) -> torch.Tensor:
    """The reference: one scatter into ``n_segments + 1`` rows, the last collecting the ignored rows."""
    batch, n, d = values.shape
    slot = torch.where(segment_ids < 0, n_segments, segment_ids)
    index = slot[..., None].expand(batch, n, d)
    out = values.new_zeros(batch, n_segments + 1, d)
    if reduce == "max":
        # Start from -inf, not 0: scatter_reduce's backward counts an initial value equal to the maximum as one more
        # tie even with include_self=False (torch 2.13: grads 1/3, 1/3 for a segment [-1, 0, 0]).
        out = torch.full_like(out, -torch.inf).scatter_reduce(1, index, values, reduce="amax", include_self=False)
        out = out[:, :n_segments]
        return torch.where(out == -torch.inf, 0.0, out)  # an empty segment gives 0
    out = out.scatter_add(1, index, values)[:, :n_segments]
    if reduce == "sum":
        return out
    count = torch.zeros(batch, n_segments + 1, dtype=values.dtype, device=values.device)
    count = count.scatter_add(1, slot, torch.ones_like(slot, dtype=values.dtype))[:, :n_segments]
    return out / count.clamp(min=1)[..., None]


def _check_inputs(values, segment_ids, n_segments, reduce) -> None:
    """Check everything, then raise one ValueError listing every problem."""
    problems = []
    if reduce not in REDUCTIONS:
        problems.append(f"reduce: got {reduce!r}, expected one of {REDUCTIONS}")
    if values.dim() != 3 or not values.is_floating_point():
        problems.append(f"values: got {values.dtype} {tuple(values.shape)}, expected a float (batch, n, d) tensor")
    if segment_ids.dtype != torch.int64 or tuple(segment_ids.shape) != tuple(values.shape[:2]):
        problems.append(
            f"segment_ids: got {segment_ids.dtype} {tuple(segment_ids.shape)}, "
            f"expected torch.int64 {tuple(values.shape[:2])}"
        )
    elif segment_ids.device != values.device:
        problems.append(f"segment_ids on {segment_ids.device}, values on {values.device}: expected one device")
    elif segment_ids.numel() and (segment_ids.min() < -1 or segment_ids.max() >= n_segments):
        low, high = int(segment_ids.min()), int(segment_ids.max())
        problems.append(f"segment_ids: got values in [{low}, {high}], expected -1 or 0 <= id < n_segments={n_segments}")
    if not isinstance(n_segments, int) or n_segments < 0:
        problems.append(f"n_segments: got {n_segments!r}, expected an int >= 0")
    if problems:
        raise ValueError("segment_pool: " + "; ".join(problems))
