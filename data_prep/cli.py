"""``readgaze prep onestop|dataviewer|asc|samples``: build a model-ready dataset folder from lab data.

Examples::

    readgaze prep onestop --fixation-report fixations.csv --ia-report ia.csv --out data/os
    readgaze prep dataviewer --fixation-report fix.csv --ia-report ia.csv --trials labels.csv --out data/dv
    readgaze prep dataviewer --fixation-report fix.csv --aoi words.tsv --columns x_px=PosX y_px=PosY --out data/dv
    readgaze prep dataviewer --source sbsat --fixation-report 18sat_fixfinal.csv --trials 18sat_trialfinal.csv --out sb
    readgaze prep asc rec1.asc rec2.asc --layout passages.json --text-id 1A --trials labels.csv --out data/asc
    readgaze prep samples s01.csv s02.csv --layout aoi.csv --screen-px 1280x1024 --screen-cm 38x30.2 \
        --distance-cm 68 --columns time_ms=time x_px=x_left y_px=y_left --out data/samples
    readgaze prep --list-roles

Every failure is one message naming the file (and row/column where known) and what to do; a file that looks like
another mode's input names that mode. An unexpected internal error is reported as one line too (set
``READGAZE_DEBUG=1`` for the traceback).
"""

from __future__ import annotations

import argparse
import os
import sys

from readgaze.errors import ConfigError, ReadgazeError

SCREENS = {"onestop": (2560.0, 1440.0)}
ON_WORDS_WARN = 0.5
"""Below this share of fixations on a word box, prep warns (reading puts most fixations on words; OneStop's sample:
3,208 of 3,209)."""


def _screen(text: str | None, option: str = "--screen-px", example: str = "1280x1024"):
    """``WIDTHxHEIGHT`` as two floats (None for no text)."""
    if not text:
        return None
    try:
        w, h = (float(v) for v in text.lower().split("x"))
    except ValueError:
        raise ConfigError(f"{option} {text!r}: expected WIDTHxHEIGHT, e.g. {example}") from None
    return w, h


def _screen_geometry(args: argparse.Namespace):
    """The samples mode's :class:`readgaze.io.samples.ScreenGeometry` (every size is required)."""
    from readgaze.io.samples import ScreenGeometry

    px = _screen(args.screen_px)
    if px is None or args.screen_cm is None or args.distance_cm is None:
        raise ConfigError("readgaze prep samples needs the screen to convert pixels to degrees of visual angle: "
                          "--screen-px WIDTHxHEIGHT --screen-cm WIDTHxHEIGHT --distance-cm CM (eye to screen), e.g. "
                          "--screen-px 1280x1024 --screen-cm 38x30.2 --distance-cm 68")
    cm = _screen(args.screen_cm, "--screen-cm", "38x30.2")
    return ScreenGeometry(int(px[0]), int(px[1]), *cm, args.distance_cm, origin=args.origin.replace("-", " "))


def _missing(text: str) -> float | None:
    if text.lower() == "none":
        return None
    try:
        return float(text)
    except ValueError:
        raise ConfigError(f"--missing-value {text!r}: expected a number (e.g. -32768) or 'none'") from None


def _word_box_warnings(fixations) -> list[str]:
    """A warning when none, or under :data:`ON_WORDS_WARN`, of the fixations lie on a word box."""
    n = fixations.height
    on_words = fixations["word_index"].is_not_null().sum() if n else 0
    if n and on_words == 0:
        return [f"warning: none of the {n:,} fixations lies on a word box: is the layout the text these recordings "
                "show (and in the same screen coordinates)?"]
    if n and on_words < ON_WORDS_WARN * n:
        return [f"warning: only {on_words:,} of the {n:,} fixations ({on_words / n:.0%}) lie on a word box (off_text "
                "in manifest.json): is the layout the text these recordings show, in the same screen coordinates?"]
    return []


def _separator(text: str | None) -> str | None:
    if text is None:
        return None
    named = {"tab": "\t", "\\t": "\t", "comma": ",", "semicolon": ";", "space": " "}
    value = named.get(text.lower(), text)
    if len(value) != 1:
        raise ConfigError(f"--separator {text!r}: expected one character, or tab / comma / semicolon")
    return value


