"""Numeric columns of a scanned delimited file, checked and cast: every value a number, else an error naming it.

Whole-file dtype inference (:func:`readgaze.io.csv.scan_csv`) leaves a column as text when one cell is not a
number (a damaged cell, a decimal comma); :func:`require_numeric` names that cell's row and value and, on request,
checks every value against the column's contract (finite, a least value, a largest magnitude, no EyeLink
missing-value code -32768, whole numbers for an integer dtype) before casting. Used by the readers of reports,
sample files and layouts, as :func:`readgaze.io.csv.require_numeric`.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import polars as pl

from readgaze.errors import Option, ParseError
from readgaze.io.dtypes import MISSING_CODE
from readgaze.io.faults import first_row_where


def require_numeric(lf: pl.LazyFrame, path: str | Path, columns: Iterable[str],
                    dtype: pl.DataType = pl.Float64, *, finite: bool = False, minimum: float | None = None,
                    largest: float | None = None, coded: bool = False, what: str = "a number") -> pl.LazyFrame:
    """Check that the named columns of a raw scan hold numbers and cast them to ``dtype``.

    A column that whole-file inference left as String is either entirely null (cast silently) or holds
    a non-number, which is reported with its row and value. With ``finite`` (no NaN or infinity), ``minimum``
    (no smaller value), ``largest`` (no larger absolute value), ``coded`` (no -32768, EyeLink's missing-value
    code) or an integer ``dtype`` (whole, finite numbers only), every value is checked: one pass over the columns,
    and one more to name the first offending row. Nulls pass.

    Raises
    ------
    ParseError
        Naming the file, the first offending row, the column, the value found and ``what`` was expected.
    """
    have = lf.collect_schema()
    integer = dtype.is_integer()
    casts, checks = [], []
    for c in columns:
        if c not in have:
            continue
        if have[c] == pl.String:
            bad = pl.col(c).is_not_null() & pl.col(c).str.strip_chars().cast(pl.Float64, strict=False).is_null()
            row, value = first_row_where(lf, bad, c, path=path)
            if row:
                comma = (Option("decimal_comma=True", "--decimal-comma", "numbers written 390,6"),) if "," in str(
                    value) else ()
                raise ParseError(f"got {value!r}, expected {what}", file=path, row=row, column=c, options=comma)
            number = pl.col(c).str.strip_chars().cast(pl.Float64, strict=False)
        elif have[c].is_numeric():
            number = pl.col(c).cast(pl.Float64)
        else:  # Boolean, ...: not a number
            row, value = first_row_where(lf, pl.col(c).is_not_null(), c, path=path)
            if row:
                raise ParseError(f"got {value!r}, expected {what}", file=path, row=row, column=c)
            number = pl.col(c).cast(pl.Float64, strict=False)
        odd = pl.lit(False)
        if finite or integer:
            odd = odd | ~number.is_finite()
        if minimum is not None:
            odd = odd | (number < minimum)
        if largest is not None:
            odd = odd | (number.abs() > largest)
        if coded:
            odd = odd | (number == MISSING_CODE)
        if integer:
            odd = odd | (number != number.round()) | (number.abs() >= 2.0 ** 53)
        if finite or integer or coded or minimum is not None or largest is not None:
            checks.append((c, odd.fill_null(False)))
        if have[c] == pl.String or have[c] != dtype:
            casts.append((number if dtype == pl.Float64 else number.cast(dtype, strict=False)).alias(c))
    if checks:
        found = lf.select([e.any().alias(c) for c, e in checks]).collect().row(0, named=True)
        for c, e in checks:
            if found[c]:
                row, value = first_row_where(lf, e, c, path=path)
                code = " (EyeLink's missing-value code; Data Viewer writes '.' for missing)" \
                    if _is_code(value) else ""
                raise ParseError(f"got {value!r}{code}, expected {what}", file=path, row=row, column=c)
    return lf.with_columns(casts) if casts else lf


def _is_code(value) -> bool:
    try:
        return float(str(value).strip()) == MISSING_CODE
    except ValueError:
        return False
