"""DalEye: a causal language model that reads the scanpath as text and writes the reader's question.

Reference: Shubi et al., *Decoding open-ended information seeking goals from eye movements in reading*,
arXiv:2505.02872 (ICLR 2026), "DalEye-Llama": Llama-3.1-8B loaded in 4 bits, LoRA (r = 16 on the q, k, v, o, up,
down and gate projections), 2 epochs at learning rate 1e-4. The scanpath enters the LM **as text**, one line per
fixation ``word index, word, duration ms, next-saccade direction`` (:mod:`readgaze.models.data.goal`); the paper found
word-level summaries lost most of the signal (question-word accuracy .185 vs .674).

Prompt (``use_scanpath=False``, the text-only twin, drops the scanpath block and nothing else)::

    Paragraph: <the paragraph's words>
    Scanpath (word index, word, duration ms, next saccade):
    <one line per fixation>
    Question: <target question><eos>

Training minimises the cross-entropy of the question tokens only (prompt tokens are not scored). At test time
the model (1) generates a question (greedy, or beam search with ``num_beams > 1``) and (2) scores each of the
paragraph's candidate questions by its log-likelihood, ``sum_t log p(q_t | prompt, q_<t)`` including the end token,
which makes it a goal-*selection* model as well (the paper's "log-likelihood scoring").

Departures: the prompt is truncated from the left (the paragraph's start first) when it exceeds
``max_prompt_tokens``, counted and warned once per split; ``language_model="tiny"`` is a randomly initialised
2-layer GPT-2 with the offline MiniLM WordPiece tokenizer (lower-cased), for tests and CPU runs only.

Outputs (test split, in the predictions folder): ``generations_test.parquet`` (``trial_id``, ``regime``,
``reference``, ``generated``, ``candidates``, ``candidate_loglik``, ``selected``, ``label``, ``fold_index``,
``participant_id``, ``item_id``, ``model``) and ``predictions_test.parquet`` (the selection as class probabilities
over the candidates, the format :func:`readgaze.metrics.evaluate` reads).
"""

from __future__ import annotations

import importlib.util
import logging
from pathlib import Path

import polars as pl
import torch
import torch.nn.functional as F

from readgaze.errors import ConfigError
from readgaze.models.base import ReadingModel
from readgaze.models.data.batch import REGIMES
from readgaze.models.text_encoder import TINY, load_tokenizer

log = logging.getLogger(__name__)
SCANPATH_TITLE = "Scanpath (word index, word, duration ms, next saccade):"


def build_prompt(paragraph: str, scanpath: str | None) -> str:
    """The prompt of the module docstring; ``scanpath`` None for the text-only twin.

    ``scanpath`` is :func:`readgaze.models.data.goal.scanpath_lines`' text (its first line is the column header, which
    the
    prompt's scanpath title replaces).
    """
    parts = [f"Paragraph: {paragraph}"]
    if scanpath is not None:
        lines = scanpath.split("\n", 1)
        parts += [SCANPATH_TITLE, lines[1] if len(lines) > 1 else ""]
    parts.append("Question:")
    return "\n".join(parts)


