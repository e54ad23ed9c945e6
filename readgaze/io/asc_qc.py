"""Flags and per-trial QC counts for samples and fixations read from an ``.asc`` file.

Policy (stated once, used by :func:`readgaze.io.asc.read_asc`):

* A sample is *missing* when x or y is null. It is missing *in a blink* when it lies inside a
  blink of the eye used (``start_ms <= time_ms < start_ms + duration_ms``), else *track loss*.
* A fixation is flagged ``truncated_start`` when its end line names a start before the block's
  ``START`` (recording began inside it; kept with the tracker's own start and duration, e.g.
  990 + 32 ms, not clipped), ``truncated_end`` when its ``SFIX`` has no ``EFIX`` (closed at the
  block end), ``in_blink`` when it overlaps a blink of the same eye, ``off_screen`` when its
  mean position lies outside ``DISPLAY_COORDS`` (or ``GAZE_COORDS``), and ``too_short`` when
  ``duration_ms < min_fixation_duration_ms``.
* Flagged fixations are kept unless their reason is in ``drop_fixations``; a dropped fixation is
  counted once, under the first of ``truncated``, ``in_blink``, ``off_screen``, ``too_short``.
"""

from __future__ import annotations

import polars as pl

from readgaze.qc import QCLog

DROP_REASONS = ("truncated", "in_blink", "off_screen", "too_short")
STEP = "read_asc"


def blink_mask(times: pl.DataFrame, blinks: pl.DataFrame, time_column: str = "time_ms") -> pl.Series:
    """Boolean per row of ``times``: inside ``[start_ms, start_ms + duration_ms)`` of any blink."""
    if blinks.height == 0 or times.height == 0:
        return pl.Series("in_blink", [False] * times.height, dtype=pl.Boolean)
    spans = blinks.select(pl.col("start_ms").alias("_b_start"),
                          (pl.col("start_ms") + pl.col("duration_ms")).alias("_b_end")).sort("_b_start")
    spans = spans.with_columns(pl.col("_b_end").cum_max())  # overlapping blinks: keep the furthest end
    joined = times.select(pl.col(time_column).alias("_t")).with_row_index("_i").sort("_t").join_asof(
        spans, left_on="_t", right_on="_b_start", strategy="backward")
    inside = (pl.col("_t") < pl.col("_b_end")).fill_null(False)
    return joined.sort("_i").select(inside.alias("in_blink")).to_series()


def flag_fixations(fixations: pl.DataFrame, blinks: pl.DataFrame, screen: tuple[float, float, float, float] | None,
                   min_fixation_duration_ms: float) -> pl.DataFrame:
    """Add ``in_blink``, ``off_screen``, ``too_short`` (Boolean) to one block's fixations (one eye)."""
    end = pl.col("start_ms") + pl.col("duration_ms")
    if blinks.height:
        pairs = fixations.select(pl.int_range(pl.len()).alias("_i"), "start_ms", _end=end).join(
            blinks.select(_bs="start_ms", _be=pl.col("start_ms") + pl.col("duration_ms")), how="cross")
        hit = pairs.filter((pl.col("_bs") < pl.col("_end")) & (pl.col("_be") > pl.col("start_ms")))["_i"]
        in_blink = pl.int_range(pl.len()).is_in(hit.implode())
    else:
        in_blink = pl.lit(False)
    if screen is None:
        off = pl.lit(False)
    else:
        left, top, right, bottom = screen
        off = ((pl.col("x_px") < left) | (pl.col("x_px") > right) | (pl.col("y_px") < top)
               | (pl.col("y_px") > bottom)).fill_null(False)
    return fixations.with_columns(in_blink=in_blink, off_screen=off,
                                  too_short=pl.col("duration_ms") < min_fixation_duration_ms)


def drop_reason(drop_fixations) -> pl.Expr:
    """The reason a fixation is dropped (first in :data:`DROP_REASONS` order), or null if kept."""
    flags = {"truncated": pl.col("truncated_start") | pl.col("truncated_end"), "in_blink": pl.col("in_blink"),
             "off_screen": pl.col("off_screen"), "too_short": pl.col("too_short")}
    expr = pl.lit(None, dtype=pl.String)
    for reason in reversed(DROP_REASONS):
        if reason in drop_fixations:
            expr = pl.when(flags[reason]).then(pl.lit(reason)).otherwise(expr)
    return expr


