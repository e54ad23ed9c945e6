"""``readgaze prep onestop|dataviewer|asc``: build a model-ready dataset folder from lab data.

Examples::

    readgaze prep onestop --fixation-report fixations.csv --ia-report ia.csv --out data/os
    readgaze prep dataviewer --fixation-report fix.csv --ia-report ia.csv --columns map.yaml --out data/dv
    readgaze prep asc rec1.asc rec2.asc --layout passages.json --text-id 1A --out data/asc
"""

from __future__ import annotations

import argparse
import sys

from readgaze.errors import ConfigError

SCREENS = {"onestop": (2560.0, 1440.0)}


def _screen(text: str | None):
    if not text:
        return None
    try:
        w, h = (float(v) for v in text.lower().split("x"))
    except ValueError:
        raise ConfigError(f"--screen-px {text!r}: expected WIDTHxHEIGHT, e.g. 1280x1024") from None
    return w, h


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="mode", required=True, metavar="MODE")
    modes = {"onestop": "OneStop fixation + IA reports", "dataviewer": "any Data Viewer report pair",
             "asc": "EyeLink .asc recordings plus a text layout"}
    for mode, help_text in modes.items():
        p = sub.add_parser(mode, help=help_text, description=help_text)
        if mode == "asc":
            p.add_argument("files", nargs="+", help=".asc recordings")
            p.add_argument("--layout", required=True,
                           help="passages.json, a pymovements/PoTeC AOI file or an IA report")
            p.add_argument("--text-id", help="passage of a passages.json to use")
        else:
            p.add_argument("--fixation-report", required=True)
            p.add_argument("--ia-report", required=True)
        if mode == "dataviewer":
            p.add_argument("--columns", help="YAML column map {fixations: {role: column}, ia: {role: column}}")
            p.add_argument("--source", default="dataviewer", help="source conventions (dataviewer, sbsat)")
        p.add_argument("--out", required=True, help="dataset folder to write")
        p.add_argument("--force", action="store_true", help="overwrite an existing folder")
        p.add_argument("--line-assigner", default="slice",
                       help="line assignment (drift correction): 'slice' (default; thresholds scaled to the "
                       "line pitch), 'nearest' (raw y, as Data Viewer), 'dist', or any readgaze.lines method")
        p.add_argument("--screen-px", default=None, help="screen size WIDTHxHEIGHT for the off-screen count "
                       "(onestop default 2560x1440)")
        p.add_argument("--surprisal-model", default=None, help="local path of a Hugging Face causal LM")
        p.add_argument("--language", default="en", help="wordfreq language code (default en)")
        p.add_argument("--quiet", action="store_true", help="no progress display")


def _progress(quiet: bool):
    from contextlib import contextmanager

    from rich.console import Console

    console = Console(stderr=True, quiet=quiet)

    @contextmanager
    def step(name: str):
        with console.status(f"[bold]{name}[/bold] ..."):
            yield
        console.log(f"{name}: done")
    return step


def run(args: argparse.Namespace) -> int:
    from data_prep import sources
    from data_prep.dataset import check_target, write_dataset
    from data_prep.pipeline import prepare

    check_target(args.out, args.force)
    step = _progress(args.quiet)
    with step("load"):
        if args.mode == "onestop":
            loaded = sources.load_onestop(args.fixation_report, args.ia_report)
        elif args.mode == "dataviewer":
            loaded = sources.load_dataviewer(args.fixation_report, args.ia_report, args.columns, args.source)
        else:
            loaded = sources.load_asc(args.files, args.layout, args.text_id)
    screen = _screen(args.screen_px) or SCREENS.get(args.mode)
    prepared = prepare(loaded.trials, loaded.words, loaded.fixations, loaded.qc,
                       line_assigner=args.line_assigner, screen_px=screen,
                       surprisal_model=args.surprisal_model, language=args.language, progress=step)
    config = {"mode": args.mode, "line_assigner": args.line_assigner, "screen_px": screen,
              "surprisal_model": args.surprisal_model, "language": args.language, "loader": loaded.loader}
    with step("write"):
        out = write_dataset(args.out, prepared, sources=loaded.sources, config=config,
                            id_bases=loaded.id_bases, force=args.force)
    rows = ", ".join(f"{k} {getattr(prepared, k).height:,}" for k in ("trials", "words", "fixations", "word_measures"))
    print(f"wrote {out}: {rows}", file=sys.stderr)
    counted = [r for r in prepared.qc.records if r["count"] and r["action"] in ("dropped", "changed")]
    for r in counted:  # nothing is lost silently: every drop and change, also in manifest.json
        print(f"  {r['action']} {r['count']:,} {r['table']} ({r['step']}: {r['reason']})", file=sys.stderr)
    return 0
