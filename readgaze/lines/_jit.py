"""``njit`` that imports numba on first call, so that importing :mod:`readgaze.lines` does not.

``readgaze prep`` with ``slice`` or ``nearest`` never runs a compiled kernel, and importing numba costs about
0.5 CPU s and 70 MB of resident memory. A function decorated here stays a plain Python function wrapper until
one of the module's kernels is first called; then every kernel of that module becomes a numba dispatcher at once
(kernels call each other, and numba resolves those calls through the module's globals when it compiles), with
``cache=True`` so a later process loads the compiled code from ``__pycache__``.
"""

from __future__ import annotations

import functools
import sys


class _Lazy:
    """A kernel not compiled yet; calling it compiles its whole module's kernels, then runs the real one."""

    def __init__(self, func):
        self.py_func = func
        functools.update_wrapper(self, func)

    def __call__(self, *args):
        module = sys.modules[self.py_func.__module__]
        compile_module(module)
        return getattr(module, self.py_func.__name__)(*args)


def njit(func=None, **_):
    """``@njit`` or ``@njit(cache=True)``: the function, compiled with ``numba.njit(cache=True)`` on first use."""
    return _Lazy(func) if func is not None else _Lazy


def compile_module(module) -> None:
    """Replace every :class:`_Lazy` kernel in ``module``'s globals with its numba dispatcher."""
    from numba import njit as numba_njit

    for name, value in list(vars(module).items()):
        if isinstance(value, _Lazy):
            setattr(module, name, numba_njit(cache=True)(value.py_func))
