"""SB-SAT book-wise windows: AhnRNN and AhnCNN per binarised label, beside chance, a reader lookup and two classical
baselines on per-window summaries.

Run (about 5 minutes on 2 CPU cores)::

    python experiments/sbsat_bookwise.py --data ../shared/data/sbsat/bookwise --out results/sbsat_bookwise

Data: the authors' book-wise windows of Ahn et al. (2020, ETRA, doi:10.1145/3379156.3391335), read by
:func:`readgaze.io.sbsat.read_sbsat_windows`: 21 fixations per window, ``[x, y, pupil, duration]`` scaled to
[0, 1]; per window the reader × book labels, binarised. The split is the published one, as saved: for each reader
two books train, one validates and one tests, so **every reader is in every split** and only the books differ.

Per label (``acc_level``, ``subj_acc_level`` and the other binarised labels of the files), on the test windows:

* ``chance``: the training majority class for every window (balanced accuracy and AUROC 0.5);
* ``reader lookup``: each test window gets its reader's mean label over their training windows. It reads no gaze
  at all: what it scores is what recognising the reader is worth. A label constant per reader (``subj_acc_level``,
  ``native``, ``sleephours``) is marked "scorable by recognising the reader": in this split a model can score it by
  identifying the reader from their gaze, without measuring anything about the text. ``acc_level`` (passage
  accuracy quartile, reader × book) is the label that measures comprehension of a text;
* ``logistic regression`` and ``gradient boosting`` on 12 plain numbers per window
  (:func:`readgaze.baselines.sequence_summaries`: mean, standard deviation and mean absolute step of each of the 4
  channels), fit on the training windows and chosen on the validation windows by
  :func:`readgaze.baselines.run_baseline` (its Mézière logistic-regression grid, C in {0.1 ... 100} or no penalty,
  class-balanced; its gradient-boosting grid, learning rate x depth x leaf size, class-balanced), the same windows
  and the same per-pair aggregation as the networks. Where the networks lose to them, the table shows it;
* ``AhnRNN``, ``AhnCNN`` (:mod:`readgaze.models.ahn_rnn`, :mod:`readgaze.models.ahn_cnn`, the CNN with the paper's
fixed 21-fixation
  head): trained on the training windows with class-weighted cross-entropy, AdamW, early stopping on the
  validation loss (the epoch with the lowest validation loss is kept), then scored once on test.

Metrics: balanced accuracy at 0.5 and AUROC over windows, and AUROC over reader × book pairs (mean probability of
the pair's windows). With ``--seeds N`` each network is trained N times (seeds ``--seed`` .. ``--seed + N - 1``)
and the table gives the mean ± standard deviation over seeds: one seed moves AUROC by several points here.
Written to ``OUT/results.csv`` and ``OUT/results.md``.
"""

from __future__ import annotations

import argparse
import logging
import sys
import time
from pathlib import Path

import numpy as np
import polars as pl
import torch
from sklearn.metrics import balanced_accuracy_score, roc_auc_score

from readgaze.baselines import run_baseline, sequence_summaries
from readgaze.io.sbsat import WINDOW_FEATURES, read_sbsat_windows, reader_constant_labels
from readgaze.models.ahn_cnn import AhnCNN
from readgaze.models.ahn_rnn import AhnRNN

log = logging.getLogger("sbsat_bookwise")
AHN_ORDER = [WINDOW_FEATURES.index(c) for c in ("duration", "pupil", "x", "y")]
"""The arrays' ``[x, y, pupil, duration]`` reordered to the models' ``duration, pupil, x, y``."""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", required=True, help="the SB-SAT bookwise folder (train/, val/, test/)")
    parser.add_argument("--out", default="results/sbsat_bookwise", help="folder for results.csv and results.md")
    parser.add_argument("--labels", nargs="+", help="labels to run (default: every label in the files)")
    parser.add_argument("--max-epochs", type=int, default=40)
    parser.add_argument("--patience", type=int, default=5)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--learning-rate", type=float, default=1e-3)
    parser.add_argument("--seed", type=int, default=0, help="first seed")
    parser.add_argument("--seeds", type=int, default=1, help="seeds per model (table: mean, and sd over seeds)")
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--no-networks", action="store_true", help="only chance, reader lookup and the classical "
                        "baselines (about 1-2 min per label on 2 busy cores: the gradient-boosting grid)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    windows = read_sbsat_windows(args.data)
    constant = reader_constant_labels(windows.labels, windows.label_names)
    rows = []
    for label in args.labels or windows.label_names:
        t0 = time.perf_counter()
        rows += run_label(windows, label, constant[label], args)
        log.info("%s done in %.0f s", label, time.perf_counter() - t0)
    table = pl.DataFrame(rows, infer_schema_length=None)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    table.write_csv(out / "results.csv")
    (out / "results.md").write_text(markdown(table), encoding="utf-8")
    print(markdown(table))
    print(f"written to {out}")
    return 0


