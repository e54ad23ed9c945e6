"""Write a dataset folder: ``{trials,words,fixations,word_measures}.parquet`` + ``manifest.json``.

The folder is the one contract between preprocessing and the models: its tables and their columns are defined
once, in :mod:`readgaze.schema` (:data:`~readgaze.schema.DATASET_TABLES`; the file names in :mod:`readgaze.dataset`,
which reads the folder back), and every table is validated against
that definition before it is written (the models' datamodule validates them again on read). Tables are sorted and
written without timestamps, so identical inputs give byte-identical parquet files; the manifest holds no creation
time either (it is byte-identical too).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from importlib import metadata
from pathlib import Path

from readgaze.dataset import MANIFEST, TABLES, table_file
from readgaze.errors import ConfigError, Option
from readgaze.schema import validate

_PACKAGES = ("readgaze", "polars", "numpy", "pyarrow", "wordfreq", "rich")


def sha256(path: str | Path) -> str:
    """Hex SHA-256 of a file, read in 1 MiB blocks (memoised by :func:`readgaze.data_prep.cache.checksum` when it
    can be: an unchanged file is hashed once per machine)."""
    from readgaze.data_prep.cache import checksum

    try:
        return checksum(path)
    except OSError:
        pass
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def package_versions() -> dict[str, str | None]:
    out = {}
    for name in _PACKAGES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = None
    return out


def check_target(out: str | Path, force: bool) -> Path:
    """Refuse a non-empty target folder unless ``force``.

    Raises
    ------
    ConfigError
        When ``out`` exists, is not empty and ``force`` is false, or is a file.
    """
    out = Path(out)
    if out.is_file():
        raise ConfigError("the output path is a file; expected a folder", file=out)
    if out.exists() and any(out.iterdir()) and not force:
        raise ConfigError("output folder exists and is not empty", file=out,
                          options=(Option("force=True", "--force", "to overwrite it"),))
    return out


def qc_summary(records: list[dict]) -> dict:
    """``{table: {action: {reason: count}}}`` summed over steps."""
    out: dict = {}
    for r in records:
        cell = out.setdefault(r["table"], {}).setdefault(r["action"], {})
        cell[r["reason"]] = cell.get(r["reason"], 0) + r["count"]
    return out


FORMATS = ("parquet", "csv", "both")
KEPT = ("corrections.parquet",)
"""Files of an existing dataset folder that a forced re-run carries over (``readgaze review``'s log)."""


def csv_ready(frame):
    """``frame`` with nested (List/Struct/Array) columns as JSON text, so it can be written as CSV."""
    import polars as pl

    nested = [c for c, t in frame.schema.items() if isinstance(t, (pl.List, pl.Struct, pl.Array))]
    return frame.with_columns([pl.struct(pl.col(c)).struct.json_encode().str.slice(len(c) + 4).str.head(-1).alias(c)
                               for c in nested]) if nested else frame


PARQUET = {"compression": "lz4", "statistics": False}
"""How the tables are encoded. LZ4: at 2.4 M fixations it encodes the fixations and word measures in about 2.5
CPU s against zstd level 1's 3.0 s (the columns' encoding, not the codec, is most of it; uncompressed: 1.8 s
and 237 MB), for files 1.6x as large (109 MB against 67 MB). No column statistics (min / max / null count per
row group): writing them costs about 0.3 CPU s of those 2.5 (12 %), and the models read whole tables; a reader
filtering a scan still gets the right rows, it just cannot skip row groups. Polars, pyarrow and arrow for R
read these files."""


def write_table(frame, folder: Path, name: str, fmt: str = "parquet") -> list[Path]:
    """Write ``name.parquet`` and/or ``name.csv`` (:data:`FORMATS`); returns the paths written."""
    if fmt not in FORMATS:
        raise ConfigError(f"--format {fmt!r}: expected one of {list(FORMATS)}")
    paths = []
    if fmt in ("parquet", "both"):
        frame.write_parquet(folder / table_file(name), **PARQUET)
        paths.append(folder / table_file(name))
    if fmt in ("csv", "both"):
        csv_ready(frame).write_csv(folder / table_file(name, "csv"))
        paths.append(folder / table_file(name, "csv"))
    return paths


class DatasetWriter:
    """Writes a dataset folder table by table while the pipeline still runs, then the manifest.

    ``put(name, frame)`` hands a finished table to one writer thread (the Parquet encoder is itself
    multi-threaded; one thread keeps at most one table in flight besides the pipeline's work), so a table is
    written while the next one is computed. The tables go to a hidden folder beside ``out`` that replaces
    ``out`` only in :meth:`finish`: a run that fails leaves ``out`` as it was. The files are byte-identical to
    :func:`write_table`'s.

    Use as a context manager (the hidden folder is removed on error)::

        with DatasetWriter(out, force=True) as writer:
            writer.put("fixations", fixations)
            ...
            writer.finish(prepared, sources=..., config=...)
    """

    def __init__(self, out: str | Path, *, force: bool = False, fmt: str = "parquet"):
        from concurrent.futures import ThreadPoolExecutor

        if fmt not in FORMATS:
            raise ConfigError(f"--format {fmt!r}: expected one of {list(FORMATS)}")
        self.out, self.force, self.fmt = check_target(out, force), force, fmt
        self._tmp: Path | None = None
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="readgaze-write")
        self._jobs: dict = {}

    def __enter__(self) -> DatasetWriter:
        return self

    def __exit__(self, kind, error, tb) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)
        if self._tmp is not None and self._tmp.exists():
            shutil.rmtree(self._tmp, ignore_errors=True)

    def put(self, name: str, frame) -> None:
        """Start writing table ``name`` (one of :data:`TABLES`); the frame must not change afterwards.

        Raises
        ------
        SchemaError
            The frame does not hold the table's canonical columns and dtypes (:func:`readgaze.schema.validate`).
        """
        validate(frame, name, source=table_file(name))
        if self._tmp is None:
            self.out.parent.mkdir(parents=True, exist_ok=True)
            self._tmp = Path(tempfile.mkdtemp(prefix=f".{self.out.name}.partial-", dir=self.out.parent))
            mask = os.umask(0)
            os.umask(mask)
            os.chmod(self._tmp, 0o777 & ~mask)  # a plain mkdir's mode, not mkdtemp's 0700
        self._jobs[name] = self._pool.submit(write_table, frame, self._tmp, name, self.fmt)

    def finish(self, prepared, *, sources: dict[str, list[str]], config: dict, id_bases: dict | None = None,
               notes: list[str] | None = None) -> Path:
        """Write the tables not put yet and the manifest, wait for every table, move the folder to ``out``.

        ``notes``: what ``readgaze prep`` printed besides the counts (warnings, the labels join), kept in the
        manifest."""
        for name in TABLES:
            if name not in self._jobs:
                self.put(name, getattr(prepared, name))
        for job in self._jobs.values():
            job.result()  # a writer's error is raised here
        rows_out = {name: getattr(prepared, name).height for name in TABLES}
        (self._tmp / MANIFEST).write_text(
            json.dumps(_manifest(prepared, sources, config, id_bases, rows_out, notes), indent=2, sort_keys=True,
                       default=str) + "\n")
        check_target(self.out, self.force)
        for name in KEPT:  # the reviewer's corrections log outlives a re-run of prep (it re-applied it)
            if (self.out / name).is_file():
                shutil.copy2(self.out / name, self._tmp / name)
        if self.out.exists():
            shutil.rmtree(self.out)
        self._tmp.replace(self.out)
        self._tmp = None
        return self.out


