"""Read an EyeLink ``.asc`` file into canonical samples, fixations and a per-trial QC report.

Pipeline: :func:`readgaze.io.asc_scan.scan_asc` classifies every line and finds the recording
blocks, and :mod:`readgaze.io.asc_repair` checks their samples (repairing what ``mne.io.read_raw_eyelink``
mishandles); :mod:`readgaze.io.asc_block` parses the samples and end-of-event lines with Polars (the same
frames as mne returns on the repaired block, :mod:`readgaze.io.asc_mne`, which a test checks on every file); this
module adds messages,
``SFIX``/``SSACC``/``SBLINK`` without an end line (:mod:`readgaze.io.asc_events`), trial names and variables,
validation results and flags, picks one eye per trial and builds the frames. Trials are recording blocks by
default, named by their ``TRIALID`` message.

Streaming and memory: the file is read in chunks of at most ``chunk_lines`` lines, twice. The first
pass keeps only the lines that are not samples (messages, events, headers: about 2 % of a recording's
lines); the second re-reads the chunks holding samples, one at a time, and hands each chunk's parsed
samples to :mod:`readgaze.io.asc_samples` (kept, written to Parquet, or dropped). So the working set is
one chunk (at most ``chunk_lines`` lines of text, their tokens and parsed samples) plus the non-sample
lines and the event, message and trial tables, which grow with the number of events; with ``samples=``
a Parquet path or ``"none"`` no table of samples is held.

Time convention (``readgaze.schema``): ``start_ms`` is the first sample, ``duration_ms`` the
tracker's own ``EFIX`` duration, ``end - start + one sample interval`` (``EFIX R 1002
1100 100`` at 500 Hz lasts 100 ms). Reference: SR Research, *EyeLink 1000 Plus User Manual*
1.0.19, section 4.9 (ASC file format).
"""

from __future__ import annotations

import itertools
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

import polars as pl

from readgaze.errors import ConfigError
from readgaze.io import asc_qc, asc_trials
from readgaze.io.asc_block import parse_events, parse_samples
from readgaze.io.asc_events import check_durations, flag_blink_saccades, report_edges, with_lines, with_open_events
from readgaze.io.asc_messages import (  # noqa: F401 -- MESSAGE_RE: public here too
    MESSAGE_RE,
    empty_validation,
    messages_table,
    screen_box,
    validation_table,
    warn_tracker_errors,
)
from readgaze.io.asc_repair import BlockSamples, block_end_ms
from readgaze.io.asc_samples import SampleSink, check_target
from readgaze.io.asc_scan import CHUNK_LINES, Block, scan_asc
from readgaze.qc import QCLog

STEP = "read_asc"
EYE_PREFERENCE = "right"  # used when both eyes are recorded in every block and eye=None


@dataclass
class AscRecording:
    """Everything read from one ``.asc`` file. Frames are in memory, except ``samples`` read with
    ``samples=<path>.parquet`` (a LazyFrame over that file)."""

    path: Path
    samples: pl.DataFrame | pl.LazyFrame  # canonical samples (+ block, in_blink, per-eye columns if >1 eye)
    fixations: pl.DataFrame  # canonical fixations of the eye used (+ eye, flags, end_ms, block)
    saccades: pl.DataFrame
    blinks: pl.DataFrame
    events: pl.DataFrame  # every parsed event of every eye (kind = fixation/saccade/blink)
    messages: pl.DataFrame  # line, time_ms, offset_ms, text, block, trial_id
    trials: pl.DataFrame
    qc_report: pl.DataFrame
    validation: pl.DataFrame = field(default_factory=lambda: empty_validation())  # one row per eye per !CAL VALIDATION
    qc: QCLog = field(default_factory=QCLog)
    warnings: list[str] = field(default_factory=list)


