"""Many trials' line-assignment arrays, concatenated: the form the batched methods work on.

A :class:`Batch` holds every trial's fixations one trial after another, and every text's midlines (and word
centres) one text after another; each trial points at its text. A method batches by offering
``fn.assign_batch(batch, **params) -> (n_fixations,) int64`` (0-based lines within each trial's text) and
works on these arrays with trial offsets, never looping over trials in Python.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from readgaze.errors import ConfigError


@dataclass(frozen=True)
class Batch:
    """Trials' fixations and their texts' layouts as flat arrays.

    Attributes
    ----------
    xy : ndarray, float64, shape (n_fixations, 2)
        Fixation positions in px, trial after trial, each trial in temporal order.
    trial_start : ndarray, int64, shape (n_trials + 1,)
        Trial ``t`` owns ``xy[trial_start[t]:trial_start[t + 1]]``.
    text : ndarray, int64, shape (n_trials,)
        Each trial's text (index into the layout arrays).
    line_y : ndarray, float64, shape (n_line_rows,)
        Midlines in px, text after text, each top to bottom (strictly increasing).
    line_start : ndarray, int64, shape (n_texts + 1,)
        Text ``k`` owns ``line_y[line_start[k]:line_start[k + 1]]``.
    word_xy, word_line, word_start : ndarray or None
        Word centres (px, reading order), their 0-based line within the text, and per-text offsets; None when
        the texts have no word boxes.
    """

    xy: np.ndarray
    trial_start: np.ndarray
    text: np.ndarray
    line_y: np.ndarray
    line_start: np.ndarray
    word_xy: np.ndarray | None = None
    word_line: np.ndarray | None = None
    word_start: np.ndarray | None = None

    @property
    def n_trials(self) -> int:
        return len(self.text)

    @property
    def sizes(self) -> np.ndarray:
        """Fixations per trial, int64, shape (n_trials,)."""
        return np.diff(self.trial_start)

    @property
    def trial(self) -> np.ndarray:
        """Trial of each fixation, int64, shape (n_fixations,)."""
        return np.repeat(np.arange(self.n_trials), self.sizes)

    @property
    def n_lines(self) -> np.ndarray:
        """Lines of each trial's text, int64, shape (n_trials,)."""
        return np.diff(self.line_start)[self.text]

    def trials(self) -> list[tuple]:
        """One ``(xy, line_y_px, word_xy, word_line)`` per trial (views; the form of ``assign_trials``)."""
        ts, ls = self.trial_start, self.line_start
        lines = [self.line_y[ls[k]:ls[k + 1]] for k in range(len(ls) - 1)]
        if self.word_xy is None:
            words = [(None, None)] * (len(ls) - 1)
        else:
            ws = self.word_start
            words = [(self.word_xy[ws[k]:ws[k + 1]], self.word_line[ws[k]:ws[k + 1]]) for k in range(len(ws) - 1)]
        return [(self.xy[ts[t]:ts[t + 1]], lines[k], *words[k]) for t, k in enumerate(self.text.tolist())]

    def select(self, keep: np.ndarray) -> Batch:
        """The batch of the trials where ``keep`` (bool, shape (n_trials,)) is true, in order."""
        rows = np.repeat(keep, self.sizes)
        start = np.concatenate([[0], np.cumsum(self.sizes[keep])]).astype(np.int64)
        return Batch(self.xy[rows], start, self.text[keep], self.line_y, self.line_start, self.word_xy,
                     self.word_line, self.word_start)

    @classmethod
    def from_trials(cls, trials: list[tuple]) -> Batch:
        """Pack ``(xy, line_y_px, word_xy, word_line)`` tuples; trials sharing one midline array share a text.

        The word arrays are kept only when every trial has them.
        """
        code: dict[int, int] = {}
        texts: list[tuple] = []
        text = np.empty(len(trials), dtype=np.int64)
        for t, (_, line_y, word_xy, word_line) in enumerate(trials):
            key = id(line_y)
            if key not in code:
                code[key] = len(texts)
                texts.append((line_y, word_xy, word_line))
            text[t] = code[key]
        sizes = [len(t[0]) for t in trials]
        xy = (np.concatenate([np.asarray(t[0], dtype=np.float64).reshape(-1, 2) for t in trials])
              if trials else np.zeros((0, 2)))
        line_y = [np.asarray(ly, dtype=np.float64).reshape(-1) for ly, _, _ in texts]
        line_start = np.concatenate([[0], np.cumsum([len(ly) for ly in line_y])]).astype(np.int64)
        word_xy = word_line = word_start = None
        if texts and all(w is not None for _, w, _ in texts):
            from readgaze.lines._common import word_lines

            packed = [word_lines(w, wl, ly, "batch") for (_, w, wl), ly in zip(texts, line_y)]
            word_xy = np.concatenate([w for w, _ in packed])
            word_line = np.concatenate([wl for _, wl in packed])
            word_start = np.concatenate([[0], np.cumsum([len(w) for w, _ in packed])]).astype(np.int64)
        return cls(xy, np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64), text,
                   np.concatenate([np.zeros(0), *line_y]), line_start, word_xy, word_line, word_start)

    def split(self, values: np.ndarray) -> list[np.ndarray]:
        """Per-fixation ``values`` cut into one array per trial."""
        return np.split(values, self.trial_start[1:-1])


