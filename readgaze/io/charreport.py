"""Data Viewer fixation reports whose interest areas are characters, with or without fixation coordinates.

The route for a lab whose experiment defined one interest area (IA) per character (CopCo's): the report names, per
fixation, the character IA hit (``CURRENT_FIX_INTEREST_AREA_ID``, its box in ``CURRENT_FIX_INTEREST_AREA_DATA``)
and, off every IA, the nearest one (``CURRENT_FIX_NEAREST_INTEREST_AREA``). :func:`read_char_report` reads such a
report into fixations; :func:`char_positions` gives each fixation a position when the report has no
``CURRENT_FIX_X``/``CURRENT_FIX_Y`` (the centre of the fixated IA's box, else of the nearest IA's), recording how
in ``position_source``; :func:`char_words` turns the character IA into the word (``report_ia_index``), through a
character layout grouped into words by :func:`readgaze.io.ias.words_from_chars`.

With positions from boxes, anything that needs true coordinates (line assignment, landing position within a
character, saccade lengths) works at character resolution: prep uses the report's IA (line assigner ``report``)
and says so.

The file is read with no CSV quote character (:func:`readgaze.io.textfix.unquote`), so an IA label that is a
double quote (written as three quotes by Data Viewer) stays one field, is repaired and counted with its file and
line; labels double-encoded as UTF-8 are repaired and counted (:func:`readgaze.io.textfix.repair_double_encoding`).
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

from readgaze.errors import ParseError, SchemaError
from readgaze.io.textfix import repair_double_encoding, unquote
from readgaze.qc import QCLog

__all__ = ["CHAR_COLUMNS", "POSITION_SOURCES", "char_positions", "char_words", "describe_char_report",
           "read_char_report"]

CHAR_COLUMNS = {"participant_id": "RECORDING_SESSION_LABEL", "trial": "TRIAL_INDEX",
                "fixation_index": "CURRENT_FIX_INDEX", "duration_ms": "CURRENT_FIX_DURATION",
                "char_ia_id": "CURRENT_FIX_INTEREST_AREA_ID", "char_label": "CURRENT_FIX_INTEREST_AREA_LABEL",
                "char_box": "CURRENT_FIX_INTEREST_AREA_DATA", "nearest_ia_id": "CURRENT_FIX_NEAREST_INTEREST_AREA",
                "report_run_id": "CURRENT_FIX_INTEREST_AREA_RUN_ID", "fix_label": "CURRENT_FIX_LABEL",
                "x_px": "CURRENT_FIX_X", "y_px": "CURRENT_FIX_Y"}
"""Role -> Data Viewer column read by :func:`read_char_report` (the first four are required)."""
_REQUIRED = ("participant_id", "trial", "fixation_index", "duration_ms", "char_ia_id")
POSITION_SOURCES = ("ia_box_centre", "nearest_ia_box_centre")
"""Values of ``position_source`` (null: no position)."""
_START = r"^Fixation: (\d+(?:\.\d+)?) ms$"
"""A ``CURRENT_FIX_LABEL`` carrying the fixation's start (ms from the trial's start), as in CopCo's reports."""


def _number(column: str, dtype) -> pl.Expr:
    """A verbatim field as a number: ``.`` and empty are null; ``12,64`` is 12.64."""
    return pl.col(column).str.strip_chars().str.replace(",", ".", literal=True).cast(dtype, strict=False)


