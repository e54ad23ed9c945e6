"""Robust lazy CSV scanning for lab exports (Data Viewer reports, gaze-sample CSVs).

Every report in ``readgaze.io`` is opened through :func:`scan_csv`, which fixes the traps that make
``pl.read_csv`` fail or silently mistype real exports:

* **separator**: comma, TAB or ``;``, detected from the header line (``.csv`` files are often TAB
  separated, e.g. SB-SAT raw samples);
* **missing values**: Data Viewer writes ``.``; pandas writes empty fields. Both become null;
* **dtypes**: inferred from the *whole* file in one streaming pass (:func:`infer_schema`) or taken
  from an explicit schema, never from the first 100 rows (a column whose first 120 values are empty
  is still Float64; a ``.`` past row 100 no longer aborts the read). The pass reads only
  the columns the first :data:`HEAD_ROWS` rows leave open. :func:`read_csv` reads a file into memory
  with the same dtypes in a single parse (head-proposed dtypes, checked by the parser itself);
* ``inf`` parses as +inf (OneStop ``subtlex_frequency``); quoted labels keep their commas, and doubled
  quotes inside a quoted field are unescaped (a label written with doubled quotes around ``Yes,`` reads as ``"Yes,"``
  with its quotes);
* **decimal commas** (``390,6`` in a ``;``-separated file) raise :class:`ParseError` with a hint,
  or parse with ``decimal_comma=True``.

Row numbers in errors are editor line numbers (header = row 1). A quoted field with an embedded
newline shifts later row numbers by one per extra line; Data Viewer never writes such fields.
"""

from __future__ import annotations

import codecs
import hashlib
import io
import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path

import numpy as np
import polars as pl

from readgaze.errors import ConfigError, Option, ParseError

NULL_VALUES = (".",)
"""Data Viewer's missing-value marker; empty fields are null anyway."""

HEAD_ROWS = 10_000
"""Rows :func:`infer_schema` tests before the whole-file pass (a speed-up only; never decides alone)."""

_SEPARATORS = (",", "\t", ";")
_DECIMAL_COMMA = r"^\s*[-+]?\d+,\d+\s*$"
_NUMBER_OR_DECIMAL_COMMA = r"^\s*[-+]?(?:\d+(?:[.,]\d*)?|[.,]\d+)(?:[eE][-+]?\d+)?\s*$"
"""A number with a decimal point or a decimal comma: a column of these with one comma is a locale fault."""


def decimal_comma_options(separator: str) -> tuple[Option, ...]:
    """What resolves a "not a number" error on a value like ``390,6``, spelled for Python and for ``readgaze prep``
    (:class:`readgaze.errors.Option`)."""
    named = {"\t": "tab", ";": "';'", " ": "space"}.get(separator, repr(separator))
    return (Option(f"separator={separator!r}, decimal_comma=True", f"--separator {named} --decimal-comma",
                   "numbers written with a decimal comma"),)


def detect_separator(path: str | Path) -> str:
    """Return the field separator of a delimited text file: ``','``, ``'\\t'`` or ``';'``.

    Counts each candidate outside double quotes on the header line and takes the most frequent
    (ties and a one-column header give ``','``).

    Raises
    ------
    ParseError
        The file does not exist or is empty.
    """
    path = Path(path)
    if not path.is_file():
        raise ParseError("no such file", file=path)
    with path.open("rb") as f:
        head = f.readline(1 << 20).decode("utf-8", errors="replace").lstrip("\ufeff")
    if not head.strip():
        raise ParseError("file is empty; expected a header line", file=path, row=1)
    counts = dict.fromkeys(_SEPARATORS, 0)
    quoted = False
    for ch in head:
        if ch == '"':
            quoted = not quoted
        elif not quoted and ch in counts:
            counts[ch] += 1
    best = max(_SEPARATORS, key=lambda s: counts[s])  # max keeps the first of ties: ','
    return best if counts[best] else ","


