"""Bad model input gets a clear ReadgazeError, never a hub download or a deep traceback."""

from __future__ import annotations

import polars as pl
import pytest
from synthetic import write_synthetic_dataset

from readgaze.errors import ConfigError
from readgaze.models.data import ReadingDataModule
from readgaze.models.text_encoder import load_encoder, load_tokenizer
from readgaze.models.training.cv import cross_validate


def test_a_model_absent_from_the_local_cache_is_a_config_error_not_a_download(tmp_path):
    with pytest.raises(ConfigError, match="downloads nothing at run time"):
        load_tokenizer(str(tmp_path / "no-such-model"))
    with pytest.raises(ConfigError, match="'tiny'"):
        load_encoder(str(tmp_path / "no-such-model"))


def test_loading_an_encoder_is_quiet_unless_weights_are_missing(tmp_path, capfd, caplog):
    """MiniLM loads without transformers' report (it lists the pooler readgaze leaves out) or a progress bar; a
    checkpoint that lacks a weight is warned about, naming it."""
    import safetensors.torch
    from transformers import BertConfig, BertModel

    load_encoder("minilm")
    captured = capfd.readouterr()
    assert "LOAD REPORT" not in captured.err + captured.out and "Loading weights" not in captured.err
    assert not [r for r in caplog.records if r.name == "readgaze.models.text_encoder"]
    BertModel(BertConfig(hidden_size=32, num_hidden_layers=1, num_attention_heads=2, intermediate_size=32,
                         vocab_size=100)).save_pretrained(tmp_path)
    weights = safetensors.torch.load_file(tmp_path / "model.safetensors")
    del weights["encoder.layer.0.output.dense.weight"]
    safetensors.torch.save_file(weights, tmp_path / "model.safetensors", metadata={"format": "pt"})
    load_encoder(str(tmp_path))
    assert any("missing encoder.layer.0.output.dense.weight" in r.getMessage() for r in caplog.records)


def test_an_uncached_hub_name_fails_at_once_without_touching_the_network(monkeypatch):
    """Without HF_HUB_OFFLINE, transformers asked the hub for adapter_config.json 5 times (~70 s) before failing."""
    import socket

    import huggingface_hub

    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)  # read at import: the constant is what the hub checks
    monkeypatch.delenv("TRANSFORMERS_OFFLINE", raising=False)
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", False)
    asked = []

    def no_network(*args, **kwargs):
        asked.append(args[0] if args else kwargs)
        raise OSError("network used")

    monkeypatch.setattr(socket, "getaddrinfo", no_network)
    monkeypatch.setattr(socket, "create_connection", no_network)
    for load in (load_tokenizer, load_encoder):
        with pytest.raises(ConfigError, match="neither a local folder nor in the local Hugging Face cache"):
            load("readgaze-test/not-a-cached-model")
    assert asked == []


def test_cv_refuses_data_with_fewer_participants_or_items_than_folds_before_training(tmp_path):
    write_synthetic_dataset(tmp_path / "ds", n_participants=2, n_items=2, n_words=12, seed=1)
    config = tmp_path / "c.yaml"
    config.write_text("data:\n  task: reading_goal\n  n_folds: 10\n")
    with pytest.raises(ConfigError, match="2 participants and 2 items"):
        cross_validate(str(config), str(tmp_path / "ds"), out=str(tmp_path / "results"))
    assert not (tmp_path / "results").exists()


def test_a_single_class_label_is_warned_and_recorded(tmp_path):
    path = write_synthetic_dataset(tmp_path, n_participants=4, n_items=4, n_words=12, seed=2)
    trials = pl.read_parquet(path / "trials.parquet").with_columns(pl.lit(True).alias("is_correct"))
    trials.write_parquet(path / "trials.parquet")
    dm = ReadingDataModule(str(path), task="comprehension", n_folds=3, text_encoder="tiny")
    dm.setup("fit")
    assert dm.qc.total(reason="single_class_label", action="warning") == dm.trials.height


def test_goal_question_without_question_ids_names_the_column(tmp_path):
    path = write_synthetic_dataset(tmp_path, n_participants=4, n_items=4, n_words=12, seed=3)
    trials = pl.read_parquet(path / "trials.parquet")
    trials.drop([c for c in ("onestopqa_question_id",) if c in trials.columns]).write_parquet(path / "trials.parquet")
    with pytest.raises(ConfigError, match="onestopqa_question_id"):
        _ = ReadingDataModule(str(path), task="goal_question", text_encoder="tiny").num_classes
