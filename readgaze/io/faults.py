"""Faults of delimited text files (lab exports) that a CSV parser turns into silent data, found before the parse.

Over 400 lines: the checks of a file's lines and bytes and its repaired copy are one idea, a file's lines, and share
the line arrays (the rows' checks, :mod:`readgaze.io.ragged`; the column flags, :mod:`readgaze.io.dtypes`; and the
parse, :mod:`readgaze.io.csv`, live in their own modules).

The rule of every reader in :mod:`readgaze.io` (issue 29): a line, byte or cell that does not fit the format is
either an error naming the file, the line and the column, or a repair counted per reason in the QC log and printed.
polars' CSV reader pads a row with too few fields with nulls, reads a blank line as a row of nulls, glues a
byte-order mark to the first cell of its line, keeps NUL bytes inside values and reads a file with CR-only line
ends as one line. So every delimited file a reader opens is first checked here:

================================================  ====================================================  ========
fault                                             what readgaze does                                    kind
================================================  ====================================================  ========
a blank line, or one of only separators / spaces  dropped (a spreadsheet's empty row, an editor's       repair
                                                  extra line end)
the header line again (two exports concatenated,  dropped                                               repair
with or without a byte-order mark)
a byte-order mark (U+FEFF) after the first byte   removed                                               repair
NUL bytes (and blank lines) after the last line   removed (an interrupted write leaves them)            repair
CR-only line ends (classic Mac OS)                read as line ends                                     repair
a NUL byte inside a line                          :class:`ParseError`: file, line, column               error
a row with too few or too many fields; the last   :class:`ParseError`: file, line, fields found, the    error
row cut short                                     column (and "the file looks truncated")
no line break after the last row                  the row dropped, counted as "incomplete last line"    repair
                                                  (cut inside a value? 431 ms would read as 43 ms)
an unbalanced double quote                        :class:`ParseError`: file, line                       error
no data row after the header                      :class:`ParseError`: file, line 2                     error
================================================  ====================================================  ========

Dropping a blank or repeated header line loses no value, and a NUL padding or a stray byte-order mark holds none,
so those are repaired; a short or long row or a NUL inside a value leaves the row's values unknown, so those are
errors (fix the file, or delete the row). A last line without a line break is the one exception: a copy cut inside
its last value still has every field (``431`` cut to ``43``), so no check can tell a cut row from a whole one; the
row is dropped and counted (``incomplete last line``, with the file and line), never read with changed values.

Cost: :func:`check_text` runs on every file, once per file version (memoised): one pass over the bytes for the line
starts and the lowest and highest byte (:func:`readgaze.io.scan.scan_file`, or the pass ``readgaze prep`` started
before its imports), then vectorised tests on the line lengths. Only a file with a fault is read closer, and a
repaired file is read through a cleaned UTF-8 copy in a temporary folder, made once per file version; messages keep
the user's line numbers (:meth:`TextFile.user_lines`). Ragged rows are found around the parse
(:mod:`readgaze.io.ragged`).
"""

from __future__ import annotations

import codecs
import csv
import hashlib
import io
import tempfile
import threading
import warnings
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import polars as pl

from readgaze.errors import ConfigError, Option, ParseError
from readgaze.io.scan import scan_file, stamp, take_lines
from readgaze.qc import QCLog

BOM = b"\xef\xbb\xbf"
BLANK = "blank line dropped"
HEADER_AGAIN = "header line repeated inside the file (two exports concatenated?) dropped"
MID_BOM = "byte-order mark (U+FEFF) inside the file removed"
NUL_PADDING = "NUL bytes after the last line removed"
CR_ENDS = "CR-only line ends (classic Mac OS) read as line ends"
CONTROL = "TAB inside values of a file not separated by TAB (kept)"
UNNAMED = "columns without a name in the header (kept)"
CUT_LAST = "incomplete last line (no line break at its end: the file cut short?) dropped"


class RepairWarning(UserWarning):
    """A reader repaired its input (dropped a blank line, removed a byte-order mark, ...) and no QC log was
    given to count it in; the message names the file, the first line and the count."""


@dataclass(frozen=True)
class Repair:
    """One kind of repair of one file: ``count`` lines (or marks), the first on user line ``first_line``."""

    reason: str
    count: int
    first_line: int
    action: str = "dropped"


