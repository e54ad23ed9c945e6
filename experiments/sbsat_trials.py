"""SB-SAT's real trial report: classical baselines on reading comprehension, readers and books held out, beside
EyeBench's published SBSAT_RC numbers.

Run (about a minute on 2 CPU cores)::

    python experiments/sbsat_trials.py --data ../shared/data/sbsat/fixation --out results/sbsat_trials

Data (Ahn et al. 2020, ETRA, doi:10.1145/3379156.3391335): the Data Viewer trial report ``18sat_trialfinal.csv``,
one row per page visit, read by :func:`readgaze.io.sbsat.read_sbsat_trials`, and ``18sat_labels.csv``, one row
per reader x book (passage).

How the labels attach (:func:`comprehension_trials`):

* The unit is a **reading page** (``type == "reading"``), first visit only: revisits of a page (``repeated_reading``,
  the report's later ``INDEX``) are dropped and counted, as ``readgaze prep`` drops repeated reading. Question pages
  carry no reading of the passage and are not used as inputs.
* The label is the reader's comprehension of the whole passage: ``acc`` of ``18sat_labels.csv``, the share of the
  book's 5 keyed questions answered correctly, joined on reader (``RECORDING_SESSION_LABEL`` = ``subj``) and book
  (``book_name`` = ``book``), so every page of a reader x book carries the same label. Checked here: ``acc`` equals
  the share of question pages of that reader x book with ``answer == correct_answer`` (all 380 pairs).
* Binarised as SB-SAT's own ``acc_level`` is by its authors (``acc_level`` 0/1 -> 0, 2/3 -> 1): 1 = at least 3 of
  the 5 questions right (``acc >= 0.6``; 231 of the 380 reader x book pairs).

Features: the trial report's own per-page summaries (:data:`FEATURES`: fixation and saccade means and SDs, counts,
blinks, pupil, page time, visited interest areas) and ``fixations_per_second``. No fixation-level or text input:
these are the classical baselines a reader of the report can fit.

Protocol: :func:`readgaze.splits.make_splits` with K = 4 folds of readers and of books (4 books: one book per fold),
fold k validates and fold k+1 tests (:func:`readgaze.splits.assign_fold`), so each fold's test trials fall into the
three regimes of EyeBench: new reader (seen book), new book (seen reader), new reader and book. Baselines
(:mod:`readgaze.baselines`) fit on the training trials of each fold and choose their grid point on validation:
majority, a logistic regression on page time alone, a logistic regression and gradient boosting on all features,
a random forest. Scores per fold (:func:`readgaze.metrics.evaluate`): AUROC and balanced accuracy at 0.5, mean ±
SEM over the 4 folds; "all" pools a fold's regimes. Page level (each page scored) and reader x book level (the mean
probability of the pair's pages in that fold and regime, as networks on windows are aggregated).

Published (EyeBench v1.0, ``results/formatted_eyebench_benchmark_results/SBSAT_RC_test.csv``), AUROC new reader /
new text / both / average: :data:`EYEBENCH_SBSAT_RC`. What differs: EyeBench trains on fixation- and word-level
inputs with the text, over its own 4 folds and trial selection; here only the trial report's page summaries, the
label and unit stated above, and readgaze's folds (seed 0). Its RC label is taken to be the same passage accuracy;
its exact binarisation and page selection are not restated in its result files.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import polars as pl

from readgaze.baselines import run_baseline
from readgaze.io.sbsat import read_sbsat_trials
from readgaze.metrics import evaluate, results_table
from readgaze.splits import assign_fold, make_splits

FEATURES = ("AVERAGE_FIXATION_DURATION", "SD_FIXATION_DURATION", "AVERAGE_SACCADE_AMPLITUDE", "SD_SACCADE_AMPLITUDE",
            "FIXATION_COUNT", "SACCADE_COUNT", "BLINK_COUNT", "AVERAGE_BLINK_DURATION", "PUPIL_SIZE_MEAN",
            "VISITED_INTEREST_AREA_COUNT", "RT", "fixations_per_second")
"""Per-page inputs: the trial report's summary columns plus fixations per second of page time."""
BASELINES = {"majority": ("majority", None),
             "page time (LR)": ("reading_speed", ("RT",)),
             "logistic regression (12 page features)": ("meziere_logistic_regression", FEATURES),
             "gradient boosting (12 page features)": ("gradient_boosting", FEATURES),
             "random forest (12 page features)": ("random_forest", FEATURES)}
