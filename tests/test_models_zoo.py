"""Every neural model of the registry: forward/backward, padding invariance, frozen vs trained encoder; the
registry and ``readgaze models``; the published feature table."""

from __future__ import annotations

import inspect

import pytest
import torch
from synthetic import pad_batch, write_synthetic_dataset

from readgaze import features
from readgaze.models.data import ReadingDataModule
from readgaze.models.training.registry import MODELS, find, main, rows

pytestmark = pytest.mark.usefixtures("one_torch_thread")
NEURAL = [e for e in MODELS if e.kind == "neural"]
ORDER_ONLY = {"plm_as"}
"""Models that take no gaze numbers, only the fixated words in order (PLM-AS)."""


def _build(entry, **overrides):
    cls = entry.load()
    if "text_encoder" in inspect.signature(cls).parameters:
        overrides.setdefault("text_encoder", "tiny")
    torch.manual_seed(0)
    return entry.build(**overrides)


@pytest.fixture(scope="module")
def batch():
    """Four comprehension trials (paragraph + question), 20 % off-text fixations, ragged lengths."""
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        path = write_synthetic_dataset(folder, n_participants=6, n_items=6, n_words=16, off_text_rate=0.2)
        dm = ReadingDataModule(str(path), task="comprehension", n_folds=3, batch_size=4, split_unit="trial")
        dm.setup("fit")
        return next(iter(dm.train_dataloader()))


@pytest.mark.parametrize("entry", NEURAL, ids=lambda e: e.config)
def test_forward_backward_and_the_gaze_reaches_the_logits(entry, batch):
    model = _build(entry)
    logits = model(batch)
    assert logits.shape == (len(batch), 2) and torch.isfinite(logits).all()
    model.loss(logits, batch.label).backward()
    trained = [p.grad for p in model.parameters() if p.requires_grad]
    assert all(g is None or torch.isfinite(g).all() for g in trained)
    assert sum(float(g.abs().sum()) for g in trained if g is not None) > 0
    model.eval()
    torch.manual_seed(1)
    noisy = type(batch)(**{**batch.__dict__,
                           "fixation_features": batch.fixation_features + torch.randn_like(batch.fixation_features),
                           "word_features": batch.word_features + torch.randn_like(batch.word_features)})
    with torch.no_grad():
        moved = float((model(noisy) - model(batch)).abs().max())
    if entry.sees_gaze and entry.config not in ORDER_ONLY:
        assert moved > 1e-4, f"{entry.name}: the gaze numbers do not reach the logits"
    else:  # text only; PLM-AS reads which words were fixated in which order, no gaze number
        assert moved == 0.0


@pytest.mark.parametrize("entry", [e for e in NEURAL if e.config in ORDER_ONLY], ids=lambda e: e.config)
def test_the_scanpath_order_reaches_the_logits_of_order_only_models(entry, batch):
    model = _build(entry).eval()
    n = batch.fixation_mask.sum(dim=1)
    order = torch.arange(batch.fixation_mask.shape[1]).expand_as(batch.fixation_mask)
    reverse = torch.where(order < n[:, None], n[:, None] - 1 - order, order)  # each trial's fixations backwards
    swapped = {name: torch.gather(value, 1, reverse if value.dim() == 2 else reverse[..., None].expand_as(value))
               for name, value in batch.__dict__.items() if name.startswith("fixation_")}
    with torch.no_grad():
        assert not torch.allclose(model(batch), model(type(batch)(**{**batch.__dict__, **swapped})), atol=1e-6)


@pytest.mark.parametrize("entry", NEURAL, ids=lambda e: e.config)
def test_extra_padding_and_batch_mates_do_not_change_a_trials_logits(entry, batch):
    model = _build(entry).eval()
    with torch.no_grad():
        logits = model(batch)
        torch.testing.assert_close(model(pad_batch(batch, tokens=5, words=3, fixations=7)), logits,
                                   atol=1e-5, rtol=1e-4)
        alone = model(_select(batch, [1]))
    torch.testing.assert_close(alone[0], logits[1], atol=1e-5, rtol=1e-4)


def _select(batch, rows):
    """Trials ``rows`` of a batch, cropped to their own longest text, word and fixation sequence."""
    keep = torch.tensor(rows)
    t = int(batch.attention_mask[keep].sum(1).max())
    w = int(batch.word_mask[keep].sum(1).max())
    f = int(batch.fixation_mask[keep].sum(1).max())
    out = {}
    for name, value in batch.__dict__.items():
        if not isinstance(value, torch.Tensor):
            out[name] = [value[i] for i in rows]
            continue
        value = value[keep]
        if name in ("input_ids", "attention_mask", "token_segment"):
            value = value[:, :t]
        elif name.startswith("word_"):
            value = value[:, :w]
        elif name.startswith("fixation_"):
            value = value[:, :f]
        out[name] = value
    return type(batch)(**out)


FREEZABLE = [e for e in NEURAL if "freeze_text_encoder" in inspect.signature(e.load()).parameters]
ALWAYS_TRAINED = ("token_type_embeddings",)
"""Encoder parameters a frozen RoBERTEye still trains (EyeBench's freeze=True trains the token types)."""


