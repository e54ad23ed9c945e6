"""Parse one recording block's sample and end-of-event lines with Polars (no temporary file, no pandas).

The fields follow the EyeLink ASC format (SR Research, *EyeLink 1000 Plus User Manual* 1.0.19, section 4.9):

* sample line: ``time``, then ``x y pupil`` per recorded eye (left before right), then the optional groups
  the ``SAMPLES`` line declares (velocity, resolution, input, head target) and status tokens; ``.`` is a
  missing value;
* ``EFIX eye start end duration x y pupil [xres yres]``;
* ``ESACC eye start end duration start_x start_y end_x end_y amplitude_deg peak_velocity [xres yres]``;
* ``EBLINK eye start end duration``.

Damaged values (issue 29): a sample value that is neither a number nor ``.`` (``637,6``, ``abc``, a NUL, ``inf``)
is read as missing and counted (:func:`parse_samples`'s ``malformed``: one sample in a recording, the
reader warns with the first line); an event field that is neither (``EFIX`` with x ``abc``) is an error naming the
line and the field, since an event stands for many samples; an event line cut short at the end of the file (a
truncated recording) is dropped and counted.

It returns the same frames as :func:`readgaze.io.asc_mne.read_block` (``mne.io.read_raw_eyelink`` on the
repaired block); a test checks that both agree on every real and bad-input file. Samples are parsed one
chunk of sample lines at a time (:func:`parse_samples`), so work and memory per call are bounded by the
chunk size; the end-of-event lines of a block (a few per hundred samples) are parsed at once
(:func:`parse_events`).
"""

from __future__ import annotations

import polars as pl

from readgaze.errors import ParseError
from readgaze.io.asc_scan import AscScan, Block

EYES = {"L": "left", "R": "right"}
EVENTS = {"EFIX": ("fixation", ("x_px", "y_px", "pupil")),
          "ESACC": ("saccade", ("start_x_px", "start_y_px", "end_x_px", "end_y_px", "amplitude_deg",
                                "peak_velocity_deg_per_s")),
          "EBLINK": ("blink", ())}


def _number(tokens: pl.Expr, i: int) -> pl.Expr:
    return tokens.list.get(i, null_on_oob=True).cast(pl.Float64, strict=False)


def _malformed(tokens: pl.Expr, i: int) -> pl.Expr:
    """The ``i``-th token is there and is neither ``.`` (EyeLink's missing value) nor a finite number."""
    token = tokens.list.get(i, null_on_oob=True)
    return token.is_not_null() & (token != ".") & ~token.cast(pl.Float64, strict=False).is_finite().fill_null(False)


