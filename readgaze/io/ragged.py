"""Rows with too few or too many fields, found around the parse (the rest of :mod:`readgaze.io.faults`).

polars pads a row with too few fields with nulls, and, parsing only some columns, drops the fields of a row with too
many silently. So every parse reads the file's last column and one column past it (:data:`EXTRA`,
:func:`scan_rows`): a row cut short has its last column null (:func:`check_rows` looks at those rows only, a few in a
clean file: a null last value is rare), a row with a field too many has a value past the last column. The rows found
are read again as lines (:func:`line_texts`) and their separators outside quotes counted (:func:`field_counts`), and
the first is an error naming its line: the values of such a row are unknown.
"""

from __future__ import annotations

import csv
import re
from collections.abc import Mapping

import numpy as np
import polars as pl

from readgaze.errors import ParseError
from readgaze.io.faults import TextFile, lone_cr_error

LOOK_AT = 50_000
"""Suspect rows up to which :func:`check_rows` reads the lines one by one (above: one pass over all lines)."""


def line_texts(text: TextFile, lines: np.ndarray) -> pl.Series:
    """The text of lines ``lines`` (0-based, header = 0) of ``text.read_path``, without line ends."""
    mm = np.memmap(text.read_path, np.uint8, mode="r")
    ends = np.r_[text.starts[1:], text.size]
    out = []
    for i in lines.tolist():
        out.append(bytes(mm[text.starts[i]:ends[i]]).rstrip(b"\r\n").decode("utf-8", "replace"))
    return pl.Series(out, dtype=pl.String)


def _all_lines(text: TextFile) -> pl.Series:
    return pl.read_csv(text.read_path, has_header=False, separator="\x1f", quote_char=None, new_columns=["t"],
                       schema={"t": pl.String}, truncate_ragged_lines=True, encoding="utf8-lossy")["t"].fill_null("")


def field_counts(lines: pl.Series, sep: str) -> pl.DataFrame:
    """Per line of text: ``fields`` (separators outside double quotes + 1), ``odd_quotes`` and ``blank`` (nothing but
    separators and spaces)."""
    return pl.DataFrame({"t": lines}).select(
        fields=pl.col("t").str.replace_all(r'"[^"]*"', "").str.count_matches(sep, literal=True) + 1,
        odd_quotes=pl.col("t").str.count_matches('"', literal=True) % 2 == 1,
        blank=pl.col("t").str.replace_all(r"[\s" + re.escape(sep) + "]", "") == "")


def check_rows(text: TextFile, rows: np.ndarray, n_rows: int, *, long: bool = False) -> None:
    """Look at the data rows ``rows`` (0-based, of ``text.read_path``) and raise :class:`ParseError` on the first
    with too few fields (``rows``: those whose last column is null) or, with ``long``, too many (``rows``: those with
    a field past the last column). ``n_rows``: the rows the parser found (a quoted field with a line break makes rows
    and lines differ; the records are then counted by Python's csv module)."""
    if not len(rows):
        return
    n = len(text.names)
    if n_rows == text.n_rows:
        lines = np.asarray(rows, np.int64) + 1
        texts = line_texts(text, lines) if len(lines) <= LOOK_AT else _all_lines(text).gather(lines)
        counts = field_counts(texts, text.separator).with_columns(row=pl.Series(np.asarray(rows, np.int64)))
    else:
        counts = _records(text)
    if long:
        over = counts.filter(pl.col("fields") > n)
        if over.height:
            first = over.row(0, named=True)
            more = f" ({over.height - 1} more row(s) like it)" if over.height > 1 else ""
            raise ParseError(f"{first['fields']} fields where the header has {n}: an unquoted "
                             f"{_named(text.separator)} inside a value, or one at the end of the row?{more}",
                             file=text.path, row=text.user_line(int(first["row"])))
        return
    short = counts.filter(pl.col("fields") < n)
    if short.height:
        _raise_short(text, short, n)


