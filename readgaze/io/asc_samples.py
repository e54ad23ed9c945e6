"""Where :func:`readgaze.io.asc.read_asc` puts the samples it parses, one chunk at a time.

``samples="memory"`` (default) keeps every chunk and returns one ``polars.DataFrame``; a path ending in
``.parquet`` writes each chunk to that Parquet file as a row group (zstd) and returns a
``polars.LazyFrame`` over it; ``"none"`` keeps nothing. Whatever the target, the per-trial counts the
trials table and the QC report need (samples, missing, missing in a blink) are summed chunk by chunk,
so the Parquet and ``"none"`` targets hold no sample in memory beyond the chunk being written.

Measured peak above the imports (synthetic 1000 Hz file): ``"none"`` +103 MiB at 1 M samples, +123 MiB
at 4 M (the growth is the event tables); Parquet +115 / +159 MiB, or +107 / +133 MiB with
``ARROW_DEFAULT_MEMORY_POOL=system``: pyarrow's default mimalloc pool keeps some of what the writer frees.
"""

from __future__ import annotations

import os
from pathlib import Path

import polars as pl

from readgaze.errors import ConfigError
from readgaze.io.asc_qc import count_samples
from readgaze.io.asc_scan import Block

#: Columns every block's samples end with, after ``time_ms`` and the per-eye columns.
TAIL = {"x_px": pl.Float64, "y_px": pl.Float64, "pupil": pl.Float64, "eye": pl.String, "block": pl.Int32,
        "in_blink": pl.Boolean, "trial_id": pl.String}
EMPTY = {"trial_id": pl.String, "block": pl.Int32, "time_ms": pl.Float64, "x_px": pl.Float64, "y_px": pl.Float64,
         "pupil": pl.Float64, "eye": pl.String, "in_blink": pl.Boolean}


def schema(blocks: list[Block]) -> dict[str, pl.DataType]:
    """The samples table's columns: those of each block with samples, in order of first appearance
    (``time_ms``, ``x_{eye}_px``, ``y_{eye}_px``, ``pupil_{eye}`` per eye, then :data:`TAIL`)."""
    out: dict[str, pl.DataType] = {}
    for block in (b for b in blocks if b.n_samples):
        out.setdefault("time_ms", pl.Float64)
        for eye in block.eyes:
            for name in (f"x_{eye}_px", f"y_{eye}_px", f"pupil_{eye}"):
                out.setdefault(name, pl.Float64)
        for name, dtype in TAIL.items():
            out.setdefault(name, dtype)
    return out or dict(EMPTY)


def check_target(target) -> Path | None:
    """The Parquet path of a ``samples`` target, or None for ``"memory"`` / ``"none"``.

    Raises
    ------
    ConfigError
        Not ``"memory"``, ``"none"`` or a path ending in ``.parquet`` in an existing folder.
    """
    if isinstance(target, str) and target in ("memory", "none"):
        return None
    if not isinstance(target, (str, os.PathLike)) or Path(target).suffix != ".parquet":
        raise ConfigError(f"samples: got {target!r}, expected 'memory', 'none' or a path ending in .parquet")
    path = Path(target)
    if not path.parent.is_dir():
        raise ConfigError(f"samples: folder {str(path.parent)!r} of {path.name!r} does not exist")
    return path


class SampleSink:
    """Collects (``"memory"``), writes (``.parquet`` path) or drops (``"none"``) sample chunks.

    Parameters
    ----------
    target : "memory", "none", str or PathLike
        A path must end in ``.parquet``; its folder must exist. An existing file is replaced.
    blocks : list of Block
        The recording's blocks (they fix the Parquet schema before the first chunk).

    Raises
    ------
    ConfigError
        Any other target, or a Parquet path whose folder does not exist.
    """

    def __init__(self, target, blocks: list[Block]):
        self.path = check_target(target)
        self.keep = self.path is None and str(target) == "memory"
        self.schema = schema(blocks)
        self.frames: list[pl.DataFrame] = []
        self.counts: list[pl.DataFrame] = []
        self.rows = 0
        self._writer = None

    def add(self, samples: pl.DataFrame) -> None:
        """One chunk of one block's samples (columns of that block)."""
        self.counts.append(count_samples(samples))
        self.rows += samples.height
        if self.keep:
            self.frames.append(samples)
        elif self.path is not None:
            self._write(self._conform(samples))

    def _conform(self, samples: pl.DataFrame) -> pl.DataFrame:
        return samples.select(pl.col(c) if c in samples.columns else pl.lit(None, dtype=t).alias(c)
                              for c, t in self.schema.items()).cast(self.schema)

    def _write(self, frame: pl.DataFrame) -> None:
        import pyarrow.parquet as pq

        table = frame.to_arrow()
        if self._writer is None:
            self._arrow_schema = table.schema
            strings = [c for c, t in self.schema.items() if t == pl.String]  # dictionary pages for text only
            self._writer = pq.ParquetWriter(self.path, table.schema, compression="zstd", use_dictionary=strings)
        self._writer.write_table(table.cast(self._arrow_schema))

    def sample_counts(self) -> pl.DataFrame:
        """Per trial: ``trial_id``, ``n_samples``, ``missing_samples``, ``missing_in_blink`` (UInt32 / Int64)."""
        empty = pl.DataFrame(schema={"trial_id": pl.String, "n_samples": pl.UInt32, "missing_samples": pl.UInt32,
                                     "missing_in_blink": pl.UInt32})
        if not self.counts:
            return empty
        return pl.concat(self.counts).group_by("trial_id", maintain_order=True).sum()

    def result(self) -> pl.DataFrame | pl.LazyFrame:
        """The samples: a DataFrame (memory), a LazyFrame over the Parquet file, or an empty DataFrame."""
        if self.path is not None:
            if self._writer is None:
                self._write(pl.DataFrame(schema=self.schema))
            self._writer.close()
            self._writer = None
            return pl.scan_parquet(self.path)
        frames = [f for f in self.frames if f.height]
        if frames:
            return pl.concat(frames, how="diagonal_relaxed")
        return pl.DataFrame(schema=EMPTY if self.keep else self.schema)

    def abort(self) -> None:
        """Close and remove a partly written Parquet file (the read failed)."""
        if self._writer is not None:
            self._writer.close()
            self._writer = None
        if self.path is not None and self.path.exists():
            self.path.unlink()
