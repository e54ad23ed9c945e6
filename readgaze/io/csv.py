"""Robust lazy CSV scanning for lab exports (Data Viewer reports, gaze-sample CSVs, labels tables).

Every delimited file in ``readgaze.io`` is opened through :func:`scan_csv` or :func:`read_csv`, which fix the traps
that make ``pl.read_csv`` fail or silently mistype real exports:

* **damaged lines and bytes** (:mod:`readgaze.io.faults`): blank lines, a repeated header, stray byte-order marks,
  NUL padding and CR-only line ends are repaired and counted; rows with too few or too many fields, a NUL inside a
  value and an unbalanced quote are errors naming the line (polars would pad, glue or keep them silently);
* **separator**: comma, TAB or ``;``, detected from the header line (``.csv`` files are often TAB
  separated, e.g. SB-SAT raw samples);
* **missing values**: Data Viewer writes ``.``; pandas writes empty fields. Both become null;
* **dtypes**: inferred from the *whole* file in one streaming pass (:func:`infer_schema`) or taken
  from an explicit schema, never from the first 100 rows (a column whose first 120 values are empty
  is still Float64; a ``.`` past row 100 no longer aborts the read). The pass reads only
  the columns the first :data:`HEAD_ROWS` rows leave open. :func:`read_csv` reads a file into memory
  with the same dtypes in a single parse (head-proposed dtypes, checked by the parser itself). A column of
  numbers but for a few values is an error naming the first value, its row and column (a damaged cell or a
  decimal comma would turn the numeric column into text); one of True/False but for a few is read as text and
  flagged in the QC log with the first one's row;
* ``inf`` parses as +inf (OneStop ``subtlex_frequency``); quoted labels keep their commas, and doubled
  quotes inside a quoted field are unescaped (a label written with doubled quotes around ``Yes,`` reads as ``"Yes,"``
  with its quotes);
* **decimal commas** (``390,6`` in a ``;``-separated file) raise :class:`ParseError` with a hint,
  or parse with ``decimal_comma=True``.

Numeric columns a reader needs are checked and cast by :func:`require_numeric` (:mod:`readgaze.io.numeric`).

Row numbers in errors are editor line numbers of the user's file (header = row 1), also when a repaired copy is
read. A quoted field with an embedded newline shifts later row numbers by one per extra line; Data Viewer never
writes such fields.
"""

from __future__ import annotations

import io
from collections.abc import Iterable, Mapping
from pathlib import Path

import numpy as np
import polars as pl

from readgaze.errors import ParseError
from readgaze.io.dtypes import (  # noqa: F401 -- HEAD_ROWS, NULL_VALUES, infer_schema, decimal_comma_options: public here
    DECIMAL_COMMA,
    HEAD_ROWS,
    MISSING_CODE,
    NULL_VALUES,
    column_tests,
    decide,
    decimal_comma_options,
    flag_coded,
    flag_non_finite,
    flag_odd_whole,
    flag_stray,
    head_flags,
    infer_schema,
    mostly,
    mostly_whole,
    odd_whole,
    report_notes,
)
from readgaze.io.faults import (  # noqa: F401 -- as_utf8, first_row_where: public here too
    TextFile,
    as_utf8,
    check_text,
    detect_separator_text,
    first_row_where,
    lone_cr_error,
    report,
    user_line,
)
from readgaze.io.numeric import require_numeric  # noqa: F401 -- public here too
from readgaze.io.ragged import EXTRA, check_rows, locate_parse_error, long_rows, scan_rows
from readgaze.qc import QCLog

_SEPARATORS = (",", "\t", ";")


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
    return detect_separator_text(head)


def _text(path, separator, encoding, qc, step) -> TextFile:
    text = check_text(path, separator=separator, encoding=encoding)
    report(text, qc, step)
    return text


