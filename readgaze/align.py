"""Fixation → word alignment: each fixation gets the word box it lies in, on its assigned line.

Rules (each checked against Data Viewer's own interest-area ids on a OneStop sample of 24 trials):

* Boxes are half-open, ``left_px <= x < right_px``. On a shared edge (``right == next left``) the
  fixation goes to the word that **starts** there (Data Viewer: 25/25 left edges, 6/6 top edges).
* Overlapping boxes on one line: a fixation inside several boxes goes to the one with the lowest
  interest-area id, as Data Viewer assigns it (SR Research, *EyeLink Data Viewer User's Manual*
  4.2, "Interest Areas") and as pymovements does. Boxes overlapping an earlier box are counted as a QC warning, and
  fixations inside more than one
  box as ``in_overlapping_boxes``.
* A fixation first gets a line (``line_index``) from a line assigner, then the word on that line
  whose box contains ``x``. The default assigner, ``"nearest"``, takes the line whose box holds
  ``y``, else the nearest line midline if ``y`` lies within half a line pitch of the text block;
  any other name is passed to :func:`readgaze.lines.assign_lines`.
* A fixation outside every word box keeps a null ``word_index`` and is counted (``off_text``);
  those outside the screen are counted again as ``off_screen``.
"""

from __future__ import annotations

import sys

import numpy as np
import polars as pl

from readgaze.errors import DataError, SchemaError
from readgaze.qc import QCLog

STEP = "align"


def _need(frame: pl.LazyFrame, columns: tuple[str, ...], table: str) -> None:
    have = frame.collect_schema().names()
    missing = [c for c in columns if c not in have]
    if missing:
        raise SchemaError(f"{table} table: missing column(s) {', '.join(missing)} needed for alignment")


def _lines(words: pl.LazyFrame) -> pl.LazyFrame:
    """One row per (text_id, line_index): box extent and midline ``y_px``."""
    return (words.group_by("text_id", "line_index")
            .agg(pl.col("top_px").min(), pl.col("bottom_px").max())
            .with_columns(((pl.col("top_px") + pl.col("bottom_px")) / 2).alias("line_y_px")))


_OFF = float(1 << 20)  # coordinates are clipped into [-2^20, 2^20) px for the search keys
_STRIDE = float(1 << 22)


def _key(group: np.ndarray, value: np.ndarray) -> np.ndarray:
    """One sortable float key per (group, coordinate): exact for group ids below 2^31."""
    return group * _STRIDE + np.clip(value, -_OFF, _OFF - 1) + _OFF


COMPILED_FROM = 50_000
"""From this many fixations, once numba is loaded (by the compiled ``slice``), the two sorted searches run
compiled (:mod:`readgaze._align_search`, the same positions; at 2.4 M fixations about 0.2 CPU s less). Loading
numba for them alone does not pay: ``readgaze prep --line-assigner nearest`` at 2.4 M fixations took
7.06-8.44 CPU s without and 7.64-8.53 with numba loaded here (the measures load it later)."""


def _use_compiled(n_queries: int) -> bool:
    return n_queries >= COMPILED_FROM and "numba" in sys.modules


def _search(keys: np.ndarray, start: np.ndarray, q: np.ndarray, group: np.ndarray) -> np.ndarray:
    """``np.searchsorted(keys, q, side="right")`` for queries whose answer lies in their group's keys
    ``start[group]:start[group + 1]`` (``group < 0``: 0, the queries below every key)."""
    if _use_compiled(len(q)) and not (len(group) and group.max() >= len(start) - 1):  # the kernel reads
        from readgaze._align_search import search_right  # start[g + 1] unchecked

        return search_right(keys, start, q, group)
    return np.searchsorted(keys, q, side="right")


def _codes(text_id: pl.Series, texts: pl.Series) -> np.ndarray:
    """Integer code of each text id in ``texts`` (sorted, unique); -1 when absent or null (one lookup per run
    of equal ids: :func:`readgaze._grid.trial_codes`)."""
    from readgaze._grid import trial_codes

    return trial_codes(text_id, texts)


