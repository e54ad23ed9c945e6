"""Counts of rows dropped or changed, per step and reason ("nothing is lost silently").

Every step that drops or changes rows records how many, and why, in a :class:`QCLog`.
``readgaze prep`` writes the log into ``manifest.json``; ``readgaze inspect`` prints it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import polars as pl


@dataclass
class QCLog:
    """An append-only list of ``(step, table, reason, action, count)`` records.

    ``action`` is ``"dropped"``, ``"changed"``, ``"flagged"`` or ``"warning"``.
    Counts of zero are kept when a caller records them explicitly, so a report can show that
    a check ran and found nothing.
    """

    records: list[dict] = field(default_factory=list)

    def add(self, step: str, table: str, reason: str, count: int, action: str = "dropped",
            detail: str | None = None) -> None:
        self.records.append({"step": step, "table": table, "reason": reason, "action": action,
                             "count": int(count), "detail": detail})

    def extend(self, other: QCLog) -> None:
        self.records.extend(other.records)

    def total(self, *, table: str | None = None, action: str | None = "dropped",
              reason: str | None = None) -> int:
        return sum(r["count"] for r in self.records
                   if (table is None or r["table"] == table) and (action is None or r["action"] == action)
                   and (reason is None or r["reason"] == reason))

    def to_frame(self) -> pl.DataFrame:
        schema = {"step": pl.String, "table": pl.String, "reason": pl.String, "action": pl.String,
                  "count": pl.Int64, "detail": pl.String}
        return pl.DataFrame(self.records, schema=schema)

    def to_json(self) -> list[dict]:
        return list(self.records)