"""Row name -> (:data:`readgaze.baselines.BASELINES` kind, features; None = the kind's own)."""
EYEBENCH_SBSAT_RC = {"Chance": (50.0, 50.0, 50.0, 50.0), "Reading Speed": (52.0, 50.8, 52.4, 50.8),
                     "Text-only RoBERTa": (67.1, 43.7, 46.0, 55.9), "LogReg": (53.7, 52.3, 47.8, 52.3),
                     "SVM": (50.7, 50.3, 48.3, 50.2), "RF": (54.5, 51.6, 48.2, 52.3),
                     "AhnCNN": (49.8, 52.7, 48.4, 50.8), "BEyeLSTM": (51.6, 51.1, 48.9, 50.1),
                     "PLM-AS": (49.7, 49.9, 49.5, 49.5), "PLM-AS-RM": (53.0, 54.7, 54.2, 53.9),
                     "RoBERTEye-W": (59.9, 52.5, 56.1, 57.4), "RoBERTEye-F": (58.7, 53.4, 51.8, 56.0),
                     "MAG-Eye": (65.6, 44.8, 42.0, 56.0), "PostFusion-Eye": (57.9, 55.9, 52.7, 55.4)}
"""EyeBench v1.0 SBSAT_RC test AUROC (%): new reader, new text, both, average (mean over its 4 folds)."""
N_FOLDS = 4


def comprehension_trials(folder: str | Path) -> tuple[pl.DataFrame, dict]:
    """Reading pages with the passage-comprehension label and the page features (module docstring).

    Returns the trials (``trial_id``, ``participant_id``, ``item_id`` = book, ``text_id`` = page, ``acc``,
    ``label`` Int64, :data:`FEATURES`) and counts: pages read, revisits dropped, pairs, the label check.
    Raises ``ValueError`` when ``acc`` disagrees with the question pages.
    """
    folder = Path(folder)
    trials = read_sbsat_trials(folder / "18sat_trialfinal.csv").collect()
    labels = pl.read_csv(folder / "18sat_labels.csv").select(pl.col("subj").alias("participant_id"),
                                                             pl.col("book").alias("item_id"), "acc", "acc_level")
    answered = (trials.filter(pl.col("is_correct").is_not_null())
                .group_by("participant_id", "item_id").agg(pl.col("is_correct").mean().alias("acc_questions"),
                                                           pl.len().alias("questions")))
    check = labels.join(answered, on=["participant_id", "item_id"], how="left")
    disagree = check.filter((pl.col("acc") - pl.col("acc_questions")).abs() > 1e-9).height
    if disagree or check["acc_questions"].null_count():
        raise ValueError(f"18sat_labels.csv acc disagrees with the question pages for {disagree} reader x book "
                         f"pairs ({check['acc_questions'].null_count()} without question pages)")
    reading = trials.filter(pl.col("type") == "reading")
    first = reading.filter(~pl.col("repeated_reading"))
    table = (first.join(labels, on=["participant_id", "item_id"], how="inner")
             .with_columns((pl.col("acc") >= 0.6).cast(pl.Int64).alias("label"),
                           (pl.col("FIXATION_COUNT") / pl.col("RT") * 1000.0).alias("fixations_per_second"))
             .select("trial_id", "participant_id", "item_id", "text_id", "acc", "acc_level", "label",
                     *[pl.col(c).cast(pl.Float64) for c in FEATURES]))
    if not table.select((pl.col("label") == (pl.col("acc_level") >= 2).cast(pl.Int64)).all()).item():
        raise ValueError("acc >= 0.6 and acc_level >= 2 disagree")
    counts = {"reading page visits": reading.height, "revisits dropped": reading.height - first.height,
              "pages kept": table.height, "reader x book pairs": table.select("participant_id", "item_id").n_unique(),
              "readers": table["participant_id"].n_unique(), "books": table["item_id"].n_unique(),
              "positive pairs": int(table.unique(["participant_id", "item_id"])["label"].sum()),
              "acc checked against question pages": check.height}
    return table, counts


