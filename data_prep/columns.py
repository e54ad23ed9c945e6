"""Column maps for ``readgaze prep``: ``--columns map.yaml`` or ``--columns role=COLUMN ...``, and ``--list-roles``.

A map sends a role (what readgaze needs) to the column of a file that holds it. ``--columns`` takes YAML files
(``{fixations: {role: column}, ia: {...}, aoi: {...}, trials: {...}}``) and ``role=COLUMN`` pairs, in any mix;
a pair may name its table (``ia.word=Label``), else it applies to every table that has the role and whose file has
the column. Roles and their Data Viewer defaults are those of :mod:`readgaze.io.sources`, plus ``text_id`` for a
fixation report read alone (the column naming the text a trial shows; SB-SAT ``page_name``).
"""

from __future__ import annotations

from pathlib import Path

from readgaze.errors import ConfigError
from readgaze.io.sources import FIXATION_ROLES, IA_ROLES, SOURCES

TABLES = ("fixations", "ia", "aoi", "trials", "samples")
TRIAL_ROLES = ("reading_goal", "question", "is_correct", "selected_answer", "item_id", "text_id")
EXTRA_FIXATION_ROLES = ("text_id",)
AOI_ROLES = ("ia_id", "word", "left_px", "right_px", "top_px", "bottom_px")
SAMPLE_ROLES = ("time_ms", "x_px", "y_px", "pupil", "trial", "participant_id")
SAMPLE_DEFAULTS = {"time_ms": "timestamp", "x_px": "x", "y_px": "y"}
"""The gaze-sample columns ``readgaze prep samples`` reads without a map (read_gaze_csv's; pymovements' toy dataset)."""
_AOI_DEFAULTS = {"ia_id": "aoi", "word": "character", "left_px": "start_x", "top_px": "start_y",
                 "right_px": "end_x", "bottom_px": "end_y"}
REQUIRED = {
    "fixations": {"duration_ms": "required", "x_px": "required", "y_px": "required",
                  "participant_id": "required unless trial_id", "trial": "required unless trial_id",
                  "trial_id": "optional (replaces participant_id + trial)",
                  "ia_id": "needed to take words from the fixation report", "ia_label": "as ia_id"},
    "ia": {"ia_id": "required", "word": "required", "left_px": "required", "right_px": "required",
           "top_px": "required", "bottom_px": "required", "participant_id": "required unless trial_id",
           "trial": "required unless trial_id", "trial_id": "optional (replaces participant_id + trial)"},
    "aoi": {r: "required" for r in AOI_ROLES},
    "trials": {"reading_goal": "for task reading_goal", "is_correct": "for task comprehension",
               "question": "for task comprehension"},
    "samples": {"time_ms": "required", "x_px": "required", "y_px": "required",
                "trial": "optional (else one trial per file)", "participant_id": "optional (else the file name)"},
}
_MEANING = {
    "trial_id": "a column that already is a unique trial id", "participant_id": "participant / recording session",
    "trial": "trial number within the participant", "fixation_index": "fixation number within the trial (1-based)",
    "start_ms": "fixation start, ms", "duration_ms": "fixation duration, ms", "x_px": "fixation x, screen px",
    "y_px": "fixation y, screen px (down)", "pupil": "pupil size", "ia_id": "interest-area id",
    "ia_label": "the fixated interest area's label", "text_id": "the text (passage/page) a trial shows",
    "word": "the interest area's word", "left_px": "box left, px", "right_px": "box right, px",
    "top_px": "box top, px", "bottom_px": "box bottom, px",
    "reading_goal": "'ordinary' or 'information_seeking'", "question": "the question asked",
    "is_correct": "answered correctly (True/False, 1/0)", "selected_answer": "the answer chosen",
    "item_id": "the item (text) for the held-out-item folds", "time_ms": "sample time, ms",
}
_SAMPLE_MEANING = {"x_px": "gaze x, screen px", "y_px": "gaze y, screen px (down)", "pupil": "pupil size",
                   "trial": "trial id within the file", "participant_id": "participant"}


def roles(table: str) -> tuple[str, ...]:
    return {"fixations": (*FIXATION_ROLES, *EXTRA_FIXATION_ROLES), "ia": IA_ROLES, "aoi": AOI_ROLES,
            "trials": TRIAL_ROLES, "samples": SAMPLE_ROLES}[table]


def default_column(table: str, role: str, source: str = "dataviewer") -> str:
    if table == "aoi":
        return _AOI_DEFAULTS[role]
    if table == "samples":
        return SAMPLE_DEFAULTS.get(role, "-")
    if table == "trials":
        return role
    spec = SOURCES[source]
    columns = spec.fixation_columns if table == "fixations" else spec.ia_columns
    if table == "fixations" and role == "text_id":
        return "page_name" if source == "sbsat" else "-"
    return " | ".join(columns.get(role, ())) or "-"


