"""EyeBench's published CopCo tables: read exactly, and set beside readgaze's scores in EyeBench's layout."""

from pathlib import Path

import polars as pl
import pytest

from readgaze.errors import DataError, ParseError
from readgaze.eyebench_tables import compare_with_eyebench, eyebench_table, read_eyebench_table
from readgaze.metrics_regression import evaluate_regression

EXCERPT = Path(__file__).parent / "files" / "eyebench_copco" / "results"


def _cell(table: pl.DataFrame, model: str, regime: str, metric: str) -> tuple[float, float]:
    row = table.filter((pl.col("model") == model) & (pl.col("regime") == regime) & (pl.col("metric") == metric))
    assert row.height == 1
    return row["mean"][0], row["sem"][0]


def test_excerpt_read_long():
    table = read_eyebench_table(EXCERPT / "CopCo_TYP_test.csv")
    assert table.height == 3 * 8
    assert table["model"].unique(maintain_order=True).to_list() == ["Majority Class / Chance", "Reading Speed",
                                                                    "Random Forest"]
    assert table.filter(pl.col("model") == "Random Forest")["citation"].unique().to_list() == ["makowski2024detection"]
    assert _cell(table, "Random Forest", "new_participant", "balanced_accuracy") == (69.8, 4.2)  # Unseen Reader
    assert _cell(table, "Random Forest", "new_item", "auroc") == (91.5, 1.5)  # Unseen Text
    assert _cell(table, "Random Forest", "new_item_participant", "auroc") == (65.9, 6.6)
    assert _cell(table, "Random Forest", "all", "auroc") == (82.9, 1.5)  # Average
    assert table.filter(pl.col("model") == "Random Forest")["row"].unique().to_list() == [4]
    regression = read_eyebench_table(EXCERPT / "CopCo_RCS_test.csv")
    assert regression["metric"].unique(maintain_order=True).to_list() == ["rmse", "mae", "r2"]
    assert _cell(regression, "Random Forest", "all", "r2") == (0.08, 0.0)
    assert _cell(regression, "Majority Class / Chance", "new_participant", "r2") == (-0.05, 0.0)


def test_bad_files_named(tmp_path):
    text = (EXCERPT / "CopCo_TYP_test.csv").read_text().splitlines()
    bad = tmp_path / "bad.csv"
    bad.write_text("\n".join([text[0], text[1], text[2].replace("56.2 ± 2.0", "56.2 +- 2.0"), text[3]]) + "\n")
    with pytest.raises(DataError, match=r"bad.csv, row 3, column Unseen Text_AUROC: got '56.2 \+- 2.0'"):
        read_eyebench_table(bad)
    bad.write_text("\n".join([text[0].replace("Average_AUROC", "Mean_AUROC"), *text[1:]]) + "\n")
    with pytest.raises(ParseError, match=r"column 'Mean_AUROC' is not \{regime\}_\{metric\}"):
        read_eyebench_table(bad)
    bad.write_text("\n".join([text[0], text[1].replace("49.6 ± 0.4", "49,6"), *text[2:]]) + "\n")
    with pytest.raises(ParseError, match=r"bad.csv: cannot read it as CSV"):
        read_eyebench_table(bad)
    with pytest.raises(ParseError, match="not found"):
        read_eyebench_table(tmp_path / "CopCo_TYP_val.csv")


