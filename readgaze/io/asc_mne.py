"""Read one repaired recording block with ``mne.io.read_raw_eyelink`` and check what it returns.

mne parses the samples and the tracker's own end-of-event lines (``EFIX``, ``ESACC``,
``EBLINK``). Its per-event positions live only in ``raw._raw_extras[0]["dfs"]`` (the public
annotations carry onset/duration only), so this module reads them there and fails with a clear
:class:`~readgaze.errors.ParseError` if a future mne moves them. Every count mne returns is
compared with the count of lines in the block; a mismatch is an error, never a silent loss.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import polars as pl

from readgaze.errors import ParseError
from readgaze.io.asc_scan import AscScan, Block

EYE_NAMES = {"L": "left", "R": "right"}
EVENT_LINES = {"fixations": "EFIX", "saccades": "ESACC", "blinks": "EBLINK"}
EVENT_KIND = {"fixations": "fixation", "saccades": "saccade", "blinks": "blink"}
#: mne column position -> readgaze column, after eye, time, end_time, duration (positions 0-3).
EXTRA_COLUMNS = {
    "fixations": {4: "x_px", 5: "y_px", 6: "pupil"},
    "saccades": {4: "start_x_px", 5: "start_y_px", 6: "end_x_px", 7: "end_y_px",
                 8: "amplitude_deg", 9: "peak_velocity_deg_per_s"},
    "blinks": {},
}


def _column(df, position: int) -> np.ndarray:
    values = df[df.columns[position]].to_numpy()
    return np.asarray(values, dtype=np.float64)


def read_block(scan: AscScan, block: Block, text_file: Path) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Run mne on one block file; return ``(samples, events)`` in tracker milliseconds.

    Returns
    -------
    samples : polars.DataFrame
        ``time_ms`` (Float64, tracker clock, sorted) and per-eye ``x_{eye}_px``, ``y_{eye}_px``,
        ``pupil_{eye}`` (Float64, null when missing) for the block's eyes.
    events : polars.DataFrame
        One row per ``EFIX``/``ESACC``/``EBLINK``: ``kind``, ``eye``, ``start_ms``, ``end_ms`` (the
        line's end field, i.e. the last sample), ``duration_ms`` (the line's duration field), and
        ``x_px``, ``y_px``, ``pupil`` (fixations) or saccade start/end/amplitude/peak velocity.

    Raises
    ------
    ParseError
        mne fails on the block, or returns a different number of samples or events than the
        block has lines.
    """
    import mne  # heavy import, only when an .asc file is read

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # pandas-3 deprecations inside mne; counts are checked below
            raw = mne.io.read_raw_eyelink(text_file, create_annotations=False, verbose="error")
        extras = raw._raw_extras[0]
        dfs, first = extras["dfs"], float(extras["first_timestamp"])
    except (ValueError, KeyError, IndexError, RuntimeError) as err:
        raise ParseError(f"mne could not read the recording block starting here: {err}",
                         file=scan.path, row=block.start_line) from err
    samples = _samples(dfs["samples"], first, block)
    events = pl.concat([_events(dfs.get(key), key, first) for key in EVENT_LINES], how="diagonal_relaxed")
    _check_counts(scan, block, samples.height, events)
    return samples, events


def _samples(df, first: float, block: Block) -> pl.DataFrame:
    data = {"time_ms": np.round(_as_float(df["time"]) * 1000.0 + first, 3)}
    for eye in block.eyes:
        for src, dst in (("xpos", f"x_{eye}_px"), ("ypos", f"y_{eye}_px"), ("pupil", f"pupil_{eye}")):
            data[dst] = _as_float(df[f"{src}_{eye}"])
    frame = pl.DataFrame(data).fill_nan(None)
    for eye in block.eyes:  # EyeLink writes pupil 0.0 when the pupil is lost
        frame = frame.with_columns(pl.when(pl.col(f"x_{eye}_px").is_null() & (pl.col(f"pupil_{eye}") == 0))
                                   .then(None).otherwise(pl.col(f"pupil_{eye}")).alias(f"pupil_{eye}"))
    return frame


def _as_float(series) -> np.ndarray:
    return np.asarray(series.to_numpy(), dtype=np.float64)


def _events(df, key: str, first: float) -> pl.DataFrame:
    if df is None or len(df) == 0:
        return pl.DataFrame(schema={"kind": pl.String, "eye": pl.String, "start_ms": pl.Float64,
                                    "end_ms": pl.Float64, "duration_ms": pl.Float64})
    data = {
        "kind": [EVENT_KIND[key]] * len(df),
        "eye": [EYE_NAMES.get(str(e), str(e)) for e in df[df.columns[0]].to_numpy()],
        "start_ms": np.round(_column(df, 1) * 1000.0 + first, 3),
        "end_ms": np.round(_column(df, 2) * 1000.0 + first, 3),
        "duration_ms": np.round(_column(df, 3) * 1000.0, 3),
    }
    for position, name in EXTRA_COLUMNS[key].items():
        if position < len(df.columns):
            data[name] = _column(df, position)
    return pl.DataFrame(data).fill_nan(None)


def _check_counts(scan: AscScan, block: Block, n_samples: int, events: pl.DataFrame) -> None:
    problems = []
    if n_samples != block.n_samples:
        problems.append(f"{n_samples} samples (the block has {block.n_samples} sample lines)")
    for key, line_kind in EVENT_LINES.items():
        got = events.filter(pl.col("kind") == EVENT_KIND[key]).height
        want = block.event_counts.get(line_kind, 0)
        if got != want:
            problems.append(f"{got} {key} (the block has {want} {line_kind} lines)")
    if problems:
        raise ParseError("mne returned " + "; ".join(problems) + " for the block starting here",
                         file=scan.path, row=block.start_line)
