"""``readgaze demo``: the whole pipeline, offline, in one command on a fresh install.

Stages (a progress display shows which one runs):

1. **simulate** a small OneStop-shaped corpus (:func:`readgaze.simulate.simulate_corpus`; the goal signal at its
   defaults) and write it as OneStop's Data Viewer reports (:func:`readgaze.simulate.write_onestop_reports`);
2. **prepare** the reports as ``readgaze prep onestop`` does (:mod:`data_prep`), with line assignment:
   ``--line-assigner`` (default ``dist``, the learned assigner, which falls back to ``slice`` when
   ``models/dist/weights/dist_small.pt`` is absent; on the quick demo's corpus dist and slice both put 100.00 % of the
   fixations aimed at a line on the gold line, ``vote`` 99.97 %, ``cluster`` with Carr's k-means++ start
   98.43 %). dist (the distilled default) costs about 5 CPU ms per trial, a few s over the full demo;
   ``--line-assigner slice`` is prep's default;
3. **train and test** BEyeLSTM and RoBERTEye-F (tiny randomly initialised encoder, no download) on the
   reading-goal task with :func:`readgaze.models.training.cv.cross_validate`, with the classical baselines
   (:data:`readgaze.models.training.cv.DEFAULT_BASELINES`) fit on the same training trials, under the 3-regime protocol
   (K folds of
   items and participants), and their out-of-sample ensembles (:mod:`readgaze.models.training.ensemble`);
4. **report**: the results table (balanced accuracy and AUROC per regime, mean ± SEM over folds) is printed and
   written with ``predictions.parquet``, ``roc.png``, ``scanpath.png`` (assigned lines over the word boxes) and a
   ``README.md`` saying what ran, the simulator's oracle accuracy and the line-assignment accuracy against the
   simulation's gold lines.

Nothing touches the network: ``HF_HUB_OFFLINE``/``TRANSFORMERS_OFFLINE`` are set before transformers is imported.

Example::

    readgaze demo                      # ./readgaze_demo/, about 5 minutes on 2 CPU cores
    readgaze demo --quick --out tmp    # seconds; for tests
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
from dataclasses import replace
from pathlib import Path

from readgaze.errors import ReadgazeError
from readgaze.models.demo.settings import DEFAULT, OUTPUTS, QUICK, DemoSettings


def main(argv: list[str] | None = None) -> int:
    """Entry point; ``argv[0]`` is ``"demo"``."""
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = argparse.ArgumentParser(prog="readgaze demo", description=__doc__.split("\n")[0])
    parser.add_argument("--out", default="readgaze_demo", help="report folder (default ./readgaze_demo)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the simulation, folds and training")
    parser.add_argument("--quick", action="store_true",
                        help="a tiny smoke run (~30 s on 2 cores, 1-2 min the first time; its numbers mean nothing)")
    parser.add_argument("--force", action="store_true", help="replace the demo's files in an existing --out")
    parser.add_argument("--line-assigner", default="dist",
                        help="line assignment method (default dist, the learned assigner, ~5 CPU ms per trial; "
                             "'slice', prep's default, is as exact on the simulated drift and ~50x faster)")
    args = parser.parse_args(argv[1:])
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["TRANSFORMERS_OFFLINE"] = "1"
    settings = replace(QUICK if args.quick else DEFAULT, seed=args.seed, line_assigner=args.line_assigner)
    try:
        run_demo(args.out, settings, force=args.force)
    except ReadgazeError as error:
        print(f"readgaze demo: error: {error}", file=sys.stderr)
        return 2
    return 0


def run_demo(out: str | Path, settings: DemoSettings = DEFAULT, *, force: bool = False) -> dict[str, Path]:
    """Run every stage into ``out`` and return the report's paths (keys ``readme``, ``markdown``, ``csv``,
    ``predictions``, ``roc``, ``scanpath``, ``dataset``).

    Raises :class:`readgaze.errors.ConfigError` when ``out`` already holds demo files and ``force`` is false.
    """
    from readgaze.models.demo.stages import Stages

    out = _prepare_out(Path(out), force)
    return Stages(out, settings).run()


def _prepare_out(out: Path, force: bool) -> Path:
    from readgaze.errors import ConfigError

    present = [name for name in OUTPUTS if (out / name).exists()]
    if present and not force:
        raise ConfigError(f"{out} already holds demo output ({', '.join(present)}); use --force to replace it")
    for name in present:
        target = out / name
        shutil.rmtree(target) if target.is_dir() else target.unlink()
    out.mkdir(parents=True, exist_ok=True)
    return out