def nearest_line(fixations: pl.LazyFrame, words: pl.LazyFrame, *, margin_lines: float = 0.5) -> pl.LazyFrame:
    """Assign each fixation to the line whose box holds it, else to the nearest line midline.

    Parameters
    ----------
    fixations : polars.LazyFrame
        Needs ``text_id`` (String), ``y_px`` (Float64, px).
    words : polars.LazyFrame
        Word boxes with ``text_id``, ``line_index``, ``top_px``, ``bottom_px``.
    margin_lines : float, default 0.5
        A fixation above the first or below the last line by more than this many line heights
        (median box height of the text) is off text: ``line_index`` null.

    Returns
    -------
    polars.LazyFrame
        ``fixations`` plus ``line_index`` (Int32), row order kept.
    """
    words = words.lazy().collect()
    fx = fixations.lazy().drop("line_index", strict=False).collect()
    return _nearest_line(fx, _codes(fx["text_id"], words["text_id"].unique().sort()), words).lazy()


def _nearest_line(fx: pl.DataFrame, c: np.ndarray, words: pl.DataFrame, margin_lines: float = 0.5) -> pl.DataFrame:
    """:func:`nearest_line` for fixations whose text codes (rows of the sorted unique text ids of ``words``;
    -1: none) are ``c``."""
    lines = _lines(words.lazy()).collect()
    texts = lines["text_id"].unique().sort()
    lines = lines.with_columns(pl.Series("_code", _codes(lines["text_id"], texts))).sort("_code", "top_px")
    lc, top, bottom = (lines[c].to_numpy().astype(float) for c in ("_code", "top_px", "bottom_px"))
    mid, line_no = (top + bottom) / 2, lines["line_index"].to_numpy()
    ext = (lines.group_by("_code").agg(pl.col("top_px").min(), pl.col("bottom_px").max(),
                                       (pl.col("bottom_px") - pl.col("top_px")).median().alias("h")).sort("_code"))
    fx = fx.drop("line_index", strict=False)
    c = c.astype(float)
    y = fx["y_px"].cast(pl.Float64).fill_null(np.nan).to_numpy()
    ok = (c >= 0) & ~np.isnan(y)
    start = np.searchsorted(lc, np.arange(len(texts) + 1))  # each text's lines
    above = _search(_key(lc, top), start, _key(c, np.nan_to_num(y)), np.where(c >= 0, c, -1).astype(np.int64)) - 1
    below = above + 1
    a_ok = ok & (above >= 0) & (lc[above.clip(0)] == c)
    b_ok = ok & (below < len(lc)) & (lc[below.clip(max=len(lc) - 1)] == c)
    a, b = above.clip(0), below.clip(max=len(lc) - 1)
    inside = a_ok & (y < bottom[a])
    pick_b = ~inside & b_ok & (~a_ok | (np.abs(y - mid[b]) < np.abs(y - mid[a])))
    chosen = np.where(pick_b, b, a)
    has = inside | pick_b | a_ok
    ci = c.clip(0).astype(int)
    e_top, e_bot, e_h = (ext[k].to_numpy().astype(float) for k in ("top_px", "bottom_px", "h"))
    has &= (y >= e_top[ci] - margin_lines * e_h[ci]) & (y < e_bot[ci] + margin_lines * e_h[ci])
    line = pl.Series("line_index", np.where(has, line_no[chosen], -1), pl.Int32)
    return fx.with_columns(pl.when(line >= 0).then(line).alias("line_index"))


def count_overlaps(words: pl.LazyFrame) -> int:
    """Number of boxes that overlap an earlier-starting box of their line (``left < max right so far``)."""
    reach = pl.col("right_px").cum_max().shift(1).over("text_id", "line_index", order_by=["left_px", "ia_index"])
    return int(words.select((pl.col("left_px") < reach).fill_null(False).sum()).collect().item())


