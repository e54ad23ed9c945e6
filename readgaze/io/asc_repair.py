"""Structural scan of an EyeLink ``.asc`` file, and the repaired per-block text handed to mne.

``mne.io.read_raw_eyelink`` (MNE-Python 1.13, ``mne/io/eyelink/_utils.py``) mishandles real files: it
stores a recording block only when it reaches ``END`` (a block without ``END`` is lost silently, or the whole file fails), reads indented calibration rows that start with a
digit as samples, collapses sample gaps inside a block, sorts duplicated 2 kHz timestamps
unstably, and raises when the sampling rate changes between blocks.

So readgaze first scans the file itself (Polars, one regex pass over all lines) and finds the
recording blocks. Each block ends at its ``END`` line, or, when ``END`` is missing, just before
a calibration header (``>>>>>>> CALIBRATION``), the next ``START`` or the end of the file (with a
warning naming both lines); the line before it is the block's last data line, or the line before
the next trial's ``TRIALID`` message when one sits between them. Duplicated timestamps are made
strictly increasing (:func:`sample_times`) and sample lines are checked against the ``SAMPLES``
declaration (:func:`sample_fields`). :mod:`readgaze.io.asc_block` then parses each block;
:func:`write_block_for_mne` writes a block as the small file ``mne.io.read_raw_eyelink`` reads
correctly (``START``, headers, samples, ``E*`` events, a synthesised ``END`` where the file had
none), which the tests use as the oracle.

Text: the file is decoded with ``encoding`` (default UTF-8). Bytes that do not decode are replaced
with U+FFFD and the lines holding them are counted in a warning; byte-order marks (U+FEFF) anywhere
in a line are removed (an export tool that writes one inside a message would otherwise defeat an
anchored ``trial_message`` pattern) and counted.
"""

from __future__ import annotations

import codecs
import io
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import polars as pl

from readgaze.errors import ConfigError, ParseError
from readgaze.qc import QCLog

KEYWORDS = ("START", "END", "MSG", "SFIX", "EFIX", "SSACC", "ESACC", "SBLINK", "EBLINK", "SAMPLES",
            "EVENTS", "PRESCALER", "VPRESCALER", "PUPIL", "INPUT", "BUTTON")
#: Line kinds written into the per-block file for mne (messages stay with readgaze: mne keeps only
#: in-block messages, skips any line holding ``;``, ``!V`` or ``!MODE``, and decodes with the locale).
FOR_MNE = ("START", "PRESCALER", "VPRESCALER", "PUPIL", "EVENTS", "SAMPLES", "sample", "EFIX",
           "ESACC", "EBLINK", "END")
STEP = "read_asc"
LINE_KINDS = pl.Enum([*KEYWORDS, "sample", "calibration", "header", "blank", "continuation", "other"])
#: Lines that carry recording data (an open block extends at least to its last one).
DATA_KINDS = ("sample", "SFIX", "EFIX", "SSACC", "ESACC", "SBLINK", "EBLINK", "INPUT", "BUTTON")
TRIALID_RE = r"^MSG\s+\S+\s+(?:-?\d+\s+)?TRIALID\b"


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


@dataclass
class AscScan:
    """Every line of the file, classified, with its block; plus the blocks and what was repaired."""

    path: Path
    lines: pl.DataFrame  # line (UInt32, 1-based), text, kind, block (Int32, null outside blocks)
    blocks: list[Block]
    warnings: list[str]
    qc: QCLog
    def block_lines(self, index: int) -> pl.DataFrame:
        """The lines of one block: a zero-copy slice (a block is a contiguous run of lines, row = line - 1)."""
        block = next((b for b in self.blocks if b.index == index), None)
        if block is None:
            return self.lines.clear()
        return self.lines.slice(block.start_line - 1, block.last_line - block.start_line + 1)


def _newlines(path: Path) -> int:
    """Number of lines of a file (a last line without a newline counts), read in 16 MiB chunks."""
    n, last = 0, b"\n"
    with path.open("rb") as handle:
        while chunk := handle.read(1 << 24):
            n, last = n + chunk.count(b"\n"), chunk[-1:]
    return n + (0 if last == b"\n" else 1)


def _read_text(source, lossy: bool) -> pl.DataFrame:
    return pl.read_csv(source, has_header=False, separator="\x1f", quote_char=None, new_columns=["text"],
                       schema={"text": pl.String}, encoding="utf8-lossy" if lossy else "utf8")


