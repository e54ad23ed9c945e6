"""A seeded mutator of real input files: damage as it happens in labs, one fault per variant.

Each operator takes the file's bytes and a ``random.Random`` and returns the damaged bytes and a short
description (``None`` when the operator does not apply to the file, e.g. a quote operator on a file without
fields). Operators work on bytes, so encodings, line ends, NUL bytes and byte-order marks are damaged as
they are on disk: a truncated copy, a hand edit in a spreadsheet, a re-export with another delimiter or
encoding, a tracker hiccup, two exports concatenated.

Delimited files (``.csv``/``.tsv``) and EyeLink ``.asc`` files have their own operator sets
(:data:`CSV_OPERATORS`, :data:`ASC_OPERATORS`); :func:`mutate` picks one by seed.
"""

from __future__ import annotations

import csv
import io
import random
from collections.abc import Callable

BOM = b"\xef\xbb\xbf"
NON_NUMBERS = ("abc", "--", "637,6", "1.2.3", "NA", "?", "12a", "x")
ODD_NUMBERS = ("inf", "-inf", "nan", "NaN", "1e400", "-32768", "99999999999999999999", "0.0000001")
"""Numbers that do not fit a column of real measurements: non-finite, overflowing, EyeLink's missing code, or a
fraction in a column of whole numbers. (A valid-looking value such as -1 in a free column fits the format: no reader
can tell it from the truth, so it is not drawn.)"""
IMPLAUSIBLE = ("1e308", "-1e9", "-32768", "nan", "inf")
"""Values for the cells of a reader's mapped columns (coordinates, durations, ids): each breaks a stated rule (and
``-250`` for the columns that cannot be negative: durations, ids, box edges on the screen)."""


# --- delimited text ------------------------------------------------------------------------------------------

def separator_of(data: bytes) -> str:
    head = data.split(b"\n", 1)[0].decode("utf-8", "replace")
    counts = {s: head.count(s) for s in (",", "\t", ";")}
    return max(counts, key=counts.get)


def _lines(data: bytes) -> list[bytes]:
    """Lines with their line ends (a final line without one keeps none)."""
    return data.splitlines(keepends=True)


def _end(line: bytes) -> bytes:
    return line[len(line.rstrip(b"\r\n")):]


def _fields(line: bytes, sep: str) -> list[str]:
    text = line.rstrip(b"\r\n").decode("utf-8", "replace")
    return next(csv.reader(io.StringIO(text), delimiter=sep)) if text else []


def _join(fields: list[str], sep: str, end: bytes) -> bytes:
    out = io.StringIO()
    csv.writer(out, delimiter=sep, lineterminator="", quoting=csv.QUOTE_MINIMAL).writerow(fields)
    return out.getvalue().encode("utf-8") + end


def _data_line(lines: list[bytes], rng: random.Random) -> int | None:
    if len(lines) < 2:
        return None
    return rng.randrange(1, len(lines))


def _numeric_columns(lines: list[bytes], sep: str) -> list[int]:
    """Columns whose values on up to 50 data lines are all numbers (or Data Viewer's '.' / empty)."""
    rows = [_fields(line, sep) for line in lines[1:51]]
    width = len(_fields(lines[0], sep))
    out = []
    for j in range(width):
        values = [r[j] for r in rows if len(r) > j and r[j] not in ("", ".")]
        if values and all(_is_number(v) for v in values):
            out.append(j)
    return out


def _is_number(text: str) -> bool:
    try:
        float(text)
        return True
    except ValueError:
        return False


def _edit_row(data: bytes, rng: random.Random, edit: Callable[[list[str]], str | None]) -> tuple[bytes, str] | None:
    """One random data line with its fields changed by ``edit`` (in place); ``edit`` returns what follows "line N" in
    the description, or None to leave the file as it is."""
    lines, sep = _lines(data), separator_of(data)
    i = _data_line(lines, rng)
    if i is None:
        return None
    fields = _fields(lines[i], sep)
    what = edit(fields)
    if what is None:
        return None
    lines[i] = _join(fields, sep, _end(lines[i]))
    return b"".join(lines), f"line {i + 1}{what}"


