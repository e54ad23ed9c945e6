"""``readgaze prep dataviewer --ias DIR --ias-pattern REGEX``: any lab's Data Viewer report with character-level
interest areas, its layout from the experiment's ``.ias`` files.

The report names, per fixation, the character interest area hit (:mod:`readgaze.io.charreport`); the ``.ias`` files
give each screen's characters and, when the experiment has them, its words (:mod:`readgaze.io.charlayout`). The
file-name pattern's named groups that are also report columns match each trial to its files (CopCo:
``speechid`` and ``paragraphid``)::

    readgaze prep dataviewer --fixation-report FIX_report_P01.txt --ias aois/ \\
        --ias-pattern 'part\\d+_IA_(?P<speechid>-?\\d+)_(?P<paragraphid>-?\\d+)_(?P<level>chars|words)\\.ias' --out DS

Trials are ``participant_trial`` (Data Viewer's ``RECORDING_SESSION_LABEL`` and ``TRIAL_INDEX``), each showing the
screen its keys name (``text_id`` and ``item_id``: the key values joined by ``_``; a ``--trials`` table may set
``item_id``). Positions are the centres of the fixated (or
nearest) character's box when the report has no coordinates, words come from the report's interest areas (line
assigner ``report``) and an off-IA fixation ends a run, as in Data Viewer. For CopCo's own folder, with its
selection, ids and labels, use ``readgaze prep copco``.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

from readgaze.data_prep.inputs import Loaded
from readgaze.errors import ConfigError
from readgaze.io.charlayout import char_layout, ias_index
from readgaze.io.charreport import char_positions, char_words, read_char_report
from readgaze.io.ias import read_ias_files
from readgaze.qc import QCLog

__all__ = ["load_char_level"]


def load_char_level(fixation_report: str | Path, ias: str | Path, ias_pattern: str, *, encoding: str = "utf-8"
                    ) -> Loaded:
    """Load a character-level Data Viewer report and its ``.ias`` layout as canonical tables (module docstring).

    Raises
    ------
    ConfigError
        No ``.ias`` file matches the pattern, or no named group of the pattern (besides ``level``) is a column of
        the report.
    """
    qc = QCLog()
    index = ias_index(ias, ias_pattern)
    if not index.height:
        raise ConfigError(f"no file matches --ias-pattern {ias_pattern!r}", file=ias)
    with open(fixation_report, "rb") as f:  # the header line only (the body may need read_char_report's repairs)
        first = f.readline().decode(encoding, errors="replace").removeprefix("\ufeff").rstrip("\r\n")
    columns = {c.strip().strip('"') for c in first.split("\t")}
    keys = [g for g in index.columns if g not in ("level", "path") and g in columns]
    if not keys:
        groups = [g for g in index.columns if g not in ("level", "path")]
        raise ConfigError(f"--ias-pattern's named groups {groups} name no column of the report: name them after the "
                          f"report's trial columns (e.g. (?P<speechid>...))", file=fixation_report)
    fix = read_char_report(fixation_report, encoding=encoding, keep=tuple(keys), qc=qc)
    text = pl.concat_str([pl.col(k) for k in keys], separator="_").alias("text_id")
    fix = fix.with_columns(text, pl.concat_str("participant_id", pl.col("trial").cast(pl.String), separator="_")
                           .alias("trial_id"))
    index = index.with_columns(pl.concat_str([pl.col(k) for k in keys], separator="_").alias("text_id"))
    shown = fix.select("text_id").unique().join(index, on="text_id", how="left")
    missing = shown.filter(pl.col("path").is_null())["text_id"]
    qc.add("layout", "trials", "no .ias file for the trial's screen: its fixations are off text", missing.len(),
           action="flagged", detail=", ".join(missing.head(5).to_list()) or None)
    shown = shown.filter(pl.col("path").is_not_null()).sort("path")
    twice = shown.filter(pl.len().over("text_id", "level") > 1)
    qc.add("layout", "trials", "several .ias files for one screen and level (the pattern's keys do not tell them "
           "apart): the first by name is used", twice.select(pl.col("text_id").n_unique()).item(), action="flagged",
           detail=", ".join(twice["path"].head(4).map_elements(lambda p: Path(p).name, return_dtype=pl.String))
           or None)
    shown = shown.unique(["text_id", "level"], keep="first", maintain_order=True)
    layout = read_ias_files(shown["path"].to_list()).join(
        shown.select(pl.col("path").alias("file"), "level", "text_id"), on="file", how="left")
    words, chars = char_layout(layout, by="text_id", qc=qc, source=ias)
    recorded = "x_px" in fix.columns and fix["x_px"].null_count() < fix.height
    qc.add("positions", "fixations", "CURRENT_FIX_X/Y present but missing on every row: positions from the boxes",
           fix.height if "x_px" in fix.columns and not recorded else 0, action="flagged")
    if recorded:
        fix = fix.with_columns(pl.when(pl.col("x_px").is_not_null()).then(pl.lit("recorded")).alias("position_source"))
    else:
        fix = char_positions(fix.drop("x_px", "y_px", strict=False), chars, by=["text_id"], qc=qc)
    fix = char_words(fix, chars, by=["text_id"], qc=qc).rename({"report_word_id": "report_ia_index"})
    trials = (fix.group_by("trial_id", maintain_order=True)
              .agg(pl.col("participant_id", "text_id", *keys).first(), pl.col("trial").first().cast(pl.String))
              .with_columns(pl.col("text_id").alias("item_id")))
    fix = fix.drop("text_id", "participant_id", "trial", *keys)
    return Loaded(trials=trials, words=words, fixations=fix, qc=qc,
                  sources={"fixation_report": [str(fixation_report)], "ias": shown["path"].to_list()},
                  id_bases={"ias_pattern": ias_pattern, "keys": keys}, loader="readgaze.io.charreport",
                  aliases={"RECORDING_SESSION_LABEL": "participant_id", "TRIAL_INDEX": "trial"},
                  line_assigner="report")
