"""Gaze-sample CSVs (one row per tracker sample) to the canonical ``samples`` table.

Formats seen in the field: the pymovements toy dataset (tab separated, CRLF, ``-32768.00`` = missing), SB-SAT
(``time, x_left, y_left, pupil_left``), PoTeC (``time, x, y, pupil_diameter``), EMTeC (2 kHz
with every integer timestamp written twice), files whose first hundreds of rows have empty
coordinates and decimal-comma exports (every row of the numeric columns is checked, so a
decimal comma on row 20,000 is an error naming that row, not a parser failure). Column names, the separator, the missing
value and the screen geometry are explicit parameters; nothing is guessed from the file name. Damaged files are
repaired and counted, or refused with the line named (:func:`read_gaze_csv`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import polars as pl

from readgaze.errors import ConfigError, Option, ParseError
from readgaze.io import cells
from readgaze.io.csv import decimal_comma_options, first_row_where, scan_csv
from readgaze.io.faults import check_text
from readgaze.qc import QCLog

MISSING_GAZE = -32768.0
"""The coordinate EyeLink writes for "no gaze" (also pymovements' toy dataset's): :func:`read_gaze_csv`'s default
``missing_value``."""
TIME_UNITS = {"ms": 1.0, "s": 1000.0, "us": 0.001}
"""Milliseconds per unit of a sample file's time column."""


@dataclass(frozen=True)
class ScreenGeometry:
    """The stimulus screen: resolution (px), physical size (cm), eye-to-screen distance (cm).

    ``origin`` is where the file's pixel (0, 0) lies: ``"upper left"`` (EyeLink, Data Viewer) or
    ``"center"``; readgaze's canonical pixels are upper-left. Example: the pymovements toy
    dataset is ``ScreenGeometry(1280, 1024, 38.0, 30.2, 68.0)``, about 40 px per degree.
    """

    width_px: int
    height_px: int
    width_cm: float
    height_cm: float
    distance_cm: float
    origin: str = "upper left"

    def __post_init__(self) -> None:
        if self.origin not in ("upper left", "center"):
            raise ConfigError(f"ScreenGeometry.origin: got {self.origin!r}, expected 'upper left' or 'center'")
        if min(self.width_px, self.height_px, self.width_cm, self.height_cm, self.distance_cm) <= 0:
            raise ConfigError(f"ScreenGeometry: every size must be positive, got {self}")

    @property
    def px_per_deg(self) -> float:
        """Horizontal pixels per degree of visual angle at the screen centre."""
        cm_per_deg = 2 * self.distance_cm * math.tan(math.radians(0.5))
        return cm_per_deg * self.width_px / self.width_cm


NON_FINITE = "non-finite or implausible gaze value (NaN, inf, |value| > 100,000) read as missing"
LARGEST = 100_000.0
"""Largest absolute gaze coordinate or pupil size kept (screens are below 10,000 px); a larger one is a damaged
value."""
BACKWARDS = "sample time not after the previous sample of its trial"


def _numbers(lf: pl.LazyFrame, path: Path, separator: str, columns: dict[str, str]) -> pl.LazyFrame:
    """The numeric columns of a scan (text where a value is not a number) checked, Float64: the first value that
    is not a number is an error naming its row and column (a decimal comma gets a hint)."""
    have = lf.collect_schema()
    for name in dict.fromkeys(columns.values()):
        if have[name] == pl.String:
            bad = pl.col(name).is_not_null() & pl.col(name).str.strip_chars().cast(pl.Float64, strict=False).is_null()
            row, value = first_row_where(lf, bad, name, path=path)
            if row:
                sep = ";" if separator == "," else separator
                comma = "," in str(value)
                raise ParseError(f"{value!r} is not a number" + (" (decimal comma?)" if comma else ""), file=path,
                                 row=row, column=name, options=decimal_comma_options(sep) if comma else ())
    return lf.with_columns([pl.col(c).cast(pl.Float64, strict=False) if have[c] == pl.String else
                            pl.col(c).cast(pl.Float64) for c in dict.fromkeys(columns.values())])