def count_samples(samples: pl.DataFrame) -> pl.DataFrame:
    """Per trial of a samples table: ``trial_id, n_samples, missing_samples, missing_in_blink`` (UInt32).

    Counts of several chunks of samples add up (``read_asc`` sums them chunk by chunk).
    """
    missing = pl.col("x_px").is_null() | pl.col("y_px").is_null()
    return samples.group_by("trial_id").agg(
        n_samples=pl.len(), missing_samples=missing.sum(), missing_in_blink=(missing & pl.col("in_blink")).sum())


def qc_report(trials: pl.DataFrame, sample_counts: pl.DataFrame, fixations: pl.DataFrame,
              saccades: pl.DataFrame | None = None) -> pl.DataFrame:
    """One row per trial: samples, missing samples by cause, fixations kept/dropped by reason, eye,
    and the saccades: ``saccades``, ``saccades_with_blink`` (flagged ``contains_blink``) and
    ``mean_saccade_amplitude_deg`` (Float64, over the other saccades; null when none).

    ``sample_counts`` are :func:`count_samples` of the samples (summed over chunks); ``fixations`` are
    the used eye's fixations *before* dropping, with ``drop_reason``.
    """
    s = sample_counts.select("trial_id", "n_samples", "missing_samples", "missing_in_blink")
    f = fixations.group_by("trial_id").agg(
        fixations=pl.len(),
        fixations_kept=pl.col("drop_reason").is_null().sum(),
        **{f"dropped_{r}": (pl.col("drop_reason") == r).sum() for r in DROP_REASONS},
        off_screen=pl.col("off_screen").sum(),
        truncated_start=pl.col("truncated_start").sum(),
        truncated_end=pl.col("truncated_end").sum(),
    )
    report = trials.select("trial_id", "block", "eye").join(s, on="trial_id", how="left").join(
        f, on="trial_id", how="left")
    if saccades is not None and saccades.height and "contains_blink" in saccades.columns:
        amp = pl.col("amplitude_deg") if "amplitude_deg" in saccades.columns else pl.lit(None, pl.Float64)
        sa = saccades.group_by("trial_id").agg(
            saccades=pl.len(), saccades_with_blink=pl.col("contains_blink").fill_null(False).sum(),
            mean_saccade_amplitude_deg=amp.filter(~pl.col("contains_blink").fill_null(False)).mean())
        report = report.join(sa, on="trial_id", how="left")
    else:
        report = report.with_columns(saccades=pl.lit(0), saccades_with_blink=pl.lit(0),
                                     mean_saccade_amplitude_deg=pl.lit(None, pl.Float64))
    counts = [c for c in report.columns if c not in ("trial_id", "block", "eye", "mean_saccade_amplitude_deg")]
    report = report.with_columns([pl.col(c).fill_null(0).cast(pl.Int64) for c in counts])
    return report.with_columns(
        missing_track_loss=pl.col("missing_samples") - pl.col("missing_in_blink"),
        empty=pl.col("n_samples") == 0,
    )


def log_report(report: pl.DataFrame, qc: QCLog) -> None:
    """Record the report's totals in the QC log (zeros included, to show each check ran)."""
    qc.add(STEP, "trials", "empty trial", int(report["empty"].sum()), action="flagged")
    qc.add(STEP, "samples", "missing (blink)", int(report["missing_in_blink"].sum()), action="flagged")
    qc.add(STEP, "samples", "missing (track loss)", int(report["missing_track_loss"].sum()), action="flagged")
    for reason in DROP_REASONS:
        qc.add(STEP, "fixations", reason, int(report[f"dropped_{reason}"].sum()), action="dropped")
    for edge in ("truncated_start", "truncated_end"):
        qc.add(STEP, "fixations", edge, int(report[edge].sum()), action="flagged")
