"""Text layout: lines and word (interest-area) boxes on the screen.

A :class:`TextLayout` is what line assignment and word alignment need to know about a text: one
row per interest area in ``words`` (canonical ``words`` columns) and one row per text line in
``lines``. Builders from IA reports, AOI files and passage files live in this module too.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import polars as pl


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
    """

    words: pl.DataFrame
    lines: pl.DataFrame
    text_id: str | None = None

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
    def from_words(cls, words: pl.DataFrame, text_id: str | None = None) -> "TextLayout":
        """Build a layout from word boxes that already carry ``line_index``."""
        lines = (words.group_by("line_index")
                 .agg(pl.col("top_px").min(), pl.col("bottom_px").max(),
                      pl.col("left_px").min(), pl.col("right_px").max())
                 .with_columns(((pl.col("top_px") + pl.col("bottom_px")) / 2).alias("y_px"))
                 .sort("line_index"))
        return cls(words=words.sort("ia_index") if "ia_index" in words.columns else words,
                   lines=lines, text_id=text_id)
