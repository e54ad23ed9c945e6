"""``slice``: grow proto-lines outward from the widest run of fixations (Glandorf & Schroeder 2021).

1. Cut the sequence into runs after every saccade with ``|dx| > x_thresh`` or ``|dy| > y_thresh``.
2. The run with the widest x extent (last minus first x) seeds proto-line 0.
3. Grow upward and downward in turn. A run's offset from an edge proto-line is the mean, over the run's
   fixations, of its y minus the y of the proto-line fixation nearest in x. Offsets with ``|d| < w_thresh``
   join the edge proto-line; offsets of ``w_thresh <= d < n_thresh`` in the outward direction join the next
   proto-line out. When nothing joins the next proto-line, it becomes a phantom: one point at the edge
   line's mean x and its mean y plus one line pitch outward. Stop when a round merges nothing.
4. Leftover runs join the proto-line (or phantom) with the smallest absolute offset.
5. (readgaze, unless ``edge_phantoms=True``) Drop the empty phantoms above the top and below the bottom
   proto-line with fixations.
6. While there are more proto-lines than text lines, fold the edge proto-line with fewer fixations into
   its neighbour (the bottom one on ties).
7. Proto-lines, top-down, go to consecutive lines: from line 0 with ``edge_phantoms=True`` (eyekit); else
   from the first line that puts the proto-lines' mean y nearest to the midlines (summed over fixations).

This module is the one-trial definition; :mod:`readgaze.lines.slice_arrays` runs the same steps for many trials at
once (``slice_many``, ``slice_batch``), bit for bit.
"""

from __future__ import annotations

import numpy as np

from readgaze.lines._common import break_points, line_pitch, pitch_scale, scaled_px, segment_ids
from readgaze.lines.slice_arrays import slice_batch, slice_many  # noqa: F401 (the batched forms, re-exported)


def _offsets(xy: np.ndarray, ref: np.ndarray, runs: list[np.ndarray]) -> np.ndarray:
    """Mean y offset of each run from the reference points (nearest reference point in x), shape (len(runs),)."""
    fix = np.concatenate(runs)
    run_of = np.repeat(np.arange(len(runs)), [len(r) for r in runs])
    nearest = np.abs(ref[None, :, 0] - xy[fix, 0][:, None]).argmin(axis=1)
    dy = xy[fix, 1] - ref[nearest, 1]
    return np.bincount(run_of, weights=dy) / np.bincount(run_of)


def _points(xy: np.ndarray, protos: dict, phantoms: dict, key: int) -> np.ndarray:
    """Fixation positions of a proto-line, or its phantom point when it has no fixations."""
    return xy[np.array(protos[key], dtype=np.int64)] if protos[key] else phantoms[key]


def _grow(xy: np.ndarray, runs: list[np.ndarray], pitch: float, w_thresh: float, n_thresh: float):
    """Steps 2-4: seed, grow up and down, place leftovers. Returns ``(protos, phantoms)``."""
    width = [xy[r[-1], 0] - xy[r[0], 0] for r in runs]
    protos: dict[int, list[int]] = {0: list(runs.pop(int(np.argmax(width))))}
    phantoms: dict[int, np.ndarray] = {}
    while runs:
        merged = False
        for edge, direction in ((min(protos), -1), (max(protos), 1)):
            protos[edge + direction] = []
            if not runs:
                break
            ref = _points(xy, protos, phantoms, edge)
            d = _offsets(xy, ref, runs)
            into_edge = np.flatnonzero(np.abs(d) < w_thresh)
            into_next = np.flatnonzero((d * direction >= w_thresh) & (d * direction < n_thresh))
            for r in into_edge:
                protos[edge].extend(runs[r])
            for r in into_next:
                protos[edge + direction].extend(runs[r])
            if len(into_next) == 0:
                phantoms[edge + direction] = np.array([[ref[:, 0].mean(), ref[:, 1].mean() + pitch * direction]])
            taken = set(into_edge.tolist()) | set(into_next.tolist())
            runs = [r for i, r in enumerate(runs) if i not in taken]
            merged = merged or bool(taken)
        if not merged:
            break
    keys = sorted(protos)
    for run in runs:
        d = [abs(_offsets(xy, _points(xy, protos, phantoms, k), [run])[0]) for k in keys]
        protos[keys[int(np.argmin(d))]].extend(run)
    return protos


