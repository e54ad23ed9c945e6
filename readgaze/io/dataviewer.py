"""SR Research Data Viewer fixation and interest-area reports, read lazily into canonical frames.

A fixation report has one row per fixation (``CURRENT_FIX_*``); an interest-area (IA) report one row per
trial x interest area (``IA_*``). Each source's column names live in :mod:`readgaze.io.sources`; the
readers here rename the mapped columns to canonical names, keep every other column under its source
name, and never guess dtypes from the first 100 rows (:func:`readgaze.io.csv.scan_csv`).

Interest-area ids: Data Viewer writes 1-based ids, but exports re-processed by other tools may be
0-based (the OneStop sample's IA report). ``ia_index`` is always 0-based; pass ``ia_id_base``,
or let :func:`detect_ia_id_base` decide from label agreement between the two reports.
Reference: SR Research (2021), *EyeLink Data Viewer User's Manual* 4.2, sections "Fixation Report" and
"Interest Area Report".
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

from readgaze.errors import ConfigError, SchemaError
from readgaze.io import cells
from readgaze.io.csv import header, read_csv, scan_csv
from readgaze.io.dataviewer_measures import word_measures_from_ia_report  # noqa: F401 -- public here too
from readgaze.io.report_keys import (  # noqa: F401 -- public here too
    ID_BASE_OPTIONS,
    IdBaseCheck,
    check_unique,
    detect_ia_id_base,
)
from readgaze.io.rows import per_row_run
from readgaze.io.sources import SOURCES, resolve
from readgaze.qc import QCLog

_FIX_FLOATS = ("start_ms", "duration_ms", "x_px", "y_px", "pupil")
_BOX = ("left_px", "right_px", "top_px", "bottom_px")
RESTART = "restart"
"""``session_key`` value: a new session starts where the fixation index stops increasing in a trial."""


def _trial_id(raw: pl.LazyFrame, cols: dict[str, str], source: str, path, session_key) -> pl.Expr:
    spec = SOURCES[source]
    have = raw.collect_schema().names()
    if "trial_id" in cols:
        base = pl.col(cols["trial_id"]).cast(pl.String)
    elif spec.trial_id is not None:
        missing = [c for c in ("participant_id",) if c not in cols]
        missing += [c for c in spec.required_trial_columns if c not in have]
        if missing:
            raise SchemaError(f"{source} report: missing trial columns {missing}", file=path)
        base = spec.trial_id(cols)
    else:
        missing = [r for r in ("participant_id", "trial") if r not in cols]
        if missing:
            raise SchemaError(f"cannot build trial ids: no column for {missing} (roles; pass "
                              f"columns={{role: source column}})", file=path)
        base = pl.concat_str([pl.col(cols["participant_id"]), pl.col(cols["trial"])], separator="_")
    if session_key is None:
        return base
    if session_key == RESTART:
        if "fixation_index" not in cols:
            raise SchemaError("session_key='restart' needs a fixation index column", file=path)
        fix = pl.col(cols["fixation_index"])
        session = (fix <= fix.shift(1)).fill_null(False).cast(pl.Int32).cum_sum().over(base)
    elif session_key in have:
        session = pl.col(session_key).cast(pl.String)
    else:
        raise SchemaError(f"session_key {session_key!r} is neither 'restart' nor a column", file=path)
    return pl.concat_str([base, pl.lit("s") + session.cast(pl.String)], separator="_")


def read_fixation_report(path: str | Path, *, columns: dict[str, str] | None = None,
                         source: str = "dataviewer", ia_id_base: int | None = None,
                         session_key: str | None = None, check_keys: bool = True,
                         separator: str | None = None, decimal_comma: bool = False,
                         schema: dict | None = None, qc: QCLog | None = None,
                         in_memory: bool = False, ia_report: str | Path | pl.LazyFrame | None = None,
                         encoding: str = "utf-8", keep: list[str] | None = None,
                         rename: dict[str, str] | None = None) -> pl.LazyFrame:
    """Read a Data Viewer fixation report as canonical ``fixations``.

    Parameters
    ----------
    path : str or Path
        The report (comma or TAB separated; ``.`` and empty fields are null).
    columns : dict, optional
        ``{role: source column}`` overriding the source's map (roles in :mod:`readgaze.io.sources`).
    source : {'dataviewer', 'onestop', 'sbsat'}
        Column map and trial-id rule.
    ia_id_base : {0, 1}, optional
        Base of the report's interest-area id. Default: detected from label agreement with ``ia_report``
        when given (:func:`detect_ia_id_base`); else the source's fixed base (SB-SAT, OneStop: 1); else 0
        when some id is 0 (a 1-based export writes ``.`` off word, never 0); else unknown: a
        :class:`ConfigError` asks for it rather than shift every word by one.
    ia_report : str, Path or polars.LazyFrame, optional
        The IA report of the same trials (path, or a frame read by :func:`read_ia_report`), used only to
        detect ``ia_id_base``.
    session_key : str, optional
        Split trials whose key repeats (two sessions in one export): a column naming the
        session, or ``'restart'`` (a new session wherever the fixation index stops increasing).
        Adds ``_s{session}`` to ``trial_id``.
    check_keys : bool
        Raise :class:`DataError` on a repeated (trial, fixation index) key (one extra pass).
    separator, decimal_comma, schema, in_memory, encoding
        Passed to :func:`readgaze.io.csv.scan_csv` (``in_memory=True``: the file is parsed once, now,
        and every later collect reads the frame in memory; ``encoding="cp1252"`` for Windows exports).
    keep : list of str, optional
        Source columns to keep besides the mapped ones and those the trial id is built from (default:
        all; names the file lacks are ignored). Only these are parsed: with ``in_memory`` it bounds
        the memory and the parse time.
    qc : QCLog, optional
        Receives the repairs of the file's lines (:mod:`readgaze.io.faults`), and the counts of off-word
        fixations, of nulls per column and of trials whose fixation numbers are not 1..n (flagged; one extra pass).
    rename : dict, optional
        ``{file column: name}`` applied before anything else (``keep`` and ``columns`` use the new names): a column
        map onto a source's own names (:func:`readgaze.io.onestop.load_onestop`).

    Returns
    -------
    polars.LazyFrame
        ``trial_id`` (String), ``fixation_index`` (Int32, 0-based; from ``CURRENT_FIX_INDEX`` - 1, else
        file order), ``start_ms``, ``duration_ms``, ``x_px``, ``y_px``, ``pupil`` (Float64; null when the
        report lacks them, e.g. SB-SAT has no start time), ``ia_index`` and ``word_index`` (Int32, 0-based;
        null off-word or when the id is below the base), ``ia_label`` (String, the fixated IA's label),
        then every other source column unchanged. ``word_index`` equals ``ia_index`` here; loaders that
        know of words split over two IAs (:func:`readgaze.io.onestop.load_onestop`) remap it.

    Raises
    ------
    ParseError
        A mapped numeric column holds a non-number (file, row, column, value).
    SchemaError
        x, y or duration, or the trial identity, is missing; or x, y or duration is present but missing on every
        row (a silent default would follow).
    ParseError
        A key cell that is empty, padded or holds a control character; a trial number, fixation number or
        interest-area id that is not a whole number (>= 0; fixation numbers >= 1); a coordinate, time or pupil size
        that is not finite; a negative duration (file, row, column and value named).
    DataError
        ``check_keys`` and a (trial, fixation index) key repeats: names the file, the rows and the key; or
        the labels agree with ``ia_report`` under neither base.
    ConfigError
        The id base is neither given nor detectable (see ``ia_id_base``).
    """
    _check_base(ia_id_base)
    if ia_id_base is None and ia_report is not None:
        ia = read_ia_report(ia_report, source=source, check_keys=False) if isinstance(ia_report, (str, Path)) \
            else ia_report
        raw0 = read_fixation_report(path, columns=columns, source=source, ia_id_base=0, check_keys=False,
                                    separator=separator, decimal_comma=decimal_comma, schema=schema,
                                    encoding=encoding, rename=rename)
        ia_id_base = detect_ia_id_base(raw0, ia, fixation_file=path, ia_file=getattr(ia_report, "name", "IA report")
                                       if not isinstance(ia_report, (str, Path)) else ia_report).base
    dialect = {"separator": separator, "decimal_comma": decimal_comma, "schema": schema, "encoding": encoding,
               "qc": qc, "step": "read_fixation_report", "table": "fixations", "rename": rename}
    if keep is None:
        raw = scan_csv(path, in_memory=in_memory, **dialect)
    else:  # only the mapped columns, the trial-id columns and `keep` are parsed
        names = header(path, separator=separator, encoding=encoding, rename=rename)
        wanted = {*resolve(source, "fixations", names, columns, path).values(),
                  *SOURCES[source].required_trial_columns, *keep}
        raw = (read_csv(path, columns=wanted, **dialect).lazy() if in_memory else
               scan_csv(path, **dialect).select([c for c in names if c in wanted]))
    cols = resolve(source, "fixations", raw.collect_schema().names(), columns, path)
    missing = [r for r in ("duration_ms", "x_px", "y_px") if r not in cols]
    if missing:
        raise SchemaError(f"fixation report: no column for {missing} (expected "
                          f"{', '.join(_expected(source, 'fixations', r) for r in missing)}; map yours with "
                          "columns={role: column}, in readgaze prep --columns role=COLUMN)", file=path)
    raw = cells.numbers(raw, path, cols, (*_FIX_FLOATS, "fixation_index", "ia_id"))
    _check_keys(raw, path, cols, source)
    trial_id = _trial_id(raw, cols, source, path, session_key).alias("trial_id")
    if in_memory:  # built once (once per run of a trial's rows), for the key check and the output
        raw = raw.collect().lazy()  # the casts done: the parsed columns they replace are freed now
        raw, trial_id = _with_trial_id(raw, trial_id, row_wise=session_key is None), pl.col("trial_id")
    if check_keys and "fixation_index" in cols:
        names = [cols[r] for r in ("participant_id", "trial") if r in cols and "trial_id" not in cols]
        check_unique(raw, path, {"trial_id": trial_id, cols["fixation_index"]: pl.col(cols["fixation_index"])},
                      shown=names + [cols["fixation_index"]], session_key=session_key)
    base = _fixation_base(raw, cols, source, path) if ia_id_base is None else ia_id_base
    fix_index = (pl.col(cols["fixation_index"]) - 1 if "fixation_index" in cols
                 else pl.int_range(pl.len()).over("trial_id"))
    ia = _rebased(pl.col(cols["ia_id"]), base) if "ia_id" in cols else pl.lit(None, pl.Int32)
    canonical = {
        "trial_id": trial_id,
        "fixation_index": fix_index.cast(pl.Int32),
        **{r: (pl.col(cols[r]) if r in cols else pl.lit(None)).cast(pl.Float64) for r in _FIX_FLOATS},
        "ia_index": ia, "word_index": ia,
        "ia_label": (pl.col(cols["ia_label"]) if "ia_label" in cols else pl.lit(None)).cast(pl.String),
    }
    used = {cols[r] for r in ("fixation_index", "ia_id", "ia_label", *_FIX_FLOATS, "trial_id") if r in cols}
    rest = [c for c in raw.collect_schema().names() if c not in used and c not in canonical]
    out = raw.with_columns(trial_id).select([e.alias(n) if n != "trial_id" else pl.col("trial_id")
                                             for n, e in canonical.items()] + rest)
    out = _name_participant(out, cols)
    required = ("duration_ms", "x_px", "y_px")  # present (checked above) but possibly '.' on every row
    stats = out.select(pl.len().alias("_rows"), pl.col("word_index").is_null().sum().alias("_off"),
                       *(pl.col(r).null_count().alias(r) for r in required)).collect().row(0, named=True)
    empty = [r for r in required if stats["_rows"] and stats[r] == stats["_rows"]]
    if empty:
        raise SchemaError(f"every value is missing ('.' or empty) in {', '.join(cols[r] for r in empty)} "
                          f"({', '.join(empty)}): a report without fixation coordinates cannot be aligned by "
                          "position; a report with character interest areas and no coordinates goes through "
                          "readgaze.io.charreport (readgaze prep copco for CopCo)", file=path, column=cols[empty[0]])
    if qc is not None:
        n_off = stats["_off"]
        qc.add("read_fixation_report", "fixations", "off_word", n_off, action="flagged",
               detail=f"{Path(path).name}: fixations outside every interest area keep word_index null")
        cells.null_counts(out, qc, "read_fixation_report", "fixations", path)
        cells.split_groups(out, qc, "read_fixation_report", "fixations", path, group="trial_id",
                           what="rows of a trial not together in the report")
        if "fixation_index" in cols:
            cells.index_gaps(out, qc, "read_fixation_report", "fixations", path, group="trial_id",
                             index="fixation_index", first=0, what="fixation numbers of a trial not 1..n")
        if "start_ms" in cols:
            cells.out_of_order(out, qc, "read_fixation_report", "fixations", path, group="trial_id",
                               order="fixation_index" if "fixation_index" in cols else None, value="start_ms",
                               what="fixation start not after the previous fixation's")
    return out


def _expected(source: str, table: str, role: str) -> str:
    spec = SOURCES[source]
    names = (spec.fixation_columns if table == "fixations" else spec.ia_columns).get(role, ())
    return f"{role} <- {' or '.join(names)}" if names else role


def _check_keys(raw: pl.LazyFrame, path, cols: dict[str, str], source: str) -> None:
    """The key cells of a report (:func:`readgaze.io.cells.keys`): participant and trial number, or the trial id,
    and the columns the source builds its trial id from (OneStop's ``repeated_reading_trial`` must be a boolean)."""
    names = [cols[r] for r in ("trial_id",) if r in cols] or [cols[r] for r in ("participant_id", "trial")
                                                             if r in cols]
    spec = SOURCES[source]
    numbers = [cols["trial"]] if "trial" in cols and "trial_id" not in cols else []
    cells.keys(raw, path, [*names, *spec.required_trial_columns], numbers_only=[*numbers, *spec.number_keys],
               booleans_only=spec.boolean_keys)


def _fixation_base(raw: pl.LazyFrame, cols: dict[str, str], source: str, path) -> int:
    """The id base of a fixation report read alone: the source's, else 0 if an id is 0, else ConfigError."""
    if SOURCES[source].fixation_ia_id_base is not None or "ia_id" not in cols:
        return SOURCES[source].fixation_ia_id_base or 1
    low = raw.select(pl.col(cols["ia_id"]).min()).collect().item()
    if low is None or low == 0:
        return 0
    raise ConfigError(f"the interest-area id base of this fixation report is unknown (its lowest "
                      f"{cols['ia_id']} is {low}, which fits base 1 and a 0-based report whose first IA was never "
                      "fixated)", file=path, column=cols["ia_id"], options=ID_BASE_OPTIONS)


def _check_base(base) -> None:
    if base not in (None, 0, 1):
        raise ConfigError(f"ia_id_base: got {base!r}, expected 0 or 1")


def _rebased(ia_id: pl.Expr, base: int) -> pl.Expr:
    """0-based index from an IA id of the given base; ids below the base (e.g. 0 = none) become null."""
    idx = ia_id.cast(pl.Int64) - base
    return pl.when(idx >= 0).then(idx).cast(pl.Int32)


def rebase_fixations(fixations: pl.LazyFrame, shift: int) -> pl.LazyFrame:
    """Subtract ``shift`` from ``ia_index`` and ``word_index`` (negative results become null)."""
    return fixations.with_columns(_rebased(pl.col("ia_index"), shift).alias("ia_index"),
                                  _rebased(pl.col("word_index"), shift).alias("word_index"))


def read_ia_report(path: str | Path, *, columns: dict[str, str] | None = None, source: str = "dataviewer",
                   ia_id_base: int | None = None, check_keys: bool = True, separator: str | None = None,
                   decimal_comma: bool = False, schema: dict | None = None,
                   in_memory: bool = False, keep: list[str] | None = None,
                   encoding: str = "utf-8", qc: QCLog | None = None,
                   rename: dict[str, str] | None = None) -> pl.LazyFrame:
    """Read a Data Viewer interest-area report: one row per trial x interest area.

    Parameters
    ----------
    path, columns, source, separator, decimal_comma, schema, in_memory, encoding, rename
        As in :func:`read_fixation_report`.
    ia_id_base : {0, 1}, optional
        Base of ``IA_ID``. Default: detected from the file (0 if any id is 0, else 1), because an IA
        report lists every interest area of each trial.
    check_keys : bool
        Raise :class:`DataError` on a repeated (trial, IA id) key.
    keep : list of str, optional
        Source columns to keep besides the mapped ones and those the trial id is built from (default:
        all; names the file lacks are ignored). Only these are parsed: with ``in_memory`` it bounds
        the memory.
    qc : QCLog, optional
        Receives the repairs of the file's lines, the nulls per column and the trials whose interest-area ids are
        not consecutive (flagged; one extra pass).

    Returns
    -------
    polars.LazyFrame
        ``trial_id``, ``text_id`` (String; the source's text column, else the trial id), ``ia_index``
        (Int32, 0-based), ``word`` (String, the IA label), ``left_px``, ``right_px``, ``top_px``,
        ``bottom_px`` (Float64, px, half-open box), then every other column under its source name,
        including the ``IA_*`` measures (``.`` read as null). :func:`word_measures_from_ia_report`
        maps those measures onto canonical names.

    Raises
    ------
    SchemaError
        The report lacks the id, the label or a box edge (the column names expected are listed).
    ParseError
        A box edge or id that is not a finite number (an id: a whole number >= 0), or a bad key cell (file, row,
        column).
    DataError
        ``check_keys`` and a (trial, IA id) key repeats.
    """
    _check_base(ia_id_base)
    names = header(path, separator=separator, encoding=encoding, rename=rename)
    cols = resolve(source, "ia", names, columns, path)
    missing = [r for r in ("ia_id", "word", *_BOX) if r not in cols]
    if missing:
        raise SchemaError(f"interest-area report: no column for {missing} (expected "
                          f"{', '.join(_expected(source, 'ia', r) for r in missing)}; map yours with "
                          "columns={role: column}, in readgaze prep --columns role=COLUMN)", file=path)
    wanted = None if keep is None else [*cols.values(), *SOURCES[source].required_trial_columns, *keep]
    dialect = {"separator": separator, "decimal_comma": decimal_comma, "schema": schema, "encoding": encoding,
               "qc": qc, "step": "read_ia_report", "table": "ia_rows", "rename": rename}
    if in_memory:
        raw = read_csv(path, columns=wanted, **dialect).lazy()
    else:
        raw = scan_csv(path, **dialect)
        raw = raw if wanted is None else raw.select([c for c in names if c in set(wanted)])
    raw = cells.numbers(raw, path, cols, (*_BOX, "ia_id"))
    cells.boxes(raw, path, ((cols["left_px"], cols["right_px"]), (cols["top_px"], cols["bottom_px"])))
    _check_keys(raw, path, cols, source)
    trial_id = _trial_id(raw, cols, source, path, None).alias("trial_id")
    spec = SOURCES[source]
    text_id = (spec.text_id(cols) if spec.text_id else
               pl.col(cols["text_id"]).cast(pl.String) if "text_id" in cols else pl.col("trial_id"))
    if in_memory:  # both ids built once per run of a trial's rows, for the key check and the output
        raw = raw.collect().lazy()  # the casts done: the parsed columns they replace are freed now
        raw = _with_trial_id(raw, trial_id, row_wise=True, text_id=text_id)
        trial_id, text_id = pl.col("trial_id"), pl.col("__text_id")
    if check_keys:
        names = [cols[r] for r in ("participant_id", "trial") if r in cols and "trial_id" not in cols]
        check_unique(raw, path, {"trial_id": trial_id, cols["ia_id"]: pl.col(cols["ia_id"])},
                      shown=names + [cols["ia_id"]], session_key=None)
    if ia_id_base is None:
        ia_id_base = 0 if raw.select(pl.col(cols["ia_id"]).min()).collect().item() == 0 else 1
    canonical = {
        "trial_id": pl.col("trial_id"), "text_id": text_id,
        "ia_index": _rebased(pl.col(cols["ia_id"]), ia_id_base),
        "word": pl.col(cols["word"]).cast(pl.String),
        **{r: (pl.col(cols[r]) if r in cols else pl.lit(None)).cast(pl.Float64) for r in _BOX},
    }
    used = {cols[r] for r in ("trial_id", "ia_id", "word", "text_id", *_BOX) if r in cols} | {"__text_id"}
    rest = [c for c in raw.collect_schema().names() if c not in used and c not in canonical]
    out = raw.with_columns(trial_id.alias("trial_id")).select(
        [e.alias(n) for n, e in canonical.items()] + rest)
    out = _name_participant(out, cols)
    if qc is not None:
        cells.null_counts(out, qc, "read_ia_report", "ia_rows", path)
        cells.split_groups(out, qc, "read_ia_report", "ia_rows", path, group="trial_id",
                           what="rows of a trial not together in the report")
        cells.index_gaps(out, qc, "read_ia_report", "ia_rows", path, group="trial_id", index="ia_index", first=None,
                         what="interest-area ids of a trial not consecutive")
    return out


def _with_trial_id(raw: pl.LazyFrame, trial_id: pl.Expr, *, row_wise: bool,
                   text_id: pl.Expr | None = None) -> pl.LazyFrame:
    """``raw`` collected, with ``trial_id`` (and ``__text_id``). A row-wise id expression (no session key) is
    evaluated once per run of rows with equal id parts (:func:`readgaze.io.rows.per_row_run`): the same
    values, without building one string per row."""
    frame = raw.collect()
    if not row_wise:
        return frame.with_columns(trial_id).lazy()
    ids = [trial_id.alias("trial_id")]
    if text_id is not None and set(text_id.meta.root_names()) <= set(frame.columns):
        ids, text_id = ids + [text_id.alias("__text_id")], None  # both from the same runs
    frame = frame.with_columns(per_row_run(frame, *ids))
    if text_id is not None:  # the text id is built from the trial id
        frame = frame.with_columns(per_row_run(frame, text_id.alias("__text_id")))
    return frame.lazy()


def _name_participant(out: pl.LazyFrame, cols: dict[str, str]) -> pl.LazyFrame:
    src = cols.get("participant_id")
    if src is None or src == "participant_id" or "participant_id" in out.collect_schema().names():
        return out
    return out.rename({src: "participant_id"})
