"""readgaze.schema is the one definition of the dataset folder and the prediction table: the writer, the datamodule
and the metrics use it, and a table that breaks it is an error naming the file and the column."""

from __future__ import annotations

import polars as pl
import pytest
from synthetic import write_synthetic_dataset

from readgaze import schema
from readgaze.errors import SchemaError


def test_the_writer_the_datamodule_and_the_metrics_take_their_tables_from_the_schema():
    from readgaze import dataset as folder
    from readgaze.data_prep import dataset
    from readgaze.metrics import NEEDED
    from readgaze.models.data import datamodule

    assert dataset.TABLES is schema.DATASET_TABLES is folder.TABLES
    assert datamodule.Dataset is folder.Dataset
    assert NEEDED == schema.PREDICTION_COLUMNS == ("trial_id", "label", "prediction_prob", "regime", "fold_index")


def test_the_writer_refuses_a_table_that_breaks_the_schema(tmp_path):
    from readgaze.data_prep.dataset import DatasetWriter

    bad = pl.DataFrame({"trial_id": ["t1"], "fixation_index": pl.Series([0], dtype=pl.Int32)})
    with DatasetWriter(tmp_path / "ds") as writer:
        with pytest.raises(SchemaError) as error:
            writer.put("fixations", bad)
    assert str(error.value).startswith("fixations.parquet: fixations table: column start_ms missing")
    assert not (tmp_path / "ds").exists()


def test_the_datamodule_names_the_file_and_column_of_a_dataset_that_breaks_the_schema(tmp_path):
    from readgaze.models.data import ReadingDataModule

    path = write_synthetic_dataset(tmp_path / "ds", n_participants=4, n_items=4, n_words=12, seed=1)
    words = pl.read_parquet(path / "words.parquet")
    words.with_columns(pl.col("left_px").cast(pl.String)).write_parquet(path / "words.parquet")
    with pytest.raises(SchemaError) as error:
        ReadingDataModule(str(path), n_folds=3).setup("fit")
    assert error.value.file == str(path / "words.parquet") and error.value.column == "left_px"
    assert "words.parquet, column left_px: words table: got String, expected Float64" == str(error.value)


def test_a_reader_that_casts_accepts_other_widths_of_the_same_kind():
    frame = pl.DataFrame({"trial_id": ["a"], "fixation_index": [0], "start_ms": [1], "duration_ms": [2.0],
                          "x_px": [1.0], "y_px": [2.0]})  # fixation_index Int64, start_ms Int64
    assert schema.validate(frame, "fixations", exact=False) is frame
    with pytest.raises(SchemaError, match="column fixation_index got Int64, expected Int32; column start_ms got"):
        schema.validate(frame, "fixations")


def test_prediction_prob_is_one_probability_or_a_list_of_them():
    base = {"trial_id": ["a"], "label": [1], "regime": ["new_item"], "fold_index": pl.Series([0], dtype=pl.Int32)}
    schema.validate(pl.DataFrame({**base, "prediction_prob": [0.7]}), "predictions")
    schema.validate(pl.DataFrame({**base, "prediction_prob": [[0.1, 0.2, 0.7]]}), "predictions")
    with pytest.raises(SchemaError, match="column prediction_prob: predictions table: got String"):
        schema.validate(pl.DataFrame({**base, "prediction_prob": ["0.7"]}), "predictions")
