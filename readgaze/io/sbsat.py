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

The authors' book-wise windowed arrays (``model/dataset/bookwise/{train,val,test}``) are read by
:func:`read_sbsat_windows`: 21 consecutive reading fixations per window, each ``[x, y, pupil, duration]``
min-max scaled to [0, 1] over all reading fixations, with the reader × book labels of the window binarised
(quartiles and ratings 0/1 → 0, 2/3 → 1). In their book-wise split every reader has two books in training
and one each in validation and test, so every reader is in every split and only the books differ.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import polars as pl

from readgaze.errors import LeakageError, ParseError, SchemaError
from readgaze.io import cells
from readgaze.io.csv import read_csv, require_numeric, scan_csv
from readgaze.io.dataviewer import read_fixation_report
from readgaze.io.report_keys import check_unique
from readgaze.qc import QCLog

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


def read_sbsat_trials(path: str | Path, *, qc: QCLog | None = None) -> pl.LazyFrame:
    """Read the SB-SAT trial report (``18sat_trialfinal.csv``) as canonical ``trials``.

    The report is checked as every report is (:mod:`readgaze.io.faults`, :mod:`readgaze.io.cells`): the key cells
    (``RECORDING_SESSION_LABEL``, ``INDEX`` a whole number), one row per trial, ``answer`` and ``correct_answer``
    numbers; ``qc`` receives the repairs and the nulls per column.

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
    ParseError
        A bad key cell, or an answer that is not a number (file, row, column).
    DataError
        A trial (participant, ``INDEX``) on two rows.
    """
    raw = scan_csv(path, in_memory=True, qc=qc, step="read_sbsat_trials", table="trials")
    missing = [c for c in _TRIAL_COLUMNS if c not in raw.collect_schema().names()]
    if missing:
        raise SchemaError(f"SB-SAT trial report: missing columns {missing}", file=path)
    cells.keys(raw, path, ["RECORDING_SESSION_LABEL", "INDEX", "page_name", "book_name", "type"],
               numbers_only=["INDEX"])
    _check_pages(raw, path)
    raw = require_numeric(raw, path, ["answer", "correct_answer"], pl.Int64, what="an answer number (-99: none)")
    check_unique(raw, path, {"RECORDING_SESSION_LABEL": pl.col("RECORDING_SESSION_LABEL"),
                              "INDEX": pl.col("INDEX")}, shown=["RECORDING_SESSION_LABEL", "INDEX"], session_key=None)
    cells.null_counts(raw, qc, "read_sbsat_trials", "trials", path)
    cells.split_groups(raw, qc, "read_sbsat_trials", "trials", path, group="RECORDING_SESSION_LABEL",
                       what="rows of a participant not together in the report")
    cells.index_gaps(raw, qc, "read_sbsat_trials", "trials", path, group="RECORDING_SESSION_LABEL", index="INDEX",
                     first=None, what="trial numbers (INDEX) of a participant not consecutive")
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


PAGE_TYPES = ("reading", "question")
"""SB-SAT's page ``type`` values; a ``page_name`` is ``{type}-{book_name}-{page number}`` (all 7,298 rows of the
published report)."""


def _check_pages(raw: pl.LazyFrame, path) -> None:
    """Each row's ``type`` is a page type and its ``page_name`` is ``{type}-{book_name}-{number}``: a changed cell
    (``page_name = abc``) would otherwise make a text of its own without a word.

    Raises
    ------
    ParseError
        The first row that breaks the rule (file, row, column, value and what its other cells say it should be).
    """
    from readgaze.io.csv import first_row_where

    text = {c: pl.col(c).cast(pl.String) for c in ("type", "book_name", "page_name")}
    bad_type = ~text["type"].is_in(PAGE_TYPES).fill_null(False)
    parts = text["page_name"].str.extract_groups(r"^([a-z]+)-(.+)-(\d+)$")
    bad_page = ~((parts.struct.field("1") == text["type"]) & (parts.struct.field("2") == text["book_name"])
                 ).fill_null(False)
    found = raw.select(bad_type.any().alias("type"), bad_page.any().alias("page_name")).collect().row(0)
    if found[0]:
        row, value = first_row_where(raw, bad_type, "type", path=path)
        raise ParseError(f"got {value!r}, expected a page type ({' or '.join(PAGE_TYPES)})", file=path, row=row,
                         column="type")
    if found[1]:
        row, value = first_row_where(raw, bad_page, "page_name", path=path)
        named = raw.filter(bad_page).select(text["type"], text["book_name"]).head(1).collect().row(0)
        raise ParseError(f"got {value!r}, expected '{{type}}-{{book_name}}-{{page}}': the row's type {named[0]!r} and "
                         f"book_name {named[1]!r} say '{named[0]}-{named[1]}-<n>' (one of the three cells changed?)",
                         file=path, row=row, column="page_name")


WINDOW_FEATURES = ("x", "y", "pupil", "duration")
"""Last axis of the windowed arrays (``CURRENT_FIX_X, _Y, _PUPIL, _DURATION``, each min-max scaled to [0, 1])."""
WINDOW_FILES = {"train": ("train", "fix_train_10.npy"), "val": ("val", "fix_valid_10.npy"),
                "test": ("test", "fix_test_10.npy")}
"""Split → (folder, array file); the label file is ``label_train_10.csv`` in all three folders, as upstream."""
WINDOW_LABELS = ("acc_level", "subj_acc_level", "confidence", "difficulty", "familiarity", "recognition",
                 "interest", "pressured", "sleepiness", "sleephours", "sex", "native")
