"""From a lab's export to a trained, tested model outside the checkout: packaged configs, honest training output.

Issue 17's "done when" (an empty directory, a non-OneStop Data Viewer export + a labels CSV -> prep -> fit -> test
predictions and a summary; the same through cv with one progress line per fold) and frictions 4, 5, 7, 8, 10.
"""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import polars as pl
import pytest
import yaml

import readgaze
from readgaze.cli import main
from readgaze.models.training.configs import find_config, list_configs
from readgaze.models.training.summary import constant_predictions, constant_warning, constant_warnings
from readgaze.simulate.lab_export import write_lab_export

REPO = Path(__file__).resolve().parents[1]
PREP = ["--columns", "ia.text_id=passage", "trials.item_id=passage_id", "--trials-on", "participant_id=subject",
        "trial=trial_no", "--quiet"]


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    """An empty folder outside the checkout holding the lab's export and its prepared dataset ``ds``."""
    home = tmp_path_factory.mktemp("lab")
    export = write_lab_export(home / "export", n_participants=9, n_items=3)
    assert main(["prep", "dataviewer", "--fixation-report", str(export["fixations"]), "--ia-report",
                 str(export["ia"]), "--trials", str(export["labels"]), *PREP, "--out", str(home / "ds")]) == 0
    return home


@pytest.mark.slow
def test_fit_from_an_empty_directory_writes_test_predictions_and_a_summary(lab, monkeypatch, capsys, caplog,
                                                                           recwarn, one_torch_thread):
    monkeypatch.chdir(lab)
    assert not str(lab).startswith(str(REPO))
    assert main(["fit", "-c", "reading_goal/roberteye_f", "--data.path", "ds", "--data.text_encoder", "tiny",
                 "--data.n_folds", "3", "--trainer.max_epochs", "1", "--trainer.enable_progress_bar", "false"]) == 0
    err = capsys.readouterr().err
    shown = err + "\n".join(r.getMessage() for r in caplog.records) + "\n".join(str(w.message) for w in recwarn)
    assert "💡 Tip" not in shown and "LeafSpec" not in shown  # Lightning's advert and its torch deprecation
    run = lab / "runs" / "reading_goal" / "roberteye_f" / "csv" / "version_0"
    test = pl.read_parquet(run / "predictions_test.parquet")
    trials = pl.read_parquet(lab / "ds" / "trials.parquet")
    assert 0 < test.height < trials.height and set(test["split"]) == {"test"}
    assert test["trial_id"].is_in(trials["trial_id"].implode()).all()
    assert "readgaze fit: done in" in err and "wrote runs/reading_goal/roberteye_f/csv/version_0" in err
    assert "val n  val bal.acc  val AUROC  test n  test bal.acc  test AUROC" in err
    val = pl.read_parquet(run / "predictions_val.parquet")
    table = [line.replace("1 cls", "1cls").split() for line in err.splitlines()]
    all_row = next(row for row in table if row[:1] == ["all"])
    assert (all_row[1], all_row[4]) == (f"{val.height:,}", f"{test.height:,}")  # the trials behind each score
    for regime, n in test.group_by("regime").len().iter_rows():
        row = next((row for row in table if row[:1] == [regime] and len(row) == 7), None)
        assert row is None or row[4] == f"{n:,}", (regime, row)
    assert "learning rate 0.003 instead of the config's 1e-05" in err  # the tiny encoder's rate, said aloud
    saved = yaml.safe_load((run / "config.yaml").read_text())
    assert saved["model"]["init_args"]["learning_rate"] == 0.003
    assert (saved["data"]["batch_size"], saved["trainer"]["accumulate_grad_batches"]) == (16, 1)  # was 2 x 8
    assert "batch size 16 without accumulation instead of 2 x 8" in err
    assert (run / "checkpoints" / "best.ckpt").is_file()