def _decoded(path: Path, encoding: str) -> tuple[pl.DataFrame, bool]:
    """One row per line of text, and whether some bytes did not decode (replaced with U+FFFD).

    UTF-8 is parsed by polars straight from the file (no copy in Python); another codec is decoded in
    Python first.
    """
    try:
        codec = codecs.lookup(encoding).name
    except LookupError:
        raise ConfigError(f"encoding: unknown codec {encoding!r} (e.g. 'utf-8', 'cp1252', 'latin-1')") from None
    if codec == "utf-8":
        try:
            return _read_text(path, lossy=False), False
        except pl.exceptions.ComputeError:
            return _read_text(path, lossy=True), True  # polars' utf8-lossy read replaces the bad bytes
    text = path.read_bytes().decode(codec, errors="replace")
    return _read_text(io.BytesIO(text.encode("utf-8")), lossy=False), "\ufffd" in text  # a single-byte codec
    # cannot hold U+FFFD itself, so every one is a replaced byte


def _read_lines(path: Path, encoding: str = "utf-8", warnings: list[str] | None = None,
                qc: QCLog | None = None) -> pl.DataFrame:
    warnings = [] if warnings is None else warnings
    frame, replaced = _decoded(path, encoding)
    n_expected = _newlines(path)
    if frame.height != n_expected:  # pragma: no cover - guards a change in polars' blank-line rule
        raise ParseError(f"read {frame.height} lines, the file has {n_expected}", file=path)
    head = pl.col("text").str.slice(0, 16)  # a line's kind shows in its first characters: no full-line copies
    kind = head.str.extract(r"^([A-Z]+)\b")
    frame = frame.with_row_index("line", offset=1).with_columns(pl.col("text").fill_null(""))
    if frame.select(pl.col("text").str.ends_with("\r").any()).item():
        frame = frame.with_columns(pl.col("text").str.strip_chars_end("\r"))
    if replaced:
        bad = frame.filter(pl.col("text").str.contains("\ufffd", literal=True))["line"]
        warnings.append(f"{path.name} line {bad[0]}: {bad.len()} line(s) hold bytes that are not valid "
                        f"{encoding}; replaced with U+FFFD (pass encoding=, e.g. 'cp1252')")
        if qc is not None:
            qc.add(STEP, "lines", f"bytes not valid {encoding} replaced", bad.len(), action="changed",
                   detail=f"first line {bad[0]}")
    bom = frame.filter(pl.col("text").str.contains("\ufeff", literal=True))["line"]
    if bom.len():
        frame = frame.with_columns(pl.col("text").str.replace_all("\ufeff", "", literal=True))
        if qc is not None:
            qc.add(STEP, "lines", "byte-order mark (U+FEFF) removed", bom.len(), action="changed",
                   detail=f"first line {bom[0]}")
    names = LINE_KINDS.categories.to_list()
    code = {k: pl.lit(names.index(k), pl.UInt8) for k in names}  # small integer codes, then one Enum gather
    keyword = kind.replace_strict(list(KEYWORDS), [names.index(k) for k in KEYWORDS], default=names.index("other"),
                                  return_dtype=pl.UInt8)
    codes = frame.select(
        pl.when(head.str.contains(r"^[0-9]")).then(code["sample"])
        .when(head.str.starts_with(">>>>>>>")).then(code["calibration"])
        .when(head.str.starts_with("**")).then(code["header"])
        .when(pl.col("text").str.contains(r"^\s*$")).then(code["blank"])
        .when(head.str.contains(r"^\s")).then(code["continuation"])
        .otherwise(keyword.fill_null(names.index("other")))).to_series()
    return frame.with_columns(kind=pl.Series(names, dtype=LINE_KINDS).gather(codes))


def _find_blocks(lines: pl.DataFrame, name: str, warnings: list[str], qc: QCLog) -> list[Block]:
    """Walk the few START/END/calibration lines and close every block, warning where END is missing."""
    marks = lines.filter(pl.col("kind").is_in(["START", "END", "calibration"]))
    marks = marks.with_columns(t=pl.col("text").str.extract(r"^[A-Z]+\s+(\S+)").cast(pl.Float64, strict=False))
    starts = marks.filter(pl.col("kind") == "START")["line"].to_list()
    data_lines = lines.filter(pl.col("kind").is_in(DATA_KINDS))["line"].to_numpy()
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
        close(lines.height, "end of file")
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


