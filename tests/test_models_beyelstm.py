"""BEyeLSTM and FSE as published: reduced POS from Reduced_POS, the 692/4 global features, padding, and learning."""

from __future__ import annotations

import dataclasses

import numpy as np
import polars as pl
import pytest
import torch
from sklearn.metrics import roc_auc_score
from synthetic import write_synthetic_dataset

from readgaze.features import FEATURE_SETS, REDUCED_POS, word_classes
from readgaze.models.beyelstm import BEyeLSTM
from readgaze.models.data import ReadingDataModule
from readgaze.models.fse import FSE

pytestmark = pytest.mark.usefixtures("one_torch_thread")


@pytest.fixture(scope="module")
def onestop_like(tmp_path_factory):
    """A simulated corpus through the OneStop reports and ``readgaze prep``: its words carry ``Reduced_POS``."""
    from readgaze.data_prep import sources
    from readgaze.data_prep.dataset import write_dataset
    from readgaze.data_prep.pipeline import prepare
    from readgaze.simulate import simulate_corpus, write_onestop_reports

    folder = tmp_path_factory.mktemp("beyelstm")
    reports = write_onestop_reports(simulate_corpus(12, 6, 1, seed=1), folder / "reports")
    loaded = sources.load_onestop(*reports)
    prepared = prepare(loaded.trials, loaded.words, loaded.fixations, loaded.qc, line_assigner="slice",
                       screen_px=(2560.0, 1440.0))
    return write_dataset(folder / "dataset", prepared, sources=loaded.sources, config={"mode": "onestop"},
                         id_bases=loaded.id_bases, force=True)


@pytest.fixture(scope="module")
def planted(tmp_path_factory):
    return write_synthetic_dataset(tmp_path_factory.mktemp("planted"), n_participants=24, n_items=10, n_words=40)


def test_reduced_pos_sequence_comes_from_reduced_pos(onestop_like):
    dm = ReadingDataModule(str(onestop_like), task="reading_goal", n_folds=3, batch_size=4,
                           trial_feature_set="beyelstm_global")
    dm.setup("fit")
    assert dm.n_trial_features == len(FEATURE_SETS["beyelstm_global"]) == 692
    batch = next(iter(dm.train_dataloader()))
    assert batch.trial_features.shape == (4, 692)
    words = pl.read_parquet(onestop_like / "words.parquet")
    trial = batch.trial_id[0]
    text_id = dm.trials.filter(pl.col("trial_id") == trial)["text_id"][0]
    tags = (words.filter(pl.col("text_id") == text_id).sort("ia_index").unique("word_index", keep="first")
            .sort("word_index")["Reduced_POS"].to_list())
    n = int(batch.fixation_mask[0].sum())
    fixated = batch.fixation_word_index[0, :n]
    expected = [REDUCED_POS.index(tags[w]) + 1 if w >= 0 else 0 for w in fixated.tolist()]
    assert batch.fixation_word_category[0, :n].tolist() == expected
    assert set(expected) - {0} <= {1, 2, 3, 4, 5} and len(set(expected) - {0}) >= 3


def test_real_onestop_reduced_pos_is_used_as_given(small_data):
    from readgaze.io.onestop import load_onestop

    sample = small_data / "onestop_sample"
    words = load_onestop(sample / "fixations.csv", sample / "ia.csv").words.lazy()
    classes = word_classes(words).collect()
    given = (words.group_by("text_id", "word_index").agg(pl.col("Reduced_POS").drop_nulls().first()).collect()
             .join(classes, on=["text_id", "word_index"]))
    assert given.height > 1000
    assert (given["Reduced_POS"].str.to_lowercase() == given["reduced_pos"]).all()


def test_fse_global_features_are_the_four_published(planted):
    dm = ReadingDataModule(str(planted), task="reading_goal", n_folds=4, batch_size=8, trial_feature_set="fse_global")
    dm.setup("fit")
    assert FEATURE_SETS["fse_global"] == ("stationary_entropy_bits", "gaze_transition_entropy_bits",
                                          "fixation_count", "word_count")
    assert dm.n_trial_features == 4
    batch = next(iter(dm.train_dataloader()))
    assert batch.trial_features.shape == (8, 4) and torch.isfinite(batch.trial_features).all()
    assert batch.trial_features[:, :3].std(dim=0).min() > 0  # entropies and fixation counts vary across trials
    assert (batch.trial_features[:, 3] == 0).all()  # every text has 40 words: centred on the training median


@pytest.mark.parametrize("model_class, feature_set", [(BEyeLSTM, "beyelstm_global"), (FSE, "fse_global")],
                         ids=["BEyeLSTM", "FSE"])
def test_forward_backward_and_padding_invariance(model_class, feature_set, onestop_like):
    dm = ReadingDataModule(str(onestop_like), task="reading_goal", n_folds=3, batch_size=4,
                           trial_feature_set=feature_set)
    dm.setup("fit")
    batch = next(iter(dm.train_dataloader()))
    torch.manual_seed(0)
    model = model_class(n_trial_features=dm.n_trial_features)
    logits = model(batch)
    assert logits.shape == (4, 2) and torch.isfinite(logits).all()
    model.loss(logits, batch.label).backward()
    assert all(p.grad is not None and torch.isfinite(p.grad).all() for p in model.gaze_block.parameters())
    assert (model_class is FSE) == (not hasattr(model, "category_block"))
    model.eval()
    i = int(batch.fixation_mask.sum(1).argmin())
    n = int(batch.fixation_mask[i].sum())
    one = {f.name: getattr(batch, f.name) for f in dataclasses.fields(batch)}
    single = dataclasses.replace(batch, **{k: (v[[i], :n] if k.startswith("fixation") else v[[i]])
                                           for k, v in one.items() if isinstance(v, torch.Tensor)},
                                 trial_id=[batch.trial_id[i]])
    with torch.no_grad():
        torch.testing.assert_close(model(batch)[i], model(single)[0], atol=1e-5, rtol=1e-4)


@pytest.mark.learns
@pytest.mark.parametrize("model_class, feature_set", [(BEyeLSTM, "beyelstm_global"), (FSE, "fse_global")],
                         ids=["BEyeLSTM", "FSE"])
def test_learns_reading_goal(model_class, feature_set, planted):
    """Trained briefly on CPU, each separates the planted goals on validation trials (AUROC >= 0.75)."""
    dm = ReadingDataModule(str(planted), task="reading_goal", n_folds=4, batch_size=16, trial_feature_set=feature_set)
    dm.setup("fit")
    torch.manual_seed(0)
    model = model_class(n_trial_features=dm.n_trial_features, dropout=0.1)
    model.set_class_weights(dm.class_counts)
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3)
    for _ in range(6):
        model.train()
        for batch in dm.train_dataloader():
            optimizer.zero_grad()
            model.loss(model(batch), batch.label).backward()
            optimizer.step()
    model.eval()
    with torch.no_grad():
        val = list(dm.val_dataloader())
        probs = torch.cat([model(b).softmax(-1)[:, 1] for b in val])
    labels = torch.cat([b.label for b in val])
    auroc = roc_auc_score(labels.numpy(), probs.numpy())
    print(f"{model_class.__name__} validation AUROC {auroc:.3f} on {len(labels)} trials")
    assert np.unique(labels.numpy()).size == 2 and auroc >= 0.75
