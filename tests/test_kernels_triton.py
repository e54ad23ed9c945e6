"""The Triton kernels match the PyTorch references: runs ``tests/kernels_interp_check.py`` in a fresh process.

Triton's interpreter must be selected (``TRITON_INTERPRET=1``) before any kernel is defined, and setting it here would
leak into every other test module of this process, so the checks run in a subprocess: under the interpreter on a
CPU-only machine, natively on a CUDA machine. The subprocess's own report is shown when it fails.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from readgaze.kernels import cross_attention, segment_pool

CHECK = Path(__file__).with_name("kernels_interp_check.py")


@pytest.mark.slow  # ~20 s of CPU under the interpreter (22 checks)
def test_triton_kernels_match_reference():
    pytest.importorskip("triton")
    env = dict(os.environ)
    if torch.cuda.is_available():
        env.pop("TRITON_INTERPRET", None)
    else:
        env["TRITON_INTERPRET"] = "1"
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-n", "0", "-p", "no:cacheprovider", str(CHECK)],
        cwd=CHECK.parents[1], env=env, capture_output=True, text=True, timeout=600,
    )
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-3000:]
    assert " passed" in result.stdout and " failed" not in result.stdout


@pytest.mark.skipif(os.environ.get("TRITON_INTERPRET", "0") not in ("", "0"), reason="interpreter is on")
def test_forcing_triton_on_cpu_without_interpreter_is_refused():
    x = torch.zeros(1, 1, 2, 4)
    with pytest.raises(ValueError, match="TRITON_INTERPRET=1"):
        cross_attention(x, x, x, backend="triton")
    with pytest.raises(ValueError, match="TRITON_INTERPRET=1"):
        segment_pool(torch.zeros(1, 2, 3), torch.zeros(1, 2, dtype=torch.int64), 1, backend="triton")


def test_dtypes_and_sizes_the_kernel_does_not_take_go_to_the_reference():
    x = torch.ones(1, 1, 2, 4, dtype=torch.float64)
    torch.testing.assert_close(cross_attention(x, x, x), x)  # auto: float64 runs the reference on any device
    with pytest.raises(ValueError, match="float64"):
        cross_attention(x, x, x, backend="triton")
    wide = torch.zeros(1, 1, 2, 256)
    with pytest.raises(ValueError, match="last size 256"):
        cross_attention(wide, wide, wide, backend="triton")
