"""Text layouts for ``readgaze prep``'s asc and samples modes (``--layout``) and the dataviewer mode's ``--aoi``: a
passages.json, a pymovements/PoTeC AOI file or a Data Viewer IA report, read into one :class:`readgaze.text.TextLayout`
per text; and the checks that tie each trial to a text of a layout of several."""

from __future__ import annotations

from pathlib import Path

import polars as pl

from readgaze.data_prep.columns import for_table
from readgaze.errors import ConfigError, ReadgazeError
from readgaze.text import TextLayout, layout_from_ia_rows, read_aoi_file, read_passages


def read_layout(path, text_id: str | None = None, *, columns: dict | None = None, separator: str | None = None,
                decimal_comma: bool = False) -> TextLayout:
    """The one layout of :func:`read_layouts`: a file of several texts needs ``text_id``. Every error names the
    file."""
    layouts = read_layouts(path, text_id, columns=columns, separator=separator, decimal_comma=decimal_comma)
    if len(layouts) > 1:
        raise ConfigError(f"this layout file holds {len(layouts)} trials/texts (e.g. "
                          f"{', '.join(map(str, list(layouts)[:4]))}); pass --text-id with the one every recording "
                          "shows, or prep the Data Viewer reports with  readgaze prep dataviewer", file=path)
    return next(iter(layouts.values()))


def read_layouts(path, text_id: str | None = None, *, columns: dict | None = None, separator: str | None = None,
                 decimal_comma: bool = False) -> dict[str, TextLayout]:
    """The layouts of a passages.json, an AOI file or an IA report, by text id.

    ``text_id`` picks one passage of a passages.json, or one trial or text of an IA report. Without it, a file of
    several texts gives every text (an IA report's ``text_id``, in sorted order); a file of one text gives it, keyed by
    its id (else the file name without its extension). Every error names the file.
    """
    path = Path(path)
    try:
        layouts = _read_layouts(path, text_id, columns or {}, separator, decimal_comma)
    except ReadgazeError as error:
        if error.file is None:
            raise type(error)(error.message, file=path, row=error.row, column=error.column) from None
        raise
    return {lay.text_id or path.stem: lay for lay in layouts} if len(layouts) == 1 else {
        lay.text_id: lay for lay in layouts}


def _read_layouts(path: Path, text_id, spec, separator, decimal_comma) -> list[TextLayout]:
    if not path.is_file():
        raise ConfigError("no such layout file")
    if path.suffix == ".json":
        layouts = read_passages(path)
        if text_id is None:
            return list(layouts.values())
        if text_id not in layouts:
            raise ConfigError(f"--text-id {text_id!r} is not a passage of the file; expected one of "
                              f"{sorted(layouts)}", file=path)
        return [layouts[text_id]]
    from readgaze.io.csv import header, scan_csv

    names = header(path, separator=separator)
    aoi_map = for_table(spec, "aoi", names)
    if aoi_map:
        from readgaze.io.cells import numbers

        raw = numbers(scan_csv(path, separator=separator, decimal_comma=decimal_comma), path, aoi_map,
                      ("ia_id", "left_px", "right_px", "top_px", "bottom_px")).collect()
        renamed = raw.select([pl.col(c).alias("ia_index" if r == "ia_id" else r) for r, c in aoi_map.items()])
        return [layout_from_ia_rows(renamed, text_id=text_id or path.stem)]
    if "IA_LEFT" in names or for_table(spec, "ia", names):
        from readgaze.io import read_ia_report

        ia = read_ia_report(path, columns=for_table(spec, "ia", names) or None, separator=separator,
                            decimal_comma=decimal_comma, check_keys=False).collect()
        box = ("ia_index", "word", "left_px", "right_px", "top_px", "bottom_px")
        texts = ia["text_id"].unique().sort().to_list() if "text_id" in ia.columns else []
        if len(texts) > 1:
            if text_id is None:  # every text, one read
                parts = ia.partition_by("text_id", as_dict=True)
                return [layout_from_ia_rows(parts[(t,)].select(box), text_id=t) for t in texts if t is not None]
            ia = ia.filter((pl.col("text_id") == text_id) | (pl.col("trial_id") == text_id))
            if ia.height == 0:
                raise ConfigError(f"--text-id {text_id!r} is neither a trial nor a text of the report; it has e.g. "
                                  f"{', '.join(map(str, texts[:4]))}", file=path)
        return [layout_from_ia_rows(ia.select(box), text_id=text_id or path.stem)]
    return [read_aoi_file(path, text_id=text_id or path.stem)]


def layout_words(layout, text_id, columns, separator, decimal_comma) -> tuple[str | None, pl.DataFrame]:
    """(text id, words) of the one layout every recording shows; or, for a file of several texts and no
    ``text_id`` (:func:`read_layouts`), (None, the words of every text, keyed by its id): each trial's text then comes
    from a labels table's ``text_id`` (:func:`require_trial_texts`)."""
    layouts = read_layouts(layout, text_id, columns=columns, separator=separator, decimal_comma=decimal_comma)
    words = pl.concat([lay.words.with_columns(pl.lit(t).alias("text_id")) for t, lay in layouts.items()],
                      how="vertical_relaxed")
    return (next(iter(layouts)) if len(layouts) == 1 else None), words


def one_text(trials: pl.DataFrame, text_id: str | None) -> pl.DataFrame:
    """Every trial shows ``text_id`` (None: not known yet, :func:`require_trial_texts`); it is also the item unless
    the trials name one."""
    trials = trials.with_columns(pl.lit(text_id, pl.String).alias("text_id"))
    return trials if "item_id" in trials.columns else trials.with_columns(pl.lit(text_id, pl.String).alias("item_id"))


def require_trial_texts(trials: pl.DataFrame, words: pl.DataFrame, layout, labels) -> pl.DataFrame:
    """For a layout of several texts: check that the labels table named each trial's text (``text_id``), and
    take the text as the trial's item where the table names none.

    Raises
    ------
    ConfigError
        No trial has a ``text_id`` (no labels table, or one without the column), or a ``text_id`` that the layout
        lacks (the first few named).
    """
    texts = words["text_id"].unique().sort()
    known = ", ".join(texts.head(6).to_list()) + (", ..." if len(texts) > 6 else "")
    if trials["text_id"].null_count() == trials.height:
        hint = "" if Path(layout).suffix == ".json" else "; Data Viewer reports: readgaze prep dataviewer"
        raise ConfigError(f"the layout holds {len(texts)} texts ({known}): name each trial's text in a --trials "
                          f"table with a text_id column, or pass --text-id when every trial shows one{hint}",
                          file=layout)
    unknown = trials.filter(pl.col("text_id").is_not_null() & ~pl.col("text_id").is_in(texts.implode()))
    if unknown.height:
        raise ConfigError(f"{unknown.height} trial(s) name a text_id the layout lacks, e.g. "
                          f"{unknown['text_id'].unique().head(3).to_list()}; it holds {known}", file=labels,
                          column="text_id")
    return trials.with_columns(pl.coalesce("item_id", "text_id").alias("item_id"))
