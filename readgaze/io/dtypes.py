"""Column dtypes of a delimited file, decided on the whole file, and the flags of columns a few values turned.

:func:`infer_schema` tests every column of a file read as text: all ``true``/``false`` -> Boolean, all integers ->
Int64, all numbers -> Float64, else String; the first :data:`HEAD_ROWS` rows first, then the whole file in one
streaming pass over only the columns and tests the head left open. A damaged cell turns a column of numbers into text
or a column of whole numbers into floats: the first is an error naming the value, its row and column
(:func:`stray_number_error`: never a column of numbers silently read as text), the second is flagged with the first
such value and its row (:data:`ODD_WHOLE`), and so are EyeLink's missing-value code (:data:`CODED`) and NaN or
infinite values (:data:`NON_FINITE`) in numeric columns. The flags are kept on the file's
:class:`readgaze.io.faults.TextFile` and reported by the reader (:func:`report_notes`: in its QC log, else warned).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path

import polars as pl

from readgaze.errors import Option, ParseError
from readgaze.io.faults import Repair, TextFile, check_text, first_row_where, text_file
from readgaze.io.ragged import EXTRA, check_rows, long_rows, scan_rows
from readgaze.qc import QCLog

NULL_VALUES = (".",)
"""Data Viewer's missing-value marker; empty fields are null anyway."""
HEAD_ROWS = 10_000
"""Rows :func:`infer_schema` tests before the whole-file pass (a speed-up only; never decides alone)."""


STRAY_SHARE = 0.1
"""A column whose non-null values are numbers (or booleans) but for at most this share (and at least 5 of them
are) is flagged: its other values are read as text, and the QC log names the first (a damaged cell?)."""


DECIMAL_COMMA = r"^\s*[-+]?\d+,\d+\s*$"


NUMBER_OR_DECIMAL_COMMA = r"^\s*[-+]?(?:\d+(?:[.,]\d*)?|[.,]\d+)(?:[eE][-+]?\d+)?\s*$"
"""A number with a decimal point or a decimal comma: a column of these with one comma is a locale fault."""


STRAY = "values that are not numbers in a numeric column (read as text)"


STRAY_BOOL = "values that are not True/False in a boolean column (read as text)"


ODD_WHOLE = "numbers that are not whole in a column of whole numbers (read as Float64)"


MISSING_CODE = -32768.0
"""EyeLink's "no value" (gaze lost): in a report's numeric column it is flagged (:data:`CODED`), never averaged
unawares."""


CODED = "EyeLink's missing-value code -32768 in a numeric column (read as a number)"


NON_FINITE = "non-finite numbers (NaN, inf) in a numeric column"


def decimal_comma_options(separator: str) -> tuple[Option, ...]:
    """What resolves a "not a number" error on a value like ``390,6``, spelled for Python and for ``readgaze prep``
    (:class:`readgaze.errors.Option`)."""
    named = {"\t": "tab", ";": "';'", " ": "space"}.get(separator, repr(separator))
    return (Option(f"separator={separator!r}, decimal_comma=True", f"--separator {named} --decimal-comma",
                   "numbers written with a decimal comma"),)


def head_flags(text: pl.LazyFrame, names: list[str], decimal_comma: bool, check_comma: bool,
                head_rows: int = HEAD_ROWS) -> dict[str, dict[str, object]]:
    """Per column, which :func:`column_tests` pass on the first ``head_rows`` rows; then, for the columns that are
    text or floats there (a stray value may have made them so), the counts (``m``, ``kf``, ``kb``, ``kx``, ``kw``)."""
    head = text.head(head_rows).collect()
    tests = {c: column_tests(c, decimal_comma, check_comma) for c in names}
    row = head.select([e.alias(f"{t}{i}") for i, c in enumerate(names) for t, e in tests[c].items()]).row(0, named=True)
    flags = {c: {t: row[f"{t}{i}"] for t in tests[c]} for i, c in enumerate(names)}
    odd = [c for c in names if not flags[c]["n"] and not flags[c]["i"] and not flags[c]["b"]]
    if odd:
        counts = {c: {t: e for t, e in column_tests(c, decimal_comma, False, counts=True).items()
                      if t in ("m", "kf", "kb", "kx", "kw")} for c in odd}
        got = head.select([e.alias(f"{t}\x00{c}") for c in odd for t, e in counts[c].items()]).row(0, named=True)
        for c in odd:
            flags[c].update({t: got[f"{t}\x00{c}"] for t in counts[c]})
    return flags