def scan_csv(path: str | Path, *, separator: str | None = None,
             schema: Mapping[str, pl.DataType] | None = None,
             schema_overrides: Mapping[str, pl.DataType] | None = None,
             decimal_comma: bool = False, null_values: Iterable[str] = NULL_VALUES,
             in_memory: bool = False, encoding: str = "utf-8", qc: QCLog | None = None,
             step: str = "read_csv", table: str = "rows", rename: Mapping[str, str] | None = None,
             coded: Iterable[str] = ()) -> pl.LazyFrame:
    """Scan a delimited lab export lazily, with whole-file dtype inference.

    Parameters
    ----------
    path : str or Path
        The file (UTF-8, optional BOM, LF or CRLF line ends).
    separator : str, optional
        Field separator; detected from the header (:func:`detect_separator`) when omitted.
    schema : mapping of column -> polars dtype, optional
        The full schema (every column, in file order). Skips inference: use it for very large files whose
        layout is known (the file is still read once for its line structure, and once, one column, for rows cut
        short). A value that does not fit raises :class:`ParseError` naming its column.
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
    qc : QCLog, optional
        Receives the repairs of the file's lines (:mod:`readgaze.io.faults`) and the flags of numeric columns read
        as text, under ``step`` and ``table``; without it they are warned about (:class:`readgaze.io.faults.
        RepairWarning`).
    rename : mapping, optional
        ``{file column: name}``: columns read under other names (a column map onto a source's own names);
        ``schema`` and ``schema_overrides`` use the new names, errors the file's.
    coded : iterable of str
        Columns in which -32768 means "missing" to the caller (gaze coordinates): not flagged.

    Returns
    -------
    polars.LazyFrame
        Source column names unchanged (but ``rename``); numeric columns Int64/Float64, ``True``/``False`` Boolean,
        everything else String. Collecting it raises no parse error: every value fits its dtype.

    Raises
    ------
    ParseError
        The file is missing, empty, header-only or not parseable as delimited text; a row has too few or too many
        fields, a NUL byte or an unbalanced quote (file, line and column named); or (unless
        ``decimal_comma=True``) a ``;``/TAB-separated column holds decimal-comma numbers, naming the
        file, the first row and the column.
    """
    if in_memory:
        return read_csv(path, separator=separator, schema=schema, schema_overrides=schema_overrides,
                        decimal_comma=decimal_comma, null_values=null_values, encoding=encoding, qc=qc, step=step,
                        table=table, rename=rename, coded=coded).lazy()
    text = _text(path, separator, encoding, qc, step)
    back = _back(rename)
    schema = None if schema is None else {back.get(c, c): t for c, t in schema.items()}
    schema_overrides = {back.get(c, c): t for c, t in (schema_overrides or {}).items()}
    sep, common = _options(text.read_path, text.separator, decimal_comma, null_values)
    try:
        if schema is None:
            schema = infer_schema(text.read_path, separator=sep, decimal_comma=decimal_comma, null_values=null_values)
            schema.update(schema_overrides or {})
        else:
            _check_rows(text, scan_rows(text.read_path, dict(schema), common))
        lf = scan_rows(text.read_path, dict(schema), common).drop(EXTRA)
        lf.collect_schema()
    except pl.exceptions.PolarsError as e:
        raise _parse_error(e, text) from None
    report_notes(text, qc, step, table, coded)
    return lf.rename(dict(rename), strict=False) if rename else lf


def _back(rename: Mapping[str, str] | None) -> dict[str, str]:
    """``{new name: file column}`` of a ``rename`` map."""
    return {new: old for old, new in (rename or {}).items()}


def _options(path, separator: str | None, decimal_comma: bool, null_values) -> tuple[str, dict]:
    sep = separator or detect_separator(path)
    if decimal_comma and sep == ",":
        raise ParseError("decimal_comma=True needs a separator other than ','", file=path)
    return sep, {"separator": sep, "null_values": list(null_values), "decimal_comma": decimal_comma,
                 "quote_char": '"', "raise_if_empty": True, "encoding": "utf8"}


def header(path: str | Path, *, separator: str | None = None, encoding: str = "utf-8",
           rename: Mapping[str, str] | None = None) -> list[str]:
    """The column names of a delimited file (its header line, after the checks of :mod:`readgaze.io.faults`),
    ``rename``d."""
    names = check_text(path, separator=separator, encoding=encoding).names
    return [(rename or {}).get(c, c) for c in names]


