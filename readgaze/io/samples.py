"""Gaze-sample CSVs (one row per tracker sample) to the canonical ``samples`` table.

Formats seen in the field: the pymovements toy dataset (tab separated, CRLF, ``-32768.00`` = missing), SB-SAT
(``time, x_left, y_left, pupil_left``), PoTeC (``time, x, y, pupil_diameter``), EMTeC (2 kHz
with every integer timestamp written twice), files whose first hundreds of rows have empty
coordinates and decimal-comma exports (every row of the numeric columns is checked, so a
decimal comma on row 20,000 is an error naming that row, not a parser failure). Column names, the separator, the missing
value and the screen geometry are explicit parameters; nothing is guessed from the file name.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import polars as pl

from readgaze.errors import ConfigError, Option, ParseError
from readgaze.io.csv import decimal_comma_options

MISSING_GAZE = -32768.0
"""The coordinate EyeLink writes for "no gaze" (also pymovements' toy dataset's): :func:`read_gaze_csv`'s default
``missing_value``."""
TIME_UNITS = {"ms": 1.0, "s": 1000.0, "us": 0.001}
"""Milliseconds per unit of a sample file's time column."""
CHECK_ROWS = 10_000  # rows polars reads to infer the dtypes of the other (non-numeric) columns


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


def _sniff_separator(path: Path) -> str:
    with path.open("rb") as handle:
        first = handle.readline().decode("utf-8", errors="replace")
    counts = {sep: first.count(sep) for sep in ("\t", ";", ",")}
    best = max(counts, key=counts.get)
    if counts[best] == 0:
        raise ParseError("cannot tell the separator from the header row", file=path, row=1,
                         options=(Option("separator=';'", "--separator ';'", "or tab, ','"),))
    return best


def _check_numbers(path: Path, separator: str, columns: dict[str, str], decimal_comma: bool) -> None:
    """Check every row of the numeric columns (one streaming pass over the file read as text) and fail
    with the file, row and column of the first value that is not a number."""
    text = pl.scan_csv(path, separator=separator, infer_schema=False, quote_char='"', null_values=[""])
    have = text.collect_schema().names()
    missing = [f"{role} column {name!r}" for role, name in columns.items() if name not in have]
    if missing:
        raise ParseError(f"missing {', '.join(missing)}; the header has {have}", file=path, row=1)

    def bad(name: str) -> pl.Expr:
        value = pl.col(name).str.strip_chars()
        if decimal_comma:
            value = value.str.replace(",", ".", literal=True)
        return value.is_not_null() & value.cast(pl.Float64, strict=False).is_null()

    names = list(dict.fromkeys(columns.values()))
    found = text.select([bad(c).any().alias(c) for c in names]).collect(engine="streaming").row(0, named=True)
    for name in (c for c in names if found[c]):
        hit = text.with_row_index("_r", offset=2).filter(bad(name)).select("_r", name).head(1).collect()
        value = hit[name][0]
        sep = ";" if separator == "," else separator
        comma = "," in value
        raise ParseError(f"{value!r} is not a number" + (" (decimal comma?)" if comma else ""), file=path,
                         row=int(hit["_r"][0]), column=name, options=decimal_comma_options(sep) if comma else ())


def read_gaze_csv(path: str | Path, *, separator: str | None = None, missing_value: float | None = MISSING_GAZE,
                  time_column: str = "timestamp", x_column: str = "x", y_column: str = "y",
                  pupil_column: str | None = None, trial_column: str | None = None, trial_id: str | None = None,
                  eye: str | None = None, screen: ScreenGeometry | None = None,
                  sampling_rate_hz: float | None = None, decimal_comma: bool = False,
                  time_unit: str = "ms") -> pl.LazyFrame:
    """Scan a gaze-sample CSV into canonical samples (lazily).

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

    Returns
    -------
    polars.LazyFrame
        ``trial_id`` (String), ``time_ms``, ``x_px``, ``y_px``, ``pupil`` (Float64, null when
        missing), ``eye`` (String), plus the file's other columns unchanged.

    Raises
    ------
    ParseError
        A named column is absent, or a value in it is not a number (file, row and column named;
        a decimal comma gets a hint).
    ConfigError
        An unknown ``eye`` or ``time_unit``.
    """
    path = Path(path)
    if time_unit not in TIME_UNITS:
        raise ConfigError(f"time_unit: got {time_unit!r}, expected one of {list(TIME_UNITS)}")
    if eye not in (None, "left", "right"):
        raise ConfigError(f"eye: got {eye!r}, expected 'left', 'right' or None")
    separator = separator or _sniff_separator(path)
    numeric = {"time": time_column, "x": x_column, "y": y_column}
    if pupil_column:
        numeric["pupil"] = pupil_column
    _check_numbers(path, separator, numeric, decimal_comma)
    frame = pl.scan_csv(path, separator=separator, schema_overrides={c: pl.Float64 for c in numeric.values()},
                        null_values=[""], decimal_comma=decimal_comma, infer_schema_length=CHECK_ROWS)
    trial = (pl.col(trial_column).cast(pl.String) if trial_column else pl.lit(trial_id or path.stem, pl.String))
    coordinate = (lambda c: pl.when(pl.col(c) == missing_value).then(None).otherwise(pl.col(c))) \
        if missing_value is not None else pl.col
    shift_x = screen.width_px / 2 if screen is not None and screen.origin == "center" else 0.0
    shift_y = screen.height_px / 2 if screen is not None and screen.origin == "center" else 0.0
    out = frame.with_columns(
        trial_id=trial, time_ms=pl.col(time_column) * TIME_UNITS[time_unit],
        x_px=coordinate(x_column) + shift_x, y_px=coordinate(y_column) + shift_y,
        pupil=pl.col(pupil_column) if pupil_column else pl.lit(None, pl.Float64),
        eye=pl.lit(eye, pl.String),
    )
    if sampling_rate_hz and sampling_rate_hz > 1000:
        new_time = (pl.col("time_ms") != pl.col("time_ms").shift(1)).fill_null(True)
        out = out.with_columns(_run=new_time.cum_sum().over("trial_id"))
        repeat = pl.int_range(pl.len()).over("trial_id", "_run")
        out = out.with_columns(time_ms=pl.col("time_ms") + repeat * (1000.0 / sampling_rate_hz)).drop("_run")
    first = ["trial_id", "time_ms", "x_px", "y_px", "pupil", "eye"]
    drop = {c for c in (time_column, x_column, y_column, pupil_column) if c and c not in first}
    return out.select(first + [c for c in frame.collect_schema().names() if c not in first and c not in drop])