def list_roles(source: str = "dataviewer") -> str:
    """The text of ``readgaze prep --list-roles``: each role, its default column and whether it is required."""
    titles = {"fixations": "fixation report (--fixation-report)", "ia": "interest-area report (--ia-report)",
              "aoi": "word AOI table (--aoi, pymovements/PoTeC style)",
              "trials": "labels table (--trials; join keys: --trials-on)",
              "samples": "gaze-sample CSV (readgaze prep samples FILE ...)"}
    lines = [f"Roles for --columns role=COLUMN (or YAML {{fixations: {{role: COLUMN}}, ia: ..., aoi: ...}}); "
             f"defaults of source {source!r}:"]
    for table in TABLES:
        lines.append(f"\n{titles[table]}:")
        lines.append(f"  {'role':<15} {'default column':<34} {'required':<42} meaning")
        for role in roles(table):
            lines.append(f"  {role:<15} {default_column(table, role, source):<34} "
                         f"{REQUIRED[table].get(role, 'optional'):<42} "
                         f"{(_SAMPLE_MEANING if table == 'samples' else {}).get(role, _MEANING.get(role, ''))}")
    lines.append("\nA pair without a table (x_px=PosX) applies to every table whose file has the column; "
                 "ia.word=Label names one table. Every other column is kept under its own name.")
    return "\n".join(lines)


def parse_columns(values: list[str] | None) -> dict[str, dict[str, str]]:
    """``--columns`` values -> ``{table: {role: column}}`` plus ``"any"`` for pairs without a table.

    ``role=COLUMN`` pairs override a YAML file's entries, whatever their order (``from_file`` lists, per table, the
    roles only a file set, which :func:`for_table` lets a table-less pair override too); a later file overrides an
    earlier one.

    Raises
    ------
    ConfigError
        An unreadable YAML file, a value that is neither a file nor ``role=COLUMN``, or an unknown table or role
        (with the closest names).
    """
    files: dict[str, dict[str, str]] = {}  # YAML entries (a later file overrides an earlier one)
    pairs: dict[str, dict[str, str]] = {}  # role=COLUMN pairs: they override the files, in either order
    source = None
    for value in values or []:
        if "=" not in value:
            for table, mapping in _read_yaml(value).items():
                if table == "source":
                    source = mapping
                    continue
                for role in mapping:
                    _check_role(table, role, value)
                files.setdefault(table, {}).update(mapping)
            continue
        for pair in value.split(","):
            role, _, column = pair.partition("=")
            table, _, role = role.strip().rpartition(".")
            table = table or "any"
            if not column.strip():
                raise ConfigError(f"--columns {pair}: no column after '=' ('readgaze prep --list-roles')")
            _check_role(table, role, f"--columns {pair}")
            pairs.setdefault(table, {})[role] = column.strip()
    spec: dict = {t: {**files.get(t, {}), **pairs.get(t, {})} for t in (*files, *pairs)}
    filed = {t: sorted(set(m) - set(pairs.get(t, {}))) for t, m in files.items()}
    if any(filed.values()):
        spec["from_file"] = {t: r for t, r in filed.items() if r}
    if source is not None:
        spec["source"] = source
    return spec


def _check_role(table: str, role: str, where: str) -> None:
    """A :class:`ConfigError` for a role no table (or not ``table``) has, with the closest names."""
    import difflib

    if table not in (*TABLES, "any"):
        close = difflib.get_close_matches(table, TABLES, n=1)
        raise ConfigError(f"{where}: unknown table {table!r}" + (f"; did you mean {close[0]}?" if close else "")
                          + f" (expected one of {list(TABLES)})")
    known = [r for t in TABLES for r in roles(t)] if table == "any" else roles(table)
    if role not in known:
        close = difflib.get_close_matches(role, sorted(set(known)), n=3)
        raise ConfigError(f"{where}: unknown role {role!r}" + (f" of table {table}" if table != "any" else "")
                          + (f"; did you mean {', '.join(close)}?" if close else "")
                          + " ('readgaze prep --list-roles' lists them)")


def _read_yaml(path) -> dict[str, dict[str, str]]:
    import yaml

    if not Path(path).is_file():
        raise ConfigError(f"--columns {path}: neither a YAML file nor role=COLUMN (e.g. --columns x_px=PosX "
                          "y_px=PosY)")
    try:
        spec = yaml.safe_load(Path(path).read_text(encoding="utf-8")) or {}
    except (OSError, yaml.YAMLError) as e:
        raise ConfigError(f"cannot read the column map: {e}", file=path) from None
    if not isinstance(spec, dict) or not all(isinstance(v, dict) for k, v in spec.items() if k != "source"):
        raise ConfigError("expected a mapping {fixations: {role: column}, ia: {role: column}}", file=path)
    return {k: {str(r): str(c) for r, c in v.items()} for k, v in spec.items() if k != "source"} | (
        {"source": spec["source"]} if "source" in spec else {})


def for_table(spec: dict, table: str, header: list[str]) -> dict[str, str]:
    """The ``{role: column}`` map of one table: a YAML file's entries, then table-less pairs whose column the file
    has, then pairs naming the table (a pair on the command line overrides a file, in either order)."""
    own = spec.get(table, {})
    filed = set(spec.get("from_file", {}).get(table, ()))
    out = {role: column for role, column in own.items() if role in filed}
    out.update({role: column for role, column in spec.get("any", {}).items()
                if role in roles(table) and column in header})
    out.update({role: column for role, column in own.items() if role not in filed})
    return out


def unused(spec: dict, headers: dict[str, list[str]]) -> list[str]:
    """Table-less pairs no file had the column for (an error: a typo would otherwise vanish)."""
    seen = {c for h in headers.values() for c in h}
    return [f"{role}={column}" for role, column in spec.get("any", {}).items() if column not in seen]
