"""How a OneStop report is read: its separator, decimal commas and the renames of a user's column map.

A lab's export of the OneStop reports may name columns its own way; ``columns=`` of
:func:`readgaze.io.onestop.load_onestop` maps roles (:mod:`readgaze.io.sources`) to those names. :func:`dialect`
turns that map into a :class:`Dialect`: the renames that give each mapped column the name OneStop's own files use,
checked against the file's header, applied as the report is parsed (no rewritten copy).
"""

from __future__ import annotations

from dataclasses import dataclass

from readgaze.errors import ConfigError
from readgaze.io.csv import header
from readgaze.io.sources import SOURCES


@dataclass(frozen=True)
class Dialect:
    """How one report is read: its separator, decimal commas and ``{file column: OneStop name}`` renames."""

    separator: str | None = None
    decimal_comma: bool = False
    rename: dict[str, str] | None = None

    def reader(self) -> dict:
        return {"separator": self.separator, "decimal_comma": self.decimal_comma, "rename": self.rename}


def dialect(path, table: str, columns: dict | None, separator: str | None = None,
            decimal_comma: bool = False) -> Dialect:
    """The :class:`Dialect` of a report: ``columns`` (``{role: column}``, or ``{"fixations": {...}, "ia": {...}}``)
    renames each mapped column to the name OneStop's own files use for its role (the role's first name in
    :mod:`readgaze.io.sources`, or the role itself when that is one: ``participant_id``). Roles OneStop does not
    read from a column (``trial_id``, ``text_id``) are ignored: OneStop builds those from its design columns.

    Raises
    ------
    ConfigError
        A mapped column the file does not have.
    """
    spec = (columns or {}).get(table, columns or {}) if any(k in (columns or {}) for k in ("fixations", "ia")) \
        else (columns or {})
    spec = {r: c for r, c in spec.items() if isinstance(c, str)}
    if not spec:
        return Dialect(separator, decimal_comma)
    names = header(path, separator=separator)
    defaults = SOURCES["onestop"].fixation_columns if table == "fixations" else SOURCES["onestop"].ia_columns
    rename = {}
    for role, column in spec.items():
        if role not in defaults:
            continue
        if column not in names:
            raise ConfigError(f"columns: {role!r} -> {column!r}, but the file has no column {column!r}", file=path,
                              column=column)
        rename[column] = role if role in defaults[role] else defaults[role][0]
    # a file column already under the OneStop name that another column replaces is read no more
    clash = [c for old, c in rename.items() if c in names and c != old and c not in rename]
    rename.update({c: f"{c} (replaced by the column map)" for c in clash})
    return Dialect(separator, decimal_comma, rename or None)
