"""``readgaze cv`` for goal reconstruction: a config that generates questions, scored with the paper's metrics.

:func:`readgaze.models.training.cv.cross_validate` hands a config whose ``data.task`` is ``goal_reconstruction`` to
:func:`cross_validate_generation`. For each fold k it fits the config (validation fold k, test fold k+1), restores
the checkpoint with the lowest validation loss and generates a question for every test trial (the model writes
``generations_test.parquet``). Beside the model, on the same test trials, the reference rows of the paper
(Shubi et al., arXiv:2505.02872, ICLR 2026):

* ``human_same_span``: another question of the paragraph on the same critical span (trials whose paragraph has
  none are left out, and counted);
* ``human_different_span``: the paragraph's first other question (by question id) on a different span;
* ``oracle_slowest_span``: the paragraph's question whose critical span got the most fixation time per word —
  the best selection among the paragraph's questions that reading times alone support (on the simulated corpus,
  the planted signal's ceiling for a selector).

Every row is scored with :mod:`readgaze.generation_metrics`. Written under ``OUT/RUN``:

* ``fold_k/``: the fold's logs, checkpoint, ``generations_test.parquet`` and ``predictions_test.parquet`` (the
  model's log-likelihood goal selection);
* ``generations.parquet``: ``trial_id, regime, fold_index, model, reference, generated`` and the per-trial scores;
* ``results.csv`` / ``results.md``: each metric per regime, mean ± SEM over folds, with how BERTScore was computed
  and whether QA accuracy was skipped.

Metric options ride on the ``readgaze cv`` command line and are not passed to the folds:
``--metrics.bertscore_model DIR --metrics.bertscore_num_layers N`` (default the offline MiniLM, layer 6) and
``--metrics.qa_model DIR`` (a local multiple-choice QA model; QA accuracy also needs an ``answer_options`` column).
"""

from __future__ import annotations

import logging
from pathlib import Path

import polars as pl

from readgaze.generation_metrics import METRICS, aggregate, results_table, score_generations

log = logging.getLogger(__name__)
REFERENCE_ROWS = ("human_same_span", "human_different_span", "oracle_slowest_span")
METRIC_OPTIONS = ("bertscore_model", "bertscore_num_layers", "qa_model")


def cross_validate_generation(config: str, data_path: str, overrides: list[str], *, n_folds: int,
                              folds: list[int] | None = None, out: str = "results", run: str | None = None,
                              threads: int | None = None, baselines: bool = True) -> dict[str, Path]:
    """Run every fold of a generation config and write generations, the metric table and its CSV.

    Returns ``{"run", "generations", "csv", "markdown"}`` paths.
    """
    overrides, options = _metric_options(list(overrides))
    run_dir = Path(out) / (run or f"goal_reconstruction_{Path(config).stem}")
    run_dir.mkdir(parents=True, exist_ok=True)
    parts, contexts, notes = [], [], []
    for fold in range(n_folds) if folds is None else folds:
        generations, trials = _run_fold(config, data_path, fold, overrides, run_dir / f"fold_{fold}", threads)
        parts.append(generations)
        contexts.append(trials.select("trial_id", *[c for c in ("paragraph", "answer_options") if c in trials.columns]))
        if baselines:
            references, skipped = reference_rows(trials.filter(pl.col("split") == "test"))
            parts.append(references)
            if skipped:
                notes.append(f"fold {fold}: human_same_span left out {skipped} test trials (no other question of "
                             f"their paragraph on the same span)")
    context = pl.concat(contexts, how="diagonal_relaxed").unique("trial_id")
    frame = pl.concat(parts, how="diagonal_relaxed").join(context, on="trial_id", how="left")
    scored, record = score_generations(frame, **options)
    scored = scored.with_columns(selection_accuracy=pl.when(pl.col("selected").is_not_null())
                                 .then((pl.col("selected") == pl.col("label")).cast(pl.Float64)))
    keep = ["trial_id", "regime", "fold_index", "participant_id", "item_id", "model", "reference", "generated",
            "selected", "label", "generated_question_word", "reference_question_word", *METRICS, "selection_accuracy"]
    generations_path = run_dir / "generations.parquet"
    scored.select([c for c in keep if c in scored.columns]).write_parquet(generations_path)
    evaluation = aggregate(scored, (*METRICS, "selection_accuracy"))
    csv, markdown = run_dir / "results.csv", run_dir / "results.md"
    evaluation.write_csv(csv)
    notes = [f"BERTScore: {record['bertscore']}.", f"BLEU: {record['bleu']}.",
             f"QA accuracy: {record['qa_accuracy']}.",
             "Selection acc.: the model's log-likelihood choice among the paragraph's questions (chance 1/3 with "
             "three); for oracle_slowest_span, the slowest-read span's question.", *notes]
    markdown.write_text("# goal_reconstruction\n\n" + results_table(evaluation, metrics=(*METRICS,
                                                                                         "selection_accuracy"),
                                                                    notes=notes), encoding="utf-8")
    return {"run": run_dir, "generations": generations_path, "csv": csv, "markdown": markdown}