def scan_asc(path: str | Path, *, encoding: str = "utf-8") -> AscScan:
    """Classify every line of an ``.asc`` file and find its recording blocks.

    Parameters
    ----------
    path : str or Path
        EyeLink ASCII file (``edf2asc`` output).
    encoding : str
        Text encoding of the file (default UTF-8; e.g. ``"cp1252"`` for Windows exports).

    Returns
    -------
    AscScan
        ``lines`` has one row per line: ``line`` (1-based, as an editor shows it), ``text``,
        ``kind`` (a keyword such as ``MSG``/``EFIX``, or ``sample``, ``calibration``, ``header``,
        ``continuation``, ``blank``, ``other``) and ``block`` (0-based, null outside blocks).

    Raises
    ------
    ParseError
        No recording block at all, or a block without a ``SAMPLES`` line / ``RATE``.
    ConfigError
        Unknown ``encoding``.
    """
    path = Path(path)
    name = path.name
    warnings: list[str] = []
    qc = QCLog()
    lines = _read_lines(path, encoding, warnings, qc)
    blocks = _find_blocks(lines, name, warnings, qc)
    if not blocks:
        raise ParseError("no recording block (no START line): not an EyeLink sample/event file", file=path)
    spans = pl.DataFrame({"first": [b.start_line for b in blocks], "last": [b.last_line for b in blocks],
                          "block": [b.index for b in blocks]},
                         schema={"first": pl.UInt32, "last": pl.UInt32, "block": pl.Int32})
    lines = lines.join_asof(spans, left_on="line", right_on="first", strategy="backward").with_columns(
        block=pl.when(pl.col("line") <= pl.col("last")).then(pl.col("block"))).drop("first", "last")
    counts = (lines.filter(pl.col("block").is_not_null()).group_by("block", "kind").len()
              .iter_rows())
    per_block: dict[int, dict[str, int]] = {}
    for b, kind, n in counts:
        per_block.setdefault(b, {})[kind] = n
    spec_lines = lines.filter(pl.col("kind") == "SAMPLES")
    for block in blocks:
        block.event_counts = per_block.get(block.index, {})
        block.n_samples = block.event_counts.get("sample", 0)
        _block_header(block, spec_lines.filter(pl.col("block") == block.index), name)
    _count_stray_lines(lines, name, warnings, qc)
    return AscScan(path, lines, blocks, warnings, qc)


def _count_stray_lines(lines: pl.DataFrame, name: str, warnings: list[str], qc: QCLog) -> None:
    outside = lines.filter(pl.col("block").is_null(), pl.col("kind") == "sample")
    if outside.height:
        warnings.append(f"{name} line {outside['line'][0]}: {outside.height} sample line(s) outside any "
                        "recording block; not read")
        qc.add(STEP, "samples", "outside recording block", outside.height, detail=f"first line {outside['line'][0]}")
    cont = lines.filter(pl.col("block").is_not_null(), pl.col("kind") == "continuation")
    if cont.height:
        qc.add(STEP, "lines", "indented line inside block (not a sample)", cont.height, action="dropped",
               detail=f"first line {cont['line'][0]}")


def sample_times(scan: AscScan, block: Block) -> pl.DataFrame:
    """Sample lines of one block with ``time_ms`` as written and ``time_ms_repaired``.

    At rates above 1000 Hz EyeLink may print integer milliseconds, so two samples share one
    timestamp (the EMTeC corpus's 2 kHz recordings do). The k-th repeat of a timestamp gets ``+ k * 1000 / rate`` ms, giving
    1002.0, 1002.5, 1003.0, ... Other repeats are left as written (and reported by the caller).
    """
    rows = scan.block_lines(block.index).filter(pl.col("kind") == "sample")
    rows = rows.with_columns(time_ms=pl.col("text").str.extract(r"^(\S+)").cast(pl.Float64, strict=False))
    bad = rows.filter(pl.col("time_ms").is_null())
    if bad.height:
        raise ParseError(f"sample timestamp is not a number: {bad['text'][0][:40]!r}", file=scan.path,
                         row=int(bad["line"][0]))
    interval = 1000.0 / block.sampling_rate_hz
    run = (pl.col("time_ms") != pl.col("time_ms").shift(1)).fill_null(True).cum_sum()
    repeat = pl.int_range(pl.len()).over(run)
    repaired = pl.col("time_ms") + repeat * interval if interval < 1.0 else pl.col("time_ms")
    return rows.with_columns(time_ms_repaired=repaired)


#: Optional sample-line field groups of a ``SAMPLES`` line, in the order EyeLink writes them, with
#: their number of values (per eye for ``VEL``). EyeLink 1000 Plus User Manual 1.0.19, section 4.9.5.
SAMPLE_GROUPS = (("VEL", 2), ("RES", 2), ("INPUT", 1), ("HTARGET", 3))
_STATUS = r"(?:^|\s)[.A-Z]{3,}(?:\s|$)"  # a status token ("...", "C.R..", "MANCR"), never a value


