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
  numbers (or booleans) but for a few values is read as text, and those values are flagged in the QC log with
  the first one's row (a damaged cell turns a numeric column into text: the flag says so);
* ``inf`` parses as +inf (OneStop ``subtlex_frequency``); quoted labels keep their commas, and doubled
  quotes inside a quoted field are unescaped (a label written with doubled quotes around ``Yes,`` reads as ``"Yes,"``
  with its quotes);
* **decimal commas** (``390,6`` in a ``;``-separated file) raise :class:`ParseError` with a hint,
  or parse with ``decimal_comma=True``.

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
from readgaze.io.faults import (
    Repair,
    TextFile,
    as_utf8,  # noqa: F401 -- re-exported: readgaze.io.csv.as_utf8 is public
    check_rows,
    check_text,
    detect_separator_text,
    locate_parse_error,
    report,
    user_line,
)
from readgaze.qc import QCLog

NULL_VALUES = (".",)
"""Data Viewer's missing-value marker; empty fields are null anyway."""

HEAD_ROWS = 10_000
"""Rows :func:`infer_schema` tests before the whole-file pass (a speed-up only; never decides alone)."""

STRAY_SHARE = 0.1
"""A column whose non-null values are numbers (or booleans) but for at most this share (and at least 5 of them
are) is flagged: its other values are read as text, and the QC log names the first (a damaged cell?)."""

_SEPARATORS = (",", "\t", ";")
_DECIMAL_COMMA = r"^\s*[-+]?\d+,\d+\s*$"
_NUMBER_OR_DECIMAL_COMMA = r"^\s*[-+]?(?:\d+(?:[.,]\d*)?|[.,]\d+)(?:[eE][-+]?\d+)?\s*$"
"""A number with a decimal point or a decimal comma: a column of these with one comma is a locale fault."""
STRAY = "values that are not numbers in a numeric column (read as text)"
STRAY_BOOL = "values that are not True/False in a boolean column (read as text)"
ODD_WHOLE = "numbers that are not whole in a column of whole numbers (read as Float64)"
MISSING_CODE = -32768.0
"""EyeLink's "no value" (gaze lost): in a report's numeric column it is flagged (:data:`CODED`), never averaged
unawares."""
CODED = "EyeLink's missing-value code -32768 in a numeric column (read as a number)"
NON_FINITE = "non-finite numbers (NaN, inf) in a numeric column"


def decimal_comma_hint(separator: str) -> str:
    """The hint of a "not a number" error on a value like ``390,6``: the Python and the ``readgaze prep`` spelling."""
    named = {"\t": "tab", ";": "';'", " ": "space"}.get(separator, repr(separator))
    return (f"decimal comma? try separator={separator!r} with decimal_comma=True; in readgaze prep: --separator "
            f"{named} --decimal-comma")


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


def _text(path, separator, encoding, qc, step, table) -> TextFile:
    text = check_text(path, separator=separator, encoding=encoding)
    report(text, qc, step, table)
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
    text = _text(path, separator, encoding, qc, step, table)
    back = _back(rename)
    schema = None if schema is None else {back.get(c, c): t for c, t in schema.items()}
    schema_overrides = {back.get(c, c): t for c, t in (schema_overrides or {}).items()}
    sep, common = _options(text.read_path, text.separator, decimal_comma, null_values)
    try:
        if schema is None:
            schema = infer_schema(text.read_path, separator=sep, decimal_comma=decimal_comma, null_values=null_values)
            schema.update(schema_overrides or {})
        else:
            _check_rows(text, _scan(text.read_path, dict(schema), common))
        lf = _scan(text.read_path, dict(schema), common).drop(EXTRA)
        lf.collect_schema()
    except pl.exceptions.PolarsError as e:
        raise _parse_error(e, text) from None
    _report_notes(text, qc, step, table, coded)
    return lf.rename(dict(rename), strict=False) if rename else lf


def _back(rename: Mapping[str, str] | None) -> dict[str, str]:
    """``{new name: file column}`` of a ``rename`` map."""
    return {new: old for old, new in (rename or {}).items()}


EXTRA = "\x00extra"
"""A column past the last one: polars reads a row's fields beyond the header into it (and, parsing only some
columns, would otherwise drop them silently), so a row with too many fields shows as a value here."""


def _scan(path, schema: Mapping[str, pl.DataType], common: dict) -> pl.LazyFrame:
    """The file's data rows under ``schema`` (every column, in file order) plus :data:`EXTRA`."""
    return pl.scan_csv(path, has_header=False, skip_rows=1, schema={**schema, EXTRA: pl.String},
                       missing_columns="insert", **common)


