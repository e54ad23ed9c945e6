"""The frames of :func:`readgaze.lines.frame.assign_lines` as one :class:`~readgaze.lines.batch.Batch` (the texts'
:class:`Layout`, the trials grouped, each trial's text), built once and shared by every method run on the same
fixations (:func:`method_lines`: the vote's members for :func:`readgaze.lines.agreement.line_agreement`), and a
method's lines written back in the input's row order. :mod:`readgaze.lines.frame` re-exports the helpers.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import polars as pl

from readgaze.errors import ConfigError, SchemaError

FIXATION_COLUMNS = ("trial_id", "fixation_index", "x_px", "y_px")
WORD_COLUMNS = ("text_id", "line_index", "top_px", "bottom_px")


def _require(frame: pl.DataFrame | pl.LazyFrame, columns: tuple[str, ...], table: str) -> None:
    names = frame.collect_schema().names() if isinstance(frame, pl.LazyFrame) else frame.columns
    missing = [c for c in columns if c not in names]
    if missing:
        raise SchemaError(f"{table}: missing column(s) {missing}; expected at least {list(columns)}",
                          column=missing[0])


@dataclass(frozen=True)
class Layout:
    """Every text's lines (and word centres) as flat arrays, texts in sorted ``text_id`` order.

    ``line_index``/``line_y`` (px midline: half-way between the line's highest word top and lowest word bottom)
    run text after text, top to bottom, text ``k`` owning ``line_start[k]:line_start[k + 1]``. Word centres
    (box centres, in ``ia_index`` order, else ``word_index``, else row order), their line's position within
    the text and ``x_mirror_px`` (``x -> x_mirror_px - x`` mirrors the text) need ``left_px``/``right_px``
    and are None without them.
    """

    names: list
    line_index: np.ndarray
    line_y: np.ndarray
    line_start: np.ndarray
    word_xy: np.ndarray | None
    word_line: np.ndarray | None
    word_start: np.ndarray | None
    x_mirror_px: np.ndarray | None


def text_layout(words: pl.DataFrame) -> Layout:
    """The :class:`Layout` of all texts of ``words`` (``text_id`` String), from one pass of each aggregation."""
    lines = (words.group_by("text_id", "line_index").agg(pl.col("top_px").min(), pl.col("bottom_px").max())
             .sort("text_id", "line_index"))
    per_text = lines.group_by("text_id", maintain_order=True).len()
    names = per_text["text_id"].to_list()
    line_start = np.concatenate([[0], np.cumsum(per_text["len"].to_numpy())]).astype(np.int64)
    line_index = lines["line_index"].to_numpy().astype(np.int64)
    line_y = ((lines["top_px"] + lines["bottom_px"]) / 2).to_numpy().astype(np.float64)
    if not ("left_px" in words.columns and "right_px" in words.columns):
        return Layout(names, line_index, line_y, line_start, None, None, None, None)
    order = [c for c in ("text_id", "ia_index", "word_index") if c in words.columns]
    words = words.with_row_index("_order").sort([*order, "_order"])
    counts = words.group_by("text_id", maintain_order=True).agg(
        pl.len(), (pl.col("left_px").min() + pl.col("right_px").max()).alias("m"))
    word_start = np.concatenate([[0], np.cumsum(counts["len"].to_numpy())]).astype(np.int64)
    word_xy = np.column_stack([((words["left_px"] + words["right_px"]) / 2).to_numpy(),
                               ((words["top_px"] + words["bottom_px"]) / 2).to_numpy()]).astype(np.float64)
    text = np.repeat(np.arange(len(names)), np.diff(word_start))
    # each word's line as its position among its text's lines: one search over (text, line_index) keys
    span = int(max(line_index.max(initial=0), words["line_index"].max() or 0) - min(line_index.min(initial=0), 0)) + 2
    lo = int(min(line_index.min(initial=0), 0))
    line_key = np.repeat(np.arange(len(names)), np.diff(line_start)) * span + (line_index - lo)
    word_key = text * span + (words["line_index"].to_numpy().astype(np.int64) - lo)
    word_line = np.searchsorted(line_key, word_key) - line_start[text]
    return Layout(names, line_index, line_y, line_start, word_xy, word_line, word_start,
                  counts["m"].to_numpy().astype(np.float64))


def _trial_texts(trial_names: pl.Series, words: pl.DataFrame, trials: pl.DataFrame | None) -> pl.DataFrame:
    """``(trial_id, text_id)`` (String) for the trials of ``fixations``."""
    if trials is not None:
        _require(trials, ("trial_id", "text_id"), "trials")
        return trials.select(pl.col("trial_id").cast(pl.String), pl.col("text_id").cast(pl.String)).unique("trial_id")
    if "trial_id" in words.columns:
        return words.select(pl.col("trial_id").cast(pl.String), pl.col("text_id").cast(pl.String)).unique("trial_id")
    texts = words["text_id"].unique()
    if len(texts) != 1:
        raise ConfigError(f"assign_lines: got words of {len(texts)} texts and no trials frame; pass trials "
                          "(trial_id, text_id) or words with a trial_id column")
    return pl.DataFrame({"trial_id": trial_names.drop_nulls()}).with_columns(
        pl.lit(texts[0], dtype=pl.String).alias("text_id"))


def _right_to_left(words: pl.DataFrame, direction: str | None) -> set:
    """Text ids read right to left: all texts when ``direction == "rtl"``, else those a ``direction`` column marks."""
    from readgaze.text import check_direction

    texts = words["text_id"].cast(pl.String)
    if direction is not None:
        return set(texts.unique()) if check_direction(direction) == "rtl" else set()
    if "direction" not in words.columns:
        return set()
    for d in words["direction"].drop_nulls().unique():
        check_direction(d)
    return set(words.filter(pl.col("direction") == "rtl")["text_id"].cast(pl.String).unique())


def _by_trial(fixations: pl.DataFrame) -> tuple[np.ndarray | None, np.ndarray, pl.Series, pl.DataFrame]:
    """Group the rows by trial, in ``fixation_index`` order within each trial.

    Returns ``(order, trial_start, trial_names, columns)``: ``order`` (None when the rows already come trial
    by trial in fixation order, as prepared data do) maps the grouped position to the input row; the
    trial ``t`` owns grouped rows ``trial_start[t]:trial_start[t + 1]``; ``columns`` are trial id, fixation
    index, x and y (Float64) in grouped order. Rows of one trial with equal ``fixation_index`` keep their order.
    """
    cols = fixations.select(pl.col("trial_id").cast(pl.String).alias("_trial"), pl.col("fixation_index"),
                            pl.col("x_px").cast(pl.Float64), pl.col("y_px").cast(pl.Float64))
    order = None
    for attempt in range(2):
        n = cols.height
        run = cols["_trial"].rle_id().to_numpy()
        first = np.flatnonzero(np.r_[True, run[1:] != run[:-1]]) if n else np.zeros(0, dtype=np.int64)
        names = cols["_trial"].gather(first)
        fi = cols["fixation_index"]
        grouped = names.n_unique() == len(names) and fi.null_count() == 0
        if grouped and n > 1:
            f = fi.to_numpy()
            grouped = bool(((f[1:] >= f[:-1]) | (run[1:] != run[:-1])).all())
        if grouped or attempt:
            return order, np.r_[first, n].astype(np.int64), names, cols
        order = (cols.with_row_index("_row").sort("_trial", "fixation_index", "_row", maintain_order=True)["_row"]
                 .to_numpy().astype(np.int64))
        cols = cols[order]
    raise AssertionError("unreachable")


def _checked_inputs(fixations, words) -> None:
    """Check the frames' required columns (before the method's name, as :func:`assign_lines` always has)."""
    _require(fixations, FIXATION_COLUMNS, "fixations")
    _require(words, WORD_COLUMNS, "words")


@dataclass
class _Framed:
    """The frames of :func:`assign_lines` as one :class:`~readgaze.lines.batch.Batch`, and how to write a method's
    lines back (built once, shared by every method run on the same fixations)."""

    fixations: pl.DataFrame
    layout: Layout
    order: np.ndarray | None
    names: pl.Series
    n: int
    sizes: np.ndarray
    row_text: np.ndarray
    ok: np.ndarray
    sel: np.ndarray
    kept: np.ndarray
    batch: object
    _listed: tuple | None = None

    def listed(self, checked: bool = False) -> tuple[np.ndarray, list]:
        """``(by_name, inputs)``: the trials as ``(xy, line_y_px, word_xy, word_line)`` tuples in trial id order
        (``inputs[i]`` is kept trial ``by_name[i]``); ``checked``: validated once (``check_trials``)."""
        if self._listed is None:
            listed = self.batch.trials()
            by_name = self.names.gather(self.kept).arg_sort(nulls_last=False).to_numpy()
            self._listed = (by_name, [listed[k] for k in by_name], None)
        by_name, inputs, done = self._listed
        if not checked:
            return by_name, inputs
        if done is None:
            from readgaze.lines.assign import check_trials

            done = check_trials(inputs)
            self._listed = (by_name, inputs, done)
        return by_name, done

    def flat(self, got: list) -> np.ndarray:
        """Per-trial lines in trial id order (as :meth:`listed`) back into the batch's order, concatenated."""
        by_name, _ = self.listed()
        back = np.empty(len(by_name), dtype=np.int64)
        back[by_name] = np.arange(len(by_name))
        return np.concatenate([np.zeros(0, dtype=np.int64), *(got[k] for k in back)])

    def line_index(self, lines: np.ndarray) -> pl.Series:
        """The text's ``line_index`` (Int32, null where unassigned) of each input row, from a method's 0-based
        lines per batch row."""
        at = np.repeat(self.layout.line_start[self.batch.text], self.batch.sizes) + lines
        line = np.full(self.n, -1, dtype=np.int64)
        line[self.sel] = self.layout.line_index[at]
        if self.order is not None:
            line[self.order] = line.copy()
        return _line_series(line).alias("line_index")


