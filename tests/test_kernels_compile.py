"""The Triton kernels compile for a Hopper GPU (sm_90, the H100/H200 class), checked on a machine without one.

The interpreter runs the kernels' Python semantics on CPU; it does not check what only the compiler enforces
(constexpr control flow, dot shapes, shared-memory use). Triton compiles ahead of time for a named target with the
``ptxas`` bundled in its wheel, no GPU or driver needed, so CI catches kernels that would fail on the first GPU run.
"""

from __future__ import annotations

import pytest

triton = pytest.importorskip("triton")
compiler = pytest.importorskip("triton.compiler")
backends = pytest.importorskip("triton.backends.compiler")

from readgaze.kernels import _triton_attention as attention  # noqa: E402
from readgaze.kernels import _triton_segment_pool as pool  # noqa: E402
from readgaze.kernels._triton_attention import LAUNCH  # noqa: E402

HOPPER = backends.GPUTarget("cuda", 90, 32)
SHARED_MEMORY_BYTES = 227 * 1024  # per block on sm_90
POINTERS = {name: "*bf16" for name in ("Q", "K", "V", "O", "DO", "DQ", "DK", "DV", "VALUES", "OUT", "GRAD_OUT",
                                         "GRAD_VALUES")}
POINTERS |= {"LSE": "*fp32", "DELTA": "*fp32", "COUNT": "*fp32", "TIES": "*i32", "START": "*i32", "END": "*i32",
             "BLOCK_LO": "*i32", "BLOCK_HI": "*i32", "KPM": "*i8", "IDS": "*i64", "qk_scale": "fp32",
             "scale": "fp32", "dropout_p": "fp32"}


def _compile(kernel, constexprs):
    signature = {name: "constexpr" if name in constexprs else POINTERS.get(name, "i32") for name in kernel.arg_names}
    source = compiler.ASTSource(fn=kernel, signature=signature, constexprs=constexprs)
    return triton.compile(source, target=HOPPER, options={"num_warps": 4, **LAUNCH})


ATTENTION = dict(HAS_KPM=True, HAS_DROPOUT=True, PRECISION="tf32", BLOCK_M=64, BLOCK_N=64, BLOCK_D=64)


@pytest.mark.slow
@pytest.mark.parametrize("kernel, constexprs", [
    (attention._forward_kernel, ATTENTION),
    (attention._backward_query_kernel, ATTENTION),
    (attention._backward_key_kernel, ATTENTION),
    (pool._pool_forward_kernel, dict(REDUCE=2, BLOCK_S=16, BLOCK_N=16, BLOCK_D=32)),
    (pool._pool_forward_kernel, dict(REDUCE=1, BLOCK_S=32, BLOCK_N=64, BLOCK_D=64)),
    (pool._pool_backward_kernel, dict(REDUCE=2, BLOCK_N=64, BLOCK_D=64)),
], ids=["attention-forward", "attention-dq", "attention-dkdv", "pool-max", "pool-mean", "pool-backward"])
def test_kernel_compiles_for_hopper(kernel, constexprs, tmp_path, monkeypatch):
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path))
    compiled = _compile(kernel, constexprs)
    assert compiled.asm["cubin"]  # ptxas produced machine code
    assert 0 <= compiled.metadata.shared <= SHARED_MEMORY_BYTES
