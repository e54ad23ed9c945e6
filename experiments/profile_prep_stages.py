"""Where cold ``readgaze prep onestop`` spends its time: each stage run alone, one after another, in one process.

The real prep overlaps stages in threads (the agreement beside the measures, the features beside the next block,
the writes, the parse cache); here every stage runs serially so its CPU seconds (process user + system, every
thread: polars' pool and numba's included) and wall are its own. Prints a table: stage, CPU s, wall s, % of the
total CPU.

Usage::

    python experiments/profile_prep_stages.py [--fixations 2400000] [--line-assigner slice]
"""

from __future__ import annotations

import argparse
import resource
import sys
import time
from contextlib import contextmanager
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

ROWS: list[tuple[str, float, float, float]] = []


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def _sys() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_stime


@contextmanager
def stage(name: str):
    c0, s0, w0 = _cpu(), _sys(), time.perf_counter()
    yield
    ROWS.append((name, _cpu() - c0, time.perf_counter() - w0, _sys() - s0))
    print(f"  {name:50s} CPU {ROWS[-1][1]:6.2f} s (system {ROWS[-1][3]:5.2f})  wall {ROWS[-1][2]:6.2f} s", flush=True)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--fixations", type=int, default=2_400_000)
    p.add_argument("--seed", type=int, default=1129)
    p.add_argument("--line-assigner", default="slice")
    p.add_argument("--out", type=Path, default=Path("/tmp/readgaze_profile_stages"))
    p.add_argument("--alone", action="store_true", help="also time the vote's members one by one (assign_lines; "
                   "counted in the total)")
    args = p.parse_args(argv)
    import bench_prep

    folder = bench_prep.reports(args.fixations, args.seed, bench_prep.SHARED_BENCH / "onestop_scale.py")
    fix, ia = folder / "fixations.csv", folder / "ia.csv"
    t_start, c_start = time.perf_counter(), _cpu()
    with stage("import polars, numpy, readgaze"):
        import polars as pl

        from readgaze.data_prep import sources
        from readgaze.data_prep.api import _prefetch
        from readgaze.data_prep.pipeline import (
            _line_agreement,
            _trial_features,
            clean,
            complete_layout,
            sort_rows,
            trial_blocks,
        )
    with stage("load (parse, checks, trial tables)"):
        _prefetch(fix, ia, cache=False)
        loaded = sources.load_onestop(fix, ia)
    from readgaze.qc import QCLog

    qc = QCLog()
    with stage("clean"):
        words = complete_layout(loaded.words)
        trials, words, fixations = clean(loaded.trials, words, loaded.fixations, qc)
    with stage(f"line assignment ({args.line_assigner}) + alignment"):
        from readgaze.align import align_words

        aligned, _ = align_words(fixations, words, trials, line_assigner=args.line_assigner,
                                 screen_px=(2560.0, 1440.0))
        fixations = sort_rows(aligned.collect(), "trial_id", "fixation_index")
    from readgaze.lines import assign_lines

    for m in ("slice", "cluster", "warp") if args.alone else ():
        if m == args.line_assigner:
            continue
        with stage(f"  (alone) assign_lines {m}"):
            assign_lines(fixations.select("trial_id", "fixation_index", "x_px", "y_px"), words, trials, method=m)
    with stage("line agreement (as prep runs it)"):
        agreement, _ = _line_agreement(fixations, words, trials, args.line_assigner)
    with stage("layout-fit warnings"):
        from readgaze.layout_checks import layout_fit_warnings

        layout_fit_warnings(fixations, words, trials)
    from readgaze.measures import compute_word_measures, use_compiled

    compiled = use_compiled(fixations.height)
    with stage("word measures"):
        blocks = []
        parts = list(trial_blocks(trials, fixations))
        for tr, fx in parts:
            blocks.append(sort_rows(compute_word_measures(fx, words, tr, compiled=compiled).collect(),
                                    "trial_id", "word_index"))
        measures = sort_rows(pl.concat(blocks), "trial_id", "word_index")
    with stage("trial features"):
        feats = pl.concat([_trial_features(fx, words, tr, b) for (tr, fx), b in zip(parts, blocks)])
    with stage("word features"):
        from readgaze.word_features import add_word_features

        words, _ = add_word_features(words)
    with stage("write parquet (4 tables)"):
        from readgaze.data_prep.dataset import PARQUET

        args.out.mkdir(parents=True, exist_ok=True)
        trials = trials.join(feats, on="trial_id", how="left").join(agreement, on="trial_id", how="left")
        for name, f in (("fixations", fixations), ("word_measures", measures), ("trials", trials),
                        ("words", words)):
            f.write_parquet(args.out / f"{name}.parquet", **PARQUET)
    total_c, total_w = _cpu() - c_start, time.perf_counter() - t_start
    print(f"\n{'stage':52s} {'CPU s':>7s} {'of it system':>12s} {'wall s':>7s} {'% CPU':>6s}")
    for name, c, w, sy in ROWS:
        print(f"{name:52s} {c:7.2f} {sy:12.2f} {w:7.2f} {100 * c / total_c:5.1f}%")
    print(f"{'total':52s} {total_c:7.2f} {_sys():12.2f} {total_w:7.2f}  peak RSS "
          f"{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20:.2f} GiB")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
