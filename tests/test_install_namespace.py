"""One installed package: readgaze. A user's own ``models/``, ``kernels/`` and ``data_prep/`` folders beside their
script neither shadow readgaze's parts nor are shadowed by them (the YOLOv5 trap of generic top-level packages).

The wheel's contents are checked in ``test_training_lab_export.py::test_a_built_wheel_ships_the_configs``.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import pytest

from readgaze.models.training.configs import upgrade_class_paths

SCRIPT = textwrap.dedent('''
    import sys
    import models, kernels, data_prep                 # the user's own folders win for their own names
    assert models.MINE and kernels.MINE and data_prep.MINE
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
                              "print([u.find_spec(n) is None for n in ('models', 'kernels', 'data_prep')])"],
                             cwd=Path(__file__).anchor, capture_output=True, text=True, check=True)
    assert outside.stdout.strip() == "[True, True, True]"
    assert importlib.util.find_spec("readgaze.models.dist") is not None


@pytest.mark.slow
def test_a_script_beside_its_own_models_kernels_and_data_prep_folders_runs_prep_and_fit(tmp_path):
    trap = "raise ImportError('readgaze imported the user\\'s own {}')\n"
    for name, subs in {"models": ("data", "dist", "training", "base"), "kernels": ("cross_attention",),
                       "data_prep": ("cli", "pipeline")}.items():
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