def as_utf8(path: str | Path, encoding: str = "utf-8") -> Path:
    """The file itself when ``encoding`` is UTF-8, else a UTF-8 copy with the same file name (so messages
    name the user's file) in a per-file temporary folder, made once per (path, size, mtime, encoding).

    Raises
    ------
    ConfigError
        Unknown codec.
    ParseError
        A byte that ``encoding`` cannot decode (row named).
    """
    path = Path(path)
    try:
        codec = codecs.lookup(encoding).name
    except LookupError:
        raise ConfigError(f"encoding: unknown codec {encoding!r} (e.g. 'utf-8', 'cp1252', 'latin-1')") from None
    if codec == "utf-8" or not path.is_file():
        return path
    stat = path.stat()
    key = hashlib.sha1(f"{path.resolve()}|{stat.st_size}|{stat.st_mtime_ns}|{codec}".encode()).hexdigest()[:16]
    target = Path(tempfile.gettempdir()) / "readgaze_utf8" / key / path.name
    if not target.is_file():
        raw = path.read_bytes()
        try:
            text = raw.decode(codec)
        except UnicodeDecodeError as e:
            raise ParseError(f"byte {raw[e.start:e.start + 1]!r} is not valid {encoding}", file=path,
                             row=raw.count(b"\n", 0, e.start) + 1) from None
        target.parent.mkdir(parents=True, exist_ok=True)
        partial = target.with_suffix(target.suffix + ".part")
        partial.write_bytes(text.encode("utf-8"))
        partial.replace(target)
    return target


def scan_csv(path: str | Path, *, separator: str | None = None,
             schema: Mapping[str, pl.DataType] | None = None,
             schema_overrides: Mapping[str, pl.DataType] | None = None,
             decimal_comma: bool = False, null_values: Iterable[str] = NULL_VALUES,
             in_memory: bool = False, encoding: str = "utf-8") -> pl.LazyFrame:
    """Scan a delimited lab export lazily, with whole-file dtype inference.

    Parameters
    ----------
    path : str or Path
        The file (UTF-8, optional BOM, LF or CRLF line ends).
    separator : str, optional
        Field separator; detected from the header (:func:`detect_separator`) when omitted.
    schema : mapping of column -> polars dtype, optional
        The full schema (every column, in file order). Skips inference entirely: use it for
        very large files whose layout is known. A value that does not fit then fails at collect time.
    schema_overrides : mapping of column -> polars dtype, optional
        Dtypes for some columns; the others are inferred from the whole file.
    decimal_comma : bool
        Parse ``390,6`` as 390.6 (files written under a decimal-comma locale; needs a separator
        other than ``,``).
    null_values : iterable of str
        Field values read as null, besides the empty field. Default ``(".",)`` (Data Viewer).
    in_memory : bool
        Parse the file once, now, into memory and return a lazy view of that frame: later collects do
        not re-parse the file (use it when a caller collects the same report several times; costs
        the typed frame's memory, about 0.5 GiB per million rows of a 50-column report).
    encoding : str
        Text encoding (default UTF-8). Another one (``"cp1252"`` for Windows exports such as SB-SAT's)
        is decoded into a UTF-8 copy first (:func:`as_utf8`). Bytes that are not UTF-8 under the
        default raise :class:`ParseError` naming the row and suggesting ``encoding=``.

    Returns
    -------
    polars.LazyFrame
        Source column names unchanged; numeric columns Int64/Float64, ``True``/``False`` Boolean,
        everything else String.

    Raises
    ------
    ParseError
        The file is missing, empty or not parseable as delimited text; or (unless
        ``decimal_comma=True``) a ``;``/TAB-separated column holds decimal-comma numbers, naming the
        file, the first row and the column.
    """
    if in_memory:
        return read_csv(path, separator=separator, schema=schema, schema_overrides=schema_overrides,
                        decimal_comma=decimal_comma, null_values=null_values, encoding=encoding).lazy()
    path = as_utf8(path, encoding)
    sep, common = _options(path, separator, decimal_comma, null_values)
    try:
        if schema is None:
            schema = infer_schema(path, separator=sep, decimal_comma=decimal_comma, null_values=null_values)
            schema.update(schema_overrides or {})
        lf = pl.scan_csv(path, schema=dict(schema), **common)
        lf.collect_schema()
    except pl.exceptions.PolarsError as e:
        raise _parse_error(e, path, sep) from None
    return lf


