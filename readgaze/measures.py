"""Word-level reading measures with Data Viewer's definitions (``IA_*`` columns).

The *scanpath* of a trial is its in-word fixations in time order; off-word fixations (null
``word_index``) are removed first, so they neither add to a measure nor end a regression path, and
an off-word fixation between two fixations on one word does not split the run (the definitions of
SR Research (2021), *EyeLink Data Viewer User's Manual* 4.2, "Interest Area Report"; checked on the
OneStop sample, which cannot test the last point). A *run* is a maximal stretch of consecutive
scanpath fixations on one word. "Right" means a higher ``word_index``: later in reading order, so to the
right in a left-to-right text and to the left in a right-to-left one. ``compute_word_measures(off_text=
"leave")`` keeps off-word fixations in the sequence instead (eyekit's convention; see there).

Each measure is a function named after its column. It reads one word's scanpath fixations through
:class:`readgaze.scanpath.Words` (the fixations grouped by trial x word, each group in time order) and returns one
value per fixated word, as a NumPy array (with a validity mask where a word can have no value).
:func:`compute_word_measures` applies them all and adds the never-fixated words: durations null
(not 0: a ``.`` read as 0 would bias every mean), total 0, count 0, skipped True. All steps are
whole-array operations (sorts, cumulative sums, ``np.add.reduceat``): no loop over trials or rows.
On large inputs (:func:`use_compiled`) the same values come from one compiled pass over the scanpath
(:mod:`readgaze._measures_pass`, numba), tested equal to these functions bit for bit.
"""

from __future__ import annotations

import sys

import numpy as np
import polars as pl

from readgaze._grid import box_edges, in_critical_span, ordered, trial_codes, word_grid, word_rank_table
from readgaze.errors import ConfigError, SchemaError
from readgaze.scanpath import Words, add_paths, scanpath, scanpath_arrays

__all__ = ["MEASURES", "OFF_TEXT", "Words", "compute_word_measures", "scanpath", "use_compiled"]


# --- one function per column: a value per fixated word (group of Words) ------------------------

def fixation_count(g: Words) -> np.ndarray:
    """Number of fixations on the word (``IA_FIXATION_COUNT``)."""
    return np.diff(np.r_[g.starts, len(g.order)]).astype(np.int32)


def total_fixation_duration_ms(g: Words) -> np.ndarray:
    """Sum of the word's fixation durations, ms (``IA_DWELL_TIME``)."""
    return g.sum(g.sp["duration_ms"])


def first_fixation_duration_ms(g: Words) -> np.ndarray:
    """Duration of the word's first fixation, whether or not it was skipped in first pass."""
    return g.at_first("duration_ms")


def gaze_duration_ms(g: Words) -> np.ndarray:
    """Sum over the word's first run (``IA_FIRST_RUN_DWELL_TIME``), skipped-then-fixated words too."""
    return g.sum(g.sp["duration_ms"] * g.in_first_run())


def skipped(g: Words) -> np.ndarray:
    """A word to the right was fixated before the word's first fixation (``IA_SKIP``)."""
    return g.at_first("prior_max_word") > g.at_first("word_index")  # -1 (none before) is never greater


def first_fixation_progressive(g: Words) -> np.ndarray:
    """The first fixation came before any word to the right was fixated (``IA_FIRST_FIX_PROGRESSIVE``)."""
    return ~skipped(g)


def single_fixation_duration_ms(g: Words) -> tuple[np.ndarray, np.ndarray]:
    """Duration of the first-pass fixation when first pass holds exactly one fixation, else null."""
    one = g.sum(g.in_first_run().astype(np.int64)) == 1
    return g.at_first("duration_ms"), one & ~skipped(g)


def regression_path_duration_ms(g: Words) -> np.ndarray:
    """Go-past time: from the word's first fixation (any pass) up to the first fixation on a word to
    its right, or the trial's end (``IA_REGRESSION_PATH_DURATION``)."""
    return g.at_first("path_duration_ms")


def selective_regression_path_duration_ms(g: Words) -> np.ndarray:
    """Fixations on the word itself inside its regression path
    (``IA_SELECTIVE_REGRESSION_PATH_DURATION``)."""
    return g.sum(g.sp["duration_ms"] * g.in_path())