def run_label(windows, label: str, reader_constant: bool, args) -> list[dict]:
    """The rows of one label: chance, reader lookup, the two classical baselines, AhnRNN and AhnCNN."""
    (x_train, train), (x_val, val), (x_test, test) = (windows.split(s) for s in ("train", "val", "test"))
    y_train, y_val, y_test = (f[label].to_numpy().copy() for f in (train, val, test))
    majority = float(np.bincount(y_train, minlength=2).argmax())
    reader_mean = train.group_by("participant_id").agg(pl.col(label).mean().alias("p"))
    lookup = test.join(reader_mean, on="participant_id", how="left")["p"].fill_null(float(y_train.mean())).to_numpy()
    base = {"label": label, "scored_by": "recognising the reader" if reader_constant else "reader x book",
            "test_windows": len(y_test), "test_positive_share": float(y_test.mean()),
            "test_pairs": test.select("participant_id", "item_id").n_unique()}
    rows = [{**base, "model": name, "seeds": 1, **metrics(score, y_test, test)}
            for name, score in (("chance", np.full(len(y_test), majority)), ("reader lookup", lookup))]
    rows += [{**base, "model": name, "seeds": 1, **metrics(score, y_test, test)}
             for name, score in summary_baselines(windows, label).items()]
    if args.no_networks:
        return rows
    builders = (("AhnRNN", AhnRNN), ("AhnCNN", lambda: AhnCNN(sequence_length=x_train.shape[1])))
    for name, build in builders:
        runs = []
        for seed in range(args.seed, args.seed + args.seeds):
            torch.manual_seed(seed)  # the initial weights, dropout and batch order of this seed only
            model = build().to(args.device)
            fit(model, x_train[..., AHN_ORDER], y_train, x_val[..., AHN_ORDER], y_val, args, seed)
            runs.append(metrics(predict(model, x_test[..., AHN_ORDER], args), y_test, test))
        summary = {k: float(np.mean([r[k] for r in runs])) if runs[0][k] is not None else None for k in runs[0]}
        spread = {f"{k}_sd": float(np.std([r[k] for r in runs], ddof=1)) if len(runs) > 1 and runs[0][k] is not None
                  else None for k in runs[0]}
        rows.append({**base, "model": name, "seeds": len(runs), **summary, **spread})
    return rows


SUMMARY_BASELINES = {"meziere_logistic_regression": "logistic regression (12 window summaries)",
                     "gradient_boosting": "gradient boosting (12 window summaries)"}
"""Baseline kind of :mod:`readgaze.baselines` (its estimator and validation grid) -> row name."""


def summary_baselines(windows, label: str) -> dict[str, np.ndarray]:
    """Test-window P(label = 1) of each :data:`SUMMARY_BASELINES` model on :func:`sequence_summaries` features.

    Fit on the training windows, grid point chosen on the validation windows (AUROC), predictions in the test
    array's window order.
    """
    frames = []
    for split in ("train", "val", "test"):
        x, rows = windows.split(split)
        frames.append(rows.select(pl.format("{}_{}", pl.lit(split), pl.col("window_index")).alias("trial_id"),
                                  "participant_id", "item_id", pl.col(label).alias("label"),
                                  pl.lit(split).alias("split"))
                      .hstack(sequence_summaries(x, WINDOW_FEATURES)))
    table = pl.concat(frames)
    features = [c for c in table.columns if c.endswith(("_mean", "_sd", "_mean_abs_step"))]
    assignment = table.select("trial_id", pl.lit(0, pl.Int32).alias("fold_index"), "split",
                              pl.lit("seen").alias("regime"))
    test_order = table.filter(pl.col("split") == "test").select("trial_id")
    out = {}
    for kind, name in SUMMARY_BASELINES.items():
        predicted = run_baseline(table, assignment, "comprehension", kind, features=features, split="test")
        out[name] = test_order.join(predicted, on="trial_id", how="left")["prediction_prob"].to_numpy()
    return out


