"""``njit`` that imports numba on first call, so that importing :mod:`readgaze.lines` (or the measures, or the
alignment) does not.

Private to the ``readgaze`` package and its subpackages: the compiled kernels of the line assigners
(:mod:`readgaze.lines`), the word measures (``readgaze._measures_pass``) and the alignment search
(``readgaze._align_search``) are decorated here.

``readgaze prep`` with ``slice`` or ``nearest`` never runs a compiled kernel, and importing numba costs about
0.5 CPU s and 70 MB of resident memory. A function decorated here stays a plain Python function wrapper until
one of the module's kernels is first called; then every kernel of that module becomes a numba dispatcher at once
(kernels call each other, and numba resolves those calls through the module's globals when it compiles), with
``cache=True`` so a later process loads the compiled code from ``__pycache__``.
"""

from __future__ import annotations

import functools
import sys
import threading

_LOCK = threading.RLock()


class _Lazy:
    """A kernel not compiled yet; calling it compiles its whole module's kernels, then runs the real one."""

    def __init__(self, func, nogil: bool = False):
        self.py_func, self.nogil = func, nogil
        functools.update_wrapper(self, func)

    def __call__(self, *args):
        module = sys.modules[self.py_func.__module__]
        with _LOCK:  # one thread loads numba and compiles a module; another waits, then finds it compiled
            load_numba()
            compile_module(module)
        return getattr(module, self.py_func.__name__)(*args)


def njit(func=None, *, nogil: bool = False, **_):
    """``@njit``, ``@njit(cache=True)`` or ``@njit(cache=True, nogil=True)``: the function, compiled with
    ``numba.njit(cache=True)`` on first use (``nogil``: the compiled code releases the GIL while it runs, so that
    another Python thread runs beside it)."""
    if func is not None:
        return _Lazy(func, nogil)
    return lambda f: _Lazy(f, nogil)


_COMPILING: set = set()


def compile_module(module) -> None:
    """Replace every :class:`_Lazy` kernel in ``module``'s globals with its numba dispatcher.

    A kernel imported from another module (``from readgaze._pairwise import pairwise``) becomes that
    module's dispatcher, after that module's kernels are compiled too (numba resolves a kernel's calls
    through the globals of the module that defines it).
    """
    from numba import njit as numba_njit

    _COMPILING.add(module.__name__)
    imported = []
    for name, value in list(vars(module).items()):
        if isinstance(value, _Lazy):
            if value.py_func.__module__ == module.__name__:
                setattr(module, name, numba_njit(cache=True, nogil=value.nogil)(value.py_func))
            else:
                imported.append((name, value))
    for name, value in imported:
        home = sys.modules[value.py_func.__module__]
        if home.__name__ not in _COMPILING:
            compile_module(home)
        own = getattr(home, value.py_func.__name__)
        setattr(module, name, own if not isinstance(own, _Lazy) else
                numba_njit(cache=True, nogil=value.nogil)(value.py_func))


def load_numba() -> None:
    """Import numba's array-math registry without its BLAS probe (once per process; called before any kernel).

    Loading any compiled function, even from the cache, imports ``numba.np.arraymath``, whose import checks for
    BLAS by importing ``scipy.linalg`` (0.2-0.4 of the 0.7-1.0 CPU s numba's first call costs). That answer is
    kept for the process and only decides whether compiled ``np.correlate`` / ``np.convolve`` may call BLAS
    (else they use a plain loop); no readgaze kernel uses them, and numba's ``np.dot`` / linalg load BLAS
    themselves when a kernel types them. So, unless scipy.linalg is imported already (then the probe costs
    nothing), the probe answers "absent" while ``numba.np.arraymath`` is imported (numba's ``ensure_blas`` is
    swapped for that import only, in every thread, and restored after it).
    """
    if "numba.np.arraymath" in sys.modules or "scipy.linalg" in sys.modules:
        return
    with _LOCK:  # two threads of the pipeline may both get here (readgaze.data_prep.pipeline runs two)
        if "numba.np.arraymath" in sys.modules:
            return
        import numba.np.linalg as linalg

        probe = linalg.ensure_blas

        def absent():
            raise ImportError("BLAS probe skipped by readgaze")

        linalg.ensure_blas = absent
        try:
            import numba.np.arraymath  # noqa: F401
        finally:
            linalg.ensure_blas = probe
