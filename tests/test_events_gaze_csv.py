"""read_gaze_csv on the toy dataset, SB-SAT/PoTeC/EMTeC examples and bad inputs BR-11, BR-19."""

from __future__ import annotations

import polars as pl
import pytest

from readgaze.errors import ConfigError, ParseError
from readgaze.io.samples import ScreenGeometry, read_gaze_csv
from readgaze.schema import validate

TOY_ROWS = {"trial_0_1": 17223, "trial_1_1": 23054, "trial_1_2": 22294, "trial_2_1": 29660, "trial_3_1": 26931}


@pytest.mark.parametrize("trial, rows", TOY_ROWS.items())
def test_toy_dataset_rows_and_missing(shared_data, trial, rows):
    lazy = read_gaze_csv(shared_data / "toy_reading_raw" / f"{trial}.csv")
    assert isinstance(lazy, pl.LazyFrame)
    frame = validate(lazy.collect(), "samples")
    assert frame.height == rows
    assert frame["x_px"].null_count() == (83 if trial == "trial_1_2" else 0)
    assert frame["time_ms"].diff().drop_nulls().unique().to_list() == [1.0]
    assert frame["stimuli_x"].unique().to_list() == [-1.0]  # source columns kept


def test_toy_first_row_crlf(small_data):
    row = read_gaze_csv(small_data / "toy_reading_raw" / "trial_0_1.csv").head(1).collect()
    assert row.select("trial_id", "time_ms", "x_px", "y_px", "stimuli_y").row(0) == (
        "trial_0_1", 1988145.0, 206.8, 152.4, -1.0)


def test_sbsat_potec_examples(small_data):
    folder = small_data / "pymovements_examples"
    sbsat = read_gaze_csv(folder / "sbsat_example.csv", time_column="time", x_column="x_left",
                          y_column="y_left", pupil_column="pupil_left", eye="left").collect()
    assert sbsat.height == 10 and sbsat.row(0)[:6] == ("sbsat_example", 1487053.0, 274.9, 108.3, 2372.0, "left")
    potec = read_gaze_csv(folder / "potec_example.tsv", time_column="time", pupil_column="pupil_diameter").collect()
    assert potec.select("time_ms", "x_px", "y_px", "pupil").row(0) == (2076105.0, 91.8, 67.3, 1746.0)


def test_emtec_2khz_repeated_timestamps(small_data):
    frame = read_gaze_csv(small_data / "pymovements_examples" / "emtec_example.csv", time_column="time",
                          pupil_column="pupil_right", eye="right", trial_column="TRIAL_ID",
                          sampling_rate_hz=2000.0).collect()
    assert frame["time_ms"].to_list() == [1699033.0 + 0.5 * i for i in range(20)]
    assert frame["trial_id"].unique().to_list() == ["1"]


def test_center_origin_is_shifted():
    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "c.tsv"
        path.write_text("time\tx\ty\n1\t0.0\t0.0\n2\t-640.0\t512.0\n")
        screen = ScreenGeometry(1280, 1024, 38.0, 30.2, 68.0, origin="center")
        frame = read_gaze_csv(path, time_column="time", screen=screen).collect()
    assert frame.select("x_px", "y_px").rows() == [(640.0, 512.0), (0.0, 1024.0)]
    assert ScreenGeometry(1280, 1024, 38.0, 30.2, 68.0).px_per_deg == pytest.approx(40.0, abs=0.05)


def test_br11_leading_empty_coordinates(small_data):
    frame = read_gaze_csv(small_data / "bad_inputs" / "BR-11.csv", time_column="timestamp_ms",
                          trial_column="unique_trial_id").collect()
    assert frame.schema["x_px"] == pl.Float64 and frame.schema["y_px"] == pl.Float64
    assert frame["x_px"].null_count() == 120
    assert frame.select("x_px", "y_px").row(-1) == (409.5, 210.0)


def test_br19_decimal_comma(small_data):
    path = small_data / "bad_inputs" / "BR-19.csv"
    with pytest.raises(ParseError, match=r"BR-19.csv, row 2, column x: '390,6' is not a number \(decimal comma\?"):
        read_gaze_csv(path, time_column="timestamp_ms")
    frame = read_gaze_csv(path, separator=";", decimal_comma=True, time_column="timestamp_ms").collect()
    assert frame.select("x_px", "y_px").row(0) == (390.6, 210.0)


def test_missing_column_and_bad_options(small_data):
    path = small_data / "bad_inputs" / "BR-11.csv"
    with pytest.raises(ParseError, match=r"BR-11.csv, row 1: missing time column 'timestamp'"):
        read_gaze_csv(path)
    with pytest.raises(ConfigError):
        ScreenGeometry(1280, 1024, 38.0, 30.2, 68.0, origin="lower left")
