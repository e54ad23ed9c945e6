"""The datamodule's array cache: a dataset's arrays for one task and text encoder, built once and shared by every unit.

What :class:`~readgaze.models.data.ReadingDataModule` builds before any fold is chosen (the task's trials and
labels, the word, fixation and trial feature matrices *before* scaling, each text's tokenisation, and the QC records
of those steps) depends on the dataset, the task and the text settings only, not on the fold, the model, the seed or
the grid point. It is stored once per machine under ``<cache>/arrays/<key>/`` and every later
``setup`` memory-maps it (``numpy.load(mmap_mode="r")``: the pages are shared by every process on the machine and
read only where a batch touches them). What depends on the fold (the split, the scalers fit on the training
trials) is computed per fold; the scalers are cached too, under the fold's training trials.

The key (:func:`array_key`) is a SHA-256 of the dataset's fingerprint (:meth:`readgaze.Dataset.fingerprint`: table
files' size and modification time), the task settings, the feature definitions in use
(:func:`readgaze.features.definitions_fingerprint`), the code that arranges the arrays and the numpy/polars versions:
a re-prepared dataset or a new readgaze never reads an old entry. An entry is written to a temporary folder and
renamed into place, under a lock, so units that start together on one machine build it once and never read half an
entry. ``<cache>`` is
``readgaze.data_prep.cache.cache_dir()`` (``$READGAZE_CACHE_DIR``, else ``~/.cache/readgaze``); entries not used for
:data:`KEEP_DAYS` days are removed when a new one is written; deleting the folder is always safe.
``READGAZE_ARRAY_CACHE=0`` turns the cache off (every setup builds in memory, as before).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import pickle
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np
import polars as pl

from readgaze.dataset import Dataset
from readgaze.fingerprint import fingerprint

FORMAT = 2
KEEP_DAYS = 30
_CODE = ("datamodule.py", "dataset.py", "tokenise.py", "tasks.py", "cache.py")
"""The files of :mod:`readgaze.models.data` that arrange the arrays (the features: :mod:`readgaze.features`)."""


def enabled() -> bool:
    return os.environ.get("READGAZE_ARRAY_CACHE", "1") not in ("0", "false", "no", "off")


def root() -> Path:
    from readgaze.data_prep.cache import cache_dir

    return cache_dir() / "arrays"


def _code_fingerprint() -> str:
    """The code that builds an entry: every feature definition as it is now
    (:func:`readgaze.features.definitions_fingerprint`: a replaced or edited definition gives another key) and the
    source of the modules here that arrange the arrays (:data:`_CODE`) and of the text encoder's tokenizer loading."""
    import importlib

    from readgaze.features import definitions_fingerprint

    here = Path(__file__).resolve().parent
    files = [here / name for name in _CODE] + [Path(importlib.import_module("readgaze.models.text_encoder").__file__)]
    return definitions_fingerprint() + fingerprint(files, content=True, length=24)


def array_key(dataset: Dataset, settings: dict, extra_files: tuple = ()) -> str:
    """The entry's name: SHA-256 (24 hex digits) of the dataset's fingerprint (:meth:`readgaze.Dataset.fingerprint`)
    and folder, ``extra_files``' stats, ``settings`` and the code."""
    text = json.dumps({"format": FORMAT, "dataset": [str(dataset.path.resolve()), dataset.fingerprint()],
                       "extra": fingerprint(sorted(str(Path(f).resolve()) for f in extra_files if f)),
                       "settings": settings, "code": _code_fingerprint(),
                       "numpy": np.__version__, "polars": pl.__version__}, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:24]


@contextlib.contextmanager
def _lock(path: Path):
    """An exclusive lock on ``path`` (POSIX ``flock``; elsewhere none: the atomic rename still keeps entries whole)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+") as handle:
        try:
            import fcntl
        except ImportError:  # Windows
            yield
            return
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def load_or_build(key: str, build) -> tuple[dict, bool]:
    """The entry ``key`` (memory-mapped), building it with ``build() -> dict`` when absent; ``(entry, built)``.

    An entry maps names to numpy arrays (``.npy``, memory-mapped on load), polars DataFrames (``.parquet``) and
    anything else picklable (``objects.pkl``: tokenisations, QC records).
    """
    folder = root() / key
    if (folder / "done").is_file():
        _touch(folder)
        return read(folder), False
    with _lock(root() / f"{key}.lock"):
        if (folder / "done").is_file():  # another process built it while this one waited
            return read(folder), False
        entry = build()
        write(folder, entry)
        _prune()
    return read(folder), True


def write(folder: Path, entry: dict) -> None:
    """Write ``entry`` to a temporary folder beside ``folder`` and rename it into place (``done`` written last)."""
    folder.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{folder.name}-", dir=folder.parent))
    objects = {}
    for name, value in entry.items():
        if isinstance(value, np.ndarray):
            np.save(tmp / f"{name}.npy", value)  # C or Fortran order kept
        elif isinstance(value, pl.DataFrame):
            value.write_parquet(tmp / f"{name}.parquet")
        else:
            objects[name] = value
    with open(tmp / "objects.pkl", "wb") as handle:
        pickle.dump(objects, handle, protocol=pickle.HIGHEST_PROTOCOL)
    (tmp / "done").write_text(time.strftime("%Y-%m-%dT%H:%M:%S"), encoding="utf-8")
    if folder.exists():
        shutil.rmtree(folder, ignore_errors=True)
    os.replace(tmp, folder)


def read(folder: Path) -> dict:
    entry: dict = {}
    for path in folder.glob("*.npy"):
        entry[path.stem] = np.load(path, mmap_mode="r")
    for path in folder.glob("*.parquet"):
        entry[path.stem] = pl.read_parquet(path, memory_map=True)
    with open(folder / "objects.pkl", "rb") as handle:
        entry.update(pickle.load(handle))
    return entry


def load_or_fit_scalers(key: str, train_rows: np.ndarray, fit) -> dict:
    """Per-fold scaler statistics (``fit() -> {name: ndarray}``), cached under the entry by the training rows."""
    digest = hashlib.sha256(np.ascontiguousarray(train_rows, dtype=np.int64).tobytes()).hexdigest()[:20]
    path = root() / key / "scalers" / f"{digest}.npz"
    if path.is_file():
        with np.load(path) as stored:
            return {name: stored[name] for name in stored.files}
    values = fit()
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, tmp = tempfile.mkstemp(prefix=".scaler-", suffix=".npz", dir=path.parent)
    with os.fdopen(handle, "wb") as out:
        np.savez(out, **values)
    os.replace(tmp, path)
    return values


def _touch(folder: Path) -> None:
    with contextlib.suppress(OSError):
        os.utime(folder / "done")


def _prune() -> None:
    """Remove entries whose ``done`` marker was not touched for :data:`KEEP_DAYS` days."""
    limit = time.time() - KEEP_DAYS * 86400
    for done in root().glob("*/done"):
        with contextlib.suppress(OSError):
            if done.stat().st_mtime < limit:
                shutil.rmtree(done.parent, ignore_errors=True)
