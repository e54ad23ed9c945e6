"""The canonical tables: column names, dtypes and units, in one place.

This module is the one definition of two contracts: the dataset folder (:data:`DATASET_TABLES`, written by
:mod:`readgaze.data_prep.dataset` and validated on read by the models' datamodule) and the prediction table
(:data:`PREDICTION_COLUMNS`, written by the models and the baselines and read by :func:`readgaze.metrics.evaluate`).

Conventions: snake case, units as suffixes (``_ms``, ``_px``, ``_deg``, ``_hz``,
``_zipf``, ``_bits``), 0-based ``*_index`` columns, pixel origin at the screen's top left,
interest-area boxes half-open ``[left_px, right_px) x [top_px, bottom_px)``.

Time convention: ``start_ms`` is the time of a fixation's first sample; ``duration_ms`` is
EyeLink's ``EFIX`` duration, i.e. ``end - start + one sample interval`` (the last sample is
*inclusive*), so a fixation of 50 samples at 500 Hz lasts 100 ms.  Fixation durations computed by
readgaze's own event detection follow the same rule.

Every table may carry extra (source) columns; :func:`validate` checks only the canonical ones.
"""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from readgaze.errors import SchemaError

READING_GOALS = ("ordinary", "information_seeking")


@dataclass(frozen=True)
class Column:
    """One canonical column: name, Polars dtype, unit and meaning."""

    name: str
    dtype: pl.DataType
    unit: str
    description: str
    required: bool = True
    also: tuple[pl.DataType, ...] = ()
    """Other dtypes the column may have (``prediction_prob``: Float64 for two classes, List(Float64) for more)."""

    def accepts(self, dtype: pl.DataType, exact: bool = True) -> bool:
        """Whether ``dtype`` is this column's dtype (``exact``) or of the same kind (any integer width for an
        integer column, any integer or float for a float column, String or Categorical for a string column)."""
        if dtype == self.dtype or dtype in self.also:
            return True
        if exact:
            return False
        if self.dtype.is_integer():
            return dtype.is_integer()
        if self.dtype.is_float():
            return dtype.is_numeric()
        if self.dtype == pl.String:
            return dtype == pl.String or isinstance(dtype, (pl.Categorical, pl.Enum))
        return dtype.base_type() in {t.base_type() for t in (self.dtype, *self.also)}


def _cols(*columns: Column) -> dict[str, Column]:
    return {c.name: c for c in columns}


TABLES: dict[str, dict[str, Column]] = {
    "trials": _cols(
        Column("trial_id", pl.String, "", "unique id of one reading of one text by one participant"),
        Column("participant_id", pl.String, "", "pseudonymous participant id"),
        Column("item_id", pl.String, "", "the text unit that the new-item regimes hold out (OneStop: article)"),
        Column("text_id", pl.String, "", "the exact text shown (OneStop: paragraph x difficulty level)"),
        Column("reading_goal", pl.String, "", "'ordinary' or 'information_seeking' (absent before labels are "
               "attached)", required=False),
        Column("question", pl.String, "", "the question asked after reading", required=False),
        Column("selected_answer", pl.String, "", "the answer chosen", required=False),
        Column("is_correct", pl.Boolean, "", "the answer was correct", required=False),
        Column("repeated_reading", pl.Boolean, "", "second reading of the text", required=False),
        Column("practice", pl.Boolean, "", "practice trial", required=False),
    ),
    "words": _cols(
        Column("text_id", pl.String, "", "the text this interest area belongs to"),
        Column("ia_index", pl.Int32, "", "0-based interest-area index within the text (one row per IA box)"),
        Column("word_index", pl.Int32, "",
               "0-based word index; a word split over a line break keeps one index with two IAs"),
        Column("word", pl.String, "", "the interest-area label as shown"),
        Column("line_index", pl.Int32, "", "0-based text line"),
        Column("left_px", pl.Float64, "px", "box left edge (inclusive)"),
        Column("right_px", pl.Float64, "px", "box right edge (exclusive)"),
        Column("top_px", pl.Float64, "px", "box top edge (inclusive)"),
        Column("bottom_px", pl.Float64, "px", "box bottom edge (exclusive)"),
        Column("word_length", pl.Int32, "characters", "length of the label", required=False),
        Column("frequency_zipf", pl.Float64, "zipf", "word frequency on the Zipf scale (wordfreq)", required=False),
        Column("surprisal_bits", pl.Float64, "bits", "surprisal under a causal LM", required=False),
        Column("in_critical_span", pl.Boolean, "", "inside the critical span of the trial's question", required=False),
    ),
    "fixations": _cols(
        Column("trial_id", pl.String, "", "trial the fixation belongs to"),
        Column("fixation_index", pl.Int32, "", "0-based order within the trial"),
        Column("start_ms", pl.Float64, "ms", "time of the first sample"),
        Column("duration_ms", pl.Float64, "ms", "EFIX duration: end - start + one sample interval"),
        Column("x_px", pl.Float64, "px", "mean horizontal position"),
        Column("y_px", pl.Float64, "px", "mean vertical position"),
        Column("pupil", pl.Float64, "arbitrary", "mean pupil size", required=False),
        Column("line_index", pl.Int32, "", "assigned text line; null until assigned or when off text", required=False),
        Column("word_index", pl.Int32, "", "fixated word; null until aligned or when off text", required=False),
    ),
    "word_measures": _cols(
        Column("trial_id", pl.String, "", "trial"),
        Column("word_index", pl.Int32, "", "word"),
        Column("first_fixation_duration_ms", pl.Float64, "ms", "= IA_FIRST_FIXATION_DURATION; null if not fixated"),
        Column("gaze_duration_ms", pl.Float64, "ms", "first-pass (first-run) dwell; = IA_FIRST_RUN_DWELL_TIME"),
        Column("total_fixation_duration_ms", pl.Float64, "ms", "= IA_DWELL_TIME; 0 if never fixated"),
        Column("regression_path_duration_ms", pl.Float64, "ms", "go-past time; = IA_REGRESSION_PATH_DURATION"),
        Column("fixation_count", pl.Int32, "", "= IA_FIXATION_COUNT"),
        Column("skipped", pl.Boolean, "", "not fixated in first pass; = IA_SKIP"),
        Column("regression_in", pl.Boolean, "", "= IA_REGRESSION_IN"),
        Column("regression_out", pl.Boolean, "", "= IA_REGRESSION_OUT"),
        Column("rereading_duration_ms", pl.Float64, "ms", "total minus gaze duration", required=False),
    ),
    "samples": _cols(
        Column("trial_id", pl.String, "", "trial"),
        Column("time_ms", pl.Float64, "ms", "tracker time; strictly increasing within a trial and eye"),
        Column("x_px", pl.Float64, "px", "gaze x; null when missing"),
        Column("y_px", pl.Float64, "px", "gaze y; null when missing"),
        Column("pupil", pl.Float64, "arbitrary", "pupil size; null when missing"),
        Column("eye", pl.String, "", "'left' or 'right'"),
    ),
    "predictions": _cols(
        Column("trial_id", pl.String, "", "the trial predicted (key into trials.parquet)"),
        Column("label", pl.Int64, "", "true class index (reading_goal: 1 = information seeking; comprehension: "
               "1 = correct)"),
        Column("prediction_prob", pl.Float64, "probability", "P(class 1) for two classes; the class "
               "probabilities (summing to 1) for more", also=(pl.List(pl.Float64), pl.List(pl.Float32))),
        Column("regime", pl.String, "", "new_item, new_participant or new_item_participant "
               "(readgaze.splits.regimes)"),
        Column("fold_index", pl.Int32, "", "the cross-validation fold (its validation fold)"),
        Column("split", pl.String, "", "'val', 'test' or 'predict'", required=False),
        Column("model", pl.String, "", "the model or baseline's name", required=False),
        Column("participant_id", pl.String, "", "the trial's participant", required=False),
        Column("item_id", pl.String, "", "the trial's item", required=False),
    ),
}

