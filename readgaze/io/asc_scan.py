"""Structural scan of an EyeLink ``.asc`` file: every line classified, the recording blocks found and closed.

``mne.io.read_raw_eyelink`` (MNE-Python 1.13, ``mne/io/eyelink/_utils.py``) mishandles real files: it stores a
recording block only when it reaches ``END`` (a block without ``END`` is lost silently, or the whole file fails)
and reads indented calibration rows that start with a digit as samples. So readgaze scans the file itself (Polars,
one regex pass over all lines) and finds the recording blocks. Each block ends at its ``END`` line, or, when
``END`` is missing, just before a calibration header (``>>>>>>> CALIBRATION``), the next ``START`` or the end of
the file (with a warning naming both lines); the line before it is the block's last data line, or the line before
the next trial's ``TRIALID`` message when one sits between them. :mod:`readgaze.io.asc_repair` then checks and
repairs each block's sample lines.

Streaming: the file is read in chunks of at most ``chunk_lines`` whole lines (:data:`CHUNK_LINES` by
default), twice. The scan (first pass) keeps the text of every line that is not a sample line (messages,
events, headers: a few percent of a recording) and, of the sample lines, only runs of line numbers and
per-chunk counts; :meth:`AscScan.sample_chunks` (second pass) re-reads the chunks that hold sample lines,
one at a time, by byte offset. So at most ``chunk_lines`` lines of text are held at once. Reading, decoding and
classifying the lines of a chunk: :mod:`readgaze.io.asc_lines`.

Text: the file is decoded with ``encoding`` (default UTF-8). Bytes that do not decode are replaced
with U+FFFD and the lines holding them are counted in a warning; byte-order marks (U+FEFF) anywhere
in a line are removed (an export tool that writes one inside a message would otherwise defeat an
anchored ``trial_message`` pattern) and counted.

Damaged lines inside a recording block (issue 29) are counted and warned about with their first line, never read
silently: a sample line whose timestamp is negative (``-123 ...``; EyeLink's clock never is) and a line of no known
kind (garbage from a tracker hiccup, a cut keyword) are dropped; a line cut short at the end of the file is dropped.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import polars as pl

from readgaze.errors import ConfigError, Option, ParseError
from readgaze.io.asc_lines import (  # noqa: F401 -- KEYWORDS, LINE_KINDS, decode_chunk: public here too
    KEYWORDS,
    LINE_KINDS,
    byte_chunks,
    codec_name,
    decode_chunk,
    line_kinds,
    no_block_error,
)
from readgaze.qc import QCLog

#: Line kinds written into the per-block file for mne (messages stay with readgaze: mne keeps only
#: in-block messages, skips any line holding ``;``, ``!V`` or ``!MODE``, and decodes with the locale).
FOR_MNE = ("START", "PRESCALER", "VPRESCALER", "PUPIL", "EVENTS", "SAMPLES", "sample", "EFIX",
           "ESACC", "EBLINK", "END")
STEP = "read_asc"
#: Lines that carry recording data (an open block extends at least to its last one).
DATA_KINDS = ("sample", "SFIX", "EFIX", "SSACC", "ESACC", "SBLINK", "EBLINK", "INPUT", "BUTTON")
TRIALID_RE = r"^MSG\s+\S+\s+(?:-?\d+\s+)?TRIALID\b"
#: Lines per chunk read at once (about 4 MiB of sample text; a chunk's tokens take about 10x that).
CHUNK_LINES = 100_000


@dataclass
class Block:
    """One recording block (``START`` ... ``END``) as found in the file; lines are 1-based."""

    index: int
    start_line: int
    last_line: int
    start_ms: float
    end_ms: float | None
    closed_by: str  # "END", "calibration", "next START" or "end of file"
    eyes: tuple[str, ...] = ()
    sampling_rate_hz: float | None = None
    n_samples: int = 0
    event_counts: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class Chunk:
    """A run of whole lines of the file: byte ``offset`` and ``size``, ``first_line`` (1-based),
    ``n_lines`` and ``n_samples`` (how many of them are sample lines)."""

    offset: int
    size: int
    first_line: int
    n_lines: int
    n_samples: int


@dataclass
class AscScan:
    """The file's non-sample lines, classified, with their block; the blocks, the chunks, what was repaired.

    ``lines`` holds every line that is not a sample line: ``line`` (UInt32, 1-based), ``text``, ``kind``
    (:data:`LINE_KINDS`), ``block`` (Int32, null outside blocks). Sample lines are read again, a chunk at
    a time, by :meth:`sample_chunks`.
    """

    path: Path
    lines: pl.DataFrame
    blocks: list[Block]
    warnings: list[str]
    qc: QCLog
    chunks: list[Chunk] = field(default_factory=list)
    encoding: str = "utf-8"  # the codec's canonical name
    n_lines: int = 0
    rows: dict[int, tuple[int, int]] = field(default_factory=dict)  # block -> row range of ``lines``

    def block_lines(self, index: int) -> pl.DataFrame:
        """The non-sample lines of one block: a zero-copy slice of ``lines`` (a block is a contiguous run)."""
        lo, hi = self.rows.get(index, (0, 0))
        return self.lines.slice(lo, hi - lo)

    def sample_chunks(self) -> Iterator[tuple[Block, pl.DataFrame]]:
        """The sample lines inside blocks, in file order: ``(block, frame)`` with ``line`` (UInt32) and ``text``.

        Each chunk of the file that holds sample lines is read once and split by block, so one frame
        holds at most ``chunk_lines`` lines (and one block's lines arrive as several frames when the
        block spans chunks).
        """
        blocks = [b for b in self.blocks if b.n_samples]
        i = 0
        with self.path.open("rb") as handle:
            for chunk in self.chunks:
                last = chunk.first_line + chunk.n_lines - 1
                while i < len(blocks) and blocks[i].last_line < chunk.first_line:
                    i += 1
                inside = []
                for b in blocks[i:]:
                    if b.start_line > last:
                        break
                    inside.append(b)
                if not chunk.n_samples or not inside:
                    continue
                handle.seek(chunk.offset)
                text = decode_chunk(handle.read(chunk.size), self.encoding, chunk.first_line)[0]
                samples = text.filter(pl.col("text").str.contains(r"^[0-9]")).select("line", "text")  # see line_kinds
                lines = samples["line"]
                for b in inside:
                    lo, hi = lines.search_sorted(b.start_line, "left"), lines.search_sorted(b.last_line, "right")
                    if hi > lo:
                        yield b, samples.slice(lo, hi - lo)


@dataclass
class _Lines:
    """What the first pass keeps: the non-sample lines, runs of sample line numbers, the chunks."""

    kept: pl.DataFrame
    run_first: np.ndarray
    run_last: np.ndarray
    chunks: list[Chunk]
    n_lines: int


def _first_pass(path: Path, codec: str, chunk_lines: int, encoding: str, warnings: list[str],
                qc: QCLog) -> _Lines:
    kept, firsts, lasts, chunks = [], [], [], []
    line, replaced, bad, bom, nul = 1, False, [0, None], [0, None], [0, None]  # counts and first lines
    for offset, data in byte_chunks(path, chunk_lines):
        frame, lossy = decode_chunk(data, codec, line)
        replaced |= lossy
        for tally, hit in ((bad, pl.col("text").str.contains("\ufffd", literal=True)),
                           (bom, pl.col("_bom") if "_bom" in frame.columns else None),
                           (nul, pl.col("text").str.contains("\x00", literal=True))):
            if hit is not None:
                lines = frame.filter(hit)["line"]
                if lines.len():
                    tally[0] += lines.len()
                    tally[1] = tally[1] or int(lines[0])
        kind = line_kinds(frame)
        is_sample = kind == "sample"
        numbers = frame["line"].filter(is_sample).to_numpy().astype(np.int64)
        if len(numbers):
            breaks = np.flatnonzero(np.diff(numbers) != 1)
            firsts.append(numbers[np.r_[0, breaks + 1]])
            lasts.append(numbers[np.r_[breaks, len(numbers) - 1]])
        rest = frame.select("line", "text").with_columns(kind).filter(~is_sample)
        # a new string buffer: a filtered view would keep the whole chunk's text alive
        kept.append(rest.with_columns(text=pl.Series(rest["text"].to_list(), dtype=pl.String)))
        chunks.append(Chunk(offset, len(data), line, frame.height, len(numbers)))
        line += frame.height
    if replaced:
        warnings.append(f"{path.name} line {bad[1]}: {bad[0]} line(s) hold bytes that are not valid "
                        f"{encoding}; replaced with U+FFFD (pass encoding=, e.g. 'cp1252')")
        qc.add(STEP, "lines", f"bytes not valid {encoding} replaced", bad[0], action="changed",
               detail=f"first line {bad[1]}")
    if bom[0]:
        qc.add(STEP, "lines", "byte-order mark (U+FEFF) removed", bom[0], action="changed",
               detail=f"first line {bom[1]}")
    if nul[0]:  # a sample's value or an event's field with one is refused or counted again where it is read
        warnings.append(f"{path.name} line {nul[1]}: {nul[0]} line(s) hold a NUL byte (a damaged file?)")
        qc.add(STEP, "lines", "NUL byte inside a line", nul[0], action="flagged", detail=f"first line {nul[1]}")
    empty = pl.DataFrame(schema={"line": pl.get_index_type(), "text": pl.String, "kind": LINE_KINDS})
    cat = lambda parts: np.concatenate(parts) if parts else np.zeros(0, np.int64)  # noqa: E731
    return _Lines(pl.concat([empty, *kept]), cat(firsts), cat(lasts), chunks, line - 1)


def _samples_upto(read: _Lines, line: np.ndarray) -> np.ndarray:
    """Number of sample lines at or before each ``line``."""
    if not len(read.run_first):
        return np.zeros(len(line), np.int64)
    sizes = read.run_last - read.run_first + 1
    before = np.concatenate([[0], np.cumsum(sizes)])
    i = np.searchsorted(read.run_first, line, side="right")  # runs starting at or before the line
    partial = np.where(i > 0, np.minimum(line, read.run_last[np.maximum(i - 1, 0)])
                       - read.run_first[np.maximum(i - 1, 0)] + 1, 0)
    return np.where(i > 0, before[np.maximum(i - 1, 0)] + np.maximum(partial, 0), 0)


def _find_blocks(lines: pl.DataFrame, data_lines: np.ndarray, n_lines: int, name: str, warnings: list[str],
                 qc: QCLog) -> list[Block]:
    """Walk the few START/END/calibration lines and close every block, warning where END is missing.

    ``data_lines``: sorted line numbers that carry recording data (at least the last of every run of
    sample lines, and every event line).
    """
    marks = lines.filter(pl.col("kind").is_in(["START", "END", "calibration"]))
    marks = marks.with_columns(t=pl.col("text").str.extract(r"^[A-Z]+\s+(\S+)").cast(pl.Float64, strict=False))
    starts = marks.filter(pl.col("kind") == "START")["line"].to_list()
    trialids = lines.filter(pl.col("kind") == "MSG", pl.col("text").str.contains(TRIALID_RE))["line"].to_numpy()
    blocks: list[Block] = []
    current: Block | None = None

    def before_next_trial(start: int) -> tuple[int, str]:
        """Close an open block before the next START: after its last data line, and before a TRIALID
        message that lies between that line and the START (it names the next trial)."""
        i = np.searchsorted(data_lines, start) - 1
        last_data = int(data_lines[i]) if i >= 0 and data_lines[i] > current.start_line else current.start_line
        named = trialids[(trialids > last_data) & (trialids < start)]
        return (int(named[0]) - 1, "next trial's TRIALID") if len(named) else (start - 1, "next START")

    def close(last_line: int, reason: str) -> None:
        nxt = [s for s in starts if s > current.start_line]
        where = f"; the next START is on line {nxt[0]}" if nxt else ""
        at = f"line {last_line + 1}" if reason != "end of file" else f"the last line, {last_line}"
        warnings.append(f"{name} line {current.start_line}: recording block opened here has no END; "
                        f"closed at {at} ({reason}){where}")
        qc.add(STEP, "trials", "block without END", 1, action="changed",
               detail=f"line {current.start_line}, closed at {at} ({reason})")
        current.last_line, current.closed_by = last_line, reason
        blocks.append(current)

    for line, kind, t in marks.select("line", "kind", "t").iter_rows():
        if kind == "START":
            if t is None:
                raise ParseError("START line without a timestamp", file=name, row=line)
            if current is not None:
                close(*before_next_trial(line))
            current = Block(len(blocks), line, line, t, None, "END")
        elif kind == "END" and current is not None:
            current.last_line, current.end_ms = line, t
            blocks.append(current)
            current = None
        elif kind == "END":
            warnings.append(f"{name} line {line}: END without a START; ignored")
            qc.add(STEP, "lines", "END without START", 1, action="dropped", detail=f"line {line}")
        elif current is not None:  # calibration header inside an open block
            close(line - 1, "calibration")
            current = None
    if current is not None:
        close(n_lines, "end of file")
    return blocks


def _block_header(block: Block, rows: pl.DataFrame, name: str) -> None:
    """Fill eyes and sampling rate from the block's SAMPLES line."""
    spec = rows.filter(pl.col("kind") == "SAMPLES")["text"].head(1).to_list()
    if not spec:
        raise ParseError("recording block has no SAMPLES line (eyes and sampling rate unknown)",
                         file=name, row=block.start_line)
    tokens = spec[0].split()
    block.eyes = tuple(e.lower() for e in ("LEFT", "RIGHT") if e in tokens)
    try:
        block.sampling_rate_hz = float(tokens[tokens.index("RATE") + 1])
    except (ValueError, IndexError):
        raise ParseError(f"SAMPLES line has no RATE value: {spec[0]!r}", file=name,
                         row=block.start_line) from None


