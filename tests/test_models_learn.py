"""Proof that each neural model learns: trained briefly on CPU (tiny encoder) on a corpus from ``readgaze.simulate``
with a planted reading-goal signal, it must reach validation AUROC >= 0.75 for *new participants*.

The corpus is built once for the module (80 participants x 10 one-paragraph items, 30-45 words, goal_effect 3, no
drift; the simulator's own oracle, which knows the critical span, scores AUROC >= 0.85). The model is picked on the
lowest pooled validation loss, never on AUROC (:func:`synthetic.fit_briefly`). Models come from
:data:`readgaze.models.training.registry.MODELS` (the ``CARD`` of each model file, its ``quick`` settings), so a new
model file gets its ``learns`` test without being registered anywhere; the text-only model is exempt: it sees no
gaze, and every paragraph is read under both goals.
"""

from __future__ import annotations

import inspect
import json
import time

import pytest
import torch
from synthetic import fit_briefly, write_planted_corpus

from readgaze.models.data import ReadingDataModule
from readgaze.models.training.registry import MODELS

pytestmark = [pytest.mark.learns, pytest.mark.slow, pytest.mark.usefixtures("one_torch_thread")]
BAR = 0.75
GOAL_EFFECT = 3.0
EPOCHS = {"beyelstm": 5, "plm_as": 20, "scanpath_image": 8}
"""Epochs per model (config stem); default :data:`DEFAULT_EPOCHS`. PLM-AS (frozen encoder, as EyeBench) trains only
its GRU and head, about 1 s an epoch, and reached its lowest validation loss at epochs 10-20 over seeds 0-4."""
DEFAULT_EPOCHS = 6
NOT_YET: dict[str, str] = {}
"""Models known to miss the bar, with the measured number: they still run (xfail, not strict), so a fix shows."""
LEARNERS = [pytest.param(e, id=e.config, marks=[pytest.mark.xfail(reason=NOT_YET[e.config], strict=False)]
                         if e.config in NOT_YET else [])
            for e in MODELS if e.kind == "neural" and e.sees_gaze]


@pytest.fixture(scope="module")
def planted(tmp_path_factory) -> ReadingDataModule:
    path = write_planted_corpus(tmp_path_factory.mktemp("planted"), n_participants=80, n_items=10,
                                goal_effect=GOAL_EFFECT, words_per_paragraph=(30, 45))
    datamodule = ReadingDataModule(str(path), task="reading_goal", n_folds=5, batch_size=16, text_encoder="tiny")
    datamodule.setup("fit")
    return datamodule


def test_the_planted_signal_is_strong_and_the_protocol_has_new_participants(planted):
    oracle = json.loads((planted.path / "manifest.json").read_text())["config"]["oracle"]
    assert oracle["reading_goal_lr_auroc"] >= 0.85
    regimes = planted.trials.filter(planted.trials["split"] == "val")["regime"].value_counts()
    assert dict(zip(regimes["regime"], regimes["count"]))["new_participant"] >= 60


@pytest.mark.parametrize("entry", LEARNERS)
def test_model_learns_the_reading_goal_of_new_participants(entry, planted, request):
    torch.manual_seed(0)
    tiny = {"text_encoder": "tiny"} if "text_encoder" in inspect.signature(entry.load()).parameters else {}
    model = entry.build(**tiny)
    start = time.perf_counter()
    metrics = fit_briefly(model, planted, max_epochs=EPOCHS.get(entry.config, DEFAULT_EPOCHS))
    auroc = metrics["auroc_new_participant"]
    line = (f"{entry.name:24s} AUROC new participant {auroc:.3f} (all {metrics['auroc_all']:.3f}, new item "
            f"{metrics['auroc_new_item']:.3f}; epoch {metrics['epoch'] + 1}, {time.perf_counter() - start:.0f} s)")
    request.node.user_properties.append(("learns", line))
    assert auroc >= BAR, f"{entry.name}: validation AUROC {auroc:.3f} for new participants < {BAR}"
