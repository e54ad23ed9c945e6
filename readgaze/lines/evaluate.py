"""``readgaze eval-lines``: score line-assignment methods against gold line labels.

Works on any folder in the format of ``shared/data/line_assignment`` (see :mod:`readgaze.lines.gold`).
Only fixations the human correctors kept (``discarded == 0``) are scored; every method still sees, and must
place, every fixation.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from readgaze.errors import ConfigError
from readgaze.lines.gold import GoldTrial, load_gold


def all_methods() -> list[str]:
    """The 11 classical methods, ``nearest``, and every ``readgaze.line_assigners`` plugin that imports."""
    from readgaze.lines import CLASSICAL, get_method, plugins

    names = [*CLASSICAL, "nearest"]
    for name in sorted(plugins()):
        try:
            get_method(name)
        except ConfigError:
            continue
        names.append(name)
    return names


def score_method(trials: Sequence[GoldTrial], method: str, **params) -> dict:
    """Accuracy of one method on gold trials.

    Returns
    -------
    dict
        ``pooled`` (% correct over all scored fixations), ``worst_trial`` and ``median_trial`` (% per trial,
        min and median), ``ms_per_trial`` (mean wall time of :func:`assign_trial` per trial, ms),
        ``per_trial`` (``{trial_id: %}``) and ``per_group`` (pooled % per age group).
    """
    from readgaze.lines import assign_trial

    correct, scored, per_trial, groups = 0, 0, {}, {}
    elapsed = 0.0
    for t in trials:
        start = time.perf_counter()
        got = assign_trial(t.xy, t.line_y_px, method, word_xy=t.word_xy, word_line=t.word_line, **params)
        elapsed += time.perf_counter() - start
        hit = int((got[t.scored] == t.gold_line[t.scored]).sum())
        n = int(t.scored.sum())
        correct, scored = correct + hit, scored + n
        per_trial[t.trial_id] = 100.0 * hit / max(n, 1)
        g = groups.setdefault(t.group, [0, 0])
        g[0], g[1] = g[0] + hit, g[1] + n
    acc = np.array(list(per_trial.values()))
    return {"pooled": 100.0 * correct / max(scored, 1), "worst_trial": float(acc.min()),
            "median_trial": float(np.median(acc)), "ms_per_trial": 1000.0 * elapsed / max(len(trials), 1),
            "per_trial": per_trial, "per_group": {k: 100.0 * c / max(n, 1) for k, (c, n) in groups.items()}}


def evaluate(data: str | Path, methods: Sequence[str], *, skip_failing_plugins: bool = False) -> dict[str, dict]:
    """Score every method in ``methods`` on the gold folder ``data`` (see :func:`score_method`).

    A plugin (entry point) that fails while assigning raises :class:`ConfigError` naming it, or, with
    ``skip_failing_plugins``, is left out of the result with a note on stderr.
    """
    from readgaze.errors import ReadgazeError
    from readgaze.lines import METHODS

    trials = load_gold(data)
    out = {}
    for m in methods:
        try:
            out[m] = score_method(trials, m)
        except Exception as e:
            if m in METHODS or (isinstance(e, ReadgazeError) and not skip_failing_plugins):
                raise
            if not skip_failing_plugins:
                raise ConfigError(f"line assigner {m!r} failed: {type(e).__name__}: {e}") from e
            print(f"eval-lines: skipped {m!r} ({type(e).__name__}: {e})", file=sys.stderr)
    return out


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--data", required=True, type=Path, help="folder in the line_assignment format")
    parser.add_argument("--method", default="all",
                        help="'all' (11 classical + nearest + plugins) or a comma list, e.g. slice,warp,dist")
    parser.add_argument("--json", type=Path, default=None,
                        help="write {method: {pooled, worst_trial, median_trial, ms_per_trial}} here")


def run(args: argparse.Namespace) -> int:
    every = args.method == "all"
    methods = all_methods() if every else [m.strip() for m in args.method.split(",") if m.strip()]
    results = evaluate(args.data, methods, skip_failing_plugins=every)
    table = {m: {k: r[k] for k in ("pooled", "worst_trial", "median_trial", "ms_per_trial")}
             for m, r in results.items()}
    print(f"{'method':<10} {'pooled %':>9} {'worst %':>9} {'median %':>9} {'ms/trial':>9}")
    for m, r in table.items():
        print(f"{m:<10} {r['pooled']:>9.2f} {r['worst_trial']:>9.2f} {r['median_trial']:>9.2f} "
              f"{r['ms_per_trial']:>9.2f}")
    if args.json is not None:
        args.json.write_text(json.dumps(table, indent=1) + "\n")
    return 0
