"""``readgaze prep onestop|dataviewer|asc|samples|copco``: build a model-ready dataset folder from lab data.

Examples::

    readgaze prep onestop --fixation-report fixations.csv --ia-report ia.csv --out data/os
    readgaze prep dataviewer --fixation-report fix.csv --ia-report ia.csv --trials labels.csv --out data/dv
    readgaze prep dataviewer --fixation-report fix.csv --aoi words.tsv --columns x_px=PosX y_px=PosY --out data/dv
    readgaze prep dataviewer --source sbsat --fixation-report 18sat_fixfinal.csv --trials 18sat_trialfinal.csv --out sb
    readgaze prep asc rec1.asc rec2.asc --layout passages.json --text-id 1A --trials labels.csv --out data/asc
    readgaze prep samples s01.csv s02.csv --layout aoi.csv --screen-px 1280x1024 --screen-cm 38x30.2 \
        --distance-cm 68 --columns time_ms=time x_px=x_left y_px=y_left --out data/samples
    readgaze prep copco --data copco --out data/copco [--readers P01 P02]
    readgaze prep --list-roles

The work is :func:`readgaze.data_prep.api.prepare` (``readgaze.prepare`` in Python): this module only turns the
options into its keywords and prints its summary.

Every failure is one message naming the file (and row/column where known) and what to do; a file that looks like
another mode's input names that mode. An unexpected internal error is reported as one line too (set
``READGAZE_DEBUG=1`` for the traceback).
"""

from __future__ import annotations

import argparse
import os
import sys

from readgaze.errors import ConfigError, ReadgazeError