def _set_cell(data: bytes, rng: random.Random, value_of: Callable[[str], str], columns: str = "numeric",
              named: tuple[str, ...] = ()) -> tuple[bytes, str] | None:
    lines = _lines(data)
    sep = separator_of(data)
    header = _fields(lines[0], sep)
    if columns == "numeric":
        candidates = _numeric_columns(lines, sep)
    elif columns == "named":
        candidates = [header.index(n) for n in named if n in header]
    else:
        candidates = list(range(len(header)))

    def edit(fields: list[str]) -> str | None:
        if not candidates:
            return None
        j = rng.choice(candidates)
        if len(fields) <= j:
            return None
        old = fields[j]
        fields[j] = value_of(old)
        return None if fields[j] == old else f", column {header[j]}: {old!r} -> {fields[j]!r}"

    return _edit_row(data, rng, edit)


def delete_cell(data, rng):
    """A row with one field too few (a cell deleted in a spreadsheet, the row not padded)."""

    def edit(fields: list[str]) -> str | None:
        if len(fields) < 2:
            return None
        j = rng.randrange(len(fields))
        del fields[j]
        return f": field {j + 1} deleted"

    return _edit_row(data, rng, edit)


def extra_field(data, rng):
    """A row with one field too many (an unquoted separator typed into a value)."""

    def edit(fields: list[str]) -> str:
        j = rng.randrange(len(fields)) if fields else 0
        fields.insert(j, rng.choice(["x", "", "3"]))
        return f": a field inserted before field {j + 1}"

    return _edit_row(data, rng, edit)


def unquoted_separator(data, rng):
    """A separator inside a text value, written without quotes (a label ``however,``)."""
    lines, sep = _lines(data), separator_of(data)
    i = _data_line(lines, rng)
    if i is None:
        return None
    fields = _fields(lines[i], sep)
    texts = [j for j, v in enumerate(fields) if v and not _is_number(v) and sep not in v and '"' not in v]
    if not texts:
        return None
    j = rng.choice(texts)
    fields[j] = fields[j] + "\x00SEP"  # written unquoted: the other fields as the writer quotes them
    lines[i] = _join(fields, sep, _end(lines[i])).replace(b"\x00SEP", sep.encode())
    return b"".join(lines), f"line {i + 1}: an unquoted {sep!r} in field {j + 1}"