def read_char_report(path: str | Path, *, encoding: str = "utf-8", keep: tuple[str, ...] = (),
                     columns: dict[str, str] | None = None, qc: QCLog | None = None) -> pl.DataFrame:
    """Read a Data Viewer fixation report with character interest areas.

    Parameters
    ----------
    path : str or Path
        TAB-separated report (UTF-8 with or without BOM by default, CRLF or LF; ``.`` or empty = missing; decimal
        comma or point).
    encoding : str
        Text encoding (``"cp1252"``, ``"latin-1"``: decoded first; default UTF-8, read directly).
    keep : tuple of str
        Further source columns to keep, verbatim Strings (trial keys such as ``speechid``).
    columns : dict, optional
        ``{role: column}`` overriding :data:`CHAR_COLUMNS`.
    qc : QCLog, optional
        Receives the repairs: three-quote labels (``changed``, with file and lines), double-encoded labels
        (``changed``) and those a lost byte leaves unrepairable (``flagged``).

    Returns
    -------
    polars.DataFrame
        Report order. ``participant_id`` (String), ``trial`` (Int64), ``fixation_index`` (Int32, 0-based),
        ``duration_ms`` (Float64), ``start_ms`` (Float64, from ``CURRENT_FIX_LABEL`` when every label reads
        ``Fixation: N ms``; else null), ``char_ia_id`` (Int32, as in the report: 1-based; null off every IA),
        ``char_label`` (String, repaired; a quoted ``"."`` is a full stop), ``char_left_px``, ``char_top_px``,
        ``char_right_px``, ``char_bottom_px`` (Float64, the fixated IA's box), ``nearest_ia_id`` (Int32),
        ``report_run_id`` (Int32, Data Viewer's run of the IA), ``report_row`` (Int64, the file line), ``x_px`` and
        ``y_px`` (Float64) when the report has ``CURRENT_FIX_X``/``Y``, and ``keep``.

    Raises
    ------
    ParseError
        Not decodable in ``encoding``, or not a TAB-separated table.
    SchemaError
        A required column (``participant_id``, ``trial``, ``fixation_index``, ``duration_ms``, ``char_ia_id``) or a
        ``keep`` column is absent, or present with every value missing (a silent default would follow).
    """
    path = Path(path)
    names = {**CHAR_COLUMNS, **(columns or {})}
    source: str | Path | bytes = path
    if encoding.lower().replace("-", "").replace("_", "") not in ("utf8", "utf8sig"):
        try:
            source = path.read_bytes().decode(encoding).encode("utf-8")
        except (UnicodeDecodeError, LookupError) as error:
            raise ParseError(f"cannot decode as {encoding}: {error}", file=path) from None
    try:
        raw = pl.read_csv(source, separator="\t", quote_char=None, infer_schema=False)
    except (pl.exceptions.ComputeError, pl.exceptions.NoDataError) as error:
        first = str(error).splitlines()[0][:200]
        raise ParseError(f"not a TAB-separated report: {first}", file=path) from None
    raw.columns = [c.removeprefix("\ufeff").strip().strip('"') for c in raw.columns]
    absent = [f"{names[r]} ({r})" for r in _REQUIRED if names[r] not in raw.columns]
    absent += [c for c in keep if c not in raw.columns]
    if absent:
        raise SchemaError(f"missing columns {absent} (a Data Viewer fixation report with character interest areas)",
                          file=path)
    raw = raw.with_row_index("report_row", offset=2)
    text_roles = ("participant_id", "char_label", "char_box", "fix_label")
    qc = qc if qc is not None else QCLog()
    label = names["char_label"]
    lines = raw.filter(pl.any_horizontal(pl.all().exclude("report_row") == '"""'))["report_row"].to_list()
    qc.add("load", "fixations", "interest-area label written as three quotes (a double quote): read as '\"'",
           len(lines), action="changed",
           detail=f"{path.name} lines {', '.join(map(str, lines[:10]))}" if lines else None)
    present = {r: c for r, c in names.items() if c in raw.columns}
    out = raw.select(
        "report_row",
        *(unquote(c).alias(r) for r, c in present.items() if r in text_roles),
        _number(names["trial"], pl.Int64).alias("trial"),
        (_number(names["fixation_index"], pl.Int32) - 1).alias("fixation_index"),
        _number(names["duration_ms"], pl.Float64).alias("duration_ms"),
        *(_number(c, pl.Float64).alias(r) for r, c in present.items() if r in ("x_px", "y_px")),
        *(_number(c, pl.Int32).alias(r) for r, c in present.items()
          if r in ("char_ia_id", "nearest_ia_id", "report_run_id")),
        *(unquote(c).alias(c) for c in keep))
    for role in (*_REQUIRED, *keep):  # present but entirely missing: an error, never a silent default
        values = out[role]
        blank = values.is_null() | (values == ".") if values.dtype == pl.String else values.is_null()
        if out.height and blank.all():
            raise SchemaError("every value is missing ('.' or empty): check the export settings and the column map",
                              file=path, column=names.get(role, role))
    out = out.with_columns(pl.col(c).replace(".", None) for c in text_roles
                           if c in out.columns and c != "char_label")
    if "char_label" in out.columns:  # an unquoted '.' is missing; a quoted one (now '.') a full stop
        quoted = raw[label].str.starts_with('"')
        out = out.with_columns(pl.when(pl.Series(quoted).fill_null(False)).then(pl.col("char_label"))
                               .alias("char_label"))
        fixed, counts = repair_double_encoding(out["char_label"])
        out = out.with_columns(fixed.alias("char_label"))
        qc.add("load", "fixations", "interest-area label double-encoded UTF-8 (Ã¸ for ø): repaired",
               counts["repaired"], action="changed", detail=path.name)
        qc.add("load", "fixations", "interest-area label double-encoded with a byte lost in the export: kept",
               counts["unrepairable"], action="flagged", detail=path.name)
    if "char_box" in out.columns:
        box = pl.col("char_box").str.extract_all(r"-?\d+(?:\.\d+)?")
        out = out.with_columns(box.list.get(i, null_on_oob=True).cast(pl.Float64).alias(name) for i, name in
                               enumerate(("char_left_px", "char_top_px", "char_right_px", "char_bottom_px")))
        out = out.drop("char_box")
    start = pl.lit(None, pl.Float64)
    if "fix_label" in out.columns:
        parsed = pl.col("fix_label").str.extract(_START).cast(pl.Float64)
        if out.select((parsed.is_not_null() | pl.col("fix_label").is_null()).all() & parsed.is_not_null().any()).item():
            start = parsed
        out = out.with_columns(start.alias("start_ms")).drop("fix_label")
    else:
        out = out.with_columns(start.alias("start_ms"))
    return out