def read_block(scan: AscScan, block: Block, times: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Samples and tracker events of one block (all of its sample lines in ``times``): see
    :func:`parse_samples` and :func:`parse_events`."""
    return parse_samples(block, times), parse_events(scan, block)


def parse_samples(block: Block, times: pl.DataFrame, malformed: list | None = None) -> pl.DataFrame:
    """Samples of sample lines of one block, in tracker milliseconds.

    Parameters
    ----------
    block
        From :func:`readgaze.io.asc_scan.scan_asc` (its eyes).
    times : polars.DataFrame
        Sample lines with ``text`` and ``time_ms_repaired`` (:meth:`readgaze.io.asc_repair.BlockSamples.times`),
        a whole block or one chunk of it.
    malformed : list, optional
        Receives ``(count, first line)`` of the lines with a value that is neither a finite number nor ``.`` (read
        as missing).

    Returns
    -------
    polars.DataFrame
        One row per line: ``time_ms`` (Float64, the repaired timestamps) and per eye ``x_{eye}_px``,
        ``y_{eye}_px``, ``pupil_{eye}`` (Float64; null when missing, pupil also null when 0 with no gaze
        position).
    """
    tokens = pl.col("_t")
    split = times.select("line", "time_ms_repaired", _t=pl.col("text").str.extract_all(r"\S+"))
    columns = {"time_ms": pl.col("time_ms_repaired").round(3)}
    positions = [1 + 3 * k + j for k in range(len(block.eyes)) for j in range(3)]
    for k, eye in enumerate(block.eyes):
        for j, name in enumerate((f"x_{eye}_px", f"y_{eye}_px", f"pupil_{eye}")):
            number = _number(tokens, 1 + 3 * k + j)
            columns[name] = pl.when(number.is_finite()).then(number)
    if malformed is not None and positions:
        bad = split.filter(pl.any_horizontal([_malformed(tokens, i) for i in positions]))["line"]
        if bad.len():
            malformed.append((bad.len(), int(bad[0])))
    samples = split.select(**columns)
    return samples.with_columns(  # EyeLink writes pupil 0.0 when the pupil is lost
        pl.when(pl.col(f"x_{eye}_px").is_null() & (pl.col(f"pupil_{eye}") == 0)).then(None)
        .otherwise(pl.col(f"pupil_{eye}")).alias(f"pupil_{eye}") for eye in block.eyes)


def parse_events(scan: AscScan, block: Block, report: dict | None = None) -> pl.DataFrame:
    """The tracker events of one block: one row per ``EFIX``/``ESACC``/``EBLINK`` line (fixations, then
    saccades, then blinks, each by start time, ties in file order): ``kind``, ``eye``, ``start_ms``,
    ``end_ms``, ``duration_ms`` (Float64, ms) and the kind's fields above.

    ``report`` (a dict) receives under ``"cut"`` the line of an event line cut short at the end of the file, and under
    ``"repeated"`` the lines of event lines that repeat an earlier one of the block word for word (both dropped:
    EyeLink never writes an event twice).

    Raises
    ------
    ParseError
        An event line whose eye is not ``L``/``R``, whose times are not numbers, or a field that is neither a finite
        number nor ``.`` (the line and the field named).
    """
    tokens = pl.col("_t")
    lines = scan.block_lines(block.index).filter(pl.col("kind").is_in(list(EVENTS)))
    parts = []
    for line_kind, (kind, extra) in EVENTS.items():
        rows = lines.filter(pl.col("kind") == line_kind).select("line", "text",
                                                                 _t=pl.col("text").str.extract_all(r"\S+"))
        rows = _checked_events(scan, rows, line_kind, extra, report)
        parts.append(rows.select(
            kind=pl.lit(kind), eye=tokens.list.get(1, null_on_oob=True).replace_strict(EYES, default=None),
            start_ms=_number(tokens, 2), end_ms=_number(tokens, 3), duration_ms=_number(tokens, 4),
            **{name: _number(tokens, 5 + i) for i, name in enumerate(extra)}).sort("start_ms", maintain_order=True))
    return pl.concat(parts, how="diagonal_relaxed").fill_nan(None)


def _checked_events(scan: AscScan, rows: pl.DataFrame, line_kind: str, extra: tuple[str, ...],
                    report: dict | None) -> pl.DataFrame:
    """``rows`` (``line``, ``text``, tokens ``_t``) of one event kind, checked field by field (see
    :func:`parse_events`); the file's cut-short last line dropped."""
    tokens = pl.col("_t")
    names = ("eye", "start", "end", "duration", *extra)
    wanted = 2 + 3 + (len(extra) if line_kind != "ESACC" else 4)  # ESACC's amplitude and velocity may be absent
    short = rows.filter(tokens.list.len() < wanted)
    report = {} if report is None else report
    if short.height and int(short["line"][-1]) == scan.n_lines:  # the recording's last line, cut short: dropped
        report.setdefault("cut", []).append(scan.n_lines)
        rows = rows.filter(pl.col("line") != scan.n_lines)
        short = short.filter(pl.col("line") != scan.n_lines)
    if short.height:
        raise ParseError(f"{line_kind} line has {len(short['_t'][0])} fields, expected at least {wanted}",
                         file=scan.path, row=int(short["line"][0]))
    checks = [(1, "eye", ~tokens.list.get(1, null_on_oob=True).is_in(list(EYES)).fill_null(False))]
    checks += [(i, names[i - 1], tokens.list.get(i, null_on_oob=True).cast(pl.Float64, strict=False).is_finite()
                .fill_null(False).not_()) for i in (2, 3, 4)]
    checks += [(5 + i, name, _malformed(tokens, 5 + i)) for i, name in enumerate(extra)]
    flags = rows.select([e.any().alias(str(i)) for i, _, e in checks]).row(0, named=True) if rows.height else {}
    for i, name, e in checks:
        if flags.get(str(i)):
            hit = rows.filter(e).row(0, named=True)
            got = hit["_t"][i] if len(hit["_t"]) > i else None
            shown = "nothing (the line is cut short)" if got is None else repr(got)
            raise ParseError(f"{line_kind} field {name}: got {shown}, expected "
                             + ("L or R" if name == "eye" else "a number" if i <= 4 else "a number or '.'"),
                             file=scan.path, row=int(hit["line"]))
    again = rows.filter(pl.col("_t").is_duplicated() & ~pl.col("_t").is_first_distinct())
    if again.height:
        report.setdefault("repeated", []).extend(again["line"].to_list())
        rows = rows.filter(pl.col("_t").is_first_distinct())
    return rows.drop("line", "text")