def fit(model, x_train, y_train, x_val, y_val, args, seed: int) -> None:
    """AdamW on class-weighted cross-entropy; keep the weights of the epoch with the lowest validation loss."""
    device = args.device
    model.set_class_weights(torch.as_tensor(np.bincount(y_train, minlength=2)))
    model.class_weights = model.class_weights.to(device)
    xt, yt = torch.as_tensor(x_train, device=device), torch.as_tensor(y_train, device=device)
    xv, yv = torch.as_tensor(x_val, device=device), torch.as_tensor(y_val, device=device)
    lengths_t = torch.full((len(xt),), xt.shape[1], dtype=torch.int64)
    lengths_v = torch.full((len(xv),), xv.shape[1], dtype=torch.int64)
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.learning_rate)
    generator = torch.Generator().manual_seed(seed)
    best, best_state, stale = float("inf"), None, 0
    for epoch in range(args.max_epochs):  # noqa: B007 (logged after the loop)
        model.train()
        for index in torch.randperm(len(xt), generator=generator).split(args.batch_size):
            optimizer.zero_grad()
            loss = model.loss(model.classify(xt[index.to(device)], lengths_t[index]), yt[index.to(device)])
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
        model.eval()
        with torch.no_grad():
            val_loss = float(model.loss(model.classify(xv, lengths_v), yv))
        if val_loss < best - 1e-4:
            best, stale = val_loss, 0
            best_state = {k: v.detach().clone() for k, v in model.state_dict().items()}
        else:
            stale += 1
            if stale >= args.patience:
                break
    log.info("  %s: best validation loss %.4f, stopped after epoch %d", type(model).__name__, best, epoch)
    model.load_state_dict(best_state)


def predict(model, x, args) -> np.ndarray:
    model.eval()
    xs = torch.as_tensor(x, device=args.device)
    with torch.no_grad():
        logits = model.classify(xs, torch.full((len(xs),), xs.shape[1], dtype=torch.int64))
    return logits.softmax(-1)[:, 1].cpu().numpy()


def metrics(score: np.ndarray, y: np.ndarray, rows: pl.DataFrame) -> dict:
    """Window balanced accuracy (score > 0.5) and AUROC; AUROC of the pair means (reader x book)."""
    pairs = (rows.select("participant_id", "item_id").with_columns(pl.Series("score", score), pl.Series("y", y))
             .group_by("participant_id", "item_id").agg(pl.col("score").mean(), pl.col("y").first()))
    two = len(np.unique(y)) == 2 and pairs["y"].n_unique() == 2
    return {"balanced_accuracy": float(balanced_accuracy_score(y, (score > 0.5).astype(int))),
            "auroc": float(roc_auc_score(y, score)) if two else None,
            "pair_auroc": float(roc_auc_score(pairs["y"].to_numpy(), pairs["score"].to_numpy())) if two else None}


def markdown(table: pl.DataFrame) -> str:
    """One row per label × model, in % (chance first), the reader-constant labels marked."""
    lines = ["# SB-SAT book-wise windows (published split; every reader in train, val and test)", "",
             "Test windows; balanced accuracy at 0.5 and AUROC in %. \"scorable by recognising the reader\": the "
             "label is constant per reader, so in this split it can be scored by identifying the reader. "
             "\"reader lookup\" reads no gaze: each test window gets its reader's mean label over their training "
             "windows, so it measures what recognising the reader is worth for every label. acc_level (passage "
             "accuracy, reader x book) is the label that measures comprehension of a text.", "",
             "| label | scored by | test windows (pairs) | positive | model | bal. acc. | AUROC | pair AUROC |",
             "|---|---|---|---|---|---|---|---|"]
    def pct(row: dict, key: str) -> str:
        value, sd = row.get(key), row.get(f"{key}_sd")
        return "–" if value is None else f"{100 * value:.1f}" + ("" if sd is None else f" ± {100 * sd:.1f}")

    for row in table.iter_rows(named=True):
        scored = ("scorable by recognising the reader" if row["scored_by"] == "recognising the reader"
                  else "reader x book (varies within reader)")
        model = row["model"] + (f" ({row['seeds']} seeds)" if row["seeds"] > 1 else "")
        lines.append(f"| {row['label']} | {scored} | {row['test_windows']} ({row['test_pairs']}) | "
                     f"{100 * row['test_positive_share']:.1f} | {model} | {pct(row, 'balanced_accuracy')} | "
                     f"{pct(row, 'auroc')} | {pct(row, 'pair_auroc')} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
