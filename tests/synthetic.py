"""A tiny synthetic dataset folder with a planted signal, for tests and offline runs.

:func:`write_synthetic_dataset` writes exactly what ``readgaze prep`` writes (``trials.parquet``, ``words.parquet``,
``fixations.parquet``, ``word_measures.parquet``, ``manifest.json``) for a made-up OneStop-like study: every
participant reads every item (one paragraph each) once, and the reading goal is constant per participant, as in
OneStop.

Planted signals (so a model that uses the scanpath can beat reading speed on *new participants*):

* reading goal: information seekers regress ``regression_rate_information_seeking`` of the time (ordinary readers
  ``regression_rate_ordinary``), dwell longer on the critical span of their question and skip more elsewhere; the
  participant's overall speed factor is drawn from the same distribution for both goals, so reading speed carries
  little of the label;
* comprehension: the probability of a correct answer grows with the share of reading time spent in the critical span.

The simulation loops over trials and fixations in Python: it is a fixture generator for a few hundred trials, not
library code for real data.

:func:`write_planted_corpus` instead runs :func:`readgaze.simulate.simulate_corpus` (the OneStop-like reader) through
the real preparation pipeline, and :func:`fit_briefly` trains any :class:`~readgaze.models.base.ReadingModel` on it for
a few
epochs on CPU and returns its validation metrics per regime: the ``learns`` tests (``tests/test_models_learn.py``).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import polars as pl

from readgaze.schema import cast

_SYLLABLES = ("ba", "ko", "ri", "tu", "me", "sa", "lin", "dor", "ven", "qua", "pel", "mi")
_CHAR_WIDTH_PX, _LINE_HEIGHT_PX, _LINE_WIDTH_PX, _TOP_PX, _LEFT_PX = 12.0, 60.0, 900.0, 100.0, 50.0


def write_synthetic_dataset(
    path: str | Path,
    n_participants: int = 20,
    n_items: int = 10,
    n_words: int = 40,
    seed: int = 0,
    regression_rate_ordinary: float = 0.05,
    regression_rate_information_seeking: float = 0.30,
    off_text_rate: float = 0.03,
) -> Path:
    """Write a synthetic dataset folder and return its path.

    Parameters
    ----------
    path : str or Path
        Folder to create (parents too); existing files of the same names are overwritten.
    n_participants, n_items : int
        Every participant reads every item once: ``n_participants * n_items`` trials. Participants alternate
        between the two reading goals (even index: ordinary, odd: information seeking).
    n_words : int
        Words per paragraph; each item has one paragraph and three questions with distinct critical spans.
    seed : int
        The one source of randomness.
    regression_rate_ordinary, regression_rate_information_seeking : float
        Probability of a regression after each fixated word, per goal.
    off_text_rate : float
        Probability of a fixation off the text (``word_index`` null) after each fixated word.
    """
    rng = np.random.default_rng(seed)
    out = Path(path)
    out.mkdir(parents=True, exist_ok=True)
    words = pl.concat([_layout(f"item{i:02d}_p0", rng, n_words) for i in range(n_items)])
    spans = {i: _question_spans(rng, n_words) for i in range(n_items)}
    trials, fixations, measures = [], [], []
    for p in range(n_participants):
        goal = "information_seeking" if p % 2 else "ordinary"
        speed = float(np.exp(rng.normal(0.0, 0.25)))
        for i in range(n_items):
            trial_id = f"s{p:02d}_item{i:02d}"
            q = int(rng.integers(3))
            span = spans[i][q]
            text = words.filter(pl.col("text_id") == f"item{i:02d}_p0")
            fix = _simulate_trial(rng, text, span, goal, speed, regression_rate_ordinary,
                                  regression_rate_information_seeking, off_text_rate)
            wm = _word_measures(fix, n_words, span)
            share = wm["span_dwell"] / max(wm["total_dwell"], 1.0)
            p_correct = 1.0 / (1.0 + np.exp(-8.0 * (share - 1.3 * (span[1] - span[0]) / n_words)))
            trials.append({
                "trial_id": trial_id, "participant_id": f"s{p:02d}", "item_id": f"item{i:02d}",
                "text_id": f"item{i:02d}_p0", "reading_goal": goal,
                "question": f"Question {q} about item {i}?", "is_correct": bool(rng.random() < p_correct),
                "onestopqa_question_id": f"item{i:02d}_q{q}",
                "critical_span_start_index": [span[0]], "critical_span_end_index": [span[1]],
                "repeated_reading": False, "practice": False,
                "reading_speed_wpm": n_words / (fix["duration_ms"].sum() + 30.0 * len(fix["duration_ms"])) * 60000.0,
                "mean_first_fixation_duration_ms": float(np.mean([d for d in wm["first_fixation_duration_ms"]
                                                                  if d is not None])),
                "skip_rate": float(np.mean(wm["skipped"])),
                "regression_rate": _regression_rate(fix["word_index"]),
                "fixation_count": len(fix["duration_ms"]),
            })
            fixations.append(pl.DataFrame({"trial_id": trial_id, **fix}))
            measures.append(pl.DataFrame({"trial_id": trial_id, **{k: v for k, v in wm.items()
                                                                  if k not in ("span_dwell", "total_dwell")}}))
    _write(out, words, trials, fixations, measures, seed)
    return out


def _layout(text_id: str, rng: np.random.Generator, n_words: int) -> pl.DataFrame:
    """Words laid out left to right on lines of at most 900 px; one interest area per word."""
    rows, x, line = [], _LEFT_PX, 0
    for w in range(n_words):
        word = "".join(rng.choice(_SYLLABLES, size=int(rng.integers(1, 5))))
        if rng.random() < 0.3:
            word = word[:2]
        width = _CHAR_WIDTH_PX * len(word)
        if x + width > _LEFT_PX + _LINE_WIDTH_PX:
            x, line = _LEFT_PX, line + 1
        top = _TOP_PX + line * _LINE_HEIGHT_PX
        rows.append({"text_id": text_id, "ia_index": w, "word_index": w, "word": word, "line_index": line,
                     "left_px": x, "right_px": x + width, "top_px": top, "bottom_px": top + _LINE_HEIGHT_PX,
                     "word_length": len(word), "frequency_zipf": 7.0 - 0.4 * len(word) + rng.normal(0, 0.3)})
        x += width + _CHAR_WIDTH_PX
    return cast(pl.DataFrame(rows), "words")


def _question_spans(rng: np.random.Generator, n_words: int) -> list[tuple[int, int]]:
    """Three half-open critical spans of up to 5 words, one in each third of the paragraph (needs 6+ words)."""
    third = n_words // 3
    length = max(1, min(5, third - 1))
    return [(s, s + length) for s in (int(rng.integers(k * third, (k + 1) * third - length + 1)) for k in range(3))]


def _simulate_trial(rng, text: pl.DataFrame, span, goal, speed, reg_or, reg_is, off_rate) -> dict:
    """A forward-moving reader with skips, refixations, regressions and off-text fixations."""
    seeking = goal == "information_seeking"
    length = text["word_length"].to_numpy()
    cx = ((text["left_px"] + text["right_px"]) / 2).to_numpy()
    cy = ((text["top_px"] + text["bottom_px"]) / 2).to_numpy()
    seq: list[tuple[int | None, float]] = []
    for w in range(len(length)):
        in_span = span[0] <= w < span[1]
        skip = 0.5 if length[w] <= 2 else 0.1
        if seeking:
            skip = 0.0 if in_span else skip + 0.15
        if rng.random() < skip:
            continue
        mean_ms = 200.0 * speed * (1.6 if seeking and in_span else (0.9 if seeking else 1.0))
        seq.append((w, float(rng.lognormal(np.log(mean_ms), 0.3))))
        if length[w] > 6 and rng.random() < 0.3:
            seq.append((w, float(rng.lognormal(np.log(mean_ms * 0.8), 0.3))))
        if w > 2 and rng.random() < (reg_is if seeking else reg_or):
            seq.append((w - int(rng.integers(1, 4)), float(rng.lognormal(np.log(mean_ms), 0.3))))
        if rng.random() < off_rate:
            seq.append((None, float(rng.lognormal(np.log(150.0), 0.3))))
    word = [s[0] for s in seq]
    dur = np.round([s[1] for s in seq])
    start = np.concatenate([[0.0], np.cumsum(dur + 30.0)[:-1]])
    x = np.array([cx[w] if w is not None else 500.0 for w in word]) + rng.normal(0, 3, len(seq))
    y = np.array([cy[w] if w is not None else 30.0 for w in word]) + rng.normal(0, 5, len(seq))
    line = [int(text["line_index"][w]) if w is not None else None for w in word]
    return {"fixation_index": np.arange(len(seq)), "start_ms": start, "duration_ms": dur.astype(float),
            "x_px": x, "y_px": y, "line_index": line, "word_index": word}


def _regression_rate(word_index: list) -> float:
    """Share of on-text fixations followed by an on-text fixation on an earlier word."""
    on_text = np.array([w for w in word_index if w is not None])
    return float(np.mean(np.diff(on_text) < 0)) if len(on_text) > 1 else 0.0


def _word_measures(fix: dict, n_words: int, span) -> dict:
    """DataViewer-style measures per word from the fixation sequence (null where a word was never fixated)."""
    word, dur = fix["word_index"], fix["duration_ms"]
    first = [None] * n_words
    gaze = [None] * n_words
    go_past = [None] * n_words
    total = np.zeros(n_words)
    count = np.zeros(n_words, dtype=np.int32)
    reg_in = np.zeros(n_words, dtype=bool)
    reg_out = np.zeros(n_words, dtype=bool)
    skipped = np.ones(n_words, dtype=bool)
    furthest = -1
    for i, w in enumerate(word):
        if w is None:
            continue
        total[w] += dur[i]
        count[w] += 1
        prev = next((word[j] for j in range(i - 1, -1, -1) if word[j] is not None), None)
        if prev is not None and prev > w:
            reg_in[w] = True
            reg_out[prev] = True
        if first[w] is None:
            first[w] = float(dur[i])
            skipped[w] = furthest > w
            run = 0.0
            for j in range(i, len(word)):
                if word[j] != w:
                    break
                run += dur[j]
            gaze[w] = float(run)
            path = 0.0
            for j in range(i, len(word)):
                if word[j] is not None and word[j] > w:
                    break
                path += dur[j]
            go_past[w] = float(path)
        furthest = max(furthest, w)
    in_span = np.array([span[0] <= w < span[1] for w in range(n_words)])
    return {"word_index": np.arange(n_words), "first_fixation_duration_ms": first, "gaze_duration_ms": gaze,
            "total_fixation_duration_ms": total, "regression_path_duration_ms": go_past, "fixation_count": count,
            "skipped": skipped, "regression_in": reg_in, "regression_out": reg_out, "in_critical_span": in_span,
            "span_dwell": float(total[in_span].sum()), "total_dwell": float(total.sum())}


def _write(out: Path, words, trials, fixations, measures, seed: int) -> None:
    trial_frame = pl.DataFrame(trials).with_columns(
        pl.col("critical_span_start_index", "critical_span_end_index").cast(pl.List(pl.Int32)),
        pl.col("fixation_count").cast(pl.Int32))
    cast(trial_frame, "trials").write_parquet(out / "trials.parquet")
    words.write_parquet(out / "words.parquet")
    cast(pl.concat(fixations).with_columns(pl.col("line_index", "word_index").cast(pl.Int32)),
         "fixations").write_parquet(out / "fixations.parquet")
    cast(pl.concat(measures, how="vertical_relaxed"), "word_measures").write_parquet(out / "word_measures.parquet")
    manifest = {"source": "synthetic.write_synthetic_dataset", "seed": seed,
                "counts": {"trials": len(trials), "texts": words["text_id"].n_unique()}}
    (out / "manifest.json").write_text(json.dumps(manifest, indent=2))


def write_planted_corpus(path: str | Path, *, n_participants: int = 48, n_items: int = 12, goal_effect: float = 1.0,
                         words_per_paragraph: tuple[int, int] = (40, 60), seed: int = 0,
                         planted: str | None = None) -> Path:
    """A dataset folder from :func:`readgaze.simulate.simulate_corpus` with a planted reading-goal signal (or the
    simulator's ``planted`` task: ``question_span`` needs the text, ``reading_speed`` only the gaze).

    One paragraph per item at one of two levels, no calibration drift (so ``nearest`` line assignment is exact and
    the models see the simulator's gold words), prepared by :func:`readgaze.data_prep.pipeline.prepare` as
    ``readgaze prep`` does. The manifest's ``config.oracle`` holds :func:`readgaze.simulate.oracle_accuracy`
    (``reading_goal_lr_auroc``: a logistic regression on in- vs out-of-span reading, participants grouped; it
    knows the critical span, the models do not).
    """
    from readgaze.data_prep.dataset import write_dataset
    from readgaze.data_prep.pipeline import prepare
    from readgaze.simulate import oracle_accuracy, simulate_corpus

    corpus = simulate_corpus(n_participants, n_items, 1, seed=seed, goal_effect=goal_effect, drift_scale=0.0,
                             words_per_paragraph=words_per_paragraph, planted=planted)
    prepared = prepare(corpus.trials, corpus.words, corpus.fixations, line_assigner="nearest")
    config = {"mode": "readgaze.simulate", "goal_effect": goal_effect, "seed": seed, "line_assigner": "nearest",
              "planted": planted,
              "oracle": oracle_accuracy(corpus)}
    return write_dataset(path, prepared, sources={}, config=config, force=True)


def fit_briefly(model, datamodule, *, max_epochs: int = 10, learning_rate: float | None = None,
                seed: int = 0, keep_predictions: bool = False) -> dict[str, float]:
    """Train ``model`` on ``datamodule``'s training split with AdamW (no schedule) and return its validation metrics.

    The epoch kept is the one with the lowest pooled validation loss (the protocol's model selection; never the
    best AUROC). Returns :func:`readgaze.models.base.regime_metrics` of that epoch as floats plus ``epoch`` and
    ``val_loss``. Class weights are set from the training counts, as the Lightning ``setup`` does. With
    ``keep_predictions``, also ``val_trial_id`` (list) and ``val_probability`` ((n_val, num_classes) array) of that
    epoch (for paired tests between models).
    """
    import torch

    from readgaze.models.base import regime_metrics

    torch.manual_seed(seed)
    datamodule.setup("fit")
    counts = datamodule.class_counts.to(torch.float32)
    model.class_weights = torch.where(counts > 0, counts.sum() / counts.clamp(min=1), torch.zeros_like(counts))
    parameters = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(parameters, lr=learning_rate or model.learning_rate,
                                  weight_decay=model.weight_decay)
    val = list(datamodule.val_dataloader())
    best: dict[str, float] = {}
    for epoch in range(max_epochs):
        model.train()
        for batch in datamodule.train_dataloader():
            optimizer.zero_grad()
            model.loss(model(batch), batch.label).backward()
            torch.nn.utils.clip_grad_norm_(parameters, 1.0)
            optimizer.step()
        model.eval()
        with torch.no_grad():
            logits = torch.cat([model(b) for b in val])
        label = torch.cat([b.label for b in val])
        regime = torch.cat([b.regime_index for b in val])
        loss = float(torch.nn.functional.cross_entropy(logits, label, weight=model.class_weights))
        if not best or loss < best["val_loss"]:
            best = {k: float(v) for k, v in regime_metrics(logits, label, regime, model.num_classes).items()}
            best.update(epoch=epoch, val_loss=loss)
            if keep_predictions:
                best.update(val_trial_id=[t for b in val for t in b.trial_id],
                            val_probability=torch.softmax(logits, -1).numpy())
    return best


def pad_batch(batch, tokens: int = 3, words: int = 2, fixations: int = 4):
    """The same trials with ``tokens``, ``words`` and ``fixations`` more padding rows (what a longer trial in the
    batch adds): a model's logits must not change (the padding-invariance tests)."""
    import torch.nn.functional as F

    from readgaze.models.data.batch import OFF_TEXT, ReadingBatch
    from readgaze.models.text_encoder import load_tokenizer

    pad_id = load_tokenizer("tiny").pad_token_id or 0

    def right(x, n, value):  # pad dim 1 of x by n
        spec = [0, 0] * (x.dim() - 2) + [0, n]
        return F.pad(x, spec, value=value)

    return ReadingBatch(
        trial_id=batch.trial_id, label=batch.label, regime_index=batch.regime_index,
        input_ids=right(batch.input_ids, tokens, pad_id), attention_mask=right(batch.attention_mask, tokens, False),
        token_segment=right(batch.token_segment, tokens, 0),
        word_token_start=right(batch.word_token_start, words, 0), word_token_end=right(batch.word_token_end, words, 0),
        word_features=right(batch.word_features, words, 0.0), word_mask=right(batch.word_mask, words, False),
        fixation_features=right(batch.fixation_features, fixations, 0.0),
        fixation_mask=right(batch.fixation_mask, fixations, False),
        fixation_word_index=right(batch.fixation_word_index, fixations, OFF_TEXT),
        fixation_word_category=right(batch.fixation_word_category, fixations, 0),
        fixation_word_is_content=right(batch.fixation_word_is_content, fixations, 0),
        trial_features=batch.trial_features)


def add_reader_skill(path: str | Path, *, seed: int = 1, noise: float = 0.2, unscored: int = 0) -> pl.DataFrame:
    """Plant a reader-level regression target: ``reading_comprehension_skill`` = 5 + 1.5 z + N(0, ``noise``), z the
    standardised mean log reading speed of the reader's trials (a trait their fixation durations carry); the last
    ``unscored`` readers get no score (null, as CopCo's readers without a test). Rewrites ``trials.parquet`` of the
    dataset folder ``path``; returns the readers' table (``participant_id``, ``reading_comprehension_skill``)."""
    trials_path = Path(path) / "trials.parquet"
    trials = pl.read_parquet(trials_path)
    speed = (trials.group_by("participant_id").agg(pl.col("reading_speed_wpm").log().mean().alias("speed"))
             .sort("participant_id"))
    z = (pl.col("speed") - pl.col("speed").mean()) / pl.col("speed").std()
    draw = pl.Series(np.random.default_rng(seed).normal(0.0, noise, speed.height))
    readers = speed.with_columns((5.0 + 1.5 * z + draw).alias("reading_comprehension_skill")).with_columns(
        pl.when(pl.int_range(pl.len()) >= pl.len() - unscored).then(None)
        .otherwise(pl.col("reading_comprehension_skill")).alias("reading_comprehension_skill"))
    readers = readers.select("participant_id", "reading_comprehension_skill")
    trials.drop("reading_comprehension_skill", strict=False).join(
        readers, on="participant_id", how="left", maintain_order="left").write_parquet(trials_path)
    return readers
