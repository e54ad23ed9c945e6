"""The lines of an EyeLink ``.asc`` file: read in chunks of whole lines, decoded, and each given its kind.

:func:`byte_chunks` cuts the file into pieces of at most ``chunk_lines`` whole lines (8 MiB reads, line ends
found with NumPy); :func:`decode_chunk` turns a piece into one row per line (UTF-8 parsed by polars from the bytes,
another codec decoded first; undecodable bytes replaced with U+FFFD and reported, CRs and byte-order marks
removed); :func:`line_kinds` classifies each line from its first 16 characters into :data:`LINE_KINDS` (an event or
message keyword, a sample, a calibration or header line, blank, ...). :mod:`readgaze.io.asc_scan` builds the
structural scan of the file on these. Reference: SR Research, *EyeLink 1000 Plus User Manual* 1.0.19, section 4.9.
"""

from __future__ import annotations

import codecs
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import polars as pl

from readgaze.errors import ConfigError, ParseError

KEYWORDS = ("START", "END", "MSG", "SFIX", "EFIX", "SSACC", "ESACC", "SBLINK", "EBLINK", "SAMPLES",
            "EVENTS", "PRESCALER", "VPRESCALER", "PUPIL", "INPUT", "BUTTON")
LINE_KINDS = pl.Enum([*KEYWORDS, "sample", "calibration", "header", "blank", "continuation", "negative", "other"])
"""``negative``: a line that starts like a sample with a negative timestamp (``-123 ...``)."""
_READ_BYTES = 1 << 23  # bytes read from the file per system call


def codec_name(encoding: str) -> str:
    try:
        return codecs.lookup(encoding).name
    except LookupError:
        raise ConfigError(f"encoding: unknown codec {encoding!r} (e.g. 'utf-8', 'cp1252', 'latin-1')") from None


def byte_chunks(path: Path, chunk_lines: int) -> Iterator[tuple[int, bytes]]:
    """``(byte offset, bytes)`` of consecutive pieces of the file, each at most ``chunk_lines`` whole lines."""
    offset, rest = 0, b""
    with path.open("rb") as handle:
        while True:
            data = handle.read(_READ_BYTES)
            if not data:
                if rest:
                    yield offset, rest
                return
            buf = rest + data if rest else data
            ends = np.flatnonzero(np.frombuffer(buf, np.uint8) == 10)
            start = 0
            for k in range(chunk_lines - 1, len(ends), chunk_lines):
                cut = int(ends[k]) + 1
                yield offset, buf[start:cut]
                offset, start = offset + cut - start, cut
            rest = buf[start:]


def _read_text(source, lossy: bool) -> pl.DataFrame:
    return pl.read_csv(source, has_header=False, separator="\x1f", quote_char=None, new_columns=["text"],
                       schema={"text": pl.String}, encoding="utf8-lossy" if lossy else "utf8")


def decode_chunk(data: bytes, codec: str, first_line: int) -> tuple[pl.DataFrame, bool]:
    """One row per line of a chunk (``line`` from ``first_line``, ``text``), and whether some bytes did not
    decode (replaced with U+FFFD). Line ends (``\r``) and byte-order marks (U+FEFF) are removed.

    UTF-8 is parsed by polars straight from the bytes; another (ASCII-compatible) codec is decoded in
    Python first. A single-byte codec cannot hold U+FFFD itself, so every one is a replaced byte.
    """
    if codec == "utf-8":
        try:
            frame, replaced = _read_text(data, lossy=False), False
        except pl.exceptions.ComputeError:
            frame, replaced = _read_text(data, lossy=True), True  # polars' utf8-lossy read replaces the bad bytes
    else:
        text = data.decode(codec, errors="replace")
        frame, replaced = _read_text(text.encode("utf-8"), lossy=False), "\ufffd" in text
    n_lines = data.count(b"\n") + (0 if data.endswith(b"\n") else 1)
    if frame.height != n_lines:  # blank-only chunks: polars reads no rows
        text = data.decode(codec, errors="replace")
        frame = pl.DataFrame({"text": text[:-1].split("\n") if text.endswith("\n") else text.split("\n")},
                             schema={"text": pl.String})
    frame = frame.with_row_index("line", offset=first_line).with_columns(pl.col("text").fill_null(""))
    if frame.select(pl.col("text").str.ends_with("\r").any()).item():
        frame = frame.with_columns(pl.col("text").str.strip_chars_end("\r"))
    if frame.select(pl.col("text").str.contains("\ufeff", literal=True).any()).item():
        frame = frame.with_columns(pl.col("text").str.replace_all("\ufeff", "", literal=True),
                                   _bom=pl.col("text").str.contains("\ufeff", literal=True))
    return frame, replaced


def line_kinds(frame: pl.DataFrame) -> pl.Series:
    """The kind of every line (Enum :data:`LINE_KINDS`), from its first 16 characters."""
    head = pl.col("text").str.slice(0, 16)  # a line's kind shows in its first characters: no full-line copies
    kind = head.str.extract(r"^([A-Z]+)\b")
    names = LINE_KINDS.categories.to_list()
    code = {k: pl.lit(names.index(k), pl.UInt8) for k in names}  # small integer codes, then one Enum gather
    keyword = kind.replace_strict(list(KEYWORDS), [names.index(k) for k in KEYWORDS], default=names.index("other"),
                                  return_dtype=pl.UInt8)
    codes = frame.select(
        pl.when(head.str.contains(r"^[0-9]")).then(code["sample"])
        .when(head.str.contains(r"^-[0-9]")).then(code["negative"])
        .when(head.str.starts_with(">>>>>>>")).then(code["calibration"])
        .when(head.str.starts_with("**")).then(code["header"])
        .when(pl.col("text").str.contains(r"^\s*$")).then(code["blank"])
        .when(head.str.contains(r"^\s")).then(code["continuation"])
        .otherwise(keyword.fill_null(names.index("other")))).to_series()
    return pl.Series("kind", names, dtype=LINE_KINDS).gather(codes)


def no_block_error(path: Path, lines: pl.DataFrame, sample_runs: np.ndarray) -> ParseError:
    """The error of a file without a recording block; where sample lines (``sample_runs``: the first line of each run)
    follow a line of no known kind, that line is named (a damaged ``START`` line: a NUL or a stray byte in its
    keyword)."""
    what = "no recording block (no START line): not an EyeLink sample/event file"
    odd = (lines.filter(pl.col("kind") == "other", pl.col("line") < int(sample_runs[0])) if len(sample_runs)
           else lines.clear())
    if not odd.height:
        return ParseError(what, file=path)
    row, shown = int(odd["line"][-1]), odd["text"][-1][:40].encode("unicode_escape").decode("ascii")
    return ParseError(f"{what}, yet sample lines follow line {row}, a line of no known kind ('{shown}'): a damaged "
                      "START line? Fix it, or cut the file to whole recordings", file=path, row=row)