def _long_rows(text: TextFile, lf: pl.LazyFrame, n_extra: int | None = None) -> None:
    """Raise on the first row with a field past the last column (``lf`` from :func:`_scan`)."""
    if n_extra == 0:
        return
    rows = (lf.select(pl.col(EXTRA)).with_row_index("__row").filter(pl.col(EXTRA).is_not_null())
            .select("__row").collect(engine="streaming")["__row"].to_numpy())
    if len(rows):
        check_rows(text, rows, text.n_rows, long=True)


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
    text = _text(path, separator, encoding, qc, step, table)
    back = _back(rename)
    if rename:
        columns = None if columns is None else [back.get(c, c) for c in columns]
        schema = None if schema is None else {back.get(c, c): t for c, t in schema.items()}
        schema_overrides = {back.get(c, c): t for c, t in (schema_overrides or {}).items()}
    try:
        df = _read(text, columns, schema, schema_overrides, decimal_comma, null_values)
    except pl.exceptions.PolarsError as e:
        raise _parse_error(e, text) from None
    _report_notes(text, qc, step, table, coded)
    return df.rename(dict(rename), strict=False) if rename else df


def _read(text: TextFile, columns, schema, schema_overrides, decimal_comma, null_values) -> pl.DataFrame:
    """:func:`read_csv`'s parse of a checked file."""
    path = text.read_path
    sep, common = _options(path, text.separator, decimal_comma, null_values)
    names = text.names
    wanted = names if columns is None else [c for c in names if c in set(columns)]
    parsed = wanted if names[-1] in wanted else [*wanted, names[-1]]
    if schema is not None:
        return _checked(text, _scan(path, dict(schema), common).select(*parsed, EXTRA).collect(), wanted)
    head = _head_text(path, names, common)
    check_comma = sep != "," and not decimal_comma
    open_columns, guess = [], dict.fromkeys(names, pl.String)  # columns not read are never parsed
    head_flags = _head_flags(head, parsed, decimal_comma, check_comma)
    for c, passed in head_flags.items():
        guess[c] = _decide(passed)
        if passed["n"] or (guess[c] == pl.String and (passed.get("d") or _mostly(passed))):
            open_columns.append(c)
    guess.update(schema_overrides or {})
    open_columns = [c for c in open_columns if c in parsed and c not in (schema_overrides or {})]
    try:
        df = _scan(path, guess, common).select(*parsed, EXTRA).collect()
    except pl.exceptions.PolarsError:  # a value past the head does not fit its proposed dtype (or a long row)
        full = infer_schema(path, separator=sep, decimal_comma=decimal_comma, null_values=null_values)
        full.update(schema_overrides or {})
        return _checked(text, _scan(path, full, common).select(*parsed, EXTRA).collect(), wanted)
    df = _checked(text, df, parsed)
    for c, passed in head_flags.items():  # a Float64 column whose head is whole numbers but for nan/inf/huge ones
        if guess[c] == pl.Float64 and _mostly_whole(passed):
            got = df.select([e.alias(t) for t, e in _odd_whole(c, False).items() if not t.startswith("__")]
                            ).row(0, named=True)
            _flag_odd_whole(text, df.lazy(), c, got["m"], got["kx"], got["kw"], path)
    numeric = [c for c in parsed if df.schema[c] in (pl.Int64, pl.Float64)]
    if numeric:
        floats = [c for c in numeric if df.schema[c] == pl.Float64]
        got = df.select([(pl.col(c) == MISSING_CODE).sum().alias(c) for c in numeric]
                        + [(~pl.col(c).is_finite()).sum().alias(f"\x00{c}") for c in floats]).row(0, named=True)
        for c in numeric:
            if got[c]:
                _flag_coded(text, df.lazy(), c, int(got[c]), path)
            if got.get(f"\x00{c}"):
                _flag_non_finite(text, df.lazy(), c, int(got[f"\x00{c}"]), path)
    if not open_columns:
        return df.select(wanted)
    tests = {c: _column_tests(c, decimal_comma, check_comma, counts=True) for c in open_columns}
    flags = df.select([e.alias(f"{t}\x00{c}") for c, ts in tests.items() for t, e in ts.items()]).row(0, named=True)
    casts = []
    for c in open_columns:
        passed = {t: flags[f"{t}\x00{c}"] for t in tests[c]}
        dtype = _decide(passed)
        if dtype == pl.String and check_comma and passed["d"] and passed["c"]:
            row, value = first_row_where(df.lazy(), pl.col(c).str.contains(_DECIMAL_COMMA), c, path=path)
            raise ParseError(f"{value!r} is not a number ({decimal_comma_hint(sep)})", file=text.path, row=row,
                             column=c)
        if dtype == pl.String and _mostly(passed):
            _flag_stray(text, df.lazy(), c, passed)
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
    _long_rows(text, lf, int(counts["long"][0]))
    if counts["nulls"][0]:
        rows = (lf.select(pl.col(last)).with_row_index("__row").filter(pl.col(last).is_null())
                .select("__row").collect(engine="streaming")["__row"].to_numpy())
        check_rows(text, rows, int(counts["n"][0]))


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
                head_rows: int = HEAD_ROWS) -> dict[str, dict[str, object]]:
    """Per column, which :func:`_column_tests` pass on the first ``head_rows`` rows; then, for the columns that are
    text or floats there (a stray value may have made them so), the counts (``m``, ``kf``, ``kb``, ``kx``, ``kw``)."""
    head = text.head(head_rows).collect()
    tests = {c: _column_tests(c, decimal_comma, check_comma) for c in names}
    row = head.select([e.alias(f"{t}{i}") for i, c in enumerate(names) for t, e in tests[c].items()]).row(0, named=True)
    flags = {c: {t: row[f"{t}{i}"] for t in tests[c]} for i, c in enumerate(names)}
    odd = [c for c in names if not flags[c]["n"] and not flags[c]["i"] and not flags[c]["b"]]
    if odd:
        counts = {c: {t: e for t, e in _column_tests(c, decimal_comma, False, counts=True).items()
                      if t in ("m", "kf", "kb", "kx", "kw")} for c in odd}
        got = head.select([e.alias(f"{t}\x00{c}") for c in odd for t, e in counts[c].items()]).row(0, named=True)
        for c in odd:
            flags[c].update({t: got[f"{t}\x00{c}"] for t in counts[c]})
    return flags