def read_asc(path: str | Path, *, trial_message: str | None = None, eye: str | None = None,
             min_fixation_duration_ms: float = 0.0, drop_fixations: tuple[str, ...] = (),
             encoding: str = "utf-8", screen_px: tuple[float, float] | None = None,
             samples: str | os.PathLike = "memory", chunk_lines: int = CHUNK_LINES) -> AscRecording:
    """Read an EyeLink ``.asc`` file: samples per eye, the tracker's events, messages and trials.

    Parameters
    ----------
    path : str or Path
        ``edf2asc`` output with samples and events.
    trial_message : str, optional
        Regex on message text (after the timestamp) that starts a trial, e.g. ``r"TRIALID (\\S+)"``
        or ``r"SYNCTIME"``. The first group, if any, names the trial. Messages just before a
        block's ``START`` count for that block. Default: one trial per recording block, named by
        the block's ``TRIALID`` (the last one before ``START``, else the first inside), else
        ``block_<i>``. Data before a block's first matching message forms a trial ``<id>_pre``.
    eye : {"left", "right"}, optional
        Eye for the canonical ``x_px``/``y_px`` and for fixations. Default: the eye recorded in
        every block (right if both). A block lacking it uses its own eye, with a warning.
    min_fixation_duration_ms : float
        Fixations shorter than this are flagged ``too_short`` (default 0: none).
    drop_fixations : tuple of str
        Flags whose fixations are dropped: any of ``"truncated"``, ``"in_blink"``,
        ``"off_screen"``, ``"too_short"``. Default: keep all, flagged.
    encoding : str
        Text encoding (default UTF-8). Bytes that do not decode become U+FFFD, with a warning that
        names the file, the first such line and the number of lines.
    screen_px : (width, height), optional
        Screen size in px for ``off_screen``; default from ``DISPLAY_COORDS``, else ``GAZE_COORDS``
        (reported as the source), else off-screen detection is off (warned and recorded in ``qc``).
    samples : "memory", "none", or a path ending in ``.parquet``
        Where the samples go. ``"memory"`` (default): ``samples`` is a DataFrame. A Parquet path: each
        chunk of samples is written there as it is parsed (zstd row groups; an existing file is
        replaced, a failed read removes it) and ``samples`` is a ``polars.LazyFrame`` over the file,
        with the same rows, columns and dtypes as the DataFrame. ``"none"``: samples are parsed and
        counted (``trials.n_samples``, ``qc_report``) but not kept; ``samples`` is an empty DataFrame
        with the columns. With a path or ``"none"`` peak memory does not grow with the number of samples.
    chunk_lines : int
        Lines of the file read and parsed at once (default 100,000); it bounds the working set.

    Returns
    -------
    AscRecording
        ``samples``: ``trial_id, block, time_ms, x_px, y_px, pupil, eye, in_blink`` (+
        ``x_left_px, y_left_px, pupil_left, x_right_px, ...`` when the file has both eyes).
        ``fixations``: canonical columns + ``eye, end_ms, block, truncated_start, truncated_end,
        in_blink, off_screen, too_short``. ``saccades``: the used eye's saccades with ``line``
        (of ``ESACC``) and ``contains_blink`` (a blink of that eye lies inside it; EyeLink reports
        the saccade around a blink, so its amplitude is not a saccade's). ``trials``: ``trial_id, block,
        start_line, end_line, sampling_rate_hz, eyes, eye, n_samples, n_fixations`` plus one String
        column per ``!V TRIAL_VAR name value`` message (Data Viewer's trial variables; a message
        after a block's ``END`` belongs to that block's last trial). ``validation``: one row per
        ``!CAL VALIDATION`` result and eye (``line, time_ms, block`` = the next block, ``eye,
        points, result, error_avg_deg, error_max_deg, offset_deg, offset_x_px, offset_y_px``), also
        recorded in ``qc``. ``qc_report``: see :func:`readgaze.io.asc_qc.qc_report`. ``warnings``
        name the file and line.

    Raises
    ------
    ParseError
        No recording block, a block without ``SAMPLES``/``RATE``, a sample timestamp that is not a
        number, or sample lines whose number of values disagree (message names file and line).
    ConfigError
        Unknown ``eye``, ``drop_fixations``, ``encoding`` or ``samples`` value, ``chunk_lines`` < 1, or
        an invalid ``trial_message`` regex.
    """
    _check_options(eye, drop_fixations, trial_message)
    check_target(samples)
    scan = scan_asc(path, encoding=encoding, chunk_lines=chunk_lines)
    name, warnings, qc = scan.path.name, list(scan.warnings), QCLog(list(scan.qc.records))
    messages = messages_table(scan)
    eyes = _choose_eyes(scan.blocks, eye, name, warnings)
    segments = asc_trials.segments(scan, messages, trial_message, name, warnings)
    screen_warnings: list[str] = []  # reported after the blocks' own warnings
    screen = screen_box(messages, screen_px, name, screen_warnings, qc)
    parts: dict[str, list[pl.DataFrame]] = {"events": [], "fixations": []}
    sink = SampleSink(samples, scan.blocks)
    groups = itertools.groupby(scan.sample_chunks(), key=lambda piece: piece[0].index)  # (block, chunk) in order
    group = next(groups, None)
    try:
        for block in scan.blocks:
            chunks = iter(())
            if group is not None and group[0] == block.index:
                chunks = (rows for _, rows in group[1])
            _read_one_block(scan, block, chunks, eyes[block.index], segments[block.index], sink, parts, screen,
                            min_fixation_duration_ms, warnings, qc)
            if group is not None and group[0] == block.index:
                group = next(groups, None)
        samples_out = sink.result()
    except BaseException:
        sink.abort()
        raise
    warnings += screen_warnings
    counts = sink.sample_counts()
    all_fix = _concat(parts["fixations"], None)
    all_fix = all_fix.with_columns(drop_reason=asc_qc.drop_reason(drop_fixations))
    trials = asc_trials.trials_table(scan, segments, eyes, counts, all_fix)
    messages = asc_trials.assign_messages(messages, segments)
    trials = asc_trials.with_trial_variables(trials, messages, scan, segments)
    asc_trials.check_trial_results(messages, name, warnings, qc)
    warn_tracker_errors(messages, name, warnings, qc)
    validation = validation_table(messages, scan, qc)
    events = _concat(parts["events"], None)
    saccades = _used(events, "saccade", eyes)
    report = asc_qc.qc_report(trials, counts, all_fix, saccades)
    asc_qc.log_report(report, qc)
    fixations = _index(all_fix.filter(pl.col("drop_reason").is_null()).drop("drop_reason", "kind"))
    return AscRecording(scan.path, samples_out, fixations, saccades, _used(events, "blink", eyes),
                        events, messages, trials, report, validation, qc, warnings)


