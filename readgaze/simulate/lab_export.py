"""A lab's own Data Viewer export, simulated: not OneStop's files, but what a reading study's Data Viewer writes.

:func:`write_lab_export` runs :func:`readgaze.simulate.simulate_corpus` and writes what a lab exports from its own
EyeLink study: a TAB-separated fixation report and interest-area report with Data Viewer's standard columns
(``RECORDING_SESSION_LABEL``, ``TRIAL_INDEX``, ``CURRENT_FIX_*``, ``IA_*``; interest-area ids 1-based in both, as
Data Viewer writes them, ``.`` for missing values) and one lab variable, ``passage`` (the text shown), but none of
OneStop's design columns (no goal, question or answer); and, separately, the lab's labels table ``labels.csv``
(``subject``, ``trial_no``, ``passage_id``, ``reading_goal``, ``question``, ``is_correct``). With
``renamed=True`` the fixation report's columns carry a lab's own names instead (``Subject``, ``Trial``, ``FixNr``,
``FixStart``, ``FixDur``, ``PosX``, ``PosY``, ``IA_Nr``, ``IA_Word``), so reading it needs a column map.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

from readgaze.simulate.corpus import simulate_corpus
from readgaze.simulate.reports import _fixation_report, _hits, _ia_report, _trial_columns

RENAMED = {"RECORDING_SESSION_LABEL": "Subject", "TRIAL_INDEX": "Trial", "CURRENT_FIX_INDEX": "FixNr",
           "CURRENT_FIX_START": "FixStart", "CURRENT_FIX_DURATION": "FixDur", "CURRENT_FIX_X": "PosX",
           "CURRENT_FIX_Y": "PosY", "CURRENT_FIX_INTEREST_AREA_ID": "IA_Nr",
           "CURRENT_FIX_INTEREST_AREA_LABEL": "IA_Word"}
"""Standard Data Viewer name -> the lab's name, with ``renamed=True``."""

_FIXATION_COLUMNS = ("RECORDING_SESSION_LABEL", "TRIAL_INDEX", "CURRENT_FIX_INDEX", "CURRENT_FIX_START",
                     "CURRENT_FIX_DURATION", "CURRENT_FIX_X", "CURRENT_FIX_Y", "CURRENT_FIX_INTEREST_AREA_ID",
                     "CURRENT_FIX_INTEREST_AREA_LABEL", "NEXT_SAC_DIRECTION", "passage")
_IA_COLUMNS = ("RECORDING_SESSION_LABEL", "TRIAL_INDEX", "IA_ID", "IA_LABEL", "IA_LEFT", "IA_RIGHT", "IA_TOP",
               "IA_BOTTOM", "IA_DWELL_TIME", "IA_FIRST_FIXATION_DURATION", "IA_FIRST_RUN_DWELL_TIME",
               "IA_FIXATION_COUNT", "IA_SKIP", "passage")


def write_lab_export(out_dir: str | Path, *, n_participants: int = 12, n_items: int = 6, paragraphs_per_item: int = 1,
                     seed: int = 0, renamed: bool = False, participants: range | None = None,
                     labels: bool = True) -> dict[str, Path]:
    """Simulate a study and write ``fixations.tsv``, ``ia.tsv`` and ``labels.csv`` into ``out_dir``.

    Participants ``s01``, ``s02``, ...; trials numbered 1, 2, ... per participant (``TRIAL_INDEX``); the labels table
    keys them as ``subject`` + ``trial_no``. Half the participants read for information seeking (constant per
    participant, as in OneStop), half ordinarily. Returns ``{"fixations", "ia", "labels"}`` paths.

    ``participants`` (0-based positions, e.g. ``range(30, 34)``) writes only those readers: with the same ``seed``,
    ``n_items`` and ``paragraphs_per_item`` the texts are the same (they are drawn before the readers), so
    ``n_participants=34, participants=range(30, 34)`` is next month's recordings (``s31`` to ``s34``) of the study
    that ``n_participants=30`` simulates. ``labels=False`` writes ``labels.csv`` with the keys and the item only
    (``subject``, ``trial_no``, ``passage_id``; no goal, question or answer): recordings nobody has labelled.
    """
    corpus = simulate_corpus(n_participants=n_participants, n_items=n_items, paragraphs_per_item=paragraphs_per_item,
                             seed=seed)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    subjects = {p: f"s{k + 1:02d}" for k, p in enumerate(corpus.trials["participant_id"].unique(maintain_order=True))}
    numbering = (corpus.trials.select("trial_id", "participant_id", "text_id", "item_id", "trial_index")
                 .with_columns(pl.col("participant_id").replace_strict(subjects).alias("subject"),
                               (pl.col("trial_index").rank("ordinal").over("participant_id")).cast(pl.Int64)
                               .alias("trial_no")))
    if participants is not None:
        kept = [f"s{k + 1:02d}" for k in participants]
        numbering = numbering.filter(pl.col("subject").is_in(kept))
    trial_cols = _trial_columns(corpus)
    hit = _hits(corpus)
    keyed = numbering.select("trial_id", pl.col("subject").alias("RECORDING_SESSION_LABEL"),
                             pl.col("trial_no").alias("TRIAL_INDEX"), pl.col("text_id").alias("passage"))
    fix = _fixation_report_with_ids(corpus, hit, trial_cols).drop("RECORDING_SESSION_LABEL", "TRIAL_INDEX",
                                                                  strict=False)
    fix = fix.join(keyed, on="trial_id", how="inner", maintain_order="left").select(_FIXATION_COLUMNS)
    ia = _ia_report(corpus, hit, trial_cols).with_columns((pl.col("IA_ID") + 1).alias("IA_ID"))  # Data Viewer: 1-based
    ia = ia.join(trial_cols.select("participant_id", "TRIAL_INDEX", "trial_id"),
                 on=["participant_id", "TRIAL_INDEX"], maintain_order="left")
    ia = ia.drop("TRIAL_INDEX").join(keyed, on="trial_id", how="inner", maintain_order="left").select(_IA_COLUMNS)
    if renamed:
        fix = fix.rename(RENAMED)
    table = numbering.join(corpus.trials.select("trial_id", "reading_goal", "question", "is_correct"), on="trial_id")
    table = table.select("subject", "trial_no", pl.col("item_id").alias("passage_id"),
                         *(("reading_goal", "question", "is_correct") if labels else ())).sort("subject", "trial_no")
    paths = {"fixations": out / "fixations.tsv", "ia": out / "ia.tsv", "labels": out / "labels.csv"}
    fix.write_csv(paths["fixations"], separator="\t", null_value=".")
    ia.write_csv(paths["ia"], separator="\t", null_value=".")
    table.write_csv(paths["labels"])
    return paths


def _fixation_report_with_ids(corpus, hit, trial_cols) -> pl.DataFrame:
    """The simulator's fixation report with its ``trial_id`` kept (to join the lab's numbering)."""
    report = _fixation_report(corpus, hit, trial_cols)
    ids = corpus.fixations.select("trial_id")
    return report.with_columns(ids["trial_id"])
