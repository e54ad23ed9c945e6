"""The CopCo bench configuration (``experiments/bench/copco.yaml``): EyeBench's ten neural CopCo models on the
reader-level ``dyslexia`` task, EyeBench's 4 folds, planned and checked without running a unit."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest
from synthetic import write_synthetic_dataset

from readgaze.eyebench_tables import EYEBENCH_MODELS
from readgaze.models.training import bench_config as bc

ROOT = Path(__file__).resolve().parents[1]
CONFIG = ROOT / "experiments" / "bench" / "copco.yaml"
EXCERPT = Path(__file__).parent / "files" / "eyebench_copco" / "folds"
MODELS = {"text_only": "TextOnly", "ahn_rnn": "AhnRNN", "ahn_cnn": "AhnCNN", "beyelstm": "BEyeLSTM",
          "plm_as": "PLMAS", "plm_as_rm": "PLMASRM", "roberteye_w": "RoBERTEyeW", "roberteye_f": "RoBERTEyeF",
          "mag_eye": "MAGEye", "postfusion_eye": "PostFusionEye"}


@pytest.fixture(scope="module")
def dataset(tmp_path_factory) -> Path:
    return write_synthetic_dataset(tmp_path_factory.mktemp("data"), n_participants=4, n_items=4, n_words=12)


def test_dyslexia_is_a_bench_task_and_a_typo_names_it():
    assert {"reading_goal", "comprehension", "goal_question", "dyslexia"} <= set(bc.TASKS)
    assert "reading_comprehension_skill" not in bc.TASKS  # a regression: not a bench task until its head lands
    config = bc.BenchConfig(datasets={"d": "."}, tasks=["dyslexa"], models=["ahn_cnn"])
    with pytest.raises(Exception, match="unknown task 'dyslexa'; did you mean 'dyslexia'"):
        bc.model_configs(config)


def test_copco_bench_config_plans_every_eyebench_model_on_the_4_folds(dataset, monkeypatch):
    monkeypatch.chdir(ROOT)  # the YAML's paths are relative to the repository root
    config = bc.load(str(CONFIG), {"dataset": [f"copco={dataset}"]})
    bc.apply_overrides(config, ["--data.fold_files", str(EXCERPT)])
    assert config.tasks == ["dyslexia"] and config.n_folds == 4 and config.fold_list() == [0, 1, 2, 3]
    assert config.data == {"fold_files": str(EXCERPT), "text_encoder": "tiny"}
    found, notes = bc.model_configs(config)
    assert notes == [] and sorted(Path(m).stem for _, m in found) == sorted(MODELS)
    # every neural row of EyeBench's CopCo tables is one of these models
    neural = {ours for name, (ours, _) in EYEBENCH_MODELS.items() if ours[0].isupper()}
    assert neural == set(MODELS.values())
    units = bc.plan(config, found)
    assert len(units) == 4 * len(MODELS) and {u.kind for u in units} == {"model"}
    epochs = {Path(u.spec["model_name"]).stem: u.spec["point"].get("trainer.max_epochs") for u in units}
    assert epochs == {**{m: None for m in MODELS}, "ahn_rnn": "8", "ahn_cnn": "8", "beyelstm": "8"}
    args = units[0].spec["args"]
    assert args[:2] == ["--data.task", "dyslexia"] and "--trainer.max_epochs=1" in args
    assert pl.DataFrame([u.summary() for u in units]).group_by("fold").len()["len"].to_list() == [10] * 4