def _check_options(eye, drop_fixations, trial_message) -> None:
    if eye not in (None, "left", "right"):
        raise ConfigError(f"eye: got {eye!r}, expected 'left', 'right' or None")
    unknown = set(drop_fixations) - set(asc_qc.DROP_REASONS)
    if unknown:
        raise ConfigError(f"drop_fixations: got {sorted(unknown)}, expected any of {asc_qc.DROP_REASONS}")
    if trial_message is not None:
        try:
            re.compile(trial_message)
        except re.error as err:
            raise ConfigError(f"trial_message: {trial_message!r} is not a valid regex ({err})") from None


def _choose_eyes(blocks: list[Block], eye: str | None, name: str, warnings: list[str]) -> dict[int, str]:
    common = set.intersection(*(set(b.eyes) for b in blocks))
    want = eye or (EYE_PREFERENCE if EYE_PREFERENCE in common else next(iter(sorted(common)), None))
    chosen: dict[int, str] = {}
    for prev, block in zip([None, *blocks[:-1]], blocks):
        if prev is not None and prev.eyes != block.eyes:
            warnings.append(f"{name} line {block.start_line}: tracked eye changed from "
                            f"{' '.join(prev.eyes).upper()} (block at line {prev.start_line}) to "
                            f"{' '.join(block.eyes).upper()}")
        chosen[block.index] = want if want in block.eyes else (
            EYE_PREFERENCE if EYE_PREFERENCE in block.eyes else block.eyes[0])
        if want is not None and chosen[block.index] != want:
            warnings.append(f"{name} line {block.start_line}: block has no {want} eye; "
                            f"its trial uses the {chosen[block.index]} eye")
    used = sorted(set(chosen.values()))
    if len({b.eyes for b in blocks}) > 1:
        warnings.append(f"{name}: fixations and x_px/y_px use the {' / '.join(used)} eye"
                        + (" in every trial" if len(used) == 1 else " (see trials.eye)"))
    return chosen