def _layout_arguments(p: argparse.ArgumentParser) -> None:
    """``--layout`` and ``--text-id`` of the modes whose recordings carry no word boxes (asc, samples)."""
    p.add_argument("--layout", required=True,
                   help="passages.json, a pymovements/PoTeC AOI file or an IA report: the text(s) the trials show")
    p.add_argument("--text-id", help="passage of a passages.json (or trial/text of an IA report) every trial shows; "
                                     "without it, a layout of several texts needs a --trials table whose text_id "
                                     "names each trial's")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--list-roles", action="store_true",
                        help="print every column role, its default Data Viewer column and whether it is required")
    sub = parser.add_subparsers(dest="mode", metavar="MODE")
    modes = {"onestop": "OneStop fixation + IA reports",
             "dataviewer": "any Data Viewer fixation report, with an IA report, a word AOI table or its own IA columns",
             "asc": "EyeLink .asc recordings plus a text layout",
             "samples": "gaze-sample CSVs (Tobii, SMI, pymovements datasets): fixations detected with pymovements' "
                        "I-VT or I-DT, plus a text layout"}
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
            _layout_arguments(p)
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
        p.add_argument("--columns", nargs="+", metavar="MAP",
                       help="column map: YAML file(s) {fixations: {role: column}, ia: ..., aoi: ..., trials: ..., "
                            "samples: ...} and/or role=COLUMN pairs (x_px=PosX, ia.word=Label), the pairs overriding "
                            "the files; see readgaze prep --list-roles")
        p.add_argument("--trials", metavar="LABELS", help="CSV/TSV/Parquet table of per-trial labels and items "
                       "(reading_goal, question, is_correct, selected_answer, item_id, text_id, any other column)")
        p.add_argument("--trials-on", nargs="+", metavar="KEY",
                       help="join keys TRIALS_COLUMN=TABLE_COLUMN (or COLUMN); trials columns: trial_id, "
                            "participant_id, trial (trial number) or their source names. Default: matched by name")
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
    if args.list_roles:
        from readgaze.data_prep.columns import list_roles

        print(list_roles())
        return 0
    if args.mode is None:
        raise ConfigError("choose a mode: readgaze prep onestop|dataviewer|asc|samples ... (readgaze prep MODE --help)")
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
    finally:
        if args.mode == "onestop":  # what the load did not take (a cache hit, an early error) is not kept
            from readgaze.io.scan import forget

            forget([args.fixation_report, args.ia_report])


def _prefetch(args: argparse.Namespace) -> None:
    """Start the one pass over each OneStop report that the load needs besides its parse (SHA-256 for the cache
    key and the manifest, unless the checksum memo knows the files; the line starts and byte range, for the check of
    the report's lines, :mod:`readgaze.io.faults`), in a thread, before polars is imported."""
    from readgaze.data_prep.cache import stamps_known
    from readgaze.io.scan import prefetch

    files = [args.fixation_report, args.ia_report]
    sha256 = not stamps_known(files)  # with --no-cache too: the manifest records it
    if not args.no_cache and not sha256:  # the memo knows the files: most likely a cache hit, nothing to read
        return
    prefetch(files, sha256=sha256, lines=True)  # the line starts: the check of each report's lines (io.faults)