"""Binarised label columns the label files may carry (``sex`` is absent from some copies)."""


@dataclass(frozen=True)
class SbsatWindows:
    """SB-SAT book-wise windows: ``arrays[split]`` ``(n_windows, 21, 4)`` float32 and one label frame.

    ``labels`` has one row per window: ``split``, ``window_index`` (row of that split's array),
    ``label_row_index`` (0-based row of ``18sat_labels.csv``), ``participant_id`` (``subj``), ``item_id``
    (``book``) and the Int64 label columns of :data:`WINDOW_LABELS` present in the files (``label_names``).
    """

    arrays: dict[str, np.ndarray]
    labels: pl.DataFrame
    label_names: tuple[str, ...]

    def split(self, name: str) -> tuple[np.ndarray, pl.DataFrame]:
        """The array and label rows of one split (``train``, ``val`` or ``test``)."""
        return self.arrays[name], self.labels.filter(pl.col("split") == name).sort("window_index")


def read_sbsat_windows(folder: str | Path) -> SbsatWindows:
    """Read SB-SAT's book-wise windowed fixation arrays and their per-window labels.

    Parameters
    ----------
    folder : str or Path
        The ``bookwise`` folder with ``train/``, ``val/`` and ``test/`` subfolders, each holding the
        ``fix_*_10.npy`` array of :data:`WINDOW_FILES` and ``label_train_10.csv`` (first column unnamed).

    Returns
    -------
    SbsatWindows
        Arrays in the file's feature order :data:`WINDOW_FEATURES`.

    Raises
    ------
    ParseError
        A file is missing, an array is not ``(n, w, 4)`` finite numbers, or its label file has another
        number of rows.
    SchemaError
        A label file lacks ``subj``, ``book`` or every label column.
    LeakageError
        A reader × book pair appears in more than one split (the book-wise split holds books out).

    References
    ----------
    Ahn, S., Kelton, C., Balasubramanian, A., & Zelinsky, G. (2020). Towards predicting reading comprehension
    from gaze behavior. ETRA '20, doi:10.1145/3379156.3391335 (arrays and labels from the authors' repository).
    """
    root = Path(folder)
    arrays, frames, names = {}, [], None
    for split, (sub, array_file) in WINDOW_FILES.items():
        path, label_path = root / sub / array_file, root / sub / "label_train_10.csv"
        for file in (path, label_path):
            if not file.is_file():
                raise ParseError("SB-SAT windows: file not found", file=file)
        array = np.load(path, allow_pickle=False)
        if array.ndim != 3 or array.shape[2] != len(WINDOW_FEATURES) or not np.isfinite(array).all():
            raise ParseError(f"SB-SAT windows: got an array of shape {array.shape} (finite: "
                             f"{bool(np.isfinite(array).all())}), expected (n_windows, n_fixations, 4) finite "
                             f"values {WINDOW_FEATURES}", file=path)
        labels = read_csv(label_path)  # damaged lines repaired and warned about, or refused with the line named
        first = labels.columns[0]
        present = tuple(c for c in WINDOW_LABELS if c in labels.columns)
        missing = [c for c in ("subj", "book") if c not in labels.columns] + ([] if present else ["a label column"])
        if missing:
            raise SchemaError(f"SB-SAT window labels: missing {missing}", file=label_path)
        if labels.height != array.shape[0]:
            raise ParseError(f"SB-SAT windows: {labels.height} label rows for {array.shape[0]} windows",
                             file=label_path)
        names = present if names is None else tuple(c for c in names if c in present)
        arrays[split] = array.astype(np.float32)
        checked = require_numeric(labels.lazy(), label_path, [first, *present], pl.Int64,
                                  what="a whole number (a row index or a binarised label)").collect()
        frames.append(checked.select(
            pl.lit(split).alias("split"), pl.int_range(pl.len(), dtype=pl.Int64).alias("window_index"),
            pl.col(first).cast(pl.Int64).alias("label_row_index"),
            pl.col("subj").cast(pl.String).alias("participant_id"),
            pl.col("book").cast(pl.String).alias("item_id"), *[pl.col(c).cast(pl.Int64) for c in present]))
    labels = pl.concat([f.select("split", "window_index", "label_row_index", "participant_id", "item_id", *names)
                        for f in frames])
    shared = (labels.select("split", "participant_id", "item_id").unique()
              .group_by("participant_id", "item_id").agg(pl.col("split").sort()).filter(pl.col("split").list.len() > 1))
    if shared.height:
        row = shared.row(0, named=True)
        raise LeakageError(f"SB-SAT windows: {shared.height} reader x book pair(s) in more than one split, e.g. "
                           f"{row['participant_id']} x {row['item_id']} in {row['split']}", file=root)
    return SbsatWindows(arrays, labels, names)


def reader_constant_labels(labels: pl.DataFrame, names: tuple[str, ...]) -> dict[str, bool]:
    """For each label, whether every reader has one value across all their windows (all splits).

    Such a label (``subj_acc_level``, ``native``, the per-reader self-reports) is scored in a split where every
    reader is also in training by recognising the reader, not by reading the text.
    """
    counts = labels.group_by("participant_id").agg(pl.col(list(names)).n_unique())
    return {name: bool((counts[name] == 1).all()) for name in names}
