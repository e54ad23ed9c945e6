"""From a trained model to next month's recordings: fit writes a bundle; predict scores new, unlabelled readers.

Issue 31's "done when": train on the README's lab example (here 9 readers x 3 texts x 2 paragraphs, one epoch),
make a bundle, predict a separately prepared set of new participants without labels (every trial scored, all
marked as new participants); a bundle against data with a missing feature fails naming it.

The module fixture (two preps and a one-epoch fit) takes about 10 s on the shared 2-core machine when torch and
Lightning are already imported (as in the suite, whose collection imports them); run alone, 42 s with those imports
(26 s of CPU for the whole module, load 7).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import polars as pl
import pytest

import readgaze
from readgaze.cli import main
from readgaze.errors import ConfigError
from readgaze.schema import PREDICTION_COLUMNS
from readgaze.simulate.lab_export import write_lab_export

PREP = ["--columns", "ia.text_id=passage", "trials.item_id=passage_id", "--trials-on", "participant_id=subject",
        "trial=trial_no", "--quiet"]
STUDY = dict(n_items=3, paragraphs_per_item=2)


def _prep(export: dict, out) -> None:
    assert main(["prep", "dataviewer", "--fixation-report", str(export["fixations"]), "--ia-report",
                 str(export["ia"]), "--trials", str(export["labels"]), *PREP, "--out", str(out)]) == 0


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """The lab's dataset, a one-epoch RoBERTEye-F fit on it (tiny encoder), and next month's 3 unlabelled readers
    of the same texts, prepared separately."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    home = tmp_path_factory.mktemp("lab")
    _prep(write_lab_export(home / "export", n_participants=9, **STUDY), home / "ds")
    _prep(write_lab_export(home / "new", n_participants=12, participants=range(9, 12), labels=False, **STUDY),
          home / "ds_new")
    run = home / "run"
    assert main(["fit", "-c", "reading_goal/roberteye_f", "--data.path", str(home / "ds"), "--data.text_encoder",
                 "tiny", "--data.n_folds", "3", "--trainer.max_epochs", "1", "--trainer.enable_progress_bar",
                 "false", "--trainer.default_root_dir", str(run)]) == 0
    torch.set_num_threads(threads)
    return home, next(run.rglob("bundle.json")).parent


def test_fit_writes_a_bundle_with_scalers_threshold_and_training_readers(trained):
    home, bundle = trained
    spec = json.loads((bundle / "bundle.json").read_text())
    assert (bundle / "model.ckpt").is_file() and (bundle / "model_card.md").is_file()
    assert spec["readgaze"] == readgaze.__version__ and spec["task"] == "reading_goal"
    assert spec["classes"] == ["ordinary", "information_seeking"]
    assert 0 < spec["threshold"] < 1 and spec["threshold_chosen_on"].startswith("validation")
    assert set(spec["scalers"]) == {"word", "fixation", "trial"}
    assert len(spec["scalers"]["trial"]["center"]) == len(spec["features"]["trial"])
    trials = pl.read_parquet(home / "ds" / "trials.parquet")
    assert set(spec["training"]["participants"]) < set(trials["participant_id"])  # the training split's only
    assert "total_fixation_duration_ms" in spec["features"]["columns"]["word_measures"]
    assert spec["scores"]["val"][0]["regime"] == "all" and spec["scores"]["test"]
    run = bundle.parent
    val = pl.read_parquet(run / "predictions_val.parquet")
    assert spec["scores"]["val"][0]["n_trials"] == val.height == spec["training"]["trials"]["val"]
    # the best checkpoint's validation predictions are the run folder's (they went to default_root_dir)
    assert not list((home / "run").glob("predictions_*.parquet"))


