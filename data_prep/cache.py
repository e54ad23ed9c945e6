"""Reuse what a loader parsed: ``readgaze prep`` run again on the same sources skips the CSV parse.

Parsing the reports is most of a preparation's cost, and it does not depend on the options that
come after it (line assigner, screen size, output format, labels). :func:`cached_load` stores a
loader's canonical tables (uncompressed Arrow IPC: read back at disk speed) and its QC records under a key
made of

* the SHA-256 of every source file (so an edited file is parsed again),
* the loader's name and options (column map, separator, ...),
* a fingerprint of the loading code (the source bytes of ``readgaze.io`` and ``data_prep``'s
  loaders) and the polars version, so a new readgaze never reads an old entry.

File checksums are memoised per (path, size, modification time, inode): an unchanged file is not
read again to hash it (a file rewritten in place with the same size and modification time, to the
nanosecond, is the one change this misses). The manifest's checksums come from the same memo.

The cache lives in ``$READGAZE_CACHE_DIR``, else ``$XDG_CACHE_HOME/readgaze``, else
``~/.cache/readgaze``; it keeps the :data:`KEEP` most recently used entries. ``--no-cache`` turns
it off for one run; deleting the folder is always safe.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import shutil
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING

# polars, and readgaze.qc, are imported where used: readgaze.data_prep.cli asks
from readgaze.fingerprint import fingerprint
from readgaze.io.scan import take_sha256

if TYPE_CHECKING:
    import polars as pl

# stamps_known before its heavy imports

KEEP = 4
"""Entries kept (least recently used ones are deleted)."""
FORMAT = 1
_LOCK = threading.Lock()


def cache_dir() -> Path:
    """The cache folder (see the module docstring); not created here."""
    if os.environ.get("READGAZE_CACHE_DIR"):
        return Path(os.environ["READGAZE_CACHE_DIR"])
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "readgaze"


def _hash_file(path: Path) -> str:
    prefetched = take_sha256(path)  # the pass readgaze prep started before its imports, if any
    if prefetched is not None:
        return prefetched
    h, block = hashlib.sha256(), bytearray(1 << 20)  # one buffer, read into: no fresh pages per block
    view = memoryview(block)
    with open(path, "rb") as f:
        while n := f.readinto(block):
            h.update(view[:n])
    return h.hexdigest()


def checksum(path: str | Path, folder: Path | None = None) -> str:
    """Hex SHA-256 of a file, memoised in ``folder/checksums.json`` by (path, size, mtime_ns, inode)."""
    path = Path(path).resolve()
    folder = cache_dir() if folder is None else folder
    st = path.stat()
    stamp = [st.st_size, st.st_mtime_ns, st.st_ino]
    memo_file = folder / "checksums.json"
    with _LOCK:
        memo = _read_json(memo_file)
    if memo.get(str(path), [None])[:3] == stamp:
        return memo[str(path)][3]
    digest = _hash_file(path)
    with _LOCK:
        memo = _read_json(memo_file)
        memo[str(path)] = [*stamp, digest]
        _write_json(memo_file, memo)
    return digest


def _read_json(path: Path) -> dict:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return {}


def _write_json(path: Path, data: dict) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        part = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}")
        part.write_text(json.dumps(data))
        part.replace(path)
    except OSError:  # a read-only or full disk turns the memo off, never the run
        pass


def code_fingerprint(root: Path | None = None) -> str:
    """Fingerprint (:func:`readgaze.fingerprint.fingerprint`, by content) of the loading code and polars' version.

    The loading code is what a cached load runs and this module: ``readgaze/io``, ``readgaze/text.py``,
    ``readgaze/qc.py``, ``readgaze/errors.py``, ``readgaze/fingerprint.py`` and ``data_prep``'s ``sources.py``,
    ``inputs.py``, ``layouts.py``, ``columns.py`` and ``cache.py``. The steps after the load
    (``data_prep/pipeline.py``, the measures, ...) are not in it: a change there re-runs them on the cached tables,
    as any re-preparation does. ``root``: a checkout
    holding ``readgaze/`` and ``data_prep/`` (default: this installation's).
    """
    import polars as pl

    import readgaze

    library = Path(readgaze.__file__).resolve().parent if root is None else Path(root) / "readgaze"
    prep = Path(__file__).resolve().parent if root is None else Path(root) / "data_prep"
    files = sorted([*library.joinpath("io").glob("*.py"),
                    *(library / f for f in ("text.py", "qc.py", "errors.py", "fingerprint.py")),
                    *(prep / f for f in ("sources.py", "inputs.py", "layouts.py", "columns.py", "cache.py"))])
    return fingerprint([f for f in files if f.is_file()], content=True, salt=[pl.__version__, FORMAT], length=40)


def _key(loader: str, sums: dict[str, str], options: dict) -> str:
    text = json.dumps({"loader": loader, "sources": sums, "options": options, "code": code_fingerprint()},
                      sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def cached_load(loader: str, load, files: dict[str, str | Path], options: dict | None = None, *,
                enabled: bool = True, folder: Path | None = None, report=None, background: bool = False):
    """``load()`` (a loader returning a :class:`readgaze.data_prep.sources.Loaded`), or its stored result.

    Parameters
    ----------
    loader : str
        Name of the loading step (part of the key), e.g. ``"onestop"``.
    load : callable
        Called without arguments on a miss.
    files : dict
        ``{role: path}`` of every source file the loader reads. On a hit, a ``sources`` field of the
        result becomes ``{role: [path]}`` with these paths (as given now: the files may have moved).
    options : dict, optional
        Every loader option that changes its result (part of the key; ``str()`` of each value).
    enabled : bool
        False: just ``load()``, nothing read or stored.
    folder : Path, optional
        Cache folder; default :func:`cache_dir`.
    report : callable, optional
        ``report(message)`` receives one line: hit or stored (with the key), or why nothing was stored.
    background : bool
        Store a new entry in a background thread (the caller goes on with the result at once) and report it
        when :func:`wait_stored` is called; the entry's fields are taken now, so later changes to the result
        are not stored.

    Returns
    -------
    Loaded
        Equal, table by table and record by record, to what ``load()`` returns.
    """
    if not enabled or not all(Path(p).is_file() for p in files.values()):
        return load()  # a missing source: the loader says so, in its words
    folder = cache_dir() if folder is None else Path(folder)
    say = report or (lambda message: None)
    with ThreadPoolExecutor(max_workers=1) as pool:  # hash while the loader parses, when the memo misses
        sums_job = pool.submit(lambda: {role: checksum(p, folder) for role, p in files.items()})
        memo = _read_json(folder / "checksums.json")
        stamps_known = all(_stamp_known(memo, p) for p in files.values())
        if stamps_known:
            entry = folder / "prep" / _key(loader, sums_job.result(), options or {})
            hit = _read_entry(entry)
            if hit is not None:
                say(f"cache: reused the parsed sources ({entry})")
                if isinstance(getattr(hit, "sources", None), dict):  # the paths as given now, not as stored
                    hit.sources = {**hit.sources, **{role: [str(p)] for role, p in files.items()}}
                return hit
        loaded = load()
        sums = sums_job.result()
    entry = folder / "prep" / _key(loader, sums, options or {})
    if (entry / "meta.json").is_file():  # stored by a run whose checksums were not memoised here
        return loaded
    packed = _pack(loaded)

    def store() -> None:
        why = packed if isinstance(packed, str) else _write_entry(entry, *packed)
        say(f"cache: stored the parsed sources ({entry})" if why is None else f"cache: not stored ({why})")
        _evict(folder / "prep")

    if background:
        _PENDING.append(threading.Thread(target=store, name="readgaze-cache-store"))
        _PENDING[-1].start()
    else:
        store()
    return loaded


_PENDING: list[threading.Thread] = []


def wait_stored() -> None:
    """Wait for the entries :func:`cached_load` stores in the background (their reports are sent then)."""
    while _PENDING:
        _PENDING.pop(0).join()


def stamps_known(paths, folder: Path | None = None) -> bool:
    """Whether the checksum memo in ``folder`` (default :func:`cache_dir`) knows every file of ``paths`` as it
    is now (so :func:`cached_load` will not hash them)."""
    memo = _read_json((cache_dir() if folder is None else Path(folder)) / "checksums.json")
    try:
        return all(_stamp_known(memo, p) for p in paths)
    except OSError:
        return False


def _stamp_known(memo: dict, path) -> bool:
    path = Path(path).resolve()
    st = path.stat()
    return memo.get(str(path), [None])[:3] == [st.st_size, st.st_mtime_ns, st.st_ino]


def _pack(loaded) -> tuple[str, dict[str, pl.DataFrame]] | str:
    """``(meta JSON text, {field: frame})`` of ``loaded`` as it is now, or why it cannot be stored."""
    import polars as pl

    from readgaze.qc import QCLog

    meta, frames = {}, {}
    for f in dataclasses.fields(loaded):
        value = getattr(loaded, f.name)
        if isinstance(value, pl.DataFrame):
            frames[f.name] = value
        elif isinstance(value, QCLog):
            meta[f.name] = {"__qc__": value.records}
        else:
            meta[f.name] = value
    try:
        return json.dumps({"type": type(loaded).__module__ + "." + type(loaded).__qualname__, "fields": meta}), frames
    except TypeError as e:
        return f"a field is not JSON: {e}"


def _write_entry(entry: Path, text: str, frames: dict[str, pl.DataFrame]) -> str | None:
    """Store an entry (:func:`_pack`'s parts); returns None, or why it was not stored."""
    try:
        entry.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=".part_", dir=entry.parent))
        for name, frame in frames.items():
            frame.write_ipc(tmp / f"{name}.arrow", compression="uncompressed")
        (tmp / "meta.json").write_text(text)
        if entry.exists():
            shutil.rmtree(tmp, ignore_errors=True)
        else:
            tmp.replace(entry)
    except OSError as e:
        return str(e)
    return None