def decide(passed: dict) -> pl.DataType:
    """Dtype from test results: all null -> String; all bool -> Boolean; all int -> Int64; all number
    -> Float64; else String."""
    if passed["n"]:
        return pl.String
    for t, dtype in (("b", pl.Boolean), ("i", pl.Int64), ("f", pl.Float64)):
        if passed[t]:
            return dtype
    return pl.String


def mostly(passed: dict) -> bool:
    """Numbers (or booleans) but for a few values (:data:`STRAY_SHARE`): a damaged cell in a numeric column?"""
    m = int(passed.get("m") or 0)
    return any(0 < int(passed.get(k) or 0) <= STRAY_SHARE * m and m - int(passed.get(k) or 0) >= 5
               for k in ("kf", "kb"))


def flag_stray(text: TextFile, lf: pl.LazyFrame, c: str, passed: dict) -> None:
    """A column of numbers but for a few values: :func:`stray_number_error` naming the first (never a column of
    numbers read as text); of True/False but for a few: noted (for the QC log), naming the first."""
    kf, kb, m = int(passed.get("kf") or 0), int(passed.get("kb") or 0), int(passed.get("m") or 0)
    numbers = 0 < kf <= STRAY_SHARE * m and m - kf >= 5
    bad = (pl.col(c).cast(pl.Float64, strict=False).is_null() if numbers  # unstripped, as counted: " 5 " is named
           else ~pl.col(c).str.to_lowercase().is_in(["true", "false"])) & pl.col(c).is_not_null()
    row, value = first_row_where(lf, bad, c, path=text.read_path)
    if numbers:
        raise stray_number_error(value, kf, m, file=text.path, row=row, column=c, separator=text.separator)
    k = kf if numbers else kb
    what = "numbers" if numbers else "True/False"
    note = Repair(STRAY if numbers else STRAY_BOOL, k, row, "flagged")
    detail = (f"column {c}: {k} of {m:,} values are not {what} (first {value!r}, a damaged cell?); the column is "
              "read as text")
    add_note(text, note, detail)


def stray_number_error(value, k: int, m: int, *, file, row: int | None, column: str, separator: str = ","
                       ) -> ParseError:
    """The error for a value that is not a number in a column of numbers (``k`` of its ``m`` values): a damaged
    cell, a decimal comma (``387,5``), spaces around a number. Read as text, the whole column would change dtype."""
    text = str(value)
    why = ("a decimal comma?" if re.fullmatch(DECIMAL_COMMA, text) else "spaces around a number?"
           if text != text.strip() else "a damaged cell?")
    options = decimal_comma_options(separator) if why == "a decimal comma?" and separator != "," else ()
    return ParseError(f"{value!r} is not a number ({why}), in a column of numbers ({k:,} of {m:,} values are not): "
                      "fix the cell, or empty it if the value is missing", file=file, row=row, column=column,
                      options=options)


def add_note(text: TextFile, note: Repair, detail: str) -> None:
    if all(d != detail for _, d in text.notes):
        text.notes.append((note, detail))


