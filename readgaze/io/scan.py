"""One read of a large file for both its SHA-256 and its line starts, started early and shared.

``readgaze prep onestop`` needs two whole-file passes over each report besides the CSV parse: the SHA-256
(the cache key and the manifest's checksum) and the byte offset of every line (:func:`readgaze.io.rows.read_rows`
reads a trial's first row by it). Both are computed here in one pass of 1 MiB blocks, in a background thread
that the command starts before it imports polars and the pipeline (:func:`prefetch`), so the pass overlaps the
imports and the parse. The consumers (:func:`readgaze.io.rows.line_starts`, the cache's checksum) take the
result with :func:`take_line_starts` / :func:`take_sha256`; a file changed since its pass (size, modification
time or inode) is passed again by its consumer. This module imports neither polars nor, until a pass runs, numpy.
"""

from __future__ import annotations

import hashlib
import os
import threading
from concurrent.futures import Future
from dataclasses import dataclass

BLOCK = 1 << 20
"""Bytes read at a time: the block stays in the CPU cache for the hash and the newline scan."""

_LOCK = threading.Lock()
_SCANS: dict[str, tuple[tuple, Future]] = {}  # real path -> (stamp, future of FileScan)


@dataclass
class FileScan:
    """A file's SHA-256 (hex; None when not asked for), line starts (``numpy`` Int64, None when not asked) and,
    with the line starts, its size, whether it holds a NUL byte, a 0xEF byte (maybe a byte-order mark) or a TAB
    (:mod:`readgaze.io.faults` looks closer only then), and per line break whether a CR precedes it (``crlf``)."""

    sha256: str | None
    starts: object | None
    size: int = 0
    nul: bool = False
    ef: bool = False
    tab: bool = False
    crlf: object | None = None


def stamp(path) -> tuple:
    """(size, modification time in ns, inode) of a file: what :func:`prefetch` results are keyed by."""
    st = os.stat(path)
    return st.st_size, st.st_mtime_ns, st.st_ino


def scan_file(path, *, sha256: bool = True, lines: bool = True) -> FileScan:
    """One pass over ``path``: its SHA-256 and/or the byte offset of every line's first byte.

    The line starts are :func:`readgaze.io.rows.line_starts`' (Int64, line 0 at offset 0; a final line break
    does not start a line; ``\\r\\n`` lines start after their ``\\n``).
    """
    import numpy as np

    h = hashlib.sha256() if sha256 else None
    parts, crs, pos, last = [np.zeros(1, np.int64)], [], 0, 0
    nul = ef = tab = False
    block = bytearray(BLOCK)
    view = memoryview(block)
    with open(path, "rb") as f:
        while n := f.readinto(block):
            if h is not None:
                h.update(view[:n])  # releases the GIL
            if lines:
                data = np.frombuffer(block, np.uint8, n)
                breaks = np.flatnonzero(data == 10)
                before = data[np.maximum(breaks - 1, 0)] == 13  # a CR before the break (the last block's last byte
                if len(breaks) and breaks[0] == 0:  # when the break opens this block)
                    before[0] = last == 13
                parts.append(breaks + (pos + 1))
                crs.append(before)
                nul = nul or block.find(0, 0, n) >= 0  # memchr: far cheaper than a numpy pass
                ef = ef or block.find(0xEF, 0, n) >= 0
                tab = tab or block.find(9, 0, n) >= 0
                last = int(data[-1])
            pos += n
    starts = crlf = None
    if lines:
        starts = np.concatenate(parts).astype(np.int64, copy=False)
        crlf = np.concatenate(crs) if crs else np.zeros(0, bool)
        if len(starts) > 1 and starts[-1] == pos:
            starts = starts[:-1]
    return FileScan(h.hexdigest() if h is not None else None, starts, pos, nul, ef, tab, crlf)


def prefetch(paths, *, sha256: bool = True, lines: bool = True) -> None:
    """Start one background pass (:func:`scan_file`) over each of ``paths``, one file after the other, in a
    daemon thread. Files already prefetched at the same stamp, and missing files, are skipped."""
    todo = []
    with _LOCK:
        for path in paths:
            try:
                real, st = os.path.realpath(path), stamp(path)
            except OSError:
                continue
            if real in _SCANS and _SCANS[real][0] == st:
                continue
            job: Future = Future()
            _SCANS[real] = (st, job)
            todo.append((path, job))
    if not todo:
        return

    def run() -> None:
        for path, job in todo:
            try:
                job.set_result(scan_file(path, sha256=sha256, lines=lines))
            except BaseException as e:  # noqa: BLE001 -- handed to the consumer, which passes the file itself
                job.set_exception(e)

    threading.Thread(target=run, name="readgaze-prefetch", daemon=True).start()


def _ready(path):
    """``(real path, entry, result)`` of the finished pass of ``path`` as it is now, or None (no pass, the file
    changed since, or the pass failed: the consumer then reads the file itself and meets the error there)."""
    try:
        real, st = os.path.realpath(path), stamp(path)
    except OSError:
        return None
    with _LOCK:
        entry = _SCANS.get(real)
    if entry is None or entry[0] != st:
        return None
    try:
        return real, entry, entry[1].result()
    except Exception:  # noqa: BLE001 -- the consumer passes the file itself and meets the error there
        return None


def _take(path, field: str):
    """The prefetched ``field`` of ``path`` (waiting for its pass), or None when there is none for the file as
    it is now; a taken field is dropped (the line starts are large), the entry once both are taken."""
    ready = _ready(path)
    if ready is None:
        return None
    real, entry, result = ready
    value = getattr(result, field)
    with _LOCK:
        setattr(result, field, None)
        if result.sha256 is None and result.starts is None and _SCANS.get(real) is entry:
            del _SCANS[real]
    return value


def take_line_starts(path):
    """The prefetched line starts of ``path`` (numpy Int64), or None."""
    return _take(path, "starts")


def take_lines(path) -> FileScan | None:
    """The prefetched line pass of ``path`` (a :class:`FileScan` with ``starts``, ``size``, ``low``, ``high``; its
    SHA-256 stays for :func:`take_sha256`), or None."""
    ready = _ready(path)
    if ready is None:
        return None
    real, entry, result = ready
    if result.starts is None:
        return None
    out = FileScan(None, result.starts, result.size, result.nul, result.ef, result.tab, result.crlf)
    with _LOCK:
        result.starts = None
        if result.sha256 is None and _SCANS.get(real) is entry:
            del _SCANS[real]
    return out


def take_sha256(path) -> str | None:
    """The prefetched SHA-256 (hex) of ``path``, or None."""
    return _take(path, "sha256")


def forget(paths) -> None:
    """Drop the prefetched results of ``paths`` that no consumer took (a pass still running finishes, unkept)."""
    with _LOCK:
        for path in paths:
            try:
                _SCANS.pop(os.path.realpath(path), None)
            except (OSError, TypeError, ValueError):
                continue
