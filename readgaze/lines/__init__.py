"""Line assignment: which text line each fixation was aimed at, correcting vertical drift.

One interface for every method. :func:`assign_trial` works on one trial's NumPy arrays, :func:`assign_trials`
on many, :func:`assign_batch` on a :class:`~readgaze.lines.batch.Batch` of flat arrays, and :func:`assign_lines`
on canonical ``fixations`` / ``words`` / ``trials`` frames (adding ``line_index``). A method is a
:class:`~readgaze.lines.protocol.LineAssigner` (one trial, many trials, a batch; :mod:`readgaze.lines.protocol`):
``method=`` is looked up in :data:`METHODS` (:mod:`readgaze.lines.registry`; ``vote`` joins it at the foot of this
module), then among the plugins of the entry point group ``readgaze.line_assigners`` (e.g. ``dist`` from
``readgaze.models.dist``; readgaze never imports models). The functions live in :mod:`readgaze.lines.assign`
(arrays) and :mod:`readgaze.lines.frame` (frames); this package re-exports them.
``slice``, ``cluster``, ``warp``, ``chain``, ``split``, ``segment`` and ``vote`` assign many trials in one
batched pass; ``slice`` and ``attach`` also work across a Batch's trials with array operations.

The 11 classical algorithms follow Carr et al. (2022) and the definitions in their papers; readgaze's own
code, validated against gold labels on Carr et al.'s 24-trial developer set (``readgaze eval-lines``).
Departure from eyekit: pixel thresholds scale with line pitch. Each px default (slice, chain, merge, regress,
stretch, compare) is ``None``, meaning Carr et al.'s value times (median midline spacing / 64 px), so it equals
the published number on their 64-px layout; a number passed explicitly is px. ``merge`` and ``stretch`` scale
down only (factor ``min(1, pitch / 64)``): their thresholds bound tracker error, not layout (see each method).
``slice`` also drops empty edge
phantom lines (``edge_phantoms=True`` restores eyekit's behaviour).

References
----------
Carr, J. W., Pescuma, V. N., Furlan, M., Ktori, M., & Crepaldi, D. (2022). Algorithms for the automated
correction of vertical drift in eye-tracking data. Behavior Research Methods, 54(1), 287-310.
doi:10.3758/s13428-021-01554-0

Examples
--------
>>> import numpy as np
>>> from readgaze.lines import assign_trial
>>> assign_trial(np.array([[10.0, 98.0], [50.0, 161.0]]), np.array([100.0, 150.0]), "cluster")
array([0, 1])
"""

from __future__ import annotations

from readgaze.errors import ConfigError  # noqa: F401 (readgaze.lines.ConfigError, as before)
from readgaze.lines.assign import (
    CheckedTrials,
    assign_batch,
    assign_trial,
    assign_trials,
    assign_trials_reported,
    check_trials,
)
from readgaze.lines.attach import attach, attach_batch  # noqa: F401 (re-exported)
from readgaze.lines.chain import chain, chain_many  # noqa: F401 (re-exported)
from readgaze.lines.cluster import cluster, cluster_many  # noqa: F401 (re-exported)
from readgaze.lines.compare import compare  # noqa: F401 (re-exported)
from readgaze.lines.frame import assign_lines
from readgaze.lines.merge import merge  # noqa: F401 (re-exported)
from readgaze.lines.protocol import LAYOUT_PARAMS, LineAssigner, Method, ReportingLineAssigner, TrialFlags, as_assigner  # noqa: F401
from readgaze.lines.registry import CLASSICAL, ENTRY_POINT_GROUP, METHODS, accepted_params, get_method, plugins  # noqa: F401
from readgaze.lines.regress import regress  # noqa: F401 (re-exported)
from readgaze.lines.segment import segment, segment_many  # noqa: F401 (re-exported)
from readgaze.lines.slice import slice, slice_batch, slice_many  # noqa: A004, F401 (the method's published name)
from readgaze.lines.split import split, split_many  # noqa: F401 (re-exported)
from readgaze.lines.stretch import stretch  # noqa: F401 (re-exported)
from readgaze.lines.vote import majority, vote, vote_many
from readgaze.lines.warp import warp, warp_many  # noqa: F401 (re-exported)

# vote runs the methods of the table, so it joins the table here rather than in readgaze.lines.registry
METHODS["vote"] = Method("vote", vote, many=vote_many)
METHODS["nearest"] = METHODS["attach"]

__all__ = ["assign_trial", "assign_trials", "assign_trials_reported", "assign_batch", "assign_lines", "check_trials",
           "CheckedTrials", "get_method", "accepted_params", "majority", "LineAssigner", "Method",
           "ReportingLineAssigner", "TrialFlags", "METHODS", "CLASSICAL"]
