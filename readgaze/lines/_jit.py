"""The lazily compiling ``njit`` of the line assigners' kernels: :mod:`readgaze._jit` (shared with the measures and
the alignment), imported here under the name the kernels of :mod:`readgaze.lines` use."""

from readgaze._jit import compile_module, load_numba, njit

__all__ = ["compile_module", "load_numba", "njit"]
