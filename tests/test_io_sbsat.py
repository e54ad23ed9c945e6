"""SB-SAT book-wise windows: the reader against the real files, its errors, and the results table command."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from readgaze.errors import ConfigError, LeakageError, ParseError
from readgaze.io.sbsat import WINDOW_FEATURES, read_sbsat_windows, reader_constant_labels

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "experiments"))


@pytest.fixture(scope="module")
def bookwise(shared_data):
    return shared_data / "sbsat" / "bookwise"


def test_real_windows_and_labels(bookwise):
    windows = read_sbsat_windows(bookwise)
    assert {k: v.shape for k, v in windows.arrays.items()} == {"train": (5757, 21, 4), "val": (2925, 21, 4),
                                                               "test": (2866, 21, 4)}
    assert windows.label_names[:2] == ("acc_level", "subj_acc_level") and "native" in windows.label_names
    train = windows.split("train")[1]
    assert train["acc_level"].value_counts().sort("acc_level")["count"].to_list() == [2110, 3647]
    assert train["subj_acc_level"].value_counts().sort("subj_acc_level")["count"].to_list() == [3194, 2563]
    per_split = windows.labels.group_by("split").agg(pl.col("participant_id").n_unique()).sort("split")
    assert per_split["participant_id"].to_list() == [94, 95, 95]  # test, train, val: msd012 has no test window
    assert "msd012" not in windows.split("test")[1]["participant_id"].to_list()
    constant = reader_constant_labels(windows.labels, windows.label_names)
    assert constant["subj_acc_level"] and constant["native"] and not constant["acc_level"]


def test_feature_order_is_x_y_pupil_duration(bookwise, small_data):
    """The first 5 test windows are rows 0-104 of msd001's fixation report, durations min-max scaled over [1, 3834]."""
    array = read_sbsat_windows(bookwise).arrays["test"]
    report = pl.read_csv(small_data / "pymovements_examples" / "18sat_fixfinal.csv", infer_schema_length=None)
    flat = array[:5].reshape(-1, 4).astype(np.float64)
    duration = report["CURRENT_FIX_DURATION"].to_numpy()[:105].astype(np.float64)
    np.testing.assert_allclose(flat[:, WINDOW_FEATURES.index("duration")] * (3834 - 1) + 1, duration, atol=1e-3)
    x = report["CURRENT_FIX_X"].to_numpy()[:105]
    assert np.corrcoef(flat[:, WINDOW_FEATURES.index("x")], x)[0, 1] > 0.9999


def _write(folder: Path, splits: dict[str, list[tuple[str, str]]], shape=(21, 4)) -> Path:
    for split, pairs in splits.items():
        sub, name = {"train": ("train", "fix_train_10.npy"), "val": ("val", "fix_valid_10.npy"),
                     "test": ("test", "fix_test_10.npy")}[split]
        (folder / sub).mkdir(parents=True, exist_ok=True)
        np.save(folder / sub / name, np.random.default_rng(0).random((len(pairs), *shape)))
        pl.DataFrame({"": list(range(len(pairs))), "subj": [p for p, _ in pairs], "book": [b for _, b in pairs],
                      "acc_level": [i % 2 for i in range(len(pairs))]}).write_csv(folder / sub / "label_train_10.csv")
    return folder


def test_bad_windows_are_refused(tmp_path):
    good = {"train": [("r1", "a"), ("r1", "b")], "val": [("r1", "c")], "test": [("r1", "d")]}
    windows = read_sbsat_windows(_write(tmp_path / "ok", good))
    assert windows.label_names == ("acc_level",) and windows.labels.height == 4
    leaky = {**good, "test": [("r1", "a")]}
    with pytest.raises(LeakageError, match="r1 x a in \\['test', 'train'\\]"):
        read_sbsat_windows(_write(tmp_path / "leak", leaky))
    with pytest.raises(ParseError, match="expected \\(n_windows, n_fixations, 4\\)"):
        read_sbsat_windows(_write(tmp_path / "shape", good, shape=(21, 3)))
    with pytest.raises(ParseError, match="file not found"):
        read_sbsat_windows(tmp_path / "nowhere")


@pytest.mark.slow
def test_results_table_command(bookwise, tmp_path):
    import sbsat_bookwise

    assert sbsat_bookwise.main(["--data", str(bookwise), "--out", str(tmp_path), "--labels", "native",
                                "--max-epochs", "1"]) == 0
    table = pl.read_csv(tmp_path / "results.csv")
    assert table["model"].to_list() == ["chance", "reader lookup", "logistic regression (12 window summaries)",
                                        "gradient boosting (12 window summaries)", "AhnRNN", "AhnCNN"]
    assert table["scored_by"].unique().to_list() == ["recognising the reader"]
    chance = table.row(0, named=True)
    assert chance["balanced_accuracy"] == 0.5 and chance["auroc"] == 0.5
    lookup = table.row(1, named=True)  # native is constant per reader: the lookup is perfect
    assert lookup["balanced_accuracy"] == 1.0 and lookup["auroc"] == 1.0
    assert "scorable by recognising the reader" in (tmp_path / "results.md").read_text()


def test_window_summaries_by_hand():
    """Mean, population SD and mean absolute step per channel: the 12 numbers the SB-SAT window baselines read."""
    from readgaze.baselines import sequence_summaries

    x = np.array([[[0.0, 1.0], [2.0, 1.0], [1.0, 4.0]]])  # one window, 3 steps, 2 channels
    row = sequence_summaries(x, ["a", "b"]).row(0, named=True)
    assert row == pytest.approx({"a_mean": 1.0, "a_sd": np.sqrt(2 / 3), "a_mean_abs_step": 1.5,
                                 "b_mean": 2.0, "b_sd": np.sqrt(2), "b_mean_abs_step": 1.5})
    with pytest.raises(ConfigError, match="channel names"):
        sequence_summaries(x, ["a"])


def test_trial_report_comprehension_labels_attach_per_reader_and_book(shared_data):
    """experiments/sbsat_trials.py: first visits of reading pages, each carrying its reader x book's passage
    accuracy (checked against the question pages), >= 3 of 5 right = 1 (SB-SAT's acc_level >= 2)."""
    import sbsat_trials

    table, counts = sbsat_trials.comprehension_trials(shared_data / "sbsat" / "fixation")
    assert counts == {"reading page visits": 2358, "revisits dropped": 304, "pages kept": 2054,
                      "reader x book pairs": 380, "readers": 95, "books": 4, "positive pairs": 231,
                      "acc checked against question pages": 380}
    per_pair = table.group_by("participant_id", "item_id").agg(pl.col("label").n_unique(), pl.col("acc").first())
    assert per_pair["label"].max() == 1  # one label per reader x book
    assert ((per_pair["acc"] * 5).round() == per_pair["acc"] * 5).all()  # k of 5 questions
