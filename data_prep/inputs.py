"""The inputs of ``readgaze prep``: what a file looks like (:func:`sniff`, so that a file given to the wrong mode gets a
message naming the right one), and what every mode's loader returns (:class:`Loaded`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import polars as pl

from readgaze.errors import ConfigError
from readgaze.qc import QCLog


@dataclass
class Loaded:
    """Canonical input tables plus what the manifest records about loading."""

    trials: pl.DataFrame
    words: pl.DataFrame
    fixations: pl.DataFrame
    qc: QCLog
    sources: dict[str, list[str]]
    id_bases: dict = field(default_factory=dict)
    loader: str = ""
    aliases: dict[str, str] = field(default_factory=dict)
    """``{source column: trials column}`` a labels table may use as join keys (``TRIAL_INDEX`` -> ``trial``)."""
    line_assigner: str | None = None
    """The assigner the words require (``report`` when the boxes were estimated), else None."""
    warnings: list[str] = field(default_factory=list)
    """The readers' warnings (each names its file and line), printed by ``readgaze prep``."""


# --- what a file looks like -----------------------------------------------------------------------------------

KINDS = {
    "asc": "an EyeLink .asc recording: use  readgaze prep asc FILE.asc --layout LAYOUT (its own fixations), or "
           "export its samples for  readgaze prep samples",
    "onestop_fixations": "a OneStop fixation report: use  readgaze prep onestop --fixation-report F --ia-report IA",
    "onestop_ia": "a OneStop interest-area report: use  readgaze prep onestop --fixation-report F --ia-report IA",
    "fixations": "a Data Viewer fixation report: use  readgaze prep dataviewer --fixation-report FILE",
    "ia": "a Data Viewer interest-area report: give it as --ia-report (or, in asc and samples modes, as --layout)",
    "aoi": "a word AOI table: give it as --aoi (dataviewer mode) or --layout (asc and samples modes)",
    "passages": "a passages.json layout: give it as --layout in asc or samples mode",
    "sbsat_trials": "the SB-SAT trial report: give it as --trials (labels, items and answers per trial)",
    "table": "a table that is none of the above",
}


def sniff(path) -> str:
    """One of :data:`KINDS` from the file's first bytes (never the whole file)."""
    path = Path(path)
    if not path.is_file():
        raise ConfigError("no such file", file=path)
    if path.suffix.lower() == ".json":
        return "passages"
    if path.suffix.lower() in (".parquet", ".pq"):
        return "table"
    with path.open("rb") as f:
        head = f.read(8192).decode("utf-8", errors="replace").lstrip("\ufeff")
    if path.suffix.lower() == ".asc" or head.startswith("** ") or any(
            line.split("\t")[0].split(" ")[0] in ("MSG", "SFIX", "EFIX", "START") for line in head.splitlines()[:50]):
        return "asc"
    first = head.splitlines()[0] if head else ""
    if "CURRENT_FIX_" in first:
        return "onestop_fixations" if "question_preview" in first and "article_batch" in first else "fixations"
    if "IA_ID" in first and "IA_LABEL" in first:
        return "onestop_ia" if "question_preview" in first and "article_batch" in first else "ia"
    if "start_x" in first and "end_x" in first or "top_left_x" in first:
        return "aoi"
    if "INDEX" in first and "page_name" in first and "correct_answer" in first:
        return "sbsat_trials"
    return "table"


def check_kind(path, expected: tuple[str, ...], option: str) -> None:
    """Raise a :class:`ConfigError` naming the right mode when ``path`` looks like another mode's input."""
    kind = sniff(path)
    if kind in expected or kind == "table":
        return
    raise ConfigError(f"{option} looks like {KINDS[kind]}", file=path)
