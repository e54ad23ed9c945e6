"""Fixation detection for recordings without the tracker's own events, via pymovements.

readgaze does not implement a detector: it converts pixels to degrees of visual angle and
samples to velocities with pymovements' transforms, runs pymovements' I-VT or I-DT per trial,
and then applies three documented post-processing rules, in this order:

1. **Blink / track-loss handling.** Missing samples (null, NaN or infinite x or y) have no velocity, so no
   fixation spans them; the detector splits there.
2. **Merge.** Two consecutive fixations merge when the gap between them is at most
   ``merge_max_gap_ms`` (default 75 ms), their mean positions are at most
   ``merge_max_distance_deg`` apart (default 0.5°), and the gap holds no missing sample (a
   blink never merges two fixations).
3. **Minimum duration.** Fixations shorter than ``min_duration_ms`` (default 60 ms) are dropped
   and counted.

Defaults follow the Tobii I-VT fixation filter (Olsen, 2012: 30°/s velocity threshold, merge
within 75 ms and 0.5°, discard < 60 ms). I-DT uses Salvucci & Goldberg (2000) with a 1.0°
dispersion threshold and a 100 ms window (the pymovements defaults). Durations follow the
EyeLink convention of ``readgaze.schema``: last sample - first sample + one sample interval.

References: Salvucci, D. D. & Goldberg, J. H. (2000), ETRA, doi:10.1145/355017.355028.
Olsen, A. (2012), *The Tobii I-VT Fixation Filter*, Tobii Technology.
"""

from __future__ import annotations

import math

import numpy as np
import polars as pl

from readgaze.errors import ConfigError, DataError, SchemaError
from readgaze.io.samples import ScreenGeometry
from readgaze.qc import QCLog

STEP = "detect_fixations"


def _to_degrees(xy_px: np.ndarray, screen: ScreenGeometry) -> np.ndarray:
    from pymovements.transforms.numpy import pix2deg

    return pix2deg(xy_px, screen_px=(screen.width_px, screen.height_px),
                   screen_cm=(screen.width_cm, screen.height_cm), distance_cm=screen.distance_cm,
                   origin="upper left")


