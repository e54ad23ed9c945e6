"""SR Research ExperimentBuilder interest-area files (``.ias``), and character-level interest areas grouped into words.

An ``.ias`` file has one interest area (IA) per line, TAB-separated::

    0 RECTANGLE<TAB>1<TAB>190<TAB>113<TAB>267<TAB>206<TAB>Kære

that is ``TIME SHAPE``, the IA id, ``left top right bottom`` (px, screen origin top left) and the label (the text).
``TIME`` is the IA's onset in ms; a negative time (``-417 RECTANGLE``) marks IAs of a later screen of the trial
(CopCo: the comprehension question), which :func:`read_ias` flags in ``question_screen``. Only ``RECTANGLE`` is
read; an ``ELLIPSE`` or ``FREEHAND`` line is an error naming the file and line.

A *character-level* layout has one IA per character (no IA for a space: the letter before it extends over it in
CopCo's files). :func:`words_from_chars` groups such IAs into words by one of three rules, in order of preference:

* ``words``: the word-level ``.ias`` of the same screen: a character belongs to the word box that holds its centre;
* ``mapping``: a table char id -> word id (e.g. CopCo's ``word2char_IA_mapping.csv``, exploded);
* neither: the labels: a whitespace label (or a line break) ends a word; a whitespace IA belongs to the word before
  it (as a word box of Data Viewer covers the space after the word), punctuation to the word it touches.

Reference: SR Research (2020), *Experiment Builder User Manual* 2.3, "Interest Area Set File".
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

from readgaze.errors import DataError, ParseError

__all__ = ["IAS_COLUMNS", "read_ias", "read_ias_files", "words_from_chars"]

IAS_COLUMNS = {"ia_id": pl.Int32, "left_px": pl.Float64, "top_px": pl.Float64, "right_px": pl.Float64,
               "bottom_px": pl.Float64, "label": pl.String, "time_ms": pl.Int64, "question_screen": pl.Boolean}
"""The columns of :func:`read_ias` and their dtypes."""

_FIELDS = ("shape", "ia_id", "left_px", "top_px", "right_px", "bottom_px", "label")


def read_ias(path: str | Path, *, encoding: str = "utf-8") -> pl.DataFrame:
    """Read one ``.ias`` file.

    Parameters
    ----------
    path : str or Path
        The file (UTF-8 by default; a BOM and CRLF line ends are accepted; empty lines are skipped).
    encoding : str
        Its text encoding (``"cp1252"`` for a Windows export).

    Returns
    -------
    polars.DataFrame
        One row per IA in file order, columns :data:`IAS_COLUMNS`: ``ia_id`` (Int32, as written: 1-based in
        ExperimentBuilder), the box ``left_px``, ``top_px``, ``right_px``, ``bottom_px`` (Float64, px), ``label``
        (String, verbatim: a label may be a space or a quote), ``time_ms`` (Int64, the IA's onset) and
        ``question_screen`` (Boolean, a negative time: an IA of a later screen of the trial, e.g. the question).

    Raises
    ------
    ParseError
        A line that is not ``TIME RECTANGLE, id, left, top, right, bottom, label`` (7 TAB-separated fields), a
        number that is not one, a box with ``right < left`` or ``bottom < top``, or text that is not in
        ``encoding``; the message names the file, the line (1-based) and the field.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> f = pathlib.Path(tempfile.mkdtemp()) / "t.ias"
    >>> lines = ["0 RECTANGLE", "1", "190", "113", "267", "206", "Kære"], ["-417 RECTANGLE", "2", "190", "115", "360",
    ...                                                                      "208", "Har"]
    >>> _ = f.write_text("".join("\\t".join(line) + "\\n" for line in lines))
    >>> read_ias(f).select("ia_id", "left_px", "label", "question_screen").rows()
    [(1, 190.0, 'Kære', False), (2, 190.0, 'Har', True)]
    """
    return read_ias_files([path], encoding=encoding).drop("file")


def read_ias_files(paths, *, encoding: str = "utf-8") -> pl.DataFrame:
    """Read several ``.ias`` files in one parse (:func:`read_ias` per file, much faster than one call per file).

    Returns
    -------
    polars.DataFrame
        ``file`` (String, the path as given) and the columns of :func:`read_ias`, files in the order given.
    """
    paths = [Path(p) for p in paths]
    names, texts = [], []
    for path in paths:
        try:
            raw = path.read_bytes()
        except OSError as error:
            raise ParseError(f"cannot read: {error.strerror}", file=path) from None
        try:
            text = raw.decode(encoding)
        except UnicodeDecodeError as error:
            raise ParseError(f"not {encoding} text (byte {error.start}): pass the file's encoding, e.g. "
                             f"encoding='cp1252'", file=path, row=raw[:error.start].count(b"\n") + 1) from None
        names.append(str(path))
        texts.append(text.removeprefix("\ufeff"))
    frame = (pl.DataFrame({"file": names, "line": texts}, schema={"file": pl.String, "line": pl.String})
             .with_columns(pl.col("line").str.split("\n")).explode("line")
             .with_columns(pl.int_range(1, pl.len() + 1).over("file").alias("row"),
                           pl.col("line").str.strip_suffix("\r"))
             .filter(pl.col("line").str.strip_chars() != "")
             .with_columns(pl.col("line").str.split("\t").alias("fields")))

    def fail(hit: pl.DataFrame, message: str):
        raise ParseError(message, file=hit["file"][0], row=int(hit["row"][0]))

    wrong = frame.filter(pl.col("fields").list.len() != len(_FIELDS)).head(1)
    if wrong.height:
        fail(wrong, f"expected {len(_FIELDS)} TAB-separated fields (TIME RECTANGLE, id, left, top, right, bottom, "
                    f"label), got {len(wrong['fields'][0])}: {wrong['line'][0][:80]!r}")
    frame = frame.select("file", "row", *(pl.col("fields").list.get(i).alias(n) for i, n in enumerate(_FIELDS)))
    head = pl.col("shape").str.extract_groups(r"^\s*(-?\d+)\s+(\S+)\s*$")
    frame = frame.with_columns(head.struct.field("1").alias("time"), head.struct.field("2").alias("kind"))
    checks = [("shape", pl.col("kind").is_null(), "expected 'TIME RECTANGLE' (e.g. '0 RECTANGLE')"),
              ("shape", pl.col("kind") != "RECTANGLE", "only RECTANGLE interest areas are supported")]
    for name, dtype in (("ia_id", pl.Int32), ("left_px", pl.Float64), ("top_px", pl.Float64),
                        ("right_px", pl.Float64), ("bottom_px", pl.Float64)):
        checks.append((name, pl.col(name).str.strip_chars().cast(dtype, strict=False).is_null(),
                       f"expected a number ({'an integer' if dtype == pl.Int32 else 'px'})"))
    for field, bad, message in checks:
        hit = frame.filter(bad.fill_null(False)).head(1)
        if hit.height:
            fail(hit, f"field {field}: {message}, got {hit[field][0]!r}")
    out = frame.select(
        "file", pl.col("ia_id").str.strip_chars().cast(pl.Int32),
        *(pl.col(c).str.strip_chars().cast(pl.Float64) for c in ("left_px", "top_px", "right_px", "bottom_px")),
        "label", pl.col("time").cast(pl.Int64).alias("time_ms"),
        pl.col("time").str.starts_with("-").alias("question_screen"), "row")
    bad = out.filter((pl.col("right_px") < pl.col("left_px")) | (pl.col("bottom_px") < pl.col("top_px"))).head(1)
    if bad.height:
        b = bad.row(0, named=True)
        fail(bad, f"box right {b['right_px']:g} < left {b['left_px']:g} or bottom {b['bottom_px']:g} < top "
                  f"{b['top_px']:g}")
    return out.drop("row")


def words_from_chars(chars: pl.DataFrame, *, words: pl.DataFrame | None = None, mapping: pl.DataFrame | None = None,
                     by: str | list[str] = "text_id", source: str | Path | None = None) -> pl.DataFrame:
    """Group character interest areas into words.

    Parameters
    ----------
    chars : polars.DataFrame
        One row per character IA: the ``by`` column(s), ``ia_id``, the box (``left_px``, ``top_px``,
        ``right_px``, ``bottom_px``) and ``label``, in reading order within each ``by`` group.
    words : polars.DataFrame, optional
        The word-level IAs of the same screens (``by``, ``ia_id``, box, ``label``): each character goes to the word
        whose box holds the character box's centre.
    mapping : polars.DataFrame, optional
        ``by``, ``ia_id`` (the character's) and ``word_id``: the grouping as a table.
    by : str or list of str
        The column(s) naming a screen.
    source : path, optional
        Named in errors.

    Returns
    -------
    polars.DataFrame
        ``chars`` with ``word_id`` (Int32): the word IA's ``ia_id`` (``words``), the table's ``word_id``
        (``mapping``), or the 0-based rank of the word in its screen (labels). Null: a character in no word box
        (``words``) or not in the table (``mapping``); a leading whitespace IA (labels).

    Raises
    ------
    DataError
        When a character's centre lies in two word boxes (overlapping word IAs).
    """
    by = [by] if isinstance(by, str) else list(by)
    if words is not None:
        centre = chars.with_columns(((pl.col("left_px") + pl.col("right_px")) / 2).alias("_cx"),
                                    ((pl.col("top_px") + pl.col("bottom_px")) / 2).alias("_cy"))
        boxes = words.select(*by, pl.col("ia_id").alias("word_id"), pl.col("left_px").alias("_wl"),
                             pl.col("right_px").alias("_wr"), pl.col("top_px").alias("_wt"),
                             pl.col("bottom_px").alias("_wb"))
        hit = (centre.select(*by, "ia_id", "_cx", "_cy").join(boxes, on=by, how="inner")
               .filter(pl.col("_cx").is_between(pl.col("_wl"), pl.col("_wr"), closed="left")
                       & pl.col("_cy").is_between(pl.col("_wt"), pl.col("_wb"), closed="left"))
               .select(*by, "ia_id", "word_id"))
        twice = hit.filter(pl.len().over(*by, "ia_id") > 1).head(1)
        if twice.height:
            raise DataError(f"character IA {twice['ia_id'][0]} of {twice.row(0, named=True)} lies in two word "
                            f"boxes (overlapping word interest areas)", file=source)
        return chars.join(hit, on=[*by, "ia_id"], how="left", maintain_order="left")
    if mapping is not None:
        table = mapping.select(*by, "ia_id", pl.col("word_id").cast(pl.Int32)).unique([*by, "ia_id"], keep="first")
        return chars.join(table, on=[*by, "ia_id"], how="left", maintain_order="left")
    space = pl.col("label").str.strip_chars().fill_null("") == ""
    new_line = pl.col("top_px") != pl.col("top_px").shift(1).over(by)
    after_space = space.shift(1).over(by).fill_null(False)
    starts = ~space & (after_space | new_line.fill_null(True))
    rank = starts.cast(pl.Int32).cum_sum().over(by) - 1
    return chars.with_columns(pl.when(rank >= 0).then(rank).cast(pl.Int32).alias("word_id"))