@dataclass
class TextFile:
    """A checked delimited file: what the parser reads and how its rows map to the user's lines.

    Attributes
    ----------
    path : Path
        The user's file (named in every message).
    read_path : Path
        The file the parser reads: ``path`` itself, or a cleaned UTF-8 copy (same name, temporary folder).
    separator : str
    names : list of str
        Column names as polars reads them.
    starts : numpy.ndarray
        Int64 byte offset of every line of ``read_path`` (line 0 is the header).
    dropped : numpy.ndarray
        Int64, sorted: the user's lines (1-based) that ``read_path`` lacks.
    repairs : list of Repair
    """

    path: Path
    read_path: Path
    separator: str
    names: list[str]
    starts: np.ndarray
    dropped: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    repairs: list[Repair] = field(default_factory=list)
    size: int = 0
    warned: bool = False
    notes: list = field(default_factory=list)  # (Repair, detail) flags of columns, from readgaze.io.csv
    shown: set = field(default_factory=set)

    @property
    def n_rows(self) -> int:
        """Data lines of ``read_path`` (the rows, unless a quoted field holds a line break)."""
        return len(self.starts) - 1

    def user_lines(self, rows) -> np.ndarray:
        """Editor line numbers (1-based, header = 1) in the user's file of data rows ``rows`` (0-based, of
        ``read_path``, before any filter)."""
        lines = np.asarray(rows, dtype=np.int64) + 2  # 1-based line of read_path
        if not len(self.dropped):
            return lines
        before = self.dropped - 1 - np.arange(len(self.dropped))  # kept lines before each dropped one
        return lines + np.searchsorted(before, lines, side="left")

    def user_line(self, row: int) -> int:
        return int(self.user_lines([row])[0])


_LOCK = threading.Lock()
_MEMO: OrderedDict[tuple, TextFile] = OrderedDict()
_BY_PATH: dict[tuple, tuple[tuple, TextFile]] = {}  # (resolved user or read path, separator or None) -> (stamp, text)
_KEEP = 8


def text_file(path, separator: str | None = None) -> TextFile | None:
    """The latest :class:`TextFile` of ``path`` (the user's file or its cleaned copy; read with ``separator``, or with
    any), if this version of the file was checked."""
    try:
        real, st = str(Path(path).resolve()), stamp(path)
    except OSError:
        return None
    hit = _BY_PATH.get((real, separator))
    return hit[1] if hit is not None and hit[0] == st else None


def user_line(path, row: int) -> int:
    """Editor line in the user's file of data row ``row`` (0-based) of the checked file ``path`` (the user's file or
    its cleaned copy); ``row + 2`` when the file was not checked."""
    text = text_file(path)
    return row + 2 if text is None else text.user_line(row)


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
    if codec == "utf-8" and is_utf16(path):
        raise ParseError("the file is UTF-16 text (a spreadsheet's \"Unicode text\"?), not UTF-8: save it as UTF-8",
                         file=path, row=1, options=(Option("encoding='utf-16'"),))
    if codec == "utf-8" or not path.is_file():
        return path
    target = _copy_path(path, f"utf8|{codec}")
    if not target.is_file():
        raw = path.read_bytes()
        try:
            text = raw.decode(codec)
        except UnicodeDecodeError as e:
            raise ParseError(f"byte {raw[e.start:e.start + 1]!r} is not valid {encoding}", file=path,
                             row=raw.count(b"\n", 0, e.start) + 1) from None
        _write(target, text.encode("utf-8"))
    return target


def is_utf16(path: str | Path) -> bool:
    """True when the file begins as UTF-16 text does: its byte-order mark (FF FE, FE FF), or two ASCII characters
    each with a NUL byte beside it. Read as UTF-8 such a file is a NUL byte inside every value."""
    try:
        with open(path, "rb") as f:
            head = f.read(4)
    except OSError:
        return False
    if head[:2] in (b"\xff\xfe", b"\xfe\xff"):
        return True
    return len(head) == 4 and (head[1::2] == b"\0\0" and 0 not in head[0::2]
                               or head[0::2] == b"\0\0" and 0 not in head[1::2])


def lone_cr_error(path: str | Path, user: str | Path | None = None) -> ParseError | None:
    """The error for a file whose lines end with a CR alone in places and a line feed elsewhere (mixed line ends: a
    file pasted together on classic Mac OS and another system), naming the first such line; None when there is none.
    For the error paths: the whole file is read."""
    import re

    data = Path(path).read_bytes()
    hit = re.search(rb"\r(?!\n)", data)
    if hit is None:
        return None
    line = len(re.findall(rb"\r\n|\r|\n", data[:hit.start()])) + 1
    return ParseError("this line ends with a CR alone while others end with a line feed (mixed line ends: parts "
                      "written on classic Mac OS?): re-save the file with one kind of line end", file=user or path,
                      row=line)