def scan_asc(path: str | Path, *, encoding: str = "utf-8", chunk_lines: int = CHUNK_LINES) -> AscScan:
    """Classify every line of an ``.asc`` file and find its recording blocks, reading it in chunks.

    Parameters
    ----------
    path : str or Path
        EyeLink ASCII file (``edf2asc`` output).
    encoding : str
        Text encoding of the file (default UTF-8; e.g. ``"cp1252"`` for Windows exports; any codec
        in which a newline is the byte ``\n``).
    chunk_lines : int
        Lines read and decoded at once (default :data:`CHUNK_LINES`).

    Returns
    -------
    AscScan
        ``lines`` has one row per line that is not a sample line: ``line`` (1-based, as an editor
        shows it), ``text``, ``kind`` (a keyword such as ``MSG``/``EFIX``, or ``calibration``,
        ``header``, ``continuation``, ``blank``, ``other``) and ``block`` (0-based, null outside blocks).
        ``chunks`` say where each chunk of lines lies in the file; ``blocks`` count their sample lines.

    Raises
    ------
    ParseError
        No recording block at all, or a block without a ``SAMPLES`` line / ``RATE``.
    ConfigError
        Unknown ``encoding``, or ``chunk_lines`` < 1.
    """
    path = Path(path)
    name = path.name
    if chunk_lines < 1:
        raise ConfigError(f"chunk_lines: got {chunk_lines!r}, expected a positive number of lines")
    codec = codec_name(encoding)
    warnings: list[str] = []
    qc = QCLog()
    read = _first_pass(path, codec, chunk_lines, encoding, warnings, qc)
    lines = read.kept
    data_lines = np.union1d(lines.filter(pl.col("kind").is_in(DATA_KINDS))["line"].to_numpy().astype(np.int64),
                            read.run_last)
    blocks = _find_blocks(lines, data_lines, read.n_lines, name, warnings, qc)
    from readgaze.io.faults import is_utf16, lone_cr_error

    if not blocks and codec == "utf-8" and is_utf16(path):
        raise ParseError("the file is UTF-16 text, not an EyeLink .asc as edf2asc writes it (ASCII): save it as UTF-8",
                         file=path, row=1, options=(Option("encoding='utf-16'", "--encoding utf-16"),))
    if not blocks and codec == "utf-8" and (mixed := lone_cr_error(path)) is not None:
        raise mixed
    if not blocks:
        raise no_block_error(path, lines, read.run_first)
    spans = pl.DataFrame({"first": [b.start_line for b in blocks], "last": [b.last_line for b in blocks],
                          "block": [b.index for b in blocks]},
                         schema={"first": lines.schema["line"], "last": lines.schema["line"], "block": pl.Int32})
    lines = lines.join_asof(spans, left_on="line", right_on="first", strategy="backward").with_columns(
        block=pl.when(pl.col("line") <= pl.col("last")).then(pl.col("block"))).drop("first", "last")
    numbers = lines["line"]
    rows = {b.index: (numbers.search_sorted(b.start_line, "left"), numbers.search_sorted(b.last_line, "right"))
            for b in blocks}
    counts = (lines.filter(pl.col("block").is_not_null()).group_by("block", "kind").len()
              .iter_rows())
    per_block: dict[int, dict[str, int]] = {}
    for b, kind, n in counts:
        per_block.setdefault(b, {})[kind] = n
    edges = np.array([[b.start_line - 1, b.last_line] for b in blocks], dtype=np.int64)
    in_block = _samples_upto(read, edges[:, 1]) - _samples_upto(read, edges[:, 0])
    spec_lines = lines.filter(pl.col("kind") == "SAMPLES")
    for block, n in zip(blocks, in_block.tolist()):
        block.event_counts = per_block.get(block.index, {})
        if n:
            block.event_counts["sample"] = n
        block.n_samples = n
        _block_header(block, spec_lines.filter(pl.col("block") == block.index), name)
    _count_stray_lines(lines, read, blocks, name, warnings, qc)
    if read.chunks and not _ends_with_break(path):  # edf2asc ends its files with a line break
        warnings.append(f"{name} line {read.n_lines}: the file does not end with a line break: is it cut short (an "
                        "interrupted copy)? Its last line is read as it is")
        qc.add(STEP, "lines", "no line break at the end of the file (cut short?)", 1, action="flagged",
               detail=f"line {read.n_lines}")
    return AscScan(path, lines, blocks, warnings, qc, read.chunks, codec, read.n_lines, rows)