def _manifest(prepared, sources: dict[str, list[str]], config: dict, id_bases: dict | None, rows_out: dict,
              notes: list[str] | None = None) -> dict:
    return {
        "notes": list(notes or []),
        "format": "readgaze dataset folder, version 1",
        "sources": {role: [{"path": str(Path(p).resolve()), "name": Path(p).name, "sha256": sha256(p),
                            "bytes": Path(p).stat().st_size} for p in paths]
                    for role, paths in sources.items()},
        "config": config,
        "package_versions": package_versions(),
        "rows_in": prepared.rows_in,
        "rows_out": rows_out,
        "qc_summary": qc_summary(prepared.qc.records),
        "qc": prepared.qc.records,
        "id_bases": id_bases or {},
        "word_features": prepared.features,
        "skipped_features": {k: v for k, v in prepared.features.items() if v.startswith("skipped")},
    }


def write_dataset(out: str | Path, prepared, *, sources: dict[str, list[str]], config: dict,
                  id_bases: dict | None = None, force: bool = False, fmt: str = "parquet") -> Path:
    """Write the four tables and the manifest of a :class:`readgaze.data_prep.pipeline.Prepared`.

    Parameters
    ----------
    out : path
        Target folder (created; replaced only with ``force``).
    sources : dict
        ``{role: [file paths]}`` of the inputs; each file is recorded with its SHA-256.
    config : dict
        The options the pipeline ran with.
    id_bases : dict, optional
        The loader's id-base decisions (e.g. ``{"fixation_report.CURRENT_FIX_INTEREST_AREA_ID": 1}``).
    fmt : {"parquet", "csv", "both"}
        Table format (the models read Parquet; CSV is for R and spreadsheets, nested columns as JSON text).

    Returns
    -------
    Path
        The folder.

    Raises
    ------
    ConfigError
        See :func:`check_target`.
    """
    with DatasetWriter(out, force=force, fmt=fmt) as writer:
        return writer.finish(prepared, sources=sources, config=config, id_bases=id_bases)
