"""SB-SAT Data Viewer reports (Ahn et al. 2020, ETRA, doi:10.1145/3379156.3391335).

95 readers, 4 SAT passages (``book_name``), 5-6 pages each; a trial is one page visit (reading page or
question page). The fixation report ``18sat_fixfinal.csv`` goes through the generic Data Viewer reader
with the ``sbsat`` column map; it has no fixation start time or index, so ``start_ms`` is null and
``fixation_index`` is the file order within the trial. The trial report ``18sat_trialfinal.csv`` maps to
canonical trials:

* ``trial_id`` = ``{RECORDING_SESSION_LABEL}_{INDEX}`` (the fixation report's ``TRIAL_INDEX`` is the
  same number, so fixations and trials join on ``trial_id``);
* ``item_id`` = ``book_name`` (the passage); ``text_id`` = ``page_name`` (e.g. ``reading-dickens-1``);
* ``reading_goal`` = ``"ordinary"`` (SB-SAT has no goal manipulation);
* ``selected_answer`` = ``answer`` as text; ``is_correct`` = ``answer == correct_answer`` on question
  pages with a key (``correct_answer != -99``), null elsewhere;
* ``repeated_reading``: the participant visited this page before (lower ``INDEX``; 304 revisits of 229
  participant-page pairs in the full report); ``practice`` = False.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

from readgaze.errors import SchemaError
from readgaze.io.csv import scan_csv
from readgaze.io.dataviewer import read_fixation_report

_TRIAL_COLUMNS = ("RECORDING_SESSION_LABEL", "INDEX", "type", "book_name", "page_name", "answer",
                  "correct_answer")
NO_ANSWER_KEY = -99
"""SB-SAT's ``correct_answer`` on pages without a question."""


def read_sbsat_fixations(path: str | Path, **kwargs) -> pl.LazyFrame:
    """Read an SB-SAT fixation report (``18sat_fixfinal.csv``) as canonical ``fixations``.

    Keyword arguments go to :func:`readgaze.io.read_fixation_report`. ``word_index`` is
    ``CURRENT_FIX_INTEREST_AREA_ID - 1`` (Data Viewer's 1-based ids); empty id = off-word = null.
    """
    kwargs.setdefault("source", "sbsat")
    return read_fixation_report(path, **kwargs)


def read_sbsat_trials(path: str | Path) -> pl.LazyFrame:
    """Read the SB-SAT trial report (``18sat_trialfinal.csv``) as canonical ``trials``.

    Returns
    -------
    polars.LazyFrame
        ``trial_id``, ``participant_id``, ``item_id``, ``text_id``, ``reading_goal``, ``question`` (null:
        the report has no question text), ``selected_answer`` (String), ``is_correct`` (Boolean, null on
        reading pages), ``repeated_reading``, ``practice`` (Boolean), then every source column.

    Raises
    ------
    SchemaError
        A required SB-SAT column is missing (all are listed).
    """
    raw = scan_csv(path)
    missing = [c for c in _TRIAL_COLUMNS if c not in raw.collect_schema().names()]
    if missing:
        raise SchemaError(f"SB-SAT trial report: missing columns {missing}", file=path)
    keyed = (pl.col("type") == "question") & (pl.col("correct_answer") != NO_ANSWER_KEY)
    visit = pl.col("INDEX").rank("ordinal").over("RECORDING_SESSION_LABEL", "page_name")
    return raw.select(
        pl.concat_str([pl.col("RECORDING_SESSION_LABEL"), pl.col("INDEX")], separator="_").alias("trial_id"),
        pl.col("RECORDING_SESSION_LABEL").alias("participant_id"),
        pl.col("book_name").cast(pl.String).alias("item_id"),
        pl.col("page_name").cast(pl.String).alias("text_id"),
        pl.lit("ordinary").alias("reading_goal"),
        pl.lit(None, pl.String).alias("question"),
        pl.col("answer").cast(pl.String).alias("selected_answer"),
        pl.when(keyed).then(pl.col("answer") == pl.col("correct_answer")).alias("is_correct"),
        (visit > 1).alias("repeated_reading"),
        pl.lit(False).alias("practice"),
        pl.all(),
    )