def report_notes(text: TextFile, qc: QCLog | None, step: str, table: str, coded: Iterable[str] = ()) -> None:
    """The column flags of :func:`flag_stray` and the others: in ``qc`` (once per step and detail), else warned once.
    ``coded``: columns where -32768 means "missing" to the caller (not flagged)."""
    import warnings

    from readgaze.io.faults import RepairWarning

    skip = {f"column {c}: " for c in coded}
    for note, detail in text.notes:
        if note.reason == CODED and any(detail.startswith(k) for k in skip):
            continue
        full = f"{text.path.name} row {note.first_line}, {detail}"
        if qc is None:
            if note.reason == NON_FINITE:  # a valid float value, kept: counted when a log is given, else not said
                continue
            if full not in text.shown:
                text.shown.add(full)
                warnings.warn(RepairWarning(full), stacklevel=3)
        elif not any(r["step"] == step and r["detail"] == full for r in qc.records):
            qc.add(step, table, note.reason, note.count, action="flagged", detail=full)


def infer_schema(path: str | Path, *, separator: str, decimal_comma: bool = False,
                 null_values: Iterable[str] = NULL_VALUES, head_rows: int = HEAD_ROWS) -> dict[str, pl.DataType]:
    """Infer every column's dtype from the whole file in one streaming pass (bounded memory).

    Polars' own ``infer_schema_length=None`` holds the whole file in memory (1.25 GB peak RSS for a
    1 GB report); here the file is read as text and each column is tested: all ``true``/``false`` (any
    case) -> Boolean, all integers -> Int64, all numbers (``inf`` and ``NaN`` included) -> Float64,
    else String. A column that is null everywhere is String, as in polars.

    The first ``head_rows`` rows are tested first. Every test is an "all rows pass" test, so a test that
    fails on the head fails on the file: a column whose head already rules out every numeric type is
    String without a whole-file look, and the whole-file pass (streaming) reads and tests only the other
    columns, and only the tests their head passed. The result equals testing the whole file. The same pass
    counts the nulls of the last column (rows cut short: :func:`readgaze.io.faults.check_rows`) and the values
    of a column of numbers but for a few (flagged in the QC log by the readers).

    Raises
    ------
    ParseError
        (unless ``decimal_comma``) a column of a ``;``/TAB-separated file holds only numbers, some with a
        decimal comma; names the file, the first such row and the column. A row with too few or too many fields.
    """
    path = Path(path)
    checked = text_file(path, separator) or check_text(path, separator=separator)
    names = list(checked.names)
    text = scan_rows(path, dict.fromkeys(names, pl.String), {"separator": separator, "null_values": list(null_values),
                                                          "quote_char": '"', "raise_if_empty": True,
                                                          "encoding": "utf8"})
    check_comma = separator != "," and not decimal_comma
    tests = {c: column_tests(c, decimal_comma, check_comma, counts=True) for c in names}
    head = head_flags(text, names, decimal_comma, check_comma, head_rows)
    flags: dict[str, dict[str, object]] = {}
    todo = []
    for i, c in enumerate(names):
        passed = head[c]
        flags[c] = {t: False for t in tests[c]} | {t: 0 for t in ("m", "kf", "kb", "kx", "kw", "ke", "ki")}
        if "c" in passed:
            flags[c]["c"] = passed["c"]  # "any" test: true on the head is true on the file
        todo += [(i, c, t) for t, ok in passed.items() if t in ("n", "b", "i", "f", "d") and ok]
        todo += [(i, c, t) for t in ("c",) if t in passed and not passed[t]]
        if passed["i"] or passed["f"]:
            todo += [(i, c, "ke"), (i, c, "ki")]
    exprs = [tests[c][t].alias(f"{t}{i}") for i, c, t in todo]
    exprs += [pl.col(names[-1]).null_count().alias("__last_nulls"), pl.len().alias("__rows"),
              pl.col(EXTRA).is_not_null().sum().alias("__long")]
    whole = text.select(exprs).collect(engine="streaming").row(0, named=True)
    long_rows(checked, text, int(whole["__long"]))
    for i, c, t in todo:
        flags[c][t] = whole[f"{t}{i}"]
    if whole["__last_nulls"]:
        rows = (text.select(pl.col(names[-1])).with_row_index("__row").filter(pl.col(names[-1]).is_null())
                .select("__row").collect(engine="streaming")["__row"].to_numpy())
        check_rows(checked, rows, int(whole["__rows"]))
    # a column of numbers (or booleans) on the head that is text on the file, or mostly numbers on a text head:
    # count its values (a second pass, over these columns only; none in a clean file)
    recount = [(i, c) for i, c in enumerate(names) if decide(flags[c]) == pl.String and not flags[c]["n"]
               and (mostly(head[c]) or any(head[c][t] for t in ("b", "i", "f")))]
    floats = [(i, c) for i, c in enumerate(names) if decide(flags[c]) == pl.Float64
              and (head[c]["i"] or mostly_whole(head[c]))]
    if recount or floats:
        got = text.select([tests[c][t].alias(f"{t}{i}") for i, c in recount for t in ("m", "kf", "kb")]
                          + [e.alias(f"{t}{i}") for i, c in floats for t, e in odd_whole(c).items()
                             if not t.startswith("__")]
                          ).collect(engine="streaming").row(0, named=True)
        for i, c in recount:
            flags[c].update({t: got[f"{t}{i}"] for t in ("m", "kf", "kb")})
        for i, c in floats:
            flag_odd_whole(checked, text, c, got[f"m{i}"], got[f"kx{i}"], got[f"kw{i}"], path)
    schema: dict[str, pl.DataType] = {}
    for c in names:
        f = flags[c]
        schema[c] = decide(f)
        if schema[c] in (pl.Int64, pl.Float64) and f.get("ke"):
            flag_coded(checked, text, c, int(f["ke"]), path)
        if schema[c] == pl.Float64 and f.get("ki"):
            flag_non_finite(checked, text, c, int(f["ki"]), path)
        if schema[c] == pl.String and not f["n"]:
            if check_comma and f["d"] and f["c"]:
                row, value = first_row_where(text, pl.col(c).str.contains(DECIMAL_COMMA), c, path=path)
                raise ParseError(f"{value!r} is not a number (decimal comma?)", file=checked.path, row=row, column=c,
                                 options=decimal_comma_options(separator))
            if mostly(f):
                flag_stray(checked, text, c, f)
    return schema


