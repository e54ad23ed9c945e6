"""Checks and repairs of a recording block's sample lines, and the repaired per-block text handed to mne.

Duplicated timestamps at rates above 1000 Hz are made strictly increasing and sample lines are checked against the
``SAMPLES`` declaration (:class:`BlockSamples`, chunk by chunk, over the blocks :mod:`readgaze.io.asc_scan` found).
``mne.io.read_raw_eyelink`` (MNE-Python 1.13) collapses sample gaps inside a block, sorts duplicated 2 kHz
timestamps unstably and raises when the sampling rate changes between blocks; :func:`write_block_for_mne` writes a
block as the small file it reads correctly (``START``, headers, samples, ``E*`` events, a synthesised ``END`` where
the file had none), which the tests use as the oracle of :mod:`readgaze.io.asc_block`.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import polars as pl

from readgaze.errors import ParseError
from readgaze.io.asc_scan import FOR_MNE, STEP, AscScan, Block
from readgaze.qc import QCLog


class BlockSamples:
    """Checks and repairs of one block's sample lines, which arrive in chunks in file order.

    * :meth:`times` adds ``time_ms`` (as written) and ``time_ms_repaired``. At rates above 1000 Hz
      EyeLink may print integer milliseconds, so two samples share one timestamp (the EMTeC corpus's
      2 kHz recordings do). The k-th repeat of a timestamp gets ``+ k * 1000 / rate`` ms, giving 1002.0,
      1002.5, 1003.0, ...; a run of repeats may span chunks. Other repeats are left as written.
    * :meth:`fields` checks the values on every sample line against the ``SAMPLES`` line (see
      :func:`sample_fields`).
    * :meth:`finish` reports the repairs (QC log, warnings naming the lines) and returns the
      ``SAMPLES`` text the lines match (None when they match the declaration).

    Raises
    ------
    ParseError
        A timestamp that is not a number; sample lines with different numbers of values, or a number no
        prefix of the declaration explains (file and line named).
    """

    def __init__(self, scan: AscScan, block: Block):
        self.scan, self.block = scan, block
        self.interval = 1000.0 / block.sampling_rate_hz
        self.last_time: float | None = None
        self.repeats = 0  # samples so far with ``last_time`` in the current run
        self.last_repaired: float | None = None
        self.max_repaired: float | None = None
        self.changed = 0
        self.late, self.back = [0, None], [0, None]  # count, first line
        self.gap = [0, None]  # samples missing between consecutive timestamps, first line after a gap
        self.first: dict | None = None  # the block's first sample line and its number of values
        self.cut: int | None = None  # the file's last line, cut short (dropped)
        self.malformed = [0, None]  # sample lines with a value neither a number nor '.', first line

    def times(self, rows: pl.DataFrame) -> pl.DataFrame:
        rows = rows.with_columns(time_ms=pl.col("text").str.extract(r"^(\S+)").cast(pl.Float64, strict=False))
        bad = rows.filter(pl.col("time_ms").is_null())
        if bad.height:
            raise ParseError(f"sample timestamp is not a number: {bad['text'][0][:40]!r}", file=self.scan.path,
                             row=int(bad["line"][0]))
        if self.interval < 1.0:
            t = pl.col("time_ms")
            run = (t != t.shift(1)).fill_null(True).cum_sum()
            carried = self.repeats if rows["time_ms"][0] == self.last_time else 0
            repeat = pl.int_range(pl.len()).over(run) + pl.when(run == 1).then(carried).otherwise(0)
            rows = rows.with_columns(_k=repeat).with_columns(time_ms_repaired=t + pl.col("_k") * self.interval)
            self.last_time, self.repeats = rows["time_ms"][-1], int(rows["_k"][-1]) + 1
            rows = rows.drop("_k")
        else:
            rows = rows.with_columns(time_ms_repaired=pl.col("time_ms"))
        r = pl.col("time_ms_repaired")
        prev = r.shift(1) if self.last_repaired is None else r.shift(1, fill_value=self.last_repaired)
        end = self.block.end_ms if self.block.end_ms is not None else float("inf")
        if self.last_repaired is None:  # the first sample: at START (EyeLink writes its first sample at START's time)
            prev = r.shift(1, fill_value=self.block.start_ms - self.interval)
        missing = ((r - prev) / self.interval).round() - 1  # samples the tracker's clock says are absent
        flags = rows.select("line", changed=pl.col("time_ms") != r, late=r >= end, back=(r - prev) <= 0,
                            gap=pl.when(missing > 0).then(missing).fill_null(0))
        self.changed += int(flags["changed"].sum())
        gaps = flags.filter(pl.col("gap") > 0)
        if gaps.height:
            self.gap[0] += int(gaps["gap"].sum())
            self.gap[1] = self.gap[1] or int(gaps["line"][0])
        for tally, name in ((self.late, "late"), (self.back, "back")):
            hit = flags.filter(pl.col(name))["line"]
            if hit.len():
                tally[0] += hit.len()
                tally[1] = tally[1] or int(hit[0])
        self.last_repaired = rows["time_ms_repaired"][-1]
        top = rows["time_ms_repaired"].max()
        self.max_repaired = top if self.max_repaired is None else max(self.max_repaired, top)
        return rows

    def fields(self, rows: pl.DataFrame) -> pl.DataFrame:
        """Check the number of values on each sample line; returns ``rows`` without the file's last line when it is
        cut short (a truncated recording: dropped, counted by :meth:`finish`)."""
        counts = rows.select("line", n=pl.col("text").str.count_matches(r"\S+")
                             - pl.col("text").str.count_matches(_STATUS))
        if self.first is None:
            self.first = counts.row(0, named=True)
        last = counts.filter(pl.col("line") == self.scan.n_lines)
        if last.height and self.first["line"] != self.scan.n_lines and last["n"][0] < self.first["n"]:
            self.cut = self.scan.n_lines
            counts = counts.filter(pl.col("line") != self.scan.n_lines)
            rows = rows.filter(pl.col("line") != self.scan.n_lines)
        odd = counts.filter(pl.col("n") != self.first["n"])
        if odd.height:
            spec_line, _, want, _ = self._declared()
            raise ParseError(f"sample lines disagree on their number of values: line {self.first['line']} has "
                             f"{self.first['n']}, line {odd['line'][0]} has {odd['n'][0]} (SAMPLES line "
                             f"{spec_line} declares {want})", file=self.scan.path, row=int(odd["line"][0]))
        return rows

    def _declared(self) -> tuple[int, str, int, list[tuple[str, int]]]:
        spec = self.scan.block_lines(self.block.index).filter(pl.col("kind") == "SAMPLES").head(1)
        spec_line, spec_text = int(spec["line"][0]), spec["text"][0]
        tokens = spec_text.split()
        n_eyes = len(self.block.eyes)
        declared = [(g, n * (n_eyes if g == "VEL" else 1)) for g, n in SAMPLE_GROUPS if g in tokens]
        return spec_line, spec_text, 1 + 3 * n_eyes + sum(n for _, n in declared), declared

    def finish(self, warnings: list[str], qc: QCLog) -> str | None:
        scan, block = self.scan, self.block
        name = scan.path.name
        if self.cut is not None:
            warnings.append(f"{name} line {self.cut}: the file's last line is a sample line cut short (a truncated "
                            "recording?); not read")
            qc.add(STEP, "samples", "last line cut short", 1, detail=f"line {self.cut}")
        if self.malformed[0]:
            warnings.append(f"{name} line {self.malformed[1]}: {self.malformed[0]} sample line(s) hold a value that is "
                            "neither a number nor '.' (a damaged line?); read as missing")
            qc.add(STEP, "samples", "malformed value read as missing", self.malformed[0], action="changed",
                   detail=f"first line {self.malformed[1]}")
        if self.changed:
            qc.add(STEP, "samples", f"repeated timestamp at {block.sampling_rate_hz:g} Hz spread by the sample "
                   "interval", self.changed, action="changed", detail=f"block at line {block.start_line}")
        if self.late[0]:
            warnings.append(f"{name} line {block.last_line}: END time {block.end_ms:.10g} is not after "
                            f"{self.late[0]} sample(s) (first on line {self.late[1]}); the block ends after its "
                            "last sample")
        if block.end_ms is not None and self.max_repaired is not None:  # END follows the last sample by an interval
            tail = round((block.end_ms - self.max_repaired) / self.interval) - 1
            if tail > 0:
                self.gap[0] += tail
                self.gap[1] = self.gap[1] or block.last_line
        qc.add(STEP, "samples", "absent between timestamps (a gap in the recording)", self.gap[0], action="flagged",
               detail=f"block at line {block.start_line}: {self.gap[0]} absent" + (
                   f", first gap before line {self.gap[1]}" if self.gap[1] else ""))
        if self.back[0]:
            warnings.append(f"{name} line {self.back[1]}: {self.back[0]} sample timestamp(s) not after "
                            "the previous one; kept in time order")
            qc.add(STEP, "samples", "timestamp not increasing", self.back[0], action="flagged",
                   detail=f"first line {self.back[1]}")
        if self.first is None or not self.scan.block_lines(block.index).filter(pl.col("kind") == "SAMPLES").height:
            return None
        spec_line, spec_text, want, declared = self._declared()
        first = self.first
        if first["n"] == want:
            return None
        keep, n = [], 1 + 3 * len(block.eyes)
        for group, size in declared:
            if n == first["n"]:
                break
            keep.append(group)
            n += size
        where = f"SAMPLES line {spec_line}"
        if n != first["n"]:
            raise ParseError(f"sample line {first['line']} has {first['n']} values; {where} "
                             f"({spec_text.strip()!r}) declares {want}, and no prefix of its optional fields "
                             f"gives {first['n']}", file=scan.path, row=int(first["line"]))
        absent = [g for g, _ in declared if g not in keep]
        warnings.append(f"{name} line {spec_line}: SAMPLES declares {' '.join(absent)} but the sample "
                        f"lines (first on line {first['line']}) hold {first['n']} values, not {want}; read the "
                        f"fields present")
        return "\t".join(t for t in spec_text.split() if t not in absent)


def block_samples(scan: AscScan, block: Block) -> Iterator[pl.DataFrame]:
    """The sample lines of one block, chunk by chunk (``line``, ``text``)."""
    for b, rows in scan.sample_chunks():
        if b.index == block.index:
            yield rows
        elif b.index > block.index:
            return


def sample_times(scan: AscScan, block: Block) -> pl.DataFrame:
    """All sample lines of one block with ``time_ms`` as written and ``time_ms_repaired`` (in memory; see
    :class:`BlockSamples` for the repair and for reading a block chunk by chunk)."""
    state = BlockSamples(scan, block)
    parts = [state.times(rows) for rows in block_samples(scan, block)]
    empty = pl.DataFrame(schema={"line": scan.lines.schema["line"], "text": pl.String, "time_ms": pl.Float64,
                                 "time_ms_repaired": pl.Float64})
    return pl.concat(parts) if parts else empty


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
    :class:`BlockSamples` does the same check chunk by chunk.

    Raises
    ------
    ParseError
        Sample lines with different numbers of values, or a number no declaration prefix explains
        (names the ``SAMPLES`` line and the first sample line that disagrees).
    """
    state = BlockSamples(scan, block)
    for rows in block_samples(scan, block):
        state.fields(rows)
    state.changed, state.late, state.back, state.cut, state.gap = 0, [0, None], [0, None], None, [0, None]
    return state.finish(warnings, QCLog())


def write_block_for_mne(scan: AscScan, block: Block, times: pl.DataFrame, target: Path,
                        samples_line: str | None = None) -> None:
    """Write the lines mne needs for one block into ``target`` (header, block, END if missing).

    ``samples_line`` replaces the block's ``SAMPLES`` line (see :func:`sample_fields`).
    """
    before_first = scan.lines.filter(pl.col("line") < scan.blocks[0].start_line)  # the "**" header (mne reads DATE)
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
            f"END\t{block_end_ms(block, times['time_ms_repaired'].max()):.3f} \tSAMPLES\tEVENTS\tRES\t0.00\t0.00"]}
        ).cast({"line": pl.Float64}))
    out = pl.concat([p.with_columns(pl.col("line").cast(pl.Float64)) for p in parts]).sort("line", maintain_order=True)
    out.select("text").write_csv(target, include_header=False, quote_style="never")


def block_end_ms(block: Block, last_sample_ms: float | None) -> float:
    """End of a block (exclusive, ms): its END time, or one interval after its last (repaired) sample time."""
    last = block.start_ms if last_sample_ms is None else last_sample_ms
    after_last = last + 1000.0 / block.sampling_rate_hz
    return after_last if block.end_ms is None else max(block.end_ms, after_last)
