"""Interest areas an EyeLink recording names itself: ``!V IAREA`` messages in the ``.asc`` file, or the ``.ias`` file a
``!V IAREA FILE`` message points to, read into one row per (trial, interest area). SR Research, *EyeLink Data Viewer
User's Manual*, "Interest area commands". :func:`readgaze.text.layouts_from_ia_messages` builds the text layouts
from these rows.
"""

from __future__ import annotations

import polars as pl

BOX_COLUMNS = ("left_px", "right_px", "top_px", "bottom_px")
"""An interest area's box, px (the canonical ``words`` columns)."""

IAREA_RE = (r"^!V IAREA\s+(RECTANGLE|ELLIPSE)\s+(\d+)\s+(-?[\d.]+)\s+(-?[\d.]+)\s+(-?[\d.]+)\s+(-?[\d.]+)"
            r"(?:\s+(.*))?$")
"""``!V IAREA RECTANGLE id left top right bottom [label]`` (ELLIPSE: its bounding box). SR Research, *EyeLink Data
Viewer User's Manual*, "Interest area commands" (``!V IAREA``); the same fields as a line of an ``.ias`` file."""
IAREA_FILE_RE = r"^!V IAREA\s+FILE\s+(.+?)\s*$"
"""``!V IAREA FILE path``: the interest areas are in an ``.ias`` file (relative to the recording's folder)."""


def ia_rows_from_messages(messages: pl.DataFrame, folder=None,
                          trials: pl.DataFrame | None = None) -> tuple[pl.DataFrame, list[str]]:
    """Interest-area rows per trial from an ``.asc`` recording's messages (``readgaze.io.asc.read_asc().messages``).

    Parameters
    ----------
    messages : polars.DataFrame
        ``line`` (Int), ``text`` (String), ``trial_id`` (String, null between recording blocks). An ``!V IAREA``
        message between blocks belongs to the next trial (Experiment Builder writes them after ``TRIALID``, before
        ``START``): the first of ``trials`` starting after it.
    folder : path, optional
        Where ``!V IAREA FILE`` paths are resolved (the recording's folder; also its ``aoi/`` subfolder, where Data
        Viewer keeps them).
    trials : polars.DataFrame, optional
        ``trial_id``, ``start_line`` (``read_asc().trials``); without it, the next message that has a trial.

    Returns
    -------
    (polars.DataFrame, list of str)
        ``trial_id``, ``ia_index`` (Int32), ``word`` (String), ``left_px``, ``right_px``, ``top_px``, ``bottom_px``
        (Float64) for every trial with interest areas (a trial's later message for an id replaces an earlier one),
        and warnings (an ``.ias`` file that is missing, ``FREEHAND`` areas, which are skipped).
    """
    from pathlib import Path

    schema = {"trial_id": pl.String, "ia_index": pl.Int32, "word": pl.String, "left_px": pl.Float64,
              "right_px": pl.Float64, "top_px": pl.Float64, "bottom_px": pl.Float64}
    ordered = messages.sort("line")
    if trials is not None and trials.height:
        starts = trials.select(pl.col("start_line").cast(pl.Int64).alias("line"),
                               pl.col("trial_id").cast(pl.String).alias("_next")).sort("line")
        ordered = (ordered.with_columns(pl.col("line").cast(pl.Int64))
                   .join_asof(starts, on="line", strategy="forward")
                   .with_columns(pl.coalesce("trial_id", "_next").alias("_trial")))
    else:
        ordered = ordered.with_columns(pl.col("trial_id").backward_fill().alias("_trial"))
    ia = ordered.filter(pl.col("text").str.starts_with("!V IAREA"))
    warnings = []
    rows = [ia.filter(pl.col("text").str.contains(IAREA_RE)).select(
        pl.col("_trial").alias("trial_id"), pl.col("line"), pl.col("text").str.extract_groups(IAREA_RE).alias("g"))]
    for trial, text in ia.filter(pl.col("text").str.contains(IAREA_FILE_RE)).select("_trial", "text").iter_rows():
        name = Path(text.removeprefix("!V IAREA").strip().removeprefix("FILE").strip())
        found = next((p for p in (Path(folder or ".") / name, Path(folder or ".") / "aoi" / name.name, name)
                      if p.is_file()), None)
        if found is None:
            warnings.append(f"interest-area file {name} (trial {trial}) not found next to the recording or in aoi/")
            continue
        lines = pl.DataFrame({"text": ["!V IAREA " + line.strip().split("\t", 2)[-1] if line[:1] in "-0123456789"
                                       else "!V IAREA " + line.strip()
                                       for line in found.read_text(errors="replace").splitlines()
                                       if line.strip() and not line.startswith("#")]})
        rows.append(lines.filter(pl.col("text").str.contains(IAREA_RE)).select(
            pl.lit(trial, pl.String).alias("trial_id"), pl.lit(0).alias("line"),
            pl.col("text").str.extract_groups(IAREA_RE).alias("g")))
    freehand = ia.filter(pl.col("text").str.contains(r"^!V IAREA\s+FREEHAND")).height
    if freehand:
        warnings.append(f"{freehand} FREEHAND interest area message(s) skipped (only rectangles and ellipses are "
                        f"word boxes)")
    parsed = pl.concat(rows, how="vertical_relaxed").unnest("g") if rows else pl.DataFrame()
    if parsed.height == 0:
        return pl.DataFrame(schema=schema), warnings
    names = dict(zip(parsed.columns[2:], ("shape", "ia_index", "left_px", "top_px", "right_px", "bottom_px", "word")))
    out = (parsed.rename(names).filter(pl.col("trial_id").is_not_null())
           .sort("trial_id", "line").unique(["trial_id", "ia_index"], keep="last", maintain_order=True)
           .select(pl.col("trial_id"), pl.col("ia_index").cast(pl.Int32), pl.col("word").fill_null(""),
                   *[pl.col(c).cast(pl.Float64) for c in BOX_COLUMNS]))
    return out.cast(schema), warnings
