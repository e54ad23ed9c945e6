"""``readgaze predict BUNDLE DATASET --out predictions.parquet``: score new recordings with a trained model.

``BUNDLE`` is the ``bundle/`` folder that ``readgaze fit`` and ``readgaze cv`` write beside each checkpoint (or a run
folder holding exactly one); ``DATASET`` a folder written by ``readgaze prep`` from the new recordings, with or
without labels. Every trial is scored (:meth:`readgaze.models.training.bundle.ModelBundle.predict`): P(class 1),
the class at the threshold chosen on validation, and whether its participant and item were among the training
trials' (``regime``). With labels, the scores per regime follow, each with its number of trials (a score from fewer
than 30 is marked). The data is checked against the bundle first: a missing feature column, another tokenizer or
another readgaze version stops it with the difference named.

This module imports no torch until it runs, so ``readgaze predict --help`` is immediate.
"""

from __future__ import annotations

import argparse
import sys
import time

EXAMPLE = """example:
  readgaze fit -c reading_goal/roberteye_f --data.path ds --data.text_encoder tiny
  readgaze predict runs/reading_goal/roberteye_f/csv/version_0/bundle new_ds --out new_predictions.parquet

Python: readgaze.load_model(BUNDLE).predict(DATASET) returns the same table."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = ("Score every trial of a prepared dataset with a trained model bundle (written by readgaze "
                          "fit or cv beside the checkpoint), with or without labels.")
    parser.epilog = EXAMPLE
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.add_argument("bundle", help="model bundle folder (<run>/bundle), or a run folder holding one")
    parser.add_argument("dataset", help="dataset folder written by readgaze prep (labels optional)")
    parser.add_argument("--out", default="predictions.parquet",
                        help="predictions file, .parquet or .csv (default predictions.parquet); with labels, "
                             "<stem>_scores.csv beside it")
    parser.add_argument("--batch-size", type=int, default=None, help="default: the training batch size")
    parser.add_argument("--device", default="cpu", help="torch device (default cpu)")
    parser.add_argument("--allow-other-version", action="store_true",
                        help="warn instead of stopping when the bundle, the data and this readgaze differ in "
                             "version")


def run(args: argparse.Namespace) -> int:
    import os

    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # nothing is downloaded at run time
    started = time.perf_counter()
    from readgaze.models.training.bundle import load_model
    from readgaze.models.training.summary import regime_scores, regression_regime_scores, score_table

    bundle = load_model(args.bundle)
    frame = bundle.predict(args.dataset, out=args.out, batch_size=args.batch_size, device=args.device,
                           allow_other_version=args.allow_other_version)
    counts = dict(frame.group_by("regime").len().iter_rows())
    regimes = ", ".join(f"{n:,} {r}" for r, n in sorted(counts.items()))
    labelled = frame["label"].drop_nulls().len()
    lines = [f"readgaze predict: scored {frame.height:,} trials of {args.dataset} with {bundle.spec['model']['name']} "
             f"({bundle.task}) in {time.perf_counter() - started:.0f} s; wrote {args.out}",
             f"  regimes (participant / item among the training trials'): {regimes}"]
    if bundle.is_regression:
        values = frame["prediction_value"].drop_nulls()
        lines.append(f"  predicted values: {values.min():.4g} to {values.max():.4g}, mean {values.mean():.4g} "
                     f"(the training mean, chance: {bundle.chance:.4g})" if values.len() else "  no predicted value")
    else:
        lines.append(f"  predicted class at the validation threshold {_number(bundle.threshold)}: "
                     + ", ".join(f"{n:,} {c}" for c, n in sorted(frame.group_by("predicted_label").len().iter_rows(),
                                                                  key=lambda cn: str(cn[0]))))
    if labelled:
        from pathlib import Path

        out = Path(args.out)
        scores = (regression_regime_scores(frame, bundle.chance) if bundle.is_regression
                  else regime_scores(frame, bundle.threshold))
        unit = "target units" if bundle.is_regression else "%"
        lines += [f"  labels on {labelled:,} trials: scores per regime ({unit}), also in "
                  f"{out.with_name(out.stem + '_scores.csv')}", score_table(scores, indent="    ")]
    else:
        lines.append("  no labels: no scores (the trials are scored all the same)")
    if bundle.is_regression:
        print("\n".join(lines), file=sys.stderr)
        return 0
    probs = frame["prediction_prob"].drop_nulls()
    if probs.dtype.is_float() and probs.len() > 1 and float(probs.max() - probs.min()) < SPREAD:
        lines.append(f"  warning: the probabilities span only {probs.min():.3f}-{probs.max():.3f} over "
                     f"{probs.len():,} trials: the model barely separates them (a bundle from a short or failed "
                     "training?), so its predicted classes mean little")
    if frame["prediction_prob"].null_count():
        lines.append(f"  warning: {frame['prediction_prob'].null_count():,} trials got no prediction")
    print("\n".join(lines), file=sys.stderr)
    return 0


SPREAD = 0.01
"""Probabilities spread over less than this across a dataset's trials draw a warning: the model is about constant."""


def _number(value) -> str:
    return "none (the most probable class)" if value is None else f"{value:.4g}"