def _word_on_line(fixations: pl.DataFrame, words: pl.DataFrame, c: np.ndarray) -> tuple[pl.DataFrame, int]:
    """Attach the box on the fixation's line that holds ``x``; where several do, the lowest ``ia_index``.

    Boxes of a line are grouped into runs of overlapping boxes (a box that starts at or after the
    furthest right edge so far starts a new run, so shared edges never overlap). A fixation is found in
    its run by one binary search; only fixations in runs of two or more boxes look at each member.
    ``c`` is each fixation's text code (its row in the sorted unique text ids of ``words``; -1: none).
    Returns the frame and the number of fixations that lay inside more than one box.
    """
    texts = words["text_id"].unique().sort()
    n_lines = float(words["line_index"].max() + 1)
    boxes = words.with_columns(pl.Series("_code", _codes(words["text_id"], texts))).sort(
        "_code", "line_index", "left_px", "ia_index")
    bg = boxes["_code"].to_numpy() * n_lines + boxes["line_index"].to_numpy()
    left, right = boxes["left_px"].to_numpy(), boxes["right_px"].to_numpy()
    group = pl.Series(bg)
    reach = pl.DataFrame({"g": group, "r": right}).select(
        pl.col("r").cum_max().shift(1).over("g"))["r"].fill_null(-np.inf).to_numpy()
    new_run = np.r_[True, bg[1:] != bg[:-1]] | (left >= reach)
    run = np.cumsum(new_run) - 1
    first = np.flatnonzero(new_run)
    run_g, run_left = bg[first], left[first]
    run_right = np.maximum.reduceat(right, first) if len(first) else right
    run_size = np.diff(np.r_[first, len(bg)])
    line = fixations["line_index"].fill_null(-1).to_numpy()
    x = fixations["x_px"].cast(pl.Float64).fill_null(np.nan).to_numpy()
    ok = (c >= 0) & (line >= 0) & ~np.isnan(x)
    fg = c * n_lines + line
    keys, q = _key(run_g, run_left), _key(fg, np.nan_to_num(x))
    if (ok & (fg < 0)).any():  # negative line indices: groups that are no (text, line) slot
        j = np.searchsorted(keys, q, side="right") - 1
    else:
        start = np.searchsorted(run_g, np.arange(len(texts) * int(n_lines) + 1))  # each (text, line)'s runs
        j = _search(keys, start, q, np.where(ok, fg, -1).astype(np.int64)) - 1
    jj = j.clip(0)
    hit = ok & (j >= 0) & (run_g[jj] == fg) & (x < run_right[jj])
    pick = first[jj]  # a one-box run: its box
    many = np.flatnonzero(hit & (run_size[jj] > 1))
    n_multi = 0
    if len(many):
        members = pl.DataFrame({"_run": run, "_box": np.arange(len(bg)), "_l": left, "_r": right,
                                "_ia": boxes["ia_index"].to_numpy()})
        cand = (pl.DataFrame({"_fx": many, "_run": jj[many], "_x": x[many]}).join(members, on="_run")
                .filter((pl.col("_l") <= pl.col("_x")) & (pl.col("_x") < pl.col("_r")))
                .group_by("_fx").agg(pl.col("_box").sort_by("_ia").first(), pl.len().alias("_n")))
        inside = np.zeros(len(x), bool)
        inside[cand["_fx"].to_numpy()] = True
        pick[cand["_fx"].to_numpy()] = cand["_box"].to_numpy()
        hit[many] &= inside[many]  # in the run's span but in a gap of none of its boxes cannot happen; kept safe
        n_multi = int((cand["_n"] > 1).sum())
    word = pl.Series("word_index", np.where(hit, boxes["word_index"].to_numpy()[pick], -1), pl.Int32)
    ia = pl.Series("ia_index", np.where(hit, boxes["ia_index"].to_numpy()[pick], -1), pl.Int32)
    return fixations.with_columns(pl.when(word >= 0).then(word).alias("word_index"),
                                  pl.when(ia >= 0).then(ia).alias("ia_index")), n_multi


