"""The lab's known bugs (EyeBench / goal-decoding code), each tested where it lived so it cannot come back unnoticed.

One test (or two) per bug; each fails when the bug is put back in the named place:

1. PostFusion's fixation->text mask blocked every token (output = bias): ``PostFusionEye.forward`` itself.
2. Off-word fixations dropped before indexing shifted later fixations onto the next word: ``readgaze.models.data``.
3. Padding to a corpus-wide 815 fixations: ``readgaze.models.data.dataset.collate``.
4. ``freeze_text_encoder`` ignored, or the encoder run under ``no_grad``: every model with an encoder.
5. Class weights never applied: ``readgaze.models.base.ReadingModel`` (a loss value computed by hand; setup; the error).
6. Scalers fit beyond the training split, NaN filled from a neighbour trial: ``readgaze.models.data``.
7. ``cv`` testing the last checkpoint instead of the best-on-validation one: ``tests/test_training_cv.py``.
8. Ensembles fit on the rows they are scored on: ``tests/test_training_ensemble.py``.
"""

from __future__ import annotations

import importlib
import inspect
import math
import pkgutil
from pathlib import Path

import numpy as np
import polars as pl
import pytest
import torch
from synthetic import write_synthetic_dataset

import readgaze.models
from readgaze.errors import ConfigError
from readgaze.models.base import ReadingModel
from readgaze.models.data import ReadingDataModule
from readgaze.models.data.batch import OFF_TEXT
from readgaze.models.postfusion_eye import PostFusionEye

pytestmark = pytest.mark.usefixtures("one_torch_thread")


@pytest.fixture(scope="module")
def dataset(tmp_path_factory) -> Path:
    return write_synthetic_dataset(tmp_path_factory.mktemp("bugs"), n_participants=6, n_items=6, n_words=16,
                                   off_text_rate=0.15)


@pytest.fixture(scope="module")
def datamodule(dataset) -> ReadingDataModule:
    dm = ReadingDataModule(str(dataset), task="reading_goal", n_folds=3, batch_size=8)
    dm.setup("fit")
    return dm


@pytest.fixture(scope="module")
def batch(datamodule):
    return next(iter(datamodule.train_dataloader()))


# ---- 1. PostFusion: every on-text fixation attends to its own word's tokens, through forward ----
def test_postfusion_forward_attends_to_each_fixations_word_and_not_only_the_bias(batch, datamodule):
    torch.manual_seed(0)
    model = PostFusionEye(text_encoder="tiny", n_fixation_features=datamodule.n_fixation_features, window=0,
                          cross_attention_dropout=0.0).eval()
    seen = {}
    model.fixation_to_text.register_forward_hook(lambda module, args, out: seen.update(args=args, out=out))
    model(batch)
    fixations, text, key_mask, band, _ = seen["args"]
    start, end = band
    on = (batch.fixation_word_index >= 0) & batch.fixation_mask  # (B, F)
    assert on.sum() > 50
    word = batch.fixation_word_index.clamp(min=0)
    word_start = torch.gather(batch.word_token_start, 1, word)
    word_end = torch.gather(batch.word_token_end, 1, word)
    assert (word_end[on] > word_start[on]).all()
    assert (start[on] <= word_start[on]).all() and (end[on] >= word_end[on]).all()  # covers the word's tokens
    assert (end[on] - start[on] <= (word_end - word_start)[on]).all()  # window 0: nothing else
    # the module's output is softmax attention over exactly that band (recomputed here from its inputs) ...
    module = model.fixation_to_text
    q, k, v = module.q(fixations), module.k(text), module.v(text)
    token = torch.arange(text.shape[1])
    allowed = (token >= start[..., None]) & (token < end[..., None]) & key_mask[:, None, :]
    scores = (q @ k.transpose(1, 2)) / math.sqrt(q.shape[-1])
    expected = module.out(torch.softmax(scores.masked_fill(~allowed, float("-inf")), dim=-1).nan_to_num() @ v)
    torch.testing.assert_close(seen["out"][on], expected[on], atol=1e-5, rtol=1e-4)
    # ... and not the bias-only output of an all-blocked mask (the lab bug)
    bias_only = module.out(torch.zeros(module.out.in_features))
    assert (seen["out"][on] - bias_only).abs().amax(dim=-1).min() > 1e-4


# ---- 2. Off-word fixations keep their row; later fixations keep their own word ----
def test_fixations_keep_their_own_word_after_an_off_text_fixation(datamodule, dataset):
    fixations = pl.read_parquet(dataset / "fixations.parquet").sort("trial_id", "fixation_index")
    items = datamodule._datasets["train"]
    checked = 0
    for i in range(len(items)):
        item = items[i]
        raw = fixations.filter(pl.col("trial_id") == item["trial_id"])["word_index"].fill_null(OFF_TEXT).to_numpy()
        assert item["fixation_word_index"].tolist() == raw.tolist(), item["trial_id"]
        off = np.flatnonzero(raw[:-1] == OFF_TEXT)
        checked += int((raw[off + 1] >= 0).sum())
    assert checked >= 3  # on-text fixations right after an off-text one