def read_csv(path: str | Path, *, columns: Iterable[str] | None = None, separator: str | None = None,
             schema: Mapping[str, pl.DataType] | None = None,
             schema_overrides: Mapping[str, pl.DataType] | None = None, decimal_comma: bool = False,
             null_values: Iterable[str] = NULL_VALUES, encoding: str = "utf-8", qc: QCLog | None = None,
             step: str = "read_csv", table: str = "rows", rename: Mapping[str, str] | None = None,
             coded: Iterable[str] = ()) -> pl.DataFrame:
    """Read a delimited export (or some of its columns) into memory, parsing the file once.

    Same dtypes as :func:`scan_csv` (whole-file inference, never a 100-row guess), but without a
    separate inference pass: the :data:`HEAD_ROWS` first rows propose a dtype per column, the file is
    parsed once with those dtypes, and a column the head left open (all null there, numbers with
    decimal commas, or numbers but for a few values) is read as text and decided on the whole column in memory.
    If any value does not fit its proposed dtype, the parser stops and the file is read again after
    :func:`infer_schema` (so the result never depends on the head). The file's last column is parsed too (rows cut
    short show there as nulls: :func:`readgaze.io.faults.check_rows`).

    Parameters
    ----------
    columns : iterable of str, optional
        Columns to read (file order is kept; ``rename``d names); default all. Only these (and the last) are parsed.
    separator, schema, schema_overrides, decimal_comma, null_values, encoding, qc, rename, coded
        As in :func:`scan_csv`.

    Returns
    -------
    polars.DataFrame

    Raises
    ------
    ParseError
        As :func:`scan_csv`, or a value that does not fit an explicit ``schema``.
    """
    text = _text(path, separator, encoding, qc, step)
    back = _back(rename)
    if rename:
        columns = None if columns is None else [back.get(c, c) for c in columns]
        schema = None if schema is None else {back.get(c, c): t for c, t in schema.items()}
        schema_overrides = {back.get(c, c): t for c, t in (schema_overrides or {}).items()}
    try:
        df = _read(text, columns, schema, schema_overrides, decimal_comma, null_values)
    except pl.exceptions.PolarsError as e:
        raise _parse_error(e, text) from None
    report_notes(text, qc, step, table, coded)
    return df.rename(dict(rename), strict=False) if rename else df


def _read(text: TextFile, columns, schema, schema_overrides, decimal_comma, null_values) -> pl.DataFrame:
    """:func:`read_csv`'s parse of a checked file."""
    path = text.read_path
    sep, common = _options(path, text.separator, decimal_comma, null_values)
    names = text.names
    wanted = names if columns is None else [c for c in names if c in set(columns)]
    parsed = wanted if names[-1] in wanted else [*wanted, names[-1]]
    if schema is not None:
        return _checked(text, scan_rows(path, dict(schema), common).select(*parsed, EXTRA).collect(), wanted)
    head = _head_text(path, names, common)
    check_comma = sep != "," and not decimal_comma
    open_columns, guess = [], dict.fromkeys(names, pl.String)  # columns not read are never parsed
    on_head = head_flags(head, parsed, decimal_comma, check_comma)
    for c, passed in on_head.items():
        guess[c] = decide(passed)
        if passed["n"] or (guess[c] == pl.String and (passed.get("d") or mostly(passed))):
            open_columns.append(c)
    guess.update(schema_overrides or {})
    open_columns = [c for c in open_columns if c in parsed and c not in (schema_overrides or {})]
    try:
        df = scan_rows(path, guess, common).select(*parsed, EXTRA).collect()
    except pl.exceptions.PolarsError:  # a value past the head does not fit its proposed dtype (or a long row)
        full = infer_schema(path, separator=sep, decimal_comma=decimal_comma, null_values=null_values)
        full.update(schema_overrides or {})
        return _checked(text, scan_rows(path, full, common).select(*parsed, EXTRA).collect(), wanted)
    df = _checked(text, df, parsed)
    for c, passed in on_head.items():  # a Float64 column whose head is whole numbers but for nan/inf/huge ones
        if guess[c] == pl.Float64 and mostly_whole(passed):
            got = df.select([e.alias(t) for t, e in odd_whole(c, False).items() if not t.startswith("__")]
                            ).row(0, named=True)
            flag_odd_whole(text, df.lazy(), c, got["m"], got["kx"], got["kw"], path)
    numeric = [c for c in parsed if df.schema[c] in (pl.Int64, pl.Float64)]
    if numeric:
        floats = [c for c in numeric if df.schema[c] == pl.Float64]
        got = df.select([(pl.col(c) == MISSING_CODE).sum().alias(c) for c in numeric]
                        + [(~pl.col(c).is_finite()).sum().alias(f"\x00{c}") for c in floats]).row(0, named=True)
        for c in numeric:
            if got[c]:
                flag_coded(text, df.lazy(), c, int(got[c]), path)
            if got.get(f"\x00{c}"):
                flag_non_finite(text, df.lazy(), c, int(got[f"\x00{c}"]), path)
    if not open_columns:
        return df.select(wanted)
    tests = {c: column_tests(c, decimal_comma, check_comma, counts=True) for c in open_columns}
    flags = df.select([e.alias(f"{t}\x00{c}") for c, ts in tests.items() for t, e in ts.items()]).row(0, named=True)
    casts = []
    for c in open_columns:
        passed = {t: flags[f"{t}\x00{c}"] for t in tests[c]}
        dtype = decide(passed)
        if dtype == pl.String and check_comma and passed["d"] and passed["c"]:
            row, value = first_row_where(df.lazy(), pl.col(c).str.contains(DECIMAL_COMMA), c, path=path)
            raise ParseError(f"{value!r} is not a number (decimal comma?)", file=text.path, row=row, column=c,
                             options=decimal_comma_options(sep))
        if dtype == pl.String and mostly(passed):
            flag_stray(text, df.lazy(), c, passed)
        if dtype != pl.String:
            num = pl.col(c).str.replace(",", ".", literal=True) if decimal_comma else pl.col(c)
            casts.append((num.str.to_lowercase() == "true" if dtype == pl.Boolean else num.cast(dtype)).alias(c))
    return (df.with_columns(casts) if casts else df).select(wanted)