def check_layouts(line_y: np.ndarray, line_start: np.ndarray, used: np.ndarray, names=None) -> None:
    """Raise ConfigError unless every used text (bool ``used`` per text) has finite, strictly increasing midlines."""
    counts = np.diff(line_start)
    text = np.repeat(np.arange(len(counts)), counts)
    bad = np.zeros(len(counts), dtype=bool)
    bad |= counts == 0
    np.logical_or.at(bad, text, ~np.isfinite(line_y))
    step = np.diff(line_y) <= 0
    same = text[1:] == text[:-1]
    np.logical_or.at(bad, text[1:][same], step[same])
    bad &= used
    if bad.any():
        k = int(np.flatnonzero(bad)[0])
        ly = line_y[line_start[k]:line_start[k + 1]].tolist()
        name = f"text {names[k]!r}" if names is not None else f"text {k}"
        raise ConfigError(f"{name}: line_y_px {ly}, expected at least one finite midline, strictly increasing "
                          "(top to bottom)")


def segment_sums(values: np.ndarray, start: np.ndarray) -> np.ndarray:
    """Sum of each segment ``values[start[k]:start[k + 1]]`` exactly as ``np.sum`` adds a float64 array.

    NumPy sums float64 pairwise: fewer than 8 numbers one after another; up to 128 in 8 interleaved
    accumulators, combined as ``((r0+r1)+(r2+r3))+((r4+r5)+(r6+r7))``, then the remainder one by one; longer
    arrays as the sum of two halves (the first a multiple of 8 long). Reproducing it keeps batched means
    bit-identical to a per-trial ``mean()``. Segments longer than 128 are summed by ``np.sum`` itself.
    """
    values = np.asarray(values, dtype=np.float64)
    n = np.diff(start)
    out = np.zeros(len(n))
    if not len(values):
        return out
    seg = np.repeat(np.arange(len(n)), n)
    local = np.arange(len(values)) - start[seg]
    short = n < 8
    rows = short[seg]
    out[short] = np.bincount(seg[rows], weights=values[rows], minlength=len(n))[short]
    mid = (n >= 8) & (n <= 128)
    if mid.any():
        n8 = n - n % 8
        body = mid[seg] & (local < n8[seg])
        r = np.bincount(seg[body] * 8 + local[body] % 8, weights=values[body], minlength=8 * len(n)).reshape(-1, 8)
        res = ((r[:, 0] + r[:, 1]) + (r[:, 2] + r[:, 3])) + ((r[:, 4] + r[:, 5]) + (r[:, 6] + r[:, 7]))
        for j in range(7):                                   # the remainder, one by one
            has = mid & (n8 + j < n)
            res[has] += values[start[:-1][has] + n8[has] + j]
        out[mid] = res[mid]
    for k in np.flatnonzero(n > 128):                         # rare: left to NumPy's recursion
        out[k] = values[start[k]:start[k + 1]].sum()
    return out