def _line_series(line: np.ndarray) -> pl.Series:
    return (pl.Series(np.where(line >= 0, line, 0), dtype=pl.Int32).set(pl.Series(line < 0), None)
            if (line < 0).any() else pl.Series(line, dtype=pl.Int32))


def _framed(fixations, words, trials, direction) -> _Framed:
    """:class:`_Framed` of the frames (columns checked, layouts checked, right-to-left texts mirrored)."""
    from readgaze.lines.batch import Batch, check_layouts

    fixations = fixations.collect() if isinstance(fixations, pl.LazyFrame) else fixations
    words = words.collect() if isinstance(words, pl.LazyFrame) else words
    trials = trials.collect() if isinstance(trials, pl.LazyFrame) else trials
    words = words.with_columns(pl.col("text_id").cast(pl.String))
    layout = text_layout(words)
    rtl = _right_to_left(words, direction)
    order, trial_start, names, cols = _by_trial(fixations)
    n = cols.height
    # each trial's text (code into the layout; -1: none)
    pairs = _trial_texts(names, words, trials)
    text_name = names.replace_strict(pairs["trial_id"], pairs["text_id"], default=None, return_dtype=pl.String)
    code = text_name.replace_strict(layout.names, np.arange(len(layout.names)), default=-1,
                                    return_dtype=pl.Int64).to_numpy()
    sizes = np.diff(trial_start)
    row_text = np.repeat(code, sizes)
    x = cols["x_px"].to_numpy(allow_copy=True).astype(np.float64)
    y = cols["y_px"].to_numpy(allow_copy=True).astype(np.float64)
    ok = np.isfinite(x) & np.isfinite(y)
    has_text = code >= 0
    sel = ok & (row_text >= 0)                                # the rows a method sees
    check_layouts(layout.line_y, layout.line_start, np.bincount(code[has_text], minlength=len(layout.names)) > 0,
                  layout.names)
    mirror = np.array([t in rtl for t in layout.names], dtype=bool)
    word_xy = layout.word_xy
    if mirror.any():
        if layout.x_mirror_px is None:
            raise ConfigError("direction='rtl' needs word boxes with left_px and right_px (to mirror x about the "
                              "text)")
        word_xy = word_xy.copy()
        word_text = np.repeat(np.arange(len(layout.names)), np.diff(layout.word_start))
        flip = mirror[word_text]
        word_xy[flip, 0] = layout.x_mirror_px[word_text[flip]] - word_xy[flip, 0]
        flip_rows = sel & mirror[np.maximum(row_text, 0)]
        x = np.where(flip_rows, layout.x_mirror_px[np.maximum(row_text, 0)] - x, x)
    kept = np.flatnonzero(has_text)                          # trials with a text, in grouped order
    per_kept = np.add.reduceat(sel, trial_start[:-1])[kept] if n else np.zeros(len(kept), dtype=np.int64)
    batch = Batch(np.column_stack([x[sel], y[sel]]), np.concatenate([[0], np.cumsum(per_kept)]).astype(np.int64),
                  code[kept], layout.line_y, layout.line_start, word_xy, layout.word_line, layout.word_start)
    return _Framed(fixations, layout, order, names, n, sizes, row_text, ok, sel, kept, batch)