def _copy_path(path: Path, what: str) -> Path:
    st = path.stat()
    key = hashlib.sha1(f"{path.resolve()}|{st.st_size}|{st.st_mtime_ns}|{what}".encode()).hexdigest()[:16]
    return Path(tempfile.gettempdir()) / "readgaze_clean" / key / path.name


def _write(target: Path, data: bytes) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_suffix(target.suffix + f".{threading.get_ident()}.part")
    partial.write_bytes(data)
    partial.replace(target)


def detect_separator_text(head: str) -> str:
    """The separator of a header line: ``','``, ``'\\t'`` or ``';'``, whichever occurs most outside double quotes
    (ties and none: ``','``)."""
    counts, quoted = {",": 0, "\t": 0, ";": 0}, False
    for ch in head:
        if ch == '"':
            quoted = not quoted
        elif not quoted and ch in counts:
            counts[ch] += 1
    best = max(counts, key=lambda s: counts[s])
    return best if counts[best] else ","


def check_text(path: str | Path, *, separator: str | None = None, encoding: str = "utf-8") -> TextFile:
    """Check a delimited file's lines and bytes (module docstring); repair what can be repaired.

    Parameters
    ----------
    path : str or Path
        The file.
    separator : str, optional
        Detected from the header line when omitted.
    encoding : str
        Text encoding; another than UTF-8 is decoded into a UTF-8 copy first (:func:`as_utf8`).

    Returns
    -------
    TextFile
        Memoised per file version (path, size, modification time, inode), encoding and separator.

    Raises
    ------
    ParseError
        The file is missing or empty, holds a NUL byte inside a line, or has no data row.
    ConfigError
        Unknown encoding.
    """
    path = Path(path)
    if not path.is_file():
        raise ParseError("no such file", file=path)
    key = (str(path.resolve()), stamp(path), encoding, separator)
    with _LOCK:
        hit = _MEMO.get(key)
        if hit is not None:
            _MEMO.move_to_end(key)
            return hit
    text = _check(path, as_utf8(path, encoding), separator)
    with _LOCK:
        _MEMO[key] = text
        while len(_MEMO) > _KEEP:
            _MEMO.popitem(last=False)
        for p in (text.path, text.read_path):
            for sep in (None, text.separator):
                _BY_PATH[(str(Path(p).resolve()), sep)] = (stamp(p), text)
    return text


def _scan(path: Path):
    return take_lines(path) or scan_file(path, sha256=False, lines=True)