def _options(path: Path, separator: str | None, decimal_comma: bool, null_values) -> tuple[str, dict]:
    sep = separator or detect_separator(path)
    if decimal_comma and sep == ",":
        raise ParseError("decimal_comma=True needs a separator other than ','", file=path)
    return sep, {"separator": sep, "null_values": list(null_values), "decimal_comma": decimal_comma,
                 "quote_char": '"', "raise_if_empty": True, "encoding": "utf8"}


def header(path: str | Path, *, separator: str | None = None, encoding: str = "utf-8") -> list[str]:
    """The column names of a delimited file (reads the header line only)."""
    path = as_utf8(path, encoding)
    sep = separator or detect_separator(path)
    try:
        return pl.scan_csv(path, separator=sep, infer_schema=False, quote_char='"', raise_if_empty=True,
                           encoding="utf8").collect_schema().names()
    except pl.exceptions.PolarsError as e:
        raise _parse_error(e, path, sep) from None


def read_csv(path: str | Path, *, columns: Iterable[str] | None = None, separator: str | None = None,
             schema: Mapping[str, pl.DataType] | None = None,
             schema_overrides: Mapping[str, pl.DataType] | None = None, decimal_comma: bool = False,
             null_values: Iterable[str] = NULL_VALUES, encoding: str = "utf-8") -> pl.DataFrame:
    """Read a delimited export (or some of its columns) into memory, parsing the file once.

    Same dtypes as :func:`scan_csv` (whole-file inference, never a 100-row guess), but without a
    separate inference pass: the :data:`HEAD_ROWS` first rows propose a dtype per column, the file is
    parsed once with those dtypes, and a column the head left open (all null there, or numbers with
    decimal commas) is read as text and decided on the whole column in memory. If any value does not
    fit its proposed dtype, the parser stops and the file is read again after :func:`infer_schema` (so
    the result never depends on the head).

    Parameters
    ----------
    columns : iterable of str, optional
        Columns to read (file order is kept); default all. Only these are parsed.
    separator, schema, schema_overrides, decimal_comma, null_values, encoding
        As in :func:`scan_csv`.

    Returns
    -------
    polars.DataFrame

    Raises
    ------
    ParseError
        As :func:`scan_csv`, or a value that does not fit an explicit ``schema``.
    """
    path = as_utf8(path, encoding)
    sep, common = _options(path, separator, decimal_comma, null_values)
    names = header(path, separator=sep)
    wanted = names if columns is None else [c for c in names if c in set(columns)]
    try:
        if schema is not None:
            return pl.scan_csv(path, schema=dict(schema), **common).select(wanted).collect()
        text = _head_text(path, names, common)
        check_comma = sep != "," and not decimal_comma
        open_columns, guess = [], dict.fromkeys(names, pl.String)  # columns not read are never parsed
        for c, passed in _head_flags(text, wanted, decimal_comma, check_comma).items():
            guess[c] = _decide(passed)
            if passed["n"] or (guess[c] == pl.String and passed.get("d")):
                open_columns.append(c)
        guess.update(schema_overrides or {})
        open_columns = [c for c in open_columns if c in wanted and c not in (schema_overrides or {})]
        try:
            df = pl.scan_csv(path, schema=guess, **common).select(wanted).collect()
        except pl.exceptions.PolarsError:  # a value past the head does not fit its proposed dtype
            full = infer_schema(path, separator=sep, decimal_comma=decimal_comma, null_values=null_values)
            full.update(schema_overrides or {})
            return pl.scan_csv(path, schema=full, **common).select(wanted).collect()
        if not open_columns:
            return df
        tests = {c: _column_tests(c, decimal_comma, check_comma) for c in open_columns}
        flags = df.select([e.alias(f"{t}\x00{c}") for c, ts in tests.items() for t, e in ts.items()]).row(0, named=True)
        casts = []
        for c in open_columns:
            passed = {t: bool(flags[f"{t}\x00{c}"]) for t in tests[c]}
            dtype = _decide(passed)
            if dtype == pl.String and check_comma and passed["d"] and passed["c"]:
                row, value = first_row_where(df.lazy(), pl.col(c).str.contains(_DECIMAL_COMMA), c)
                raise ParseError(f"{value!r} is not a number (decimal comma?)", file=path, row=row, column=c,
                                 options=decimal_comma_options(sep))
            if dtype != pl.String:
                num = pl.col(c).str.replace(",", ".", literal=True) if decimal_comma else pl.col(c)
                casts.append((num.str.to_lowercase() == "true" if dtype == pl.Boolean else num.cast(dtype))
                             .alias(c))
        return df.with_columns(casts) if casts else df
    except pl.exceptions.PolarsError as e:
        raise _parse_error(e, path, sep) from None