def _records(text: TextFile) -> pl.DataFrame:
    """Every record's field count and first line, by Python's csv module (quoted fields may hold line breaks)."""
    rows, fields = [], []
    with open(text.read_path, encoding="utf-8", errors="replace", newline="") as f:
        reader = csv.reader(f, delimiter=text.separator)
        next(reader, None)
        start = reader.line_num + 1
        for record in reader:
            rows.append(start - 2)
            fields.append(len(record))
            start = reader.line_num + 1
    return pl.DataFrame({"row": rows, "fields": fields, "odd_quotes": [False] * len(rows)},
                        schema={"row": pl.Int64, "fields": pl.Int64, "odd_quotes": pl.Boolean})


def _raise_short(text: TextFile, short: pl.DataFrame, n: int) -> None:
    first = short.row(0, named=True)
    row = int(first["row"])
    last = row == text.n_rows - 1
    truncated = last and not _ends_with_newline(text)
    more = f" ({short.height - 1} more row(s) like it)" if short.height > 1 else ""
    why = ("the last row is cut short: the file looks truncated (an interrupted copy or export?)" if truncated
           else "a cell deleted, or the row cut short?")
    if first.get("odd_quotes"):
        why = "an unbalanced double quote?"
    k = int(first["fields"])
    raise ParseError(f"{k} field(s) where the header has {n}: {why}{more}", file=text.path,
                     row=text.user_line(row), column=text.names[k] if k < n else None)


def _ends_with_newline(text: TextFile) -> bool:
    if text.size == 0:
        return True
    with open(text.read_path, "rb") as f:
        f.seek(text.size - 1)
        return f.read(1) == b"\n"


def locate_parse_error(text: TextFile, error: Exception) -> ParseError:
    """A :class:`ParseError` naming the line a polars parse error comes from: a row with more fields than the
    header (an unquoted separator inside a value, or one at the row's end), an unbalanced double quote, or a line
    ending with a CR alone among lines ending with a line feed."""
    mixed = lone_cr_error(text.read_path, text.path)  # lines run together: every count below would mislead
    if mixed is not None:
        return mixed
    message = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
    n = len(text.names)
    counts = field_counts(_all_lines(text), text.separator).with_row_index("line")
    long = counts.filter((pl.col("line") > 0) & (pl.col("fields") > n))
    odd = counts.filter((pl.col("line") > 0) & pl.col("odd_quotes"))
    if long.height and (not odd.height or long["line"][0] <= odd["line"][0]):
        line, k = int(long["line"][0]), int(long["fields"][0])
        more = f" ({long.height - 1} more row(s) like it)" if long.height > 1 else ""
        return ParseError(f"{k} fields where the header has {n}: an unquoted {_named(text.separator)} inside a "
                          f"value, or one at the end of the row?{more}", file=text.path,
                          row=text.user_line(line - 1))
    if odd.height:
        return ParseError("an unbalanced double quote: the value runs on into the next line(s)", file=text.path,
                          row=text.user_line(int(odd["line"][0]) - 1))
    return ParseError(f"cannot read as {text.separator!r}-separated text: {message}", file=text.path)


def _named(sep: str) -> str:
    return {",": "comma", "\t": "TAB", ";": "semicolon"}.get(sep, repr(sep))


EXTRA = "\x00extra"
"""A column past the last one: polars reads a row's fields beyond the header into it (and, parsing only some
columns, would otherwise drop them silently), so a row with too many fields shows as a value here."""


def scan_rows(path, schema: Mapping[str, pl.DataType], common: dict) -> pl.LazyFrame:
    """The file's data rows under ``schema`` (every column, in file order) plus :data:`EXTRA`."""
    return pl.scan_csv(path, has_header=False, skip_rows=1, schema={**schema, EXTRA: pl.String},
                       missing_columns="insert", **common)


def long_rows(text: TextFile, lf: pl.LazyFrame, n_extra: int | None = None) -> None:
    """Raise on the first row with a field past the last column (``lf`` from :func:`_scan`)."""
    if n_extra == 0:
        return
    rows = (lf.select(pl.col(EXTRA)).with_row_index("__row").filter(pl.col(EXTRA).is_not_null())
            .select("__row").collect(engine="streaming")["__row"].to_numpy())
    if len(rows):
        check_rows(text, rows, text.n_rows, long=True)