def read_gaze_csv(path: str | Path, *, separator: str | None = None, missing_value: float | None = MISSING_GAZE,
                  time_column: str = "timestamp", x_column: str = "x", y_column: str = "y",
                  pupil_column: str | None = None, trial_column: str | None = None, trial_id: str | None = None,
                  eye: str | None = None, screen: ScreenGeometry | None = None,
                  sampling_rate_hz: float | None = None, decimal_comma: bool = False,
                  time_unit: str = "ms", encoding: str = "utf-8", qc: QCLog | None = None) -> pl.LazyFrame:
    """Scan a gaze-sample CSV into canonical samples (lazily).

    The file goes through :mod:`readgaze.io.faults` (blank lines, a repeated header, NUL padding and stray
    byte-order marks are repaired and counted; a row cut short, one with an extra field and a NUL inside a value are
    errors naming the line) and whole-file dtype inference (:func:`readgaze.io.csv.scan_csv`). Then, per sample:

    * a time, x, y or pupil value that is not a number is an error naming its row and column;
    * an empty time, or a NaN or infinite one, is an error (a sample must have a time);
    * ``missing_value``, ``NaN``, infinity and absolute values above :data:`LARGEST` in x, y or pupil are missing
      (null); all but ``missing_value`` are counted (``non-finite or implausible gaze value``: Tobii writes NaN for
      "no gaze", a damaged value reads as infinity or a huge number);
    * a time not after the previous sample's of the same trial is counted (``sample time not after ...``; the
      detector orders samples by time).

    Parameters
    ----------
    path : str or Path
        Text file with a header row. CRLF line ends are fine.
    separator : str, optional
        Field separator; sniffed from the header row (tab, ``;`` or ``,``) when None.
    missing_value : float, optional
        Coordinate value meaning "no gaze" (pymovements toy / EyeLink: ``-32768``); such x or y
        become null. Empty fields are always null.
    time_column, x_column, y_column, pupil_column : str
        Source columns for ``time_ms`` (ms), ``x_px``, ``y_px`` (px) and ``pupil``.
        SB-SAT: ``time``, ``x_left``, ``y_left``, ``pupil_left``; PoTeC: ``time``, ``x``, ``y``,
        ``pupil_diameter``; toy dataset: the defaults.
    trial_column : str, optional
        Column holding the trial id (cast to String). Else ``trial_id``, else the file stem.
    eye : {"left", "right"}, optional
        Written to the ``eye`` column (null when unknown).
    screen : ScreenGeometry, optional
        When its origin is ``"center"``, pixels are shifted to the upper-left origin.
    sampling_rate_hz : float, optional
        Above 1000 Hz, repeated integer timestamps (EMTeC writes each 2 kHz timestamp twice) are
        spread by the sample interval: 1002.0, 1002.5, ... within each trial.
    decimal_comma : bool
        Parse ``390,6`` as 390.6 (use with ``separator=";"``).
    time_unit : {"ms", "s", "us"}
        Unit of ``time_column`` (Tobii Pro exports microseconds, some exports seconds); ``time_ms`` is in ms.
    encoding : str
        Text encoding (default UTF-8; e.g. ``"cp1252"``). A byte that is not UTF-8 under the default is an error
        naming its row.
    qc : QCLog, optional
        Receives the repairs, the non-finite values, the times out of order and the nulls per column (one pass);
        without it the repairs are warned about.

    Returns
    -------
    polars.LazyFrame
        ``trial_id`` (String), ``time_ms``, ``x_px``, ``y_px``, ``pupil`` (Float64, null when
        missing), ``eye`` (String), plus the file's other columns unchanged.

    Raises
    ------
    ParseError
        A named column is absent, a value in it is not a number (file, row and column named;
        a decimal comma gets a hint), a time is empty or not finite, or the file is damaged (above).
    ConfigError
        An unknown ``eye`` or ``time_unit``.
    """
    path = Path(path)
    if time_unit not in TIME_UNITS:
        raise ConfigError(f"time_unit: got {time_unit!r}, expected one of {list(TIME_UNITS)}")
    if eye not in (None, "left", "right"):
        raise ConfigError(f"eye: got {eye!r}, expected 'left', 'right' or None")
    text = check_text(path, separator=separator, encoding=encoding)
    if separator is None and len(text.names) == 1:
        raise ParseError("cannot tell the separator from the header row", file=path, row=1,
                         options=(Option("separator=';'", "--separator ';'", "or tab, ','"),))
    separator = text.separator
    numeric = {"time": time_column, "x": x_column, "y": y_column}
    if pupil_column:
        numeric["pupil"] = pupil_column
    named = {**numeric, **({"trial": trial_column} if trial_column else {})}
    missing = [f"{role} column {name!r}" for role, name in named.items() if name not in text.names]
    if missing:
        raise ParseError(f"missing {', '.join(missing)}; the header has {text.names}", file=path, row=1)
    coded = [x_column, y_column] if missing_value == MISSING_GAZE else []
    frame = scan_csv(path, separator=separator, decimal_comma=decimal_comma, encoding=encoding, qc=qc,
                     step="read_gaze_csv", table="samples", coded=coded)
    frame = _numbers(frame, path, separator, numeric)
    no_time = pl.col(time_column).is_null() | ~pl.col(time_column).is_finite()
    row, value = first_row_where(frame, no_time, time_column, path=path)
    if row:
        shown = "an empty cell" if value is None else repr(value)
        raise ParseError(f"got {shown}, expected a sample time (a finite number)", file=path, row=row,
                         column=time_column)
    trial = (pl.col(trial_column).cast(pl.String) if trial_column else pl.lit(trial_id or path.stem, pl.String))

    def gaze(c: str, coordinate: bool) -> pl.Expr:
        value = pl.when(pl.col(c).is_finite() & (pl.col(c).abs() <= LARGEST)).then(pl.col(c))
        return value.otherwise(None) if not coordinate or missing_value is None else \
            pl.when(pl.col(c) == missing_value).then(None).otherwise(value)

    shift_x = screen.width_px / 2 if screen is not None and screen.origin == "center" else 0.0
    shift_y = screen.height_px / 2 if screen is not None and screen.origin == "center" else 0.0
    out = frame.with_columns(
        trial_id=trial, time_ms=pl.col(time_column) * TIME_UNITS[time_unit],
        x_px=gaze(x_column, True) + shift_x, y_px=gaze(y_column, True) + shift_y,
        pupil=gaze(pupil_column, False) if pupil_column else pl.lit(None, pl.Float64),
        eye=pl.lit(eye, pl.String),
    )
    if sampling_rate_hz and sampling_rate_hz > 1000:
        new_time = (pl.col("time_ms") != pl.col("time_ms").shift(1)).fill_null(True)
        out = out.with_columns(_run=new_time.cum_sum().over("trial_id"))
        repeat = pl.int_range(pl.len()).over("trial_id", "_run")
        out = out.with_columns(time_ms=pl.col("time_ms") + repeat * (1000.0 / sampling_rate_hz)).drop("_run")
    first = ["trial_id", "time_ms", "x_px", "y_px", "pupil", "eye"]
    drop = {c for c in (time_column, x_column, y_column, pupil_column) if c and c not in first}
    out = out.select(first + [c for c in frame.collect_schema().names() if c not in first and c not in drop])
    if qc is not None:
        _count(frame, out, qc, path, [c for c in numeric.values()])
    return out