@pytest.mark.parametrize("entry", FREEZABLE, ids=lambda e: e.config)
@pytest.mark.parametrize("frozen", [True, False], ids=["frozen", "trained"])
def test_frozen_encoder_gets_no_gradient_and_a_trained_one_does(entry, frozen, batch):
    model = _build(entry, freeze_text_encoder=frozen)
    model.loss(model(batch), batch.label).backward()
    grads = {n: p.grad for n, p in model.encoder.named_parameters()}
    if frozen:
        leaked = [n for n, g in grads.items() if g is not None and g.abs().sum() > 0
                  and not any(a in n for a in ALWAYS_TRAINED)]
        assert not leaked, f"frozen {entry.name} encoder got gradients in {leaked[:3]}"
        return
    for part in ("embeddings.word_embeddings.weight", "encoder.layer.0.attention.self.query.weight",
                 "encoder.layer.1.output.dense.weight"):
        assert grads[part] is not None and grads[part].abs().sum() > 0, f"{entry.name}: no gradient in {part}"


def test_mag_rejects_a_layer_the_encoder_does_not_have():
    with pytest.raises(ValueError, match="layers 0..1"):
        find("mag_eye").build(text_encoder="tiny", mag_injection_index=2)


def test_mag_gate_never_shifts_tokens_without_a_word_and_is_bounded_by_beta():
    from readgaze.models.mag_eye import MultimodalAdaptationGate

    torch.manual_seed(0)
    gate = MultimodalAdaptationGate(hidden=8, n_gaze=3, beta_shift=0.1, dropout=0.0).eval()
    gate.norm = torch.nn.Identity()  # look at the shift itself
    text, gaze = torch.randn(1, 4, 8), torch.randn(1, 4, 3) * 100
    has = torch.tensor([[False, True, True, False]])
    shifted = gate(text, gaze, has)
    assert torch.equal(shifted[~has], text[~has])
    ratio = (shifted - text).norm(dim=-1) / text.norm(dim=-1)
    assert (ratio[has] <= 0.1 + 1e-6).all() and (ratio[has] > 0).all()


def test_plm_as_rm_reads_the_8_fixation_and_2_word_features():
    from readgaze.models.plm_as_rm import FIXATION_COLUMNS, GAZE_COLUMNS, WORD_COLUMNS

    assert len(FIXATION_COLUMNS) == 8 and len(WORD_COLUMNS) == 2 and len(GAZE_COLUMNS) == 18
    assert set(GAZE_COLUMNS) <= set(features.FIXATION_FEATURES)


def test_feature_counts_match_the_model_docstrings():
    # RoBERTEye-F / PostFusion state 54 fixation numbers; RoBERTEye-W / MAG-Eye state 30 word numbers.
    assert len(features.FIXATION_FEATURES) == 54 and len(features.WORD_FEATURES) == 30
    published = {s: sum(1 for r in features.PUBLISHED_FEATURES if r[0] == s) for s in ("word_eye", "word_lexical",
                                                                                         "fixation")}
    assert published == {"word_eye": 24, "word_lexical": 10, "fixation": 16}
    have = set(features.WORD_FEATURES) | set(features.FIXATION_FEATURES)
    assert all(c in have for s in published for c in features.feature_set(s))
    with pytest.raises(KeyError, match="unknown feature set"):
        features.feature_set("words")


def test_registry_lists_every_model_with_a_config_per_task(capsys):
    names = {r["name"] for r in rows()}
    for name in ("RoBERTEye-W", "RoBERTEye-F", "MAG-Eye", "PostFusion-Eye", "PLM-AS", "PLM-AS-RM (Haller RNN)",
                 "Eyettention", "BEyeLSTM", "Text only", "reading_speed", "majority"):
        assert name in names
    assert "(missing)" not in " ".join(r["configs"] for r in rows())
    assert main(["models", "--check"]) == 0
    out = capsys.readouterr().out
    assert "Eyettention" in out and "reading_goal/plm_as_rm" in out


def test_the_listing_imports_neither_torch_nor_scikit_learn_and_check_resolves_the_baselines():
    import subprocess
    import sys

    code = ("import sys; from readgaze.models.training.registry import rows; r = rows(); "
            "print(len(r), 'torch' in sys.modules, 'sklearn' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    n, torch_loaded, sklearn_loaded = done.stdout.split()
    assert int(n) >= 20 and (torch_loaded, sklearn_loaded) == ("False", "False")  # `readgaze models`: 4.7 s -> 0.75
    from sklearn.svm import SVC

    from readgaze.baselines import BASELINES
    from readgaze.baselines_regression import REGRESSORS

    assert BASELINES["svm"].estimator_class() is SVC
    checked = {r["name"]: r["status"] for r in rows(check=True) if r["kind"] == "baseline"}
    assert set(checked) == set(BASELINES) | {spec.model for spec in REGRESSORS.values()}
    assert set(checked.values()) == {"ok"}


def test_readgaze_configs_prints_each_configs_whole_first_sentence(capsys):
    """A config whose first sentence runs over two comment lines was cut mid-sentence ("... (one line per")."""
    from readgaze.models.training.configs import main as configs_main

    assert configs_main([]) == 0
    line = next(x for x in capsys.readouterr().out.splitlines() if "goal_reconstruction/daleye" in x)
    assert line.rstrip().endswith("writes the reader's question.")