@pytest.mark.slow
def test_cv_prints_one_line_per_fold_and_keeps_lightning_in_a_log(lab, monkeypatch, capfd, one_torch_thread):
    monkeypatch.chdir(lab)
    assert main(["cv", "-c", "reading_goal/roberteye_f", "--data.path", "ds", "--data.text_encoder", "tiny",
                 "--data.n_folds", "3", "--folds", "0", "1", "--trainer.max_epochs", "1", "--no-baselines",
                 "--format", "both"]) == 0
    out, err = capfd.readouterr()
    lines = [line for line in err.splitlines() if line.startswith("fold ")]
    assert len(lines) == 2, err
    assert lines[0].startswith("fold 0 (1/2) done in ") and "val AUROC " in lines[0] and "left" in lines[0]
    assert lines[1].startswith("fold 1 (2/2) done in ") and "left" not in lines[1]
    for banner in ("GPU available", "Tip:", "LeafSpec", "Trainable params"):
        assert banner not in err and banner not in out
    run = lab / "results" / "reading_goal_roberteye_f"
    log = (run / "fold_0" / "train.log").read_text()
    assert "GPU available" in log
    assert (run / "results.md").is_file() and pl.read_parquet(run / "predictions.parquet").height > 0
    assert pl.read_csv(run / "predictions.csv").height == pl.read_parquet(run / "predictions.parquet").height


def test_packaged_configs_are_found_by_name_from_anywhere(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    names = list_configs()
    assert {"reading_goal/roberteye_f", "reading_goal/postfusion_eye", "comprehension/roberteye_f"} <= set(names)
    assert find_config("reading_goal/roberteye_f") == find_config("reading_goal/roberteye_f.yaml")
    assert find_config("experiments/configs/reading_goal/roberteye_f.yaml").name == "roberteye_f.yaml"
    assert find_config("reading_goal/roberteye_f") == find_config("roberteye_f")  # the model's default task
    assert main(["configs"]) == 0
    assert "reading_goal/roberteye_f" in capsys.readouterr().out
    assert main(["fit", "-c", "reading_goal/robertye_f", "--data.path", "x"]) == 2
    assert "did you mean reading_goal/roberteye_f" in capsys.readouterr().err


@pytest.mark.slow
def test_a_built_wheel_ships_the_configs(tmp_path):
    """A non-editable install: the wheel installs one top-level package, readgaze (its parts models, kernels and
    data_prep under it), carries the configs, weights and demo configs, and finds the configs by name."""
    files = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard"], cwd=REPO, check=True,
                           capture_output=True, text=True).stdout.split()
    src = tmp_path / "src"
    for name in files:
        if (REPO / name).is_file():
            (src / name).parent.mkdir(parents=True, exist_ok=True)
            (src / name).write_bytes((REPO / name).read_bytes())
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w",
                    str(tmp_path / "dist"), str(src)], check=True, capture_output=True)
    wheel = next((tmp_path / "dist").glob("readgaze-*.whl"))
    names = zipfile.ZipFile(wheel).namelist()
    assert {name.split("/")[0] for name in names} == {"readgaze", f"readgaze-{readgaze.__version__}.dist-info"}
    for shipped in ("readgaze/configs/roberteye_f.yaml", "readgaze/configs/goal_reconstruction/daleye.yaml",
                    "readgaze/models/training/configs.py",
                    "readgaze/models/dist/weights/dist_small.pt", "readgaze/models/demo/configs/roberteye_f.yaml",
                    "readgaze/kernels/cross_attention.py", "readgaze/data_prep/cli.py",
                    "readgaze/review/static/index.html", "readgaze/review/static/trial.js",
                    "readgaze/review/static/style.css"):  # the review page (package data, no build step)
        assert shipped in names, shipped
    entry_points = zipfile.ZipFile(wheel).read(f"readgaze-{readgaze.__version__}.dist-info/entry_points.txt").decode()
    assert "dist = readgaze.models.dist:ASSIGNER" in entry_points
    site = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "-q", "--target", str(site), str(wheel)],
                   check=True, capture_output=True)
    probe = "from readgaze.models.training.configs import find_config; print(find_config('reading_goal/roberteye_f'))"
    found = subprocess.run([sys.executable, "-c", probe], cwd=tmp_path, env={"PYTHONPATH": str(site)},
                           capture_output=True, text=True, check=True).stdout.strip()
    assert found == str(site / "readgaze" / "configs" / "roberteye_f.yaml")


