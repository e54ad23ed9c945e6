"""Load a folder of trials with gold line labels (Carr et al.'s 2022 corrected trials, in the format below).

The format (Carr et al. 2022 data as converted for readgaze): ``fixations.csv`` (trial_id, passage_id,
fixation_index, x, y, gold_line, discarded, ...), ``trials.csv`` (trial_id, passage_id, ...), ``lines.csv``
(passage_id, line, midline_y, ...) and ``words.csv`` (passage_id, word_index, line, x_tl, y_tl, x_br, y_br,
x_center, y_center, ...). Coordinates are screen px. Only the columns named here are read, plus the two human
correctors' labels before consensus (``annotator_jc_line``, ``annotator_vp_line``) when the file has them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import polars as pl

from readgaze.errors import ParseError

NEEDED = {
    "fixations.csv": ("trial_id", "passage_id", "fixation_index", "x", "y", "gold_line", "discarded"),
    "trials.csv": ("trial_id", "passage_id"),
    "lines.csv": ("passage_id", "line", "midline_y"),
    "words.csv": ("passage_id", "word_index", "line", "x_center", "y_center"),
}


@dataclass(frozen=True)
class GoldTrial:
    """One trial: arrays ready for :func:`readgaze.lines.assign_trial` plus its gold labels.

    ``xy`` (n, 2) float64 px; ``line_y_px`` (n_lines,) px; ``word_xy`` (n_words, 2) px in reading order;
    ``word_line`` (n_words,) int64; ``gold_line`` (n,) int64 (-1 where discarded); ``scored`` (n,) bool;
    ``agreed`` (n,) bool or None: scored fixations on which every human corrector's own label (the
    ``annotator_*_line`` columns, before consensus) equals the gold line; None when the file has no such column;
    ``human`` ``{corrector: (n,) int64 line, -1 where the corrector gave none}``, empty without such columns.
    """

    trial_id: str
    group: str
    xy: np.ndarray
    line_y_px: np.ndarray
    word_xy: np.ndarray
    word_line: np.ndarray
    gold_line: np.ndarray
    scored: np.ndarray
    agreed: np.ndarray | None = None
    human: dict = field(default_factory=dict)


def _read(folder: Path, name: str) -> pl.DataFrame:
    path = folder / name
    if not path.is_file():
        raise ParseError(f"file not found in {folder}; expected the line_assignment folder format", file=path)
    frame = pl.read_csv(path, infer_schema_length=None)
    missing = [c for c in NEEDED[name] if c not in frame.columns]
    if missing:
        raise ParseError(f"missing column(s) {missing}; expected {list(NEEDED[name])}", file=path, row=1)
    return frame


def load_gold(folder: str | Path) -> list[GoldTrial]:
    """Read every trial of a gold-labelled folder, in the order of ``trials.csv``.

    Parameters
    ----------
    folder : str or Path
        A folder in the ``line_assignment`` format (see module docstring).

    Returns
    -------
    list of GoldTrial

    Raises
    ------
    ParseError
        A file or column is missing, or a scored fixation has no gold line (names file, row and column).
    """
    folder = Path(folder)
    fix = _read(folder, "fixations.csv").with_row_index("_row", offset=2)
    trials = _read(folder, "trials.csv")
    lines = _read(folder, "lines.csv").sort("passage_id", "line")
    words = _read(folder, "words.csv").sort("passage_id", "word_index")
    bad = fix.filter((pl.col("discarded") == 0) & pl.col("gold_line").is_null())
    if bad.height:
        raise ParseError("got an empty gold_line on a fixation with discarded == 0, expected a 0-based line",
                         file=folder / "fixations.csv", row=int(bad["_row"][0]), column="gold_line")
    group_col = "age_group" if "age_group" in trials.columns else "passage_id"
    annotators = [c for c in fix.columns if c.startswith("annotator_") and c.endswith("_line")]
    out = []
    for trial_id, passage_id, group in trials.select("trial_id", "passage_id", group_col).iter_rows():
        f = fix.filter(pl.col("trial_id") == trial_id).sort("fixation_index")
        w = words.filter(pl.col("passage_id") == passage_id)
        out.append(GoldTrial(
            trial_id=trial_id, group=str(group),
            xy=f.select("x", "y").to_numpy().astype(np.float64),
            line_y_px=lines.filter(pl.col("passage_id") == passage_id)["midline_y"].to_numpy().astype(np.float64),
            word_xy=w.select("x_center", "y_center").to_numpy().astype(np.float64),
            word_line=w["line"].to_numpy().astype(np.int64),
            gold_line=f["gold_line"].fill_null(-1).to_numpy().astype(np.int64),
            scored=(f["discarded"] == 0).to_numpy(),
            agreed=_agreed(f, annotators),
            human={c.removeprefix("annotator_").removesuffix("_line"):
                   f[c].fill_null(-1).to_numpy().astype(np.int64) for c in annotators}))
    return out


def _agreed(f: pl.DataFrame, annotators: list[str]) -> np.ndarray | None:
    """Scored fixations on which every corrector in ``annotators`` gave the gold line (a missing label disagrees)."""
    if not annotators:
        return None
    same = pl.all_horizontal((pl.col(c) == pl.col("gold_line")).fill_null(False) for c in annotators)
    return f.select((pl.col("discarded") == 0) & same).to_series().to_numpy()