def _layout_arguments(p: argparse.ArgumentParser, optional: bool = False) -> None:
    """``--layout`` and ``--text-id`` of the modes whose recordings carry no word boxes (asc, samples); in asc mode
    (``optional``) the layout may come from the recordings' own ``!V IAREA`` messages."""
    p.add_argument("--layout", required=not optional,
                   help="passages.json, a pymovements/PoTeC AOI file or an IA report: the text(s) the trials show"
                        + ("; without it, the recordings' own '!V IAREA' interest-area messages" if optional else ""))
    p.add_argument("--text-id", help="passage of a passages.json (or trial/text of an IA report) every trial shows; "
                                     "without it, a layout of several texts needs a --trials table whose text_id "
                                     "names each trial's")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--list-roles", action="store_true",
                        help="print every column role, its default Data Viewer column and whether it is required")
    sub = parser.add_subparsers(dest="mode", metavar="MODE")
    modes = {"onestop": "OneStop fixation + IA reports",
             "dataviewer": "any Data Viewer fixation report, with an IA report, a word AOI table or its own IA columns",
             "asc": "EyeLink .asc recordings plus a text layout (or their own !V IAREA messages)",
             "samples": "gaze-sample CSVs (Tobii, SMI, pymovements datasets): fixations detected with pymovements' "
                        "I-VT or I-DT, plus a text layout"}
    _copco_arguments(sub)
    for mode, help_text in modes.items():
        p = sub.add_parser(mode, help=help_text, description=help_text)
        if mode == "samples":
            p.add_argument("files", nargs="+", help="gaze-sample CSVs (one row per sample; columns: --columns "
                                                    "time_ms=... x_px=... y_px=... [trial=...] [pupil=...])")
            _layout_arguments(p)
            p.add_argument("--screen-cm", help="screen size WIDTHxHEIGHT in cm (required)")
            p.add_argument("--distance-cm", type=float, help="eye-to-screen distance in cm (required)")
            p.add_argument("--origin", default="upper-left", choices=("upper-left", "center"),
                           help="where the files' pixel (0, 0) lies (default upper-left)")
            p.add_argument("--detector", default="ivt", choices=("ivt", "idt"),
                           help="fixation detection (pymovements): ivt (default; 30 deg/s, Olsen 2012) or idt "
                                "(1 deg, 100 ms; Salvucci & Goldberg 2000)")
            p.add_argument("--missing-value", default="-32768", help="coordinate meaning no gaze (default -32768, "
                                                                      "EyeLink's; 'none': only empty fields)")
            p.add_argument("--time-unit", default="ms", choices=("ms", "s", "us"),
                           help="unit of the time column (default ms; Tobii Pro exports us)")
            p.add_argument("--sampling-rate-hz", type=float, default=None,
                           help="default: each trial's median time step")
            p.add_argument("--eye", choices=("left", "right"), default=None, help="written to the samples' eye")
        elif mode == "asc":
            p.add_argument("files", nargs="+", help=".asc recordings")
            _layout_arguments(p, optional=True)
            p.add_argument("--encoding", default="utf-8",
                           help="text encoding of the .asc files (default utf-8; e.g. cp1252, latin-1: bytes that "
                                "do not decode are replaced and warned about with their file and first line)")
        elif mode == "onestop":
            p.add_argument("--fixation-report", required=True)
            p.add_argument("--ia-report", required=True)
        else:
            p.add_argument("--fixation-report", required=True)
            p.add_argument("--ia-report", help="Data Viewer interest-area report (word boxes per trial)")
            p.add_argument("--aoi", help="word AOI table (pymovements/PoTeC *_aoi_*.tsv, or any table with an aoi "
                                         "column map): one text every trial shows. Without --ia-report and --aoi "
                                         "the words come from the fixation report's own interest-area columns")
            p.add_argument("--source", default="dataviewer", choices=("dataviewer", "sbsat", "onestop"),
                           help="source conventions (default dataviewer)")
            p.add_argument("--ia-id-base", type=int, choices=(0, 1), default=None,
                           help="base of the fixation report's interest-area ids (default: detected from the IA "
                                "report's labels; Data Viewer itself writes 1)")
            p.add_argument("--encoding", default="utf-8",
                           help="text encoding of the reports (default utf-8; e.g. cp1252 for a Windows export)")
            p.add_argument("--ias", metavar="DIR", help="character-level interest areas: the folder of the "
                           "experiment's .ias files (with --ias-pattern; the report needs no CURRENT_FIX_X/Y)")
            p.add_argument("--ias-pattern", metavar="REGEX",
                           help="the .ias file names, with named groups: the report's trial columns and level, e.g. "
                                "'part\\d+_IA_(?P<speechid>-?\\d+)_(?P<paragraphid>-?\\d+)_(?P<level>chars|words)"
                                "\\.ias'")
        p.add_argument("--columns", nargs="+", metavar="MAP",
                       help="column map: YAML file(s) {fixations: {role: column}, ia: ..., aoi: ..., trials: ..., "
                            "samples: ...} and/or role=COLUMN pairs (x_px=PosX, ia.word=Label), the pairs overriding "
                            "the files; see readgaze prep --list-roles")
        p.add_argument("--trials", metavar="LABELS", help="CSV/TSV/Parquet table of per-trial labels and items "
                       "(reading_goal, question, is_correct, selected_answer, item_id, text_id, any other column)")
        p.add_argument("--trials-on", nargs="+", metavar="KEY",
                       help="join keys TRIALS_COLUMN=TABLE_COLUMN (or COLUMN); trials columns: trial_id, "
                            "participant_id, trial (trial number) or their source names. Default: matched by name")
        p.add_argument("--key-map", nargs="+", metavar="COLUMN=MAP",
                       help="map a --trials-on key of the trials to the table's before joining: COLUMN=REGEX (its "
                            "first group is the key: text_id='^\\w+-(\\w+)-\\d+$' makes reading-dickens-1 "
                            "dickens) or COLUMN=map.csv (two columns: trials value, table value)")
        p.add_argument("--binarise", nargs="+", metavar="RULE",
                       help="make a label from a numeric column of the --trials table, e.g. "
                            "is_correct=acc_level>=2 (SB-SAT: 2 or 3 of 3 questions right); the counts are printed")
        p.add_argument("--separator", help="field separator of the CSV inputs (default: detected; 'tab', ';', ',')")
        p.add_argument("--decimal-comma", action="store_true", help="numbers written 390,6 (needs a separator "
                                                                    "other than ',')")
        p.add_argument("--format", default="parquet", choices=("parquet", "csv", "both"),
                       help="table format of the dataset folder (default parquet; the models read parquet)")
        p.add_argument("--out", required=True, help="dataset folder to write")
        p.add_argument("--force", action="store_true", help="overwrite an existing folder")
        p.add_argument("--line-assigner", default=None,
                       help="line assignment (drift correction): 'slice' (default; thresholds scaled to the "
                       "line pitch), 'nearest' (raw y, as Data Viewer), 'report' (keep the report's interest "
                       "area; default without word boxes), 'dist', or any readgaze.lines method")
        p.add_argument("--screen-px", default=None, help=(
            "screen size WIDTHxHEIGHT in px (required: the detector works in degrees)" if mode == "samples" else
            "screen size WIDTHxHEIGHT for the off-screen count (onestop default 2560x1440)"))
        p.add_argument("--surprisal-model", default=None, help="local path of a Hugging Face causal LM")
        p.add_argument("--language", default="en", help="wordfreq language code (default en)")
        p.add_argument("--quiet", action="store_true", help="no progress display")
        if mode == "onestop":
            p.add_argument("--no-cache", action="store_true", help="parse the reports even when this machine "
                           "parsed the same files before (default: reuse the parse; see readgaze.data_prep.cache)")


