"""The lazy ``njit`` (readgaze/lines/_jit.py) loads numba's first kernel without numba's scipy BLAS probe.

Numba's first compile or cache load in a process imports ``numba.np.arraymath``, which imports ``scipy.linalg``
(0.2-0.4 CPU s) only to decide whether ``np.correlate`` / ``np.convolve`` may call BLAS.
:func:`readgaze.lines._jit.load_numba` answers that probe "absent" for that one import and restores numba's
``ensure_blas`` afterwards.
"""

import json
import subprocess
import sys

CODE = r"""
import json, sys
import numpy as np
import numba.np.linalg as la
probe = la.ensure_blas
from readgaze.lines import assign_trials
xy = np.array([[0., 0], [10, 1], [20, 0], [30, 1], [0, 30], [10, 31], [20, 30], [30, 31]])
lines = assign_trials([(xy, np.array([0., 30.]), None, None)], "cluster")[0].tolist()
print(json.dumps({"lines": lines, "scipy_linalg": "scipy.linalg" in sys.modules, "restored": la.ensure_blas is probe}))
"""


def test_first_lazy_kernel_skips_the_blas_probe():
    """cluster's kernels come through the lazy njit: the first call must not import scipy.linalg."""
    done = subprocess.run([sys.executable, "-c", CODE], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    got = json.loads(done.stdout.strip().splitlines()[-1])
    assert got["lines"] == [0, 0, 0, 0, 1, 1, 1, 1]  # the compiled cluster kernel ran and gave the right lines
    assert got["scipy_linalg"] is False  # numba's probe import was skipped
    assert got["restored"] is True  # numba's own ensure_blas is back for np.dot / linalg in later kernels
