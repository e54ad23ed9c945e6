"""Text layout: lines and word (interest-area) boxes on the screen.

A :class:`TextLayout` is what line assignment and word alignment need to know about a text: one
row per interest area in ``words`` (canonical ``words`` columns) and one row per text line in
``lines``, and the text's reading ``direction`` (``"ltr"`` or ``"rtl"``). Builders from IA reports,
AOI files, passage files and a recording's ``!V IAREA`` messages live in this module too; the checks of a layout
(the interest-area faults that EyeBench (Shubi et al., 2025) fixed by hand, the fit of the fixations) are in
:mod:`readgaze.layout_checks`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import polars as pl

from readgaze.errors import ConfigError
from readgaze.io.iarea_messages import IAREA_FILE_RE, IAREA_RE, ia_rows_from_messages  # noqa: F401 (as before)
from readgaze.io.labels import NO_BREAK_SPACES, clean_label  # noqa: F401 (readgaze.text.clean_label, as before)
from readgaze.qc import QCLog

DIRECTIONS = ("ltr", "rtl")
"""Reading directions: left to right (English, German), right to left (Hebrew, Arabic)."""


def check_direction(direction: str) -> str:
    """Return ``direction`` if it is ``"ltr"`` or ``"rtl"``; else raise :class:`ConfigError`."""
    if direction not in DIRECTIONS:
        raise ConfigError(f"direction: got {direction!r}, expected 'ltr' (left to right) or 'rtl' (right to left)")
    return direction


@dataclass(frozen=True)
class TextLayout:
    """Lines and word boxes of one text.

    Attributes
    ----------
    words : polars.DataFrame
        One row per interest area: ``ia_index`` (Int32), ``word_index`` (Int32), ``word`` (String),
        ``line_index`` (Int32), ``left_px``, ``right_px``, ``top_px``, ``bottom_px`` (Float64, px,
        half-open boxes). Sorted by ``ia_index``.
    lines : polars.DataFrame
        One row per line: ``line_index`` (Int32, 0-based, top to bottom), ``top_px``, ``bottom_px``,
        ``left_px``, ``right_px``, ``y_px`` (Float64; the line's vertical midline).
    text_id : str, optional
    direction : {"ltr", "rtl"}
        Reading direction; line assignment, landing position and the measures' "left"/"right" follow it.
    """

    words: pl.DataFrame
    lines: pl.DataFrame
    text_id: str | None = None
    direction: str = "ltr"

    def __post_init__(self) -> None:
        check_direction(self.direction)

    @property
    def n_lines(self) -> int:
        return self.lines.height

    @property
    def line_y_px(self) -> np.ndarray:
        """Midline of each line, shape ``(n_lines,)``, float64, px."""
        return self.lines["y_px"].to_numpy()

    @property
    def line_height_px(self) -> float:
        """Median line pitch (distance between successive midlines), or box height for one line."""
        y = self.line_y_px
        if len(y) > 1:
            return float(np.median(np.diff(y)))
        return float((self.lines["bottom_px"] - self.lines["top_px"]).median())

    @classmethod
    def from_words(cls, words: pl.DataFrame, text_id: str | None = None, direction: str = "ltr") -> TextLayout:
        """Build a layout from word boxes that already carry ``line_index``."""
        lines = (words.group_by("line_index")
                 .agg(pl.col("top_px").min(), pl.col("bottom_px").max(),
                      pl.col("left_px").min(), pl.col("right_px").max())
                 .with_columns(((pl.col("top_px") + pl.col("bottom_px")) / 2).alias("y_px"))
                 .sort("line_index"))
        return cls(words=words.sort("ia_index") if "ia_index" in words.columns else words,
                   lines=lines, text_id=text_id, direction=direction)


# --- builders ------------------------------------------------------------------------------------

_BOX = ("left_px", "right_px", "top_px", "bottom_px")
_IA_SOURCE_NAMES = {"IA_ID": "ia_index", "IA_LABEL": "word", "IA_LEFT": "left_px", "IA_RIGHT": "right_px",
                    "IA_TOP": "top_px", "IA_BOTTOM": "bottom_px"}


def assign_box_lines(words: pl.DataFrame, *, by: str | list[str] | None = None) -> pl.DataFrame:
    """Number the text lines of word boxes from the boxes' rows on the screen.

    Boxes whose vertical midlines lie within half a median box height of each other form one line;
    lines are numbered 0, 1, ... from top to bottom within each group ``by`` (e.g. ``text_id``). A box
    taller than 1.5 median heights (an interest area that spans a line break) belongs to the line it
    starts on: its midline is taken one half median height below its top (:func:`ia_quirks` flags it).

    Parameters
    ----------
    words : polars.DataFrame
        Needs ``top_px`` and ``bottom_px`` (Float64, px).
    by : str or list of str, optional
        Columns that identify one text.

    Returns
    -------
    polars.DataFrame
        ``words`` with ``line_index`` (Int32) set (replaced if present), row order kept.
    """
    keys = [by] if isinstance(by, str) else list(by or [])
    tol = ((pl.col("bottom_px") - pl.col("top_px")).median() / 2).over(keys) if keys else \
        (pl.col("bottom_px") - pl.col("top_px")).median() / 2
    tall = (pl.col("bottom_px") - pl.col("top_px")) > 3 * tol
    mid = pl.when(tall).then(pl.col("top_px") + tol).otherwise((pl.col("top_px") + pl.col("bottom_px")) / 2)
    rows = (words.with_row_index("_row").with_columns(mid.alias("_mid"), tol.alias("_tol"))
            .sort([*keys, "_mid"]))
    gap = pl.col("_mid").diff().over(keys) if keys else pl.col("_mid").diff()
    rows = rows.with_columns((gap.fill_null(0) > pl.col("_tol")).cast(pl.Int32).alias("_new"))
    cum = pl.col("_new").cum_sum().over(keys) if keys else pl.col("_new").cum_sum()
    rows = rows.with_columns(cum.cast(pl.Int32).alias("line_index"))
    return rows.sort("_row").drop("_row", "_mid", "_tol", "_new")


def merge_hyphen_splits(words: pl.DataFrame, *, by: str | list[str] | None = None) -> pl.DataFrame:
    """Give a word split over a line break (``51-year-`` | ``old``) one ``word_index`` for its two boxes.

    An interest area whose label ends in a hyphen and which is the last box of its line continues
    into the first box of the next line: both get the same ``word_index`` (OneStop's hyphenated
    words). So does a hyphenated label written on both sides of the break (``hour-long`` |
    ``hour-long``, an EyeBench hand fix). Every other box gets its own index, in ``ia_index`` order.

    Parameters
    ----------
    words : polars.DataFrame
        Needs ``ia_index`` (Int32), ``word`` (String) and ``line_index`` (Int32).
    by : str or list of str, optional
        Columns that identify one text.

    Returns
    -------
    polars.DataFrame
        ``words`` sorted by (``by``, ``ia_index``) with ``word_index`` (Int32) set.
    """
    keys = [by] if isinstance(by, str) else list(by or [])

    def over(e: pl.Expr) -> pl.Expr:
        return e.over(keys) if keys else e

    w = words.sort([*keys, "ia_index"])
    prev = over(pl.col("word").shift(1))
    repeated = (prev == pl.col("word")) & pl.col("word").str.contains(r"\w-\w")
    continues = ((prev.str.ends_with("-") | repeated)
                 & (over(pl.col("line_index").shift(1)) < pl.col("line_index"))).fill_null(False)
    w = w.with_columns(continues.alias("_cont"))
    index = over(pl.col("ia_index").rank("ordinal") - 1 - pl.col("_cont").cast(pl.Int64).cum_sum())
    return w.with_columns(index.cast(pl.Int32).alias("word_index")).drop("_cont")


def layout_from_ia_rows(words_df: pl.DataFrame, text_id: str | None = None, direction: str = "ltr") -> TextLayout:
    """Build a text layout from interest-area rows (an IA report's boxes, OneStop, SB-SAT).

    Accepts canonical names (``ia_index``, ``word``, ``left_px`` ...) or Data Viewer names
    (``IA_ID``, ``IA_LABEL``, ``IA_LEFT``, ``IA_RIGHT``, ``IA_TOP``, ``IA_BOTTOM``). Duplicate rows of
    one IA (one per trial in an IA report) are collapsed. Lines come from the boxes' rows
    (:func:`assign_box_lines`); a hyphen-split word keeps one ``word_index`` with two boxes
    (:func:`merge_hyphen_splits`). ``ia_index`` is re-based to start at 0. No-break spaces in labels
    become plain spaces (:func:`clean_label`).

    Raises
    ------
    SchemaError
        When a box column or the label is missing.
    DataError
        When one ``ia_index`` has two different boxes.
    """
    from readgaze.errors import DataError, SchemaError

    df = words_df.rename({k: v for k, v in _IA_SOURCE_NAMES.items() if k in words_df.columns
                          and v not in words_df.columns})
    missing = [c for c in ("ia_index", "word", *_BOX) if c not in df.columns]
    if missing:
        raise SchemaError(f"interest-area rows lack column(s) {', '.join(missing)}")
    for c in ("ia_index", *_BOX):  # rows read as text somewhere: a value that is not a number is named
        if not df.schema[c].is_numeric():
            number = pl.col(c).cast(pl.String).str.strip_chars().cast(pl.Float64, strict=False)
            bad = df.filter(pl.col(c).is_not_null() & number.is_null())
            if bad.height:
                from readgaze.errors import ParseError

                raise ParseError(f"interest-area rows: got {bad[c][0]!r}, expected a number", column=c)
            df = df.with_columns(number.alias(c))
    df = (df.select(pl.col("ia_index").cast(pl.Int32, strict=False), clean_label(pl.col("word").cast(pl.String)),
                    *[pl.col(c).cast(pl.Float64) for c in _BOX]).unique().sort("ia_index"))
    if df["ia_index"].n_unique() != df.height:
        dup = df.filter(pl.col("ia_index").is_duplicated())["ia_index"][0]
        raise DataError(f"interest area {dup} has two different boxes or labels", column="ia_index")
    df = df.with_columns((pl.col("ia_index") - pl.col("ia_index").min()).cast(pl.Int32))
    df = merge_hyphen_splits(assign_box_lines(df))
    if text_id is not None:
        df = df.with_columns(pl.lit(text_id).alias("text_id"))
    return TextLayout.from_words(df, text_id=text_id, direction=direction)


def read_aoi_file(path, text_id: str | None = None, *, qc: QCLog | None = None, separator: str | None = None,
                  encoding: str = "utf-8") -> TextLayout:
    """Read a pymovements-style AOI file: PoTeC word AOIs or character AOIs.

    * Word AOIs (PoTeC ``*_aoi_*.tsv``): columns ``aoi`` (1-based id, may be written ``1.0``),
      ``start_x``, ``start_y``, ``end_x``, ``end_y`` (px) and ``character`` (the word).
    * Character AOIs (pymovements ``toy_text_*_aoi.csv``): one row per character with ``char``,
      ``top_left_x``, ``top_left_y``, ``width``, ``height``, ``line_idx`` and ``word`` (null on
      spaces); a word is a maximal run of non-space characters on a line, its box the union.

    The separator (tab or comma) is detected from the header line. Boxes are half-open. The file is read as every
    delimited file is (:func:`readgaze.io.csv.scan_csv`: damaged lines repaired and counted in ``qc``, or refused
    with the line named); ids must be whole numbers >= 1, coordinates from 0 to 100,000 px (on the stimulus), widths
    and heights >= 0, and a box's end not before its start.

    Raises
    ------
    ParseError
        When the columns match neither format, or a cell breaks the rules above (file, row, column).
    """
    from pathlib import Path

    from readgaze.errors import ParseError
    from readgaze.io.cells import boxes, null_counts
    from readgaze.io.csv import require_numeric, scan_csv

    path = Path(path)
    raw = scan_csv(path, separator=separator, encoding=encoding, qc=qc, step="read_aoi_file", table="words")
    names = raw.collect_schema().names()
    null_counts(raw, qc, "read_aoi_file", "words", path)
    px = {"finite": True, "minimum": 0.0, "largest": 100_000.0, "what": "a coordinate in px (0 to 100,000)"}
    if {"aoi", "start_x", "start_y", "end_x", "end_y", "character"} <= set(names):
        raw = require_numeric(raw, path, ["aoi"], pl.Int64, minimum=1, what="an AOI id (1, 2, ...)")
        raw = require_numeric(raw, path, ["start_x", "start_y", "end_x", "end_y"], **px)
        boxes(raw, path, (("start_x", "end_x"), ("start_y", "end_y")))
        df = raw.select((pl.col("aoi") - 1).cast(pl.Int32).alias("ia_index"),
                        pl.col("character").cast(pl.String).alias("word"), pl.col("start_x").alias("left_px"),
                        pl.col("end_x").alias("right_px"), pl.col("start_y").alias("top_px"),
                        pl.col("end_y").alias("bottom_px")).collect()
        return layout_from_ia_rows(df, text_id=text_id)
    if {"char", "top_left_x", "top_left_y", "width", "height", "line_idx"} <= set(names):
        raw = require_numeric(raw, path, ["top_left_x", "top_left_y"], **px)
        raw = require_numeric(raw, path, ["width", "height"], finite=True, minimum=0.0, largest=100_000.0,
                              what="a size in px (a number from 0 to 100,000)")
        raw = require_numeric(raw, path, ["line_idx"], pl.Int64, minimum=0, what="a line number (0, 1, ...)")
        raw = raw.collect()
        chars = raw.with_row_index("_order").with_columns(
            pl.col("char").is_null() | pl.col("char").cast(pl.String).str.strip_chars().eq("")).rename(
            {"char": "_space"})
        chars = chars.with_columns(pl.col("_space").cast(pl.Int32).cum_sum().over("line_idx").alias("_run"))
        words = (chars.filter(~pl.col("_space")).group_by("line_idx", "_run", maintain_order=True)
                 .agg(pl.col("_order").min(), pl.col("top_left_x").min().alias("left_px"),
                      (pl.col("top_left_x") + pl.col("width")).max().alias("right_px"),
                      pl.col("top_left_y").min().alias("top_px"),
                      (pl.col("top_left_y") + pl.col("height")).max().alias("bottom_px"),
                      pl.col("word").drop_nulls().first().alias("word"))
                 .sort("_order").with_row_index("ia_index"))
        df = words.select(pl.col("ia_index").cast(pl.Int32), pl.col("word").cast(pl.String), *_BOX)
        return layout_from_ia_rows(df, text_id=text_id)
    raise ParseError(f"columns {names} match neither the word-AOI (aoi, start_x, start_y, end_x, "
                     "end_y, character) nor the character-AOI (char, top_left_x, top_left_y, width, "
                     "height, line_idx) format", file=path, row=1)


def read_passages(path) -> dict[str, TextLayout]:
    """Read a passage file (``line_assignment/passages.json`` format) into one layout per passage.

    ``{"format_version": 1, "passages": {id: {"lines": [...], "line_boxes": [[x_tl, y_tl, x_br,
    y_br], ...], "line_y": [...], "words": [{"line", "index", "text", "x_tl", "y_tl", "x_br",
    "y_br"}, ...]}}}``. Word boxes are kept as given (tight, ``midline ± font_size/2``); the
    ``lines`` frame uses the full line boxes (one line pitch tall) and the given midlines.

    Raises
    ------
    ParseError
        When the file is not JSON or lacks ``passages``/``words``/``line_boxes``.
    """
    import json
    from pathlib import Path

    from readgaze.errors import ParseError

    path = Path(path)
    try:
        passages = json.loads(path.read_text(encoding="utf-8"))["passages"]
    except (json.JSONDecodeError, KeyError, TypeError) as e:
        raise ParseError(f"not a passages file ({e.__class__.__name__}: {e}); expected "
                         "{'format_version': 1, 'passages': {...}}", file=path) from None
    out = {}
    for pid, p in passages.items():
        try:
            w = pl.DataFrame({"ia_index": [x["index"] for x in p["words"]],
                              "word": [x["text"] for x in p["words"]],
                              "line_index": [x["line"] for x in p["words"]],
                              "left_px": [x["x_tl"] for x in p["words"]],
                              "right_px": [x["x_br"] for x in p["words"]],
                              "top_px": [x["y_tl"] for x in p["words"]],
                              "bottom_px": [x["y_br"] for x in p["words"]]})
            boxes = p["line_boxes"]
            lines = pl.DataFrame({"line_index": list(range(len(boxes))),
                                  "top_px": [b[1] for b in boxes], "bottom_px": [b[3] for b in boxes],
                                  "left_px": [b[0] for b in boxes], "right_px": [b[2] for b in boxes],
                                  "y_px": p.get("line_y") or [(b[1] + b[3]) / 2 for b in boxes]})
        except (KeyError, TypeError, IndexError) as e:
            raise ParseError(f"passage {pid!r}: missing or malformed field {e}", file=path) from None
        w = w.with_columns(pl.col("ia_index", "line_index").cast(pl.Int32),
                           pl.col(*_BOX).cast(pl.Float64), pl.lit(pid).alias("text_id"))
        w = w.with_columns(pl.col("ia_index").alias("word_index"))
        lines = lines.with_columns(pl.col("line_index").cast(pl.Int32),
                                   pl.exclude("line_index").cast(pl.Float64))
        out[pid] = TextLayout(words=w.sort("ia_index"), lines=lines, text_id=pid)
    return out


# --- layouts from an EyeLink recording's own interest-area messages -------------------------------------------

def layouts_from_ia_messages(messages: pl.DataFrame, folder=None, trials: pl.DataFrame | None = None
                             ) -> tuple[dict[str, TextLayout], dict[str, str], list[str]]:
    """The text layout of every trial with ``!V IAREA`` messages
    (:func:`readgaze.io.iarea_messages.ia_rows_from_messages`).

    Trials with the same interest areas share one layout, named ``ia_`` + the first 10 hex digits of a SHA-1 of
    its rows (the same text in every recording gets the same id, so it is one item across participants).

    Returns ``({text_id: TextLayout}, {trial_id: text_id}, warnings)``.
    """
    import hashlib

    rows, warnings = ia_rows_from_messages(messages, folder, trials)
    layouts, texts = {}, {}
    for (trial,), part in rows.group_by(["trial_id"], maintain_order=True):
        part = part.drop("trial_id").sort("ia_index")
        digest = hashlib.sha1(part.write_csv().encode()).hexdigest()[:10]
        text_id = f"ia_{digest}"
        texts[str(trial)] = text_id
        if text_id not in layouts:
            layouts[text_id] = layout_from_ia_rows(part, text_id=text_id)
    return layouts, texts, warnings