def align_words(fixations, words, trials, *, line_assigner: str = "nearest",
                screen_px: tuple[float, float] | None = None, direction: str | None = None,
                **line_params) -> tuple[pl.LazyFrame, QCLog]:
    """Align each fixation to the word it lies in, on its assigned text line.

    Parameters
    ----------
    fixations : polars.LazyFrame or DataFrame
        Canonical fixations: ``trial_id``, ``fixation_index``, ``x_px``, ``y_px`` (Float64, px).
        An existing ``line_index`` is replaced.
    words : polars.LazyFrame or DataFrame
        Canonical words (one row per interest-area box): ``text_id``, ``ia_index``, ``word_index``,
        ``line_index``, ``left_px``, ``right_px``, ``top_px``, ``bottom_px``.
    trials : polars.LazyFrame or DataFrame
        ``trial_id`` → ``text_id``.
    line_assigner : str, default "nearest"
        ``"nearest"`` (:func:`nearest_line`) or a method name of :func:`readgaze.lines.assign_lines`.
    direction : {"ltr", "rtl"}, optional
        Reading direction, passed to :func:`readgaze.lines.assign_lines` (``"nearest"`` uses y only);
        default a ``direction`` column of ``words``, else ``"ltr"``. Word boxes need no direction.
    **line_params
        Parameters of the line-assignment method.
    screen_px : (width, height), optional
        Screen size in px; a fixation outside ``[0, width) x [0, height)`` is counted
        ``off_screen``. Without it only negative coordinates count as off screen.

    Returns
    -------
    (polars.LazyFrame, QCLog)
        The fixations in input order plus ``line_index`` (Int32), ``word_index`` (Int32) and
        ``ia_index`` (Int32, the box); both null for off-text fixations; plus any column the line
        assigner adds (e.g. ``vertical_drift_px``). The log flags
        ``off_text`` and ``off_screen`` fixations, fixations of trials with no text, and warns
        about overlapping boxes. No row is dropped.

    Raises
    ------
    SchemaError
        When a needed column is missing.
    DataError
        When ``words`` has no rows.

    Examples
    --------
    >>> import polars as pl
    >>> words = pl.DataFrame({"text_id": "t", "ia_index": [0, 1, 2], "word_index": [0, 1, 2],
    ...     "word": ["The", "cat", "sat."], "line_index": 0, "left_px": [100.0, 160.0, 290.0],
    ...     "right_px": [160.0, 290.0, 400.0], "top_px": 150.0, "bottom_px": 200.0})
    >>> fx = pl.DataFrame({"trial_id": "a", "fixation_index": [0, 1, 2],
    ...     "x_px": [130.0, 160.0, 401.0], "y_px": 175.0})
    >>> out, qc = align_words(fx, words, pl.DataFrame({"trial_id": ["a"], "text_id": ["t"]}))
    >>> out.collect()["word_index"].to_list(), qc.total(reason="off_text", action="flagged")
    ([0, 1, None], 1)
    """
    fixations, words, trials = (f.lazy() for f in (fixations, words, trials))
    _need(fixations, ("trial_id", "fixation_index", "x_px", "y_px"), "fixations")
    _need(words, ("text_id", "ia_index", "word_index", "line_index", "left_px", "right_px",
                  "top_px", "bottom_px"), "words")
    _need(trials, ("trial_id", "text_id"), "trials")
    if words.select(pl.len()).collect().item() == 0:
        raise DataError("words table is empty: no interest-area boxes to align to")
    qc = QCLog()
    cols = fixations.collect_schema().names()
    fixations = fixations.with_columns(pl.col("x_px", "y_px").cast(pl.Float64))
    words = words.with_columns(pl.col("ia_index", "word_index", "line_index").cast(pl.Int32),
                               pl.col("left_px", "right_px", "top_px", "bottom_px").cast(pl.Float64))
    base = fixations.drop("word_index", "ia_index", "text_id", strict=False).with_row_index("_align_row").collect()
    if base.n_chunks("all") and max(base.n_chunks("all")) > 1:
        base = base.rechunk()  # once: a select over columns of unequal chunks would rechunk every column each time
    text_of = (trials.select("trial_id", "text_id").drop_nulls("trial_id").collect()
               .unique("trial_id", keep="first", maintain_order=True))  # a lookup per trial
    word_boxes = words.collect()
    texts = word_boxes["text_id"].unique().sort()
    trial = _codes(base["trial_id"], text_of["trial_id"])  # -1: unknown or null trial
    text_null = np.r_[text_of["text_id"].is_null().to_numpy(), True]  # index -1: an unknown trial
    no_text = text_null[trial]  # the trial has no text_id
    code = np.r_[_codes(text_of["text_id"], texts), -1][trial]  # the fixation's text (-1: none in words)
    if "text_id" in cols:  # given: replaced by the trial's, as the lines and boxes see it
        base = base.with_columns(pl.when(pl.Series(trial >= 0)).then(
            text_of["text_id"].gather(np.where(trial >= 0, trial, 0))).alias("text_id"))
    if line_assigner == "nearest":
        df = _nearest_line(base, code, word_boxes)
    else:
        from readgaze.lines import assign_lines  # the line-assignment area's lookup by method name
        lined, line_qc = assign_lines(base.lazy(), words, method=line_assigner, trials=trials, direction=direction,
                                      **line_params)
        qc.extend(line_qc)
        df = lined.lazy().collect()
    rows = df["_align_row"].to_numpy()
    moved = len(rows) != len(code) or not (rows == np.arange(len(rows))).all()
    out, n_multi = _word_on_line(df, word_boxes, code[rows] if moved else code)
    if moved:
        out = out.sort("_align_row")
    off_text = pl.col("word_index").is_null()
    x, y = pl.col("x_px"), pl.col("y_px")
    off_screen = (x < 0) | (y < 0)
    if screen_px is not None:
        off_screen = off_screen | (x >= screen_px[0]) | (y >= screen_px[1])
    counts = out.select(off_text.sum().alias("t"), (off_text & off_screen.fill_null(False)).sum().alias("s"),
                        (x.is_null() | y.is_null()).sum().alias("m")).row(0)
    qc.add(STEP, "fixations", "off_text", counts[0], action="flagged",
           detail="outside every word box (or no line); word_index null, kept")
    qc.add(STEP, "fixations", "off_screen", counts[1], action="flagged",
           detail="off_text fixations outside the screen" + ("" if screen_px else " (negative x or y)"))
    if counts[2]:
        qc.add(STEP, "fixations", "missing_position", counts[2], action="flagged",
               detail="null x_px or y_px; counted in off_text, not in off_screen")
    if no_text.any():
        qc.add(STEP, "fixations", "trial_without_text", int(no_text.sum()), action="flagged")
    qc.add(STEP, "words", "overlapping_boxes", count_overlaps(words), action="warning",
           detail="boxes overlapping an earlier box of their line; a fixation in several goes to the lowest ia_index")
    qc.add(STEP, "fixations", "in_overlapping_boxes", n_multi, action="flagged",
           detail="inside two or more boxes; assigned to the lowest ia_index (Data Viewer's rule)")
    added = [c for c in out.columns if c not in cols and c not in ("text_id", "_align_row", "line_index",
                                                                    "word_index", "ia_index")]
    keep = [c for c in cols if c not in ("line_index", "word_index", "ia_index")] + added  # + e.g. vertical_drift_px
    out = out.select(*keep, pl.col("line_index").cast(pl.Int32), pl.col("word_index").cast(pl.Int32),
                     pl.col("ia_index").cast(pl.Int32))
    return out.lazy(), qc