def test_config_typos_are_one_line_with_the_closest_keys(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(["fit", "-c", "reading_goal/roberteye_f", "--data.paht", "x"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == ("readgaze fit: error: unknown option --data.paht; did you mean --data.path, --data.ablate, "
                   "--data.task? (full usage: readgaze fit --help)")
    typo = tmp_path / "typo.yaml"
    typo.write_text("model:\n  init_args:\n    learnin_rate: 0.1\n")
    assert main(["fit", "-c", "reading_goal/roberteye_f", "-c", str(typo), "--data.path", "x"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert "RoBERTEyeF has no argument 'learnin_rate'; did you mean learning_rate?" in err
    typo.write_text("trainr:\n  max_epochs: 1\n")
    assert main(["fit", "-c", "reading_goal/roberteye_f", "-c", str(typo), "--data.path", "x"]) == 2
    assert "unknown option --trainr.max_epochs; did you mean --trainer.max_epochs" in capsys.readouterr().err


def test_constant_predictions_are_named():
    flat = pl.DataFrame({"prediction_prob": [0.480, 0.485, 0.490]})
    assert constant_predictions(flat) == "every probability lies in 0.480-0.490"
    one_side = pl.DataFrame({"prediction_prob": [0.55, 0.70, 0.90]})
    assert constant_predictions(one_side) == "every trial is predicted class 1"
    fine = pl.DataFrame({"prediction_prob": [0.2, 0.7, 0.9]})
    assert constant_predictions(fine) is None and constant_warning(fine, "test predictions") is None
    warning = constant_warning(flat, "test predictions")
    assert warning.startswith("warning: the test predictions are constant (every probability lies in 0.480-0.490 "
                              "of 3)") and "--model.init_args.learning_rate" in warning
    multi = pl.DataFrame({"prediction_prob": [[0.34, 0.33, 0.33], [0.33, 0.34, 0.33]]})
    assert constant_predictions(multi) is not None


def test_outputs_stay_out_of_the_checkout():
    """Friction 10: the demo and runs write to the current directory; the repo ignores what they write."""
    ignored = (REPO / ".gitignore").read_text().splitlines()
    assert {"/runs/", "/results/", "readgaze_demo/"} <= set(ignored)
    import inspect

    from readgaze.models.demo import main as demo_main  # noqa: F401  (the demo's --out default is relative: ./readgaze_demo)

    assert 'default="readgaze_demo"' in inspect.getsource(demo_main)


def test_tiny_recipe_replaces_a_pretrained_encoders_settings_only():
    """Friction 4: the tiny encoder brings its learning rate and an unaccumulated batch; explicit values win."""
    from readgaze.models.training.cli import TINY_LEARNING_RATE, tiny_recipe

    def config(rate=1e-5, batch=2, accumulate=8, warmup=0.1):
        return {"model": {"init_args": {"learning_rate": rate, "warmup_ratio": warmup}}, "data": {"batch_size": batch},
                "trainer": {"accumulate_grad_batches": accumulate}}

    paper = config()
    notes = tiny_recipe(paper, set())
    assert paper["model"]["init_args"] == {"learning_rate": TINY_LEARNING_RATE, "warmup_ratio": 0.0}
    assert TINY_LEARNING_RATE == 3e-3
    assert (paper["data"]["batch_size"], paper["trainer"]["accumulate_grad_batches"]) == (16, 1)
    assert len(notes) == 3 and notes[1].startswith("warm-up ratio 0 instead of the config's 0.1")
    mine = config()
    assert tiny_recipe(mine, {"learning_rate", "batch_size"}) == [] and mine == config()
    warm = config()
    tiny_recipe(warm, {"warmup_ratio"})
    assert warm["model"]["init_args"] == {"learning_rate": 3e-3, "warmup_ratio": 0.1}
    demo = config(rate=3e-3, batch=16, accumulate=1)
    assert tiny_recipe(demo, set()) == [] and demo == config(rate=3e-3, batch=16, accumulate=1)


def test_cv_names_constant_models_but_not_the_majority_baseline():
    flat = pl.DataFrame({"model": ["RoBERTEyeF"] * 3 + ["majority"] * 3 + ["BEyeLSTM"] * 3,
                         "split": ["test"] * 9,
                         "prediction_prob": [0.48, 0.485, 0.49, 0.6, 0.6, 0.6, 0.1, 0.5, 0.9]})
    warnings = constant_warnings(flat)
    assert len(warnings) == 1 and warnings[0].startswith("warning: the RoBERTEyeF test predictions are constant")
