"""AhnRNN and AhnCNN: the lab bugs stay out (padding read as the last step, ReLU logits, length 815), and both learn."""

from __future__ import annotations

import pytest
import torch
from sklearn.metrics import roc_auc_score
from synthetic import write_synthetic_dataset

from readgaze.errors import ConfigError
from readgaze.models.ahn_cnn import AhnCNN
from readgaze.models.ahn_rnn import AhnRNN
from readgaze.models.data import ReadingDataModule
from readgaze.models.data.batch import REGIMES

pytestmark = pytest.mark.usefixtures("one_torch_thread")


@pytest.fixture(scope="module")
def datamodule(tmp_path_factory):
    path = write_synthetic_dataset(tmp_path_factory.mktemp("ahn"), n_participants=24, n_items=10, n_words=40)
    dm = ReadingDataModule(str(path), task="reading_goal", n_folds=4, batch_size=16)
    dm.setup("fit")
    return dm


def _ragged(lengths=(5, 9), n_inputs=4, seed=0):
    torch.manual_seed(seed)
    x = torch.randn(len(lengths), max(lengths), n_inputs)
    for i, n in enumerate(lengths):
        x[i, n:] = 0.0  # right zero padding, as the collate function pads
    return x, torch.tensor(lengths)


def test_rnn_reads_the_true_last_fixation_not_the_padding():
    torch.manual_seed(0)
    model = AhnRNN().eval()
    x, lengths = _ragged()
    with torch.no_grad():
        batched = model.classify(x, lengths)
        alone = model.classify(x[:1, :5], lengths[:1])  # the short trial without any padding
        moved = x.clone()
        moved[0, 4] += 1.0  # the short trial's true last fixation
        changed_last = model.classify(moved, lengths)
        noisy = x.clone()
        noisy[0, 5:] = torch.randn(4, 4)  # its padding only
        changed_padding = model.classify(noisy, lengths)
    # the lab's x[:, -1, :] read step 9 of the short trial: 4 padding steps after its end, so these differ
    torch.testing.assert_close(batched[0], alone[0])
    torch.testing.assert_close(changed_padding, batched)
    assert (changed_last[0] - batched[0]).abs().max() > 1e-4
    torch.testing.assert_close(changed_last[1], batched[1])


def test_rnn_logits_are_not_rectified():
    torch.manual_seed(0)
    model = AhnRNN().eval()
    x, lengths = _ragged(lengths=tuple(range(3, 19)))
    with torch.no_grad():
        logits = model.classify(x, lengths)
    assert (logits < 0).any()  # a ReLU on the logits (the lab's) would make every logit >= 0


@pytest.mark.parametrize("length", [1, 7, 21, 815, 1200])
def test_cnn_takes_the_batch_length(length):
    torch.manual_seed(0)
    model = AhnCNN().eval()
    x, lengths = _ragged(lengths=(length, max(1, length // 2)))
    with torch.no_grad():
        logits = model.classify(x, lengths)
        alone = model.classify(x[1:, : max(1, length // 2)], lengths[1:])
    assert logits.shape == (2, 2) and torch.isfinite(logits).all()
    torch.testing.assert_close(logits[1], alone[0])  # padding invariance


def test_cnn_fixed_length_head_as_published():
    model = AhnCNN(sequence_length=21)
    assert model.head[0].in_features == ((21 - 6) // 2) * 40
    x = torch.randn(3, 21, 4)
    assert model.classify(x, torch.full((3,), 21)).shape == (3, 2)
    with pytest.raises(ConfigError, match="built for sequences of 21"):
        model.classify(torch.randn(3, 22, 4), torch.full((3,), 22))


@pytest.mark.parametrize("model_class", [AhnRNN, AhnCNN], ids=lambda c: c.__name__)
def test_forward_backward_and_padding_invariance_on_reading_batches(model_class, datamodule):
    torch.manual_seed(0)
    model = model_class()
    batch = next(iter(datamodule.train_dataloader()))
    logits = model(batch)
    assert logits.shape == (len(batch), 2) and torch.isfinite(logits).all()
    model.loss(logits, batch.label).backward()
    assert all(p.grad is not None and torch.isfinite(p.grad).all() for p in model.parameters())
    model.eval()
    longest = int(batch.fixation_mask.sum(1).argmax())
    shortest = int(batch.fixation_mask.sum(1).argmin())
    with torch.no_grad():
        both = model(batch)
        n = int(batch.fixation_mask[shortest].sum())
        x = batch.fixation_features[[shortest], :n]
        import dataclasses
        single = dataclasses.replace(batch, trial_id=[batch.trial_id[shortest]], label=batch.label[[shortest]],
                                     fixation_features=x, fixation_mask=batch.fixation_mask[[shortest], :n])
        alone = model(single)
    assert longest != shortest
    torch.testing.assert_close(both[shortest], alone[0], atol=1e-5, rtol=1e-4)


@pytest.mark.learns
@pytest.mark.parametrize("model_class, lr", [(AhnRNN, 1e-2), (AhnCNN, 3e-3)], ids=["AhnRNN", "AhnCNN"])
def test_learns_reading_goal(model_class, lr, datamodule):
    """Trained briefly on CPU, the fixation sequence alone separates the goals on validation trials (AUROC >= 0.75)."""
    torch.manual_seed(0)
    model = model_class(learning_rate=lr)
    model.set_class_weights(datamodule.class_counts)
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr)
    for _ in range(15):
        model.train()
        for batch in datamodule.train_dataloader():
            optimizer.zero_grad()
            model.loss(model(batch), batch.label).backward()
            optimizer.step()
    model.eval()
    with torch.no_grad():
        val = list(datamodule.val_dataloader())
        probs = torch.cat([model(b).softmax(-1)[:, 1] for b in val])
    labels = torch.cat([b.label for b in val])
    regimes = torch.cat([b.regime_index for b in val])
    auroc = roc_auc_score(labels.numpy(), probs.numpy())
    keep = regimes == REGIMES.index("new_participant")
    new_participant = roc_auc_score(labels[keep].numpy(), probs[keep].numpy())
    print(f"{model_class.__name__} validation AUROC {auroc:.3f} (new participant {new_participant:.3f})")
    assert auroc >= 0.75
