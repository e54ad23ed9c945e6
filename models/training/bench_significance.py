"""The leaderboard's significance tests (``readgaze bench``, :mod:`readgaze.models.training.bench_report`).

Significance: each model and ensemble against the column's strongest baseline (the baseline with the highest
mean in that column: the hardest reference), two tests, each Holm-adjusted over the rows of a column:

* over folds, the corrected resampled t-test (Nadeau & Bengio, 2003, Machine Learning 52:239; Bouckaert & Frank,
  2004): ``t = mean(d) / sqrt((1/k + n_test/n_train) var(d))`` over the k per-fold differences d, k - 1 degrees of
  freedom, two-sided. Why not the plain paired t-test: the folds' training sets overlap (each pair shares most of
  its trials), so per-fold scores are positively correlated and the plain test's variance is too small, its p too
  optimistic (Dietterich, 1998); the correction inflates the variance by the test/train size ratio. No test (no
  p, no star) with fewer than :data:`MIN_T_TEST_FOLDS` folds or when the k differences are equal (zero variance:
  the t statistic is infinite, which is no evidence). ``*``, ``**``, ``***``: adjusted p < 0.05, 0.01, 0.001.
* over trials (AUROC tables), the paired permutation test of ``readgaze cv --ablate``
  (:func:`readgaze.metrics.paired_comparison`: each test trial's two predictions swapped at random, within folds;
  :data:`N_PERMUTATIONS` permutations, two-sided); valid with any number of folds. ``+``, ``++``, ``+++``:
  adjusted p < 0.05, 0.01, 0.001.
"""

from __future__ import annotations

import math

import numpy as np

MIN_T_TEST_FOLDS = 3
"""Fewer folds than this: no t-test over folds (2 folds give one degree of freedom: no evidence)."""
N_PERMUTATIONS = 2000
"""Permutations of the paired test over trials (the smallest p it can give: 1 / 2001)."""


def corrected_t_test(differences: np.ndarray, ratio: float) -> tuple[float | None, float | None]:
    """Two-sided corrected resampled t-test (see the module docstring): ``(t, p)``; ``(None, None)`` with fewer
    than :data:`MIN_T_TEST_FOLDS` folds or when the differences are all equal (zero variance, up to rounding)."""
    from scipy import stats

    k = len(differences)
    if k < MIN_T_TEST_FOLDS:
        return None, None
    variance = float(np.var(differences, ddof=1))
    scale = float(np.max(np.abs(differences)))
    if not variance > (1e-9 * scale) ** 2:  # equal differences computed in floating point: var ~ 1e-33, not 0
        return None, None
    t = float(np.mean(differences)) / math.sqrt((1 / k + ratio) * variance)
    return t, float(2 * stats.t.sf(abs(t), df=k - 1))


def holm(p_values: list[float | None]) -> list[float | None]:
    """Holm's step-down adjustment of the non-None p-values (family: the list)."""
    indexed = sorted((p, i) for i, p in enumerate(p_values) if p is not None)
    adjusted: list[float | None] = [None] * len(p_values)
    running = 0.0
    for rank, (p, i) in enumerate(indexed):
        running = max(running, min(1.0, (len(indexed) - rank) * p))
        adjusted[i] = running
    return adjusted


def stars(p: float | None, mark: str = "*") -> str:
    """``mark`` once, twice or three times for p < 0.05, 0.01, 0.001; ``""`` for no test or p >= 0.05."""
    if p is None:
        return ""
    return mark * 3 if p < 0.001 else mark * 2 if p < 0.01 else mark if p < 0.05 else ""


def significance_note(n_folds: list[int]) -> str:
    """The leaderboard's note on its tests, with the numbers of folds of the run's tested cells (``n_folds``: the
    models' and ensembles' cells)."""
    k = sorted(set(n_folds))
    folds = "/".join(map(str, k)) or "0"
    t_test = ("the corrected resampled t-test (Nadeau & Bengio 2003: the folds' training sets overlap, so the plain "
              "paired t-test is too optimistic), two-sided, Holm-adjusted over the rows of a column; * p < 0.05, "
              f"** p < 0.01, *** p < 0.001; over the {folds} folds of this run")
    if max(k, default=0) < MIN_T_TEST_FOLDS:
        t_test = (f"no t-test over folds: this run has {folds} fold(s), fewer than {MIN_T_TEST_FOLDS} (one degree of "
                  "freedom is no evidence)")
    else:
        if k[0] < MIN_T_TEST_FOLDS:
            t_test += f" (none for a cell of fewer than {MIN_T_TEST_FOLDS} folds)"
        t_test += "; none where every fold's difference is the same (zero variance)"
        if max(k) <= 5:
            t_test += f"; with {max(k)} folds only large, consistent differences can reach significance"
    return ("Significance: each model and ensemble against the column's strongest baseline, paired. Over folds: "
            f"{t_test}. Over trials (AUROC tables): the paired permutation test of readgaze cv --ablate (each test "
            f"trial's two predictions swapped at random within its fold, {N_PERMUTATIONS} permutations, two-sided), "
            "Holm-adjusted; + p < 0.05, ++ p < 0.01, +++ p < 0.001. Every p in leaderboard.csv.")
