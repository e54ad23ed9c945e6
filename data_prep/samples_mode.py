"""The ``samples`` mode of ``readgaze prep``: gaze-sample CSVs to fixations, trials and the words of a layout.

Each file is read with :func:`readgaze.io.samples.read_gaze_csv` (Tobii, SMI, pymovements datasets; its columns named
by the ``samples`` roles of a column map), cut into trials, and its fixations detected with pymovements' I-VT or
I-DT (:func:`readgaze.events.detect_fixations`); every trial shows the one text of the layout file
(:mod:`readgaze.data_prep.layouts`). Two checks guard the time column's unit: a median step between samples outside
0.1-100 ms is an error, and a trial with fewer than :data:`FEW_FIXATIONS_PER_S` detected fixations per second of
samples draws a warning. The files' QC counts are summed into one log, each file's share in the record's detail.

The other three modes' loaders live in :mod:`readgaze.data_prep.sources`, which imports :func:`load_samples` back.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

from readgaze.data_prep.columns import SAMPLE_DEFAULTS, for_table, unused
from readgaze.data_prep.inputs import Loaded, check_kind
from readgaze.data_prep.layouts import layout_words, one_text
from readgaze.errors import ConfigError
from readgaze.io.samples import MISSING_GAZE
from readgaze.qc import QCLog


def load_samples(files, layout, text_id: str | None = None, *, screen, columns: dict | None = None,
                 detector: str = "ivt", missing_value: float | None = MISSING_GAZE,
                 sampling_rate_hz: float | None = None,
                 eye: str | None = None, time_unit: str = "ms", separator: str | None = None,
                 decimal_comma: bool = False) -> Loaded:
    """Gaze-sample CSVs: fixations detected per trial (:func:`readgaze.events.detect_fixations`); every trial
    shows ``layout``.

    Each file is read with :func:`readgaze.io.samples.read_gaze_csv`, its columns named by the ``samples`` roles of
    ``columns`` (default ``timestamp``, ``x``, ``y``; ``readgaze prep --list-roles``). A file's trials are the values
    of its ``trial`` column within each participant, else the file is one trial. ``participant_id`` is the
    ``participant_id`` column (else the file stem); trial ids are ``<participant>_<trial>`` (``<file stem>_<trial>``
    without a participant column; the file stem without a trial column), and a trial id found in two files is an
    error. ``trial`` keeps the file's own trial id (a labels table's key), ``n_samples`` and ``n_missing_samples``
    count the trial's samples and those without a position, ``samples_file`` names its file. A trial with fewer
    than :data:`FEW_FIXATIONS_PER_S` fixations per second of samples is warned about. The detector's
    counts (samples in fixation / saccade / missing, fixations dropped as too short or merged) go to the QC log.

    Parameters
    ----------
    screen : readgaze.io.samples.ScreenGeometry
        Converts pixels to degrees of visual angle for the detector (and moves a ``"center"`` origin).
    detector : {"ivt", "idt"}
        pymovements' velocity- or dispersion-threshold detector with readgaze's defaults (:mod:`readgaze.events`).
    missing_value : float, optional
        The coordinate that means "no gaze" (EyeLink and pymovements: -32768); such samples are missing.
    sampling_rate_hz : float, optional
        Default: each trial's median time step.
    time_unit : {"ms", "s", "us"}
        Unit of the time column (:data:`readgaze.io.samples.TIME_UNITS`).

    Raises
    ------
    ParseError
        A named column is absent or holds a value that is not a number (file, row and column).
    ConfigError
        A file that is another mode's input, an unknown detector, a layout that cannot be read, a trial id in two
        files, no fixation detected in any file, or a median time step outside 0.1-100 ms (10 Hz to 10 kHz: the
        time column's unit is not ``time_unit``).
    """
    from readgaze.events import detect_fixations
    from readgaze.io.csv import header
    from readgaze.io.samples import read_gaze_csv

    for f in files:
        check_kind(f, (), "the gaze-sample file")
    tid, words = layout_words(layout, text_id, columns, separator, decimal_comma)
    spec = columns or {}
    headers = {str(f): header(f, separator=separator) for f in files}
    missing = unused({"any": spec.get("any", {})}, {**headers, "layout": header_or_empty(layout, separator)})
    if missing:
        import difflib

        names = sorted({c for h in headers.values() for c in h})
        wanted = missing[0].partition("=")[2]
        lower = {c.lower(): c for c in names}
        close = [lower[wanted.lower()]] if wanted.lower() in lower else [
            lower[c] for c in difflib.get_close_matches(wanted.lower(), list(lower), n=1)]
        raise ConfigError(f"--columns {', '.join(missing)}: no gaze-sample file has such a column "
                          f"({', '.join(Path(f).name for f in files)} have {', '.join(names)})"
                          + (f"; did you mean {close[0]!r}?" if close else ""))
    trials, fixations, logs, warnings = [], [], [], []
    for f in files:
        names = headers[str(f)]
        role = {**SAMPLE_DEFAULTS, **for_table(spec, "samples", names)}
        absent = [f"{r}={c}" for r, c in role.items() if c not in names]
        if absent:
            timed = next((n for n in names if "time" in n.lower()), "COLUMN")
            raise ConfigError(f"no column for {', '.join(absent)} (the header has {', '.join(names)}): name yours "
                              f"with --columns, e.g. --columns time_ms={timed} x_px=... y_px=...", file=f, row=1)
        stem = Path(f).stem
        reading = QCLog()  # the file's repairs and flags (blank lines, non-finite values, ...)
        samples = read_gaze_csv(f, separator=separator, missing_value=missing_value, time_column=role["time_ms"],
                                x_column=role["x_px"], y_column=role["y_px"], pupil_column=role.get("pupil"),
                                trial_id=stem, eye=eye, screen=screen, sampling_rate_hz=sampling_rate_hz,
                                decimal_comma=decimal_comma, time_unit=time_unit, qc=reading)
        logs.append((Path(f).name, reading))
        who = pl.col(role["participant_id"]).cast(pl.String) if "participant_id" in role else pl.lit(stem)
        if "trial" in role:  # a trial of a participant (else of the file): "<participant or file stem>_<trial>"
            trial = pl.col(role["trial"]).cast(pl.String)
            samples = samples.with_columns(pl.concat_str(who, pl.lit("_"), trial).alias("trial_id"),
                                           trial.alias("_trial"))
        else:  # the file is one trial
            samples = samples.with_columns(pl.lit(stem).alias("_trial"))
        samples = samples.with_columns(who.alias("_participant")).collect()
        unnamed = QCLog()  # a sample whose trial or participant cell is empty belongs to no trial
        unnamed.add("load_samples", "samples", "no trial id (empty trial or participant cell)",
                    samples["trial_id"].null_count(), detail="dropped before fixation detection")
        logs.append((Path(f).name, unnamed))
        samples = samples.filter(pl.col("trial_id").is_not_null())
        _check_time_step(samples, f, role["time_ms"], time_unit)
        found, found_qc = detect_fixations(samples, method=detector, screen=screen, sampling_rate_hz=sampling_rate_hz)
        logs.append((Path(f).name, found_qc))
        per_trial = samples.group_by("trial_id", maintain_order=True).agg(
            pl.col("_participant").first().alias("participant_id"), pl.col("_trial").first().alias("trial"),
            pl.len().cast(pl.Int64).alias("n_samples"),
            (pl.col("x_px").is_null() | pl.col("y_px").is_null()).sum().cast(pl.Int64).alias("n_missing_samples"),
            (pl.col("time_ms").max() - pl.col("time_ms").min()).alias("_span_ms"))
        warnings += _few_fixations(per_trial, found, f)
        trials.append(per_trial.drop("_span_ms").with_columns(pl.lit(str(f)).alias("samples_file")))
        fixations.append(found)
    if not sum(x.height for x in fixations):
        raise ConfigError(f"no fixation detected in {len(files)} gaze-sample file(s) "
                          f"({sum(t['n_samples'].sum() for t in trials):,} samples): check --screen-px, --screen-cm, "
                          "--distance-cm and --time-unit (and that x and y are the gaze columns)", file=files[0])
    trials = pl.concat(trials)
    repeated = trials.filter(pl.col("trial_id").is_duplicated())
    if repeated.height:
        first = repeated["trial_id"][0]
        raise ConfigError(f"trial {first!r} is in several gaze-sample files "
                          f"({', '.join(repeated.filter(pl.col('trial_id') == first)['samples_file'])}): a trial's "
                          "samples must be in one file (name the participant with --columns participant_id=COLUMN, or "
                          "rename files of the same name)")
    return Loaded(trials=one_text(trials, tid), words=words, fixations=pl.concat(fixations), qc=_summed(logs),
                  sources={"samples": [str(f) for f in files], "layout": [str(layout)]},
                  loader=f"readgaze.io.samples + readgaze.events ({detector}, pymovements)", warnings=warnings)


FEW_FIXATIONS_PER_S = 1.0
"""Fewer detected fixations per second of samples than this draws a warning: reading makes about 3-5 (Rayner 1998,
*Psychological Bulletin* 124: fixations of 200-250 ms)."""


def _few_fixations(per_trial: pl.DataFrame, found: pl.DataFrame, path) -> list[str]:
    """Warnings for trials whose detected fixation rate is below :data:`FEW_FIXATIONS_PER_S`."""
    rate = (per_trial.select("trial_id", "_span_ms")
            .join(found.group_by("trial_id").agg(pl.len().alias("n")), on="trial_id", how="left")
            .with_columns(pl.col("n").fill_null(0))
            .filter(pl.col("_span_ms") > 1000.0)
            .filter(pl.col("n") < FEW_FIXATIONS_PER_S * pl.col("_span_ms") / 1000.0))
    if not rate.height:
        return []
    t = rate.row(0, named=True)
    return [f"{path}: {rate.height} trial(s) with fewer than {FEW_FIXATIONS_PER_S:g} fixation per second of samples "
            f"(e.g. {t['trial_id']}: {t['n']} in {t['_span_ms'] / 1000.0:.1f} s; reading makes 3-5): check "
            "--screen-cm, --distance-cm and --time-unit"]


def _check_time_step(samples: pl.DataFrame, path, column: str, unit: str) -> None:
    """A median step between samples outside 0.1-100 ms means the time column is in another unit."""
    step = samples.select(pl.col("time_ms").diff().over("trial_id").median()).item()
    if step is not None and not 0.1 <= step <= 100.0:
        raise ConfigError(f"the median step between samples is {step:g} ms ({1000.0 / step:g} Hz) with "
                          f"--time-unit {unit}: a tracker samples at 10 Hz to 10 kHz; is the time column in s or us? "
                          f"(--time-unit s|ms|us)", file=path, column=column)


def _summed(logs: list[tuple[str, QCLog]]) -> QCLog:
    """One record per (step, table, reason, action): the files' counts summed, each file's count in ``detail``
    (the first five files) when there are several, the record's own detail when there is one."""
    groups: dict[tuple, list[tuple[str, int]]] = {}
    details: dict[tuple, str | None] = {}
    for name, log in logs:
        for r in log.records:
            key = (r["step"], r["table"], r["reason"], r["action"])
            groups.setdefault(key, []).append((name, r["count"]))
            details[key] = r["detail"]
    qc = QCLog()
    for (step, table, reason, action), counts in groups.items():
        detail = details.get((step, table, reason, action)) if len(counts) == 1 else None  # one file: its own
        if len(counts) > 1:
            detail = "per file: " + ", ".join(f"{n} {c:,}" for n, c in counts[:5]) + (
                f", and {len(counts) - 5} more" if len(counts) > 5 else "")
        qc.add(step, table, reason, sum(c for _, c in counts), action, detail=detail)
    return qc


def header_or_empty(path, separator) -> list[str]:
    """A table's column names (none for a JSON file: a layout given as JSON has no header)."""
    from readgaze.io.csv import header

    return [] if Path(path).suffix == ".json" else header(path, separator=separator)