def slice(xy: np.ndarray, line_y_px: np.ndarray, *, x_thresh: float | None = None, y_thresh: float | None = None,
          w_thresh: float | None = None, n_thresh: float | None = None,
          edge_phantoms: bool = False) -> np.ndarray:  # noqa: A001 (the method's name)
    """Assign fixations by growing proto-lines of runs outward from the widest run.

    Parameters
    ----------
    xy : ndarray, float64, shape (n_fixations, 2)
        Fixation positions in px, temporal order.
    line_y_px : ndarray, float64, shape (n_lines,)
        Line midlines in px, top to bottom; their mean spacing is the pitch of phantom lines, their median
        spacing ``P`` scales the default thresholds.
    x_thresh, y_thresh : float, optional
        Saccade amplitudes in px that end a run (default ``None``: 192 and 32 px times ``P / 64``).
    w_thresh : float, optional
        Largest |offset| in px of a run that joins the edge proto-line (default ``None``: 32 px times ``P / 64``).
    n_thresh : float, optional
        Offset in px below which an outward run joins the next proto-line (default ``None``: 90 px times
        ``P / 64``).
    edge_phantoms : bool
        ``True``: keep the empty phantom proto-lines left at the edges and map the proto-lines from line 0,
        as eyekit 0.7.1 does. ``False`` (default): drop them and place the proto-lines where they fit.

    Returns
    -------
    ndarray, int64, shape (n_fixations,)
        0-based line index per fixation.

    Notes
    -----
    Departure from eyekit: thresholds scale with line pitch. Glandorf & Schroeder's and eyekit's 192/32/32/90
    px were set for Carr et al.'s 64-px pitch; readgaze's defaults are those numbers times ``P / 64``, so they
    are unchanged on 64-px layouts (and on Carr et al.'s data) and follow the text on others (OneStop: about
    114 px). A number passed explicitly is taken as px.

    Departure from eyekit: empty edge phantoms are dropped. eyekit counts them as proto-lines, so when a
    reader reads fewer lines than the text has (skimming, searching for an answer) the whole reading lands
    one or more lines too low: on simulated trials with only the first 3 of 6-8 lines read it scores 54 %,
    with the last 3 read 0 %; readgaze's default 100 % (``tests/test_lines_pitch.py``). On Carr et al.'s
    trials, where every line is read, both give the same lines. A run of a skipped line that the growth
    does not reach still joins the nearest proto-line or phantom (step 4), as in eyekit.

    References
    ----------
    Glandorf, D., & Schroeder, S. (2021). Slice: An algorithm to assign fixations in multi-line texts.
    Procedia Computer Science, 192, 2971-2979. doi:10.1016/j.procs.2021.09.069.

    Examples
    --------
    >>> xy = np.array([[0, 100], [80, 103], [200, 108], [0, 160], [90, 165], [200, 170]], dtype=float)
    >>> slice(xy, np.array([100.0, 164.0]))
    array([0, 0, 0, 1, 1, 1])
    """
    scale = pitch_scale(line_y_px)
    x_thresh, y_thresh = scaled_px(x_thresh, 192.0, scale), scaled_px(y_thresh, 32.0, scale)
    w_thresh, n_thresh = scaled_px(w_thresh, 32.0, scale), scaled_px(n_thresh, 90.0, scale)
    d = np.abs(np.diff(xy, axis=0))
    starts = break_points((d[:, 0] > x_thresh) | (d[:, 1] > y_thresh))
    ids = segment_ids(starts, len(xy))
    runs = [np.flatnonzero(ids == k) for k in range(len(starts))]
    protos = _grow(xy, runs, line_pitch(line_y_px), w_thresh, n_thresh)
    if not edge_phantoms:
        _drop_empty_edges(protos)
    while len(protos) > len(line_y_px):
        top, bottom = min(protos), max(protos)
        if len(protos[top]) < len(protos[bottom]):
            protos[top + 1].extend(protos.pop(top))
        else:
            protos[bottom - 1].extend(protos.pop(bottom))
    keys = sorted(protos)
    first = 0 if edge_phantoms else _best_offset(xy, [protos[k] for k in keys], line_y_px)
    out = np.zeros(len(xy), dtype=np.int64)
    for line, key in enumerate(keys, start=first):
        out[np.array(protos[key], dtype=np.int64)] = line
    return out


def _drop_empty_edges(protos: dict[int, list[int]]) -> None:
    """Remove the proto-lines without fixations (phantoms) above the topmost and below the lowest real one."""
    keys = sorted(protos)
    while len(keys) > 1 and not protos[keys[0]]:
        protos.pop(keys.pop(0))
    while len(keys) > 1 and not protos[keys[-1]]:
        protos.pop(keys.pop())


def _best_offset(xy: np.ndarray, groups: list[list[int]], line_y_px: np.ndarray) -> int:
    """First text line of the block of proto-lines (top-down): the shift that puts the fixations nearest
    to their lines' midlines (summed |y| distance of each proto-line's mean y, weighted by its fixations)."""
    n_free = len(line_y_px) - len(groups)
    if n_free <= 0:
        return 0
    count = np.array([len(g) for g in groups], dtype=np.float64)
    mean_y = np.array([xy[np.array(g, dtype=np.int64), 1].mean() if g else 0.0 for g in groups])
    cost = [float((count * np.abs(mean_y - line_y_px[k:k + len(groups)])).sum()) for k in range(n_free + 1)]
    return int(np.argmin(cost))
