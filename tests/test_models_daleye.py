"""Goal reconstruction: the scanpath-as-text format, the prompt, the reference rows, and that DalEye learns."""

from __future__ import annotations

import polars as pl
import pytest

from readgaze.models.daleye import build_prompt
from readgaze.models.data.goal import scanpath_lines
from readgaze.models.training.goal_cv import reference_rows

PLANTED_GOAL_EFFECT = 6.0
PLANTED_STEPS = 160
"""Training steps per twin: at 160, question-word accuracy 0.667 vs 0.361 and BLEU 0.401 vs 0.307 (60 s); at 200,
0.708 vs 0.333 and 0.451 vs 0.291 (70-77 s); at 120 the gap narrows (0.556 vs 0.417, BLEU 0.339 vs 0.299)."""


def test_scanpath_text_exact_format():
    words = pl.DataFrame({"text_id": ["t"] * 3, "word_index": [0, 1, 2], "word": ["The", "river,", "bank."]})
    # off text, The, river, river (refixation), The (regression), off text, bank, a word index the text lacks
    fixations = pl.DataFrame({"trial_id": ["a"] * 8, "text_id": ["t"] * 8, "fixation_index": list(range(8)),
                              "word_index": [None, 0, 1, 1, 0, None, 2, 7],
                              "duration_ms": [250.0, 200.0, 180.4, 119.6, 150.0, 300.0, 210.0, 90.0]})
    out = scanpath_lines(fixations.sample(fraction=1.0, shuffle=True, seed=1), words)  # order from fixation_index
    assert out["scanpath"][0] == "\n".join([
        "word index, word, duration ms, next saccade",
        "-, <off-text>, 250, forward",
        "0, The, 200, forward",
        "1, river, 180, within",
        "1, river, 120, backward",
        "0, The, 150, off-text",
        "-, <off-text>, 300, forward",   # an off-text fixation sits at the last word read (0); next is word 2
        "2, bank, 210, off-text",
        "-, <off-text>, 90, end",        # word index 7 is not in the text: written as off text, and counted
    ])
    assert out.select("n_fixations", "n_unknown_word").row(0) == (8, 1)


def test_prompt_twin_differs_only_by_the_scanpath():
    scanpath = "word index, word, duration ms, next saccade\n0, The, 200, end"
    assert build_prompt("The river.", scanpath) == (
        "Paragraph: The river.\nScanpath (word index, word, duration ms, next saccade):\n0, The, 200, end\nQuestion:")
    assert build_prompt("The river.", None) == "Paragraph: The river.\nQuestion:"


def test_reference_rows_same_and_different_span():
    trials = pl.DataFrame({"trial_id": ["a", "b"], "regime": ["new_item"] * 2, "fold_index": [0, 0],
                           "question": ["Q2?", "Q0?"], "candidates": [["Q0?", "Q1?", "Q2?"]] * 2,
                           "candidate_spans": [[[0, 5], [9, 14], [9, 14]]] * 2, "label": [2, 0],
                           "slowest_span_candidate": [1, 0]})
    rows, skipped = reference_rows(trials)
    got = {(r["trial_id"], r["model"]): r["generated"] for r in rows.iter_rows(named=True)}
    assert got == {("a", "human_same_span"): "Q1?", ("a", "human_different_span"): "Q0?",
                   ("a", "oracle_slowest_span"): "Q1?", ("b", "human_different_span"): "Q1?",
                   ("b", "oracle_slowest_span"): "Q0?"}
    assert skipped == 1  # trial b's question (on span 0-5) has no same-span partner


@pytest.fixture(scope="module")
def tiny():
    import torch

    from readgaze.models.daleye import DalEye

    torch.manual_seed(0)
    return DalEye(max_new_tokens=6).eval()


def test_left_padding_changes_no_score_and_no_generation(tiny):
    import torch

    short = {"paragraph": ["The river bank."], "scanpath": ["h\n0, The, 200, end"], "question": ["Who?"]}
    long = {"paragraph": ["A much longer paragraph about bridges and rivers and the towns beside them."],
            "scanpath": ["h\n0, A, 180, forward\n1, much, 220, end"], "question": ["What is said about towns?"]}
    both = {k: short[k] + long[k] for k in short}
    target = [tiny._target_ids(q) for q in both["question"]]
    with torch.no_grad():
        alone, n_alone = tiny.target_logprobs(tiny._prompt_ids(short), target[:1])
        batched, n_batched = tiny.target_logprobs(tiny._prompt_ids(both), target)
    assert batched[0].item() == pytest.approx(alone[0].item(), abs=1e-4)
    assert n_batched.tolist() == [len(t) for t in target]
    assert tiny.generate(both)[0] == tiny.generate(short)[0]


def test_lora_trains_adapters_only_and_checkpoints_them():
    from readgaze.models.daleye import DalEye

    model = DalEye(lora_rank=4)
    trainable = [n for n, p in model.named_parameters() if p.requires_grad]
    assert trainable and all("lora_" in n for n in trainable)
    checkpoint = {"state_dict": model.state_dict(), "hyper_parameters": {}}
    model.on_save_checkpoint(checkpoint)
    assert set(checkpoint["state_dict"]) == set(trainable) and not model.strict_loading


