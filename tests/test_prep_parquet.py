"""The dataset tables' Parquet encoding (readgaze.data_prep.dataset.PARQUET: LZ4, no column statistics, #18) reads
back equal in polars and pyarrow, and a filtered scan still returns exactly the matching rows."""

from __future__ import annotations

import polars as pl
import pyarrow.parquet as pq
from polars.testing import assert_frame_equal

from readgaze.data_prep.dataset import PARQUET, write_table


def test_tables_read_back_equal_in_polars_and_pyarrow(tmp_path):
    frame = pl.DataFrame({"trial_id": [f"r{i // 7:03d}" for i in range(5000)],
                          "word_index": pl.int_range(5000, eager=True).cast(pl.Int32) % 7,
                          "duration_ms": [None if i % 11 == 0 else 100.0 + i / 3 for i in range(5000)],
                          "skipped": [i % 3 == 0 for i in range(5000)],
                          "spans": [[i, i + 1] for i in range(5000)]})
    (path,) = write_table(frame, tmp_path, "word_measures")
    assert PARQUET["compression"] == "lz4"
    assert_frame_equal(pl.read_parquet(path), frame, check_exact=True)
    assert_frame_equal(pl.from_arrow(pq.read_table(path)), frame, check_exact=True)
    meta = pq.ParquetFile(path).metadata
    assert meta.row_group(0).column(0).compression == "LZ4"
    got = pl.scan_parquet(path).filter(pl.col("trial_id") == "r100").collect()
    assert_frame_equal(got, frame.filter(pl.col("trial_id") == "r100"), check_exact=True)
    assert got.height == 7
