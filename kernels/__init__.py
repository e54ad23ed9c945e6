"""Fused ops for gaze-text models: masked cross-attention and fixation-to-word pooling.

Each op has one public function that dispatches to a Triton kernel for CUDA tensors and to a PyTorch reference
everywhere else (``backend="reference"`` / ``"triton"`` override). This package imports only torch (and triton,
lazily, on first GPU call).
"""

from readgaze.kernels.cross_attention import cross_attention
from readgaze.kernels.segment_pool import segment_pool

__all__ = ["cross_attention", "segment_pool"]