def sample_fields(scan: AscScan, block: Block, warnings: list[str]) -> str | None:
    """Check the values on the block's sample lines against its ``SAMPLES`` line.

    Each sample line holds the time, x, y, pupil per eye, then the declared optional groups
    (:data:`SAMPLE_GROUPS`) and status tokens. When every sample line has the same number of values and
    it equals the declaration without its last group(s) (``HTARGET`` declared, 5-field lines written),
    the fields present are read: returns the ``SAMPLES`` text to hand to mne, with a warning naming the
    ``SAMPLES`` line and the first sample line. Returns None when the lines match the declaration.

    Raises
    ------
    ParseError
        Sample lines with different numbers of values, or a number no declaration prefix explains
        (names the ``SAMPLES`` line and the first sample line that disagrees).
    """
    rows = scan.block_lines(block.index)
    spec = rows.filter(pl.col("kind") == "SAMPLES").head(1)
    samples = rows.filter(pl.col("kind") == "sample")
    if not samples.height or not spec.height:
        return None
    spec_line, spec_text = int(spec["line"][0]), spec["text"][0]
    tokens = spec_text.split()
    n_eyes = len(block.eyes)
    declared = [(g, n * (n_eyes if g == "VEL" else 1)) for g, n in SAMPLE_GROUPS if g in tokens]
    want = 1 + 3 * n_eyes + sum(n for _, n in declared)
    counts = samples.select("line", n=pl.col("text").str.count_matches(r"\S+")
                            - pl.col("text").str.count_matches(_STATUS))
    first = counts.row(0, named=True)
    odd = counts.filter(pl.col("n") != first["n"])
    where = f"SAMPLES line {spec_line}"
    if odd.height:
        raise ParseError(f"sample lines disagree on their number of values: line {first['line']} has "
                         f"{first['n']}, line {odd['line'][0]} has {odd['n'][0]} ({where} declares {want})",
                         file=scan.path, row=int(odd["line"][0]))
    if first["n"] == want:
        return None
    keep, n = [], 1 + 3 * n_eyes
    for group, size in declared:
        if n == first["n"]:
            break
        keep.append(group)
        n += size
    if n != first["n"]:
        raise ParseError(f"sample line {first['line']} has {first['n']} values; {where} ({spec_text.strip()!r}) "
                         f"declares {want}, and no prefix of its optional fields gives {first['n']}",
                         file=scan.path, row=int(first["line"]))
    absent = [g for g, _ in declared if g not in keep]
    warnings.append(f"{scan.path.name} line {spec_line}: SAMPLES declares {' '.join(absent)} but the sample "
                    f"lines (first on line {first['line']}) hold {first['n']} values, not {want}; read the "
                    f"fields present")
    return "\t".join(t for t in tokens if t not in absent)


def write_block_for_mne(scan: AscScan, block: Block, times: pl.DataFrame, target: Path,
                        samples_line: str | None = None) -> None:
    """Write the lines mne needs for one block into ``target`` (header, block, END if missing).

    ``samples_line`` replaces the block's ``SAMPLES`` line (see :func:`sample_fields`).
    """
    before_first = scan.lines.slice(0, scan.blocks[0].start_line)  # the "**" header (mne reads its DATE)
    header = before_first.filter(pl.col("kind") == "header").select("line", "text")
    body = scan.block_lines(block.index).filter(pl.col("kind").is_in(FOR_MNE), pl.col("kind") != "sample")
    if samples_line is not None:
        body = body.with_columns(text=pl.when(pl.col("kind") == "SAMPLES").then(pl.lit(samples_line))
                                 .otherwise(pl.col("text")))
    fixed = times.filter(pl.col("time_ms") != pl.col("time_ms_repaired")).select(
        "line", text=pl.concat_str([pl.col("time_ms_repaired").round(3).cast(pl.String),
                                    pl.col("text").str.replace(r"^\S+", "")]))
    samples = times.select("line", "text").update(fixed, on="line")
    parts = [header, body.select("line", "text"), samples]
    if block.end_ms is None:
        parts.append(pl.DataFrame({"line": [block.last_line + 0.5], "text": [
            f"END\t{block_end_ms(block, times):.3f} \tSAMPLES\tEVENTS\tRES\t0.00\t0.00"]}).cast({"line": pl.Float64}))
    out = pl.concat([p.with_columns(pl.col("line").cast(pl.Float64)) for p in parts]).sort("line", maintain_order=True)
    out.select("text").write_csv(target, include_header=False, quote_style="never")


def block_end_ms(block: Block, times: pl.DataFrame) -> float:
    """End of a block (exclusive): its END time, or one interval after the last sample."""
    last = times["time_ms_repaired"].max() if times.height else block.start_ms
    after_last = last + 1000.0 / block.sampling_rate_hz
    return after_last if block.end_ms is None else max(block.end_ms, after_last)