def _head_text(path: Path, names: list[str], common: dict, head_rows: int = HEAD_ROWS) -> pl.LazyFrame:
    """The file as text (no dtypes), for :func:`_head_flags`: parsed from the bytes of its first ``head_rows``
    rows only, where they end at a line break outside quotes (an even count of quote characters before it),
    else a lazy scan of the whole file (a scan's head maps and reads far more of a large file)."""
    data, lines = bytearray(), 0
    with open(path, "rb") as f:
        while lines <= head_rows and (block := f.read(1 << 20)):
            data += block
            lines += block.count(b"\n")
    ends = np.flatnonzero(np.frombuffer(data, np.uint8) == 10)
    whole = lines <= head_rows  # the file ends within the head
    prefix = bytes(data if whole else data[:ends[head_rows] + 1])
    if whole or prefix.count(b'"') % 2 == 0:
        try:
            head = pl.read_csv(io.BytesIO(prefix), infer_schema=False, **common)
            if head.columns == names and (whole or head.height == head_rows):
                return head.lazy()
        except pl.exceptions.PolarsError:
            pass
    return pl.scan_csv(path, infer_schema=False, **common)


def _head_flags(text: pl.LazyFrame, names: list[str], decimal_comma: bool, check_comma: bool,
                head_rows: int = HEAD_ROWS) -> dict[str, dict[str, bool]]:
    """Per column, which :func:`_column_tests` pass on the first ``head_rows`` rows."""
    tests = {c: _column_tests(c, decimal_comma, check_comma) for c in names}
    row = text.head(head_rows).select(
        [e.alias(f"{t}{i}") for i, c in enumerate(names) for t, e in tests[c].items()]).collect().row(0, named=True)
    return {c: {t: bool(row[f"{t}{i}"]) for t in tests[c]} for i, c in enumerate(names)}


def _decide(passed: dict[str, bool]) -> pl.DataType:
    """Dtype from test results: all null -> String; all bool -> Boolean; all int -> Int64; all number
    -> Float64; else String."""
    if passed["n"]:
        return pl.String
    for t, dtype in (("b", pl.Boolean), ("i", pl.Int64), ("f", pl.Float64)):
        if passed[t]:
            return dtype
    return pl.String