def run_count(g: Words) -> np.ndarray:
    """Number of runs on the word (``IA_RUN_COUNT``)."""
    return g.sum(g.sp["run_start"].astype(np.int32)).astype(np.int32)


def regression_in_count(g: Words) -> np.ndarray:
    """Entries into the word from a word to its right, at any time (``IA_REGRESSION_IN_COUNT``)."""
    entry = g.sp["run_start"] & (g.sp["prev_word"] > g.sp["word_index"])
    return g.sum(entry.astype(np.int32)).astype(np.int32)


def regression_out_count(g: Words) -> np.ndarray:
    """Exits to a word on the left made while no word to the right had been fixated yet
    (``IA_REGRESSION_OUT_COUNT``; 0 for words skipped in first pass)."""
    sp = g.sp
    exit_left = (sp["next_word"] >= 0) & (sp["next_word"] < sp["word_index"])
    return g.sum((exit_left & (sp["max_word"] == sp["word_index"])).astype(np.int32)).astype(np.int32)


MEASURES = (first_fixation_duration_ms, single_fixation_duration_ms, gaze_duration_ms,
            total_fixation_duration_ms, regression_path_duration_ms, selective_regression_path_duration_ms,
            fixation_count, run_count, skipped, first_fixation_progressive, regression_in_count,
            regression_out_count)


def _reference_cells(trial: np.ndarray, word: np.ndarray, duration: np.ndarray, trial_text: np.ndarray,
                     grid: pl.DataFrame) -> dict[str, np.ndarray]:
    """The per-cell aggregates of :func:`readgaze._measures_pass.word_pass`, by the measure functions above
    (the reference the compiled pass is tested against)."""
    arrays = scanpath_arrays(trial, word, duration)
    arrays.update(word_index=word, duration_ms=duration)
    g = Words.of(arrays)
    add_paths(arrays, word, duration, g.first)
    big = np.int64(1 << 32)
    gkey = grid["_trial"].to_numpy() * big + grid["word_index"].to_numpy()
    wkey = trial[g.first] * big + word[g.first]
    pos = np.searchsorted(gkey, wkey).clip(max=max(len(gkey) - 1, 0))
    placed = (gkey[pos] == wkey) if len(gkey) else np.zeros(len(wkey), bool)
    pos = pos[placed]

    def spread(values: np.ndarray, fill) -> np.ndarray:
        out = np.full(len(gkey), fill, dtype=values.dtype)
        out[pos] = values[placed]
        return out

    single, one = single_fixation_duration_ms(g)
    return {"first": spread(g.first, -1), "fixation_count": spread(fixation_count(g), 0),
            "run_count": spread(run_count(g), 0), "regression_in_count": spread(regression_in_count(g), 0),
            "regression_out_count": spread(regression_out_count(g), 0), "skipped": spread(skipped(g), False),
            "single": spread(one, False), "total": spread(total_fixation_duration_ms(g), 0.0),
            "gaze": spread(gaze_duration_ms(g), np.nan), "path": spread(regression_path_duration_ms(g), np.nan),
            "selective": spread(selective_regression_path_duration_ms(g), np.nan)}


def _compiled_cells(trial: np.ndarray, word: np.ndarray, duration: np.ndarray, trial_text: np.ndarray, grid,
                    text_start: np.ndarray, text_words: np.ndarray, grid_start: np.ndarray) -> dict[str, np.ndarray]:
    table = word_rank_table(text_start, text_words)
    if table is None:  # word indices far apart: the whole-array reference
        return _reference_cells(trial, word, duration, trial_text, grid)
    from readgaze._measures_pass import word_pass

    got = word_pass(trial.astype(np.int64), word.astype(np.int64), duration.astype(np.float64),
                    trial_text.astype(np.int64), *table, grid_start, grid.height)
    names = ("first", "fixation_count", "run_count", "regression_in_count", "regression_out_count", "skipped",
             "single", "total", "gaze", "path", "selective")
    return dict(zip(names, got))


COMPILED_FROM = 3_000_000
"""Fixations from which :func:`use_compiled` chooses the compiled pass when numba is not loaded yet: it saves
about 0.3 CPU s per million fixations against the NumPy functions (0.75 s at 2.4 M), and loading numba and
the pass costs about 0.8-1.0 CPU s once per process, so alone it pays from about 3 M fixations on."""