DATASET_TABLES = ("trials", "words", "fixations", "word_measures")
"""The tables of a dataset folder (``<table>.parquet`` each, plus ``manifest.json``), in writing order."""
PREDICTION_COLUMNS = tuple(c.name for c in TABLES["predictions"].values() if c.required)
"""The columns every prediction table has (``predictions_{val,test}.parquet``, a baseline's, an ensemble's)."""


def schema(table: str, *, required_only: bool = False) -> dict[str, pl.DataType]:
    """Return ``{column: dtype}`` of a canonical table (``'trials'``, ``'words'``, ...)."""
    if table not in TABLES:
        raise SchemaError(f"unknown table {table!r}; expected one of {sorted(TABLES)}")
    return {c.name: c.dtype for c in TABLES[table].values() if c.required or not required_only}


def validate(frame: pl.DataFrame | pl.LazyFrame, table: str, *, source: str | None = None, exact: bool = True):
    """Check a frame against a canonical table and return it unchanged.

    Checks every canonical column at once: required columns must be present, and every canonical
    column that is present must have the canonical dtype (``exact``) or one of its kind. Extra columns are allowed.

    Parameters
    ----------
    frame : polars.DataFrame or polars.LazyFrame
        The frame to check (a LazyFrame is checked through its schema, without collecting).
    table : str
        One of ``trials``, ``words``, ``fixations``, ``word_measures``, ``samples``.
    source : str, optional
        File name to put in the error message.
    exact : bool, default True
        Require the canonical dtype itself; ``False`` accepts one of its kind (any integer width for an integer
        column, any number for a float column, Categorical for a string column), as a reader that casts does.

    Returns
    -------
    The same frame.

    Raises
    ------
    SchemaError
        Listing every missing required column and every column with the wrong dtype; ``.file`` is ``source``
        and ``.column`` the first column at fault.

    Examples
    --------
    >>> import polars as pl
    >>> validate(pl.DataFrame({"trial_id": ["t1"]}), "samples")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    readgaze.errors.SchemaError: samples table: column time_ms missing (expected Float64); ...
    """
    if table not in TABLES:
        raise SchemaError(f"unknown table {table!r}; expected one of {sorted(TABLES)}")
    have = frame.collect_schema() if isinstance(frame, pl.LazyFrame) else frame.schema
    problems = []  # (column, what is wrong)
    for col in TABLES[table].values():
        if col.name not in have:
            if col.required:
                problems.append((col.name, f"missing (expected {col.dtype})"))
        elif not col.accepts(have[col.name], exact):
            expected = " or ".join(str(t) for t in (col.dtype, *col.also))
            problems.append((col.name, f"got {have[col.name]}, expected {expected}"))
    if len(problems) == 1:
        raise SchemaError(f"{table} table: {problems[0][1]}", file=source, column=problems[0][0])
    if problems:
        raise SchemaError(f"{table} table: " + "; ".join(f"column {c} {what}" for c, what in problems), file=source)
    return frame


def cast(frame, table: str):
    """Cast the canonical columns a frame has to their canonical dtypes (others untouched)."""
    have = frame.collect_schema() if isinstance(frame, pl.LazyFrame) else frame.schema
    target = schema(table)
    return frame.with_columns([pl.col(n).cast(t) for n, t in target.items() if n in have and have[n] != t])
