"""Data Viewer's own reading measures, taken from a read interest-area report under canonical ``word_measures`` names.

Data Viewer computes first-fixation, gaze (first-run dwell), total, regression-path durations, fixation counts and
skip / regression flags per interest area; :func:`word_measures_from_ia_report` renames them (the map is
:data:`MEASURES`), casts them to the canonical dtypes, nulls the first-fixation, gaze and regression-path durations of
never-fixated words and adds the rereading duration, so that they can be compared with readgaze's own measures
(:mod:`readgaze.measures`). The report itself is read by :func:`readgaze.io.dataviewer.read_ia_report`.
Reference: SR Research (2021), *EyeLink Data Viewer User's Manual* 4.2, section "Interest Area Report".
"""

from __future__ import annotations

import polars as pl

MEASURES = {  # canonical word_measures column <- Data Viewer IA report column
    "first_fixation_duration_ms": "IA_FIRST_FIXATION_DURATION",
    "gaze_duration_ms": "IA_FIRST_RUN_DWELL_TIME",
    "total_fixation_duration_ms": "IA_DWELL_TIME",
    "regression_path_duration_ms": "IA_REGRESSION_PATH_DURATION",
    "fixation_count": "IA_FIXATION_COUNT",
    "skipped": "IA_SKIP",
    "regression_in": "IA_REGRESSION_IN",
    "regression_out": "IA_REGRESSION_OUT",
    "first_fixation_progressive": "IA_FIRST_FIX_PROGRESSIVE",
}
FIRST_FIXATION_MEASURES = ("first_fixation_duration_ms", "gaze_duration_ms", "regression_path_duration_ms")


def word_measures_from_ia_report(ia: pl.LazyFrame) -> pl.LazyFrame:
    """Data Viewer's own reading measures from a read IA report, under canonical ``word_measures`` names.

    Durations are Float64 ms, ``fixation_count`` Int32, flags Boolean with null kept (a flag that
    Data Viewer writes as ``.`` stays null: three states). First-fixation, gaze and regression-path
    durations are null for never-fixated words (``IA_FIXATION_COUNT == 0``) even where an export wrote
    0 (the OneStop sample does). ``rereading_duration_ms`` = total - gaze duration. Measures the report
    lacks come out null. ``word_index`` = ``ia_index`` (one row per interest area).
    """
    have = ia.collect_schema().names()

    def col(name: str, dtype) -> pl.Expr:
        src = MEASURES[name]
        return (pl.col(src) if src in have else pl.lit(None)).cast(dtype).alias(name)

    flags = ("skipped", "regression_in", "regression_out", "first_fixation_progressive")
    exprs = [col(n, pl.Int32 if n == "fixation_count" else pl.Boolean if n in flags else pl.Float64)
             for n in MEASURES]
    fixated = pl.col("fixation_count") > 0
    return (ia.select("trial_id", pl.col("ia_index").alias("word_index"), "word", *exprs)
            .with_columns([pl.when(fixated).then(pl.col(n)).alias(n) for n in FIRST_FIXATION_MEASURES])
            .with_columns((pl.col("total_fixation_duration_ms") - pl.col("gaze_duration_ms").fill_null(0))
                          .alias("rereading_duration_ms")))
