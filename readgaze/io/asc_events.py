"""The events of one recording block, completed and checked against the block's own lines.

EyeLink writes an event twice, a start line (``SFIX``/``SSACC``/``SBLINK``) and an end line (``EFIX``...) that
carries its values; :mod:`readgaze.io.asc_block` parses the end lines. Here an event begun before the block's
``START`` is flagged ``truncated_start`` and one without an end line is closed at the block end
(``truncated_end``), each event gets the line it was read from, a duration field that is not
``end - start + one sample interval`` is warned about, and a saccade holding a blink of the same eye is flagged
``contains_blink`` (:func:`flag_blink_saccades`). Used by :func:`readgaze.io.asc.read_asc`, one block at a time.
"""

from __future__ import annotations

import polars as pl

from readgaze.io.asc_scan import STEP, AscScan, Block
from readgaze.qc import QCLog


def with_open_events(scan: AscScan, block: Block, events: pl.DataFrame, end_ms: float) -> pl.DataFrame:
    """Flag events begun before START; close S-lines without an end line at the block end."""
    interval = 1000.0 / block.sampling_rate_hz
    opened = scan.block_lines(block.index).filter(pl.col("kind").is_in(["SFIX", "SSACC", "SBLINK"]))
    opened = opened.select(pl.col("text").str.extract_groups(r"^S(\w+)\s+([LR])\s+(\S+)")).unnest("text")
    opened = opened.select(kind=pl.col("1").replace({"FIX": "fixation", "SACC": "saccade", "BLINK": "blink"}),
                           eye=pl.col("2").replace({"L": "left", "R": "right"}),
                           start_ms=pl.col("3").cast(pl.Float64, strict=False))
    if events.height:
        opened = opened.join(events.select("kind", "eye", "start_ms"), on=["kind", "eye", "start_ms"], how="anti")
    closed = opened.with_columns(end_ms=pl.lit(end_ms - interval), duration_ms=pl.lit(end_ms) - pl.col("start_ms"),
                                 truncated_end=pl.lit(True))
    if events.height:
        events = events.with_columns(truncated_end=pl.lit(False))
    out = pl.concat([events, closed], how="diagonal_relaxed")
    return out.with_columns(truncated_start=pl.col("start_ms") < block.start_ms).sort("start_ms", maintain_order=True)


def report_edges(events: pl.DataFrame, block: Block, name: str, warnings: list[str], qc: QCLog) -> None:
    for flag, what in (("truncated_start", "began before START (kept, flagged truncated_start)"),
                       ("truncated_end", f"have no end line; closed at the block end (line {block.last_line}), "
                                         "flagged truncated_end")):
        hit = events.filter(pl.col(flag))
        if hit.height:
            kinds = ", ".join(f"{k} {n}" for k, n in hit.group_by("kind").len().sort("kind").iter_rows())
            warnings.append(f"{name} line {block.start_line}: {hit.height} event(s) ({kinds}) {what}")
            qc.add(STEP, "events", flag, hit.height, action="flagged", detail=f"block at line {block.start_line}")


def check_durations(events: pl.DataFrame, block: Block, name: str, warnings: list[str]) -> None:
    """EFIX duration should be end - start + one interval (1 ms slack for integer stamps at 2 kHz)."""
    interval = 1000.0 / block.sampling_rate_hz
    odd = events.filter(~pl.col("truncated_end"), (pl.col("duration_ms") - (pl.col("end_ms") - pl.col("start_ms")
                                                                            + interval)).abs() > 1.0)
    if odd.height:
        lines = odd["line"].drop_nulls().sort()
        at = f"line {lines[0]}" if lines.len() else f"block at line {block.start_line}"
        kinds = ", ".join(f"{k} {n}" for k, n in odd.group_by("kind").len().sort("kind").iter_rows())
        more = f" (lines {', '.join(map(str, lines.head(5)))}{', ...' if lines.len() > 5 else ''})" \
            if lines.len() > 1 else ""
        warnings.append(f"{name} {at}: {odd.height} event(s) ({kinds}) whose duration field is not "
                        f"end - start + {interval:g} ms{more}; the duration field is kept")


