"""readgaze.Dataset opens a dataset folder once: lazy validated tables, the manifest, one fingerprint; and no module
but readgaze.dataset spells a table's file name. Runs from a clone (a synthetic folder, no ../shared)."""

from __future__ import annotations

import os
import re
from pathlib import Path

import polars as pl
import pytest
from synthetic import write_synthetic_dataset

from readgaze.errors import ConfigError, SchemaError

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    return write_synthetic_dataset(tmp_path_factory.mktemp("ds") / "ds", n_participants=4, n_items=3, n_words=12)


def test_dataset_hands_out_the_tables_lazily_and_the_manifest(folder):
    from readgaze import Dataset

    ds = Dataset(folder)
    assert isinstance(ds.trials, pl.LazyFrame) and isinstance(ds.word_measures, pl.LazyFrame)
    assert ds.trials.collect().height == 4 * 3 == pl.read_parquet(folder / "trials.parquet").height
    assert ds.fixations.collect().equals(pl.read_parquet(folder / "fixations.parquet"))
    assert ds.manifest["source"] == "synthetic.write_synthetic_dataset"
    assert ds.file("words") == folder / "words.parquet" and ds.has("words")
    assert ds == Dataset(str(folder)) and repr(ds) == f"Dataset({str(folder)!r})"


def test_a_folder_without_trials_is_refused_naming_it(tmp_path):
    from readgaze import Dataset

    with pytest.raises(ConfigError, match="not a dataset folder \\(no trials.parquet\\)") as error:
        Dataset(tmp_path)
    assert Path(error.value.file) == tmp_path


def test_a_table_that_breaks_the_schema_is_an_error_naming_file_and_column(folder, tmp_path):
    from readgaze import Dataset

    bad = tmp_path / "bad"
    bad.mkdir()
    for f in folder.iterdir():
        (bad / f.name).write_bytes(f.read_bytes())
    pl.read_parquet(folder / "fixations.parquet").drop("duration_ms").write_parquet(bad / "fixations.parquet")
    ds = Dataset(bad)
    ds.trials.collect()  # the other tables are fine
    with pytest.raises(SchemaError, match="fixations table: missing") as error:
        _ = ds.fixations
    assert error.value.column == "duration_ms" and Path(error.value.file).name == "fixations.parquet"


def test_the_fingerprint_changes_when_a_table_is_rewritten_and_only_then(folder, tmp_path):
    from readgaze import Dataset
    from readgaze.models.training.bench_config import dataset_fingerprint

    copy = tmp_path / "copy"
    copy.mkdir()
    for f in folder.iterdir():
        (copy / f.name).write_bytes(f.read_bytes())
        st = f.stat()
        os.utime(copy / f.name, ns=(st.st_atime_ns, st.st_mtime_ns))
    before = Dataset(copy).fingerprint()
    assert before == Dataset(folder).fingerprint() == dataset_fingerprint(copy)  # bench plans with the same one
    assert Dataset(copy).fingerprint(["trials"]) != before
    trials = copy / "trials.parquet"
    os.utime(trials, ns=(trials.stat().st_atime_ns, trials.stat().st_mtime_ns + 1))
    assert Dataset(copy).fingerprint() != before


def test_the_writer_and_the_readers_take_the_file_names_from_readgaze_dataset():
    """No module outside readgaze/dataset.py builds a path to a dataset table (``folder / "trials.parquet"``,
    ``f"{table}.parquet"``); run folders' own files (``predictions_*.parquet``, a fold's ``trials.parquet``
    assignment) are not dataset tables and are listed here by file."""
    table = r"(trials|words|fixations|word_measures)"
    pattern = re.compile(rf"""/ ["']{table}\.parquet["']|f["']\{{(name|table|t|n)\}}\.parquet["']""")
    own_files = {"models/training/cv.py", "models/training/bench_unit.py", "models/training/goal_cv.py",
                 "models/training/bench_report.py",  # a fold folder's trials.parquet: the fold's assignment
                 "models/data/cache.py"}  # an array-cache entry's own frames
    found = []
    for part in ("readgaze", "data_prep", "models"):
        for path in sorted((REPO / part).rglob("*.py")):
            rel = str(path.relative_to(REPO))
            if rel == "readgaze/dataset.py" or rel in own_files:
                continue
            found += [f"{rel}:{i}: {line.strip()}" for i, line in enumerate(path.read_text().splitlines(), 1)
                      if pattern.search(line)]
    assert not found, "paths to dataset tables built outside readgaze.dataset:\n" + "\n".join(found)
