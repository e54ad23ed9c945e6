"""EyeBench's CopCo benchmarks on EyeBench's 4 folds, from the raw CopCo folder, in one command: dyslexia (CopCo_TYP)
and comprehension skill in EyeBench's published setting (CopCo_RCS, readers without a score at -1.0).

    OMP_NUM_THREADS=1 POLARS_MAX_THREADS=1 python experiments/eyebench_copco_bench.py \\
        --data ../shared/data/copco --out runs/copco [--workers 2] [--ablate roberteye_w] [--tasks TYP RCS_eyebench]

Steps, each skipped when its output is already there (so a rerun resumes; ``readgaze bench`` resumes by itself):

1. ``readgaze prep copco --data DATA --out OUT/dataset`` (the CopCo recipe);
2. the classical rows, ``experiments/eyebench_copco_classical.py --tasks TYP RCS_eyebench`` into ``OUT/classical``
   (or ``--classical DIR``, a finished run of it);
3. RCS: ``readgaze bench -c experiments/bench/copco.yaml --tasks reading_comprehension_skill --baselines default
   --data.missing_label -1.0`` into ``OUT/bench_rcs`` (the neural models on the regression task, the 12 unscored
   readers kept at EyeBench's -1.0);
4. TYP: ``readgaze bench -c experiments/bench/copco.yaml`` into ``OUT/bench`` (every neural model EyeBench lists for
   CopCo, tiny encoder, EyeBench's folds from ``DATA/eyebench/folds``), then the text and gaze twins of the
   ``--ablate`` models (:mod:`readgaze.models.data.ablate`) into the same folder (a second bench run: the models'
   own units are reused);
5. the tables: ``OUT/copco_TYP.md`` (:func:`tables`) and ``OUT/copco_RCS_eyebench.md`` (:func:`rcs_tables`),
   EyeBench's layout (per regime + Average, mean ± SEM over folds) with EyeBench's published row beside each of
   readgaze's and the difference, the reader-level aggregation (and for TYP stacked ensembles) chosen on validation
   only, and paired tests of the best rows against EyeBench's best row that readgaze reproduces
   (:func:`best_reproduced`: AhnCNN for TYP, the random forest for RCS) and the best classical row or chance.

``OUT/times.json`` keeps each step's wall and CPU seconds (CPU: this process's children, Ray's workers included
once Ray has reaped them; ``bench_units`` sums the units' own wall seconds).
``python experiments/eyebench_copco_bench.py --out OUT --tables-only`` rewrites the tables from what is there.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import polars as pl

from readgaze.eyebench_tables import compare_with_eyebench, eyebench_table, read_eyebench_table
from readgaze.metrics import evaluate, paired_comparison
from readgaze.reader_aggregation import aggregate_by_reader

ROOT = Path(__file__).resolve().parents[1]
BENCH_CONFIG = ROOT / "experiments" / "bench" / "copco.yaml"
COLUMNS = ("trial_id", "participant_id", "item_id", "fold_index", "split", "regime", "label", "prediction_prob",
           "model")
"""The prediction columns the tables read (two classes: ``prediction_prob`` = P(dyslexia))."""
CLASSICAL = ("majority", "words_per_paragraph_time_logistic_regression", "reading_speed_logistic_regression",
             "meziere_logistic_regression", "svm", "random_forest", "knn", "gradient_boosting")
CHANCE_ROWS = ("majority", "words_per_paragraph_time_logistic_regression")
"""Chance and reading speed: never members of an ensemble, never "the best model"."""
RCS_COLUMNS = (*COLUMNS[:7], "prediction_value", "model")
"""The regression task's prediction columns (``prediction_value`` = the predicted score)."""
RCS_CLASSICAL = ("chance_mean", "words_per_paragraph_time_linear_regression", "reading_speed_linear_regression",
                 "ridge", "svr", "random_forest_regressor", "knn_regressor", "gradient_boosting_regressor")
RCS_CHANCE_ROWS = ("chance_mean", "words_per_paragraph_time_linear_regression", "reading_speed_linear_regression")
NOT_REPRODUCTIONS = ("Majority Class / Chance", "Reading Speed")
"""EyeBench rows that are not models to beat: never "the best reproduced EyeBench model"."""


