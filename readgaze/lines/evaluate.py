"""``readgaze eval-lines``: score line-assignment methods against gold line labels.

Works on any folder in the gold-label format of :mod:`readgaze.lines.gold`.
Only fixations the human correctors kept (``discarded == 0``) are scored; every method still sees, and must
place, every fixation. Beside each method it prints the per-trial oracle (on each trial, the best classical
method there), so the headroom left by the classical methods is visible. Where the folder has the human
correctors' own labels (Carr et al. 2022: two correctors before consensus), it also prints their scores, and each
method's score on the fixations where the correctors agreed with gold, so that errors on judgement calls (where a
corrector chose another line or discarded the fixation) are told apart from plain errors.
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
    """The 11 classical methods, ``nearest``, ``vote`` and every ``readgaze.line_assigners`` plugin that imports."""
    from readgaze.lines.registry import CLASSICAL, get_method, plugins

    names = [*CLASSICAL, "nearest", "vote"]
    for name in sorted(plugins()):
        try:
            get_method(name)
        except ConfigError:
            continue
        names.append(name)
    return names


def score_lines(trials: Sequence[GoldTrial], lines: Sequence[np.ndarray]) -> dict:
    """Accuracy of given line assignments (one array per trial) against the gold labels.

    Returns ``pooled`` (% correct over all scored fixations), ``worst_trial`` and ``median_trial`` (% per
    trial, min and median), ``per_trial`` (``{trial_id: %}``), ``per_group`` (pooled % per age group) and
    ``hits`` (``{trial_id: (correct, scored)}``). When every trial has an ``agreed`` mask (the fixations on which
    the human correctors agreed with the gold line, :class:`GoldTrial`), also ``agreed_pooled`` and
    ``agreed_worst_trial``: the same scores on those fixations only, the part of gold that is not a judgement call.
    """
    hits, groups, agreed = {}, {}, {}
    for t, got in zip(trials, lines):
        right = np.asarray(got) == t.gold_line
        hit, n = int(right[t.scored].sum()), int(t.scored.sum())
        hits[t.trial_id] = (hit, n)
        if t.agreed is not None:
            agreed[t.trial_id] = (int(right[t.agreed].sum()), int(t.agreed.sum()))
        g = groups.setdefault(t.group, [0, 0])
        g[0], g[1] = g[0] + hit, g[1] + n
    per_trial = {k: 100.0 * h / max(n, 1) for k, (h, n) in hits.items()}
    acc = np.array(list(per_trial.values()))
    correct, scored = sum(h for h, _ in hits.values()), sum(n for _, n in hits.values())
    out = {"pooled": 100.0 * correct / max(scored, 1), "worst_trial": float(acc.min()),
           "median_trial": float(np.median(acc)), "per_trial": per_trial,
           "per_group": {k: 100.0 * c / max(n, 1) for k, (c, n) in groups.items()}, "hits": hits}
    if agreed and len(agreed) == len(hits):
        out["agreed_pooled"] = 100.0 * sum(h for h, _ in agreed.values()) / max(sum(n for _, n in agreed.values()), 1)
        out["agreed_worst_trial"] = min(100.0 * h / max(n, 1) for h, n in agreed.values())
    return out


def score_method(trials: Sequence[GoldTrial], method: str, **params) -> dict:
    """Accuracy and speed of one method on gold trials.

    The method runs the way ``assign_lines`` (and so ``readgaze prep``) runs it: all trials in one
    :func:`readgaze.lines.assign_trials` call, batched where the method batches. One untimed call on the first
    trial comes first, so one-off costs (imports, loading weights, first-call allocation) are not charged and
    the figure does not depend on which methods ran before.

    Returns
    -------
    dict
        :func:`score_lines`'s keys plus ``ms_per_trial`` (wall time of the timed call / number of trials),
        ``cpu_ms_per_trial`` (this process's CPU time, likewise: less inflated than wall time when other
        processes share the cores) and ``lines`` (the assigned lines per trial).
    """
    from readgaze.lines import assign_trials

    arrays = [(t.xy, t.line_y_px, t.word_xy, t.word_line) for t in trials]
    assign_trials(arrays[:1], method, **params)                          # warm-up, untimed
    start, cpu = time.perf_counter(), time.process_time()
    lines = assign_trials(arrays, method, **params)
    elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu
    per = 1000.0 / max(len(trials), 1)
    return {**score_lines(trials, lines), "ms_per_trial": elapsed * per, "cpu_ms_per_trial": cpu * per,
            "lines": lines}


def oracle(trials: Sequence[GoldTrial], scores: dict[str, dict]) -> dict:
    """The per-trial oracle: on each trial, the best of the classical methods in ``scores`` (the headroom).

    Returns :func:`score_lines`-style ``pooled`` / ``worst_trial`` / ``median_trial`` / ``per_trial`` plus
    ``best`` (``{trial_id: method}``, the first best method in ``CLASSICAL`` order), or ``{}`` without any
    classical method.
    """
    from readgaze.lines import CLASSICAL

    classical = [m for m in CLASSICAL if m in scores]
    if not classical:
        return {}
    best, hits = {}, {}
    for t in trials:
        m = max(classical, key=lambda c: scores[c]["hits"][t.trial_id][0])   # first on ties
        best[t.trial_id], hits[t.trial_id] = m, scores[m]["hits"][t.trial_id]
    per_trial = {k: 100.0 * h / max(n, 1) for k, (h, n) in hits.items()}
    acc = np.array(list(per_trial.values()))
    return {"pooled": 100.0 * sum(h for h, _ in hits.values()) / max(sum(n for _, n in hits.values()), 1),
            "worst_trial": float(acc.min()), "median_trial": float(np.median(acc)), "per_trial": per_trial,
            "best": best}


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
                        help="'all' (11 classical + nearest + vote + plugins) or a comma list, e.g. slice,warp,dist")
    parser.add_argument("--json", type=Path, default=None,
                        help="write {method: {pooled, worst_trial, median_trial, ms_per_trial}} here")


def run(args: argparse.Namespace) -> int:
    every = args.method == "all"
    methods = all_methods() if every else [m.strip() for m in args.method.split(",") if m.strip()]
    results = evaluate(args.data, methods, skip_failing_plugins=every)
    trials = load_gold(args.data)
    best = oracle(trials, results)
    humans = {f"human:{name}": score_lines(trials, [t.human[name] for t in trials])
              for name in (trials[0].human if trials and all(t.human for t in trials) else {})}
    agreed = bool(results) and all("agreed_pooled" in r for r in results.values())
    keys = ("pooled", "worst_trial", "median_trial", "ms_per_trial", "cpu_ms_per_trial")
    table = {m: {k: r[k] for k in keys} for m, r in results.items()}
    if agreed:
        for m, r in results.items():
            table[m] |= {k: r[k] for k in ("agreed_pooled", "agreed_worst_trial")}
    if best:
        for m, r in results.items():       # trials on which the method is at least as good as the oracle
            table[m]["trials_at_oracle"] = sum(r["per_trial"][t] >= v for t, v in best["per_trial"].items())
    print(f"{'method':<10} {'pooled %':>9} {'worst %':>9} {'median %':>9} {'ms/trial':>9} {'cpu ms':>7}"
          + (f" {'=oracle':>7}" if best else "") + (f" {'agreed %':>9} {'worst':>6}" if agreed else ""))
    for m, r in table.items():
        print(f"{m:<10} {r['pooled']:>9.2f} {r['worst_trial']:>9.2f} {r['median_trial']:>9.2f} "
              f"{r['ms_per_trial']:>9.2f} {r['cpu_ms_per_trial']:>7.2f}"
              + (f" {r['trials_at_oracle']:>3}/{len(best['per_trial']):<3}" if best else "")
              + (f" {r['agreed_pooled']:>9.2f} {r['agreed_worst_trial']:>6.2f}" if agreed else ""))
    if best:
        print(f"{'oracle':<10} {best['pooled']:>9.2f} {best['worst_trial']:>9.2f} {best['median_trial']:>9.2f} "
              f"{'':>17}  (per trial, the best classical method here: "
              f"{', '.join(f'{m} {n}x' for m, n in _counts(best['best'].values()))})")
    for m, r in humans.items():
        print(f"{m:<10} {r['pooled']:>9.2f} {r['worst_trial']:>9.2f} {r['median_trial']:>9.2f}"
              "  (a human corrector's own labels, before the consensus that made gold)")
    if best:
        print("=oracle: trials on which the method is at least as accurate as the best classical method there; "
              "ms/trial: wall time, all trials in one batched call; cpu ms: this process's CPU time")
    if agreed:
        print("agreed: scored only on the fixations where every human corrector's own label equals gold "
              "(pooled %, worst trial %)")
    if args.json is not None:
        if best:
            table["oracle"] = {k: best[k] for k in ("pooled", "worst_trial", "median_trial")}
        for m, r in humans.items():
            table[m] = {k: r[k] for k in ("pooled", "worst_trial", "median_trial")}
        args.json.write_text(json.dumps(table, indent=1) + "\n")
    return 0


def _counts(values) -> list[tuple[str, int]]:
    out: dict[str, int] = {}
    for v in values:
        out[v] = out.get(v, 0) + 1
    return sorted(out.items(), key=lambda kv: -kv[1])