COMPILED_LOADED_FROM = 300_000
"""Fixations from which :func:`use_compiled` chooses the compiled pass when another step loaded numba already:
then only the pass itself is loaded from numba's cache (about 0.1 CPU s)."""


def use_compiled(n_fixations: int) -> bool:
    """Whether the word measures of ``n_fixations`` fixations should run compiled (numba): from
    :data:`COMPILED_FROM` on, or from :data:`COMPILED_LOADED_FROM` on when numba is loaded (another step, such
    as a compiled line assigner, paid its fixed cost)."""
    return n_fixations >= COMPILED_FROM or ("numba" in sys.modules and n_fixations >= COMPILED_LOADED_FROM)


OFF_TEXT = ("skip", "leave", "dataviewer")
"""Conventions for off-text fixations (null ``word_index``), see :func:`compute_word_measures`."""


_RUN_CELLS = ("gaze", "run_count", "single")
"""The per-cell aggregates that depend on where runs end: ``off_text="dataviewer"`` takes them from ``"leave"``."""


def _rtl_texts(words: pl.DataFrame, texts: pl.Series, direction: str | None) -> np.ndarray:
    """Per text code: read right to left (``direction``, else the ``direction`` column, else no)."""
    from readgaze.text import check_direction

    if direction is not None:
        return np.full(len(texts), check_direction(direction) == "rtl")
    if "direction" not in words.columns:
        return np.zeros(len(texts), bool)
    rtl = words.filter(pl.col("direction") == "rtl")["text_id"].unique()
    return texts.is_in(rtl.implode()).to_numpy()