def odd_whole(c: str, text: bool = True) -> dict[str, pl.Expr]:
    """Counts of a column of whole numbers but for a few: ``m`` values, ``kx`` non-finite or huge ones, ``kw`` finite
    ones that are not whole (and the row test ``__bad``). ``text``: the column is text (else Float64)."""
    number = pl.col(c).str.strip_chars().cast(pl.Float64, strict=False) if text else pl.col(c)
    bad = pl.col(c).is_not_null() & (~number.is_finite() | (number.abs() >= 2.0 ** 53)).fill_null(False)
    frac = (number.is_finite() & (number != number.round())).fill_null(False)
    return {"m": pl.col(c).is_not_null().sum(), "kx": bad.sum(), "kw": frac.sum(), "__bad": bad, "__frac": frac}


def flag_non_finite(text: TextFile, lf: pl.LazyFrame, c: str, k: int, path) -> None:
    """Note a numeric column holding NaN or infinity (kept: OneStop's ``subtlex_frequency`` has inf), naming the
    first cell: a mean over it is not finite."""
    number = pl.col(c).str.strip_chars().cast(pl.Float64, strict=False) if lf.collect_schema()[c] == pl.String \
        else pl.col(c)
    row, value = first_row_where(lf, (number.is_nan() | number.is_infinite()).fill_null(False), c, path=path)
    add_note(text, Repair(NON_FINITE, k, row, "flagged"),
              f"column {c}: {k} value(s) NaN or infinite (first {value!r}); kept")


