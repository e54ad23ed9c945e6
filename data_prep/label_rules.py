"""Binarising rules: a Boolean label declared from a numeric column of a labels table (``--binarise``).

A rule reads ``LABEL = COLUMN OP NUMBER`` (``is_correct=acc_level>=2``: SB-SAT's comprehension score 0-3 per reader
and book, 2 or 3 of 3 questions right); only ``is_correct`` is made so (``reading_goal`` is a category, recoded in the
table). :func:`parse_rules` reads the specs and :func:`apply_rules` adds each rule's label column to the table before
:func:`readgaze.data_prep.labels.attach_labels` joins it, with one message per rule counting the rows True, False and
without a value; a missing column, or a value that is not a number, is a :class:`ConfigError` naming the table and
the column.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import polars as pl

from readgaze.errors import ConfigError

_RULE = re.compile(r"^\s*(\w+)\s*=\s*(\w+)\s*(>=|<=|==|!=|>|<)\s*(-?[\d.]+(?:e-?\d+)?)\s*$")
_OPS = {">=": "ge", "<=": "le", "==": "eq", "!=": "ne", ">": "gt", "<": "lt"}


@dataclass(frozen=True)
class Rule:
    """``label = column OP threshold``: a Boolean label from a numeric column, as declared."""

    label: str
    column: str
    op: str
    threshold: float

    def __str__(self) -> str:
        return f"{self.label} = {self.column} {self.op} {self.threshold:g}"


def parse_rules(specs: list[str] | None) -> list[Rule]:
    """``["is_correct=acc_level>=2"]`` -> rules. Only ``is_correct`` (a Boolean label) can be made so.

    Raises :class:`ConfigError` naming the spec and the expected form."""
    rules = []
    for spec in specs or []:
        match = _RULE.match(spec)
        if match is None:
            raise ConfigError(f"--binarise {spec!r}: expected LABEL=COLUMN OP NUMBER with OP one of >=, >, <=, <, ==, "
                              f"!= (e.g. is_correct=acc_level>=2)")
        label, column, op, threshold = match.groups()
        if label != "is_correct":
            raise ConfigError(f"--binarise {spec!r}: only is_correct is made from a number (reading_goal is a "
                              f"category: recode it in the table)")
        rules.append(Rule(label, column, op, float(threshold)))
    return rules


def apply_rules(table: pl.DataFrame, rules: list[Rule], table_file: str) -> tuple[pl.DataFrame, list[str]]:
    """The table with each rule's label column; one message per rule (its counts).

    Raises :class:`ConfigError` when the column is missing or holds a value that is not a number."""
    messages = []
    for rule in rules:
        if rule.column not in table.columns:
            raise ConfigError(f"--binarise {rule}: the table has no column {rule.column!r}; it has {table.columns}",
                              file=table_file, column=rule.column)
        number = pl.col(rule.column).cast(pl.String).str.strip_chars().cast(pl.Float64, strict=False)
        bad = table.filter(number.is_null() & pl.col(rule.column).is_not_null() &
                           (pl.col(rule.column).cast(pl.String).str.strip_chars() != ""))
        if bad.height:
            raise ConfigError(f"--binarise {rule}: {bad.height} value(s) of {rule.column} are not numbers, e.g. "
                              f"{bad[rule.column].cast(pl.String).head(3).to_list()}", file=table_file,
                              column=rule.column)
        table = table.with_columns(getattr(number, _OPS[rule.op])(rule.threshold).alias(rule.label))
        counts = table[rule.label].value_counts()
        count = {value: n for value, n in counts.iter_rows()}
        messages.append(f"labels: {rule} (declared with --binarise): {count.get(True, 0):,} rows True, "
                        f"{count.get(False, 0):,} False, {count.get(None, 0):,} without a value")
    return table, messages