def compute_word_measures(fixations, words, trials, *, off_text: str = "skip",
                          direction: str | None = None, compiled: bool | None = None) -> pl.LazyFrame:
    """Compute Data Viewer's word-level reading measures for every word of every trial's text.

    Parameters
    ----------
    fixations : polars.LazyFrame or DataFrame
        Aligned fixations: ``trial_id``, ``fixation_index``, ``duration_ms`` (ms), ``word_index``
        (Int32, null off text); ``x_px`` and ``ia_index`` (the box hit) for ``landing_position``.
    words : polars.LazyFrame or DataFrame
        ``text_id``, ``word_index``, ``ia_index``, ``left_px``, ``right_px`` (one row per box).
    trials : polars.LazyFrame or DataFrame
        ``trial_id``, ``text_id``; optional ``critical_span_start_index`` /
        ``critical_span_end_index`` (List(Int32), end exclusive) for ``in_critical_span``.
    off_text : {"skip", "dataviewer", "leave"}
        What an off-text fixation (outside every word box, null ``word_index``) does.

        * ``"skip"`` (default, Data Viewer): it is removed from the scanpath, so it adds nothing, ends
          no run and no regression path. Evidence: on the OneStop sample (24 trials, 1,780 fixated
          words) this reproduces Data Viewer's ``IA_REGRESSION_PATH_DURATION`` on every word; counting
          the one off-text fixation's duration instead changes 2 words (99.89 %).
        * ``"dataviewer"``: as ``"skip"``, except that it ends a run, so it ends first-pass gaze duration
          and starts a new run on return (``gaze_duration_ms``, ``single_fixation_duration_ms``,
          ``run_count``, ``rereading_duration_ms``). Evidence: Data Viewer's own run ids in CopCo's reports
          (``CURRENT_FIX_INTEREST_AREA_RUN_ID``) start a new run after every off-IA fixation
          (``experiments/copco_measures.py``). Costs a second pass over the scanpath.
        * ``"leave"`` (eyekit's reading of it): it stays in the sequence as a fixation on no word. It
          ends the current run (a later fixation on the same word starts a new run), it is neither a
          word to the right nor to the left (no regression in or out), and its duration counts in any
          regression path still open.
    direction : {"ltr", "rtl"}, optional
        Reading direction, for ``landing_position`` (measured from the word's beginning: the left edge
        in a left-to-right text, the right edge in a right-to-left one). Default: a ``direction``
        column of ``words`` (per text) if present, else ``"ltr"``. The other measures need no setting:
        their "right" is a higher ``word_index``, i.e. later in reading order in either direction.
    compiled : bool, optional
        False: compute with the measure functions of this module (whole-array NumPy); True: with the
        compiled pass of :mod:`readgaze._measures_pass` (numba; NumPy still when word indices are too far
        apart for its lookup table). The values are the same, bit for bit (tested). Default:
        :func:`use_compiled` of the fixations given.

    Returns
    -------
    polars.LazyFrame
        One row per trial x word of its text, sorted by (``trial_id``, ``word_index``): the canonical
        ``word_measures`` columns plus ``single_fixation_duration_ms``,
        ``selective_regression_path_duration_ms``, ``run_count``, ``regression_in_count``,
        ``regression_out_count``, ``first_fixation_progressive``, ``landing_position`` (Float64,
        fraction of the box width) and ``in_critical_span``. A never-fixated word has null
        durations, ``total_fixation_duration_ms`` 0, ``fixation_count`` and ``run_count`` 0,
        ``skipped`` True and null regression flags, counts and progressive flag (Data Viewer ``.``).

    Raises
    ------
    SchemaError
        When ``word_index`` or another needed column is missing (align first).

    Examples
    --------
    >>> import polars as pl
    >>> words = pl.DataFrame({"text_id": "t", "ia_index": [0, 1, 2], "word_index": [0, 1, 2],
    ...     "left_px": [0.0, 10.0, 20.0], "right_px": [10.0, 20.0, 30.0]})
    >>> fx = pl.DataFrame({"trial_id": "a", "fixation_index": [0, 1, 2], "duration_ms": [200.0, 150.0, 100.0],
    ...     "x_px": [5.0, 25.0, 2.0], "word_index": [0, 2, 0], "ia_index": [0, 2, 0]})
    >>> m = compute_word_measures(fx, words, pl.DataFrame({"trial_id": ["a"], "text_id": ["t"]})).collect()
    >>> m["regression_path_duration_ms"].to_list(), m["skipped"].to_list()
    ([200.0, None, 250.0], [False, True, False])
    """
    fixations, words, trials = (f.lazy() for f in (fixations, words, trials))
    have = fixations.collect_schema().names()
    missing = [c for c in ("trial_id", "fixation_index", "duration_ms", "word_index") if c not in have]
    if missing:
        raise SchemaError(f"fixations table: missing column(s) {', '.join(missing)} (run align_words first)")
    if off_text not in OFF_TEXT:
        raise ConfigError(f"off_text: got {off_text!r}, expected 'skip', 'dataviewer' or 'leave' (eyekit)")
    span_cols = [c for c in ("critical_span_start_index", "critical_span_end_index")
                 if c in trials.collect_schema().names()]
    tr = (trials.select("trial_id", "text_id", *span_cols).collect()  # eager unique: 30x a lazy one's speed here
          .unique("trial_id", keep="first").sort("trial_id"))
    word_cols = [c for c in ("text_id", "word_index", "ia_index", "left_px", "right_px", "direction")
                 if c in words.collect_schema().names()]
    words = words.select(word_cols).with_columns(pl.col("word_index", "ia_index").cast(pl.Int32)).collect()
    texts = words["text_id"].unique().sort()
    tr_text = trial_codes(tr["text_id"], texts)  # text code of each trial (same helper, other table)
    needed = [c for c in ("trial_id", "fixation_index", "duration_ms", "word_index", "x_px", "ia_index") if c in have]
    grid, text_start, text_words, grid_start = word_grid(tr_text, words, texts)

    def cells_of(mode: str):
        """The scanpath (``fx`` and its arrays) and the per-cell aggregates with off-text fixations ``mode``."""
        fx = fixations.select(needed)  # "leave": an off-text fixation is word -1 (never right, never placed)
        fx = (fx.filter(pl.col("word_index").is_not_null()) if mode == "skip"
              else fx.with_columns(pl.col("word_index").fill_null(-1))).collect()
        fx = ordered(fx.with_columns(pl.Series("_trial", trial_codes(fx["trial_id"], tr["trial_id"])),
                                     pl.col("word_index").cast(pl.Int32), pl.col("duration_ms").cast(pl.Float64))
                     .drop("trial_id"), "_trial", "fixation_index")
        trial = fx["_trial"].to_numpy()
        word = fx["word_index"].to_numpy().astype(np.int64)
        duration = fx["duration_ms"].to_numpy()
        use = use_compiled(len(trial)) if compiled is None else compiled
        cells = (_reference_cells(trial, word, duration, tr_text, grid) if not use else
                 _compiled_cells(trial, word, duration, tr_text, grid, text_start, text_words, grid_start))
        return fx, trial, duration, cells

    fx, trial, duration, cells = cells_of("skip" if off_text == "dataviewer" else off_text)
    if off_text == "dataviewer":  # runs as Data Viewer's: an off-text fixation ends a run (nothing else changes)
        runs = cells_of("leave")[3]
        cells.update({k: runs[k] for k in _RUN_CELLS})
        del runs
    first = cells["first"]
    fixated = first >= 0
    at = first[fixated]  # the first fixation (a scanpath row) of each fixated cell
    on = pl.Series(fixated)

    def column(name: str, values: np.ndarray, fill=None, valid: np.ndarray | None = None) -> pl.Series:
        """Per cell: ``values`` where fixated (and ``valid``), else ``fill`` (null when None)."""
        if fill is not None:
            return pl.Series(name, np.where(fixated, values, fill))
        ok = on if valid is None else pl.Series(valid & fixated)
        return pl.select(pl.when(ok).then(pl.Series(name, values))).to_series()

    first_duration = np.full(len(first), np.nan)
    first_duration[fixated] = duration[at]
    cols = [column("first_fixation_duration_ms", first_duration), column("gaze_duration_ms", cells["gaze"]),
            column("total_fixation_duration_ms", cells["total"], 0.0),
            column("regression_path_duration_ms", cells["path"]),
            column("fixation_count", cells["fixation_count"], np.int32(0)),
            column("skipped", cells["skipped"], True),
            column("single_fixation_duration_ms", first_duration, valid=cells["single"]),
            column("selective_regression_path_duration_ms", cells["selective"]),
            column("run_count", cells["run_count"], np.int32(0)),
            column("regression_in_count", cells["regression_in_count"]),
            column("regression_out_count", cells["regression_out_count"]),
            column("first_fixation_progressive", ~cells["skipped"])]
    del cells
    if "x_px" in have:  # where the first fixation landed in its box
        x = fx["x_px"].cast(pl.Float64).gather(at)
        box = box_edges(trial[at], fx["ia_index" if "ia_index" in have else "word_index"].gather(at), words, texts,
                     tr_text, "ia_index" if "ia_index" in have else "word_index")
        rtl = _rtl_texts(words, texts, direction)[np.maximum(tr_text[trial[at]], 0)] if len(texts) else \
            np.zeros(len(at), bool)
        left, right, x_np = box["_box_left"], box["_box_right"], x.fill_null(np.nan).to_numpy()
        with np.errstate(divide="ignore", invalid="ignore"):
            landing = np.where(rtl, right - x_np, x_np - left) / (right - left)
        values = np.full(len(first), np.nan)
        values[fixated] = landing
        valid = np.zeros(len(first), bool)
        valid[fixated] = x.is_not_null().to_numpy() & box["_box_valid"]
        cols.append(column("landing_position", values, valid=valid))
    del fx
    frame = pl.DataFrame(cols)
    del cols
    frame = frame.with_columns((pl.col("regression_in_count") > 0).alias("regression_in"),
                               (pl.col("regression_out_count") > 0).alias("regression_out"),
                               (pl.col("total_fixation_duration_ms") - pl.col("gaze_duration_ms"))
                               .alias("rereading_duration_ms"))
    if "landing_position" not in frame.columns:
        frame = frame.with_columns(pl.lit(None, pl.Float64).alias("landing_position"))
    out = pl.concat([grid.select(pl.Series("trial_id", tr["trial_id"].gather(grid["_trial"])), "word_index"),
                     frame, in_critical_span(grid, tr).to_frame()], how="horizontal")
    order = ["trial_id", "word_index", "first_fixation_duration_ms", "gaze_duration_ms",
             "total_fixation_duration_ms", "regression_path_duration_ms", "fixation_count", "skipped",
             "regression_in", "regression_out", "rereading_duration_ms", "single_fixation_duration_ms",
             "selective_regression_path_duration_ms", "run_count", "regression_in_count",
             "regression_out_count", "first_fixation_progressive", "landing_position", "in_critical_span"]
    return out.select(order).lazy()  # grid order: sorted by (trial_id, word_index)