# ---- 3. No corpus-wide padding: the batch's longest sequence sets the width ----
def test_batches_pad_to_their_longest_sequence_not_to_815(batch):
    assert batch.fixation_features.shape[1] == int(batch.fixation_mask.sum(1).max())
    assert batch.fixation_word_index.shape[1] == int(batch.fixation_mask.sum(1).max()) < 815
    assert batch.input_ids.shape[1] == int(batch.attention_mask.sum(1).max())
    assert batch.word_features.shape[1] == int(batch.word_mask.sum(1).max())


# ---- 4. Freezing freezes, unfreezing trains: every model with freeze_text_encoder ----
def _models_with_encoder() -> list[type]:
    found = {}
    for info in pkgutil.iter_modules(readgaze.models.__path__):
        try:
            module = importlib.import_module(f"readgaze.models.{info.name}")
        except Exception:  # noqa: BLE001 - a half-written module of another helper must not hide the others
            continue
        for _, cls in inspect.getmembers(module, inspect.isclass):
            if (issubclass(cls, ReadingModel) and cls is not ReadingModel and cls.__module__ == module.__name__
                    and "freeze_text_encoder" in inspect.signature(cls.__init__).parameters):
                found[cls.__name__] = cls
    return [found[name] for name in sorted(found)]


ENCODER_MODELS = _models_with_encoder()


def _build(cls, datamodule, freeze: bool) -> ReadingModel:
    wanted = {"text_encoder": "tiny", "freeze_text_encoder": freeze, "num_classes": datamodule.num_classes,
              "n_fixation_features": datamodule.n_fixation_features, "n_trial_features": datamodule.n_trial_features,
              "n_word_features": datamodule.n_word_features, "warmup_ratio": 0.0, "learning_rate": 1e-2}
    accepted = inspect.signature(cls.__init__).parameters
    torch.manual_seed(0)
    return cls(**{k: v for k, v in wanted.items() if k in accepted})


def _encoder(model: ReadingModel) -> torch.nn.Module:
    from transformers import PreTrainedModel

    encoders = [m for m in model.modules() if isinstance(m, PreTrainedModel)]
    assert encoders, f"{type(model).__name__} has freeze_text_encoder but no transformers encoder"
    return encoders[0]


def _frozen_part(encoder) -> dict[str, torch.Tensor]:
    """Encoder weights a frozen model must keep (RoBERTEye-F trains its token-type rows by design)."""
    return {n: p.detach().clone() for n, p in encoder.named_parameters() if "token_type_embeddings" not in n}


def test_the_registry_finds_the_models_with_an_encoder():
    names = {cls.__name__ for cls in ENCODER_MODELS}
    assert {"PostFusionEye", "RoBERTEyeF", "TextOnly"} <= names


@pytest.mark.parametrize("cls", ENCODER_MODELS, ids=lambda c: c.__name__)
def test_freeze_text_encoder_freezes_and_unfreezing_trains(cls, datamodule, batch):
    for freeze in (True, False):
        model = _build(cls, datamodule, freeze).train()
        encoder = _encoder(model)
        before = _frozen_part(encoder)
        optimizer = model.configure_optimizers()
        optimizer = optimizer["optimizer"] if isinstance(optimizer, dict) else optimizer
        loss = model.loss(model(batch), batch.label)
        loss.backward()
        grads = [p.grad for n, p in encoder.named_parameters() if n in before]
        optimizer.step()
        changed = [n for n, p in encoder.named_parameters() if n in before and not torch.equal(p, before[n])]
        if freeze:
            assert all(g is None or not g.any() for g in grads), cls.__name__
            assert changed == [], f"{cls.__name__}: frozen encoder weights moved: {changed[:3]}"
        else:  # a no_grad encoder (the PLM-AS bug) gets no gradient and never moves
            assert sum(int(g is not None and bool(g.any())) for g in grads) > len(grads) // 2, cls.__name__
            assert len(changed) > len(before) // 2, f"{cls.__name__}: unfrozen encoder did not train"


# ---- 5. Class weights: applied in the loss, set from the training counts, or the run stops ----
class _Constant(ReadingModel):
    def __init__(self, num_classes: int = 2, n_trial_features: int = 1, class_weighted_loss: bool = True) -> None:
        super().__init__(num_classes=num_classes, class_weighted_loss=class_weighted_loss)
        self.linear = torch.nn.Linear(n_trial_features, num_classes)

    def forward(self, batch):
        return self.linear(batch.trial_features)


