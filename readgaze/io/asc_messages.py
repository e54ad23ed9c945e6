"""What the messages of an ``.asc`` file say: the screen size (``DISPLAY_COORDS``, ``GAZE_COORDS``), the validation
results (``!CAL VALIDATION``) and the tracker's error messages. SR Research, *EyeLink 1000 Plus User Manual* 1.0.19,
section 4.9 (messages) and the calibration and validation messages."""

from __future__ import annotations

import re

import polars as pl

from readgaze.errors import ConfigError
from readgaze.io.asc_scan import AscScan
from readgaze.qc import QCLog

STEP = "read_asc"
MESSAGE_RE = r"^MSG\s+(\S+)\s*(?:(-?\d+)\s+(\S.*))?(.*)$"  # time, optional offset, text


def messages_table(scan: AscScan) -> pl.DataFrame:
    rows = scan.lines.filter(pl.col("kind") == "MSG")
    parts = pl.col("text").str.extract_groups(MESSAGE_RE)
    return rows.select(
        pl.col("line").cast(pl.Int64), "block",
        time_ms=parts.struct.field("1").cast(pl.Float64, strict=False),
        offset_ms=parts.struct.field("2").cast(pl.Float64, strict=False),
        text=pl.coalesce(parts.struct.field("3"), parts.struct.field("4")).str.strip_chars(),
    )


def screen_box(messages: pl.DataFrame, screen_px, name: str, warnings: list[str],
                qc: QCLog) -> tuple[float, float, float, float] | None:
    """Screen box (left, top, right, bottom; px, inclusive) for ``off_screen``, and where it came from.

    ``screen_px`` wins; else ``DISPLAY_COORDS`` (the stimulus display), else ``GAZE_COORDS`` (the
    tracker's gaze coordinate space, usually equal), else none: off-screen detection is off.
    """
    if screen_px is not None:
        width, height = (float(v) for v in screen_px)
        if width <= 0 or height <= 0:
            raise ConfigError(f"screen_px: got {screen_px!r}, expected (width, height) > 0")
        qc.add(STEP, "fixations", "screen size", 0, action="flagged",
               detail=f"{width:g} x {height:g} px from the screen_px option")
        return 0.0, 0.0, width - 1, height - 1
    for key in ("DISPLAY_COORDS", "GAZE_COORDS"):
        hit = messages.filter(pl.col("text").str.starts_with(key)).head(1)
        if hit.height:
            numbers = [float(v) for v in re.findall(r"-?\d+(?:\.\d+)?", hit["text"][0])[:4]]
            if len(numbers) == 4:
                left, top, right, bottom = numbers
                used = f"{left:g} {top:g} {right:g} {bottom:g} (left top right bottom, px) from {key} " \
                       f"(line {hit['line'][0]})"
                qc.add(STEP, "fixations", "screen size", 0, action="flagged", detail=used)
                if key == "GAZE_COORDS":
                    warnings.append(f"{name} line {hit['line'][0]}: no DISPLAY_COORDS message; off_screen uses "
                                    f"the screen size {used}")
                return tuple(numbers)
    warnings.append(f"{name}: no DISPLAY_COORDS or GAZE_COORDS message and no screen_px; off-screen detection "
                    "is off (off_screen is False for every fixation; pass screen_px / --screen-px)")
    qc.add(STEP, "fixations", "off-screen detection off", 0, action="warning",
           detail="no DISPLAY_COORDS or GAZE_COORDS message and no screen_px")
    return None


_VALIDATION_RE = (r"^!CAL VALIDATION\s+(\S+)\s+\S+\s+(LEFT|RIGHT)\s+(\S+)\s+ERROR\s+(\S+)\s+avg\.?\s+(\S+)\s+max"
                  r"(?:\s+OFFSET\s+(\S+)\s+deg\.?\s+(-?[\d.]+),\s*(-?[\d.]+)\s+pix)?")


def empty_validation() -> pl.DataFrame:
    return pl.DataFrame(schema={"line": pl.Int64, "time_ms": pl.Float64, "block": pl.Int32, "eye": pl.String,
                                "points": pl.Int32, "result": pl.String, "error_avg_deg": pl.Float64,
                                "error_max_deg": pl.Float64, "offset_deg": pl.Float64, "offset_x_px": pl.Float64,
                                "offset_y_px": pl.Float64})


def validation_table(messages: pl.DataFrame, scan: AscScan, qc: QCLog) -> pl.DataFrame:
    """``!CAL VALIDATION HV9 R RIGHT GOOD ERROR 0.35 avg. 0.78 max OFFSET ...`` rows, one per eye.

    ``points`` comes from the calibration type (``HV9`` -> 9); ``block`` is the next recording block
    (the one the validation was done for), null after the last. Each row is recorded in ``qc``.
    EyeLink 1000 Plus User Manual 1.0.19, section 4.9 (calibration and validation messages).
    """
    hits = messages.filter(pl.col("text").str.contains(r"^!CAL VALIDATION\s")).with_columns(
        g=pl.col("text").str.extract_groups(_VALIDATION_RE))
    hits = hits.filter(pl.col("g").struct.field("2").is_not_null())
    if not hits.height:
        return empty_validation()
    field_ = lambda i: pl.col("g").struct.field(str(i))  # noqa: E731
    starts = pl.DataFrame({"_start": [b.start_line for b in scan.blocks], "block": [b.index for b in scan.blocks]},
                          schema={"_start": pl.Int64, "block": pl.Int32})
    out = hits.select(
        "line", "time_ms", eye=field_(2).str.to_lowercase(),
        points=field_(1).str.extract(r"(\d+)").cast(pl.Int32, strict=False), result=field_(3),
        error_avg_deg=field_(4).cast(pl.Float64, strict=False), error_max_deg=field_(5).cast(pl.Float64, strict=False),
        offset_deg=field_(6).cast(pl.Float64, strict=False), offset_x_px=field_(7).cast(pl.Float64, strict=False),
        offset_y_px=field_(8).cast(pl.Float64, strict=False))
    out = out.sort("line").join_asof(starts, left_on="line", right_on="_start", strategy="forward").drop("_start")
    out = out.select(empty_validation().columns)
    for row in out.iter_rows(named=True):
        qc.add(STEP, "validation", f"{row['eye']} eye {row['result']}", 1, action="flagged",
               detail=f"line {row['line']}: {row['points']} points, error avg {row['error_avg_deg']}° "
                      f"max {row['error_max_deg']}°, before block {row['block']}")
    return out


def warn_tracker_errors(messages: pl.DataFrame, name: str, warnings: list[str], qc: QCLog) -> None:
    errors = messages.filter(pl.col("text").str.contains(r"^ERROR\b"))
    if not errors.height:
        return
    errors = errors.with_columns(run=(pl.col("line").diff() != 1).fill_null(True).cum_sum())
    for run in errors.partition_by("run", maintain_order=True):
        first, last = run["line"][0], run["line"][-1]
        where = f"line {first}" if first == last else f"lines {first}–{last}"
        trial = run["trial_id"][0]
        warnings.append(f"{name} {where} (trial {trial}): tracker error message(s): " + "; ".join(run["text"]))
        qc.add(STEP, "messages", "tracker error message", run.height, action="warning",
               detail=f"{where}, trial {trial}")