def predictions(table: pl.DataFrame, seed: int = 0) -> pl.DataFrame:
    """Test predictions of every :data:`BASELINES` row over the 4 folds (page level)."""
    splits = make_splits(table, n_folds=N_FOLDS, seed=seed)
    assignment = pl.concat([assign_fold(table, splits, fold) for fold in range(N_FOLDS)]).drop_nulls("split")
    parts = []
    for name, (kind, features) in BASELINES.items():
        out = run_baseline(table, assignment, "comprehension", kind, features=features, split="test")
        parts.append(out.with_columns(pl.lit(name).alias("model")))
    return pl.concat(parts, how="diagonal_relaxed").with_columns(pl.lit("test").alias("split"))


def pair_level(page: pl.DataFrame) -> pl.DataFrame:
    """Mean probability of each reader x book's pages, per model, fold and regime (one row per pair)."""
    return (page.group_by("model", "fold_index", "regime", "participant_id", "item_id", maintain_order=True)
            .agg(pl.col("prediction_prob").mean(), pl.col("label").first(), pl.len().alias("pages"))
            .with_columns(pl.format("{}_{}", "participant_id", "item_id").alias("trial_id"),
                          pl.lit("test").alias("split")))


def comparison_markdown(ours: pl.DataFrame) -> str:
    """Our page- and pair-level AUROC beside EyeBench's SBSAT_RC, regime by regime (%)."""
    regimes = ("new_participant", "new_item", "new_item_participant", "all")
    lines = ["| source | model | new reader | new book (text) | both | average / all |", "|---|---|---|---|---|---|"]
    cells = {(r["level"], r["model"], r["regime"]): r for r in ours.iter_rows(named=True)}
    for level in ("page", "reader x book"):
        for model in BASELINES:
            values = []
            for regime in regimes:
                row = cells.get((level, model, regime))
                mean, sem = (None, None) if row is None else (row["auroc_mean"], row["auroc_sem"])
                values.append("–" if mean is None or np.isnan(mean) else
                              f"{100 * mean:.1f}" + ("" if sem is None else f" ± {100 * sem:.1f}"))
            lines.append(f"| readgaze, trial report, {level} | {model} | " + " | ".join(values) + " |")
    for model, numbers in EYEBENCH_SBSAT_RC.items():
        lines.append(f"| EyeBench v1.0 SBSAT_RC | {model} | " + " | ".join(f"{v:.1f}" for v in numbers) + " |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", required=True, help="SB-SAT fixation folder (18sat_trialfinal.csv, 18sat_labels.csv)")
    parser.add_argument("--out", default="results/sbsat_trials")
    parser.add_argument("--seed", type=int, default=0, help="seed of the reader and book folds")
    args = parser.parse_args(argv)
    table, counts = comprehension_trials(args.data)
    page = predictions(table, args.seed)
    levels = []
    tables = []
    for level, frame in (("page", page), ("reader x book", pair_level(page))):
        scored = evaluate(frame)
        levels.append(scored.with_columns(pl.lit(level).alias("level")))
        tables.append(f"## {level} level\n\n" + results_table(scored, metrics=("balanced_accuracy", "auroc")))
    ours = pl.concat(levels)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    ours.write_csv(out / "results.csv")
    page.write_parquet(out / "predictions.parquet")
    text = ("# SB-SAT trial report: comprehension (>= 3 of 5 right), classical baselines, 4 reader x book folds\n\n"
            + "\n".join(f"- {k}: {v:,}" for k, v in counts.items()) + "\n\n## AUROC beside EyeBench (%)\n\n"
            + comparison_markdown(ours) + "\n" + "\n".join(tables))
    (out / "results.md").write_text(text, encoding="utf-8")
    print(text)
    print(f"written to {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
