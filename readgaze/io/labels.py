"""Interest-area labels as they compare: the no-break spaces typeset texts leave inside labels, as plain spaces.

Low in the layers (readgaze.io): the report readers (``report_keys``) and the text layout (:mod:`readgaze.text`)
both clean labels with :func:`clean_label`.
"""

from __future__ import annotations

import polars as pl

NO_BREAK_SPACES = "[\u00a0\u2007\u202f]"
"""No-break spaces (U+00A0, U+2007, U+202F) that typeset texts leave inside interest-area labels."""


def clean_label(label: pl.Expr) -> pl.Expr:
    """An interest-area label with no-break spaces written as plain spaces (labels compare equal).

    Examples
    --------
    >>> import polars as pl
    >>> pl.select(clean_label(pl.lit("New\u00a0York"))).item()
    'New York'
    """
    return label.str.replace_all(NO_BREAK_SPACES, " ")