def _parse_error(e: Exception, path, separator: str) -> ParseError:
    first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
    if "utf-8" in first.lower() or "utf8" in first.lower():
        raw = Path(path).read_bytes()
        try:
            raw.decode("utf-8")
        except UnicodeDecodeError as bad:
            return ParseError(f"byte {raw[bad.start:bad.start + 1]!r} is not UTF-8 (a Windows export? pass "
                              "encoding='cp1252')", file=Path(path), row=raw.count(b"\n", 0, bad.start) + 1)
    return ParseError(f"cannot read as {separator!r}-separated text: {first}", file=Path(path))


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
    columns, and only the tests their head passed. The result equals testing the whole file.

    Raises
    ------
    ParseError
        (unless ``decimal_comma``) a column of a ``;``/TAB-separated file holds only numbers, some with a
        decimal comma; names the file, the first such row and the column.
    """
    path = Path(path)
    text = pl.scan_csv(path, separator=separator, infer_schema=False, null_values=list(null_values),
                       quote_char='"', raise_if_empty=True, encoding="utf8")
    names = text.collect_schema().names()
    check_comma = separator != "," and not decimal_comma
    tests = {c: _column_tests(c, decimal_comma, check_comma) for c in names}
    head = _head_flags(text, names, decimal_comma, check_comma, head_rows)
    flags: dict[str, dict[str, bool]] = {}
    todo = []
    for i, c in enumerate(names):
        passed = head[c]
        flags[c] = {t: False for t in tests[c]}  # "all" tests failed on the head fail on the file
        if "c" in passed:
            flags[c]["c"] = passed["c"]  # "any" test: true on the head is true on the file
        todo += [(i, c, t) for t, ok in passed.items() if (ok if t != "c" else not ok)]
    if todo:
        whole = (text.select([tests[c][t].alias(f"{t}{i}") for i, c, t in todo])
                 .collect(engine="streaming").row(0, named=True))
        for i, c, t in todo:
            flags[c][t] = bool(whole[f"{t}{i}"])
    schema: dict[str, pl.DataType] = {}
    for c in names:
        f = flags[c]
        schema[c] = _decide(f)
        if schema[c] == pl.String and not f["n"]:
            if check_comma and f["d"] and f["c"]:
                row, value = first_row_where(text, pl.col(c).str.contains(_DECIMAL_COMMA), c)
                raise ParseError(f"{value!r} is not a number (decimal comma?)", file=path, row=row, column=c,
                                 options=decimal_comma_options(separator))
    return schema


def _column_tests(c: str, decimal_comma: bool, check_comma: bool) -> dict[str, pl.Expr]:
    """Boolean scalar tests of one text column: ``n`` all null, ``b`` all bool, ``i`` all int, ``f`` all
    number, and (``check_comma``) ``d`` all number-or-decimal-comma, ``c`` any decimal comma."""
    col = pl.col(c)  # unstripped, as the CSV parser sees it
    num = col.str.replace(",", ".", literal=True) if decimal_comma else col
    nulls = col.null_count()
    tests = {"n": nulls == pl.len(),
             "b": (col.str.to_lowercase().is_in(["true", "false"]) | col.is_null()).all(),
             "i": num.cast(pl.Int64, strict=False).null_count() == nulls,
             "f": num.cast(pl.Float64, strict=False).null_count() == nulls}
    if check_comma:
        tests["d"] = (col.str.contains(_NUMBER_OR_DECIMAL_COMMA) | col.is_null()).all()
        tests["c"] = col.str.contains(_DECIMAL_COMMA).any()
    return tests


def first_row_where(lf: pl.LazyFrame, predicate: pl.Expr, column: str) -> tuple[int, object]:
    """Return ``(row, value)`` of the first row of a raw scan matching ``predicate``.

    ``row`` is the editor line number (header = row 1). ``lf`` must be the unfiltered scan of the file.
    Returns ``(0, None)`` when no row matches.
    """
    hit = (lf.with_row_index("__row", offset=2).filter(predicate).select("__row", column)
           .head(1).collect())
    return (0, None) if hit.is_empty() else (int(hit["__row"][0]), hit[column][0])


def require_numeric(lf: pl.LazyFrame, path: str | Path, columns: Iterable[str],
                    dtype: pl.DataType = pl.Float64) -> pl.LazyFrame:
    """Check that the named columns of a raw scan hold numbers and cast them to ``dtype``.

    A column that whole-file inference left as String is either entirely null (cast silently) or holds
    a non-number, which is reported with its row and value.

    Raises
    ------
    ParseError
        Naming the file, the first offending row, the column, the value found and "a number".
    """
    have = lf.collect_schema()
    casts = []
    for c in columns:
        if c not in have:
            continue
        if have[c] == pl.String:
            bad = pl.col(c).is_not_null() & pl.col(c).str.strip_chars().cast(pl.Float64, strict=False).is_null()
            row, value = first_row_where(lf, bad, c)
            if row:
                comma = (Option("decimal_comma=True", "--decimal-comma", "numbers written 390,6"),) if "," in str(
                    value) else ()
                raise ParseError(f"got {value!r}, expected a number", file=path, row=row, column=c, options=comma)
            casts.append(pl.col(c).str.strip_chars().cast(dtype, strict=False))
        elif have[c] != dtype:
            casts.append(pl.col(c).cast(dtype))
    return lf.with_columns(casts) if casts else lf
