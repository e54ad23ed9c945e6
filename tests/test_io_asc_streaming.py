""".asc at scale (issue 18): read_asc streams the file in chunks; samples may go to Parquet chunk by chunk.

The streamed paths (small chunks, Parquet target) must give exactly the tables of the in-memory read,
and the number of lines held at once must be bounded by ``chunk_lines``.
"""

from __future__ import annotations

import polars as pl
import pyarrow.parquet as pq
import pytest
from polars.testing import assert_frame_equal

from readgaze.errors import ConfigError, ParseError
from readgaze.io import asc_samples, asc_scan
from readgaze.io.asc import read_asc
from readgaze.io.asc_scan import scan_asc

FRAMES = ("samples", "fixations", "saccades", "blinks", "events", "messages", "trials", "qc_report", "validation")


def _frames(rec) -> dict[str, pl.DataFrame]:
    return {k: (v.collect() if isinstance(v, pl.LazyFrame) else v) for k in FRAMES for v in [getattr(rec, k)]}


def _assert_same(a, b, skip=()) -> None:
    fa, fb = _frames(a), _frames(b)
    for k in FRAMES:
        if k not in skip:
            assert_frame_equal(fa[k], fb[k], check_exact=True), k
    assert a.warnings == b.warnings
    assert a.qc.records == b.qc.records


def _files(small_data):
    files = sorted((small_data / "eyelink_asc").glob("*.asc")) + sorted((small_data / "bad_inputs").glob("*.asc"))
    assert len(files) == 13
    return files


def test_streamed_and_in_memory_reads_give_identical_tables_on_the_real_files(small_data, tmp_path):
    for path in _files(small_data):
        splits = [{}] + ([{"trial_message": r"^TRIALID (\S+)"}] if path.stem == "eyelink_monocular_example" else [])
        for options in splits:
            whole = read_asc(path, **options)
            assert isinstance(whole.samples, pl.DataFrame)
            target = tmp_path / f"{path.stem}.parquet"
            streamed = read_asc(path, samples=target, chunk_lines=4, **options)  # blocks span many chunks
            assert isinstance(streamed.samples, pl.LazyFrame) and target.exists()
            _assert_same(streamed, whole)
            dropped = read_asc(path, samples="none", chunk_lines=60, **options)
            assert dropped.samples.height == 0 and dropped.samples.schema == whole.samples.schema
            _assert_same(dropped, whole, skip=("samples",))


def _two_khz_file(tmp_path, n=450, blocks=3):
    """Binocular 2 kHz blocks with every integer timestamp written twice (EMTeC style), a blink per block
    whose SBLINK has no EBLINK in the last block, 2 MSG lines per block."""
    out = ["** CONVERTED FROM t.edf using edfapi 4.2.1 Linux", "**", "", "MSG\t900 DISPLAY_COORDS 0 0 1279 1023"]
    for b in range(blocks):
        t0 = 1000 + b * 10_000
        out += [f"MSG\t{t0 - 2} TRIALID {b + 1}", f"START\t{t0} \tLEFT\tRIGHT\tSAMPLES\tEVENTS",
                "SAMPLES\tGAZE\tLEFT\tRIGHT\tRATE\t2000.00\tTRACKING\tCR\tFILTER\t2", f"SFIX L   {t0}"]
        for i in range(n):
            t = t0 + i // 2
            if i == 200:
                out.append(f"SBLINK R {t}")
            if i == 120:
                out.append(f"MSG\t{t} SYNCTIME")
            blink = 200 <= i < 260
            right = "   .\t   .\t    0.0" if blink else f"  {300 + i % 7}.0\t  200.0\t 1000.0"
            out.append(f"{t}\t  {100 + i % 5}.0\t  200.0\t 1000.0\t{right}\t.....")
            if i == 259 and b < blocks - 1:
                out.append(f"EBLINK R {t0 + 100}\t{t0 + 129}\t30")
        last = t0 + (n - 1) // 2
        out += [f"EFIX L   {t0}\t{last}\t{last - t0 + 0.5}\t  102.0\t  200.0\t   1000",
                f"END\t{last + 1} \tSAMPLES\tEVENTS\tRES\t  38.00\t  36.00"]
    path = tmp_path / "two_khz.asc"
    path.write_text("\n".join(out) + "\n")
    return path, len(out), blocks * n


