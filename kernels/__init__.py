"""Fused ops for gaze-text models: masked cross-attention and fixation-to-word pooling.

Each op has one public function that dispatches to a Triton kernel for CUDA tensors and to a PyTorch reference
everywhere else (``backend="reference"`` / ``"triton"`` override). This package imports only torch (and triton,
lazily, on first GPU call). Installed, it is ``readgaze.kernels``.
"""


def _installed_kernels():
    """The PyPI distribution ``kernels`` where this folder was reached by that top-level name, else None.

    A process started in a readgaze checkout (``python -m pytest``, ``python -m readgaze``) has the checkout's root
    first on sys.path, so ``import kernels`` finds this folder. That name belongs to the PyPI distribution
    ``kernels``, which transformers >= 5.25 requires and imports: the checkout must not hide it.
    """
    if __name__ != "kernels":
        return None
    import importlib.machinery
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    elsewhere = [p for p in sys.path if Path(p or ".").resolve() != root]
    spec = importlib.machinery.PathFinder.find_spec("kernels", elsewhere)
    return spec if spec is not None and spec.loader is not None else None


if (_spec := _installed_kernels()) is not None:  # hand the name over (the import returns sys.modules["kernels"])
    import importlib.util as _util
    import sys as _sys

    _sys.modules["kernels"] = _util.module_from_spec(_spec)
    _spec.loader.exec_module(_sys.modules["kernels"])
else:
    from readgaze.kernels.cross_attention import cross_attention
    from readgaze.kernels.segment_pool import segment_pool

    __all__ = ["cross_attention", "segment_pool"]