def _regression_evaluation() -> pl.DataFrame:
    """readgaze rows for chance (2 folds) and knn (readgaze-only), through evaluate_regression."""
    labels = [1.0, 3.0, 5.0, 7.0, 2.0, 6.0]
    rows = []
    for model, predicted in (("chance_mean", [4.0] * 6), ("knn_regressor", [2.0, 3.0, 4.0, 6.0, 2.0, 5.0])):
        for i, (y, p) in enumerate(zip(labels, predicted)):
            rows.append({"model": model, "trial_id": f"t{i}", "fold_index": i % 2, "label": y, "prediction_value": p,
                         "regime": ("new_item", "new_participant", "new_item_participant")[i // 2]})
    return evaluate_regression(pl.DataFrame(rows))


def test_comparison_and_table_on_excerpt():
    published = read_eyebench_table(EXCERPT / "CopCo_RCS_test.csv")
    ours = _regression_evaluation()
    comparison = compare_with_eyebench(ours, published)
    chance = comparison.filter((pl.col("eyebench_model") == "Majority Class / Chance") & (pl.col("regime") == "all")
                               & (pl.col("metric") == "rmse")).row(0, named=True)
    expected = ours.filter((pl.col("model") == "chance_mean") & (pl.col("regime") == "all")).row(0, named=True)
    assert chance["model"] == "chance_mean" and chance["published_mean"] == 2.66
    assert chance["ours_mean"] == pytest.approx(expected["rmse_mean"])
    assert chance["difference"] == pytest.approx(expected["rmse_mean"] - 2.66)
    assert chance["within_band"] == (abs(expected["rmse_mean"] - 2.66) <= 0.1 + 0.005 + (expected["rmse_sem"] or 0))
    forest = comparison.filter(pl.col("eyebench_model") == "Random Forest")
    assert forest["model"].unique().to_list() == ["random_forest_regressor"] and forest["ours_mean"].null_count() == 12
    knn = comparison.filter(pl.col("model") == "knn_regressor")
    assert knn["eyebench_model"].null_count() == knn.height == 12  # 4 regimes x 3 metrics, readgaze only
    table = eyebench_table(comparison, title="CopCo_RCS (test)")
    lines = table.splitlines()
    assert lines[0] == "### CopCo_RCS (test)"
    assert lines[2].startswith("| Model | Source | Unseen Reader RMSE | Unseen Text RMSE | Unseen Text & Reader RMSE |"
                               " Average RMSE | Unseen Reader MAE |")
    assert lines[4].startswith("| Majority Class / Chance | EyeBench | 2.66 ± 0.1 | 2.67 ± 0.0 | 2.56 ± 0.0 | "
                               "2.66 ± 0.1 |")
    assert lines[5].startswith("| Majority Class / Chance | readgaze `chance_mean` | ")
    assert lines[6].startswith("| Majority Class / Chance | Δ | ")
    assert f"{chance['difference']:+.2f}" in lines[6].split(" | ")[5]
    assert "| Random Forest | readgaze `random_forest_regressor` | not run | not run |" in table
    assert not any(line.startswith("| Random Forest | Δ") for line in lines)
    assert any(line.startswith("| knn_regressor | readgaze `knn_regressor` | ") for line in lines)


@pytest.mark.shared_data
def test_published_headline_numbers(shared_data):
    """The headline cells of issue 37 and the data README, from the 4 real files."""
    folder = shared_data / "copco" / "eyebench" / "results"
    typ = read_eyebench_table(folder / "CopCo_TYP_test.csv")
    rcs = read_eyebench_table(folder / "CopCo_RCS_test.csv")
    assert typ.height == 15 * 8 and rcs.height == 15 * 12
    auroc = {m: _cell(typ, m, "all", "auroc")[0] for m in typ["model"].unique()}
    assert {m: auroc[m] for m in ("Majority Class / Chance", "Reading Speed", "Logistic Regression", "Random Forest",
                                  "AhnCNN", "BEyeLSTM", "RoBERTEye-W", "PostFusion-Eye")} == {
        "Majority Class / Chance": 49.9, "Reading Speed": 56.6, "Logistic Regression": 80.6, "Random Forest": 82.9,
        "AhnCNN": 83.4, "BEyeLSTM": 80.2, "RoBERTEye-W": 75.6, "PostFusion-Eye": 73.2}
    assert max(auroc, key=auroc.get) == "AhnCNN"
    rmse = {m: _cell(rcs, m, "all", "rmse")[0] for m in rcs["model"].unique()}
    assert rmse["Majority Class / Chance"] == 2.66 and rmse["Random Forest"] == 2.51 == min(rmse.values())
    neural = ("AhnRNN", "AhnCNN", "BEyeLSTM", "PLM-AS", "PLM-AS-RM", "RoBERTEye-W", "RoBERTEye-F", "MAG-Eye",
              "PostFusion-Eye")
    assert (min(rmse[m] for m in neural), max(rmse[m] for m in neural)) == (2.63, 2.79)
    # 'Average' pools the regimes' trials: RF's Average AUROC is not the mean of its three regime cells
    regimes = [_cell(typ, "Random Forest", r, "auroc")[0] for r in ("new_participant", "new_item",
                                                                     "new_item_participant")]
    assert sum(regimes) / 3 == pytest.approx(79.17, abs=0.01)
    for split in ("val", "test"):
        for task, n in (("TYP", 8), ("RCS", 12)):
            assert read_eyebench_table(folder / f"CopCo_{task}_{split}.csv").height == 15 * n
    # every EyeBench row has a readgaze name for both kinds of task
    comparison = compare_with_eyebench(evaluate_regression(pl.DataFrame(
        {"trial_id": ["a", "b"], "label": [1.0, 2.0], "prediction_value": [1.5, 1.5], "regime": ["new_item"] * 2,
         "fold_index": [0, 0], "model": ["ridge"] * 2})), rcs)
    assert comparison.filter(pl.col("eyebench_model").is_not_null())["model"].null_count() == 0
    assert comparison.filter((pl.col("eyebench_model") == "Logistic Regression")
                             & (pl.col("regime") == "new_item") & (pl.col("metric") == "rmse"))["ours_mean"][0] == 0.5