def words_on_lines(fixations: pl.DataFrame, words: pl.DataFrame, trials: pl.DataFrame) -> pl.DataFrame:
    """Redo ``word_index`` / ``ia_index`` of fixations whose ``line_index`` is already set (e.g. by hand).

    Parameters
    ----------
    fixations : polars.DataFrame
        ``trial_id``, ``x_px`` (px) and ``line_index`` (0-based; null: no line); other columns are kept.
    words, trials : polars.DataFrame
        As :func:`align_words` takes them.

    Returns
    -------
    polars.DataFrame
        ``fixations`` (same rows, same order) with ``word_index`` and ``ia_index`` (Int32) the box holding ``x`` on
        the fixation's line, by :func:`align_words`' rules; null when none does.
    """
    words = words.with_columns(pl.col("ia_index", "word_index", "line_index").cast(pl.Int32),
                               pl.col("left_px", "right_px", "top_px", "bottom_px").cast(pl.Float64))
    text_of = trials.select("trial_id", "text_id").drop_nulls("trial_id").unique("trial_id", keep="first",
                                                                                maintain_order=True)
    texts = words["text_id"].unique().sort()
    trial = _codes(fixations["trial_id"], text_of["trial_id"])
    code = np.r_[_codes(text_of["text_id"], texts), -1][trial]
    base = fixations.with_columns(pl.col("x_px").cast(pl.Float64))
    out, _ = _word_on_line(base, words, code)
    return fixations.with_columns(out["word_index"].cast(pl.Int32), out["ia_index"].cast(pl.Int32))
