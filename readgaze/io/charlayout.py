"""Each trial's word layout from character-level ``.ias`` files: the words table and the character -> word-box map.

For a lab whose interest areas are characters (:mod:`readgaze.io.charreport`), the layout of a screen is its
``.ias`` files: the characters' and, when the experiment has them, the words'. :func:`ias_index` finds the files and
their keys from their names (a regular expression with named groups, as pymovements' filename patterns);
:func:`char_layout` turns the files of each screen into readgaze's ``words`` (one row per word box) and a character
table whose ``word_id`` is the box each character belongs to (what :func:`readgaze.io.charreport.char_words` needs).

Rules (each case counted in the QC log):

* IAs of a later screen (``-``-prefixed lines: the question) are left out;
* with a words file, a character belongs to the word box holding its centre; without one, to the word its labels and
  whitespace give (:func:`readgaze.io.ias.words_from_chars`);
* a character in no word box (a word broken across lines whose continuation has no box; a misplaced box) takes its
  word from ``mapping`` when given, else the word of the character before it; the word then has a second box, made
  from those characters;
* ``word_index`` is the word's rank in its screen (0-based), ``ia_index`` the box's rank in reading order.
"""

from __future__ import annotations

import re
from pathlib import Path

import polars as pl

from readgaze.errors import ConfigError
from readgaze.io.ias import words_from_chars
from readgaze.qc import QCLog

__all__ = ["char_layout", "ias_index"]


def ias_index(folder: str | Path, pattern: str) -> pl.DataFrame:
    """One row per ``.ias`` file of ``folder`` whose name matches ``pattern``.

    Parameters
    ----------
    folder : path
    pattern : str
        A regular expression matched against the whole file name, with named groups: ``level`` (``chars`` or
        ``words``) and the keys that name a screen, e.g. CopCo's
        ``r"part(?P<part>\\d+)_IA_(?P<speech_id>-?\\d+)_(?P<paragraph_id>-?\\d+)_(?P<level>chars|words)\\.ias"``.

    Returns
    -------
    polars.DataFrame
        One String column per named group, and ``path``; files that do not match are left out.

    Raises
    ------
    ConfigError
        The pattern has no ``level`` group, or is not a regular expression.
    """
    try:
        regex = re.compile(pattern)
    except re.error as error:
        raise ConfigError(f"file-name pattern {pattern!r}: {error}") from None
    if "level" not in regex.groupindex:
        raise ConfigError(f"file-name pattern {pattern!r} needs a (?P<level>chars|words) group")
    names = list(regex.groupindex)
    rows = [(*m.group(*names), str(p)) if len(names) > 1 else (m.group("level"), str(p))
            for p in sorted(Path(folder).glob("*")) if (m := regex.fullmatch(p.name))]
    return pl.DataFrame(rows, schema={**{n: pl.String for n in names}, "path": pl.String}, orient="row")