def _check(path: Path, source: Path, separator: str | None) -> TextFile:
    """``path``: the user's file; ``source``: its UTF-8 bytes (the file, or a decoded copy)."""
    scan = _scan(source)
    if scan.size == 0:
        raise ParseError("file is empty; expected a header line", file=path, row=1)
    mm = np.memmap(source, np.uint8, mode="r")  # read only where a line is looked at (few pages of a clean file)
    starts = scan.starts
    begin, length = _lines(starts, scan.size, scan.crlf)
    head = bytes(mm[begin[0]:begin[0] + length[0]])
    if b"\r" in head:  # a CR inside the header line: the file's lines end with CR only
        return _cr_copy(path, source, separator)
    sep = separator or detect_separator_text(head.decode("utf-8", "replace").lstrip("\ufeff"))
    repairs: list[Repair] = []
    drop = np.zeros(len(starts), bool)
    cuts: list[tuple[int, int]] = []  # byte ranges removed inside kept lines (byte-order marks)
    end = scan.size
    if scan.nul:  # NUL bytes: a padding after the last line is removed, any other is an error
        end = _padding_start(mm, scan.size)
        nul = np.flatnonzero(mm[:end] == 0)
        if len(nul):
            line = int(np.searchsorted(starts, nul[0], side="right"))
            raise ParseError("a NUL byte inside a value (a damaged or truncated file?)", file=path, row=line,
                             column=_column_at(mm, begin[line - 1], int(nul[0]), sep, head))
        if end < scan.size:
            first = int(np.searchsorted(starts, end, side="right"))
            repairs.append(Repair(NUL_PADDING, int(np.count_nonzero(mm[end:] == 0)), first, "changed"))
            past = begin >= end
            drop |= past
            length = np.minimum(length, np.maximum(end - begin, 0))
    width = head.count(sep.encode()) + 8  # a line of only separators (and a few spaces) is at most this long
    blank = _only(mm, begin, length, (sep, " ", "\t"), width)
    if blank[0]:  # blank lines before the header: the header is the first line with something on it
        first_line = int(np.argmin(blank))
        if blank.all():
            raise ParseError("file holds no header line (only blank lines)", file=path, row=1)
        head = bytes(mm[begin[first_line]:begin[first_line] + length[first_line]])
        sep = separator or detect_separator_text(head.decode("utf-8", "replace").lstrip("\ufeff"))
        blank = _only(mm, begin, length, (sep, " ", "\t"), width)
    header_line = int(np.argmin(blank))
    bare = head[len(BOM):] if head.startswith(BOM) else head
    again = _equal(mm, begin, length, bare) | _equal(mm, begin + 3, length - 3, bare, prefix=BOM)
    again[:header_line + 1] = False
    blank[header_line] = False
    for mask, reason in ((blank & ~drop, BLANK), (again & ~drop, HEADER_AGAIN)):
        if mask.any():
            repairs.append(Repair(reason, int(mask.sum()), int(np.argmax(mask)) + 1))
    drop |= blank | again
    drop[:header_line] = True
    if scan.ef:
        boms = _boms(mm, end)
        boms = boms[boms > begin[header_line]]  # the header's own BOM is the file's
        if len(boms):
            line = np.searchsorted(starts, boms, side="right") - 1
            keep = ~drop[line]
            if keep.any():
                repairs.append(Repair(MID_BOM, int(keep.sum()), int(line[keep][0]) + 1, "changed"))
                cuts = [(int(b), int(b) + 3) for b in boms[keep]]
    notes = _control_characters(mm, starts, begin, sep, head, end) if sep != "\t" and scan.tab else []
    last = len(starts) - 1
    if (end == scan.size and scan.size and mm[scan.size - 1] != 10 and last > header_line and not drop[last]
            and _fields(bytes(mm[begin[last]:begin[last] + length[last]]), sep) == _fields(head, sep)):
        # exporters end every row with a line break: a last line without one may be cut inside its last value (431
        # ms read as 43), so its values are unknown; the row is dropped and counted (file and line named). Cut
        # short of a field, it is the ragged rows' error ("the file looks truncated").
        repairs.append(Repair(CUT_LAST, 1, last + 1))
        drop[last] = True
        if drop[header_line + 1:].all():
            raise ParseError(f"the only data row has no line break at its end: {CUT_LAST.split(' (')[0]} (the file "
                             "cut short?); end the row with a line break if it is complete", file=path, row=last + 1)
    if not repairs:
        if len(starts) < 2 or (len(starts) == 2 and length[1] == 0):
            raise ParseError("no data row after the header", file=path, row=2)
        names = _names(source, sep, path)
        return TextFile(path, source, sep, names, starts, size=scan.size, notes=notes + _unnamed(head, sep, names))
    target = _copy_path(path, f"clean|{source.name}|{sep}")
    kept = ~drop
    _write(target, _cleaned(mm, begin, length, kept, cuts, end, head_bom=head.startswith(BOM)))
    dropped = np.flatnonzero(drop).astype(np.int64) + 1
    copy = scan_file(target, sha256=False, lines=True)
    if len(copy.starts) < 2 or copy.size == 0:
        raise ParseError("no data row after the header", file=path, row=2)
    names = _names(target, sep, path)
    return TextFile(path, target, sep, names, copy.starts, dropped, repairs, copy.size,
                    notes=notes + _unnamed(head, sep, names))


def _unnamed(head: bytes, sep: str, names: list[str]) -> list:
    """A flag for the columns without a name in the header (an extra separator at the end of every line?): kept
    under the name polars gives them, and said."""
    fields = next(csv.reader([head.decode("utf-8", "replace").lstrip("\ufeff")], delimiter=sep), [])
    empty = [i for i, f in enumerate(fields) if not f.strip() and i < len(names)]
    if not empty:
        return []
    shown = ", ".join(f"column {i + 1} (read as {names[i]!r})" for i in empty[:5]) + (", ..." if len(empty) > 5 else "")
    why = ("an extra separator at the end of the lines?" if empty[-1] == len(names) - 1 else
           "a row index, as pandas writes one?" if empty == [0] else "a header cell left empty?")
    return [(Repair(UNNAMED, len(empty), 1, "flagged"),
             f"{len(empty)} of {len(names)} columns have no name in the header ({why}): {shown}; kept")]


