"""The keys of a Data Viewer report: a (trial, fixation or interest-area id) key that repeats, and the base (0 or 1)
of the interest-area ids, found from the labels of the fixation and IA reports (SR Research (2021), *EyeLink Data
Viewer User's Manual* 4.2: ids count from 1; exports re-processed by other tools may count from 0)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import polars as pl

from readgaze.errors import DataError, Option
from readgaze.io.faults import text_file
from readgaze.io.labels import clean_label

ID_BASE_OPTIONS = (Option("ia_id_base=1", "--ia-id-base 1", "Data Viewer's own numbering"),
                   Option("ia_id_base=0", "--ia-id-base 0"),
                   Option("ia_report=IA_REPORT", "--ia-report IA_REPORT", "to detect it from the IA labels"))
"""What resolves an unknown interest-area id base, for a Python caller and for ``readgaze prep``."""


def check_unique(raw: pl.LazyFrame, path, key: dict[str, pl.Expr], shown: list[str], session_key) -> None:
    """Raise DataError naming the rows that repeat a key (never merge them)."""
    group, (inner,) = list(key)[:-1], list(key)[-1:]
    keys = raw.select(*[e.alias(n) for n, e in key.items()])
    # cheapest pass, enough for a report in its own order: each group's rows contiguous, inner key rising
    g = pl.struct(group) if len(group) > 1 else pl.col(group[0])
    new = (g != g.shift(1)).fill_null(True)
    rising = (new | (pl.col(inner) > pl.col(inner).shift(1))).fill_null(False).all()
    # groups contiguous <=> the group values at the run starts are distinct (every value starts some run)
    if keys.select((new.sum() == g.filter(new).n_unique()) & rising & (pl.col(inner).null_count() == 0)
                   ).collect().item():
        return
    counts = (keys.group_by(group)  # else per group, count vs distinct
              .agg(pl.len().alias("n"), pl.col(inner).n_unique().alias("distinct")))
    if counts.select((pl.col("n") > pl.col("distinct")).any()).collect(engine="streaming").item() is not True:
        return
    dups = (raw.with_row_index("__row")
            .select(pl.col("__row"), *[e.alias(n) for n, e in key.items()], *[pl.col(c).alias(f"__{c}") for c in shown])
            .group_by(list(key)).agg(pl.col("__row").sort(), *[pl.col(f"__{c}").first() for c in shown])
            .filter(pl.col("__row").list.len() > 1)
            .sort(pl.col("__row").list.get(1)).collect())
    if dups.is_empty():
        return
    text = text_file(path)  # data rows -> the user's lines (a repaired file is read through a copy)
    flat = dups.select(pl.int_range(pl.len()).alias("__g"), "__row").explode("__row")
    lines = flat["__row"].to_numpy().astype("int64")
    lines = text.user_lines(lines) if text is not None else lines + 2
    dups = dups.with_columns(flat.with_columns(pl.Series("__row", lines)).group_by("__g", maintain_order=True)
                             .agg("__row")["__row"])
    repeated = sorted(r for rows in dups["__row"] for r in rows[1:])
    examples = "; ".join(
        "(" + ", ".join(str(rec[f"__{c}"]) for c in shown) + f") at rows {', '.join(map(str, rec['__row']))}"
        for rec in dups.head(5).iter_rows(named=True))
    span = _span(repeated)
    data_span = _span([r - 1 for r in repeated])
    hint = ("" if session_key is not None else
            " (two sessions in one export, or TRIAL_INDEX restarting?) Pass session_key=<column> or "
            "session_key='restart' to split them; rows are never merged.")
    raise DataError(f"{len(dups)} key(s) ({', '.join(shown)}) repeat: rows {span} (data rows {data_span}) "
                    f"repeat keys seen earlier: {examples}.{hint}", file=path, row=repeated[0],
                    column=shown[-1] if shown else None)


def _span(rows: list[int]) -> str:
    if len(rows) > 1 and rows == list(range(rows[0], rows[-1] + 1)):
        return f"{rows[0]}–{rows[-1]}"
    return ", ".join(map(str, rows[:10])) + (", ..." if len(rows) > 10 else "")


@dataclass(frozen=True)
class IdBaseCheck:
    """Outcome of :func:`detect_ia_id_base`: the base and the label agreement under each candidate."""

    base: int | None
    agreement: dict[int, float]
    checked: int


def detect_ia_id_base(fixations: pl.LazyFrame, ia: pl.LazyFrame, *, fixation_file, ia_file,
                      threshold: float = 0.99) -> IdBaseCheck:
    """Find the id base of a fixation report by label agreement with the IA report of the same trials.

    ``fixations`` must be read with ``ia_id_base=0`` (so ``ia_index`` holds the raw id) and carry
    ``ia_label``; ``ia`` is a read IA report (0-based ``ia_index``, ``word``). For each candidate base
    b in (1, 0), a fixation agrees when the IA row (same trial, ``ia_index == raw id - b``) has the
    same label (no-break spaces count as spaces); fixations whose IA row does not exist under b are left out. The
    base whose agreement is highest and at least ``threshold`` wins.

    Returns
    -------
    IdBaseCheck
        ``base`` is None when no fixation has both an id and a label in a trial of the IA report.

    Raises
    ------
    DataError
        Naming both files and the agreement under each base, when neither base reaches ``threshold``.
    """
    # one integer key per (trial, IA index): lookups instead of string joins
    words = ia.select("trial_id", "ia_index", clean_label(pl.col("word")).alias("__word")).collect()
    names = words["trial_id"].unique().drop_nulls().sort()

    def key(ia_index: pl.Expr) -> pl.Expr:
        code = pl.col("trial_id").replace_strict(names, pl.int_range(len(names), eager=True), default=None,
                                                 return_dtype=pl.Int64)
        return code * (1 << 32) + ia_index.cast(pl.Int64)

    by_key = words.select(key(pl.col("ia_index")).alias("k"), "__word").drop_nulls("k").unique("k", keep="first")
    # fixations of trials the IA report has, each distinct (key, label) once with its fixation count (a word is
    # fixated in many trials of its text): the labels are cleaned and compared per pair, not per fixation
    fix = (fixations.filter(pl.col("ia_index").is_not_null() & pl.col("ia_label").is_not_null())
           .select(key(pl.col("ia_index")).alias("k"), pl.col("ia_label").alias("__label"))
           .drop_nulls("k").group_by("k", "__label").agg(pl.len().alias("__n"))
           .with_columns(clean_label(pl.col("__label"))).collect())
    agree, checked = {}, 0
    for b in (1, 0):  # only fixations whose IA row exists under base b count (an IA report cut short lacks rows)
        word = (pl.col("k") - b).replace_strict(by_key["k"], by_key["__word"], default=None)
        j = fix.select(pl.col("__n").filter(word.is_not_null()).sum().alias("n"),
                       pl.col("__n").filter(pl.col("__label") == word).sum().alias("ok"))
        n = int(j["n"][0] or 0)
        checked = max(checked, n)
        agree[b] = int(j["ok"][0] or 0) / n if n else 0.0
    if not checked:
        return IdBaseCheck(None, agree, 0)
    best = max(agree, key=agree.get)
    if agree[best] < threshold or agree[0] == agree[1]:
        rates = ", ".join(f"base {b}: {agree[b]:.1%}" for b in (1, 0))
        raise DataError(f"interest-area labels of {Path(fixation_file).name} and {Path(ia_file).name} disagree "
                        f"under both id bases ({rates} of {checked} fixations agree; need "
                        f"{threshold:.0%})", file=fixation_file, column="CURRENT_FIX_INTEREST_AREA_ID",
                        options=ID_BASE_OPTIONS[:2])
    return IdBaseCheck(best, agree, checked)
