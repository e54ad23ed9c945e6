"""The Python entry point of preprocessing: :func:`prepare` turns lab data into a dataset folder.

``readgaze prep MODE ...`` only parses its options and calls :func:`prepare` (also reachable as
``readgaze.prepare``); the command and a Python caller get the same tables, the same QC and the same errors (a
:class:`readgaze.errors.ReadgazeError` naming the file, row and column, whose suggestions are spelled as this
function's keywords for a Python caller and as the command's options inside ``readgaze prep``).

Steps: load the mode's inputs (:mod:`readgaze.data_prep.sources`; OneStop's parse through the cache of
:mod:`readgaze.data_prep.cache`), attach a labels table (:mod:`readgaze.data_prep.labels`), run the pipeline
(:func:`readgaze.data_prep.pipeline.prepare`: clean, lines, words, measures, features) and write the folder as the
tables become ready (:class:`readgaze.data_prep.dataset.DatasetWriter`).

This module imports no polars at its top: ``prepare`` starts its first pass over the OneStop reports (checksums,
line starts) in a thread before polars is imported.

>>> import readgaze
>>> result = readgaze.prepare("onestop", fixation_report="fixations.csv", ia_report="ia.csv",
...                           out="ds", line_assigner="slice")  # doctest: +SKIP
>>> print("\\n".join(result.summary()))  # doctest: +SKIP
wrote ds (parquet): trials 24, words 2,094, fixations 3,209, word_measures 4,215
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from readgaze.errors import ConfigError, Option

MODES = ("onestop", "dataviewer", "asc", "samples")
"""What ``mode`` may be: OneStop's reports, any Data Viewer fixation report, EyeLink ``.asc`` recordings, gaze-sample
CSVs."""
SCREENS = {"onestop": (2560.0, 1440.0)}
"""Screen size (px) a mode assumes when ``screen_px`` is not given (for the off-screen count)."""
ON_WORDS_WARN = 0.5
"""Below this share of fixations on a word box, prep warns (reading puts most fixations on words; OneStop's sample:
3,208 of 3,209)."""
LABEL_TASKS = (("reading_goal", ("reading_goal",)), ("comprehension", ("is_correct", "question")),
               ("dyslexia", ("dyslexia",)), ("reading_comprehension_skill", ("reading_comprehension_skill",)))
"""The tasks whose labels :meth:`PrepResult.summary` reports as present, and the trial columns each needs."""


@dataclass
class PrepResult:
    """What :func:`prepare` wrote and found.

    Attributes
    ----------
    out : Path
        The dataset folder.
    format : str
        ``parquet``, ``csv`` or ``both``.
    prepared : readgaze.data_prep.pipeline.Prepared
        The four tables (``trials``, ``words``, ``fixations``, ``word_measures``: polars DataFrames) and the QC log
        (``prepared.qc``: every dropped, changed and flagged row, counted per reason; also in ``manifest.json``).
    notes : list of str
        Warnings and the labels join's report, as kept in ``manifest.json`` (``notes``).
    config : dict
        The settings recorded in ``manifest.json`` (``config``).
    """

    out: Path
    format: str
    prepared: Any
    notes: list[str] = field(default_factory=list)
    config: dict = field(default_factory=dict)

    def summary(self) -> list[str]:
        """The lines ``readgaze prep`` prints: the rows written, the notes, every drop and change by reason, and
        which tasks have labels."""
        from readgaze.io.faults import UNNAMED

        prepared = self.prepared
        rows = ", ".join(f"{k} {getattr(prepared, k).height:,}" for k in ("trials", "words", "fixations",
                                                                           "word_measures"))
        lines = [f"wrote {self.out} ({self.format}): {rows}"]
        lines += [f"  {note}" for note in self.notes]
        for r in prepared.qc.records:  # nothing is lost silently: every drop and change, also in manifest.json
            if r["count"] and r["action"] in ("dropped", "changed"):
                where = f"; {r['detail']}" if r.get("detail") and len(str(r["detail"])) <= 100 else ""
                lines.append(f"  {r['action']} {r['count']:,} {r['table']} ({r['step']}: {r['reason']}{where})")
            elif r["count"] and r["reason"] == UNNAMED:  # a column the header does not name: kept, and said
                lines.append(f"  warning: {r['detail']}")
        trials = prepared.trials
        from readgaze.lines.agreement import describe as describe_agreement

        lines += [f"  warning: {line}" for line in describe_agreement(trials)]  # trials whose lines are in doubt
        for task, needs in LABEL_TASKS:
            if all(c in trials.columns and trials[c].null_count() < trials.height for c in needs):
                lines.append(f"  task {task}: labels present; check them with  readgaze inspect {self.out}")
        if not any(c in trials.columns for c in ("reading_goal", "is_correct")):
            lines.append("  no label columns (reading_goal, is_correct): ready for readgaze predict BUNDLE; for "
                         "readgaze fit/cv, a --trials LABELS.csv must carry reading_goal or is_correct")
        return lines


def prepare(mode: str, *, out: str | Path, fixation_report: str | Path | None = None,
            ia_report: str | Path | None = None, files: Sequence[str | Path] = (), layout: str | Path | None = None,
            text_id: str | None = None, aoi: str | Path | None = None, source: str = "dataviewer",
            ia_id_base: int | None = None, columns: Sequence[str] | str | None = None,
            trials: str | Path | None = None, trials_on: Sequence[str] | None = None,
            key_map: Sequence[str] | None = None, binarise: Sequence[str] | None = None, separator: str | None = None,
            decimal_comma: bool = False, format: str = "parquet", force: bool = False,
            line_assigner: str | None = None, screen_px: tuple[float, float] | str | None = None,
            screen_cm: tuple[float, float] | str | None = None, distance_cm: float | None = None,
            origin: str = "upper-left", detector: str = "ivt", missing_value: float | str | None = -32768.0,
            time_unit: str = "ms", sampling_rate_hz: float | None = None, eye: str | None = None,
            encoding: str = "utf-8", surprisal_model: str | None = None, language: str = "en", cache: bool = True,
            ias: str | Path | None = None, ias_pattern: str | None = None,
            progress: Callable[[str], AbstractContextManager] | None = None,
            report: Callable[[str], None] | None = None) -> PrepResult:
    """Prepare lab data into a dataset folder (``trials``, ``words``, ``fixations``, ``word_measures`` + manifest).

    The keywords are the options of ``readgaze prep MODE`` with ``_`` for ``-`` (``--ia-id-base 1`` is
    ``ia_id_base=1``); ``readgaze prep MODE --help`` describes each.

    Parameters
    ----------
    mode : {"onestop", "dataviewer", "asc", "samples"}
        ``onestop``: OneStop's Data Viewer fixation and IA reports (``fixation_report``, ``ia_report``);
        ``dataviewer``: any Data Viewer fixation report with an IA report, a word AOI table (``aoi``) or neither
        (the report's own interest-area columns); ``asc``: EyeLink ``.asc`` recordings (``files``) and a ``layout``
        (without one, each trial's layout comes from its own ``!V IAREA`` messages);
        ``samples``: gaze-sample CSVs (``files``), a ``layout`` and the screen (``screen_px``, ``screen_cm``,
        ``distance_cm``), fixations detected by pymovements (``detector``: I-VT after Olsen 2012 or I-DT after
        Salvucci & Goldberg 2000).
    out : path
        The dataset folder (refused when it exists and is not empty, unless ``force``).
    columns : list of str or str, optional
        Column map: YAML file(s) and/or ``role=COLUMN`` pairs (``"x_px=PosX"``, ``"ia.word=Label"``); see
        :func:`readgaze.data_prep.columns.list_roles`.
    trials : path, optional
        A table of per-trial labels and items, joined on ``trials_on`` (``"participant_id=subject"``, ...) or on
        matching names.
    key_map : list of str, optional
        ``COLUMN=REGEX`` (the first group is the key: ``text_id='^\\w+-(\\w+)-\\d+$'`` makes ``reading-dickens-1``
        ``dickens``) or ``COLUMN=map.csv`` (two columns: trials value, table value): a trials key turned into the
        table's before the join (:func:`readgaze.data_prep.labels.parse_key_maps`).
    binarise : list of str, optional
        ``LABEL=COLUMN>=THRESHOLD`` rules making a label from a numeric column of the table (SB-SAT:
        ``is_correct=acc_level>=2``); the counts go to the notes.
    separator, decimal_comma : optional
        The CSV dialect of the exports (``";"`` with ``decimal_comma=True`` for ``390,6``).
    format : {"parquet", "csv", "both"}
    line_assigner : str, optional
        ``slice`` (default), ``nearest``, ``report``, ``dist`` or any :mod:`readgaze.lines` method.
    screen_px, screen_cm : (width, height) or "WIDTHxHEIGHT", optional
        The screen in px and cm (``samples`` needs both and ``distance_cm``; elsewhere ``screen_px`` only counts
        off-screen fixations; OneStop's default 2560x1440).
    missing_value : float, str or None
        The ``samples`` coordinate meaning no gaze (EyeLink's -32768; ``None`` or ``"none"``: only empty fields).
    cache : bool
        ``onestop``: reuse this machine's earlier parse of the same files (:mod:`readgaze.data_prep.cache`).
    progress : callable, optional
        ``progress(step_name)`` returns a context manager shown while a step runs (the command's rich display).
    report : callable, optional
        ``report(message)`` receives the cache's one line (hit, stored, or why not).
    ias, ias_pattern : optional
        ``dataviewer`` with character-level interest areas: the folder of the experiment's ``.ias`` files and a
        regular expression for their names whose named groups are the report's trial columns plus ``level``
        (:mod:`readgaze.data_prep.charlevel`).

    Returns
    -------
    PrepResult
        The folder, the tables and QC log, the notes and the recorded settings.

    Raises
    ------
    readgaze.errors.ReadgazeError
        Any problem with the inputs or options, naming the file, row and column where known.
    """
    if mode not in MODES:
        raise ConfigError(f"mode {mode!r}: expected one of {', '.join(MODES)}")
    separator = _separator(separator)
    needs = {"onestop": ("fixation_report", "ia_report"), "dataviewer": ("fixation_report",),
             "asc": ("files",), "samples": ("files", "layout")}[mode]
    given = {"fixation_report": fixation_report, "ia_report": ia_report, "files": files, "layout": layout}
    absent = [n for n in needs if not given[n]]
    if absent:
        raise ConfigError(f"prep {mode} needs {' and '.join(absent)}",
                          options=tuple(Option(f"{n}=...", f"--{n.replace('_', '-')} ...") for n in absent
                                        if n != "files"))
    if mode == "onestop":
        _prefetch(fixation_report, ia_report, cache=cache)
    try:
        return _prepare(mode, out=out, fixation_report=fixation_report, ia_report=ia_report, files=files,
                        layout=layout, text_id=text_id, aoi=aoi, source=source, ia_id_base=ia_id_base,
                        columns=columns, trials=trials, trials_on=trials_on, key_map=key_map, binarise=binarise,
                        separator=separator,
                        decimal_comma=decimal_comma, fmt=format, force=force, line_assigner=line_assigner,
                        screen_px=screen_px, screen_cm=screen_cm, distance_cm=distance_cm, origin=origin,
                        detector=detector, missing_value=missing_value, time_unit=time_unit,
                        sampling_rate_hz=sampling_rate_hz, eye=eye, encoding=encoding,
                        surprisal_model=surprisal_model, language=language, cache=cache,
                        progress=progress or (lambda name: nullcontext()), report=report, ias=ias,
                        ias_pattern=ias_pattern)
    finally:
        if mode == "onestop":  # what the load did not take (a cache hit, an early error) is not kept
            from readgaze.io.scan import forget

            forget([fixation_report, ia_report])


def _prepare(mode, *, out, fixation_report, ia_report, files, layout, text_id, aoi, source, ia_id_base, columns,
             trials, trials_on, key_map, binarise, separator, decimal_comma, fmt, force, line_assigner, screen_px,
             screen_cm, distance_cm, origin, detector, missing_value, time_unit, sampling_rate_hz, eye, encoding,
             surprisal_model, language, cache, progress, report, ias=None, ias_pattern=None) -> PrepResult:
    from readgaze.data_prep import sources
    from readgaze.data_prep.columns import parse_columns
    from readgaze.data_prep.dataset import DatasetWriter, check_target
    from readgaze.data_prep.pipeline import prepare as run_pipeline
    from readgaze.io.faults import RepairWarning

    check_target(out, force)
    spec = parse_columns([columns] if isinstance(columns, (str, Path)) else list(columns or []))
    dialect = {"separator": separator, "decimal_comma": decimal_comma}
    files = [str(f) for f in ([files] if isinstance(files, (str, Path)) else files)]
    with progress("load"), warnings.catch_warnings(record=True) as repaired:
        warnings.simplefilter("always", RepairWarning)  # a reader without a QC log warns: kept with the notes
        if mode == "onestop":
            sources.check_kind(fixation_report, ("onestop_fixations",) + (("fixations",) if spec else ()),
                               "--fixation-report")
            from readgaze.data_prep.cache import cached_load

            loaded = cached_load("onestop", lambda: sources.load_onestop(fixation_report, ia_report, spec,
                                                                         **dialect),
                                 {"fixation_report": fixation_report, "ia_report": ia_report},
                                 {"columns": spec, **dialect}, enabled=cache, report=report,
                                 background=True)  # stored while the pipeline runs; waited for below
        elif mode == "dataviewer" and (ias or ias_pattern):
            if not (ias and ias_pattern):
                raise ConfigError("character-level interest areas need both the .ias folder and its file-name "
                                  "pattern", options=(Option("ias='aois', ias_pattern='...(?P<level>chars|words)...'",
                                                             "--ias DIR --ias-pattern REGEX"),))
            from readgaze.data_prep.charlevel import load_char_level

            loaded = load_char_level(fixation_report, ias, ias_pattern, encoding=encoding)
        elif mode == "dataviewer":
            loaded = sources.load_dataviewer(fixation_report, ia_report, spec, source, aoi=aoi,
                                             ia_id_base=ia_id_base, encoding=encoding, **dialect)
        elif mode == "samples":
            loaded = sources.load_samples(files, layout, text_id, screen=_screen_geometry(screen_px, screen_cm,
                                                                                         distance_cm, origin),
                                          columns=spec, detector=detector, missing_value=_missing(missing_value),
                                          sampling_rate_hz=sampling_rate_hz, eye=eye, time_unit=time_unit,
                                          **dialect)
        else:
            loaded = sources.load_asc(files, layout, text_id, columns=spec, encoding=encoding,
                                      screen_px=_screen(screen_px), **dialect)
    notes = [f"warning: {w}" for w in loaded.warnings]
    notes += [f"repaired: {w.message}" for w in repaired if issubclass(w.category, RepairWarning)]
    for w in repaired:  # other warnings as Python shows them
        if not issubclass(w.category, RepairWarning):
            warnings.showwarning(w.message, w.category, w.filename, w.lineno)
    trial_table, words = loaded.trials, loaded.words
    if trials:
        from readgaze.data_prep.columns import for_table
        from readgaze.data_prep.labels import (
            attach_labels,
            parse_key_maps,
            parse_keys,
            parse_rules,
            read_table,
            rekey_words,
        )

        with progress("labels"):
            names = read_table(trials, **dialect).columns
            table = read_table(trials, **dialect, columns=for_table(spec, "trials", names))
            export = next(iter(loaded.sources.values()))[0]
            joined = attach_labels(trial_table, table, trials_file=export, table_file=trials,
                                   keys=parse_keys(list(trials_on or [])), aliases=loaded.aliases, qc=loaded.qc,
                                   key_maps=parse_key_maps(_list(key_map)), rules=parse_rules(_list(binarise)))
            words = rekey_words(words, trial_table, joined.trials, loaded.qc)
            trial_table = joined.trials
            notes += joined.messages
        loaded.sources["trials"] = [str(trials)]
    elif trials_on or key_map or binarise:
        raise ConfigError("join keys, key maps or binarise rules (--trials-on, --key-map, --binarise) are given "
                          "without a labels table to join",
                          options=(Option("trials='LABELS.csv'", "--trials LABELS.csv"),))
    if mode in ("asc", "samples") and layout is not None and words["text_id"].n_unique() > 1:  # several texts
        trial_table = sources.require_trial_texts(trial_table, words, layout, trials)
    assigner = line_assigner or loaded.line_assigner or "slice"
    if loaded.line_assigner == "report" and assigner != "report":
        notes.append(f"warning: the word boxes are estimated from the fixations (no IA report or AOI table); "
                     f"--line-assigner {assigner} assigns lines on those estimates")
    screen = _screen(screen_px) or SCREENS.get(mode)
    config = {"mode": mode, "line_assigner": assigner, "screen_px": screen, "surprisal_model": surprisal_model,
              "language": language, "loader": loaded.loader, "trials_on": list(trials_on) if trials_on else None,
              "key_map": _list(key_map) or None, "binarise": _list(binarise) or None,
              "format": fmt, "columns": spec or None, **dialect,
              **({"ias_pattern": ias_pattern, "off_text": "dataviewer"} if ias else {})}
    if mode == "samples":  # what the detector was given (its thresholds: readgaze.events' defaults)
        config |= {"screen_cm": _text(screen_cm), "distance_cm": distance_cm, "origin": origin,
                   "detector": detector, "time_unit": time_unit, "missing_value": _text(missing_value),
                   "sampling_rate_hz": sampling_rate_hz}
    from readgaze.corrections import log_path, read_log

    corrections = read_log(out) if log_path(out).is_file() else None  # a reviewer's log (readgaze review): kept
    if corrections is not None:  # an input like the raw files: the manifest records its checksum
        loaded.sources["corrections"] = [str(log_path(out))]
    with DatasetWriter(out, force=force, fmt=fmt) as writer:  # tables written as they are ready
        prepared = run_pipeline(trial_table, words, loaded.fixations, loaded.qc, line_assigner=assigner,
                                screen_px=screen, surprisal_model=surprisal_model, language=language,
                                progress=progress, sink=writer.put, corrections=corrections,
                                off_text="dataviewer" if ias else "skip")
        notes += word_box_warnings(prepared.fixations)
        from readgaze.text import layout_fit_warnings

        notes += layout_fit_warnings(prepared.fixations, prepared.words, prepared.trials)
        with progress("write"):
            written = writer.finish(prepared, sources=loaded.sources, config=config, id_bases=loaded.id_bases,
                                    notes=notes)
            from readgaze.data_prep.cache import wait_stored

            wait_stored()
    return PrepResult(out=written, format=fmt, prepared=prepared, notes=notes, config=config)


def _prefetch(fixation_report, ia_report, *, cache: bool) -> None:
    """Start the one pass over each OneStop report that the load needs besides its parse (SHA-256 for the cache
    key and the manifest, unless the checksum memo knows the files; the line starts and byte range, for the check of
    the report's lines, :mod:`readgaze.io.faults`), in a thread, before polars is imported."""
    from readgaze.data_prep.cache import stamps_known
    from readgaze.io.scan import prefetch

    files = [fixation_report, ia_report]
    sha256 = not stamps_known(files)  # without the cache too: the manifest records it
    if cache and not sha256:  # the memo knows the files: most likely a cache hit, nothing to read
        return
    prefetch(files, sha256=sha256, lines=True)  # the line starts: the check of each report's lines (io.faults)


def word_box_warnings(fixations) -> list[str]:
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


def _list(value) -> list[str]:
    """A keyword given as one string or several, as a list (empty for none)."""
    if not value:
        return []
    return [value] if isinstance(value, str) else list(value)


def _text(value) -> str | None:
    """A setting as the command line gives it (``"38x30.2"``, ``"-32768"``), for the manifest."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, (tuple, list)):
        return "x".join(f"{v:g}" for v in value)
    return f"{value:g}"


def _screen(value, option: str = "--screen-px", example: str = "1280x1024") -> tuple[float, float] | None:
    """``WIDTHxHEIGHT`` text or a (width, height) pair as two floats (None for none)."""
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        width, height = value
        return float(width), float(height)
    try:
        w, h = (float(v) for v in value.lower().split("x"))
    except ValueError:
        raise ConfigError(f"{option} {value!r}: expected WIDTHxHEIGHT, e.g. {example}") from None
    return w, h


def _screen_geometry(screen_px, screen_cm, distance_cm, origin):
    """The samples mode's :class:`readgaze.io.samples.ScreenGeometry` (every size is required)."""
    from readgaze.io.samples import ScreenGeometry

    px = _screen(screen_px)
    if px is None or screen_cm is None or distance_cm is None:
        raise ConfigError("prep samples needs the screen (size in px and cm, eye-to-screen distance in cm) to "
                          "convert pixels to degrees of visual angle",
                          options=(Option("screen_px=(1280, 1024), screen_cm=(38, 30.2), distance_cm=68",
                                          "--screen-px 1280x1024 --screen-cm 38x30.2 --distance-cm 68",
                                          "for example"),))
    cm = _screen(screen_cm, "--screen-cm", "38x30.2")
    return ScreenGeometry(int(px[0]), int(px[1]), *cm, distance_cm, origin=origin.replace("-", " "))


def _missing(value) -> float | None:
    """``missing_value`` as a number or None (``"none"``: only empty fields are missing)."""
    if value is None or (isinstance(value, str) and value.lower() == "none"):
        return None
    try:
        return float(value)
    except ValueError:
        raise ConfigError(f"--missing-value {value!r}: expected a number (e.g. -32768) or 'none'") from None


def _separator(text: str | None) -> str | None:
    """A separator by character or name (``tab``, ``comma``, ``semicolon``, ``space``)."""
    if text is None:
        return None
    named = {"tab": "\t", "\\t": "\t", "comma": ",", "semicolon": ";", "space": " "}
    value = named.get(text.lower(), text)
    if len(value) != 1:
        raise ConfigError(f"--separator {text!r}: expected one character, or tab / comma / semicolon")
    return value