def _read_one_block(scan, block, chunks, eye, segments, sink, parts, screen, min_ms, warnings, qc) -> None:
    """One block: its sample chunks (checked, repaired, parsed, flagged, given trials) go to ``sink``;
    then its events, closed at the block end, go to ``parts``."""
    base = _empty_events().select("kind", "eye", "start_ms", "end_ms", "duration_ms", "x_px", "y_px", "pupil")
    report: dict[str, list[int]] = {}
    tracked = parse_events(scan, block, report) if block.n_samples else pl.DataFrame()
    for line in report.get("cut", []):
        warnings.append(f"{scan.path.name} line {line}: the file's last line is an event line cut short (a truncated "
                        "recording?); not read")
        qc.add(STEP, "events", "last line cut short", 1, detail=f"line {line}")
    if report.get("repeated"):
        lines = sorted(report["repeated"])
        warnings.append(f"{scan.path.name} line {lines[0]}: {len(lines)} event line(s) repeat an earlier line of "
                        "the block word for word; the repeats are not read")
        qc.add(STEP, "events", "repeated event line", len(lines), detail=f"first line {lines[0]}")
    # blinks for the sample mask: an SBLINK without EBLINK lasts to the block end, which lies after every
    # sample (known only after the last chunk), so it is open-ended here
    open_ended = pl.concat([base, with_open_events(scan, block, tracked, float("inf"))], how="diagonal_relaxed")
    mask_blinks = open_ended.filter(pl.col("kind") == "blink", pl.col("eye") == eye)
    state = BlockSamples(scan, block)
    malformed: list[tuple[int, int]] = []
    for rows in chunks:
        rows = state.fields(rows)
        if not rows.height:
            continue
        times = state.times(rows)
        samples = parse_samples(block, times, malformed)
        samples = samples.with_columns(
            x_px=_eye_col(samples, f"x_{eye}_px"), y_px=_eye_col(samples, f"y_{eye}_px"),
            pupil=_eye_col(samples, f"pupil_{eye}"), eye=pl.lit(eye), block=pl.lit(block.index, pl.Int32))
        samples = samples.with_columns(in_blink=asc_qc.blink_mask(samples, mask_blinks))
        sink.add(asc_trials.assign_trials(samples, segments, "time_ms"))
    if malformed:
        state.malformed = [sum(n for n, _ in malformed), malformed[0][1]]
    state.finish(warnings, qc)  # repairs reported; the fields present are read, inconsistent lines raise
    end_ms = block_end_ms(block, state.max_repaired)
    events = pl.concat([base, with_open_events(scan, block, tracked, end_ms)], how="diagonal_relaxed")
    events = with_lines(scan, block, events)
    check_durations(events, block, scan.path.name, warnings)
    report_edges(events, block, scan.path.name, warnings, qc)
    events = events.with_columns(block=pl.lit(block.index, pl.Int32))
    events = asc_trials.assign_trials(events, segments, "start_ms")
    blinks = events.filter(pl.col("kind") == "blink", pl.col("eye") == eye)
    events = flag_blink_saccades(events, scan.path.name, warnings, qc)
    fixations = events.filter(pl.col("kind") == "fixation", pl.col("eye") == eye)
    parts["fixations"].append(asc_qc.flag_fixations(fixations, blinks, screen, min_ms))
    parts["events"].append(events)


def _eye_col(frame: pl.DataFrame, column: str) -> pl.Expr:
    return pl.col(column) if column in frame.columns else pl.lit(None, dtype=pl.Float64)