def _cpu_children() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _step(times: dict, name: str, command: list[str], out: Path) -> None:
    """Run ``command`` (output to the terminal), record its wall and CPU seconds under ``name``."""
    print("+ " + " ".join(command), flush=True)
    wall, cpu = time.perf_counter(), _cpu_children()
    status = subprocess.run(command, cwd=ROOT).returncode
    times[name] = {"wall_s": round(time.perf_counter() - wall, 1), "cpu_s": round(_cpu_children() - cpu, 1),
                   "status": status, "command": " ".join(command)}
    (out / "times.json").write_text(json.dumps(times, indent=1), encoding="utf-8")
    if status not in (0, 1):  # bench: 1 = a unit failed (recorded; the tables say "not run")
        sys.exit(f"{name} failed with status {status}")


def neural_predictions(bench: Path, task: str = "dyslexia", columns: tuple[str, ...] = COLUMNS) -> pl.DataFrame:
    """Every finished model unit's validation and test predictions under ``bench/units/*/<task>/``.

    ``model`` is the model's class name (``AhnCNN``, what :data:`readgaze.eyebench_tables.EYEBENCH_MODELS` maps),
    with ``_ablate_text`` / ``_ablate_gaze`` for a twin (from the unit folder's name). Columns ``columns``
    (:data:`COLUMNS`; :data:`RCS_COLUMNS` for the regression task).
    """
    frames = []
    for done in sorted(bench.glob(f"units/*/{task}/*/fold_*/seed_*/unit.json")):
        record = json.loads(done.read_text(encoding="utf-8"))
        if record.get("status") != "done":
            continue
        stem = done.parents[2].name
        suffix = stem[stem.index("_ablate_"):] if "_ablate_" in stem else ""
        for split in ("val", "test"):
            frame = pl.read_parquet(done.parent / f"predictions_{split}.parquet")
            frames.append(frame.with_columns(pl.lit(split).alias("split"), (pl.col("model") + suffix).alias("model"))
                          .select(columns))
    if not frames:
        return pl.DataFrame(schema={c: pl.String for c in columns})
    return pl.concat(frames, how="vertical_relaxed")


def stacked(predictions: pl.DataFrame, members: list[str], name: str) -> pl.DataFrame:
    """:class:`~readgaze.models.training.ensemble.LogisticEnsemble` of ``members``, fit per fold on their validation
    predictions and applied to their test predictions (its validation rows 5-fold cross-fitted)."""
    from readgaze.models.training.ensemble import LogisticEnsemble, fit_predict_fold

    parts = []
    labels = predictions.filter(pl.col("model") == members[0]).select("trial_id", "fold_index", "split", "label")
    for fold in predictions["fold_index"].unique().sort().to_list():
        in_fold = predictions.filter((pl.col("fold_index") == fold) & pl.col("model").is_in(members))
        val, test = in_fold.filter(pl.col("split") == "val"), in_fold.filter(pl.col("split") == "test")
        for split, frame in fit_predict_fold(LogisticEnsemble, val, test, members).items():
            parts.append(frame.with_columns(pl.lit(split).alias("split")))
    out = pl.concat(parts, how="diagonal_relaxed").join(labels, on=["trial_id", "fold_index", "split"], how="left")
    return out.with_columns(pl.lit(name).alias("model")).select(COLUMNS)


def _score(evaluation: pl.DataFrame, model: str, regime: str = "all") -> float:
    row = evaluation.filter((pl.col("model") == model) & (pl.col("regime") == regime))
    return float(row["auroc_mean"][0]) if row.height else float("nan")


def best_reproduced(comparison: pl.DataFrame, metric: str) -> tuple[str, str] | None:
    """EyeBench's best row that readgaze reproduces: among EyeBench's models (chance and reading speed aside) whose
    readgaze row lands within the published ± band (:func:`readgaze.eyebench_tables.compare_with_eyebench`) on the
    Average ``metric``, the one with the best published Average; ``(EyeBench's name, readgaze's model)``, or None."""
    rows = comparison.filter((pl.col("metric") == metric) & (pl.col("regime") == "all") & pl.col("within_band")
                             & pl.col("eyebench_model").is_not_null()
                             & ~pl.col("eyebench_model").is_in(list(NOT_REPRODUCTIONS)))
    if not rows.height:
        return None
    row = rows.sort("published_mean", descending=metric not in ("rmse", "mae")).row(0, named=True)
    return row["eyebench_model"], row["model"]


