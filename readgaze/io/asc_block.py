"""Parse one recording block's sample and end-of-event lines with Polars (no temporary file, no pandas).

The fields follow the EyeLink ASC format (SR Research, *EyeLink 1000 Plus User Manual* 1.0.19, section 4.9):

* sample line: ``time``, then ``x y pupil`` per recorded eye (left before right), then the optional groups
  the ``SAMPLES`` line declares (velocity, resolution, input, head target) and status tokens; ``.`` is a
  missing value;
* ``EFIX eye start end duration x y pupil [xres yres]``;
* ``ESACC eye start end duration start_x start_y end_x end_y amplitude_deg peak_velocity [xres yres]``;
* ``EBLINK eye start end duration``.

It returns the same frames as :func:`readgaze.io.asc_mne.read_block` (``mne.io.read_raw_eyelink`` on the
repaired block); a test checks that both agree on every real and bad-input file. Samples are parsed one
chunk of sample lines at a time (:func:`parse_samples`), so work and memory per call are bounded by the
chunk size; the end-of-event lines of a block (a few per hundred samples) are parsed at once
(:func:`parse_events`).
"""

from __future__ import annotations

import polars as pl

from readgaze.io.asc_scan import AscScan, Block

EYES = {"L": "left", "R": "right"}
EVENTS = {"EFIX": ("fixation", ("x_px", "y_px", "pupil")),
          "ESACC": ("saccade", ("start_x_px", "start_y_px", "end_x_px", "end_y_px", "amplitude_deg",
                                "peak_velocity_deg_per_s")),
          "EBLINK": ("blink", ())}


def _number(tokens: pl.Expr, i: int) -> pl.Expr:
    return tokens.list.get(i, null_on_oob=True).cast(pl.Float64, strict=False)


def read_block(scan: AscScan, block: Block, times: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Samples and tracker events of one block (all of its sample lines in ``times``): see
    :func:`parse_samples` and :func:`parse_events`."""
    return parse_samples(block, times), parse_events(scan, block)


def parse_samples(block: Block, times: pl.DataFrame) -> pl.DataFrame:
    """Samples of sample lines of one block, in tracker milliseconds.

    Parameters
    ----------
    block
        From :func:`readgaze.io.asc_scan.scan_asc` (its eyes).
    times : polars.DataFrame
        Sample lines with ``text`` and ``time_ms_repaired`` (:meth:`readgaze.io.asc_repair.BlockSamples.times`),
        a whole block or one chunk of it.

    Returns
    -------
    polars.DataFrame
        One row per line: ``time_ms`` (Float64, the repaired timestamps) and per eye ``x_{eye}_px``,
        ``y_{eye}_px``, ``pupil_{eye}`` (Float64; null when missing, pupil also null when 0 with no gaze
        position).
    """
    tokens = pl.col("_t")
    split = times.select("time_ms_repaired", _t=pl.col("text").str.extract_all(r"\S+"))
    columns = {"time_ms": pl.col("time_ms_repaired").round(3)}
    for k, eye in enumerate(block.eyes):
        for j, name in enumerate((f"x_{eye}_px", f"y_{eye}_px", f"pupil_{eye}")):
            columns[name] = _number(tokens, 1 + 3 * k + j)
    samples = split.select(**columns).fill_nan(None)
    return samples.with_columns(  # EyeLink writes pupil 0.0 when the pupil is lost
        pl.when(pl.col(f"x_{eye}_px").is_null() & (pl.col(f"pupil_{eye}") == 0)).then(None)
        .otherwise(pl.col(f"pupil_{eye}")).alias(f"pupil_{eye}") for eye in block.eyes)


def parse_events(scan: AscScan, block: Block) -> pl.DataFrame:
    """The tracker events of one block: one row per ``EFIX``/``ESACC``/``EBLINK`` line (fixations, then
    saccades, then blinks, each by start time, ties in file order): ``kind``, ``eye``, ``start_ms``,
    ``end_ms``, ``duration_ms`` (Float64, ms) and the kind's fields above."""
    tokens = pl.col("_t")
    lines = scan.block_lines(block.index).filter(pl.col("kind").is_in(list(EVENTS)))
    parts = []
    for line_kind, (kind, extra) in EVENTS.items():
        rows = lines.filter(pl.col("kind") == line_kind).select(_t=pl.col("text").str.extract_all(r"\S+"))
        parts.append(rows.select(
            kind=pl.lit(kind), eye=tokens.list.get(1, null_on_oob=True).replace_strict(EYES, default=None),
            start_ms=_number(tokens, 2), end_ms=_number(tokens, 3), duration_ms=_number(tokens, 4),
            **{name: _number(tokens, 5 + i) for i, name in enumerate(extra)}).sort("start_ms", maintain_order=True))
    return pl.concat(parts, how="diagonal_relaxed").fill_nan(None)