def _copco_arguments(sub) -> None:
    """``readgaze prep copco``: the CopCo recipe (:mod:`readgaze.data_prep.copco`)."""
    text = ("CopCo (Danish, 57 readers, 19 with dyslexia) from its published files: Data Viewer reports with "
            "character interest areas, the .ias layouts, reader labels")
    p = sub.add_parser("copco", help=text, description=text)
    p.add_argument("--data", required=True, help="CopCo's folder: fixation_reports/, aois/, labels/ (as the "
                                                 "corpus authors publish them)")
    p.add_argument("--out", required=True, help="dataset folder to write")
    p.add_argument("--readers", nargs="+", metavar="PNN", help="only these readers (default: every report)")
    p.add_argument("--encoding", default="utf-8", help="text encoding of the reports (default utf-8)")
    p.add_argument("--first-pass-from-first-line", action="store_true",
                   help="leave out the fixations a trial makes on a later line before its first on the first line "
                        "(flagged either way; off by default, as Data Viewer and the corpus authors)")
    p.add_argument("--format", default="parquet", choices=("parquet", "csv", "both"))
    p.add_argument("--force", action="store_true", help="overwrite an existing folder")
    p.add_argument("--surprisal-model", default=None, help="local path of a Hugging Face causal LM")
    p.add_argument("--quiet", action="store_true", help="no progress display")


def _progress(quiet: bool):
    """A rich status line per step on stderr (nothing with ``--quiet``)."""
    from contextlib import contextmanager

    from rich.console import Console

    console = Console(stderr=True, quiet=quiet, log_path=False)  # time, no source line

    @contextmanager
    def step(name: str):
        with console.status(f"[bold]{name}[/bold] ..."):
            yield
        console.log(f"{name}: done")
    return step


def run(args: argparse.Namespace) -> int:
    if args.list_roles:
        from readgaze.data_prep.columns import list_roles

        print(list_roles())
        return 0
    if args.mode is None:
        raise ConfigError("choose a mode: readgaze prep onestop|dataviewer|asc|samples|copco ... "
                          "(readgaze prep MODE --help)")
    try:
        return _run(args)
    except ReadgazeError:
        raise
    except Exception as error:  # nothing raw reaches the user; READGAZE_DEBUG shows the traceback
        if os.environ.get("READGAZE_DEBUG"):
            raise
        first = str(error).splitlines()[0][:300] if str(error) else ""
        raise ReadgazeError(f"internal error, a bug in readgaze (not a fault of your input: every damaged input is "
                            f"reported by file, row and column): unexpected {type(error).__name__} while preparing: "
                            f"{first}. Please report it with the traceback (READGAZE_DEBUG=1 shows it)") from None


def _run(args: argparse.Namespace) -> int:
    if args.mode == "copco":
        from readgaze.data_prep.copco import prepare_copco

        result = prepare_copco(args.data, out=args.out, readers=args.readers, encoding=args.encoding,
                               format=args.format, force=args.force, surprisal_model=args.surprisal_model,
                               first_pass_from_first_line=args.first_pass_from_first_line,
                               progress=_progress(args.quiet))
        print("\n".join(result.summary()), file=sys.stderr)
        return 0
    from readgaze.data_prep.api import prepare

    given = vars(args)
    options = {name: given[name] for name in KEYWORDS if name in given}
    result = prepare(args.mode, **options, cache=not given.get("no_cache", False), progress=_progress(args.quiet),
                     report=None if args.quiet else lambda message: print(message, file=sys.stderr))
    print("\n".join(result.summary()), file=sys.stderr)
    return 0


KEYWORDS = ("out", "fixation_report", "ia_report", "files", "layout", "text_id", "aoi", "source", "ia_id_base",
            "columns", "trials", "trials_on", "key_map", "binarise", "separator", "decimal_comma", "format", "force",
            "line_assigner", "screen_px", "screen_cm", "distance_cm", "origin", "detector", "missing_value",
            "time_unit", "sampling_rate_hz", "eye", "encoding", "surprisal_model", "language", "ias", "ias_pattern")
"""The options passed to :func:`readgaze.data_prep.api.prepare` under their own names (those a mode has)."""