def _read_entry(entry: Path):
    import polars as pl

    from readgaze.qc import QCLog

    meta_file = entry / "meta.json"
    if not meta_file.is_file():
        return None
    try:
        meta = json.loads(meta_file.read_text())
        module, _, name = meta["type"].rpartition(".")
        import importlib

        cls = getattr(importlib.import_module(module), name)
        values = {}
        for f in dataclasses.fields(cls):
            if f.name in meta["fields"]:
                v = meta["fields"][f.name]
                values[f.name] = QCLog(list(v["__qc__"])) if isinstance(v, dict) and "__qc__" in v else v
            elif (entry / f"{f.name}.arrow").is_file():
                values[f.name] = pl.read_ipc(entry / f"{f.name}.arrow")
        loaded = cls(**values)
        os.utime(meta_file)  # recently used: kept by _evict
        return loaded
    except (OSError, ValueError, KeyError, TypeError, AttributeError, ImportError, pl.exceptions.PolarsError):
        return None  # a damaged or foreign entry is a miss


def _evict(prep: Path) -> None:
    entries = sorted((p for p in prep.iterdir() if p.is_dir() and not p.name.startswith(".")),
                     key=lambda p: (p / "meta.json").stat().st_mtime if (p / "meta.json").exists() else 0.0)
    for old in entries[:-KEEP]:
        shutil.rmtree(old, ignore_errors=True)
    for part in prep.glob(".part_*"):  # left by a run that was killed
        if time.time() - part.stat().st_mtime > 3600:
            shutil.rmtree(part, ignore_errors=True)
