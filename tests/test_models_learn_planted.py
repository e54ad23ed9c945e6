"""Planted tasks that need one modality (``readgaze.simulate.simulate_corpus(planted=...)``): a model that takes the
text and the gaze must use each where it matters, and lose nothing where it does not.

* ``question_span`` needs the text: information seekers slow down either on the span that answers their question
  (it holds the question's keyword; the answer is then right with probability 0.9) or on an equally long distractor
  span (right with probability 0.1). Overall reading speed carries no signal (checked: the reading-speed baseline on
  the same split is at chance). Comprehension with the question in the input: PostFusion-Eye and RoBERTEye-F with
  ``gaze_word_embedding`` (tiny encoder) must beat their own text-ablated twin (``ablate="text"``: each trial's
  words permuted, gaze kept) and the gaze-only FSE, on the validation trials of all regimes, by a paired
  permutation test over trials (:func:`readgaze.metrics.paired_comparison`, p < 0.05) and by :data:`MARGIN` AUROC.
  RoBERTEye-F as published, whose fixations reach their word only through the position, must beat its text-ablated
  twin by :data:`MARGIN_ROBERTEYE`; against FSE it is a strict xfail (:data:`ROBERTEYE_TINY_VS_FSE` gives the
  measured numbers).
* ``reading_speed`` needs only the gaze: information seekers read faster everywhere. RoBERTEye-F and PostFusion-Eye
  reach :data:`BAR` AUROC on new participants, and their text-ablated twins lose at most :data:`TOLERANCE`.

Models are picked on the lowest pooled validation loss (:func:`synthetic.fit_briefly`), never on AUROC. The
settings of RoBERTEye-F with ``gaze_word_embedding`` (:data:`VARIANTS`: learning rate 1e-3, 15 epochs) were chosen
on a second corpus (``seed=1``), where at the registry's quick learning rate 3e-3 it stayed at chance (validation
AUROC 0.51, training loss 0.69 after 20 epochs), and then run here once.
Times on 2 shared, busy cores (measured): question_span, PostFusion-Eye 9.4 min, RoBERTEye-F 14.4 min (its fits: 6
min full, 4-8 min text-ablated, 0.4-2 min FSE; alone on a core a tiny RoBERTEye-F fit takes about 50 s);
reading_speed, RoBERTEye-F 2.8 min, PostFusion-Eye 1.1 min; 29 min for the module.
"""

from __future__ import annotations

import json
import time

import numpy as np
import polars as pl
import pytest
import torch
from synthetic import fit_briefly, write_planted_corpus

from readgaze.baselines import run_baseline
from readgaze.metrics import paired_comparison
from readgaze.models.data import ReadingDataModule
from readgaze.models.training.registry import find

pytestmark = [pytest.mark.learns, pytest.mark.slow, pytest.mark.usefixtures("one_torch_thread")]
BAR = 0.8
TOLERANCE = 0.03
MARGIN = 0.15
MARGIN_ROBERTEYE = 0.04
TEXT_EPOCHS = {"postfusion_eye": 12, "roberteye_f": 15, "roberteye_f_word": 15, "fse": 8}
VARIANTS = {"roberteye_f_word": ("roberteye_f", {"gaze_word_embedding": True, "learning_rate": 1e-3})}
"""Test names of model variants: the registry config and its constructor arguments."""
SPEED_EPOCHS = 6
QUESTION_SPAN = dict(n_participants=60, n_items=40, goal_effect=3.0, words_per_paragraph=(30, 45),
                     planted="question_span")
READING_SPEED = dict(n_participants=60, n_items=20, goal_effect=3.0, words_per_paragraph=(30, 45),
                     planted="reading_speed")
_FITS: dict[tuple, dict] = {}


_CORPORA: dict[str, object] = {}


def planted_corpus(tmp_path_factory, name: str, settings: dict):
    """The planted corpus ``name``, written once per session (the MiniLM proof reuses it and its tiny fits)."""
    if name not in _CORPORA:
        _CORPORA[name] = write_planted_corpus(tmp_path_factory.mktemp(name), **settings)
    return _CORPORA[name]


@pytest.fixture(scope="module")
def question_span(tmp_path_factory):
    return planted_corpus(tmp_path_factory, "question_span", QUESTION_SPAN)


@pytest.fixture(scope="module")
def reading_speed(tmp_path_factory):
    return planted_corpus(tmp_path_factory, "reading_speed", READING_SPEED)


def datamodule(path, task: str, ablate: str | None = None, encoder: str = "tiny") -> ReadingDataModule:
    regime = {"reading_regime": "information_seeking"} if task == "comprehension" else {}
    data = ReadingDataModule(str(path), task=task, n_folds=5, batch_size=16, text_encoder=encoder, ablate=ablate,
                             **regime)
    data.setup("fit")
    return data


