"""Column maps: how each report source names the columns readgaze needs (the one place per source).

A map sends a *role* to the candidate source column names, first present wins. Roles that are
canonical columns (``x_px``, ``word``, ...) are renamed to the canonical name and cast to its dtype;
the other roles are read under their source names:

* ``trial``: the source's trial number within a participant (Data Viewer ``TRIAL_INDEX``);
* ``ia_id``: the interest-area id (``CURRENT_FIX_INTEREST_AREA_ID`` / ``IA_ID``), turned into the
  0-based ``ia_index`` and ``word_index`` after the id base is known;
* ``ia_label``: the fixated interest area's label in a fixation report (used to check the id base);
* ``trial_id``: a column that already is a unique trial id (then ``participant_id`` + ``trial`` are
  not combined).

Every source column not named in a map is kept unchanged. A user passes ``columns={role: source}``
to :func:`readgaze.io.read_fixation_report` / :func:`readgaze.io.read_ia_report` to override a map.

OneStop (Berzak et al. 2025, doi:10.1038/s41597-025-06272-2) has no single trial-number column that is
stable across its report files, so its trial id is built from the design columns
(:func:`onestop_trial_id`). SB-SAT (Ahn et al. 2020, doi:10.1145/3379156.3391335) names the trial
``TRIAL_INDEX`` in the fixation report and ``INDEX`` in the trial report.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import polars as pl

from readgaze.errors import ConfigError

FIXATION_ROLES = ("trial_id", "participant_id", "trial", "fixation_index", "start_ms", "duration_ms",
                  "x_px", "y_px", "pupil", "ia_id", "ia_label")
IA_ROLES = ("trial_id", "participant_id", "trial", "text_id", "ia_id", "word",
            "left_px", "right_px", "top_px", "bottom_px")

_DATAVIEWER_FIXATIONS = {
    "participant_id": ("RECORDING_SESSION_LABEL", "participant_id"),
    "trial": ("TRIAL_INDEX",),
    "fixation_index": ("CURRENT_FIX_INDEX",),
    "start_ms": ("CURRENT_FIX_START",),
    "duration_ms": ("CURRENT_FIX_DURATION",),
    "x_px": ("CURRENT_FIX_X",),
    "y_px": ("CURRENT_FIX_Y",),
    "pupil": ("CURRENT_FIX_PUPIL",),
    "ia_id": ("CURRENT_FIX_INTEREST_AREA_ID",),
    "ia_label": ("CURRENT_FIX_INTEREST_AREA_LABEL",),
}
_DATAVIEWER_IA = {
    "participant_id": ("RECORDING_SESSION_LABEL", "participant_id"),
    "trial": ("TRIAL_INDEX",),
    "ia_id": ("IA_ID",),
    "word": ("IA_LABEL",),
    "left_px": ("IA_LEFT",),
    "right_px": ("IA_RIGHT",),
    "top_px": ("IA_TOP",),
    "bottom_px": ("IA_BOTTOM",),
}


def onestop_trial_id(columns: dict[str, str]) -> pl.Expr:
    """OneStop trial id: ``{participant}_{batch}_{article}_{level}_{paragraph}_r{0|1}``.

    E.g. ``l37_1129_2_2_Adv_1_r0``. The paragraph part equals the ``text_id`` before any layout
    version suffix (EyeBench's ``unique_paragraph_id`` order: batch, article, level, paragraph).
    """
    reread = pl.col("repeated_reading_trial").cast(pl.Boolean, strict=False).cast(pl.Int8)
    return pl.concat_str([pl.col(columns["participant_id"]), onestop_paragraph_id(),
                          pl.lit("r") + reread.cast(pl.String)], separator="_")


def onestop_paragraph_id() -> pl.Expr:
    """``{article_batch}_{article_id}_{difficulty_level}_{paragraph_id}``, e.g. ``1_2_Adv_1``."""
    return pl.concat_str([pl.col("article_batch"), pl.col("article_id"), pl.col("difficulty_level"),
                          pl.col("paragraph_id")], separator="_")


@dataclass(frozen=True)
class ReportSource:
    """One report source: its column maps and conventions."""

    name: str
    fixation_columns: dict[str, tuple[str, ...]]
    ia_columns: dict[str, tuple[str, ...]]
    trial_id: Callable[[dict[str, str]], pl.Expr] | None = None
    """Builds the trial id from the resolved columns; default ``{participant_id}_{trial}``."""
    text_id: Callable[[dict[str, str]], pl.Expr] | None = None
    """Builds an IA report's text id; default the ``text_id`` role's column, else the trial id."""
    fixation_ia_id_base: int | None = 1
    """Id base of a fixation report read alone when the source fixes it (SB-SAT, OneStop: 1); None when it
    must be given or detected (a generic export may have been renumbered)."""
    required_trial_columns: tuple[str, ...] = field(default=())
    number_keys: tuple[str, ...] = field(default=())
    """Trial-id columns that hold whole numbers (any other value is an error naming its cell)."""
    boolean_keys: tuple[str, ...] = field(default=())
    """Trial-id columns that hold ``True``/``False``."""


SOURCES: dict[str, ReportSource] = {
    "dataviewer": ReportSource("dataviewer", _DATAVIEWER_FIXATIONS, _DATAVIEWER_IA, fixation_ia_id_base=None),
    "onestop": ReportSource(
        "onestop", _DATAVIEWER_FIXATIONS, _DATAVIEWER_IA, trial_id=onestop_trial_id,
        text_id=lambda columns: onestop_paragraph_id(),
        required_trial_columns=("article_batch", "article_id", "difficulty_level", "paragraph_id",
                                "repeated_reading_trial"),
        number_keys=("article_batch", "article_id", "paragraph_id"), boolean_keys=("repeated_reading_trial",)),
    "sbsat": ReportSource(
        "sbsat", _DATAVIEWER_FIXATIONS,
        {**_DATAVIEWER_IA, "text_id": ("page_name",)}),
}


def resolve(source: str, table: str, have: list[str], overrides: dict[str, str] | None,
            path) -> dict[str, str]:
    """Return ``{role: source column}`` for the columns present in a file.

    Parameters
    ----------
    source : str
        Key of :data:`SOURCES`.
    table : str
        ``'fixations'`` or ``'ia'``.
    have : list of str
        The file's columns.
    overrides : dict, optional
        ``{role: source column}`` from the caller; each named column must exist.

    Raises
    ------
    ConfigError
        Unknown source or role, or an override naming a column the file lacks.
    """
    if source not in SOURCES:
        raise ConfigError(f"unknown source {source!r}; expected one of {sorted(SOURCES)}", file=path)
    spec = SOURCES[source]
    roles, defaults = (FIXATION_ROLES, spec.fixation_columns) if table == "fixations" else (IA_ROLES, spec.ia_columns)
    out = {role: next(c for c in cands if c in have) for role, cands in defaults.items()
           if any(c in have for c in cands)}
    for role, col in (overrides or {}).items():
        if role not in roles:
            raise ConfigError(f"columns: unknown role {role!r}; expected {{role: source column}} with a role "
                              f"in {list(roles)}", file=path)
        if col not in have:
            raise ConfigError(f"columns: {role!r} -> {col!r}, but the file has no column {col!r}", file=path,
                              column=col)
        out[role] = col
    return out