def load_language_model(name: str, *, load_in_4bit: bool = False, lora_rank: int = 0, lora_alpha: int = 32,
                        lora_dropout: float = 0.05, lora_target_modules: list[str] | None = None):
    """``(model, tokenizer)``: a causal LM from a local folder or cached name, or the tiny random GPT-2.

    4-bit loading (bitsandbytes NF4, bf16 compute) is used only when a CUDA GPU and ``bitsandbytes`` are
    present; asked for elsewhere, the model loads in full precision with a warning. ``lora_rank > 0`` wraps the
    model in peft LoRA adapters (only they train); ``lora_target_modules`` None lets peft pick the model type's
    defaults (Llama: q/k/v projections; the paper adds o, up, down, gate: set them in the YAML).
    """
    from transformers import AutoModelForCausalLM, AutoTokenizer, GPT2Config, GPT2LMHeadModel

    four_bit = load_in_4bit and torch.cuda.is_available() and importlib.util.find_spec("bitsandbytes") is not None
    if load_in_4bit and (not four_bit or name == TINY):
        log.warning("load_in_4bit needs a pretrained LM, a CUDA GPU and bitsandbytes; loading %s in full "
                    "precision", name)
    if name == TINY:
        tokenizer = load_tokenizer(TINY)
        config = GPT2Config(vocab_size=len(tokenizer), n_embd=64, n_layer=2, n_head=2, n_positions=2048,
                            bos_token_id=tokenizer.cls_token_id, eos_token_id=tokenizer.sep_token_id,
                            pad_token_id=tokenizer.pad_token_id)
        model = GPT2LMHeadModel(config)
    else:
        tokenizer = _local(AutoTokenizer.from_pretrained, name)
        kwargs = {}
        if four_bit:
            from transformers import BitsAndBytesConfig

            kwargs["quantization_config"] = BitsAndBytesConfig(
                load_in_4bit=True, bnb_4bit_quant_type="nf4", bnb_4bit_compute_dtype=torch.bfloat16)
        model = _local(AutoModelForCausalLM.from_pretrained, name, **kwargs)
        if four_bit:
            from peft import prepare_model_for_kbit_training

            model = prepare_model_for_kbit_training(model)
    if tokenizer.pad_token_id is None:
        tokenizer.pad_token = tokenizer.eos_token
    if lora_rank > 0:
        from peft import LoraConfig, get_peft_model

        model = get_peft_model(model, LoraConfig(r=lora_rank, lora_alpha=lora_alpha, lora_dropout=lora_dropout,
                                                 target_modules=lora_target_modules, task_type="CAUSAL_LM"))
    return model, tokenizer


def _local(load, name: str, **kwargs):
    """``load(name)`` from local files only, with a clear error if the model is not on disk."""
    try:
        return load(name, local_files_only=True, **kwargs)
    except OSError as error:
        raise ConfigError(f"language_model {name!r} is neither a local folder nor in the local Hugging Face cache "
                          f"(readgaze downloads nothing at run time); use 'tiny' (random, for CPU tests) or a "
                          f"local model folder", column="language_model") from error