def fit(path, task: str, config: str, epochs: int, ablate: str | None = None, encoder: str = "tiny",
        **model_args) -> dict:
    """Train ``config`` (a registry name with its ``quick`` settings, or a key of :data:`VARIANTS`) once per
    arguments; metrics plus validation predictions."""
    name = config
    if config in VARIANTS:
        config, model_args = VARIANTS[name][0], {**VARIANTS[name][1], **model_args}
    key = (str(path), task, config, epochs, ablate, encoder, tuple(sorted(model_args.items())))
    if key not in _FITS:
        data = datamodule(path, task, ablate, encoder)
        torch.manual_seed(0)
        extra = {} if config == "fse" else {"text_encoder": encoder}
        model = find(config).build(**extra, **model_args)
        start = time.perf_counter()
        metrics = fit_briefly(model, data, max_epochs=epochs, keep_predictions=True)
        metrics["seconds"] = time.perf_counter() - start
        regimes = data.trials.select("trial_id", "regime", "fold_index", "label")
        metrics["predictions"] = (pl.DataFrame({"trial_id": metrics.pop("val_trial_id"),
                                                "prediction_prob": metrics.pop("val_probability")[:, 1]})
                                  .join(regimes, on="trial_id")
                                  .with_columns(pl.lit(f"{name}:{ablate or 'full'}:{encoder}").alias("model"),
                                                pl.lit("test").alias("split")))
        _FITS[key] = metrics
    return _FITS[key]


def _line(name: str, metrics: dict, key: str = "auroc_all") -> str:
    return (f"{name:44s} AUROC {key.removeprefix('auroc_')} {metrics[key]:.3f} (new item "
            f"{metrics['auroc_new_item']:.3f}, new participant {metrics['auroc_new_participant']:.3f}; epoch "
            f"{metrics['epoch'] + 1}, {metrics['seconds']:.0f} s)")


@pytest.mark.long
def test_in_the_question_span_task_reading_speed_carries_no_signal(question_span):
    oracle = json.loads((question_span / "manifest.json").read_text())["config"]["oracle"]
    assert oracle["comprehension_span_vs_distractor_auroc"] >= 0.85  # the gaze on the two spans says it all
    data = datamodule(question_span, "comprehension")
    trials = data.trials.join(data.trial_features_raw.select("trial_id", "reading_speed_wpm"), on="trial_id")
    assignment = data.trials.select("trial_id", "fold_index", "split", "regime")
    speed = run_baseline(trials, assignment, "comprehension", "reading_speed", split="val")
    from sklearn.metrics import roc_auc_score

    auroc = roc_auc_score(speed["label"], speed["prediction_prob"])
    assert 0.4 < auroc < 0.6, f"reading speed predicts the planted comprehension label: AUROC {auroc:.3f}"


ROBERTEYE_TINY_VS_FSE = pytest.mark.xfail(strict=True, reason=(
    "RoBERTEye-F as published (a fixation reaches its word only through its position) does not learn to find the "
    "keyword with the tiny random encoder: AUROC 0.552 vs FSE 0.515, permutation p 0.18 at 15 epochs (0.482 at "
    "learning rate 1e-3; measured, deterministic); its training loss stays near 0.69. With gaze_word_embedding it "
    "does (roberteye_f_word: 0.725). Strict: passing here means the gap closed, so drop this mark."))


@pytest.mark.long
@pytest.mark.parametrize(("config", "other"), [("postfusion_eye", "text ablated"), ("postfusion_eye", "gaze only"),
                                               ("roberteye_f_word", "text ablated"),
                                               ("roberteye_f_word", "gaze only"),
                                               ("roberteye_f", "text ablated"),
                                               pytest.param("roberteye_f", "gaze only", marks=ROBERTEYE_TINY_VS_FSE)])
def test_question_conditioned_model_needs_the_text(config, other, question_span, request):
    full = fit(question_span, "comprehension", config, TEXT_EPOCHS[config])
    if other == "text ablated":
        metrics = fit(question_span, "comprehension", config, TEXT_EPOCHS[config], ablate="text")
    else:
        metrics = fit(question_span, "comprehension", "fse", TEXT_EPOCHS["fse"])
    for name, line in ((f"{config} (question_span)", full), (f"{config} vs {other}", metrics)):
        request.node.user_properties.append(("learns", _line(name, line)))
    margin = MARGIN_ROBERTEYE if config == "roberteye_f" else MARGIN
    predictions = pl.concat([full["predictions"], metrics["predictions"]])
    reference, name = full["predictions"]["model"][0], metrics["predictions"]["model"][0]
    assert full["auroc_all"] - metrics["auroc_all"] >= margin, (
        f"{config} {full['auroc_all']:.3f} vs {name} {metrics['auroc_all']:.3f}: less than {margin} apart")
    test = paired_comparison(predictions, reference, name).filter(pl.col("regime") == "all").row(0, named=True)
    assert test["difference_mean"] > 0 and test["permutation_p"] < 0.05, test


@pytest.mark.parametrize("config", ["roberteye_f", "postfusion_eye"])
def test_speed_task_the_text_ablated_twin_loses_nothing(config, reading_speed, request):
    full = fit(reading_speed, "reading_goal", config, SPEED_EPOCHS)
    ablated = fit(reading_speed, "reading_goal", config, SPEED_EPOCHS, ablate="text")
    for name, metrics in ((f"{config} (reading_speed)", full), (f"{config} text ablated (reading_speed)", ablated)):
        request.node.user_properties.append(("learns", _line(name, metrics, "auroc_new_participant")))
    assert full["auroc_new_participant"] >= BAR
    assert ablated["auroc_new_participant"] >= BAR
    assert ablated["auroc_new_participant"] >= full["auroc_new_participant"] - TOLERANCE
    assert np.isfinite(full["val_loss"]) and np.isfinite(ablated["val_loss"])