def char_positions(fixations: pl.DataFrame, chars: pl.DataFrame, *, by: list[str], qc: QCLog | None = None
                   ) -> pl.DataFrame:
    """Positions for a report without fixation coordinates: the centre of the fixated IA's box, else of the nearest
    IA's (from ``chars``, the character layout).

    Parameters
    ----------
    fixations : polars.DataFrame
        From :func:`read_char_report`, with the ``by`` column(s) naming each fixation's screen.
    chars : polars.DataFrame
        The character layout: ``by``, ``ia_id`` and the box (``left_px``, ``top_px``, ``right_px``, ``bottom_px``).
    by : list of str
    qc : QCLog, optional
        Counts each kind of position (``flagged``: ``position_source`` = ``ia_box_centre``,
        ``nearest_ia_box_centre``, or none).

    Returns
    -------
    polars.DataFrame
        ``fixations`` with ``x_px``, ``y_px`` (Float64, px) and ``position_source`` (String: one of
        :data:`POSITION_SOURCES`, null where neither IA is known).
    """
    qc = qc if qc is not None else QCLog()
    centre = chars.select(*by, pl.col("ia_id").alias("nearest_ia_id"),
                          ((pl.col("left_px") + pl.col("right_px")) / 2).alias("_nx"),
                          ((pl.col("top_px") + pl.col("bottom_px")) / 2).alias("_ny"))
    hit_box = [f"char_{s}_px" for s in ("left", "top", "right", "bottom")]
    own = chars.select(*by, pl.col("ia_id").alias("char_ia_id"),
                       ((pl.col("left_px") + pl.col("right_px")) / 2).alias("_ox"),
                       ((pl.col("top_px") + pl.col("bottom_px")) / 2).alias("_oy"))
    out = fixations.join(own, on=[*by, "char_ia_id"], how="left", maintain_order="left")
    if "nearest_ia_id" in out.columns:
        out = out.join(centre, on=[*by, "nearest_ia_id"], how="left", maintain_order="left")
    else:
        out = out.with_columns(pl.lit(None, pl.Float64).alias("_nx"), pl.lit(None, pl.Float64).alias("_ny"))
    if all(c in out.columns for c in hit_box):  # the report's own box first, the layout's if it has none
        out = out.with_columns(pl.coalesce((pl.col(hit_box[0]) + pl.col(hit_box[2])) / 2, "_ox").alias("_ox"),
                               pl.coalesce((pl.col(hit_box[1]) + pl.col(hit_box[3])) / 2, "_oy").alias("_oy"))
    on_ia = pl.col("char_ia_id").is_not_null() & pl.col("_ox").is_not_null()
    out = out.with_columns(
        pl.when(on_ia).then("_ox").otherwise("_nx").alias("x_px"),
        pl.when(on_ia).then("_oy").otherwise("_ny").alias("y_px"),
        pl.when(on_ia).then(pl.lit(POSITION_SOURCES[0])).when(pl.col("_nx").is_not_null())
        .then(pl.lit(POSITION_SOURCES[1])).alias("position_source")).drop("_ox", "_oy", "_nx", "_ny")
    counts = out["position_source"].value_counts()
    n = dict(zip(counts["position_source"].to_list(), counts["count"].to_list()))
    for kind, what in zip(POSITION_SOURCES, ("the fixated interest area's box", "the nearest interest area's box")):
        qc.add("positions", "fixations", f"x_px, y_px: the centre of {what} (the report has no coordinates)",
               n.get(kind, 0), action="flagged")
    qc.add("positions", "fixations", "no position: neither the fixated nor a nearest interest area is known",
           n.get(None, 0), action="flagged")
    return out