def mostly_whole(passed: dict) -> bool:
    """Whole numbers on the head but for a few (:data:`STRAY_SHARE`)."""
    k, m = int(passed["kx"]) + int(passed["kw"]), int(passed["m"])
    return 0 < k <= STRAY_SHARE * m and m - k >= 5


def flag_coded(text: TextFile, lf: pl.LazyFrame, c: str, k: int, path) -> None:
    """Note a numeric column holding EyeLink's missing-value code, naming the first cell."""
    number = pl.col(c).str.strip_chars().cast(pl.Float64, strict=False) if lf.collect_schema()[c] == pl.String \
        else pl.col(c)
    row, _ = first_row_where(lf, (number == MISSING_CODE).fill_null(False), c, path=path)
    add_note(text, Repair(CODED, k, row, "flagged"),
              f"column {c}: {k} value(s) -32768, EyeLink's missing-value code (Data Viewer writes '.'); read as "
              "numbers")


def flag_odd_whole(text: TextFile, lf: pl.LazyFrame, c: str, m: int, kx: int, kw: int, path) -> None:
    """Note a column of whole numbers but for a few that are not (fractions, NaN, infinity, huge; read as Float64),
    naming the first."""
    k = kx + kw
    if not 0 < k <= STRAY_SHARE * m or m - k < 5:
        return
    odd = odd_whole(c, lf.collect_schema()[c] == pl.String)
    row, value = first_row_where(lf, odd["__bad"] | odd["__frac"], c, path=path)
    add_note(text, Repair(ODD_WHOLE, k, row, "flagged"),
              f"column {c}: {k} of {m:,} values are not finite whole numbers (first {value!r}, a damaged cell?); "
              "the column is read as Float64")


def column_tests(c: str, decimal_comma: bool, check_comma: bool, counts: bool = False) -> dict[str, pl.Expr]:
    """Tests of one text column: ``n`` all null, ``b`` all bool, ``i`` all int, ``f`` all number, and
    (``check_comma``) ``d`` all number-or-decimal-comma, ``c`` any decimal comma. With ``counts``, also the counts
    ``m`` of values, ``kf`` of values that are not numbers, ``kb`` not booleans, ``kx`` non-finite or huge numbers,
    ``kw`` finite numbers that are not whole, ``ke`` values -32768, ``ki`` NaN or infinite values."""
    col = pl.col(c)  # unstripped, as the CSV parser sees it
    num = col.str.replace(",", ".", literal=True) if decimal_comma else col
    nulls = col.null_count()
    is_bool = col.str.to_lowercase().is_in(["true", "false"])
    as_float = num.cast(pl.Float64, strict=False)  # shared by "f", "ke" and "ki"
    tests = {"n": nulls == pl.len(),
             "b": (is_bool | col.is_null()).all(),
             "i": num.cast(pl.Int64, strict=False).null_count() == nulls,
             "f": as_float.null_count() == nulls}
    if check_comma:
        tests["d"] = (col.str.contains(NUMBER_OR_DECIMAL_COMMA) | col.is_null()).all()
        tests["c"] = col.str.contains(DECIMAL_COMMA).any()
    if counts:
        number = num.str.strip_chars().cast(pl.Float64, strict=False)
        tests.update({
            # kf as the parser sees the values: " 5 " is not a number to it
            "m": pl.len() - nulls, "kf": as_float.null_count() - nulls, "kb": (col.is_not_null() & ~is_bool).sum(),
            "kx": (col.is_not_null() & (~number.is_finite() | (number.abs() >= 2.0 ** 53)).fill_null(False)).sum(),
            "kw": (number.is_finite() & (number != number.round())).fill_null(False).sum(),
            "ke": (as_float == MISSING_CODE).fill_null(False).sum(),
            "ki": (as_float.is_nan() | as_float.is_infinite()).fill_null(False).sum()})
    return tests