def test_new_unlabelled_readers_are_all_scored_and_marked_new(trained, capsys):
    home, bundle = trained
    out = home / "new_predictions.parquet"
    assert main(["predict", str(bundle), str(home / "ds_new"), "--out", str(out)]) == 0
    err = capsys.readouterr().err
    predictions = pl.read_parquet(out)
    new = pl.read_parquet(home / "ds_new" / "trials.parquet")
    assert sorted(predictions["trial_id"]) == sorted(new["trial_id"]) and predictions.height == 3 * 6
    assert predictions["prediction_prob"].is_between(0, 1).all()
    assert not predictions["participant_seen"].any()
    assert set(predictions["regime"]) <= {"new_participant", "new_item_participant"}
    assert predictions["label"].null_count() == predictions.height
    assert set(PREDICTION_COLUMNS) <= set(predictions.columns) and set(predictions["split"]) == {"predict"}
    spec = json.loads((bundle / "bundle.json").read_text())
    expected = (predictions["prediction_prob"] > spec["threshold"]).cast(pl.Int64)
    assert (predictions["predicted_class"] == expected).all()
    assert f"scored {predictions.height} trials" in err and str(out) in err and "no labels" in err
    spread = predictions["prediction_prob"].max() - predictions["prediction_prob"].min()
    assert ("barely separates" in err) == (spread < 0.01), (spread, err)  # an about-constant model is named


def test_labelled_data_gets_scores_per_regime_and_the_python_api_agrees(trained, capsys):
    """The training data itself, scored: seen and new regimes, each score beside its n; same numbers from Python."""
    home, bundle = trained
    out = home / "old.csv"
    assert main(["predict", str(bundle.parent), str(home / "ds"), "--out", str(out)]) == 0  # a run folder works
    err = capsys.readouterr().err
    scores = pl.read_csv(home / "old_scores.csv")
    assert {"all", "seen"} <= set(scores["regime"]) and "AUROC" in err
    assert scores.filter(pl.col("regime") == "all")["n_trials"][0] == 54
    assert (scores["small_sample"] == (scores["n_trials"] < 30)).all() and "†" in err
    frame = readgaze.load_model(bundle).predict(home / "ds")
    written = pl.read_csv(out)
    assert frame.height == written.height == 54
    joined = frame.join(written, on="trial_id", suffix="_csv")
    assert (joined["prediction_prob"] - joined["prediction_prob_csv"]).abs().max() < 1e-6


def test_a_missing_feature_and_another_version_are_named(trained, tmp_path):
    home, bundle = trained
    broken = tmp_path / "ds_new"
    shutil.copytree(home / "ds_new", broken)
    measures = pl.read_parquet(broken / "word_measures.parquet")
    measures.drop("regression_path_duration_ms").write_parquet(broken / "word_measures.parquet")
    model = readgaze.load_model(bundle)
    with pytest.raises(ConfigError, match="feature regression_path_duration_ms: the training data's "
                                          "word_measures.parquet had it"):
        model.predict(broken)
    spec = json.loads((bundle / "bundle.json").read_text())
    other = tmp_path / "bundle"
    shutil.copytree(bundle, other)
    (other / "bundle.json").write_text(json.dumps({**spec, "readgaze": "0.0.1"}))
    with pytest.raises(ConfigError, match=r"made by readgaze 0\.0\.1, this is readgaze"):
        readgaze.load_model(other).check(home / "ds_new")
    assert readgaze.load_model(other).check(home / "ds_new", allow_other_version=True)[0].startswith(
        "the bundle was made by readgaze 0.0.1")
    encoder = {**spec["encoder"], "vocab_size": 50265, "vocab_sha256": "0" * 64}
    (other / "bundle.json").write_text(json.dumps({**spec, "encoder": encoder}))
    with pytest.raises(ConfigError, match="text encoder 'tiny': its tokenizer here differs from training's in "
                                          "vocab_size, vocab_sha256"):
        readgaze.load_model(other).check(home / "ds_new")


def test_predict_help_is_immediate_and_imports_no_torch():
    """It took 64 s (LightningCLI's predict) and its description was cut mid-sentence."""
    code = ("import sys\nfrom readgaze.cli import main\ntry:\n    main(['predict', '--help'])\nexcept SystemExit:\n"
            "    pass\nassert 'torch' not in sys.modules and 'lightning' not in sys.modules, 'torch imported'\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert "with or without labels." in result.stdout and "readgaze predict" in result.stdout