def with_lines(scan: AscScan, block: Block, events: pl.DataFrame) -> pl.DataFrame:
    """Add ``line``: the 1-based line of each event's end line (``EFIX``/``ESACC``/``EBLINK``), or of its
    start line (``SFIX``...) when it has no end line."""
    rows = scan.block_lines(block.index).filter(pl.col("kind").is_in(["EFIX", "ESACC", "EBLINK", "SFIX", "SSACC",
                                                                       "SBLINK"]))
    g = pl.col("text").str.extract_groups(r"^[SE](FIX|SACC|BLINK)\s+([LR])\s+(\S+)(?:\s+(\S+))?")
    rows = rows.with_columns(g=g).select(
        line=pl.col("line").cast(pl.Int64), _end=pl.col("kind").cast(pl.String).str.starts_with("E"),
        kind=pl.col("g").struct.field("1").replace_strict({"FIX": "fixation", "SACC": "saccade", "BLINK": "blink"}),
        eye=pl.col("g").struct.field("2").replace_strict({"L": "left", "R": "right"}),
        start_ms=pl.col("g").struct.field("3").cast(pl.Float64, strict=False).round(3))
    ends = rows.filter(pl.col("_end")).unique(["kind", "eye", "start_ms"], keep="first").drop("_end")
    opens = rows.filter(~pl.col("_end")).unique(["kind", "eye", "start_ms"], keep="first").drop("_end")
    keyed = events.with_columns(pl.col("start_ms").round(3).alias("_key"))
    out = keyed.join(ends.rename({"start_ms": "_key"}), on=["kind", "eye", "_key"], how="left", maintain_order="left")
    out = out.join(opens.rename({"start_ms": "_key", "line": "_open"}), on=["kind", "eye", "_key"], how="left",
                   maintain_order="left")
    return out.with_columns(line=pl.coalesce("line", "_open")).drop("_key", "_open")


def flag_blink_saccades(events: pl.DataFrame, name: str, warnings: list[str], qc: QCLog) -> pl.DataFrame:
    """``contains_blink`` on saccades: a blink of the same eye starts inside ``[start, start + duration)``.

    EyeLink's parser reports a blink as a saccade around the blink (``SSACC``, ``SBLINK``, ``EBLINK``,
    ``ESACC``; EyeLink 1000 Plus User Manual 1.0.19, section 4.5.3.5), so such a saccade's amplitude
    and velocity measure the eyelid, not an eye movement: saccade features leave it out.
    """
    sacc = events.with_row_index("_i").filter(pl.col("kind") == "saccade")
    blinks = events.filter(pl.col("kind") == "blink").select("eye", _b=pl.col("start_ms")).sort("_b")
    flag = pl.lit(False)
    if sacc.height and blinks.height:
        hit = (sacc.select("_i", "eye", "start_ms", _e=pl.col("start_ms") + pl.col("duration_ms")).sort("start_ms")
               .join_asof(blinks, left_on="start_ms", right_on="_b", by="eye", strategy="forward",
                          check_sortedness=False).filter(pl.col("_b") < pl.col("_e")))
        flag = pl.int_range(pl.len(), dtype=pl.UInt32).is_in(hit["_i"].implode())
        if hit.height:
            lines = events.with_row_index("_i").filter(pl.col("_i").is_in(hit["_i"].implode()))["line"].drop_nulls()
            at = f" line {lines.min()}" if lines.len() else ""
            warnings.append(f"{name}{at}: {hit.height} saccade(s) contain a blink (flagged contains_blink; left "
                            "out of saccade amplitude and velocity features)")
            qc.add(STEP, "saccades", "contains_blink", hit.height, action="flagged",
                   detail=f"first{at}" if at else None)
    return events.with_columns(contains_blink=pl.when(pl.col("kind") == "saccade").then(flag))
