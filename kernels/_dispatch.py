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


def resolve_backend(backend: str, tensor: torch.Tensor) -> str:
    """Return ``"triton"`` or ``"reference"`` for ``backend`` and the device of ``tensor``.

    Raises
    ------
    ValueError
        For an unknown backend name, or ``"triton"`` when triton is missing or the tensor is on CPU without the
        interpreter.
    """
    if backend not in BACKENDS:
        raise ValueError(f"backend: got {backend!r}, expected one of {BACKENDS}")
    if backend == "reference":
        return "reference"
    if backend == "auto":
        return "triton" if tensor.is_cuda and triton_available() else "reference"
    if not triton_available():
        raise ValueError("backend='triton': triton is not installed (Linux x86-64 only)")
    if not tensor.is_cuda and not interpreter_enabled():
        raise ValueError(
            f"backend='triton' on a {tensor.device.type} tensor needs TRITON_INTERPRET=1 set before import"
        )
    return "triton"