def test_class_weighted_loss_equals_the_hand_computed_value():
    model = _Constant()
    weights = model.set_class_weights(torch.tensor([3, 1]))
    assert weights.tolist() == pytest.approx([4 / 3, 4.0])
    logits = torch.tensor([[2.0, 0.0], [0.0, 1.0], [1.0, 1.0], [0.5, -0.5]])
    label = torch.tensor([0, 1, 1, 0])
    # weighted mean of -log p(y): sum_i w_{y_i} nll_i / sum_i w_{y_i}
    nll = [math.log(1 + math.exp(-2.0)), math.log(1 + math.exp(-1.0)), math.log(2.0), math.log(1 + math.exp(-1.0))]
    w = [4 / 3, 4.0, 4.0, 4 / 3]
    by_hand = sum(wi * li for wi, li in zip(w, nll)) / sum(w)
    assert model.loss(logits, label).item() == pytest.approx(by_hand, rel=1e-6)
    assert abs(by_hand - sum(nll) / 4) > 0.01  # the unweighted loss differs


def test_fit_sets_the_class_weights_from_the_training_counts(datamodule, tmp_path):
    import lightning as L

    from readgaze.models.training.callbacks import RunWriter

    model = _Constant(n_trial_features=datamodule.n_trial_features)
    trainer = L.Trainer(max_steps=1, logger=False, enable_checkpointing=False, enable_progress_bar=False,
                        enable_model_summary=False, limit_val_batches=0, default_root_dir=tmp_path,
                        callbacks=[RunWriter()])  # the run folder's writer (the CLI adds it)
    counts = datamodule.class_counts.to(torch.float32)
    trainer.fit(model, datamodule=datamodule)
    assert model.class_weights.tolist() == pytest.approx((counts.sum() / counts).tolist())
    assert (tmp_path / "qc.json").is_file()  # the run folder records the datamodule's QC


def test_fit_without_a_datamodule_stops_instead_of_training_unweighted(batch, tmp_path):
    import lightning as L

    model = _Constant(n_trial_features=batch.trial_features.shape[1])
    trainer = L.Trainer(max_steps=1, logger=False, enable_checkpointing=False, enable_progress_bar=False,
                        enable_model_summary=False, default_root_dir=tmp_path)
    loader = torch.utils.data.DataLoader([batch], batch_size=None)
    with pytest.raises(ConfigError, match="class_weighted_loss"):
        trainer.fit(model, train_dataloaders=loader)


# ---- 6. Scalers see training trials only; missing values are never filled from another trial ----
def test_scaled_training_features_do_not_depend_on_validation_or_test_trials(dataset, datamodule, tmp_path):
    other = tmp_path / "changed"
    other.mkdir()
    held_out = datamodule.trials.filter(pl.col("split") != "train")["trial_id"]
    for name in ("trials", "words", "word_measures"):
        pl.read_parquet(dataset / f"{name}.parquet").write_parquet(other / f"{name}.parquet")
    fixations = pl.read_parquet(dataset / "fixations.parquet")
    fixations.with_columns(pl.when(pl.col("trial_id").is_in(held_out.implode()))
                           .then(pl.col("duration_ms") * 10).otherwise(pl.col("duration_ms"))
                           .alias("duration_ms")).write_parquet(other / "fixations.parquet")
    changed = ReadingDataModule(str(other), task="reading_goal", n_folds=3, batch_size=8)
    changed.setup("fit")
    train = datamodule._datasets["train"]
    for i in range(len(train)):
        np.testing.assert_array_equal(train[i]["fixation"], changed._datasets["train"][i]["fixation"])
        np.testing.assert_array_equal(train[i]["trial"], changed._datasets["train"][i]["trial"])
    val = datamodule._datasets["val"]
    assert not np.array_equal(val[0]["fixation"], changed._datasets["val"][0]["fixation"])


def test_a_missing_word_measure_is_flagged_not_copied_from_the_previous_trial(datamodule, dataset):
    from readgaze.features import WORD_FEATURES

    column = WORD_FEATURES.index("first_fixation_duration_ms")
    indicator = WORD_FEATURES.index("first_fixation_duration_ms_missing")
    measures = pl.read_parquet(dataset / "word_measures.parquet")
    train = datamodule._datasets["train"]
    checked = 0
    for i in range(len(train)):
        item = train[i]
        rows = measures.filter(pl.col("trial_id") == item["trial_id"]).sort("word_index")
        missing = rows["first_fixation_duration_ms"].is_null().to_numpy()
        words = rows["word_index"].to_numpy()
        assert (item["word"][words[missing], indicator] == 1).all()
        assert (item["word"][words[missing], column] == 0).all()
        assert (item["word"][words[~missing], indicator] == 0).all()
        checked += int(missing.sum())
    assert checked > 10