def _decide(passed: dict) -> pl.DataType:
    """Dtype from test results: all null -> String; all bool -> Boolean; all int -> Int64; all number
    -> Float64; else String."""
    if passed["n"]:
        return pl.String
    for t, dtype in (("b", pl.Boolean), ("i", pl.Int64), ("f", pl.Float64)):
        if passed[t]:
            return dtype
    return pl.String


def _mostly(passed: dict) -> bool:
    """Numbers (or booleans) but for a few values (:data:`STRAY_SHARE`): a damaged cell in a numeric column?"""
    m = int(passed.get("m") or 0)
    return any(0 < int(passed.get(k) or 0) <= STRAY_SHARE * m and m - int(passed.get(k) or 0) >= 5
               for k in ("kf", "kb"))


def _flag_stray(text: TextFile, lf: pl.LazyFrame, c: str, passed: dict) -> None:
    """Note (for the QC log) that column ``c`` was read as text because of a few values, naming the first."""
    kf, kb, m = int(passed.get("kf") or 0), int(passed.get("kb") or 0), int(passed.get("m") or 0)
    numbers = 0 < kf <= STRAY_SHARE * m and m - kf >= 5
    bad = (pl.col(c).str.strip_chars().cast(pl.Float64, strict=False).is_null() if numbers
           else ~pl.col(c).str.to_lowercase().is_in(["true", "false"])) & pl.col(c).is_not_null()
    row, value = first_row_where(lf, bad, c, path=text.read_path)
    k = kf if numbers else kb
    what = "numbers" if numbers else "True/False"
    note = Repair(STRAY if numbers else STRAY_BOOL, k, row, "flagged")
    detail = (f"column {c}: {k} of {m:,} values are not {what} (first {value!r}, a damaged cell?); the column is "
              "read as text")
    _add_note(text, note, detail)


def _add_note(text: TextFile, note: Repair, detail: str) -> None:
    if all(d != detail for _, d in text.notes):
        text.notes.append((note, detail))