def _p(value: float | None) -> str:
    return "–" if value is None else f"{value:.3f}"


def tables(out: Path, classical: Path, results: Path) -> str:
    """Write ``OUT/copco_TYP.md`` (and ``evaluation_TYP.csv``, ``predictions_TYP.parquet``); return the Markdown."""
    neural = neural_predictions(out / "bench")
    base = pl.read_parquet(classical / "predictions_TYP.parquet").select(COLUMNS)
    predictions = pl.concat([base, neural.cast(base.schema)], how="vertical")
    models = predictions["model"].unique(maintain_order=True).to_list()
    plain = [m for m in models if "_ablate_" not in m and m not in CHANCE_ROWS]
    val = evaluate(predictions.filter(pl.col("split") == "val"), split="val")
    # ahead of the table, on validation only: each row aggregated per reader, and stacked ensembles
    aggregated = aggregate_by_reader(predictions.filter(pl.col("model").is_in(plain))).select(COLUMNS)
    val_aggregated = evaluate(aggregated.filter(pl.col("split") == "val"), split="val")
    folds = predictions.group_by("model").agg(pl.col("fold_index").n_unique())
    complete = set(folds.filter(pl.col("fold_index") == folds["fold_index"].max())["model"])
    ranked = sorted([m for m in plain if m in complete], key=lambda m: -_score(val, m))  # ensembles: every fold
    neural_names = [m for m in neural["model"].unique().to_list() if "_ablate_" not in m]
    extra = []
    for k in (2, 3, 5):
        if len(ranked) >= k:
            extra.append(stacked(predictions, ranked[:k], f"stack_top{k}"))
    if len([m for m in neural_names if m in complete]) >= 2:
        extra.append(stacked(predictions, [m for m in neural_names if m in complete], "stack_neural"))
    ensembles = pl.concat(extra) if extra else predictions.head(0)
    ensembles = pl.concat([ensembles, aggregate_by_reader(ensembles).select(COLUMNS)]) if extra else ensembles
    every = pl.concat([predictions, aggregated, ensembles])
    val_all = pl.concat([val, val_aggregated, evaluate(ensembles.filter(pl.col("split") == "val"), split="val")],
                        how="diagonal_relaxed") if extra else pl.concat([val, val_aggregated], how="diagonal_relaxed")
    test = evaluate(every)
    # candidates: rows over every fold (a row cut short is in the table, not in the choice)
    whole = complete | {f"{m}_reader_mean" for m in complete} | set(ensembles["model"].unique().to_list())
    choices = [m for m in val_all["model"].unique().to_list()
               if m not in CHANCE_ROWS and "_ablate_" not in m and m in whole]
    best = max(choices, key=lambda m: _score(val_all, m))
    candidates = [m for m in neural_names if m in complete]
    best_neural = max(candidates, key=lambda m: _score(val, m)) if candidates else None
    best_classical = max([m for m in plain if m in CLASSICAL], key=lambda m: _score(val, m))
    comparison = compare_with_eyebench(test.filter(pl.col("model").is_in(models)),
                                       read_eyebench_table(results / "CopCo_TYP_test.csv"))
    lines = [eyebench_table(comparison, title="CopCo_TYP (test, EyeBench's 4 folds): every row")]
    lines.append("\n### Chosen on validation, reported once on test\n")
    lines.append("| row | how chosen | validation Average AUROC | test Average AUROC | test Unseen Reader | "
                 "test Unseen Text & Reader |\n|---|---|---|---|---|---|")
    for label, model in (("best overall", best), ("best neural (per trial)", best_neural),
                         ("best neural, reader mean", f"{best_neural}_reader_mean" if best_neural else None),
                         ("best classical (per trial)", best_classical),
                         ("best classical, reader mean", f"{best_classical}_reader_mean"),
                         ("chance", "majority"), ("reading speed", "words_per_paragraph_time_logistic_regression")):
        if model is None:
            continue
        cells = [f"{100 * _score(val_all, model):.1f}"] + [
            _cell(test, model, regime) for regime in ("all", "new_participant", "new_item_participant")]
        lines.append(f"| {label} | `{model}` | " + " | ".join(cells) + " |")
    lines.append("\n### Paired tests (test folds; t-test over the 4 folds; permutation test swapping the two rows' "
                 "scores of a trial, or of all a reader's trials where a row is a reader mean)\n")
    lines.append("| comparison | regime | difference (AUROC points) | t-test p | permutation p |\n"
                 "|---|---|---|---|---|")
    same_form = f"{best_classical}_reader_mean" if best.endswith("_reader_mean") else best_classical
    pairs = [(best_neural, best_classical), (f"{best_neural}_reader_mean", f"{best_classical}_reader_mean"),
             (best, same_form)] if best_neural else [(best, same_form)]
    reproduced = best_reproduced(comparison, "auroc")  # EyeBench's best row that readgaze reproduces (AhnCNN)
    if reproduced is not None and reproduced[1] in models:
        pairs.insert(0, (best, reproduced[1]))
    for ablated in ("text", "gaze"):
        for model in neural_names:
            if f"{model}_ablate_{ablated}" in models:
                pairs.append((model, f"{model}_ablate_{ablated}"))
    for reference, other in dict.fromkeys(pairs):
        if reference == other:
            continue
        both = every.filter(pl.col("model").is_in([reference, other]) & (pl.col("split") == "test"))
        # a reader's trials share one score in a reader mean: swap whole readers, not trials
        unit = "readers" if "_reader_mean" in reference + other else "trials"
        tested = paired_comparison(both, reference, other, group="participant_id" if unit == "readers" else None,
                                   n_permutations=1000)
        name = f" (EyeBench's best reproduced: {reproduced[0]})" if reproduced and other == reproduced[1] else ""
        for row in tested.filter(pl.col("regime").is_in(["all", "new_participant", "new_item_participant"])) \
                .iter_rows(named=True):
            lines.append(f"| `{reference}` − `{other}`{name} | {row['regime']} | {100 * row['difference_mean']:+.1f} | "
                         f"{_p(row['t_test_p'])} | {row['permutation_p']:.3f} ({unit}) |")
    markdown = "\n".join(lines) + "\n"
    (out / "copco_TYP.md").write_text(markdown, encoding="utf-8")
    test.write_csv(out / "evaluation_TYP.csv")
    every.write_parquet(out / "predictions_TYP.parquet")
    return markdown