def char_layout(ias: pl.DataFrame, *, by: str = "text_id", mapping: pl.DataFrame | None = None,
                qc: QCLog | None = None, source: str | Path | None = None) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The words and the character -> word-box table of character-level screens.

    Parameters
    ----------
    ias : polars.DataFrame
        :func:`readgaze.io.ias.read_ias_files`'s rows with ``by`` (the screen) and ``level`` (``chars`` or
        ``words``).
    by : str
        The screen's column (e.g. ``text_id``).
    mapping : polars.DataFrame, optional
        ``by``, ``ia_id`` (a character's) and ``word_rank`` (its word's 0-based rank in the screen): used only for the
        characters no word box holds.
    qc : QCLog, optional
    source : path, optional
        Named in errors.

    Returns
    -------
    (words, chars)
        ``words``: ``by``, ``ia_index`` (Int32, the box's rank in reading order), ``word_index`` (Int32, the word's
        rank), ``word`` (the words file's label, else the characters' letters), ``left_px``, ``right_px``,
        ``top_px``, ``bottom_px`` (Float64). ``chars``: ``by``, ``ia_id``, the box, ``label`` and ``word_id`` (Int32:
        the ``ia_index`` of the box holding the character).
    """
    qc = qc if qc is not None else QCLog()
    qc.add("layout", "words", "interest areas of a later screen left out (lines starting with '-')",
           ias.filter(pl.col("question_screen") & (pl.col("level") == "words")).height)
    ias = ias.filter(~pl.col("question_screen"))
    words = ias.filter(pl.col("level") == "words")
    chars = ias.filter(pl.col("level") == "chars").sort(by, "ia_id")
    boxed = words.select(by).unique()
    with_boxes = words_from_chars(chars.join(boxed, on=by, how="semi"), words=words, by=by, source=source)
    by_labels = words_from_chars(chars.join(boxed, on=by, how="anti"), by=by)
    qc.add("layout", "chars", "screen without a words file: words from the labels and whitespace",
           by_labels.select(pl.col(by).n_unique()).item(), action="flagged")
    chars = pl.concat([with_boxes.with_columns(pl.lit(True).alias("_boxed")),
                       by_labels.with_columns(pl.lit(False).alias("_boxed"))], how="diagonal_relaxed").sort(by, "ia_id")
    chars = chars.with_columns((pl.col("word_id").is_null() & pl.col("_boxed")).alias("_cont"))
    if mapping is not None:
        rank = (chars.filter(~pl.col("_cont") & pl.col("word_id").is_not_null()).select(by, "word_id").unique()
                .with_columns((pl.col("word_id").rank("dense").over(by) - 1).cast(pl.Int32).alias("word_rank")))
        chars = (chars.join(mapping.select(by, pl.col("ia_id").cast(pl.Int32), pl.col("word_rank").cast(pl.Int32))
                            .unique([by, "ia_id"], keep="first"), on=[by, "ia_id"], how="left")
                 .join(rank.rename({"word_id": "_mapped"}), on=[by, "word_rank"], how="left")
                 .with_columns(pl.when(pl.col("_cont")).then(pl.col("_mapped")).otherwise("word_id").alias("word_id"))
                 .drop("word_rank", "_mapped"))
        by_map = int((chars["_cont"] & chars["word_id"].is_not_null()).sum())
        qc.add("layout", "chars", "character in no word box: its word from the char->word table", by_map,
               action="changed")
    qc.add("layout", "chars", "character in no word box: joined to the word before it (a word broken across lines)",
           int((chars["_cont"] & chars["word_id"].is_null()).sum()), action="changed")
    chars = chars.with_columns(pl.col("word_id").forward_fill().over(by))
    qc.add("layout", "chars", "character before the first word: fixations on it are off text",
           chars["word_id"].null_count(), action="flagged")
    chars = chars.filter(pl.col("word_id").is_not_null())
    # one box per word, plus one per continuation; the words file's box and label where there is one
    text = pl.col("label").filter(pl.col("label").str.strip_chars() != "").str.join("")
    pieces = (chars.group_by(by, "word_id", "_cont", "_boxed")
              .agg(pl.col("ia_id").min().alias("_first"), pl.col("left_px").min(), pl.col("top_px").min(),
                   pl.col("right_px").max(), pl.col("bottom_px").max(), text.alias("_letters"))
              .join(words.select(by, pl.col("ia_id").alias("word_id"), pl.col("label").alias("_label"),
                                 pl.col("left_px").alias("_l"), pl.col("top_px").alias("_t"),
                                 pl.col("right_px").alias("_r"), pl.col("bottom_px").alias("_b")),
                    on=[by, "word_id"], how="left")
              .sort(by, "_first")
              .with_columns(
                  (pl.col("_first").rank("ordinal").over(by) - 1).cast(pl.Int32).alias("ia_index"),
                  (pl.col("word_id").rank("dense").over(by) - 1).cast(pl.Int32).alias("word_index"),
                  pl.coalesce("_label", "_letters").alias("word"),
                  *(pl.when(pl.col("_cont") | pl.col(o).is_null()).then(pl.col(c)).otherwise(pl.col(o)).alias(c)
                    for c, o in (("left_px", "_l"), ("top_px", "_t"), ("right_px", "_r"), ("bottom_px", "_b")))))
    qc.add("layout", "words", "word box holding no character interest area",
           words.join(pieces, left_on=[by, "ia_id"], right_on=[by, "word_id"], how="anti").height)
    chars = chars.join(pieces.select(by, "word_id", "_cont", "ia_index"), on=[by, "word_id", "_cont"], how="left")
    words = (pieces.select(by, "ia_index", "word_index", "word", "left_px", "right_px", "top_px", "bottom_px")
             .sort(by, "ia_index"))
    chars = chars.select(by, "ia_id", "left_px", "top_px", "right_px", "bottom_px", "label",
                         pl.col("ia_index").alias("word_id"))
    return words, chars