def _report_notes(text: TextFile, qc: QCLog | None, step: str, table: str, coded: Iterable[str] = ()) -> None:
    """The column flags of :func:`_flag_stray` and the others: in ``qc`` (once per step and detail), else warned once.
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
    column = _column_in(str(e), text.names)
    if column is not None:  # a value that does not fit an explicit dtype
        return ParseError(f"a value does not fit the column's dtype ({first})", file=text.path, column=column)
    return ParseError(f"cannot read as {text.separator!r}-separated text: {first}", file=text.path)


def _column_in(message: str, names: list[str]) -> str | None:
    import re

    hit = re.search(r"at column '([^']+)'", message)
    return hit.group(1) if hit and hit.group(1) in names else None


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
    from readgaze.io.faults import text_file

    checked = text_file(path, separator) or check_text(path, separator=separator)
    names = list(checked.names)
    text = _scan(path, dict.fromkeys(names, pl.String), {"separator": separator, "null_values": list(null_values),
                                                          "quote_char": '"', "raise_if_empty": True,
                                                          "encoding": "utf8"})
    check_comma = separator != "," and not decimal_comma
    tests = {c: _column_tests(c, decimal_comma, check_comma, counts=True) for c in names}
    head = _head_flags(text, names, decimal_comma, check_comma, head_rows)
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
    _long_rows(checked, text, int(whole["__long"]))
    for i, c, t in todo:
        flags[c][t] = whole[f"{t}{i}"]
    if whole["__last_nulls"]:
        rows = (text.select(pl.col(names[-1])).with_row_index("__row").filter(pl.col(names[-1]).is_null())
                .select("__row").collect(engine="streaming")["__row"].to_numpy())
        check_rows(checked, rows, int(whole["__rows"]))
    # a column of numbers (or booleans) on the head that is text on the file, or mostly numbers on a text head:
    # count its values (a second pass, over these columns only; none in a clean file)
    recount = [(i, c) for i, c in enumerate(names) if _decide(flags[c]) == pl.String and not flags[c]["n"]
               and (_mostly(head[c]) or any(head[c][t] for t in ("b", "i", "f")))]
    floats = [(i, c) for i, c in enumerate(names) if _decide(flags[c]) == pl.Float64
              and (head[c]["i"] or _mostly_whole(head[c]))]
    if recount or floats:
        got = text.select([tests[c][t].alias(f"{t}{i}") for i, c in recount for t in ("m", "kf", "kb")]
                          + [e.alias(f"{t}{i}") for i, c in floats for t, e in _odd_whole(c).items()
                             if not t.startswith("__")]
                          ).collect(engine="streaming").row(0, named=True)
        for i, c in recount:
            flags[c].update({t: got[f"{t}{i}"] for t in ("m", "kf", "kb")})
        for i, c in floats:
            _flag_odd_whole(checked, text, c, got[f"m{i}"], got[f"kx{i}"], got[f"kw{i}"], path)
    schema: dict[str, pl.DataType] = {}
    for c in names:
        f = flags[c]
        schema[c] = _decide(f)
        if schema[c] in (pl.Int64, pl.Float64) and f.get("ke"):
            _flag_coded(checked, text, c, int(f["ke"]), path)
        if schema[c] == pl.Float64 and f.get("ki"):
            _flag_non_finite(checked, text, c, int(f["ki"]), path)
        if schema[c] == pl.String and not f["n"]:
            if check_comma and f["d"] and f["c"]:
                row, value = first_row_where(text, pl.col(c).str.contains(_DECIMAL_COMMA), c, path=path)
                raise ParseError(f"{value!r} is not a number ({decimal_comma_hint(separator)})", file=checked.path,
                                 row=row, column=c)
            if _mostly(f):
                _flag_stray(checked, text, c, f)
    return schema


def _odd_whole(c: str, text: bool = True) -> dict[str, pl.Expr]:
    """Counts of a column of whole numbers but for a few: ``m`` values, ``kx`` non-finite or huge ones, ``kw`` finite
    ones that are not whole (and the row test ``__bad``). ``text``: the column is text (else Float64)."""
    number = pl.col(c).str.strip_chars().cast(pl.Float64, strict=False) if text else pl.col(c)
    bad = pl.col(c).is_not_null() & (~number.is_finite() | (number.abs() >= 2.0 ** 53)).fill_null(False)
    frac = (number.is_finite() & (number != number.round())).fill_null(False)
    return {"m": pl.col(c).is_not_null().sum(), "kx": bad.sum(), "kw": frac.sum(), "__bad": bad, "__frac": frac}


def _flag_non_finite(text: TextFile, lf: pl.LazyFrame, c: str, k: int, path) -> None:
    """Note a numeric column holding NaN or infinity (kept: OneStop's ``subtlex_frequency`` has inf), naming the
    first cell: a mean over it is not finite."""
    number = pl.col(c).str.strip_chars().cast(pl.Float64, strict=False) if lf.collect_schema()[c] == pl.String \
        else pl.col(c)
    row, value = first_row_where(lf, (number.is_nan() | number.is_infinite()).fill_null(False), c, path=path)
    _add_note(text, Repair(NON_FINITE, k, row, "flagged"),
              f"column {c}: {k} value(s) NaN or infinite (first {value!r}); kept")


def _mostly_whole(passed: dict) -> bool:
    """Whole numbers on the head but for a few (:data:`STRAY_SHARE`)."""
    k, m = int(passed["kx"]) + int(passed["kw"]), int(passed["m"])
    return 0 < k <= STRAY_SHARE * m and m - k >= 5


def _flag_coded(text: TextFile, lf: pl.LazyFrame, c: str, k: int, path) -> None:
    """Note a numeric column holding EyeLink's missing-value code, naming the first cell."""
    number = pl.col(c).str.strip_chars().cast(pl.Float64, strict=False) if lf.collect_schema()[c] == pl.String \
        else pl.col(c)
    row, _ = first_row_where(lf, (number == MISSING_CODE).fill_null(False), c, path=path)
    _add_note(text, Repair(CODED, k, row, "flagged"),
              f"column {c}: {k} value(s) -32768, EyeLink's missing-value code (Data Viewer writes '.'); read as "
              "numbers")


def _flag_odd_whole(text: TextFile, lf: pl.LazyFrame, c: str, m: int, kx: int, kw: int, path) -> None:
    """Note a column of whole numbers but for a few that are not (fractions, NaN, infinity, huge; read as Float64),
    naming the first."""
    k = kx + kw
    if not 0 < k <= STRAY_SHARE * m or m - k < 5:
        return
    odd = _odd_whole(c, lf.collect_schema()[c] == pl.String)
    row, value = first_row_where(lf, odd["__bad"] | odd["__frac"], c, path=path)
    _add_note(text, Repair(ODD_WHOLE, k, row, "flagged"),
              f"column {c}: {k} of {m:,} values are not finite whole numbers (first {value!r}, a damaged cell?); "
              "the column is read as Float64")


def _column_tests(c: str, decimal_comma: bool, check_comma: bool, counts: bool = False) -> dict[str, pl.Expr]:
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
        tests["d"] = (col.str.contains(_NUMBER_OR_DECIMAL_COMMA) | col.is_null()).all()
        tests["c"] = col.str.contains(_DECIMAL_COMMA).any()
    if counts:
        number = num.str.strip_chars().cast(pl.Float64, strict=False)
        tests.update({
            "m": pl.len() - nulls, "kf": number.null_count() - nulls, "kb": (col.is_not_null() & ~is_bool).sum(),
            "kx": (col.is_not_null() & (~number.is_finite() | (number.abs() >= 2.0 ** 53)).fill_null(False)).sum(),
            "kw": (number.is_finite() & (number != number.round())).fill_null(False).sum(),
            "ke": (as_float == MISSING_CODE).fill_null(False).sum(),
            "ki": (as_float.is_nan() | as_float.is_infinite()).fill_null(False).sum()})
    return tests


def first_row_where(lf: pl.LazyFrame, predicate: pl.Expr, column: str, *, path=None) -> tuple[int, object]:
    """Return ``(row, value)`` of the first row of a raw scan matching ``predicate``.

    ``row`` is the editor line number (header = row 1) in the user's file: ``path`` (the user's file or the copy
    that was scanned, :mod:`readgaze.io.faults`) maps it through the lines a repair dropped. ``lf`` must be the
    unfiltered scan of the file. Returns ``(0, None)`` when no row matches.
    """
    hit = (lf.with_row_index("__row").filter(predicate).select("__row", column)
           .head(1).collect())
    if hit.is_empty():
        return 0, None
    row = int(hit["__row"][0])
    return (user_line(path, row) if path is not None else row + 2), hit[column][0]


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
                hint = " (decimal comma? pass decimal_comma=True)" if "," in str(value) else ""
                raise ParseError(f"got {value!r}, expected {what}{hint}", file=path, row=row, column=c)
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


def cells(lf: pl.LazyFrame, path, columns: Iterable[str], bad, what: str, error=ParseError) -> None:
    """Raise ``error`` naming the first row where ``bad(pl.col(c))`` holds for one of ``columns`` (one pass over
    them when none does)."""
    have = set(lf.collect_schema().names())
    columns = [c for c in columns if c in have]
    if not columns:
        return
    found = lf.select([bad(pl.col(c)).fill_null(False).any().alias(c) for c in columns]).collect().row(0, named=True)
    for c in columns:
        if found[c]:
            row, value = first_row_where(lf, bad(pl.col(c)).fill_null(False), c, path=path)
            raise error(f"got {value!r}, expected {what}", file=path, row=row, column=c)


