"""A dataset folder, opened once: ``readgaze.Dataset(path)``.

A dataset folder is what ``readgaze prep`` writes and what everything downstream reads (baselines, the models'
datamodule, ``readgaze cv``, ``bench``, ``predict``, ``inspect``): the four tables of
:data:`readgaze.schema.DATASET_TABLES`, one ``<table>.parquet`` each (:func:`table_file`; ``--format csv`` adds or
writes ``<table>.csv``), and ``manifest.json`` (:data:`MANIFEST`: sources with their SHA-256, settings, QC counts).
This module owns those names: the writer (``readgaze.data_prep.dataset``) and every reader build the paths here, so
no other module spells a table's file name.

:class:`Dataset` checks the folder when it is opened (a folder with ``trials.parquet``), validates each table
against :mod:`readgaze.schema` the first time it is scanned (required columns present, each canonical column of its
dtype's kind) and hands out lazy tables (``ds.trials``, ``ds.fixations``, ``ds.words``, ``ds.word_measures``:
``polars.LazyFrame``). :meth:`Dataset.fingerprint` identifies a dataset's files (by name, size and modification
time: a re-prepared dataset differs) through :func:`readgaze.fingerprint.fingerprint`, the project's one
fingerprint of files.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path

import polars as pl

from readgaze.errors import ConfigError
from readgaze.fingerprint import fingerprint
from readgaze.schema import DATASET_TABLES as TABLES
from readgaze.schema import validate as _validate

MANIFEST = "manifest.json"
"""The manifest's file name (JSON: ``sources``, ``config``, ``rows_in``, ``rows_out``, ``qc``, ...)."""


def table_file(name: str, fmt: str = "parquet") -> str:
    """The file name of table ``name`` in a dataset folder (``fmt`` "parquet" or "csv").

    Examples
    --------
    >>> table_file("trials"), table_file("word_measures", "csv")
    ('trials.parquet', 'word_measures.csv')
    """
    return f"{name}.{fmt}"


class Dataset:
    """A dataset folder written by ``readgaze prep``, checked once, its tables handed out lazily.

    Parameters
    ----------
    path : str or Path
        The folder (it must hold ``trials.parquet``).

    Attributes
    ----------
    path : Path
        The folder.
    trials, words, fixations, word_measures : polars.LazyFrame
        The tables (:meth:`scan`), each validated against :mod:`readgaze.schema` on first use.

    Raises
    ------
    ConfigError
        ``path`` is not a folder or has no ``trials.parquet`` (not a dataset folder; make one with readgaze prep).

    Examples
    --------
    >>> ds = Dataset("runs/onestop")  # doctest: +SKIP
    >>> ds.trials.select("trial_id", "reading_goal").collect()  # doctest: +SKIP
    """

    def __init__(self, path: str | Path):
        self.path = Path(path)
        trials = self.file("trials")
        if not self.path.is_dir() or not trials.is_file():
            raise ConfigError(f"not a dataset folder (no {trials.name}); make one with readgaze prep",
                              file=self.path)
        self._checked: set[str] = set()

    def __repr__(self) -> str:
        return f"Dataset({str(self.path)!r})"

    def __eq__(self, other) -> bool:
        return isinstance(other, Dataset) and self.path.resolve() == other.path.resolve()

    def __hash__(self) -> int:
        return hash(self.path.resolve())

    def file(self, table: str, fmt: str = "parquet") -> Path:
        """The path of table ``table`` (``self.path / "trials.parquet"``); it may not exist."""
        return self.path / table_file(table, fmt)

    def has(self, table: str) -> bool:
        """Whether the folder holds ``<table>.parquet``."""
        return self.file(table).is_file()

    def scan(self, table: str, *, validate: bool = True) -> pl.LazyFrame:
        """``<table>.parquet`` as a LazyFrame, its columns validated against :mod:`readgaze.schema` the first time
        (``exact=False``: each canonical column of its dtype's kind).

        Raises
        ------
        ConfigError
            The folder has no such file.
        SchemaError
            A required column is missing or has the wrong dtype (names the file and the column).
        """
        file = self.file(table)
        if not file.is_file():
            raise ConfigError(f"dataset folder {self.path} has no {file.name} (expected {', '.join(TABLES)})",
                              file=file)
        frame = pl.scan_parquet(file)
        if validate and table in TABLES and table not in self._checked:
            _validate(frame, table, source=file, exact=False)
            self._checked.add(table)
        return frame

    def columns(self, table: str) -> list[str]:
        """The column names of a table (read from the file's footer; not validated)."""
        return self.scan(table, validate=False).collect_schema().names()

    @property
    def trials(self) -> pl.LazyFrame:
        return self.scan("trials")

    @property
    def words(self) -> pl.LazyFrame:
        return self.scan("words")

    @property
    def fixations(self) -> pl.LazyFrame:
        return self.scan("fixations")

    @property
    def word_measures(self) -> pl.LazyFrame:
        return self.scan("word_measures")

    @property
    def manifest(self) -> dict:
        """``manifest.json`` as a dict (empty when the folder has none)."""
        path = self.path / MANIFEST
        return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}

    def fingerprint(self, tables: Iterable[str] = TABLES) -> str:
        """:func:`fingerprint` of the tables' files (``.parquet`` and ``.csv``, by name, size and modification
        time) and of the manifest: a re-prepared dataset differs, a copy with the same times does not."""
        files = [p for t in tables for p in sorted(self.path.glob(f"{t}.*"))]
        return fingerprint([*files, *sorted(self.path.glob("manifest.*"))])
