"""Write a dataset folder: ``{trials,words,fixations,word_measures}.parquet`` + ``manifest.json``.

The folder is the one contract between preprocessing and the models; keep these names. Tables are
sorted and written without timestamps, so identical inputs give byte-identical parquet files; the
manifest holds no creation time either (it is byte-identical too).
"""

from __future__ import annotations

import hashlib
import json
import shutil
from importlib import metadata
from pathlib import Path

from readgaze.errors import ConfigError

TABLES = ("trials", "words", "fixations", "word_measures")
_PACKAGES = ("readgaze", "polars", "numpy", "pyarrow", "wordfreq", "rich")


def sha256(path: str | Path) -> str:
    """Hex SHA-256 of a file, read in 1 MiB blocks (memoised by :func:`data_prep.cache.checksum` when it
    can be: an unchanged file is hashed once per machine)."""
    from data_prep.cache import checksum

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
        raise ConfigError("output folder exists and is not empty; pass --force to overwrite it", file=out)
    return out


def qc_summary(records: list[dict]) -> dict:
    """``{table: {action: {reason: count}}}`` summed over steps."""
    out: dict = {}
    for r in records:
        cell = out.setdefault(r["table"], {}).setdefault(r["action"], {})
        cell[r["reason"]] = cell.get(r["reason"], 0) + r["count"]
    return out


FORMATS = ("parquet", "csv", "both")


def csv_ready(frame):
    """``frame`` with nested (List/Struct/Array) columns as JSON text, so it can be written as CSV."""
    import polars as pl

    nested = [c for c, t in frame.schema.items() if isinstance(t, (pl.List, pl.Struct, pl.Array))]
    return frame.with_columns([pl.struct(pl.col(c)).struct.json_encode().str.slice(len(c) + 4).str.head(-1).alias(c)
                               for c in nested]) if nested else frame


def write_table(frame, folder: Path, name: str, fmt: str = "parquet") -> list[Path]:
    """Write ``name.parquet`` and/or ``name.csv`` (:data:`FORMATS`); returns the paths written."""
    if fmt not in FORMATS:
        raise ConfigError(f"--format {fmt!r}: expected one of {list(FORMATS)}")
    paths = []
    if fmt in ("parquet", "both"):
        frame.write_parquet(folder / f"{name}.parquet", compression="zstd", statistics=True)
        paths.append(folder / f"{name}.parquet")
    if fmt in ("csv", "both"):
        csv_ready(frame).write_csv(folder / f"{name}.csv")
        paths.append(folder / f"{name}.csv")
    return paths


def write_dataset(out: str | Path, prepared, *, sources: dict[str, list[str]], config: dict,
                  id_bases: dict | None = None, force: bool = False, fmt: str = "parquet") -> Path:
    """Write the four tables and the manifest of a :class:`data_prep.pipeline.Prepared`.

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
    out = check_target(out, force)
    if out.exists() and force:
        shutil.rmtree(out)
    out.mkdir(parents=True)
    rows_out = {}
    for name in TABLES:
        frame = getattr(prepared, name)
        write_table(frame, out, name, fmt)
        rows_out[name] = frame.height
    manifest = {
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
    (out / "manifest.json").write_text(json.dumps(manifest, indent=2, sort_keys=True, default=str) + "\n")
    return out
