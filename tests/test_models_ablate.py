"""Modality ablations (``--data.ablate``): the text ablation moves words and keeps the gaze, the gaze ablation moves
gaze between readings of the same text and keeps the text; the paired comparison of two models' predictions."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl
import pytest
from synthetic import write_synthetic_dataset

from readgaze.errors import ConfigError
from readgaze.features import FIXATION_FEATURES, WORD_FEATURES
from readgaze.metrics import paired_comparison
from readgaze.models.data import ReadingDataModule
from readgaze.models.data.ablate import TEXT_IDENTITY, gaze_donors

N_OWN = len(FIXATION_FEATURES) - len(WORD_FEATURES)
MOVING = (*TEXT_IDENTITY, *(f"{c}_missing" for c in TEXT_IDENTITY))  # a word's lexical values and missing flags
IDENTITY = [WORD_FEATURES.index(c) for c in MOVING if c in WORD_FEATURES]
GAZE_WORD = [i for i, c in enumerate(WORD_FEATURES) if c not in MOVING]


@pytest.fixture(scope="module")
def modules(tmp_path_factory) -> dict[str | None, ReadingDataModule]:
    path = write_synthetic_dataset(tmp_path_factory.mktemp("ablate"), n_participants=8, n_items=6, n_words=20)
    out = {}
    for kind in (None, "text", "gaze"):
        datamodule = ReadingDataModule(str(path), task="comprehension", n_folds=3, text_encoder="tiny", ablate=kind)
        datamodule.setup("fit")
        out[kind] = datamodule
    return out


def _items(datamodule: ReadingDataModule, split: str = "train") -> list[dict]:
    dataset = datamodule._datasets[split]
    return [dataset[i] for i in range(len(dataset))]


def test_text_ablation_permutes_each_trials_words_and_keeps_its_gaze(modules):
    full, text = _items(modules[None]), _items(modules["text"])
    moved = 0
    for a, b in zip(full, text):
        assert a["trial_id"] == b["trial_id"] and a["label"] == b["label"]
        assert sorted(a["input_ids"]) == sorted(b["input_ids"])  # the same words ...
        moved += not np.array_equal(a["input_ids"], b["input_ids"])  # ... in another order
        np.testing.assert_array_equal(a["fixation"][:, :N_OWN], b["fixation"][:, :N_OWN])  # fixations stay
        np.testing.assert_array_equal(a["fixation_word_index"], b["fixation_word_index"])  # at the same positions
        np.testing.assert_array_equal(a["word"][:, GAZE_WORD], b["word"][:, GAZE_WORD])  # reading measures, layout
        # lexical features move with the words: same multiset per trial, and a fixation carries its slot's word
        np.testing.assert_array_equal(np.sort(a["word"][:, IDENTITY], axis=0), np.sort(b["word"][:, IDENTITY], axis=0))
        on = b["fixation_word_index"] >= 0
        np.testing.assert_array_equal(b["fixation"][on][:, [N_OWN + i for i in IDENTITY]],
                                      b["word"][b["fixation_word_index"][on]][:, IDENTITY])
        np.testing.assert_array_equal(a["trial"], b["trial"])
    assert moved == len(full)
    record = [r for r in modules["text"].qc_records() if r["step"] == "ablate"]
    assert record and record[0]["count"] == modules["text"].trials.height


def test_gaze_ablation_gives_each_trial_another_readers_gaze_on_the_same_text(modules):
    full_dm, gaze_dm = modules[None], modules["gaze"]
    by_id = {it["trial_id"]: it for split in ("train", "val", "test") for it in _items(full_dm, split)}
    trials = full_dm.trials.select("trial_id", "text_id", "split", "participant_id",
                                   pl.len().over("split", "text_id").alias("group"))
    info = {r["trial_id"]: r for r in trials.iter_rows(named=True)}
    across = 0
    for split in ("train", "val", "test"):
        for b in _items(gaze_dm, split):
            a = by_id[b["trial_id"]]
            np.testing.assert_array_equal(a["input_ids"], b["input_ids"])  # the trial's own text and label
            assert a["label"] == b["label"]
            donors = [t for t, it in by_id.items() if it["fixation"].shape == b["fixation"].shape
                      and np.array_equal(it["fixation"], b["fixation"])]
            assert donors and b["trial_id"] not in donors  # someone else's fixations ...
            donor = info[donors[0]]
            mine = info[b["trial_id"]]
            assert donor["text_id"] == mine["text_id"]  # ... on the same text, in the same split unless alone there
            assert donor["split"] == mine["split"] or mine["group"] == 1
            across += donor["split"] != mine["split"]
            assert donor["participant_id"] != mine["participant_id"]
    counted = {r["reason"].split(": ")[1]: r["count"] for r in gaze_dm.qc_records() if r["step"] == "ablate"}
    assert counted["alone in its split with its text, gaze from another split's trial of the text"] == across
    assert sum(counted.values()) == gaze_dm.trials.height


def test_gaze_donors_are_a_derangement_within_split_and_text_with_counted_fallbacks():
    trials = pl.DataFrame({"text_id": ["a", "a", "a", "b", "b", "c", "d", "d"],
                           "split": ["train", "train", "train", "train", "val", "test", "test", "train"]})
    donor, fallback = gaze_donors(trials, np.random.default_rng(0))
    assert sorted(donor[:3]) == [0, 1, 2] and all(donor[i] != i for i in range(3))  # a cycle in (train, a)
    assert (donor[3], donor[4]) == (4, 3)  # alone in their split: the other split's reading of b
    assert donor[5] == 5  # c: nobody else read it
    assert (donor[6], donor[7]) == (7, 6)
    assert fallback == {"other split": 4, "no other trial": 1}


def test_an_unknown_ablation_is_a_config_error(tmp_path):
    with pytest.raises(ConfigError, match="data.ablate"):
        ReadingDataModule(str(tmp_path), ablate="words")


def _predictions(scores: dict[str, np.ndarray], labels: np.ndarray, folds: int = 3) -> pl.DataFrame:
    n = len(labels)
    regimes = np.array(["new_item", "new_participant", "new_item_participant"])[np.arange(n) % 3]
    return pl.concat([pl.DataFrame({"model": name, "trial_id": [f"t{i}" for i in range(n)],
                                    "fold_index": np.arange(n) % folds, "label": labels, "prediction_prob": score,
                                    "regime": regimes, "split": "test"}) for name, score in scores.items()])


def test_paired_comparison_finds_a_real_difference_and_none_between_equals():
    rng = np.random.default_rng(1)
    labels = rng.integers(0, 2, 600)
    good = 1 / (1 + np.exp(-(2 * labels - 1 + rng.normal(0, 1, 600))))
    frame = _predictions({"good": good, "noise": rng.random(600), "same": good}, labels)
    better = paired_comparison(frame, "good", "noise").filter(pl.col("regime") == "all").row(0, named=True)
    assert better["difference_mean"] > 0.25 and better["permutation_p"] < 0.01 and better["t_test_p"] < 0.05
    assert better["n_folds"] == 3 and better["n_trials"] == 600
    from scipy.stats import ttest_rel
    from sklearn.metrics import roc_auc_score

    per_fold = [[roc_auc_score(labels[f::3], s[f::3]) for f in range(3)] for s in (good, frame.filter(
        pl.col("model") == "noise")["prediction_prob"].to_numpy())]
    assert better["reference_mean"] == pytest.approx(np.mean(per_fold[0]))
    assert better["t_test_p"] == pytest.approx(ttest_rel(*per_fold).pvalue)
    equal = paired_comparison(frame, "good", "same").filter(pl.col("regime") == "all").row(0, named=True)
    assert equal["difference_mean"] == 0 and equal["permutation_p"] == 1.0 and equal["t_test_p"] == 1.0


def test_paired_comparison_swaps_whole_groups():
    """``group``: a reader's trials swapped together. One fold, one reader: every permutation swaps all or nothing,
    so |permuted| = |observed| and p = 1, while trial swaps find the difference; a reader per trial finds it too."""
    rng = np.random.default_rng(3)
    labels = rng.integers(0, 2, 300)
    good = 1 / (1 + np.exp(-(2 * labels - 1 + rng.normal(0, 1, 300))))
    frame = _predictions({"good": good, "noise": rng.random(300)}, labels, folds=1)
    one = frame.with_columns(pl.lit("r").alias("participant_id"))
    grouped = paired_comparison(one, "good", "noise", group="participant_id", n_permutations=200)
    trials = paired_comparison(one, "good", "noise", n_permutations=200)
    assert grouped["difference_mean"].to_list() == trials["difference_mean"].to_list()
    assert grouped["permutation_p"].to_list() == [1.0] * 4
    assert trials.filter(pl.col("regime") == "all")["permutation_p"][0] == pytest.approx(1 / 201)
    each = paired_comparison(frame.with_columns(pl.col("trial_id").alias("participant_id")), "good", "noise",
                             group="participant_id", n_permutations=200)
    assert each.filter(pl.col("regime") == "all")["permutation_p"][0] == pytest.approx(1 / 201)
    with pytest.raises(ConfigError, match="group column 'reader'"):
        paired_comparison(frame, "good", "noise", group="reader")


def test_paired_comparison_is_calibrated_under_the_null():
    """Two models of the same quality: the permutation p is spread over (0, 1], not piled near 0."""
    rng = np.random.default_rng(2)
    p_values = []
    for _ in range(20):
        labels = rng.integers(0, 2, 200)
        signal = 2 * labels - 1
        frame = _predictions({m: 1 / (1 + np.exp(-(signal + rng.normal(0, 2, 200)))) for m in ("a", "b")}, labels)
        p_values.append(paired_comparison(frame, "a", "b", n_permutations=200).filter(
            pl.col("regime") == "all")["permutation_p"][0])
    assert np.mean(np.array(p_values) < 0.05) <= 0.15 and np.median(p_values) > 0.2


def test_ablation_table_compares_the_model_with_each_twin_and_baseline(tmp_path):
    import json

    from readgaze.models.training.ablation import ablation_markdown, write_ablation

    rng = np.random.default_rng(3)
    labels = rng.integers(0, 2, 300)
    good = 1 / (1 + np.exp(-(2 * labels - 1 + rng.normal(0, 1, 300))))
    runs = {}
    for run, scores in (("full", {"RoBERTEyeF": good, "majority": np.full(300, 0.5)}),
                        ("text", {"RoBERTEyeF": rng.random(300)}), ("gaze", {"RoBERTEyeF": good})):
        folder = tmp_path / run
        folder.mkdir()
        _predictions(scores, labels).write_parquet(folder / "predictions.parquet")
        (folder / "run.json").write_text(json.dumps({"model": "RoBERTEyeF"}))
        runs[run] = folder
    paths = write_ablation(runs["full"], {"text": runs["text"], "gaze": runs["gaze"]})
    table = pl.read_csv(paths["csv"])
    assert set(table["comparison"]) == {"text ablated (words permuted)", "gaze ablated (another reader's gaze)",
                                        "baseline: majority"}
    text = table.filter((pl.col("comparison").str.starts_with("text")) & (pl.col("regime") == "all"))
    assert text["permutation_p"][0] < 0.01  # the text mattered here
    gaze = table.filter((pl.col("comparison").str.starts_with("gaze")) & (pl.col("regime") == "all"))
    assert gaze["difference_mean"][0] == 0  # the gaze did not
    markdown = Path(paths["markdown"]).read_text()
    assert "| **RoBERTEyeF** (full) |" in markdown and "| text ablated (words permuted) |" in markdown
    assert "paired t-test over folds" in markdown and "paired permutation test over trials" in markdown
    assert ablation_markdown(table.head(0)).startswith("No comparison")


@pytest.mark.slow
def test_cv_ablate_text_and_gaze_writes_the_twins_and_the_comparison(tmp_path, capsys):
    """``readgaze cv --ablate text gaze`` for RoBERTEye-F (the demo's config) on a small simulated dataset: two twin
    runs with their QC records, and a table with a row per twin and per baseline in every regime (about 60 s on
    2 busy cores: three one-epoch fits and the baselines)."""
    import json

    from synthetic import write_planted_corpus

    from readgaze.models.training.cv import main as cv_main

    data = write_planted_corpus(tmp_path / "data", n_participants=12, n_items=4, words_per_paragraph=(30, 45))
    config = Path(__file__).resolve().parents[1] / "models/demo/configs/roberteye_f.yaml"
    assert cv_main(["cv", "-c", str(config), "--data.path", str(data), "--out", str(tmp_path / "out"), "--run", "rf",
                    "--folds", "0", "--data.n_folds", "3", "--trainer.max_epochs", "1", "--threads", "1",
                    "--ablate", "text", "gaze"]) == 0
    out = tmp_path / "out"
    for kind in ("text", "gaze"):
        qc = json.loads((out / f"rf_ablate_{kind}" / "qc.json").read_text())["0"]
        assert any(r["step"] == "ablate" and r["count"] > 0 for r in qc)
    table = pl.read_csv(out / "rf" / "ablation.csv")
    for comparison in ("text ablated (words permuted)", "gaze ablated (another reader's gaze)"):
        rows = table.filter(pl.col("comparison") == comparison)
        assert set(rows["regime"]) == {"new_item", "new_participant", "new_item_participant", "all"}
        assert rows["t_test_p"].is_null().all()  # one fold: no t-test ...
        assert rows["permutation_p"].is_between(0, 1, closed="right").all()  # ... the permutation test runs
    baselines = table.filter(pl.col("comparison").str.starts_with("baseline: "))
    assert baselines.height == 4 * 4  # cv's 4 default baselines (no PARAGRAPH_RT here) x 4 regimes
    printed = capsys.readouterr().out
    assert "| **RoBERTEyeF** (full) |" in printed and "| gaze ablated (another reader's gaze) |" in printed
    header = lambda path: next(line for line in path.read_text().splitlines() if line.startswith("| "))  # noqa: E731
    order = lambda line: [c.strip().removesuffix(" (headline)") for c in line.split("|")  # noqa: E731
                          if c.strip().startswith(("New", "All"))]
    assert order(header(out / "rf" / "ablation.md")) == order(header(out / "rf" / "results.md"))  # same columns