def _fields(line: bytes, sep: str) -> int:
    """Fields of one line (quotes as the parser reads them); -1 for a line holding a lone CR (mixed line ends: an
    error of their own, :func:`readgaze.io.ragged.locate_parse_error`)."""
    text = line.decode("utf-8", "replace").lstrip("\ufeff")
    try:
        return len(next(csv.reader([text], delimiter=sep), []))
    except csv.Error:
        return -1


def _control_characters(mm, starts, begin, sep: str, head: bytes, end: int) -> list:
    """A flag (kept value, counted) for TABs inside the values of a file not separated by TAB: a copy-and-paste
    artefact that changes a label or key. Looked for only when the file's pass saw a TAB."""
    hit = np.flatnonzero(mm[:end] == 9)
    if not len(hit):
        return []
    lines = np.unique(np.searchsorted(starts, hit, side="right"))
    first = int(hit[0])
    line = int(np.searchsorted(starts, first, side="right"))
    column = _column_at(mm, int(begin[line - 1]), first, sep, head)
    note = Repair(CONTROL, len(lines), line, "flagged")
    return [(note, f"{len(lines)} line(s) hold a TAB inside a value (first in column {column}); kept in the value")]


def _lines(starts: np.ndarray, size: int, crlf: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per line: first byte, and length without its line end (``\\n`` or ``\\r\\n``), from the line starts and
    the CR flags of the line breaks (:class:`readgaze.io.scan.FileScan`): no byte of the file is read again."""
    ends = np.r_[starts[1:], size]  # one past the line end
    breaks = len(crlf)  # the lines that end with a break: all, or all but the last
    newline = np.arange(len(starts)) < breaks
    cr = np.zeros(len(starts), bool)
    cr[:min(breaks, len(starts))] = crlf[:len(starts)]
    return starts, ends - starts - newline - (cr & newline)


def _gather(mm, begin, length, width) -> np.ndarray:
    """``(k, width)`` bytes from each ``begin`` (0 past each line's ``length``)."""
    idx = begin[:, None] + np.arange(width)
    inside = np.arange(width) < length[:, None]
    out = np.zeros(idx.shape, np.uint8)
    out[inside] = mm[idx[inside]]
    return out


def _only(mm, begin, length, chars, width: int) -> np.ndarray:
    """Lines holding nothing but ``chars`` (or nothing); only lines of at most ``width`` bytes are looked at."""
    out = length <= 0
    short = np.flatnonzero((length > 0) & (length <= width))
    allowed = np.zeros(256, bool)
    allowed[[ord(c) for c in chars]] = True
    for lo in range(0, len(short), 100_000):
        rows = short[lo:lo + 100_000]
        got = _gather(mm, begin[rows], length[rows], width)
        ok = allowed[got] | (np.arange(width) >= length[rows][:, None])
        out[rows] = ok.all(axis=1)
    return out


def _equal(mm, begin, length, content: bytes, prefix: bytes = b"") -> np.ndarray:
    """Lines (from ``begin``, ``length`` bytes) equal to ``content``, after ``prefix`` (the bytes before ``begin``);
    only lines of the right length are read."""
    out = np.zeros(len(begin), bool)
    rows = np.flatnonzero((length == len(content)) & (begin >= len(prefix)))
    want = np.frombuffer(prefix + content, np.uint8)
    for lo in range(0, len(rows), 100_000):
        part = rows[lo:lo + 100_000]
        got = _gather(mm, begin[part] - len(prefix), length[part] + len(prefix), len(want))
        out[part] = (got == want).all(axis=1)
    return out


def _boms(mm, end: int) -> np.ndarray:
    lead = np.flatnonzero(mm[:max(end - 2, 0)] == 0xEF)
    return lead[(mm[lead + 1] == 0xBB) & (mm[lead + 2] == 0xBF)]


def _padding_start(mm, size: int) -> int:
    """Offset where a tail of NUL bytes and blank lines begins (``size`` when the file does not end so)."""
    pos, step = size, 1 << 20
    pad = np.zeros(256, bool)
    pad[[0, 9, 10, 13, 32]] = True
    while pos > 0:
        lo = max(pos - step, 0)
        ok = pad[mm[lo:pos]]
        if not ok.all():
            last = lo + int(np.flatnonzero(~ok)[-1])
            start = last + 1
            break
        pos = lo
    else:
        start = 0
    if not (mm[start:size] == 0).any():
        return size
    return start + 1 if start < size and mm[start] == 10 else (start + 2 if bytes(mm[start:start + 2]) == b"\r\n"
                                                                  else start)


def _column_at(mm, line_begin: int, pos: int, sep: str, head: bytes) -> str | None:
    """The header name of the field holding byte ``pos`` of the line that starts at ``line_begin``."""
    prefix = bytes(mm[line_begin:pos]).decode("utf-8", "replace")
    k = len(next(csv.reader(io.StringIO(prefix), delimiter=sep), [""])) - 1 if prefix else 0
    names = next(csv.reader(io.StringIO(head.decode("utf-8", "replace").lstrip("\ufeff")), delimiter=sep), [])
    return names[k] if k < len(names) else None


def _cleaned(mm, begin, length, kept, cuts, end, head_bom: bool) -> bytes:
    """The kept lines (each with ``\\n``), without the byte ranges ``cuts``, up to ``end``."""
    parts = []
    cut_at = iter(sorted(cuts))
    nxt = next(cut_at, None)
    for i in np.flatnonzero(kept):
        b, n = int(begin[i]), int(length[i])
        e = min(b + n, end)
        if i == 0 and head_bom:
            b += 3
        while nxt is not None and nxt[0] < e:
            if nxt[0] >= b:
                parts.append(bytes(mm[b:nxt[0]]))
                b = nxt[1]
            nxt = next(cut_at, None)
        parts.append(bytes(mm[b:e]))
        parts.append(b"\n")
    return b"".join(parts)


def _cr_copy(path: Path, source: Path, separator: str | None) -> TextFile:
    """A file whose lines end with CR only: read through a copy with LF line ends."""
    target = _copy_path(path, "cr")
    data = source.read_bytes()
    lone = data.count(b"\r") - data.count(b"\r\n")
    _write(target, data.replace(b"\r\n", b"\n").replace(b"\r", b"\n"))
    inner = _check(path, target, separator)
    inner.repairs.insert(0, Repair(CR_ENDS, lone, 1, "changed"))
    return inner


def _names(path: Path, sep: str, user: Path) -> list[str]:
    """The column names polars reads; a name written twice in the header is an error (which column would a reader
    take? polars renames the second ``X_duplicated_0``)."""
    try:
        names = pl.scan_csv(path, separator=sep, infer_schema=False, quote_char='"', raise_if_empty=True,
                            encoding="utf8").collect_schema().names()
    except pl.exceptions.PolarsError as e:
        raise ParseError(f"cannot read the header line as {sep!r}-separated text: "
                         f"{str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__}",
                         file=user, row=1) from None
    twice = [n for n in names if "_duplicated_" in n]
    if twice:
        name = twice[0].rsplit("_duplicated_", 1)[0]
        where = [i + 1 for i, n in enumerate(names) if n == name or n.startswith(f"{name}_duplicated_")]
        raise ParseError(f"the header names column {name!r} twice (columns {', '.join(map(str, where))}): which one "
                         "is meant? Rename one", file=user, row=1, column=name)
    return names


# --- rows: too few or too many fields ---------------------------------------------------------------------------


# --- reporting --------------------------------------------------------------------------------------------------

def report(text: TextFile, qc: QCLog | None, step: str) -> None:
    """Count ``text``'s repairs in ``qc`` (once per file and step; QC table ``lines``, since a repaired line is a
    line of the file, not a row of the table read from it; the detail names the file and the first line), or,
    without a log, warn once per file version (:class:`RepairWarning`)."""
    if not text.repairs:
        return
    if qc is None:
        if not text.warned:
            text.warned = True
            for r in text.repairs:
                warnings.warn(RepairWarning(describe(text, r)), stacklevel=3)
        return
    for r in text.repairs:
        detail = f"{text.path.name}: first at line {r.first_line}"
        if any(x["step"] == step and x["reason"] == r.reason and x["detail"] == detail for x in qc.records):
            continue
        qc.add(step, "lines", r.reason, r.count, action=r.action, detail=detail)  # lines of the file, not rows


def describe(text: TextFile, r: Repair) -> str:
    return f"{text.path.name} line {r.first_line}: {r.count} {r.reason}"


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