def _run(args: argparse.Namespace) -> int:
    import warnings

    if args.mode == "onestop":
        _prefetch(args)
    from readgaze.data_prep import sources
    from readgaze.data_prep.columns import parse_columns
    from readgaze.data_prep.dataset import DatasetWriter, check_target
    from readgaze.data_prep.pipeline import prepare
    from readgaze.io.faults import RepairWarning

    check_target(args.out, args.force)
    step = _progress(args.quiet)
    spec = parse_columns(args.columns)
    dialect = {"separator": _separator(args.separator), "decimal_comma": args.decimal_comma}
    with step("load"), warnings.catch_warnings(record=True) as repaired:
        warnings.simplefilter("always", RepairWarning)  # a reader without a QC log warns: printed with the notes
        if args.mode == "onestop":
            sources.check_kind(args.fixation_report, ("onestop_fixations",) + (("fixations",) if spec else ()),
                               "--fixation-report")
            from readgaze.data_prep.cache import cached_load

            loaded = cached_load("onestop", lambda: sources.load_onestop(args.fixation_report, args.ia_report, spec,
                                                                         **dialect),
                                 {"fixation_report": args.fixation_report, "ia_report": args.ia_report},
                                 {"columns": spec, **dialect}, enabled=not args.no_cache,
                                 report=None if args.quiet else lambda m: print(m, file=sys.stderr),
                                 background=True)  # stored while the pipeline runs; waited for below
        elif args.mode == "dataviewer":
            loaded = sources.load_dataviewer(args.fixation_report, args.ia_report, spec, args.source, aoi=args.aoi,
                                             ia_id_base=args.ia_id_base, **dialect)
        elif args.mode == "samples":
            loaded = sources.load_samples(args.files, args.layout, args.text_id, screen=_screen_geometry(args),
                                          columns=spec, detector=args.detector,
                                          missing_value=_missing(args.missing_value),
                                          sampling_rate_hz=args.sampling_rate_hz, eye=args.eye,
                                          time_unit=args.time_unit, **dialect)
        else:
            loaded = sources.load_asc(args.files, args.layout, args.text_id, columns=spec,
                                      encoding=args.encoding, screen_px=_screen(args.screen_px), **dialect)
    notes = [f"warning: {w}" for w in loaded.warnings]
    notes += [f"repaired: {w.message}" for w in repaired if issubclass(w.category, RepairWarning)]
    for w in repaired:  # other warnings as Python shows them
        if not issubclass(w.category, RepairWarning):
            warnings.showwarning(w.message, w.category, w.filename, w.lineno)
    trials, words = loaded.trials, loaded.words
    if args.trials:
        from readgaze.data_prep.labels import attach_labels, parse_keys, read_table, rekey_words

        with step("labels"):
            from readgaze.data_prep.columns import for_table

            names = read_table(args.trials, **dialect).columns
            table = read_table(args.trials, **dialect, columns=for_table(spec, "trials", names))
            export = next(iter(loaded.sources.values()))[0]
            joined = attach_labels(trials, table, trials_file=export, table_file=args.trials,
                                   keys=parse_keys(args.trials_on), aliases=loaded.aliases, qc=loaded.qc)
            words = rekey_words(words, trials, joined.trials, loaded.qc)
            trials = joined.trials
            notes += joined.messages
        loaded.sources["trials"] = [str(args.trials)]
    elif args.trials_on:
        raise ConfigError("--trials-on names join keys for a --trials table; give --trials LABELS.csv too")
    if args.mode in ("asc", "samples") and words["text_id"].n_unique() > 1:  # a layout of several texts
        trials = sources.require_trial_texts(trials, words, args.layout, args.trials)
    assigner = args.line_assigner or loaded.line_assigner or "slice"
    if loaded.line_assigner == "report" and assigner != "report":
        notes.append(f"warning: the word boxes are estimated from the fixations (no IA report or AOI table); "
                     f"--line-assigner {assigner} assigns lines on those estimates")
    screen = _screen(args.screen_px) or SCREENS.get(args.mode)
    config = {"mode": args.mode, "line_assigner": assigner, "screen_px": screen,
              "surprisal_model": args.surprisal_model, "language": args.language, "loader": loaded.loader,
              "trials_on": args.trials_on, "format": args.format, "columns": spec or None, **dialect}
    if args.mode == "samples":  # what the detector was given (its thresholds: readgaze.events' defaults)
        config |= {"screen_cm": args.screen_cm, "distance_cm": args.distance_cm, "origin": args.origin,
                   "detector": args.detector, "time_unit": args.time_unit, "missing_value": args.missing_value,
                   "sampling_rate_hz": args.sampling_rate_hz}
    with DatasetWriter(args.out, force=args.force, fmt=args.format) as writer:  # tables written as they are ready
        prepared = prepare(trials, words, loaded.fixations, loaded.qc, line_assigner=assigner, screen_px=screen,
                           surprisal_model=args.surprisal_model, language=args.language, progress=step,
                           sink=writer.put)
        notes += _word_box_warnings(prepared.fixations)
        with step("write"):
            out = writer.finish(prepared, sources=loaded.sources, config=config, id_bases=loaded.id_bases,
                                notes=notes)
            from readgaze.data_prep.cache import wait_stored

            wait_stored()
    rows = ", ".join(f"{k} {getattr(prepared, k).height:,}" for k in ("trials", "words", "fixations", "word_measures"))
    print(f"wrote {out} ({args.format}): {rows}", file=sys.stderr)
    for note in notes:  # also in manifest.json ("notes")
        print(f"  {note}", file=sys.stderr)
    counted = [r for r in prepared.qc.records if r["count"] and r["action"] in ("dropped", "changed")]
    for r in counted:  # nothing is lost silently: every drop and change, also in manifest.json
        print(f"  {r['action']} {r['count']:,} {r['table']} ({r['step']}: {r['reason']})", file=sys.stderr)
    for task, needs in (("reading_goal", ("reading_goal",)), ("comprehension", ("is_correct", "question"))):
        if all(c in prepared.trials.columns and prepared.trials[c].null_count() < prepared.trials.height
               for c in needs):
            print(f"  task {task}: labels present; check them with  readgaze inspect {out}", file=sys.stderr)
    if not any(c in prepared.trials.columns for c in ("reading_goal", "is_correct")):
        print("  no label columns (reading_goal, is_correct): attach them with --trials LABELS.csv before "
              "readgaze fit/cv", file=sys.stderr)
    return 0