def _ends_with_break(path: Path) -> bool:
    with path.open("rb") as f:
        f.seek(0, 2)
        if f.tell() == 0:
            return True
        f.seek(-1, 2)
        return f.read(1) == b"\n"


def _count_stray_lines(lines: pl.DataFrame, read: _Lines, blocks: list[Block], name: str, warnings: list[str],
                       qc: QCLog) -> None:
    starts = np.array([b.start_line for b in blocks], dtype=np.int64)
    ends = np.array([b.last_line for b in blocks], dtype=np.int64)
    i = np.searchsorted(starts, read.run_first, side="right") - 1
    inside = (i >= 0) & (read.run_first <= ends[np.maximum(i, 0)])  # runs never cross a block edge
    outside = int((read.run_last - read.run_first + 1)[~inside].sum())
    if outside:
        first = int(read.run_first[~inside][0])
        warnings.append(f"{name} line {first}: {outside} sample line(s) outside any recording block; not read")
        qc.add(STEP, "samples", "outside recording block", outside, detail=f"first line {first}")
    cont = lines.filter(pl.col("block").is_not_null(), pl.col("kind") == "continuation")
    if cont.height:
        qc.add(STEP, "lines", "indented line inside block (not a sample)", cont.height, action="dropped",
               detail=f"first line {cont['line'][0]}")
    for kind, what in (("negative", "sample line(s) with a negative timestamp (EyeLink's clock never is)"),
                       ("other", "line(s) of no known kind (a damaged line?)")):
        odd = lines.filter(pl.col("block").is_not_null(), pl.col("kind") == kind)
        if odd.height:
            first = int(odd["line"][0])
            warnings.append(f"{name} line {first}: {odd.height} {what} inside a recording block; not read")
            qc.add(STEP, "lines", f"{what.replace('(s)', '')} inside a block", odd.height, action="dropped",
                   detail=f"first line {first}")
