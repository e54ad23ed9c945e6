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
"""

from __future__ import annotations

import numpy as np

from readgaze.lines._common import break_points, line_pitch, pitch_scale, scaled_px, segment_ids


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


def slice_many(trials: list[tuple], *, x_thresh: float | None = None, y_thresh: float | None = None,
               w_thresh: float | None = None, n_thresh: float | None = None,
               edge_phantoms: bool = False) -> list[np.ndarray]:
    """:func:`slice` for many trials at once: every trial grows its proto-lines in the same vectorized steps.

    Parameters
    ----------
    trials : list of (xy, line_y_px, word_xy, word_line)
        As :func:`readgaze.lines.assign_trials` (the word arrays are not used).
    x_thresh, y_thresh, w_thresh, n_thresh, edge_phantoms
        As :func:`slice` (a ``None`` threshold scales with each trial's own pitch).

    Returns
    -------
    list of ndarray, int64, shape (n_fixations,)
        :func:`slice`'s lines for each trial.

    Notes
    -----
    Each growth step (one direction of one round of step 3) runs for all trials still growing: the runs' mean
    offsets come from one sorted search of every remaining fixation among its trial's edge proto-line (ties to
    the point that joined first, as in :func:`slice`). Trials left with runs that never joined (step 4, where
    each leftover run changes the reference of the next) are finished one at a time by :func:`slice`. Means
    here are running sums where :func:`slice` uses NumPy's pairwise sums, so a phantom's position or a
    placement cost can differ in the last bit; the lines differ only if that bit decides a threshold
    comparison or a tie between placements.
    """
    out: list[np.ndarray | None] = [None] * len(trials)
    keep = [k for k, t in enumerate(trials) if len(t[0]) > 0]
    for k in set(range(len(trials))) - set(keep):
        out[k] = np.zeros(0, dtype=np.int64)
    if not keep:
        return out
    params = dict(x_thresh=x_thresh, y_thresh=y_thresh, w_thresh=w_thresh, n_thresh=n_thresh)
    lines, unfinished = _slice_batch([np.asarray(trials[k][0], dtype=np.float64) for k in keep],
                                     [np.asarray(trials[k][1], dtype=np.float64) for k in keep],
                                     params, edge_phantoms)
    for j, k in enumerate(keep):
        out[k] = (slice(trials[k][0], trials[k][1], edge_phantoms=edge_phantoms, **params)
                  if unfinished[j] else lines[j])
    return out


def _slice_batch(xys: list[np.ndarray], line_ys: list[np.ndarray], params: dict, edge_phantoms: bool):
    """Steps 1-3 and 5-7 of :func:`slice` for trials with at least one fixation; see :func:`slice_many`.

    Returns ``(lines per trial, unfinished)``: ``unfinished[t]`` is True where step 4 (leftover runs) applies.
    """
    n_trials = len(xys)
    sizes = np.array([len(a) for a in xys])
    xy = np.concatenate(xys)
    x, y = xy[:, 0], xy[:, 1]
    trial = np.repeat(np.arange(n_trials), sizes)
    per_layout: dict[bytes, tuple[float, float]] = {}         # trials of one text share its midlines
    keys = [ly.tobytes() for ly in line_ys]
    for k, ly in zip(keys, line_ys):
        if k not in per_layout:
            per_layout[k] = (pitch_scale(ly), line_pitch(ly))
    scale = np.array([per_layout[k][0] for k in keys])
    pitch = np.array([per_layout[k][1] for k in keys])
    n_lines = np.array([len(ly) for ly in line_ys])
    x_t, y_t = (np.array([scaled_px(params[k], carr, s) for s in scale]) for k, carr in
                (("x_thresh", 192.0), ("y_thresh", 32.0)))
    w_t, n_t = (np.array([scaled_px(params[k], carr, s) for s in scale]) for k, carr in
                (("w_thresh", 32.0), ("n_thresh", 90.0)))
    # Step 1: runs (never across trials).
    d = np.abs(np.diff(xy, axis=0))
    cut = (trial[1:] != trial[:-1]) | (d[:, 0] > x_t[trial[1:]]) | (d[:, 1] > y_t[trial[1:]])
    run = np.concatenate([[0], np.cumsum(cut)])
    run_first = np.flatnonzero(np.r_[True, cut])
    run_last = np.r_[run_first[1:] - 1, len(x) - 1]
    run_trial = trial[run_first]
    n_runs = len(run_first)
    # Step 2: the widest run of each trial (the first on ties) is proto-line 0.
    width = x[run_last] - x[run_first]
    trial_run0 = np.flatnonzero(np.r_[True, run_trial[1:] != run_trial[:-1]])
    widest = width == np.maximum.reduceat(width, trial_run0)[run_trial]
    seed = np.minimum.reduceat(np.where(widest, np.arange(n_runs), n_runs), trial_run0)
    free = np.iinfo(np.int64).min
    run_key = np.full(n_runs, free, dtype=np.int64)
    run_key[seed] = 0
    joined = np.where(run_key[run] == 0, 0, -1)              # step at which each fixation joined a proto-line
    top = np.zeros(n_trials, dtype=np.int64)
    bottom = np.zeros(n_trials, dtype=np.int64)
    phantom = {-1: np.full((n_trials, 2), np.nan), 1: np.full((n_trials, 2), np.nan)}   # of the empty edges
    growing = np.ones(n_trials, dtype=bool)
    x_min = float(x.min())
    span = 2.0 ** np.ceil(np.log2(float(x.max()) - x_min + 2.0)) * 2.0    # trial-major sort key, px apart
    step = 0
    # Step 3: grow all trials together, one direction at a time.
    while True:
        remaining = np.bincount(run_trial[run_key == free], minlength=n_trials)
        growing &= remaining > 0
        if not growing.any():
            break
        merged = np.zeros(n_trials, dtype=bool)
        edges = {-1: top.copy(), 1: bottom.copy()}            # both taken at the start of the round
        for direction in (-1, 1):
            new_edge = edges[direction] + direction
            if direction == -1:
                top = np.where(growing, new_edge, top)
            else:
                bottom = np.where(growing, new_edge, bottom)
            remaining = np.bincount(run_trial[run_key == free], minlength=n_trials)
            active = growing & (remaining > 0)
            if not active.any():
                break
            step += 1
            edge = edges[direction]
            key = run_key[run]
            ref = np.flatnonzero(active[trial] & (key == edge[trial]))
            empty = active & (np.bincount(trial[ref], minlength=n_trials) == 0)
            ph = np.flatnonzero(empty)
            ref_t = np.concatenate([trial[ref], ph])
            ref_x = np.concatenate([x[ref], phantom[direction][ph, 0]])   # an empty edge is its phantom point
            ref_y = np.concatenate([y[ref], phantom[direction][ph, 1]])
            ref_rank = np.concatenate([joined[ref], np.zeros(len(ph), dtype=np.int64)])
            ref_pos = np.concatenate([ref, np.full(len(ph), -1)])
            order = np.lexsort((ref_pos, ref_rank, ref_x, ref_t))
            ref_t, ref_x, ref_y, ref_rank, ref_pos = (a[order] for a in (ref_t, ref_x, ref_y, ref_rank, ref_pos))
            new_group = np.r_[True, (ref_t[1:] != ref_t[:-1]) | (ref_x[1:] != ref_x[:-1])]
            group_first = np.maximum.accumulate(np.where(new_group, np.arange(len(ref_t)), 0))
            ref_key = ref_t * span + (ref_x - x_min)
            query = np.flatnonzero(active[trial] & (key == free))
            q_t, q_x = trial[query], x[query]
            p = np.searchsorted(ref_key, q_t * span + (q_x - x_min), side="left")
            left = group_first[np.maximum(p - 1, 0)]
            right = group_first[np.minimum(p, len(ref_t) - 1)]
            ok_left = (p > 0) & (ref_t[left] == q_t)
            ok_right = (p < len(ref_t)) & (ref_t[right] == q_t)
            d_left = np.where(ok_left, np.abs(q_x - ref_x[left]), np.inf)
            d_right = np.where(ok_right, np.abs(q_x - ref_x[right]), np.inf)
            earlier_left = (ref_rank[left] < ref_rank[right]) | (
                (ref_rank[left] == ref_rank[right]) & (ref_pos[left] < ref_pos[right]))
            nearest = np.where((d_left < d_right) | ((d_left == d_right) & earlier_left), left, right)
            q_run = run[query]
            offset = (np.bincount(q_run, weights=y[query] - ref_y[nearest], minlength=n_runs)
                      / np.maximum(np.bincount(q_run, minlength=n_runs), 1))
            open_run = np.flatnonzero(np.bincount(q_run, minlength=n_runs) > 0)
            o, t_of = offset[open_run], run_trial[open_run]
            into_edge = np.abs(o) < w_t[t_of]
            into_next = (o * direction >= w_t[t_of]) & (o * direction < n_t[t_of])
            run_key[open_run[into_edge]] = edge[t_of[into_edge]]
            run_key[open_run[into_next]] = new_edge[t_of[into_next]]
            took = np.zeros(n_runs, dtype=bool)
            took[open_run[into_edge | into_next]] = True
            joined[query[took[q_run]]] = step
            merged |= np.bincount(t_of, weights=into_edge | into_next, minlength=n_trials) > 0
            # a phantom one pitch outward where nothing joined the next proto-line
            no_next = active & (np.bincount(t_of, weights=into_next, minlength=n_trials) == 0)
            count_ref = np.bincount(ref_t, minlength=n_trials)
            mean_x = np.bincount(ref_t, weights=ref_x, minlength=n_trials) / np.maximum(count_ref, 1)
            mean_y = np.bincount(ref_t, weights=ref_y, minlength=n_trials) / np.maximum(count_ref, 1)
            phantom[direction] = np.where(no_next[:, None], np.column_stack([mean_x, mean_y + pitch * direction]),
                                          np.where(active[:, None], np.nan, phantom[direction]))
        growing &= merged
    unfinished = np.bincount(run_trial[run_key == free], minlength=n_trials) > 0
    # Steps 5-7 from the proto-line sizes.
    key = np.where(run_key[run] == free, 0, run_key[run])
    offset_key = top[trial]
    n_keys = (bottom - top + 1).max()
    count = np.zeros((n_trials, n_keys), dtype=np.int64)
    np.add.at(count, (trial, key - offset_key), 1)
    first_key = np.zeros(n_trials, dtype=np.int64)
    last_key = bottom - top
    if not edge_phantoms:
        nonempty = count > 0
        first_key = nonempty.argmax(axis=1)
        last_key = n_keys - 1 - nonempty[:, ::-1].argmax(axis=1)
    rows = np.arange(n_trials)
    while True:
        fold = (last_key - first_key + 1) > n_lines
        if not fold.any():
            break
        f = np.flatnonzero(fold)
        up = count[f, first_key[f]] < count[f, last_key[f]]
        fu, fd = f[up], f[~up]
        count[fu, first_key[fu] + 1] += count[fu, first_key[fu]]
        first_key[fu] += 1
        count[fd, last_key[fd] - 1] += count[fd, last_key[fd]]
        last_key[fd] -= 1
    final = np.clip(key - offset_key, first_key[trial], last_key[trial]) - first_key[trial]
    start_line = np.zeros(n_trials, dtype=np.int64)
    if not edge_phantoms:
        n_groups = last_key - first_key + 1
        g_max = int(n_groups.max())
        cnt = np.zeros((n_trials, g_max))
        tot = np.zeros((n_trials, g_max))
        np.add.at(cnt, (trial, final), 1.0)
        np.add.at(tot, (trial, final), y)
        mean = np.where(cnt > 0, tot / np.maximum(cnt, 1.0), 0.0)
        l_max = int(n_lines.max())
        line_y = np.zeros((n_trials, l_max + g_max))
        for t, ly in enumerate(line_ys):
            line_y[t, :len(ly)] = ly
        n_free = n_lines - n_groups
        cost = np.full((n_trials, max(int(n_free.max()), 0) + 1), np.inf)
        for k in range(cost.shape[1]):
            c = (cnt * np.abs(mean - line_y[:, k:k + g_max])).sum(axis=1)
            cost[:, k] = np.where(k <= np.maximum(n_free, 0), c, np.inf)
        start_line = np.where(n_free > 0, cost.argmin(axis=1), 0)
    lines = final + start_line[trial]
    return np.split(lines.astype(np.int64), np.cumsum(sizes)[:-1]), unfinished


slice.assign_many = slice_many  # readgaze.lines.assign_trials / assign_lines batch the trials through this