def reference_rows(trials: pl.DataFrame) -> tuple[pl.DataFrame, int]:
    """The human-question and oracle rows for ``trials`` (see the module docstring); and how many trials had no
    same-span question.

    ``trials`` needs ``trial_id, regime, fold_index, question, candidates, candidate_spans, label,
    slowest_span_candidate``.
    """
    rows = []
    skipped = 0
    for t in trials.iter_rows(named=True):  # a few hundred test trials per fold, three strings each
        spans, label, candidates = t["candidate_spans"], t["label"], t["candidates"]
        same = [j for j in range(len(candidates)) if j != label and spans[j] == spans[label]]
        different = [j for j in range(len(candidates)) if spans[j] != spans[label]]
        base = {k: t.get(k) for k in ("trial_id", "regime", "fold_index", "participant_id", "item_id")}
        base.update(reference=t["question"], label=label)
        if same:
            rows.append({**base, "model": "human_same_span", "generated": candidates[same[0]], "selected": None})
        else:
            skipped += 1
        if different:
            rows.append({**base, "model": "human_different_span", "generated": candidates[different[0]],
                         "selected": None})
        rows.append({**base, "model": "oracle_slowest_span", "generated": candidates[t["slowest_span_candidate"]],
                     "selected": t["slowest_span_candidate"]})
    schema = {"trial_id": pl.String, "regime": pl.String, "fold_index": pl.Int32, "participant_id": pl.String,
              "item_id": pl.String, "reference": pl.String, "label": pl.Int64, "model": pl.String,
              "generated": pl.String, "selected": pl.Int64}
    return pl.DataFrame(rows, schema=schema), skipped


def _run_fold(config: str, data_path: str, fold: int, overrides: list[str], fold_dir: Path,
              threads: int | None) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Fit, restore the best checkpoint, generate; returns the fold's generations and its trials."""
    import torch

    from readgaze.models.training.cli import make_cli

    if threads:
        torch.set_num_threads(threads)
    cli = make_cli(["-c", config, "--data.path", data_path, "--data.fold", str(fold),
                    "--data.split_unit", "participant_item", "--trainer.default_root_dir", str(fold_dir),
                    "--model.init_args.predictions_dir", str(fold_dir), *overrides], run=False)
    cli.trainer.fit(cli.model, datamodule=cli.datamodule)
    best = cli.trainer.checkpoint_callback.best_model_path if cli.trainer.checkpoint_callback else ""
    cli.trainer.test(cli.model, datamodule=cli.datamodule, ckpt_path=best or None, weights_only=False)
    trials = cli.datamodule.trials
    trials.select("trial_id", "participant_id", "item_id", "label", "fold_index", "split", "regime").write_parquet(
        fold_dir / "trials.parquet")
    generations = pl.read_parquet(fold_dir / "generations_test.parquet")
    return generations.drop("candidates", "candidate_loglik", "split", strict=False), trials


def _metric_options(overrides: list[str]) -> tuple[list[str], dict]:
    """Split ``--metrics.KEY VALUE`` / ``--metrics.KEY=VALUE`` off the fold overrides."""
    rest, options, i = [], {}, 0
    while i < len(overrides):
        arg = overrides[i]
        if arg.startswith("--metrics."):
            key, _, value = arg[len("--metrics."):].partition("=")
            if not value and i + 1 < len(overrides):
                value, i = overrides[i + 1], i + 1
            if key not in METRIC_OPTIONS:
                from readgaze.errors import ConfigError

                raise ConfigError(f"unknown option --metrics.{key}; expected one of "
                                  f"{', '.join('--metrics.' + k for k in METRIC_OPTIONS)}")
            options[key] = int(value) if key == "bertscore_num_layers" else value
        else:
            rest.append(arg)
        i += 1
    return rest, options