def test_lines_held_at_once_are_bounded_by_chunk_lines(tmp_path, monkeypatch):
    path, n_lines, n_samples = _two_khz_file(tmp_path)
    decoded, added = [], []
    decode, add = asc_scan.decode_chunk, asc_samples.SampleSink.add
    monkeypatch.setattr(asc_scan, "decode_chunk",
                        lambda data, codec, first: decoded.append(data.count(b"\n")) or decode(data, codec, first))
    monkeypatch.setattr(asc_samples.SampleSink, "add", lambda self, s: added.append(s.height) or add(self, s))
    target = tmp_path / "samples.parquet"
    rec = read_asc(path, samples=target, chunk_lines=100)
    # every piece of text decoded holds at most 100 lines; the scan reads the file once, the samples once more
    assert n_lines == 1380 and max(decoded) == 100 and sum(decoded[:14]) == n_lines
    assert len(decoded) == 14 + 14  # 14 chunks of 1,380 lines, each holding samples
    # samples reach the sink (and Parquet) chunk by chunk, never a whole block at once
    assert max(added) <= 100 and sum(added) == n_samples == rec.samples.select(pl.len()).collect().item()
    groups = pq.ParquetFile(target).metadata
    assert groups.num_row_groups == len(added) and max(groups.row_group(i).num_rows
                                                       for i in range(groups.num_row_groups)) <= 100
    # the scan keeps no sample line: only the 74 others
    scan = scan_asc(path, chunk_lines=100)
    assert scan.lines.height == n_lines - n_samples == 30
    assert scan.lines.filter(pl.col("kind") == "sample").height == 0
    assert [b.n_samples for b in scan.blocks] == [450, 450, 450]
    monkeypatch.undo()
    whole = read_asc(path)
    _assert_same(rec, whole)
    # duplicated 2 kHz stamps are spread across chunk edges: strictly increasing, 0.5 ms apart
    times = whole.samples.filter(pl.col("block") == 1)["time_ms"]
    assert times[0] == 11000.0 and times[-1] == 11224.5 and (times.diff().drop_nulls() == 0.5).all()
    # the open SBLINK of the last block lasts to the block end (known only after its last chunk)
    last = whole.samples.filter(pl.col("block") == 2)
    assert last["in_blink"].sum() == 450 - 200
    assert whole.qc_report["missing_in_blink"].to_list() == [60, 60, 60]  # right eye lost for 60 samples


def test_a_failed_streamed_read_names_the_line_and_leaves_no_parquet(tmp_path):
    path, _, _ = _two_khz_file(tmp_path)
    lines = path.read_text().splitlines()
    at = [i for i, text in enumerate(lines) if text.startswith("21000\t")][1]  # block 3, second sample
    lines[at] = "21000\t  100.0\t  200.0\t 1000.0\t....."  # one eye's values only
    path.write_text("\n".join(lines) + "\n")
    want = f"two_khz.asc, row {at + 1}: sample lines disagree on their number of values: line"
    target = tmp_path / "samples.parquet"
    for chunk_lines in (7, 100_000):
        with pytest.raises(ParseError) as err:
            read_asc(path, samples=target, chunk_lines=chunk_lines)
        assert str(err.value).startswith(want), str(err.value)
        assert f"has 7, line {at + 1} has 4" in str(err.value)
        assert not target.exists()


def test_samples_target_and_chunk_size_are_checked(tmp_path):
    path, _, _ = _two_khz_file(tmp_path, n=4, blocks=1)
    for bad in ("samples.csv", tmp_path / "missing" / "s.parquet", 3):
        with pytest.raises(ConfigError, match="samples"):
            read_asc(path, samples=bad)
    with pytest.raises(ConfigError, match="chunk_lines"):
        read_asc(path, chunk_lines=0)