class DalEye(ReadingModel):
    """Gaze-conditioned question generator (and log-likelihood goal selector).

    Parameters
    ----------
    language_model : str
        ``"tiny"`` (random 2-layer GPT-2, CPU tests) or a local folder / cached name of a causal LM (the paper:
        Llama-3.1-8B). Nothing is downloaded.
    use_scanpath : bool
        False: the text-only twin (paragraph only), the baseline a gaze model must beat.
    lora_rank, lora_alpha, lora_dropout, lora_target_modules
        LoRA adapters through peft; ``lora_rank=0`` fine-tunes every weight (the tiny LM).
    load_in_4bit : bool
        4-bit weights where a GPU and bitsandbytes are present (see :func:`load_language_model`).
    max_prompt_tokens : int
        Longer prompts are cut from the left.
    max_new_tokens, num_beams, length_penalty
        Decoding: greedy when ``num_beams == 1``, else beam search.
    score_candidates : bool
        Also score the paragraph's candidate questions (goal selection) at test time.
    num_classes, learning_rate, weight_decay, warmup_ratio, predictions_dir
        See :class:`readgaze.models.base.ReadingModel` (``num_classes``: most candidates per paragraph, linked from
        data).
    """

    CARD = {  # the registry reads this (readgaze models, the zoo and learns tests): no other file to edit
        "name": "DalEye (goal reconstruction)",
        "tasks": ("goal_reconstruction",),
        "paper": "Shubi et al. 2026, ICLR, arXiv:2505.02872",
        "quick": {"learning_rate": 3e-3},
        "kind": "generator",
    }

    def __init__(self, language_model: str = TINY, use_scanpath: bool = True, lora_rank: int = 0,
                 lora_alpha: int = 32, lora_dropout: float = 0.05, lora_target_modules: list[str] | None = None,
                 load_in_4bit: bool = False, max_prompt_tokens: int = 2048, max_new_tokens: int = 32,
                 num_beams: int = 1, length_penalty: float = 1.0, score_candidates: bool = True,
                 num_classes: int = 3, learning_rate: float = 1e-4, weight_decay: float = 0.0,
                 warmup_ratio: float = 0.0, predictions_dir: str | None = None) -> None:
        super().__init__(num_classes, learning_rate, weight_decay, warmup_ratio, False, predictions_dir)
        self.save_hyperparameters()
        self.use_scanpath, self.max_prompt_tokens = use_scanpath, max_prompt_tokens
        self.max_new_tokens, self.num_beams, self.length_penalty = max_new_tokens, num_beams, length_penalty
        self.score_candidates = score_candidates
        self.lm, self.tokenizer = load_language_model(language_model, load_in_4bit=load_in_4bit,
                                                      lora_rank=lora_rank, lora_alpha=lora_alpha,
                                                      lora_dropout=lora_dropout,
                                                      lora_target_modules=lora_target_modules)
        self.strict_loading = lora_rank == 0  # LoRA checkpoints keep the adapters only
        self._truncated = 0

    @property
    def model_name(self) -> str:
        return "DalEye" if self.use_scanpath else "DalEyeTextOnly"

    # ---- tokenisation ----
    def _ids(self, text: str) -> list[int]:
        return self.tokenizer(text, add_special_tokens=False)["input_ids"]

    def _prompt_ids(self, batch: dict) -> list[list[int]]:
        bos = [self.tokenizer.bos_token_id] if self.tokenizer.bos_token_id is not None else []
        out = []
        for paragraph, scanpath in zip(batch["paragraph"], batch["scanpath"]):
            ids = self._ids(build_prompt(paragraph, scanpath if self.use_scanpath else None))
            if len(ids) + len(bos) > self.max_prompt_tokens:
                self._truncated += 1
                ids = ids[len(ids) + len(bos) - self.max_prompt_tokens:]
            out.append(bos + ids)
        return out

    def _target_ids(self, question: str) -> list[int]:
        return self._ids(" " + question.strip()) + [self.tokenizer.eos_token_id or self.tokenizer.sep_token_id]

    def _left_pad(self, sequences: list[list[int]]) -> tuple[torch.Tensor, torch.Tensor]:
        """``(B, L)`` ids and bool mask, left-padded so every sequence ends at the last position."""
        longest = max(len(s) for s in sequences)
        ids = torch.full((len(sequences), longest), self.tokenizer.pad_token_id, dtype=torch.long)
        mask = torch.zeros((len(sequences), longest), dtype=torch.bool)
        for i, s in enumerate(sequences):
            ids[i, longest - len(s):] = torch.as_tensor(s)
            mask[i, longest - len(s):] = True
        return ids.to(self.device), mask.to(self.device)

    # ---- scoring ----
    def target_logprobs(self, prompts: list[list[int]], targets: list[list[int]]) -> torch.Tensor:
        """``(B,)`` summed log-probability of each target given its prompt (prompt tokens not scored).

        B sequences ``prompt + target``, left-padded; only the last ``T + 1`` positions (T the longest target)
        go through the LM head.
        """
        ids, mask = self._left_pad([p + t for p, t in zip(prompts, targets)])  # (B, L)
        longest = max(len(t) for t in targets)
        positions = (mask.long().cumsum(-1) - 1).clamp(min=0)
        logits = self.lm(input_ids=ids, attention_mask=mask.long(), position_ids=positions,
                         logits_to_keep=longest + 1).logits[:, :-1].float()  # (B, T, V) predict the last T tokens
        labels = ids[:, -longest:].clone()
        scored = torch.zeros_like(labels, dtype=torch.bool)
        for i, t in enumerate(targets):
            scored[i, longest - len(t):] = True
        token_logp = torch.log_softmax(logits, -1).gather(-1, labels.unsqueeze(-1)).squeeze(-1)  # (B, T)
        return (token_logp * scored).sum(-1), scored.sum(-1)

    def loss_of(self, batch: dict) -> torch.Tensor:
        """Mean cross-entropy per question token of the batch."""
        logp, n_tokens = self.target_logprobs(self._prompt_ids(batch), [self._target_ids(q) for q in batch["question"]])
        return -logp.sum() / n_tokens.sum()

    def training_step(self, batch: dict, batch_index: int) -> torch.Tensor:
        loss = self.loss_of(batch)
        self.log("loss/train", loss, batch_size=len(batch["trial_id"]), prog_bar=True)
        return loss

    def validation_step(self, batch: dict, batch_index: int) -> None:
        self.log("loss/val", self.loss_of(batch), batch_size=len(batch["trial_id"]), prog_bar=True)

    @torch.no_grad()
    def generate(self, batch: dict) -> list[str]:
        """One question per trial: greedy (``num_beams=1``) or beam search, at most ``max_new_tokens``."""
        ids, mask = self._left_pad(self._prompt_ids(batch))
        eos = self.tokenizer.eos_token_id or self.tokenizer.sep_token_id
        out = self.lm.generate(input_ids=ids, attention_mask=mask.long(), max_new_tokens=self.max_new_tokens,
                               num_beams=self.num_beams, length_penalty=self.length_penalty, do_sample=False,
                               eos_token_id=eos, pad_token_id=self.tokenizer.pad_token_id)
        return [s.strip() for s in self.tokenizer.batch_decode(out[:, ids.shape[1]:], skip_special_tokens=True)]

    @torch.no_grad()
    def candidate_loglik(self, batch: dict) -> list[list[float]]:
        """Per trial, the log-likelihood of each of its candidate questions."""
        prompts = self._prompt_ids(batch)
        pairs = [(i, q) for i, candidates in enumerate(batch["candidates"]) for q in candidates]
        logp, _ = self.target_logprobs([prompts[i] for i, _ in pairs], [self._target_ids(q) for _, q in pairs])
        out = [[] for _ in prompts]
        for (i, _), value in zip(pairs, logp.tolist()):
            out[i].append(value)
        return out

    def test_step(self, batch: dict, batch_index: int) -> None:
        generated = self.generate(batch)
        loglik = self.candidate_loglik(batch) if self.score_candidates else [[] for _ in generated]
        for i, trial_id in enumerate(batch["trial_id"]):
            self._outputs.append({"trial_id": trial_id, "regime": REGIMES[batch["regime"][i]],
                                  "reference": batch["question"][i], "generated": generated[i],
                                  "candidates": batch["candidates"][i], "candidate_loglik": loglik[i],
                                  "label": int(batch["label"][i])})

    def on_validation_epoch_end(self) -> None:
        self._warn_truncated("val")

    def on_test_epoch_end(self) -> None:
        self._warn_truncated("test")
        outputs, self._outputs = self._outputs, []
        if not outputs or self.trainer.global_rank != 0:
            return
        frame = pl.DataFrame(outputs, schema_overrides={"candidate_loglik": pl.List(pl.Float64)})
        frame = frame.with_columns(
            selected=pl.col("candidate_loglik").list.arg_max().cast(pl.Int64),
            model=pl.lit(self.model_name), split=pl.lit("test"))
        datamodule = getattr(self.trainer, "datamodule", None)
        if datamodule is not None and getattr(datamodule, "trials", None) is not None:
            frame = frame.join(datamodule.trials.select("trial_id", "fold_index", "participant_id", "item_id"),
                               on="trial_id", how="left")
        directory = Path(self.predictions_dir or getattr(self.logger, "log_dir", None) or self.trainer.default_root_dir)
        directory.mkdir(parents=True, exist_ok=True)
        frame.write_parquet(directory / "generations_test.parquet")
        if self.score_candidates:
            self._write_selection(frame, directory)

    def _write_selection(self, frame: pl.DataFrame, directory: Path) -> None:
        """The candidate scores as class probabilities (softmax; padded with 0 to ``num_classes``)."""
        probs = [F.pad(torch.softmax(torch.tensor(v, dtype=torch.float64), 0), (0, self.num_classes - len(v))).tolist()
                 for v in frame["candidate_loglik"].to_list()]
        columns = [c for c in ("trial_id", "label", "regime", "fold_index", "participant_id", "item_id", "split",
                               "model") if c in frame.columns]
        frame.select(columns).with_columns(pl.Series("prediction_prob", probs,
                                                     dtype=pl.List(pl.Float64))).write_parquet(
            directory / "predictions_test.parquet")

    def _warn_truncated(self, split: str) -> None:
        if self._truncated:
            log.warning("%s: %d prompts longer than max_prompt_tokens=%d were cut from the left", split,
                        self._truncated, self.max_prompt_tokens)
        self._truncated = 0

    def on_save_checkpoint(self, checkpoint: dict) -> None:
        """Hyperparameters as the base class; with LoRA only the trainable (adapter) weights are kept."""
        super().on_save_checkpoint(checkpoint)
        if not self.strict_loading:
            trainable = {name for name, p in self.named_parameters() if p.requires_grad}
            checkpoint["state_dict"] = {k: v for k, v in checkpoint["state_dict"].items() if k in trainable}

    def predict_step(self, batch: dict, batch_index: int) -> list[str]:
        return self.generate(batch)
