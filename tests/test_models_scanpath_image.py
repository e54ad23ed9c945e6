"""The scanpath-image model: what the picture shows, padding invariance, gradients and the timm path.

That it learns is tested with every other model in ``tests/test_models_learn.py`` (its registry entry)."""

from __future__ import annotations

import dataclasses

import pytest
import torch
from synthetic import write_synthetic_dataset

from readgaze.models.data import ReadingDataModule
from readgaze.models.data.batch import OFF_TEXT
from readgaze.models.scanpath_image import SACCADE_COLOUR, ScanpathImage, render_scanpath

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def _one_trial(n: int = 3, duration: float = 0.0):
    x = torch.tensor([[-1.0, 0.0, 1.0][:n]])
    y = torch.zeros(1, n)
    return x, y, torch.full((1, n), duration), torch.ones(1, n, dtype=torch.bool)


def test_picture_places_discs_by_position_colours_by_order_and_sizes_by_duration():
    x, y, d, mask = _one_trial()
    words = torch.tensor([[0, 1, 0]])  # forward saccade, then a regression
    image = render_scanpath(x, y, d, mask, words, image_size=41, extent=2.0)  # 1 scaled unit = 10 px
    assert image.shape == (1, 3, 41, 41) and float(image.min()) >= 0 and float(image.max()) <= 1
    # red discs fade with order: first fixation at (10, 20) 1.0, middle (20, 20) 0.625, last (30, 20) 0.25
    assert [float(image[0, 0, 20, c]) for c in (10, 20, 30)] == pytest.approx([1.0, 0.625, 0.25], abs=1e-4)
    # saccades: 0 -> 1 forward (pixel 15) green, 1 -> 2 a regression to word 0 (pixel 25) blue
    assert image[0, 1:, 20, 15].tolist() == pytest.approx(list(SACCADE_COLOUR["forward"]), abs=1e-4)
    assert image[0, 1:, 20, 25].tolist() == pytest.approx(list(SACCADE_COLOUR["regression"]), abs=1e-4)
    assert float(image[0, :, 5, :].sum()) == 0.0
    # longer fixations draw larger discs
    short = render_scanpath(x, y, torch.full_like(d, -3.0), mask, words, 41).sum()
    long = render_scanpath(x, y, torch.full_like(d, 3.0), mask, words, 41).sum()
    assert long > short * 1.5


def test_off_text_saccades_and_padding():
    x, y, d, mask = _one_trial()
    words = torch.tensor([[0, OFF_TEXT, 1]])
    image = render_scanpath(x, y, d, mask, words, image_size=41)
    assert image[0, 1:, 20, 15].tolist() == pytest.approx(list(SACCADE_COLOUR["off_text"]), abs=1e-4)
    padded = render_scanpath(torch.cat([x, torch.tensor([[1.9]])], 1), torch.cat([y, torch.tensor([[1.9]])], 1),
                             torch.cat([d, torch.zeros(1, 1)], 1), torch.cat([mask, torch.zeros(1, 1,
                                                                                                dtype=torch.bool)], 1),
                             torch.cat([words, torch.tensor([[OFF_TEXT]])], 1), image_size=41, chunk=2)
    assert torch.equal(image, padded)


@pytest.fixture(scope="module")
def datamodule(tmp_path_factory) -> ReadingDataModule:
    path = write_synthetic_dataset(tmp_path_factory.mktemp("image"), n_participants=40, n_items=15, n_words=30,
                                   seed=3)
    dm = ReadingDataModule(str(path), task="reading_goal", n_folds=5, batch_size=16)
    dm.setup("fit")
    return dm


def test_forward_backward_and_padding_invariance(datamodule):
    torch.manual_seed(0)
    batch = next(iter(datamodule.train_dataloader()))
    model = ScanpathImage().eval()
    logits = model(batch)
    assert logits.shape == (len(batch), 2) and torch.isfinite(logits).all()
    model.train()
    model.loss(model(batch), batch.label).backward()
    grads = [p.grad for p in model.backbone.parameters()]
    assert all(g is not None for g in grads) and sum(float(g.abs().sum()) for g in grads) > 0
    model.eval()
    extra = 7  # pad every trial with 7 more (masked) fixations: logits unchanged
    pad = lambda t, v: torch.cat([t, torch.full((t.shape[0], extra, *t.shape[2:]), v, dtype=t.dtype)], 1)  # noqa: E731
    padded = dataclasses.replace(batch, fixation_features=pad(batch.fixation_features, 5.0),
                                 fixation_mask=pad(batch.fixation_mask, False),
                                 fixation_word_index=pad(batch.fixation_word_index, OFF_TEXT))
    with torch.no_grad():
        assert torch.allclose(model(batch), model(padded), atol=1e-6)


def test_timm_backbone_when_installed(datamodule):
    pytest.importorskip("timm", reason="timm (the 'image' extra, needs a torchvision matching torch) not installed")
    batch = next(iter(datamodule.train_dataloader()))
    model = ScanpathImage(backbone="convnextv2_atto", image_size=32)
    assert model(batch).shape == (len(batch), 2)


def test_missing_timm_gives_a_clear_error(monkeypatch):
    import builtins

    real_import = builtins.__import__
    monkeypatch.setattr(builtins, "__import__", lambda name, *a, **k: (_ for _ in ()).throw(ImportError("no timm"))
                        if name == "timm" else real_import(name, *a, **k))
    from readgaze.errors import ConfigError

    with pytest.raises(ConfigError, match=r"pip install -e '\.\[image\]'"):
        ScanpathImage(backbone="convnextv2_atto")