def _cell(evaluation: pl.DataFrame, model: str, regime: str) -> str:
    row = evaluation.filter((pl.col("model") == model) & (pl.col("regime") == regime))
    if not row.height:
        return "not run"
    mean, sem = 100 * row["auroc_mean"][0], row["auroc_sem"][0]
    return f"{mean:.1f} ± {100 * sem:.1f}" if sem is not None else f"{mean:.1f}"


def _rmse(evaluation: pl.DataFrame, model: str, regime: str = "all") -> float:
    row = evaluation.filter((pl.col("model") == model) & (pl.col("regime") == regime))
    return float(row["rmse_mean"][0]) if row.height else float("nan")


def _rcell(evaluation: pl.DataFrame, model: str, regime: str) -> str:
    row = evaluation.filter((pl.col("model") == model) & (pl.col("regime") == regime))
    if not row.height:
        return "not run"
    mean, sem = row["rmse_mean"][0], row["rmse_sem"][0]
    return f"{mean:.2f} ± {sem:.2f}" if sem is not None else f"{mean:.2f}"


def rcs_tables(out: Path, classical: Path, results: Path, name: str = "RCS_eyebench") -> str:
    """EyeBench's CopCo_RCS in its published setting (the 12 readers without a score at -1.0): write
    ``OUT/copco_{name}.md`` (and ``evaluation_{name}.csv``, ``predictions_{name}.parquet``); return the Markdown.

    Rows: the classical ones (``classical/predictions_{name}.parquet``, ``eyebench_copco_classical.py --tasks
    RCS_eyebench``), the neural ones (``OUT/bench_rcs``, ``readgaze bench --data.missing_label -1.0``) and each
    row's reader mean; the best rows chosen on validation RMSE; paired RMSE tests (t-test over folds, permutation
    swapping whole readers: the target is the reader's) of the best rows against EyeBench's best row that readgaze
    reproduces (:func:`best_reproduced`: its random forest) and against chance.
    """
    from readgaze.metrics_regression import evaluate_regression, paired_regression_comparison

    neural = neural_predictions(out / "bench_rcs", "reading_comprehension_skill", RCS_COLUMNS)
    base = pl.read_parquet(classical / f"predictions_{name}.parquet").select(RCS_COLUMNS)
    predictions = pl.concat([base, neural.cast(base.schema)]) if neural.height else base
    models = predictions["model"].unique(maintain_order=True).to_list()
    plain = [m for m in models if m not in RCS_CHANCE_ROWS]
    every = pl.concat([predictions, aggregate_by_reader(predictions.filter(pl.col("model").is_in(plain)))
                      .select(RCS_COLUMNS)])
    val, test = evaluate_regression(every, split="val"), evaluate_regression(every)
    folds = every.group_by("model").agg(pl.col("fold_index").n_unique())
    complete = set(folds.filter(pl.col("fold_index") == folds["fold_index"].max())["model"])  # rows cut short: out
    best = min([m for m in every["model"].unique().to_list() if m not in RCS_CHANCE_ROWS and m in complete],
               key=lambda m: _rmse(val, m))
    neural_names = [m for m in neural["model"].unique().to_list() if m in complete]
    best_neural = min(neural_names, key=lambda m: _rmse(val, m)) if neural_names else None
    best_classical = min([m for m in plain if m in RCS_CLASSICAL and m in complete], key=lambda m: _rmse(val, m))
    comparison = compare_with_eyebench(test.filter(pl.col("model").is_in(models)),
                                       read_eyebench_table(results / "CopCo_RCS_test.csv"))
    reproduced = best_reproduced(comparison, "rmse")
    lines = [eyebench_table(comparison, title="CopCo_RCS (test, EyeBench's 4 folds), readers without a score at "
                                              "-1.0 as EyeBench's table: every row")]
    lines.append("\n### Chosen on validation (lowest Average RMSE), reported once on test\n")
    regimes = ("all", "new_participant", "new_item", "new_item_participant")
    lines.append("| row | how chosen | validation Average RMSE | test Average RMSE | test Unseen Reader | test Unseen "
                 "Text | test Unseen Text & Reader |\n|---|---|---|---|---|---|---|")
    rows = [("best overall", best), ("best neural (per trial)", best_neural),
            ("best neural, reader mean", f"{best_neural}_reader_mean" if best_neural else None),
            ("best classical (per trial)", best_classical),
            ("best classical, reader mean", f"{best_classical}_reader_mean"),
            (f"EyeBench's best reproduced row ({reproduced[0]})" if reproduced else "", reproduced and reproduced[1]),
            ("chance (training mean)", "chance_mean"),
            ("reading speed", "words_per_paragraph_time_linear_regression")]
    for label, model in rows:
        if model:
            lines.append(f"| {label} | `{model}` | {_rmse(val, model):.2f} | "
                         + " | ".join(_rcell(test, model, r) for r in regimes) + " |")
    lines.append("\n### Paired tests (test folds, RMSE; t-test over the 4 folds; permutation test swapping all of a "
                 "reader's trials between the two rows, 1,000 permutations)\n")
    lines.append("| comparison | regime | difference (RMSE) | t-test p | permutation p |\n|---|---|---|---|---|")
    pairs = [(best, reproduced[1]), (best_neural, reproduced[1])] if reproduced else []
    pairs += [(best, "chance_mean"), (best_neural, "chance_mean")]
    for reference, other in dict.fromkeys(pairs):
        if reference is None or other is None or reference == other:
            continue
        tested = paired_regression_comparison(every.filter(pl.col("split") == "test"), reference, other,
                                              group="participant_id", n_permutations=1000)
        note = f" (EyeBench's best reproduced: {reproduced[0]})" if reproduced and other == reproduced[1] else ""
        for row in tested.iter_rows(named=True):
            lines.append(f"| `{reference}` − `{other}`{note} | {row['regime']} | {row['difference_mean']:+.2f} | "
                         f"{_p(row['t_test_p'])} | {row['permutation_p']:.3f} |")
    markdown = "\n".join(lines) + "\n"
    (out / f"copco_{name}.md").write_text(markdown, encoding="utf-8")
    test.write_csv(out / f"evaluation_{name}.csv")
    every.write_parquet(out / f"predictions_{name}.parquet")
    return markdown


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data" / "copco",
                        help="the CopCo folder (with eyebench/folds and eyebench/results)")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--dataset", type=Path, help="a prepared CopCo dataset (default: OUT/dataset, made here)")
    parser.add_argument("--classical", type=Path, help="a finished eyebench_copco_classical.py run (TYP)")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--folds", type=int, nargs="+")
    parser.add_argument("--ablate", nargs="*", default=["roberteye_w"], metavar="MODEL",
                        help="models whose text and gaze twins are run (config stems)")
    parser.add_argument("--tasks", nargs="+", choices=("TYP", "RCS_eyebench"), default=["TYP", "RCS_eyebench"],
                        help="RCS_eyebench: comprehension skill in EyeBench's published setting (unscored readers "
                             "at -1.0: --data.missing_label -1.0)")
    parser.add_argument("--tables-only", action="store_true")
    args = parser.parse_args()
    out = args.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    times_path = out / "times.json"
    times = json.loads(times_path.read_text(encoding="utf-8")) if times_path.is_file() else {}
    dataset = (args.dataset or out / "dataset").resolve()
    classical = (args.classical or out / "classical").resolve()
    folds = args.data.resolve() / "eyebench" / "folds"
    bench = [sys.executable, "-m", "readgaze.cli", "bench", "-c", str(BENCH_CONFIG), "--dataset", f"copco={dataset}",
             "--out", str(out / "bench"), "--workers", str(args.workers), "--data.fold_files", str(folds),
             *(["--folds", *map(str, args.folds)] if args.folds else [])]
    if not args.tables_only:
        if not (dataset / "trials.parquet").is_file():
            _step(times, "prep", [sys.executable, "-m", "readgaze.cli", "prep", "copco", "--data", str(args.data),
                                  "--out", str(dataset)], out)
        todo = [t for t in args.tasks if not (classical / f"predictions_{t}.parquet").is_file()]
        if todo:
            _step(times, "classical", [sys.executable, str(ROOT / "experiments" / "eyebench_copco_classical.py"),
                                       "--dataset", str(dataset), "--folds", str(folds), "--results",
                                       str(args.data / "eyebench" / "results"), "--out", str(classical),
                                       "--tasks", *todo], out)
        if "RCS_eyebench" in args.tasks:  # the regression task, unscored readers kept at -1.0 as EyeBench's table
            rcs = [*bench[:bench.index("--out")], "--out", str(out / "bench_rcs"), *bench[bench.index("--out") + 2:],
                   "--tasks", "reading_comprehension_skill", "--baselines", "default", "--data.missing_label", "-1.0"]
            _step(times, "bench_rcs", rcs, out)
        if "TYP" in args.tasks:
            _step(times, "bench", bench, out)
        if args.ablate and "TYP" in args.tasks:
            models = [str(ROOT / "experiments" / "configs" / f"{m}.yaml") for m in args.ablate]
            # the same data and trainer settings as copco.yaml's text models, so their own units are reused (same
            # hash); without -c, since the YAML's grid names models this run does not have
            twins = [sys.executable, "-m", "readgaze.cli", "bench", "--dataset", f"copco={dataset}", "--out",
                     str(out / "bench"), "--workers", str(args.workers), "--tasks", "dyslexia", "--baselines", "none",
                     "--models", *models, "--ablate", "text", "gaze", "--data.fold_files", str(folds),
                     "--data.text_encoder", "tiny", "--trainer.max_epochs", "1",
                     *(["--folds", *map(str, args.folds)] if args.folds else [])]
            _step(times, "bench_ablations", twins, out)
        units = [json.loads(p.read_text()) for p in out.glob("bench*/units/**/unit.json")]
        times["bench_units"] = {"n": len(units), "wall_s_sum": round(sum(u.get("seconds", 0) for u in units), 1)}
        times_path.write_text(json.dumps(times, indent=1), encoding="utf-8")
    start = time.perf_counter()
    if "TYP" in args.tasks:
        print(tables(out, classical, args.data / "eyebench" / "results"))
    if "RCS_eyebench" in args.tasks:
        print(rcs_tables(out, classical, args.data / "eyebench" / "results"))
    print(f"tables: {time.perf_counter() - start:.0f} s; times: {times_path}")


if __name__ == "__main__":
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    main()