def truncate(data, rng):
    """The file cut at a random byte (an interrupted copy); sometimes exactly at a line end."""
    if len(data) < 10:
        return None
    cut = rng.randrange(len(data) // 2, len(data) - 1)
    if rng.random() < 0.3:  # at a line end
        cut = data.rfind(b"\n", 0, cut) + 1
        if cut <= data.find(b"\n") + 1:
            return None
        return data[:cut], f"cut at byte {cut} of {len(data)}, at a line end"
    if data[cut - 1:cut] == b"\n":  # a random byte that happens to follow a line break: a shorter valid file too
        return data[:cut], f"cut at byte {cut} of {len(data)}, at a line end"
    return data[:cut], f"cut at byte {cut} of {len(data)}"


def blank_lines(data, rng):
    """Blank lines (LF or CRLF) between rows or at the end."""
    lines = _lines(data)
    i = rng.randrange(1, len(lines) + 1)
    blank = rng.choice([b"\n", b"\r\n", b"\n\n"])
    if i == len(lines) and not lines[-1].endswith(b"\n"):
        blank = b"\n" + blank
    lines.insert(i, blank)
    return b"".join(lines), f"blank line(s) {blank!r} before line {i + 1}"


def nul_padding(data, rng):
    """NUL bytes at the end of the file (a write interrupted after the file was extended)."""
    n = rng.choice([1, 16, 4096])
    return data + b"\x00" * n, f"{n} NUL bytes appended"


def _typed_into_field(data, rng, byte: bytes, what: str):
    """``byte`` typed at a random place of one data line; ``what`` names it in the description."""
    lines = _lines(data)
    i = _data_line(lines, rng)
    if i is None:
        return None
    line = lines[i].rstrip(b"\r\n")
    k = rng.randrange(len(line) + 1) if line else 0
    lines[i] = line[:k] + byte + line[k:] + _end(lines[i])
    return b"".join(lines), f"line {i + 1}: {what} at byte {k}"


def nul_in_field(data, rng):
    """A NUL byte inside a field."""
    return _typed_into_field(data, rng, b"\x00", "NUL")


def concatenated(data, rng):
    """Two exports concatenated: the file, then a byte-order mark, (usually) the header and some of its rows again."""
    lines = _lines(data)
    if len(lines) < 3:
        return None
    body = data if data.endswith(b"\n") else data + b"\n"
    rows = lines[1:rng.randrange(2, len(lines))]
    with_header = rng.random() < 0.7
    extra = BOM + (lines[0].lstrip(BOM) if with_header else b"") + b"".join(rows)
    return body + extra, f"a second export appended ({len(rows)} rows, BOM{', header' if with_header else ''})"


def bom_mid_file(data, rng):
    """A byte-order mark at the start of one data line."""
    lines = _lines(data)
    i = _data_line(lines, rng)
    if i is None:
        return None
    lines[i] = BOM + lines[i]
    return b"".join(lines), f"line {i + 1}: BOM at its start"


def repeated_header(data, rng):
    """The header line repeated in the middle of the file."""
    lines = _lines(data)
    i = _data_line(lines, rng)
    if i is None:
        return None
    header = lines[0].lstrip(BOM)
    lines.insert(i, header if header.endswith(b"\n") else header + b"\n")
    return b"".join(lines), f"header repeated before line {i + 1}"


def non_number(data, rng):
    """A number replaced by text (a hand edit, a locale's decimal comma, a placeholder)."""
    return _set_cell(data, rng, lambda old: rng.choice(NON_NUMBERS))


def odd_number(data, rng):
    """A number replaced by a non-finite, overflowing or missing-code number (a huge whole number or a fraction only
    in a column of whole numbers: in a column of fractions they are valid values)."""
    whole = ("99999999999999999999", "0.0000001")
    return _set_cell(data, rng, lambda old: rng.choice([v for v in ODD_NUMBERS
                                                        if v not in whole or old.lstrip("-").isdigit()]))


def empty_cell(data, rng):
    """A cell emptied (``""`` or Data Viewer's ``.``)."""
    return _set_cell(data, rng, lambda old: rng.choice(["", "."]), columns="any")


def key_cell(keys: tuple[str, ...]):
    def damage(data, rng):
        """A key cell (participant, trial) emptied or changed to something no trial has."""
        return _set_cell(data, rng, lambda old: rng.choice(["", ".", "abc", " " + old, old + " ", "nan", "-32768",
                                                            old + "\t", "\x00" + old]),
                         columns="named", named=keys)
    damage.__name__ = "key_cell"
    return damage


def role_cell(columns: tuple[str, ...], positive: tuple[str, ...] = ()):
    def damage(data, rng):
        """A cell of a column the reader maps (a coordinate, a duration, an id) set to a value no real one takes."""
        lines = _lines(data)
        header = _fields(lines[0].lstrip(BOM), separator_of(data))
        named = tuple(c for c in columns + positive if c in header)
        if not named:
            return None
        column = rng.choice(named)
        values = IMPLAUSIBLE + (("-250",) if column in positive else ())
        return _set_cell(data, rng, lambda old: rng.choice(values), columns="named", named=(column,))
    damage.__name__ = "role_cell"
    return damage


def drop_column(data, rng):
    """A column deleted (header and every row)."""
    lines, sep = _lines(data), separator_of(data)
    width = len(_fields(lines[0], sep))
    if width < 2:
        return None
    j = rng.randrange(width)
    name = _fields(lines[0], sep)[j]
    out = []
    for line in lines:
        fields = _fields(line, sep)
        if len(fields) > j:
            del fields[j]
        out.append(_join(fields, sep, _end(line)) if line.strip() else line)
    return b"".join(out), f"column {name!r} deleted"


def rename_column(data, rng):
    """A column renamed in the header (a re-export with another column name)."""
    lines, sep = _lines(data), separator_of(data)
    fields = _fields(lines[0].lstrip(BOM), sep)
    j = rng.randrange(len(fields))
    old = fields[j]
    fields[j] = rng.choice([old.lower(), old + "_1", "Column" + str(j + 1)])
    lines[0] = _join(fields, sep, _end(lines[0]))
    return b"".join(lines), f"column {old!r} renamed {fields[j]!r}"


def swap_columns(data, rng):
    """Two columns swapped, header and values (a re-export with another column order)."""
    lines, sep = _lines(data), separator_of(data)
    width = len(_fields(lines[0], sep))
    if width < 2:
        return None
    a, b = rng.sample(range(width), 2)
    out = []
    for line in lines:
        fields = _fields(line, sep)
        if len(fields) > max(a, b):
            fields[a], fields[b] = fields[b], fields[a]
        out.append(_join(fields, sep, _end(line)) if line.strip() else line)
    return b"".join(out), f"columns {a + 1} and {b + 1} swapped"


def header_only(data, rng):
    """Only the header line (an export of an empty selection)."""
    return _lines(data)[0], "header only"


def latin1_byte(data, rng):
    """One character written in latin-1 (a byte that is not UTF-8)."""
    lines = _lines(data)
    i = _data_line(lines, rng)
    if i is None:
        return None
    line = lines[i]
    k = rng.randrange(max(len(line.rstrip(b"\r\n")), 1))
    lines[i] = line[:k] + b"\xe9" + line[k:]
    return b"".join(lines), f"line {i + 1}: byte 0xE9 inserted"


def line_ends(data, rng):
    """Line ends changed: CRLF, lone CR (old Mac) or a mix."""
    how = rng.choice(["crlf", "cr", "mix"])
    lines = _lines(data)
    bare = [line.rstrip(b"\r\n") for line in lines]
    ends = {"crlf": [b"\r\n"] * len(lines), "cr": [b"\r"] * len(lines),
            "mix": [rng.choice([b"\n", b"\r\n", b"\r"]) for _ in lines]}[how]
    return b"".join(b + e for b, e in zip(bare, ends)), f"line ends {how}"


def trailing_separator(data, rng):
    """A separator at the end of data rows (a spreadsheet's empty last column)."""
    lines, sep = _lines(data), separator_of(data)
    every = rng.random() < 0.5
    out = [lines[0]] + [line.rstrip(b"\r\n") + sep.encode() + _end(line)
                        if (every or rng.random() < 0.05) and line.strip() else line for line in lines[1:]]
    return b"".join(out), f"trailing separator on {'every' if every else 'some'} data row(s)"


def stray_quote(data, rng):
    """A double quote typed into a field."""
    return _typed_into_field(data, rng, b'"', "a quote")


def tab_in_field(data, rng):
    """A TAB typed into a field of a comma or semicolon file (in a TAB file a comma is ordinary text)."""
    sep = separator_of(data)
    if sep == "\t":
        return None
    return _typed_into_field(data, rng, b"\t", repr(b"\t"))


def duplicate_row(data, rng):
    """A data row written twice."""
    lines = _lines(data)
    i = _data_line(lines, rng)
    if i is None:
        return None
    row = lines[i] if lines[i].endswith(b"\n") else lines[i] + b"\n"
    lines.insert(i, row)
    return b"".join(lines), f"line {i + 1} repeated"


def other_separator(data, rng):
    """The whole file re-exported with another separator (the reader should detect it)."""
    sep = separator_of(data)
    new = rng.choice([s for s in (",", "\t", ";") if s != sep])
    out = []
    for line in _lines(data):
        out.append(_join(_fields(line, sep), new, _end(line)) if line.strip() else line)
    return b"".join(out), f"separator {sep!r} -> {new!r}"


def duplicate_column(data, rng):
    """A column pasted a second time at the end, under the same name, its values changed (two exports pasted side
    by side): which one is meant?"""
    lines, sep = _lines(data), separator_of(data)
    header = _fields(lines[0].lstrip(BOM), sep)
    if not header:
        return None
    j = rng.randrange(len(header))
    out = [_join(header + [header[j]], sep, _end(lines[0]))]
    for line in lines[1:]:
        fields = _fields(line, sep)
        out.append(_join(fields + ["0"], sep, _end(line)) if line.strip() else line)
    return b"".join(out), f"column {header[j]!r} pasted twice"


def swap_rows(data, rng):
    """Two neighbouring data rows swapped (a sort in a spreadsheet, a hand edit): times and indices out of order."""
    lines = _lines(data)
    if len(lines) < 4:
        return None
    i = rng.randrange(1, len(lines) - 2)
    if lines[i] == lines[i + 1] or not lines[i + 1].endswith(b"\n"):
        return None
    lines[i], lines[i + 1] = lines[i + 1], lines[i]
    return b"".join(lines), f"lines {i + 1} and {i + 2} swapped"


def utf16(data, rng):
    """The file re-saved as UTF-16 with its byte-order mark (a spreadsheet's "Unicode text")."""
    return data.decode("utf-8", "replace").encode(rng.choice(["utf-16", "utf-16-le"])), "re-encoded as UTF-16"


def padded_number(data, rng):
    """A number with spaces around it (typed by hand into a spreadsheet cell)."""
    return _set_cell(data, rng, lambda old: rng.choice([" " + old, old + " ", " " + old + " "]))


def title_line(data, rng):
    """A title or comment line above the header (an export tool's or a hand-written note)."""
    return rng.choice([b"# exported 2024-05-01\n", b"Fixation report\n", b"participant 12, session 2\r\n"]) + data, \
        "a title line above the header"


def decimal_comma_export(data, rng):
    """The whole file re-exported by a spreadsheet in a German or French locale: ';' between fields, decimal
    commas."""
    sep = separator_of(data)
    out = []
    for line in _lines(data):
        if not line.strip():
            out.append(line)
            continue
        fields = [f.replace(".", ",") if "." in f and _is_number(f) else f for f in _fields(line, sep)]
        out.append(_join(fields, ";", _end(line)))
    return b"".join(out), "re-exported with ';' and decimal commas"


def cut_last_line(data, rng):
    """The last line cut inside (an interrupted copy that ends mid-row: ``431`` read as ``43``, or fields missing)."""
    lines = _lines(data)
    bare = lines[-1].rstrip(b"\r\n") if len(lines) > 1 else b""
    if len(bare) < 2:
        return None
    cut = rng.randrange(1, len(bare))
    return b"".join(lines[:-1]) + bare[:cut], f"line {len(lines)}: the last line cut after {cut} of {len(bare)} bytes"


def decimal_comma_cell(data, rng):
    """One number written with a decimal comma (``387`` -> ``387,5``; ``1.25`` -> ``1,25``): a hand edit in a locale
    that writes them, the rest of the file with points."""
    return _set_cell(data, rng, lambda old: old.replace(".", ",") if "." in old else f"{old},5")


def unnamed_column(data, rng):
    """An extra column without a name at the end of every line (a spreadsheet's stray column), empty or holding
    values."""
    lines, sep = _lines(data), separator_of(data)
    value = rng.choice(["", "x", "1"]).encode()
    out = [lines[0].rstrip(b"\r\n") + sep.encode() + _end(lines[0])] + [
        line.rstrip(b"\r\n") + sep.encode() + value + _end(line) if line.strip() else line for line in lines[1:]]
    return b"".join(out), f"an unnamed last column holding {value.decode()!r}"


CSV_OPERATORS = (delete_cell, extra_field, unquoted_separator, truncate, blank_lines, nul_padding, nul_in_field,
                 concatenated, bom_mid_file, repeated_header, non_number, odd_number, empty_cell, drop_column,
                 rename_column, swap_columns, header_only, latin1_byte, line_ends, trailing_separator, stray_quote,
                 tab_in_field, duplicate_row, other_separator, duplicate_column, swap_rows, utf16,
                 padded_number, title_line, decimal_comma_export, cut_last_line, decimal_comma_cell, unnamed_column)


# --- EyeLink .asc --------------------------------------------------------------------------------------------

def _asc_lines(data: bytes, rng: random.Random, kind: str) -> tuple[list[bytes], list[int]]:
    lines = _lines(data)
    if kind == "sample":
        hits = [i for i, line in enumerate(lines) if line[:1].isdigit()]
    else:
        hits = [i for i, line in enumerate(lines) if line.startswith(kind.encode())]
    return lines, hits


def _asc_token(kind: str, values: tuple[str, ...], first: int):
    def damage(data, rng):
        lines, hits = _asc_lines(data, rng, kind)
        if not hits:
            return None
        i = rng.choice(hits)
        tokens = lines[i].rstrip(b"\r\n").split()
        if len(tokens) <= first:
            return None
        k = rng.randrange(first, len(tokens))
        value = rng.choice(values)
        old = tokens[k]
        tokens[k] = value.encode()
        lines[i] = b"\t".join(tokens) + _end(lines[i])
        return b"".join(lines), f"line {i + 1}: {kind} value {old!r} -> {value!r}"
    damage.__name__ = f"{kind.lower()}_value"
    return damage


def asc_negative_time(data, rng):
    """A sample line whose timestamp is negative."""
    lines, hits = _asc_lines(data, rng, "sample")
    if not hits:
        return None
    i = rng.choice(hits)
    lines[i] = b"-" + lines[i]
    return b"".join(lines), f"line {i + 1}: negative timestamp"


def asc_delete_line(data, rng):
    """One line of recording data deleted (a sample or an event line; a message deleted leaves a valid file that
    lacks the message, which no reader can tell)."""
    lines = _lines(data)
    data_lines = [i for i, line in enumerate(lines) if line[:1].isdigit() or line[:1] in (b"S", b"E")]
    i = rng.choice(data_lines)
    return b"".join(lines[:i] + lines[i + 1:]), f"line {i + 1} deleted"


def asc_garbage_line(data, rng):
    """A line of garbage inside the recording (a tracker hiccup)."""
    lines, hits = _asc_lines(data, rng, "sample")
    if not hits:
        return None
    i = rng.choice(hits)
    lines.insert(i, rng.choice([b"@@@@\n", b"EF\n", b"garbage 12 34\n", b"\x00\x00\n"]))
    return b"".join(lines), f"garbage before line {i + 1}"


def asc_swap_lines(data, rng):
    """Two neighbouring sample lines swapped: a timestamp out of order."""
    lines, hits = _asc_lines(data, rng, "sample")
    pairs = [i for i in hits if i + 1 < len(lines) and lines[i + 1][:1].isdigit() and lines[i] != lines[i + 1]]
    if not pairs:
        return None
    i = rng.choice(pairs)
    lines[i], lines[i + 1] = lines[i + 1], lines[i]
    return b"".join(lines), f"lines {i + 1} and {i + 2} swapped"


ASC_OPERATORS = (_asc_token("sample", NON_NUMBERS + ("\x00",), 1), _asc_token("EFIX", NON_NUMBERS, 2),
                 _asc_token("ESACC", NON_NUMBERS, 2), _asc_token("sample", ("inf", "nan", "1e400"), 1),
                 asc_negative_time, asc_delete_line, asc_garbage_line, truncate, blank_lines, nul_padding,
                 nul_in_field, latin1_byte, line_ends, duplicate_row, bom_mid_file, asc_swap_lines, utf16)


def mutate(data: bytes, seed: int, operators, salt: str = "", shift: int = 0) -> tuple[str, str, bytes] | None:
    """``(operator name, description, damaged bytes)`` of one seeded variant, or None when the operator does not
    apply to the file. Seed ``s`` takes operator ``(s + shift) mod len(operators)`` (a target's shift, so that a few
    seeds cover every operator over several targets) and draws its choices from ``(salt, s)``."""
    op = operators[(seed + shift) % len(operators)]
    rng = random.Random(f"{salt}|{seed}")
    out = op(data, rng)
    if out is None or out[0] == data:
        return None
    return op.__name__, out[1], out[0]
