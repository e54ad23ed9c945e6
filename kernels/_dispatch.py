"""Choose between the Triton kernel and the PyTorch reference for one call.

``"auto"`` picks Triton for CUDA tensors when triton imports, and the reference everywhere else (CPU, MPS, no
triton). ``"triton"`` forces the kernel: on CPU tensors this only works under Triton's interpreter, which must be
switched on (``TRITON_INTERPRET=1``) before the kernel modules are imported, so the tests run it in a subprocess.
"""

from __future__ import annotations

import functools
import importlib.util
import os

import torch

BACKENDS = ("auto", "reference", "triton")


@functools.cache
def triton_available() -> bool:
    """True when the ``triton`` package can be imported (it is Linux x86-64 only)."""
    return importlib.util.find_spec("triton") is not None


def interpreter_enabled() -> bool:
    """True when Triton's CPU interpreter is requested (``TRITON_INTERPRET=1``)."""
    return os.environ.get("TRITON_INTERPRET", "0") not in ("", "0")


KERNEL_DTYPES = (torch.float32, torch.float16, torch.bfloat16)


def resolve_backend(backend: str, tensor: torch.Tensor, max_feature_size: int | None = None) -> str:
    """Return ``"triton"`` or ``"reference"`` for ``backend`` and the device, dtype and last size of ``tensor``.

    The kernels take float32, float16 and bfloat16 with a last dimension up to ``max_feature_size``; ``"auto"``
    sends anything else (float64, wide heads) to the reference.

    Raises
    ------
    ValueError
        For an unknown backend name, or ``"triton"`` when triton is missing, the tensor is on CPU without the
        interpreter, or its dtype or size is one the kernel does not take.
    """
    if backend not in BACKENDS:
        raise ValueError(f"backend: got {backend!r}, expected one of {BACKENDS}")
    if backend == "reference":
        return "reference"
    supported = tensor.dtype in KERNEL_DTYPES and (max_feature_size is None or tensor.shape[-1] <= max_feature_size)
    if backend == "auto":
        return "triton" if tensor.is_cuda and supported and triton_available() else "reference"
    if not supported:
        raise ValueError(
            f"backend='triton': got {tensor.dtype} with last size {tensor.shape[-1]}, expected one of "
            f"{KERNEL_DTYPES} with last size <= {max_feature_size}"
        )
    if not triton_available():
        raise ValueError("backend='triton': triton is not installed (Linux x86-64 only)")
    if not tensor.is_cuda and not interpreter_enabled():
        raise ValueError(
            f"backend='triton' on a {tensor.device.type} tensor needs TRITON_INTERPRET=1 set before import"
        )
    return "triton"