def char_words(fixations: pl.DataFrame, chars: pl.DataFrame, *, by: list[str], qc: QCLog | None = None
               ) -> pl.DataFrame:
    """The word of each fixation's character IA (off every IA, or on a character of no word: null).

    Parameters
    ----------
    fixations : polars.DataFrame
        With ``char_ia_id`` and the ``by`` column(s).
    chars : polars.DataFrame
        ``by``, ``ia_id`` and ``word_id`` (:func:`readgaze.io.ias.words_from_chars`) and ``label``.

    Returns
    -------
    polars.DataFrame
        ``fixations`` with ``report_word_id`` (Int32) and ``layout_label`` (the layout's character). ``qc`` flags the
        fixations whose report label differs from the layout's character (an export and a layout that disagree).
    """
    qc = qc if qc is not None else QCLog()
    table = chars.select(*by, pl.col("ia_id").alias("char_ia_id"), pl.col("word_id").alias("report_word_id"),
                         pl.col("label").alias("layout_label"))
    out = fixations.join(table, on=[*by, "char_ia_id"], how="left", maintain_order="left")
    unknown = out.filter(pl.col("char_ia_id").is_not_null() & pl.col("layout_label").is_null()).height
    qc.add("align", "fixations", "character interest area not in the layout: off text", unknown, action="flagged")
    if "char_label" in out.columns:
        differ = out.filter(pl.col("layout_label").is_not_null()
                            & pl.col("char_label").ne_missing(pl.col("layout_label"))).height
        qc.add("align", "fixations", "report's interest-area label differs from the layout's character", differ,
               action="flagged")
    return out


def describe_char_report(path: str | Path, *, encoding: str = "utf-8") -> list[str]:
    """What ``readgaze inspect`` prints for such a report: readers, trials, fixations, off-IA counts, start times and
    every repair (:func:`read_char_report`)."""
    qc = QCLog()
    fix = read_char_report(path, encoding=encoding, qc=qc)
    near = (pl.col("char_ia_id").is_null() & pl.col("nearest_ia_id").is_not_null()).sum() \
        if "nearest_ia_id" in fix.columns else pl.lit(0)
    c = fix.select(pl.col("participant_id").n_unique().alias("p"), pl.col("trial").n_unique().alias("t"),
                   pl.len().alias("n"), pl.col("char_ia_id").is_null().sum().alias("off"), near.alias("near"),
                   pl.col("start_ms").is_not_null().sum().alias("start")).row(0, named=True)
    repairs = [f"  {r['action']}: {r['count']:,} ({r['reason']}{'; ' + r['detail'] if r['detail'] else ''})"
               for r in qc.records if r["count"]]
    return [f"{path}: Data Viewer fixation report with character interest areas and no fixation coordinates",
            f"  participants: {c['p']:,}", f"  trials: {c['t']:,}", f"  fixations: {c['n']:,}",
            f"  off every interest area: {c['off']:,} (a nearest interest area named: {c['near']:,})",
            f"  start times (from CURRENT_FIX_LABEL 'Fixation: N ms'): {c['start']:,}", *repairs,
            "  prepare it with the character layout (.ias files): readgaze prep copco --data DIR (CopCo's layout), or "
            "readgaze.io.charlayout + readgaze.io.charreport in Python (docs: Labs' own formats)"]