@pytest.mark.learns
@pytest.mark.slow
def test_gaze_generator_beats_its_text_only_twin_for_new_participants(tmp_path, request, one_torch_thread):
    """On the planted corpus (question word set by where the span lies, goal_effect 6), DalEye trained briefly must
    beat the same model without the scanpath on question-word accuracy and BLEU, new-participant test trials."""
    import time

    import lightning as L
    import numpy as np
    import torch
    from synthetic import write_planted_corpus

    from readgaze.generation_metrics import bleu, question_word_accuracy
    from readgaze.models.daleye import DalEye
    from readgaze.models.data.goal import GoalReconstructionData

    path = write_planted_corpus(tmp_path, n_participants=80, n_items=12, goal_effect=PLANTED_GOAL_EFFECT,
                                words_per_paragraph=(16, 20))
    data = GoalReconstructionData(str(path), n_folds=5, batch_size=8)
    data.setup("fit")
    test = [item for item in data.items["test"] if item["regime"] == 2]  # REGIMES[2] == "new_participant"
    batch = {key: [item[key] for item in test] for key in test[0]}
    scores, start = {}, time.perf_counter()
    for use_scanpath in (True, False):
        torch.manual_seed(0)
        model = DalEye(use_scanpath=use_scanpath, learning_rate=3e-3, max_new_tokens=12)
        L.Trainer(max_steps=PLANTED_STEPS, limit_val_batches=0, logger=False, enable_checkpointing=False,
                  enable_progress_bar=False, enable_model_summary=False).fit(model, datamodule=data)
        generated = model.eval().generate(batch)
        scores[use_scanpath] = (float(np.mean(question_word_accuracy(generated, batch["question"]))),
                                float(np.mean(bleu(generated, batch["question"]))))
    line = (f"DalEye (goal reconstruction) new participant, {len(test)} trials: question-word acc. "
            f"{scores[True][0]:.3f} vs text-only {scores[False][0]:.3f}; BLEU {scores[True][1]:.3f} vs "
            f"{scores[False][1]:.3f} ({time.perf_counter() - start:.0f} s)")
    request.node.user_properties.append(("learns", line))
    assert scores[True][0] > scores[False][0] and scores[True][1] > scores[False][1], line


@pytest.mark.slow
def test_cv_writes_generations_and_the_metric_table(tmp_path):
    """``readgaze cv`` on a goal_reconstruction config: generations with per-trial scores, the table, the oracle."""
    from synthetic import write_planted_corpus

    from readgaze.models.training.cv import main

    path = write_planted_corpus(tmp_path / "data", n_participants=12, n_items=6, goal_effect=3.0,
                                words_per_paragraph=(16, 20))
    code = main(["cv", "-c", "experiments/configs/goal_reconstruction/daleye.yaml", "--data.path", str(path),
                 "--data.n_folds", "3", "--folds", "0", "--trainer.max_epochs", "1", "--out", str(tmp_path / "out"),
                 "--run", "smoke"])
    assert code == 0
    run = tmp_path / "out" / "smoke"
    generations = pl.read_parquet(run / "generations.parquet")
    assert {"trial_id", "regime", "reference", "generated", "question_word_accuracy", "bleu", "bertscore_f1",
            "qa_accuracy"} <= set(generations.columns)
    assert set(generations["model"]) == {"DalEye", "human_different_span", "oracle_slowest_span"}
    daleye = generations.filter(pl.col("model") == "DalEye")
    assert daleye["qa_accuracy"].null_count() == daleye.height  # no QA model: skipped, never 0
    oracle = generations.filter(pl.col("model") == "oracle_slowest_span")
    exact = oracle.filter(pl.col("generated") == pl.col("reference"))
    assert exact["bleu"].min() == pytest.approx(1.0) and exact["question_word_accuracy"].min() == 1.0
    results = pl.read_csv(run / "results.csv")
    assert {"question_word_accuracy_mean", "bleu_sem", "bertscore_f1_mean", "selection_accuracy_mean"} <= set(
        results.columns)
    text = (run / "results.md").read_text()
    assert "QA accuracy: skipped" in text and "all-MiniLM-L6-v2" in text
    assert (run / "fold_0" / "predictions_test.parquet").is_file()


@pytest.mark.parametrize("name", ["daleye", "text_only"])
def test_configs_build_the_generator_and_its_datamodule(name, tmp_path):
    from synthetic import write_synthetic_dataset

    from readgaze.models.daleye import DalEye
    from readgaze.models.data.goal import GoalReconstructionData
    from readgaze.models.training.cli import make_cli

    path = write_synthetic_dataset(tmp_path / "data", n_participants=6, n_items=6, n_words=16)
    cli = make_cli(["-c", f"experiments/configs/goal_reconstruction/{name}.yaml", "--data.path", str(path),
                    "--data.n_folds", "3", "--trainer.default_root_dir", str(tmp_path)], run=False)
    assert isinstance(cli.model, DalEye) and isinstance(cli.datamodule, GoalReconstructionData)
    assert cli.model.use_scanpath is (name == "daleye")
    assert cli.model.num_classes == cli.datamodule.num_classes == 3
    cli.datamodule.setup("fit")
    batch = next(iter(cli.datamodule.train_dataloader()))
    assert set(batch) == {"trial_id", "regime", "paragraph", "scanpath", "question", "candidates", "label"}
    assert cli.model.loss_of(batch).item() > 0
