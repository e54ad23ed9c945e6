"""Text hygiene for exported labels: double-encoded UTF-8 repaired, and quoted fields read without CSV quoting.

*Double encoding* (mojibake): UTF-8 bytes decoded once more as Windows-1252 and written again as UTF-8, so ``ø``
(bytes ``C3 B8``) becomes ``Ã¸`` and ``–`` becomes ``â€“``. :func:`repair_double_encoding` undoes it where the
label's characters are all Windows-1252 characters whose bytes form valid UTF-8 again (the repaired text must be
shorter: a real ``Ã`` followed by another letter stays). A byte that Windows-1252 leaves undefined (``81``,
``8D``, ``8F``, ``90``, ``9D``) was written as ``�`` (U+FFFD) by the exporter: that letter is lost and the label is
counted as unrepairable, never guessed.

*Quoted fields without quoting*: a Data Viewer export quotes text cells (``"e"``) but writes a label that is itself
a double quote as three quotes, which standard CSV quoting reads as an opened quote that swallows the following fields
and lines. :func:`unquote` reads each field verbatim (the file parsed with no quote character) and removes one pair
of surrounding quotes, reading ``""`` inside as one quote and three quotes as a lone quote.
"""

from __future__ import annotations

import polars as pl

__all__ = ["UNDEFINED_CP1252", "repair_double_encoding", "repair_labels", "unquote"]

UNDEFINED_CP1252 = b"\x81\x8d\x8f\x90\x9d"
"""The bytes Windows-1252 does not define."""


def _undo(text: str) -> str | None:
    """The text before double encoding, or None when it is not double-encoded (or a byte was lost)."""
    if text.isascii():
        return None
    try:
        raw = text.encode("cp1252")
    except UnicodeEncodeError:
        try:
            raw = text.encode("latin-1")  # C1 controls: the cp1252-undefined bytes kept as they were
        except UnicodeEncodeError:
            return None
    try:
        fixed = raw.decode("utf-8")
    except UnicodeDecodeError:
        return None
    return fixed if len(fixed) < len(text) else None


def _lost(text: str) -> bool:
    """A double-encoded text with a byte the exporter could not write (``Ì�``: a lead byte then U+FFFD)."""
    if "\ufffd" not in text:
        return False
    try:
        text.replace("\ufffd", "").encode("cp1252")
    except UnicodeEncodeError:
        return False
    return any(0xC2 <= ord(c) <= 0xF4 for c in text)


def repair_double_encoding(values: pl.Series) -> tuple[pl.Series, dict[str, int]]:
    """Undo double-encoded UTF-8 in a String column.

    Parameters
    ----------
    values : polars.Series
        String labels (nulls kept). Only the distinct values are examined, so the cost does not grow with rows.

    Returns
    -------
    (polars.Series, dict)
        The repaired column and the row counts ``{"repaired": n, "unrepairable": m}`` (``unrepairable``: a byte
        was lost in the export, the label is kept as it is).

    Examples
    --------
    >>> s, counts = repair_double_encoding(pl.Series(["p", "Ã¥", "Ã¸", "â€“", "Ì\\ufffd", "ø", None]))
    >>> s.to_list(), counts
    (['p', 'å', 'ø', '–', 'Ì\\ufffd', 'ø', None], {'repaired': 3, 'unrepairable': 1})
    """
    distinct = values.drop_nulls().unique().to_list()
    mapping = {v: f for v in distinct if (f := _undo(v)) is not None}
    lost = {v for v in distinct if v not in mapping and _lost(v)}
    counts = {"repaired": int(values.is_in(list(mapping)).sum()) if mapping else 0,
              "unrepairable": int(values.is_in(list(lost)).sum()) if lost else 0}
    if mapping:
        values = values.replace(mapping)
    return values, counts


def repair_labels(words: pl.DataFrame, fixations: pl.DataFrame, qc) -> tuple[pl.DataFrame, pl.DataFrame]:
    """:func:`repair_double_encoding` on the ``word`` column of ``words`` and the ``ia_label`` column of
    ``fixations`` (where present), each table's repairs counted in ``qc`` (:class:`readgaze.qc.QCLog`; ``changed``,
    and the labels a lost byte leaves unrepairable ``flagged``)."""
    out = {"words": words, "fixations": fixations}
    for table, column in (("words", "word"), ("fixations", "ia_label")):
        frame = out[table]
        if column not in frame.columns or frame.schema[column] != pl.String:
            continue
        fixed, counts = repair_double_encoding(frame[column])
        qc.add("load", table, f"{column}: double-encoded UTF-8 (Ã¸ for ø) repaired", counts["repaired"],
               action="changed")
        qc.add("load", table, f"{column}: double-encoded with a byte lost in the export: kept as it is",
               counts["unrepairable"], action="flagged")
        if counts["repaired"]:
            out[table] = frame.with_columns(fixed.alias(column))
    return out["words"], out["fixations"]


def unquote(column: str | pl.Expr) -> pl.Expr:
    '''A field read verbatim (no CSV quoting) as its text: ``"e"`` -> ``e``, ``"."`` -> ``.``, ``"a""b"`` ->
    ``a"b``, three quotes -> ``"``; an unquoted field is returned unchanged (so ``.``, Data Viewer's missing value,
    can still be told from a quoted full stop).'''
    c = pl.col(column) if isinstance(column, str) else column
    quoted = c.str.starts_with('"') & c.str.ends_with('"') & (c.str.len_chars() >= 2)
    return (pl.when(c == '"""').then(pl.lit('"'))
            .when(quoted).then(c.str.slice(1, c.str.len_chars() - 2).str.replace_all('""', '"', literal=True))
            .otherwise(c))