def _concat(frames: list[pl.DataFrame], empty: pl.DataFrame | None) -> pl.DataFrame:
    frames = [f for f in frames if f.height]
    if frames:
        return pl.concat(frames, how="diagonal_relaxed")
    if empty is not None:
        return empty
    return _empty_events()


def _empty_events() -> pl.DataFrame:
    return pl.DataFrame(schema={"kind": pl.String, "eye": pl.String, "start_ms": pl.Float64, "end_ms": pl.Float64,
                                "duration_ms": pl.Float64, "x_px": pl.Float64, "y_px": pl.Float64,
                                "pupil": pl.Float64, "truncated_start": pl.Boolean, "truncated_end": pl.Boolean,
                                "block": pl.Int32, "trial_id": pl.String, "in_blink": pl.Boolean,
                                "off_screen": pl.Boolean, "too_short": pl.Boolean})


def _index(fixations: pl.DataFrame) -> pl.DataFrame:
    ordered = fixations.sort("block", "start_ms", maintain_order=True)
    ordered = ordered.with_columns(fixation_index=pl.int_range(pl.len(), dtype=pl.Int32).over("trial_id"))
    first = ["trial_id", "fixation_index", "start_ms", "duration_ms", "x_px", "y_px", "pupil", "eye"]
    return ordered.select(first + [c for c in ordered.columns if c not in first])


def _used(events: pl.DataFrame, kind: str, eyes: dict[int, str]) -> pl.DataFrame:
    used = pl.DataFrame({"block": list(eyes), "eye": list(eyes.values())}, schema={"block": pl.Int32, "eye": pl.String})
    return events.filter(pl.col("kind") == kind).join(used, on=["block", "eye"], how="semi").drop("kind")


def inspect_asc(path: str | Path, *, encoding: str = "utf-8", screen_px: tuple[float, float] | None = None,
                trial_message: str | None = None) -> str:
    """A short text summary of an ``.asc`` file for ``readgaze inspect``.

    Lists the trials (block, first line, rate, eyes, eye used, samples, fixations, trial variables),
    the event counts, the validation results, the per-trial QC totals and every warning (file and
    line named). Options as in :func:`read_asc`.
    """
    rec = read_asc(path, encoding=encoding, screen_px=screen_px, trial_message=trial_message, samples="none")
    lines = [f"{rec.path.name}: {rec.trials.height} trial(s), {rec.trials['n_samples'].sum()} samples, "
             f"{rec.events.height} events ({_counts(rec.events)})"]
    base = {"trial_id", "block", "start_line", "end_line", "sampling_rate_hz", "eyes", "eye", "n_samples",
            "n_fixations"}
    for row in rec.trials.iter_rows(named=True):
        tvars = ", ".join(f"{k}={v}" for k, v in row.items() if k not in base and v is not None)
        lines.append(f"  trial {row['trial_id']}: block {row['block']} (line {row['start_line']}), "
                     f"{row['sampling_rate_hz']:g} Hz, eyes {row['eyes']} (using {row['eye']}), "
                     f"{row['n_samples']} samples, {row['n_fixations']} fixations" + (f"; {tvars}" if tvars else ""))
    for row in rec.validation.iter_rows(named=True):
        lines.append(f"  validation line {row['line']}: {row['eye']} eye, {row['points']} points, {row['result']}, "
                     f"error avg {row['error_avg_deg']}° max {row['error_max_deg']}°")
    totals = rec.qc_report.select(pl.exclude("trial_id", "block", "eye", "empty", "mean_saccade_amplitude_deg")).sum()
    lines.append("QC: " + ", ".join(f"{k} {v}" for k, v in totals.row(0, named=True).items()))
    lines += [f"warning: {w}" for w in rec.warnings] or ["no warnings"]
    return "\n".join(lines)


def _counts(events: pl.DataFrame) -> str:
    counts = events.group_by("kind").len().sort("kind").iter_rows()
    return ", ".join(f"{kind} {n}" for kind, n in counts) or "none"
