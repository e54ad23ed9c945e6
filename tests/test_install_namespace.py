"""One installed package: readgaze. A user's own ``models/``, ``kernels/`` and ``data_prep/`` folders beside their
script neither shadow readgaze's parts nor are shadowed by them (the YOLOv5 trap of generic top-level packages).

The wheel's contents are checked in ``test_training_lab_export.py::test_a_built_wheel_ships_the_configs``.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import pytest

from readgaze.models.training.configs import upgrade_class_paths

ROOT = Path(__file__).resolve().parents[1]


def _has_distribution(name: str) -> bool:
    try:
        importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return False
    return True

SCRIPT = textwrap.dedent('''
    import sys
    import models, data_prep                         # the user's own folders win for their own names
    assert models.MINE and data_prep.MINE
    from readgaze.cli import main
    from readgaze.simulate.lab_export import write_lab_export
    assert main(["models", "--check"]) == 0
    export = write_lab_export("export", n_participants=9, n_items=3)
    assert main(["prep", "dataviewer", "--fixation-report", str(export["fixations"]), "--ia-report",
                 str(export["ia"]), "--trials", str(export["labels"]), "--columns", "ia.text_id=passage",
                 "trials.item_id=passage_id", "--trials-on", "participant_id=subject", "trial=trial_no",
                 "--quiet", "--out", "ds"]) == 0
    assert main(["fit", "-c", "reading_goal/beyelstm", "--data.path", "ds", "--data.n_folds", "3",
                 "--trainer.max_epochs", "1", "--trainer.enable_progress_bar", "false"]) == 0
    import readgaze.models.beyelstm
    import os
    assert not readgaze.models.beyelstm.__file__.startswith(os.getcwd())
    assert models.MINE                                 # still the user's
    print("ok")
''')


def test_nothing_generic_is_importable_after_install():
    """The editable (or wheel) install maps models, kernels and data_prep under readgaze only."""
    outside = subprocess.run([sys.executable, "-c", "import importlib.util as u; "
                              "print([getattr(u.find_spec(n), 'origin', None) for n in "
                              "('models', 'kernels', 'data_prep')])"],
                             cwd=Path(__file__).anchor, capture_output=True, text=True, check=True)
    models, kernels, data_prep = eval(outside.stdout)
    assert models is None and data_prep is None
    # ``kernels`` is also a PyPI distribution (transformers >= 5.25 requires it): there, it is that one, not ours
    assert kernels is None or Path(kernels).resolve() != ROOT / "kernels" / "__init__.py", kernels
    assert importlib.util.find_spec("readgaze.models.dist") is not None


def test_in_the_checkout_the_name_kernels_is_handed_to_an_installed_distribution_of_that_name(tmp_path):
    """A process started in the checkout has its root first on sys.path, where ``kernels/`` would hide the PyPI
    ``kernels`` that transformers >= 5.25 imports (``from kernels import CUDAProperties`` then failed in every model
    test). Our folder hands the name over; ``readgaze.kernels`` stays ours."""
    site = tmp_path / "site"
    (site / "kernels").mkdir(parents=True)
    (site / "kernels" / "__init__.py").write_text("CUDAProperties = 'installed'\n")
    probe = ("import kernels, readgaze.kernels as ours; "
             "print(kernels.CUDAProperties, ours.cross_attention.__module__)")
    env = {**os.environ, "PYTHONPATH": str(site)}   # after the checkout's root ('' from -c)
    done = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["installed", "readgaze.kernels.cross_attention"]
    # and the transformers that CI installs imports its activations (the import that broke) from the checkout
    done = subprocess.run([sys.executable, "-c", "import transformers.activations"], cwd=ROOT, capture_output=True,
                          text=True, env={**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"})
    assert done.returncode == 0, done.stderr[-2000:]


@pytest.mark.slow
def test_a_script_beside_its_own_models_kernels_and_data_prep_folders_runs_prep_and_fit(tmp_path):
    trap = "raise ImportError('readgaze imported the user\\'s own {}')\n"
    folders = {"models": ("data", "dist", "training", "base"), "kernels": ("cross_attention",),
               "data_prep": ("cli", "pipeline")}
    if _has_distribution("kernels"):
        # transformers >= 5.25 imports the PyPI ``kernels`` itself: a user's own kernels/ beside the script breaks
        # transformers, with or without readgaze, so this check keeps to the other two names there
        del folders["kernels"]
    for name, subs in folders.items():
        (tmp_path / name).mkdir()
        (tmp_path / name / "__init__.py").write_text("MINE = True\n")
        for sub in subs:
            (tmp_path / name / f"{sub}.py").write_text(trap.format(f"{name}.{sub}"))
    (tmp_path / "train.py").write_text(SCRIPT)
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "MPLBACKEND": "Agg"}
    done = subprocess.run([sys.executable, "train.py"], cwd=tmp_path, capture_output=True, text=True, env=env,
                          timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip().endswith("ok")
    assert any((tmp_path / "runs" / "reading_goal" / "beyelstm").rglob("predictions_test.parquet"))


def test_a_config_with_readgaze_0_1_class_paths_is_read_with_a_warning_saying_how_to_convert(tmp_path):
    old = tmp_path / "mine.yaml"
    old.write_text("model:\n  class_path: models.roberteye_f.RoBERTEyeF\n  init_args: {learning_rate: 0.001}\n"
                   "data:\n  class_path: models.data.ReadingDataModule\n  init_args: {path: models.csv}\n")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        new = upgrade_class_paths(old)
    text = new.read_text()
    assert "class_path: readgaze.models.roberteye_f.RoBERTEyeF" in text
    assert "class_path: readgaze.models.data.ReadingDataModule" in text
    assert "path: models.csv" in text                  # only class paths change
    assert old.read_text().count("readgaze") == 0      # the user's file is left as it is
    message = str(caught[0].message)
    assert str(old) in message and "sed -i" in message and "readgaze.models.roberteye_f.RoBERTEyeF" in message
    current = tmp_path / "new.yaml"
    current.write_text(text)
    assert upgrade_class_paths(current) == current     # a current config is used as it is
