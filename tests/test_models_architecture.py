"""Models as architecture: the six training arguments live in ``ReadingModel`` (a model names only the ones whose
default is its paper's), the text encoder is loaded and frozen in one place, and no model file imports a helper
from another model's file (shared layers: ``models/layers.py``). Checkpoints whose hyperparameters were saved by
readgaze 0.3 (every argument named in the model's own signature) still load."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import lightning
import pytest
import torch

from readgaze.models.ahn_cnn import AhnCNN
from readgaze.models.base import ReadingModel, init_arguments
from readgaze.models.fse import FSE
from readgaze.models.plm_as import PLMAS
from readgaze.models.roberteye_w import RoBERTEyeW
from readgaze.models.text_encoder import load_encoder
from readgaze.models.text_only import TextOnly
from readgaze.models.training.registry import MODEL_FOLDER, MODELS

TRAINING = ["num_classes", "learning_rate", "weight_decay", "warmup_ratio", "class_weighted_loss", "predictions_dir"]


@pytest.mark.parametrize("entry", [e for e in MODELS if e.kind == "neural"], ids=lambda e: e.config)
def test_every_model_takes_the_six_training_arguments_by_name(entry):
    cls = entry.load()
    assert set(TRAINING) <= set(init_arguments(cls))
    defaults = {k: p.default for k, p in inspect.signature(cls.__init__).parameters.items()}
    base = {k: p.default for k, p in inspect.signature(ReadingModel.__init__).parameters.items()}
    # a training argument named in a model's signature is there for its own default, never the base's again
    assert [k for k in TRAINING if k in defaults and defaults[k] == base[k]] == []


def test_training_arguments_reach_the_base_and_shape_the_model():
    assert (TextOnly().learning_rate, TextOnly().weight_decay, TextOnly().warmup_ratio) == (1e-5, 0.1, 0.1)
    model = AhnCNN(num_classes=3, learning_rate=0.2, class_weighted_loss=False)
    assert (model.num_classes, model.learning_rate, model.class_weighted_loss) == (3, 0.2, False)
    assert model.head[-1].out_features == 3 and model.class_weights.shape == (3,)
    assert model.hparams["num_classes"] == 3 and model.hparams["learning_rate"] == 0.2


@pytest.mark.parametrize("cls, old", [
    (RoBERTEyeW, {"text_encoder": "tiny", "n_word_features": 30, "eye_projection_dropout": 0.3,
                  "freeze_text_encoder": False, "head_dropout": 0.1, "num_classes": 3, "learning_rate": 2e-5,
                  "weight_decay": 0.1, "warmup_ratio": 0.1, "class_weighted_loss": True, "predictions_dir": None,
                  "gaze_word_embedding": False}),
    (FSE, {"n_trial_features": 14, "hidden_size": 8, "dropout": 0.5, "fc1_size": 50, "fc2_size": 20,
           "global_out_size": 32, "after_concat_size": 32, "num_classes": 3, "learning_rate": 0.01,
           "weight_decay": 0.0, "warmup_ratio": 0.0, "class_weighted_loss": True, "predictions_dir": None}),
], ids=["roberteye_w", "fse"])
def test_a_checkpoint_saved_before_loads_and_a_new_one_keeps_the_training_arguments(cls, old, tmp_path):
    model = cls(**old)
    checkpoint = {"state_dict": model.state_dict(), "hyper_parameters": dict(model.hparams),
                  "pytorch-lightning_version": lightning.__version__}
    model.on_save_checkpoint(checkpoint)  # keeps the six (reached through **training), drops what it does not take
    assert checkpoint["hyper_parameters"] == old
    path = tmp_path / "old.ckpt"
    torch.save({**checkpoint, "hyper_parameters": old}, path)  # what readgaze 0.3 wrote: the same keys
    loaded = cls.load_from_checkpoint(path, map_location="cpu", weights_only=False)
    assert (loaded.num_classes, loaded.learning_rate) == (3, old["learning_rate"])
    for name, value in model.state_dict().items():
        assert torch.equal(loaded.state_dict()[name], value), name


def test_the_encoder_is_loaded_and_frozen_in_one_place():
    assert not any(p.requires_grad for p in load_encoder("tiny", freeze=True).parameters())
    assert all(p.requires_grad for p in load_encoder("tiny").parameters())
    assert not any(p.requires_grad for p in PLMAS(freeze_text_encoder=True).encoder.parameters())
    assert all(p.requires_grad for p in TextOnly(freeze_text_encoder=False).encoder.parameters())
    sources = {path.stem: path.read_text(encoding="utf-8") for path in MODEL_FOLDER.glob("*.py")}
    assert [stem for stem, text in sources.items() if ".requires_grad_(not " in text] == ["text_encoder"]


def test_no_model_file_imports_a_helper_from_another_model_file():
    """A model file may extend another model (FSE is BEyeLSTM without its text blocks); anything else shared lives
    in ``models/layers.py``, ``base.py`` or ``text_encoder.py``."""
    model_files = {e.target.split(".")[2] for e in MODELS}
    problems = []
    for path in sorted(Path(MODEL_FOLDER).glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        bases = {b.id for node in tree.body if isinstance(node, ast.ClassDef) for b in node.bases
                 if isinstance(b, ast.Name)}
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("readgaze.models."):
                stem = node.module.split(".")[2]
                if stem in model_files and stem != path.stem:
                    problems += [f"{path.name}: {a.name} from {stem}" for a in node.names if a.name not in bases]
    assert problems == []