def _checked(text: TextFile, df: pl.DataFrame, wanted: list[str]) -> pl.DataFrame:
    """``df`` (parsed with the file's last column and :data:`EXTRA`) after :func:`readgaze.io.faults.check_rows` on
    its rows with a field too many, or whose last column is null (too few?), in the ``wanted`` columns."""
    if df[EXTRA].null_count() < df.height:
        check_rows(text, np.flatnonzero(df[EXTRA].is_not_null().to_numpy()), df.height, long=True)
    last = text.names[-1]
    if df[last].null_count():
        rows = np.flatnonzero(df[last].is_null().to_numpy())
        check_rows(text, rows, df.height)
    return df.select(wanted)


def _check_rows(text: TextFile, lf: pl.LazyFrame) -> None:
    """The streaming check of :func:`_checked` for a lazy scan (one pass over the last column and :data:`EXTRA`)."""
    last = text.names[-1]
    counts = lf.select(pl.col(last).null_count().alias("nulls"), pl.col(EXTRA).is_not_null().sum().alias("long"),
                       pl.len().alias("n")).collect(engine="streaming")
    long_rows(text, lf, int(counts["long"][0]))
    if counts["nulls"][0]:
        rows = (lf.select(pl.col(last)).with_row_index("__row").filter(pl.col(last).is_null())
                .select("__row").collect(engine="streaming")["__row"].to_numpy())
        check_rows(text, rows, int(counts["n"][0]))


def _head_text(path: Path, names: list[str], common: dict, head_rows: int = HEAD_ROWS) -> pl.LazyFrame:
    """The file as text (no dtypes), for :func:`head_flags`: parsed from the bytes of its first ``head_rows``
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


def _parse_error(e: Exception, text: TextFile) -> ParseError:
    first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
    path = text.read_path
    if "utf-8" in first.lower() or "utf8" in first.lower():
        raw = Path(path).read_bytes()
        try:
            raw.decode("utf-8")
        except UnicodeDecodeError as bad:
            return ParseError(f"byte {raw[bad.start:bad.start + 1]!r} is not UTF-8 (a Windows export? pass "
                              "encoding='cp1252')", file=text.path,
                              row=user_line(path, raw.count(b"\n", 0, bad.start) - 1))
    if "more fields" in first or "properly escaped" in str(e) or "malformed" in first.lower():
        return locate_parse_error(text, e)
    if "not specified in schema" in first:  # rows wider than the header line from the first row on
        return lone_cr_error(text.read_path, text.path) or ParseError(
            f"the header line has {len(text.names)} column(s) and the rows more: is line 1 a title or a comment "
            "rather than the header? Delete it", file=text.path, row=1)
    column = _column_in(str(e), text.names)
    if column is not None:  # a value that does not fit an explicit dtype
        return ParseError(f"a value does not fit the column's dtype ({first})", file=text.path, column=column)
    return lone_cr_error(text.read_path, text.path) or ParseError(
        f"cannot read as {text.separator!r}-separated text: {first}", file=text.path)


def _column_in(message: str, names: list[str]) -> str | None:
    import re

    hit = re.search(r"at column '([^']+)'", message)
    return hit.group(1) if hit and hit.group(1) in names else None
