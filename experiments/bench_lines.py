"""Speed (and agreement) of readgaze's line-assignment methods vs eyekit's, on the same trials, in one run.

    python experiments/bench_lines.py [--data ../shared/data/line_assignment] [--repeat 3] [--json out.json]

For every method it reports ms per trial (best of ``--repeat`` passes over all trials, so other load on the
machine inflates the numbers less), pooled accuracy against the gold labels, and for the nine methods eyekit
0.7.1 has, eyekit's ms per trial on the same arrays, the speed ratio (eyekit / readgaze) and the share of
fixations on which the two implementations agree. eyekit (GPL) is only imported here, as an optional
comparison; without it the eyekit columns are empty.

To add a contender (e.g. the learned DIST assigner, batched): append to ``CONTENDERS`` a
``(name, fn)`` where ``fn(trials) -> list[np.ndarray]`` assigns every trial in one call.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from readgaze.lines import CLASSICAL, assign_trial
from readgaze.lines.gold import GoldTrial, load_gold

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "line_assignment"
EYEKIT_METHODS = ("chain", "cluster", "merge", "regress", "segment", "slice", "split", "stretch", "warp")


def readgaze_method(name: str) -> Callable[[Sequence[GoldTrial]], list[np.ndarray]]:
    """All trials through :func:`readgaze.lines.assign_trial` with ``method=name``."""
    def fn(trials):
        return [assign_trial(t.xy, t.line_y_px, name, word_xy=t.word_xy, word_line=t.word_line) for t in trials]
    return fn


class _Word:
    def __init__(self, xy):
        self.center = (float(xy[0]), float(xy[1]))


class _Layout:
    """The few attributes eyekit's snapping functions read from a TextBlock, filled from a GoldTrial."""

    def __init__(self, t: GoldTrial):
        self.midlines = [float(y) for y in t.line_y_px]
        self.line_height = float(np.mean(np.diff(t.line_y_px)))
        self.right_to_left = False
        self._words = [_Word(w) for w in t.word_xy]

    def words(self, *args, **kwargs):
        return self._words


def eyekit_method(name: str) -> Callable[[Sequence[GoldTrial]], list[np.ndarray]] | None:
    """All trials through eyekit's implementation of ``name`` (line = nearest midline of its snapped y)."""
    try:
        import eyekit._snap as snap
    except ImportError:
        return None
    algorithm = getattr(snap, name)

    def fn(trials):
        out = []
        for t, layout in zip(trials, [_Layout(t) for t in trials]):
            y = np.asarray(algorithm(t.xy.copy(), layout), dtype=np.float64)
            out.append(np.abs(y[:, None] - t.line_y_px).argmin(axis=1))
        return out
    return fn


def dist_batched(trials: Sequence[GoldTrial]) -> list[np.ndarray]:
    """The learned DIST-style ensemble, all trials in batches of 16 on CPU (classical votes included)."""
    from models.dist import assign_trials

    return assign_trials([(t.xy, t.line_y_px, t.word_xy, t.word_line) for t in trials])


CONTENDERS: list[tuple[str, Callable]] = [("dist (batched)", dist_batched)]  # extra (name, fn(trials) -> lines)


def timed(fn: Callable, trials: Sequence[GoldTrial], repeat: int) -> tuple[list[np.ndarray], float]:
    """Run ``fn`` ``repeat`` times; return its output and the best ms per trial."""
    best = np.inf
    for _ in range(repeat):
        start = time.perf_counter()
        out = fn(trials)
        best = min(best, (time.perf_counter() - start) * 1000 / len(trials))
    return out, best


def pooled(trials: Sequence[GoldTrial], lines: list[np.ndarray]) -> float:
    hit = sum(int((p[t.scored] == t.gold_line[t.scored]).sum()) for t, p in zip(trials, lines))
    return 100.0 * hit / sum(int(t.scored.sum()) for t in trials)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=DATA)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--eyekit-repeat", type=int, default=1, help="passes for eyekit (slow pure Python)")
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args(argv)
    trials = load_gold(args.data)
    rows = {}
    contenders = [(m, readgaze_method(m)) for m in (*CLASSICAL, "nearest")] + CONTENDERS
    for name, fn in contenders:
        ours, ms = timed(fn, trials, args.repeat)
        row = {"ms_per_trial": ms, "pooled": pooled(trials, ours)}
        other = eyekit_method(name) if name in EYEKIT_METHODS else None
        if other is not None:
            theirs, ek_ms = timed(other, trials, args.eyekit_repeat)
            same = sum(int((a == b).sum()) for a, b in zip(ours, theirs)) / sum(len(a) for a in ours)
            row.update(eyekit_ms_per_trial=ek_ms, eyekit_pooled=pooled(trials, theirs),
                       speedup=ek_ms / ms, same_line_share=100.0 * same)
        rows[name] = row
    print(f"{'method':<9} {'ms/trial':>9} {'eyekit ms':>10} {'eyekit/us':>10} {'pooled %':>9} "
          f"{'eyekit %':>9} {'same %':>7}")
    for name, r in rows.items():
        ek = lambda k, f: f.format(r[k]) if k in r else "-"  # noqa: E731
        print(f"{name:<9} {r['ms_per_trial']:>9.2f} {ek('eyekit_ms_per_trial', '{:10.2f}'):>10} "
              f"{ek('speedup', '{:9.1f}x'):>10} {r['pooled']:>9.2f} {ek('eyekit_pooled', '{:9.2f}'):>9} "
              f"{ek('same_line_share', '{:7.2f}'):>7}")
    if args.json is not None:
        args.json.write_text(json.dumps(rows, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
