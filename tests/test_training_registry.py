"""The registry finds every model by the CARD in its own file: adding a model touches the model file and one YAML
per task, nothing else, and a model class without a card is reported, never skipped."""

from __future__ import annotations

import readgaze.models.training.registry as registry
from readgaze.models.training.registry import MODELS, model_cards


def test_every_model_file_carries_a_card_and_every_card_a_config_per_task():
    entries, problems = model_cards()
    assert problems == [] and entries == MODELS
    assert len([e for e in MODELS if e.kind == "neural"]) == 13
    assert {e.config for e in MODELS} >= {"roberteye_f", "beyelstm", "postfusion_eye", "daleye"}
    missing = [f"{task}/{e.config}" for e in MODELS for task, found in registry.config_status(e).items()
               if found is None]
    assert missing == []


def test_a_new_model_file_is_found_and_one_without_a_card_is_reported(tmp_path, capsys, monkeypatch):
    (tmp_path / "my_model.py").write_text(
        "from readgaze.models.base import ReadingModel\n\n\n"
        "class Mine(ReadingModel):\n"
        '    """A new model."""\n\n'
        '    CARD = {"name": "Mine", "tasks": ("reading_goal",), "paper": "Me 2026",\n'
        '            "quick": {"learning_rate": 1e-3}}\n'
        "\n\nclass Variant(Mine):\n    pass\n\n\nclass Helper:\n    pass\n")
    (tmp_path / "broken.py").write_text("class Broken(:\n")
    entries, problems = model_cards(tmp_path)
    assert [(e.name, e.target, e.config, e.tasks, e.quick) for e in entries] == [
        ("Mine", "readgaze.models.my_model.Mine", "my_model", ("reading_goal",), {"learning_rate": 1e-3})]
    assert problems[0].startswith("models/broken.py: does not parse")
    assert problems[1] == ("models/my_model.py: class Variant has no CARD (readgaze models, the zoo and learns "
                           "tests would miss it)")
    monkeypatch.setattr(registry, "CARD_PROBLEMS", problems)
    ok = {"name": "Mine", "kind": "neural", "tasks": "", "paper": "", "configs": "", "status": "ok"}
    monkeypatch.setattr(registry, "rows", lambda check=False: [ok])  # every import fine: the cards alone fail it
    assert registry.main(["models", "--check"]) == 1
    assert "class Variant has no CARD" in capsys.readouterr().err