def nearest_midline(y: np.ndarray, text: np.ndarray, line_y: np.ndarray, line_start: np.ndarray) -> np.ndarray:
    """0-based line of each ``y`` (px) with the nearest midline of its text (``text`` per value; ties to the upper
    line), exactly ``np.abs(y - line_y_px).argmin()`` per value.

    One sorted search over keys ``text * span + y`` (span a power of two far above every |y|): rounding keeps
    their order, and the few values whose key meets a midline's key without being equal to it (closer than
    the keys' resolution) are searched again by a bisection within their text.
    """
    y = np.asarray(y, dtype=np.float64)
    first, end = line_start[text], line_start[text + 1]
    line_text = np.repeat(np.arange(len(line_start) - 1), np.diff(line_start))
    big = max(float(np.abs(y).max(initial=0.0)), float(np.abs(line_y).max(initial=0.0)), 1.0)
    span = 2.0 ** (np.ceil(np.log2(big)) + 2)
    line_key = line_text * span + line_y
    p = np.searchsorted(line_key, text * span + y, side="right")   # first midline > y
    clash = (p > first) & (line_key[np.maximum(p - 1, 0)] == text * span + y) & (line_y[np.maximum(p - 1, 0)] != y)
    if (np.diff(line_key)[np.diff(line_text) == 0] <= 0).any():     # midlines closer than the resolution
        clash[:] = True
    if clash.any():
        p[clash] = _bisect(y[clash], first[clash], end[clash], line_y)
    up = np.maximum(p - 1, first)                             # last midline <= y (or the first line)
    down = np.minimum(p, end - 1)                             # first midline > y (or the last line)
    pick = np.where(np.abs(y - line_y[down]) < np.abs(y - line_y[up]), down, up)
    return pick - first


def _bisect(y: np.ndarray, lo: np.ndarray, hi: np.ndarray, line_y: np.ndarray) -> np.ndarray:
    """Per value, the first index in ``[lo, hi)`` whose midline is > y (``hi`` if none), vectorized."""
    lo, hi = lo.astype(np.int64), hi.astype(np.int64)
    while True:
        open_ = lo < hi
        if not open_.any():
            return lo
        mid = (lo + hi) // 2
        below = open_ & (line_y[np.minimum(mid, len(line_y) - 1)] <= y)
        lo = np.where(below, mid + 1, lo)
        hi = np.where(open_ & ~below, mid, hi)


def segment_medians(values: np.ndarray, start: np.ndarray) -> np.ndarray:
    """``np.median`` of each segment ``values[start[k]:start[k + 1]]`` (NaN for an empty one), float64.

    Segments are padded into rows of one width per power-of-two size class, half with -inf and half with +inf
    around the values, so every row's middle value(s) sit in its centre column(s) and one ``np.partition`` per
    class finds them; even sizes average the two middle values as ``np.median`` does.
    """
    values = np.asarray(values, dtype=np.float64)
    n = np.diff(start)
    out = np.full(len(n), np.nan)
    size_class = np.ceil(np.log2(np.maximum(n, 1))).astype(np.int64)
    for c in np.unique(size_class[n > 0]).tolist():            # one step per size class
        seg = np.flatnonzero((size_class == c) & (n > 0))
        width, m = 2 ** c + 1, n[seg]
        pad = (width - m) // 2
        rows = np.repeat(np.arange(len(seg)), m)
        inside = np.arange(int(m.sum())) - np.repeat(np.cumsum(m) - m, m)
        block = np.full((len(seg), width), np.inf)
        block[np.arange(width)[None, :] < pad[:, None]] = -np.inf
        block[rows, inside + np.repeat(pad, m)] = values[np.repeat(start[seg], m) + inside]
        h = (width - 1) // 2
        part = np.partition(block, [h - 1, h] if h > 0 else [h], axis=1)
        out[seg] = np.where(m % 2 == 1, part[:, h], (part[:, h - 1] + part[:, h]) / 2 if h > 0 else part[:, h])
    return out
