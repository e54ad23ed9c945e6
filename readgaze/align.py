"""Fixation → word alignment: each fixation gets the word box it lies in, on its assigned line.

Rules (verified against Data Viewer on the OneStop sample, REFERENCE.md):

* Boxes are half-open, ``left_px <= x < right_px``. On a shared edge (``right == next left``) the
  fixation goes to the word that **starts** there (Data Viewer: 25/25 left edges, 6/6 top edges).
* Overlapping boxes on one line (BR-13): the box that starts last at or before ``x`` wins, which
  is the shared-edge rule generalised. Each overlapping pair is counted as a QC warning.
* A fixation first gets a line (``line_index``) from a line assigner, then the word on that line
  whose box contains ``x``. The default assigner, ``"nearest"``, takes the line whose box holds
  ``y``, else the nearest line midline if ``y`` lies within half a line pitch of the text block;
  any other name is passed to :func:`readgaze.lines.assign_lines`.
* A fixation outside every word box keeps a null ``word_index`` and is counted (``off_text``);
  those outside the screen are counted again as ``off_screen`` (BR-20).
"""

from __future__ import annotations

import polars as pl

from readgaze.errors import SchemaError
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
    lines = _lines(words).sort("text_id", "line_y_px").collect()
    extent = lines.group_by("text_id").agg(
        pl.col("top_px").min().alias("_text_top"), pl.col("bottom_px").max().alias("_text_bottom"),
        (pl.col("bottom_px") - pl.col("top_px")).median().alias("_line_h"))
    fx = fixations.drop("line_index", strict=False).with_row_index("_line_row")
    fx_sorted = fx.sort("text_id", "y_px").collect()
    near = fx_sorted.join_asof(lines.select("text_id", "line_y_px", "line_index"), left_on="y_px",
                               right_on="line_y_px", by="text_id", strategy="nearest",
                               check_sortedness=False)
    near = near.join(extent, on="text_id", how="left")
    inside = ((pl.col("y_px") >= pl.col("_text_top") - margin_lines * pl.col("_line_h"))
              & (pl.col("y_px") < pl.col("_text_bottom") + margin_lines * pl.col("_line_h")))
    near = near.with_columns(pl.when(inside).then(pl.col("line_index")).cast(pl.Int32).alias("line_index"))
    return near.lazy().sort("_line_row").drop("_line_row", "line_y_px", "_text_top", "_text_bottom", "_line_h")


def count_overlaps(words: pl.LazyFrame) -> int:
    """Number of pairs of neighbouring boxes on one line that overlap (``right > next left``)."""
    nxt = pl.col("left_px").shift(-1).over("text_id", "line_index", order_by="left_px")
    return int(words.select((pl.col("right_px") > nxt).fill_null(False).sum()).collect().item())


def _word_on_line(fixations: pl.DataFrame, words: pl.DataFrame) -> pl.DataFrame:
    """Attach the box on the fixation's line that starts last at or before ``x``, if it holds ``x``."""
    boxes = (words.select("text_id", "line_index", "left_px", pl.col("right_px").alias("_right"),
                          pl.col("ia_index").alias("_ia"), pl.col("word_index").alias("_word"))
             .sort("text_id", "line_index", "left_px", "_ia"))
    fx = fixations.sort("text_id", "line_index", "x_px")
    has_line = fx.filter(pl.col("line_index").is_not_null() & pl.col("x_px").is_not_null())
    no_line = fx.filter(pl.col("line_index").is_null() | pl.col("x_px").is_null())
    hit = has_line.join_asof(boxes, left_on="x_px", right_on="left_px", by=["text_id", "line_index"],
                             strategy="backward", check_sortedness=False)
    inside = pl.col("x_px") < pl.col("_right")
    hit = hit.with_columns(pl.when(inside).then(pl.col("_word")).alias("word_index"),
                           pl.when(inside).then(pl.col("_ia")).alias("ia_index"))
    hit = hit.drop("left_px", "_right", "_ia", "_word")
    no_line = no_line.with_columns(pl.lit(None, pl.Int32).alias("word_index"),
                                   pl.lit(None, pl.Int32).alias("ia_index"))
    return pl.concat([hit, no_line], how="vertical_relaxed")


def align_words(fixations, words, trials, *, line_assigner: str = "nearest",
                screen_px: tuple[float, float] | None = None) -> tuple[pl.LazyFrame, QCLog]:
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
    qc = QCLog()
    cols = fixations.collect_schema().names()
    fixations = fixations.with_columns(pl.col("x_px", "y_px").cast(pl.Float64))
    words = words.with_columns(pl.col("ia_index", "word_index", "line_index").cast(pl.Int32),
                               pl.col("left_px", "right_px", "top_px", "bottom_px").cast(pl.Float64))
    base = fixations.drop("word_index", "ia_index", "text_id", strict=False).with_row_index("_align_row")
    base = base.join(trials.select("trial_id", "text_id"), on="trial_id", how="left")
    if line_assigner == "nearest":
        lined = nearest_line(base, words)
    else:
        from readgaze.lines import assign_lines  # the line-assignment area's lookup by method name
        lined, line_qc = assign_lines(base, words, method=line_assigner, trials=trials)
        qc.extend(line_qc)
        lined = lined.lazy()
    df = lined.collect()
    out = _word_on_line(df, words.collect()).sort("_align_row")
    off_text = pl.col("word_index").is_null()
    x, y = pl.col("x_px"), pl.col("y_px")
    off_screen = (x < 0) | (y < 0)
    if screen_px is not None:
        off_screen = off_screen | (x >= screen_px[0]) | (y >= screen_px[1])
    counts = out.select(off_text.sum().alias("t"), (off_text & off_screen.fill_null(False)).sum().alias("s"),
                        pl.col("text_id").is_null().sum().alias("n"),
                        (x.is_null() | y.is_null()).sum().alias("m")).row(0)
    qc.add(STEP, "fixations", "off_text", counts[0], action="flagged",
           detail="outside every word box (or no line); word_index null, kept")
    qc.add(STEP, "fixations", "off_screen", counts[1], action="flagged",
           detail="off_text fixations outside the screen" + ("" if screen_px else " (negative x or y)"))
    if counts[3]:
        qc.add(STEP, "fixations", "missing_position", counts[3], action="flagged",
               detail="null x_px or y_px; counted in off_text, not in off_screen")
    if counts[2]:
        qc.add(STEP, "fixations", "trial_without_text", counts[2], action="flagged")
    qc.add(STEP, "words", "overlapping_boxes", count_overlaps(words), action="warning",
           detail="neighbouring boxes on a line overlap; the later-starting box wins")
    added = [c for c in out.columns if c not in cols and c not in ("text_id", "_align_row", "line_index",
                                                                    "word_index", "ia_index")]
    keep = [c for c in cols if c not in ("line_index", "word_index", "ia_index")] + added  # + e.g. vertical_drift_px
    out = out.select(*keep, pl.col("line_index").cast(pl.Int32), pl.col("word_index").cast(pl.Int32),
                     pl.col("ia_index").cast(pl.Int32))
    return out.lazy(), qc