def _detect_trial(xy_deg: np.ndarray, rate_hz: float, method: str, min_samples: int,
                  velocity_threshold: float, dispersion_threshold: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Run pymovements on one trial; return fixation (onset, offset) sample indices and velocity norm."""
    from pymovements.events import idt, ivt
    from pymovements.transforms.numpy import pos2vel

    if len(xy_deg) < 6:  # pymovements' 'smooth' velocity needs 6 samples
        return np.zeros(0, int), np.zeros(0, int), np.full(len(xy_deg), np.nan)
    velocity = pos2vel(xy_deg, sampling_rate=rate_hz, method="smooth")
    speed = np.linalg.norm(velocity, axis=1)
    if method == "ivt":
        found = ivt(velocity, minimum_duration=max(min_samples - 1, 0), velocity_threshold=velocity_threshold)
    else:
        found = idt(xy_deg, minimum_duration=max(min_samples, 2), dispersion_threshold=dispersion_threshold)
    frame = found.frame
    return frame["onset"].to_numpy().astype(int), frame["offset"].to_numpy().astype(int), speed


def _merge(on: np.ndarray, off: np.ndarray, time: np.ndarray, xy_deg: np.ndarray, missing: np.ndarray,
           max_gap_ms: float, max_distance_deg: float) -> tuple[list[int], list[int], int]:
    """Merge consecutive fixations (indices) per the module's rule 2; return new bounds and merge count."""
    starts, ends, merged = [], [], 0
    cum_missing = np.concatenate([[0], np.cumsum(missing)])
    for a, b in zip(on, off):
        if starts:
            prev_a, prev_b = starts[-1], ends[-1]
            gap_ms = time[a] - time[prev_b]
            centre_prev = np.nanmean(xy_deg[prev_a:prev_b + 1], axis=0)
            centre = np.nanmean(xy_deg[a:b + 1], axis=0)
            no_blink = cum_missing[a] - cum_missing[prev_b + 1] == 0
            if gap_ms <= max_gap_ms and no_blink and np.hypot(*(centre - centre_prev)) <= max_distance_deg:
                ends[-1] = b
                merged += 1
                continue
        starts.append(int(a))
        ends.append(int(b))
    return starts, ends, merged


def detect_fixations(samples: pl.DataFrame, *, method: str = "ivt", screen: ScreenGeometry,
                     min_duration_ms: float = 60.0, velocity_threshold_deg_per_s: float = 30.0,
                     dispersion_threshold_deg: float = 1.0, merge_max_gap_ms: float = 75.0,
                     merge_max_distance_deg: float = 0.5,
                     sampling_rate_hz: float | None = None) -> tuple[pl.DataFrame, QCLog]:
    """Detect fixations in gaze samples with pymovements' I-VT or I-DT (see module docstring).

    Parameters
    ----------
    samples : polars.DataFrame or LazyFrame
        Canonical samples: ``trial_id``, ``time_ms``, ``x_px``, ``y_px`` (Float64, null when
        missing; upper-left origin), optional ``pupil``. Rows may come in any order.
    method : {"ivt", "idt"}
        Velocity threshold (Salvucci & Goldberg 2000; Olsen 2012 thresholds) or dispersion threshold.
    screen : ScreenGeometry
        Converts px to degrees (pymovements ``pix2deg``).
    min_duration_ms : float
        Shortest fixation kept, in readgaze's duration convention.
    velocity_threshold_deg_per_s, dispersion_threshold_deg : float
        I-VT and I-DT thresholds.
    merge_max_gap_ms, merge_max_distance_deg : float
        Merge rule; set ``merge_max_gap_ms=0`` to disable merging.
    sampling_rate_hz : float, optional
        Default: from the median time step of each trial.

    Returns
    -------
    fixations : polars.DataFrame
        Canonical fixations: ``trial_id``, ``fixation_index`` (Int32, 0-based), ``start_ms``,
        ``duration_ms``, ``x_px``, ``y_px``, ``pupil`` (mean over the fixation's samples).
    qc : QCLog
        Fixations dropped as too short, merges, and samples per class (``in fixation``,
        ``in saccade`` = valid samples at or above the velocity threshold, ``missing``,
        ``unclassified``).

    Raises
    ------
    SchemaError
        A required column is missing.
    ConfigError
        Unknown ``method`` or a non-positive threshold.
    """
    if method not in ("ivt", "idt"):
        raise ConfigError(f"method: got {method!r}, expected 'ivt' or 'idt'")
    if min(velocity_threshold_deg_per_s, dispersion_threshold_deg) <= 0:
        raise ConfigError("detection thresholds must be positive")
    frame = samples.collect() if isinstance(samples, pl.LazyFrame) else samples
    need = [c for c in ("trial_id", "time_ms", "x_px", "y_px") if c not in frame.columns]
    if need:
        raise SchemaError(f"samples table: missing column(s) {need}")
    timeless = frame.select((pl.col("time_ms").is_null() | ~pl.col("time_ms").cast(pl.Float64).is_finite()).sum()
                            + pl.col("trial_id").null_count()).item()
    if timeless:
        raise DataError(f"samples table: {timeless} sample(s) without a trial id or a finite time_ms (a sample must "
                        "have both; readgaze.io.samples.read_gaze_csv names the row)", column="time_ms")
    qc, rows, counts = QCLog(), [], {"too_short": 0, "merged": 0, "fix": 0, "sacc": 0, "missing": 0, "n": 0}
    for trial in frame.sort("trial_id", "time_ms", maintain_order=True).partition_by("trial_id", maintain_order=True):
        rows.extend(_one_trial(trial, method, screen, min_duration_ms, velocity_threshold_deg_per_s,
                               dispersion_threshold_deg, merge_max_gap_ms, merge_max_distance_deg,
                               sampling_rate_hz, counts))
    fixations = pl.DataFrame(rows, schema={"trial_id": pl.String, "start_ms": pl.Float64, "duration_ms": pl.Float64,
                                           "x_px": pl.Float64, "y_px": pl.Float64, "pupil": pl.Float64})
    fixations = fixations.with_columns(fixation_index=pl.int_range(pl.len(), dtype=pl.Int32).over("trial_id"))
    qc.add(STEP, "fixations", f"shorter than {min_duration_ms:g} ms", counts["too_short"])
    qc.add(STEP, "fixations", "merged into the previous fixation", counts["merged"], action="changed")
    unclassified = counts["n"] - counts["fix"] - counts["sacc"] - counts["missing"]
    for reason, n in (("in fixation", counts["fix"]), ("in saccade", counts["sacc"]),
                      ("missing", counts["missing"]), ("unclassified", unclassified)):
        qc.add(STEP, "samples", reason, n, action="flagged")
    order = ["trial_id", "fixation_index", "start_ms", "duration_ms", "x_px", "y_px", "pupil"]
    return fixations.select(order), qc


def _one_trial(trial, method, screen, min_ms, v_thr, d_thr, gap_ms, dist_deg, rate_hz, counts) -> list[dict]:
    time = trial["time_ms"].to_numpy()
    xy_px = trial.select("x_px", "y_px").to_numpy().astype(float)
    pupil = trial["pupil"].to_numpy().astype(float) if "pupil" in trial.columns else np.full(len(time), np.nan)
    missing = ~np.isfinite(xy_px).all(axis=1)  # null (NaN here) or infinite: no position
    xy_px[missing] = np.nan
    pupil[~np.isfinite(pupil)] = np.nan
    step = float(np.median(np.diff(time))) if len(time) > 1 else 1.0
    rate = rate_hz or 1000.0 / step
    interval = 1000.0 / rate
    xy_deg = _to_degrees(xy_px, screen)
    min_samples = max(int(math.ceil(min_ms / interval - 1e-9)), 1)
    on, off, speed = _detect_trial(xy_deg, rate, method, min_samples, v_thr, d_thr)
    starts, ends, merged = _merge(on, off, time, xy_deg, missing, gap_ms, dist_deg) if gap_ms > 0 else (
        list(on), list(off), 0)
    in_fix = np.zeros(len(time), bool)
    rows = []
    tid = trial["trial_id"][0]
    for a, b in zip(starts, ends):
        duration = time[b] - time[a] + interval
        if duration < min_ms - 1e-9:
            counts["too_short"] += 1
            continue
        in_fix[a:b + 1] = True
        rows.append({"trial_id": tid, "start_ms": float(time[a]), "duration_ms": float(duration),
                     "x_px": float(np.nanmean(xy_px[a:b + 1, 0])), "y_px": float(np.nanmean(xy_px[a:b + 1, 1])),
                     "pupil": float(np.nanmean(pupil[a:b + 1])) if np.isfinite(pupil[a:b + 1]).any() else None})
    counts["merged"] += merged
    counts["n"] += len(time)
    counts["missing"] += int(missing.sum())
    counts["fix"] += int((in_fix & ~missing).sum())
    counts["sacc"] += int((~in_fix & ~missing & (np.nan_to_num(speed, nan=-1.0) >= v_thr)).sum())
    return rows
