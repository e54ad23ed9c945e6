"""Speed (and agreement) of readgaze's line-assignment methods vs eyekit's, on the same trials, in one run.

    python experiments/bench_lines.py [--data ../shared/data/line_assignment] [--repeat 3] [--json out.json]
    python experiments/bench_lines.py --only dist --eyekit-repeat 0      # dist alone, with its stage breakdown

For every method it reports ms per trial (best of ``--repeat`` passes over all trials, so other load on the
machine inflates the numbers less; readgaze's methods run batched, as ``assign_lines`` runs them), the CPU ms
of this process, trials per second, pooled and worst-trial accuracy against the gold labels, and for the nine
methods eyekit
0.7.1 has, eyekit's ms per trial on the same arrays, the speed ratio (eyekit / readgaze) and the share of
fixations on which the two implementations agree. eyekit (GPL) is only imported here, as an optional
comparison; without it the eyekit columns are empty.

With ``dist`` among the rows it also prints dist's stages (each classical vote input, features, the forward of
the default file (``dist_stress.pt``, one small member) with its floating-point work, the decoding (one pass
without the file's trend pass, otherwise both); best CPU and wall ms per trial) and whether its pooled / worst-trial
accuracy still equals the figures pinned in ``tests/test_dist_assigner.py``. Stages show the best wall and CPU ms and
the median CPU ms over the passes; the dist line gives trials/s at the best, median and slowest pass (on a shared
machine the spread is the load's, so compare medians of several runs). ``--dist-weights FILE`` adds a row for
another file (``models/dist/weights/dist.pt``: the 4-member ensemble; ``dist_small.pt``: the landed distilled
member), under the same vote guard.

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

from readgaze.lines import CLASSICAL, assign_trials
from readgaze.lines.gold import GoldTrial, load_gold

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "line_assignment"
EYEKIT_METHODS = ("chain", "cluster", "merge", "regress", "segment", "slice", "split", "stretch", "warp")


def readgaze_method(name: str) -> Callable[[Sequence[GoldTrial]], list[np.ndarray]]:
    """All trials in one :func:`readgaze.lines.assign_trials` call with ``method=name`` (batched where it batches)."""
    def fn(trials):
        return assign_trials([(t.xy, t.line_y_px, t.word_xy, t.word_line) for t in trials], name)
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
    """The learned DIST-style assigner (default weights), all trials in batches of 16 on CPU (votes included)."""
    from readgaze.models.dist import assign_trials

    return assign_trials([(t.xy, t.line_y_px, t.word_xy, t.word_line) for t in trials])


# dist's gold accuracy (pinned in tests/test_dist_assigner.py; issue 27: the stress-trained default with the vote
# guard gives the same figures as the landed distilled file, in-sample and cross-validated)
DIST_PINNED = {"pooled": 99.61, "worst_trial": 96.91}


def dist_stages(trials: Sequence[GoldTrial], repeat: int) -> list[tuple[str, float, float, float]]:
    """Best wall, best CPU and median CPU ms per trial of each stage of ``readgaze.models.dist.assign_trials`` on
    ``trials`` (batched)."""
    import torch

    from readgaze.models import dist

    arrays = [(t.xy, t.line_y_px, t.word_xy, t.word_line) for t in trials]
    members, voters = dist.load_ensemble(None)
    decoder = dist.decoding._decoder(None)
    rows = []

    def stage(name, fn):
        out, ms, cpu = timed(lambda ts: fn(), trials, repeat, stats := {})
        rows.append((name, ms, cpu, stats["median_cpu_ms"]))
        return out

    for m in voters:
        if m != "vote":
            stage(f"vote input {m}", lambda m=m: assign_trials(arrays, m))
    stage("all vote inputs (classical_votes_many)", lambda: dist.classical_votes_many(arrays, voters))
    prepared = stage("votes + features (prepare_many)", lambda: dist.prepare_many(arrays, voters))

    def forward():
        with dist.torch_threads(), torch.inference_mode():
            return dist.predict_proba(members, prepared)
    prob = stage(f"{len(members)} member(s)' forward ({forward_gflop(members, prepared):.2f} GFLOP)", forward)
    features = [t[0] for t in prepared]
    args = {k: v for k, v in decoder.items() if k != "trend_power"}
    stage("decode pass 1 (forward-backward)", lambda: dist.forward_backward(prob, features, **args))
    stage("decode (pass 1 + trend + pass 2)", lambda: dist.decode(prob, features, **decoder))
    return rows


def forward_gflop(members, prepared) -> float:
    """Multiply-adds x 2 of the members' forward on ``prepared`` trials, windows as ``predict_proba`` reads them."""
    from readgaze.models.dist import WINDOW

    m = members[0]
    d, n_layers = m.d_model, len(m.layers)
    flops = 0.0
    for fix, lines, *_ in prepared:
        n, k = len(fix), len(lines)
        windows = [n] if n <= WINDOW else [WINDOW] * len({*range(0, n - WINDOW + 1, WINDOW // 2), n - WINDOW})
        for w in windows:
            # per layer: q/k/v, self-attention out, cross q and out, feed-forward (d -> 2d -> d), line k/v,
            # the two attentions' scores and weighted sums
            per_layer = w * 10 * d * d + k * 2 * d * d + 2 * w * w * d + 2 * w * k * d
            # fixation input, pointer query, vote gates, pointer scores; line MLP and pointer keys
            flops += 2 * (n_layers * per_layer + w * (10 * d + d * d + 8 * d + k * d) + k * (5 * d + 2 * d * d))
    return flops * len(members) / 1e9


# extra rows: (name, fn(trials) -> lines)
CONTENDERS: list[tuple[str, Callable]] = [("vote", readgaze_method("vote")), ("dist", dist_batched)]


def timed(fn: Callable, trials: Sequence[GoldTrial], repeat: int, stats: dict | None = None
          ) -> tuple[list[np.ndarray], float, float]:
    """Run ``fn`` once untimed (imports, weights), then ``repeat`` times; return its output and the best wall ms
    and best CPU ms (this process) per trial. ``stats``, if given, receives the medians (``median_ms``,
    ``median_cpu_ms``) and the slowest pass (``max_ms``)."""
    fn(trials[:1])
    wall, cpu_ms = [], []
    for _ in range(repeat):
        start, cpu = time.perf_counter(), time.process_time()
        out = fn(trials)
        wall.append((time.perf_counter() - start) * 1000 / len(trials))
        cpu_ms.append((time.process_time() - cpu) * 1000 / len(trials))
    if stats is not None:
        stats.update(median_ms=float(np.median(wall)), median_cpu_ms=float(np.median(cpu_ms)), max_ms=max(wall))
    return out, min(wall), min(cpu_ms)


def pooled(trials: Sequence[GoldTrial], lines: list[np.ndarray]) -> float:
    hit = sum(int((p[t.scored] == t.gold_line[t.scored]).sum()) for t, p in zip(trials, lines))
    return 100.0 * hit / sum(int(t.scored.sum()) for t in trials)


def worst(trials: Sequence[GoldTrial], lines: list[np.ndarray]) -> float:
    return min(100.0 * int((p[t.scored] == t.gold_line[t.scored]).sum()) / max(int(t.scored.sum()), 1)
               for t, p in zip(trials, lines))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=DATA)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--eyekit-repeat", type=int, default=1, help="passes for eyekit (slow pure Python; 0 skips it)")
    ap.add_argument("--json", type=Path, default=None)
    ap.add_argument("--only", default=None, help="comma list of the rows to run (e.g. slice,vote,dist)")
    ap.add_argument("--dist-weights", default=None,
                    help="also time dist with this weights file (e.g. models/dist/weights/dist.pt, the 4-member "
                         "ensemble)")
    args = ap.parse_args(argv)
    trials = load_gold(args.data)
    rows = {}
    contenders = [(m, readgaze_method(m)) for m in (*CLASSICAL, "nearest")] + CONTENDERS
    if args.dist_weights:
        from readgaze.models.dist import assign_trials as dist_trials

        name = f"dist ({Path(args.dist_weights).name})"
        contenders.append((name, lambda ts: dist_trials([(t.xy, t.line_y_px, t.word_xy, t.word_line) for t in ts],
                                                        weights=args.dist_weights)))
        if args.only:
            args.only += f",{name}"
    only = set(args.only.split(",")) if args.only else None
    for name, fn in contenders:
        if only is not None and name not in only:
            continue
        ours, ms, cpu_ms = timed(fn, trials, args.repeat, stats := {})
        row = {"ms_per_trial": ms, "cpu_ms_per_trial": cpu_ms, "trials_per_s": 1000.0 / ms,
               "median_ms_per_trial": stats["median_ms"], "median_cpu_ms_per_trial": stats["median_cpu_ms"],
               "median_trials_per_s": 1000.0 / stats["median_ms"], "slowest_trials_per_s": 1000.0 / stats["max_ms"],
               "pooled": pooled(trials, ours), "worst_trial": worst(trials, ours)}
        other = eyekit_method(name) if name in EYEKIT_METHODS and args.eyekit_repeat > 0 else None
        if other is not None:
            theirs, ek_ms, _ = timed(other, trials, args.eyekit_repeat)
            same = sum(int((a == b).sum()) for a, b in zip(ours, theirs)) / sum(len(a) for a in ours)
            row.update(eyekit_ms_per_trial=ek_ms, eyekit_pooled=pooled(trials, theirs),
                       speedup=ek_ms / ms, same_line_share=100.0 * same)
        rows[name] = row
    print(f"{'method':<9} {'ms/trial':>9} {'cpu ms':>7} {'trials/s':>9} {'eyekit ms':>10} {'eyekit/us':>10} "
          f"{'pooled %':>9} {'worst %':>8} {'eyekit %':>9} {'same %':>7}")
    for name, r in rows.items():
        ek = lambda k, f, r=r: f.format(r[k]) if k in r else "-"  # noqa: E731
        print(f"{name:<9} {r['ms_per_trial']:>9.2f} {r['cpu_ms_per_trial']:>7.2f} {r['trials_per_s']:>9.1f} "
              f"{ek('eyekit_ms_per_trial', '{:10.2f}'):>10} {ek('speedup', '{:9.1f}x'):>10} {r['pooled']:>9.2f} "
              f"{r['worst_trial']:>8.2f} {ek('eyekit_pooled', '{:9.2f}'):>9} {ek('same_line_share', '{:7.2f}'):>7}")
    if "dist" in rows:
        r = rows["dist"]
        print(f"\ndist stages on the {len(trials)} gold trials ({args.repeat} passes; ms per trial):")
        print(f"  {'stage':<52} {'wall':>7} {'cpu':>7} {'cpu med':>8}")
        for name, ms, cpu, cpu_median in dist_stages(trials, args.repeat):
            print(f"  {name:<52} {ms:>7.2f} {cpu:>7.2f} {cpu_median:>8.2f}")
        same = all(round(r[k], 2) == v for k, v in DIST_PINNED.items())
        print(f"dist on the gold trials, batched on CPU ({_threads()} torch thread(s)): "
              f"{r['trials_per_s']:.1f} trials/s wall at best, {r['median_trials_per_s']:.1f} median, "
              f"{r['slowest_trials_per_s']:.1f} slowest of {args.repeat} passes "
              f"({1000.0 / r['cpu_ms_per_trial']:.1f} per CPU-second), pooled {r['pooled']:.2f} %, "
              f"worst trial {r['worst_trial']:.2f} % (before: {DIST_PINNED['pooled']:.2f} / "
              f"{DIST_PINNED['worst_trial']:.2f}: {'equal' if same else 'CHANGED'})")
    if args.json is not None:
        args.json.write_text(json.dumps(rows, indent=1) + "\n")
    return 0


def _threads() -> int:
    import torch

    from readgaze.models.dist import torch_threads

    with torch_threads():
        return torch.get_num_threads()


if __name__ == "__main__":
    raise SystemExit(main())