def method_lines(fixations: pl.DataFrame | pl.LazyFrame, words: pl.DataFrame | pl.LazyFrame,
                 trials: pl.DataFrame | pl.LazyFrame | None, methods: tuple[str, ...],
                 direction: str | None = None) -> dict[str, pl.Series]:
    """The ``line_index`` column :func:`assign_lines` gives with each of ``methods`` (default parameters), from
    one grouping of the frames: each method's lines (Int32, null where unassigned), in the input's row order.

    What :func:`assign_lines` computes besides the lines (nearest-line moves, drift, the QC log) is skipped, and
    the frames are grouped, packed and checked once for all methods (e.g. the vote's members, for
    :func:`readgaze.lines.agreement.line_agreement`). The vote itself is not one of ``methods``.
    """
    from readgaze.lines.assign import assign_batch, assign_trials_reported
    from readgaze.lines.protocol import Method
    from readgaze.lines.registry import METHODS, get_method

    _checked_inputs(fixations, words)
    fns = {m: get_method(m) for m in methods}
    if any(fn is METHODS["vote"] for fn in fns.values()):
        raise ConfigError("method_lines: 'vote' is not taken (pass its members; see readgaze.lines.vote.majority)")
    f = _framed(fixations, words, trials, direction)
    out = {}
    for m, fn in fns.items():
        if isinstance(fn, Method) and fn.batch is not None:
            lines = assign_batch(f.batch, fn)
        else:
            _, inputs = f.listed(checked=True)
            lines = f.flat(assign_trials_reported(inputs, fn)[0])
        out[m] = f.line_index(lines)
    return out