def _count(raw: pl.LazyFrame, out: pl.LazyFrame, qc: QCLog, path: Path, gaze: list[str]) -> None:
    """The non-finite gaze values read as missing, the samples without a position, the times out of order and the
    nulls per column."""
    odd = [(pl.col(c).is_not_null() & (~pl.col(c).is_finite() | (pl.col(c).abs() > LARGEST))).sum().alias(c)
           for c in gaze[1:]]
    back = (pl.col("time_ms").diff().over("trial_id") <= 0).sum().alias("__back")
    lost = (pl.col("x_px").is_null() | pl.col("y_px").is_null()).sum().alias("__lost")
    got = raw.select(odd).collect().row(0, named=True) if odd else {}
    n_back, n_lost, n = out.select(back, lost, pl.len()).collect().row(0)
    n_odd = sum(got.values())
    detail = f"{path.name}: " + ", ".join(f"{c} {n:,}" for c, n in got.items() if n) if n_odd else None
    qc.add("read_gaze_csv", "samples", NON_FINITE, n_odd, action="changed", detail=detail)
    qc.add("read_gaze_csv", "samples", "no gaze position (empty, missing value, or read as missing)", n_lost,
           action="flagged", detail=f"{path.name}: {n_lost:,} of {n:,} samples")
    qc.add("read_gaze_csv", "samples", BACKWARDS, n_back, action="flagged",
           detail=f"{path.name}: kept; the detector orders the samples by time" if n_back else None)
    cells.null_counts(raw, qc, "read_gaze_csv", "samples", path)
