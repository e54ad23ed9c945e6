r"""Labels and items from a table: ``readgaze prep ... --trials LABELS.csv`` joins per-trial columns onto the trials.

A lab's labels rarely live in its eye-tracking export. The table (CSV/TSV or Parquet, one row per trial) gives any of
``reading_goal`` (``ordinary`` / ``information_seeking``), ``question``, ``is_correct``, ``selected_answer``,
``item_id``, ``text_id`` and free columns; they are joined onto the trials on key columns:

* named with ``--trials-on TRIALS_COLUMN=TABLE_COLUMN`` (or ``COLUMN`` when both use the name); trial columns are
  ``trial_id``, ``participant_id``, ``trial`` (the trial number within a participant, Data Viewer ``TRIAL_INDEX``)
  and the source names of the last two;
* else every one of those the table also has (``trial_id`` alone when present).

Keys are compared as text (``7`` matches ``"7"``). A table row matching no trial, and a trial without a row, are
counted (the first few listed); zero matches is a :class:`ConfigError` naming both files and the keys tried; a key
repeated in the table is a :class:`DataError` (rows are never merged). ``is_correct`` is read as a Boolean from
``True``/``False``/``1``/``0`` (any case); a ``reading_goal`` value other than the two goals is an error listing it.

The SB-SAT trial report (``18sat_trialfinal.csv``) is recognised by its columns and read with
:func:`readgaze.io.sbsat.read_sbsat_trials`, so its trial ids, items, pages and answers join as they are.

Labels kept per reader x book (or any key coarser than a trial) join every trial of that key, with two declared
mappings (``readgaze prep ... --key-map``, ``--binarise``; both are printed and kept in ``manifest.json``):

* a key map (:func:`parse_key_maps`) turns a trials column into the table's key before the join: a regular expression
  whose first group is the key (``item_id='^\w+-(\w+)-\d+$'``: SB-SAT's page ``reading-dickens-1`` -> book
  ``dickens``), or a two-column CSV (the trials' value, the table's value). A trial the map does not cover gets no
  row (counted, as any other);
* a binarising rule (:func:`parse_rules`) makes a label from a numeric column: ``is_correct=acc_level>=2`` (SB-SAT's
  comprehension score 0-3 per reader and book: 2 or 3 of 3 questions right). The rule's counts are printed; the
  numeric column joins as well, unchanged.

SB-SAT's ``18sat_labels.csv`` with its fixation report (a key map on ``item_id`` also makes the mapped key the
trial's item: a book, not its page, so that held-out-item folds keep a book's pages together)::

    readgaze prep dataviewer --source sbsat --fixation-report 18sat_fixfinal.csv --trials 18sat_labels.csv \
        --trials-on participant_id=subj item_id=book --key-map 'item_id=^\w+-(\w+)-\d+$' \
        --binarise 'is_correct=acc_level>=2' --out sb
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import polars as pl

from readgaze.data_prep.label_rules import Rule, apply_rules, parse_rules  # noqa: F401 -- parse_rules: the api imports it here
from readgaze.errors import ConfigError, DataError
from readgaze.qc import QCLog

STEP = "labels"
KEY_COLUMNS = ("trial_id", "participant_id", "trial")
GOALS = ("ordinary", "information_seeking")
SHOWN = 5
"""Unmatched keys listed in messages."""


@dataclass
class Joined:
    """The labelled trials, what the join matched, and the messages to print."""

    trials: pl.DataFrame
    keys: list[tuple[str, str]]
    matched: int
    messages: list[str] = field(default_factory=list)
    attached: list[str] = field(default_factory=list)


NULL_VALUES = (".", "NA")
"""Missing values in a delimited labels table: Data Viewer's ``.`` and R's ``NA`` (``write.csv``'s default), besides
the empty cell."""


def read_table(path, *, separator: str | None = None, decimal_comma: bool = False,
               columns: dict[str, str] | None = None, qc: QCLog | None = None) -> pl.DataFrame:
    """A labels table: Parquet by suffix, else delimited text through :func:`readgaze.io.csv.scan_csv` (damaged lines
    repaired and counted in ``qc``, or refused with the line named; :data:`NULL_VALUES` read as missing; the nulls of
    each column counted in ``qc``).

    ``separator`` (the exports') is used when the header line holds it, else the table's own is detected, and
    ``decimal_comma`` applies only when the table's separator is not a comma: ``readgaze prep``'s ``--separator`` and
    ``--decimal-comma`` describe the exports, and a labels table is often written by other software.

    ``columns`` (``{role: column}``, the ``trials`` part of a ``--columns`` map) renames the table's columns to the
    roles (``is_correct`` <- ``correct``).
    """
    table = _read_table(Path(path), separator, decimal_comma, qc)
    for role, column in (columns or {}).items():
        if column not in table.columns:
            raise ConfigError(f"columns: trials.{role} -> {column!r}, but the table has no column {column!r}; it has "
                              f"{table.columns}", file=path, column=column)
    rename = {column: role for role, column in (columns or {}).items() if column != role}
    return table.drop([r for r in rename.values() if r in table.columns]).rename(rename)


def _read_table(path: Path, separator, decimal_comma, qc: QCLog | None = None) -> pl.DataFrame:
    if not path.is_file():
        raise ConfigError("no such labels table", file=path)
    if path.suffix.lower() in (".parquet", ".pq"):
        try:
            return pl.read_parquet(path)
        except Exception as error:  # polars raises several kinds for a broken file
            raise ConfigError(f"cannot read as Parquet: {error}", file=path) from None
    from readgaze.io.csv import detect_separator, scan_csv

    with path.open("rb") as f:  # a labels table is often written elsewhere (R, a spreadsheet) than the exports
        first = f.readline(1 << 20).decode("utf-8", errors="replace")
    if separator is not None and separator not in first:
        separator = detect_separator(path)  # the exports' --separator is not this table's
    decimal_comma = decimal_comma and (separator or detect_separator(path)) != ","
    frame = scan_csv(path, separator=separator, decimal_comma=decimal_comma, null_values=NULL_VALUES, qc=qc,
                     step=STEP, table="labels")
    names = frame.collect_schema().names()
    if {"RECORDING_SESSION_LABEL", "INDEX", "page_name", "correct_answer"} <= set(names):
        from readgaze.io.sbsat import read_sbsat_trials

        keep = ("trial_id", "participant_id", "item_id", "text_id", "reading_goal", "selected_answer", "is_correct",
                "repeated_reading", "type", "RT")
        return read_sbsat_trials(path, qc=qc).select(keep).collect()
    from readgaze.io.cells import null_counts

    table = frame.collect()
    null_counts(table, qc, STEP, "labels", path)
    return table


def parse_keys(specs: list[str] | None) -> list[tuple[str, str]]:
    """``["participant_id=subject", "trial"]`` -> ``[("participant_id", "subject"), ("trial", "trial")]``."""
    out = []
    for spec in specs or []:
        for part in spec.split(","):
            if not part.strip():
                continue
            ours, _, theirs = part.partition("=")
            out.append((ours.strip(), (theirs or ours).strip()))
    return out


def _as_text(column: str) -> pl.Expr:
    return pl.col(column).cast(pl.String).str.strip_chars()


@dataclass(frozen=True)
class KeyMap:
    """A trials column's value -> the labels table's key: ``pattern`` (first group) or ``mapping`` (dict)."""

    column: str
    pattern: str | None = None
    mapping: dict[str, str] | None = None
    source: str = ""

    def expr(self, value: pl.Expr) -> pl.Expr:
        if self.pattern is not None:
            return value.str.extract(self.pattern, 1 if re.compile(self.pattern).groups else 0)
        return value.replace_strict(self.mapping, default=None, return_dtype=pl.String)


def parse_key_maps(specs: list[str] | None) -> dict[str, KeyMap]:
    """``["text_id=^\\w+-(\\w+)-\\d+$", "item_id=books.csv"]`` -> ``{column: KeyMap}``.

    A value naming an existing ``.csv``/``.tsv`` file is a two-column map (header row; first column the trials'
    value, second the table's); anything else is a regular expression. Raises :class:`ConfigError` on a bad pattern,
    an unreadable map or a spec without ``=``.
    """
    out = {}
    for spec in specs or []:
        column, sep, value = spec.partition("=")
        if not sep or not column.strip() or not value:
            raise ConfigError(f"--key-map {spec!r}: expected TRIALS_COLUMN=REGEX or TRIALS_COLUMN=MAP.csv")
        column = column.strip()
        path = Path(value)
        if path.suffix.lower() in (".csv", ".tsv", ".txt") and path.is_file():
            table = _read_table(path, None, False)
            if table.width < 2:
                raise ConfigError("a key map needs two columns (the trials' value, the table's)", file=path)
            pairs = table.select(pl.all().cast(pl.String).str.strip_chars()).select(table.columns[:2])
            out[column] = KeyMap(column, mapping=dict(pairs.iter_rows()), source=str(path))
            continue
        try:
            groups = re.compile(value).groups
        except re.error as error:
            raise ConfigError(f"--key-map {column}={value!r}: not a regular expression ({error})") from None
        if groups > 1:
            raise ConfigError(f"--key-map {column}={value!r}: {groups} groups; give one (the key), e.g. "
                              f"'^\\w+-(\\w+)-\\d+$'")
        out[column] = KeyMap(column, pattern=value, source=value)
    return out


def attach_labels(trials: pl.DataFrame, table: pl.DataFrame, *, trials_file: str, table_file: str,
                  keys: list[tuple[str, str]] | None = None, aliases: dict[str, str] | None = None,
                  qc: QCLog | None = None, key_maps: dict[str, KeyMap] | None = None,
                  rules: list[Rule] | None = None) -> Joined:
    """Join ``table``'s per-trial columns onto ``trials`` (module docstring).

    Parameters
    ----------
    trials : polars.DataFrame
        One row per trial: ``trial_id`` and the key columns.
    table : polars.DataFrame
        The labels table.
    trials_file, table_file : str
        Named in messages (the export the trials came from, the labels table).
    keys : list of (trials column, table column), optional
        Default: matched by name.
    aliases : dict, optional
        ``{source column name: trials column}`` (``TRIAL_INDEX`` -> ``trial``), so a table may use the export's names.
    qc : QCLog, optional
        Receives ``no_label_row`` (trials) and ``row_without_trial`` (labels) counts, flagged.
    key_maps : dict, optional
        ``{trials column: KeyMap}`` (:func:`parse_key_maps`): the column's value is mapped before the join.
    rules : list of Rule, optional
        Labels made from numeric columns of the table (:func:`parse_rules`).

    Raises
    ------
    ConfigError
        No key in common, a key column missing, no row matching, or a ``reading_goal`` value that is not a goal.
    DataError
        A key repeats in the table.
    """
    aliases = aliases or {}
    available = {c: c for c in KEY_COLUMNS if c in trials.columns}
    available.update({src: ours for src, ours in aliases.items() if ours in trials.columns})
    if keys:
        for ours, theirs in keys:
            if ours not in available and ours not in trials.columns:
                raise ConfigError(f"--trials-on {ours}={theirs}: the trials have no column {ours!r}; they have "
                                  f"{_names(available)}", file=trials_file)
            if theirs not in table.columns:
                raise ConfigError(f"--trials-on {ours}={theirs}: no column {theirs!r}; it has {table.columns}",
                                  file=table_file)
        pairs = [(available.get(ours, ours), theirs) for ours, theirs in keys]
    else:
        pairs = [(ours, name) for name, ours in available.items() if name in table.columns]
        if any(ours == "trial_id" for ours, _ in pairs):
            pairs = [("trial_id", "trial_id")]
        pairs = sorted(dict.fromkeys(pairs), key=lambda pair: KEY_COLUMNS.index(pair[0]))
        if not pairs:
            raise ConfigError(f"no key column in common with the trials: the table has {table.columns}; the trials "
                              f"can be joined on {_names(available)}. Name the keys, e.g. --trials-on "
                              f"participant_id=subject trial=trial_number", file=table_file)
    ours_cols, theirs_cols = [o for o, _ in pairs], [t for _, t in pairs]
    padded = table.select(pl.any_horizontal([pl.col(t).cast(pl.String).str.contains(r"^\s|\s$").fill_null(False)
                                             for t in theirs_cols]).sum()).item()
    if qc is not None and padded:  # keys are compared as text without edge spaces: a padded cell still matches
        qc.add(STEP, "labels", "key cells with edge spaces (matched without them)", padded, action="changed",
               detail=f"{Path(table_file).name}: columns {', '.join(theirs_cols)}")
    key_names = [f"__key{i}" for i in range(len(pairs))]
    key_maps = key_maps or {}
    unused = [c for c in key_maps if c not in ours_cols]
    if unused:
        raise ConfigError(f"--key-map {unused[0]}: not a join key (the keys are {', '.join(ours_cols)}; name it in "
                          f"--trials-on)", file=table_file)
    left = trials.with_columns([(key_maps[o].expr(_as_text(o)) if o in key_maps else _as_text(o)).alias(k)
                                for o, k in zip(ours_cols, key_names)])
    map_messages = []
    for o, k in zip(ours_cols, key_names):
        if o in key_maps:
            missed = left.filter(pl.col(k).is_null() & pl.col(o).is_not_null())
            example = left.filter(pl.col(k).is_not_null()).select(o, k).head(1).rows()
            map_messages.append(f"labels: key map {o} -> {key_maps[o].source}: "
                                f"{left.height - missed.height:,} of {left.height:,} trials mapped"
                                + (f" (e.g. {example[0][0]} -> {example[0][1]})" if example else "")
                                + (f"; {missed.height:,} not covered, e.g. {missed[o].head(3).to_list()}"
                                   if missed.height else ""))
    table, rule_messages = apply_rules(table, rules or [], table_file)
    right = table.with_columns([_as_text(t).alias(k) for t, k in zip(theirs_cols, key_names)])
    _check_unique(right, key_names, theirs_cols, table_file)
    attached = [c for c in table.columns if c not in theirs_cols and c not in key_names]
    right = _normalise(right.select(*key_names, *attached), table_file)
    tried = ", ".join(f"{o} = {t}" for o, t in pairs)
    hit = left.join(right.select(key_names), on=key_names, how="semi")
    if hit.height == 0:
        examples_ours = left.select(key_names).unique(maintain_order=True).head(3).rows()
        examples_theirs = right.select(key_names).unique(maintain_order=True).head(3).rows()
        raise ConfigError(f"no trial of {Path(trials_file).name} matches a row of {Path(table_file).name} on "
                          f"{tried}: trials have e.g. {examples_ours}, the table {examples_theirs}; name other keys "
                          f"with --trials-on TRIALS_COLUMN=TABLE_COLUMN", file=table_file)
    replaced = [c for c in attached if c in trials.columns]
    joined = left.drop(replaced).join(right, on=key_names, how="left", coalesce=True)
    if "item_id" in key_maps and "item_id" not in replaced:  # the item is the mapped key: a book, not its page
        mapped = key_names[ours_cols.index("item_id")]
        changed = joined.filter(pl.col(mapped).is_not_null() & (pl.col(mapped) != _as_text("item_id"))).height
        joined = joined.with_columns(pl.coalesce(pl.col(mapped), pl.col("item_id").cast(pl.String)).alias("item_id"))
        map_messages.append(f"labels: item_id of {changed:,} trials is now its mapped key (the trials of one key are "
                            f"one item, held out together in participant x item folds)")
        if qc is not None:
            qc.add(STEP, "trials", "item_id_from_key_map", changed, action="changed",
                   detail=f"item_id mapped by --key-map {key_maps['item_id'].source!r}")
    joined = joined.drop(key_names)
    no_row = left.join(right.select(key_names), on=key_names, how="anti")
    orphan = right.join(left.select(key_names), on=key_names, how="anti")
    messages = [*map_messages, *rule_messages,
                f"labels: {hit.height:,} of {trials.height:,} trials matched a row of {Path(table_file).name} on "
                f"{tried}; attached {', '.join(attached) or 'no columns'}"
                + (f" (replacing the export's {', '.join(replaced)})" if replaced else "")]
    if no_row.height:
        messages.append(f"labels: {no_row.height:,} trial(s) have no row (labels left null), e.g. "
                        f"{', '.join(no_row['trial_id'].head(SHOWN).to_list())}")
    if orphan.height:
        messages.append(f"labels: {orphan.height:,} row(s) of {Path(table_file).name} match no trial, e.g. "
                        f"{orphan.select(key_names).head(SHOWN).rows()}")
    if qc is not None:
        qc.add(STEP, "trials", "no_label_row", no_row.height, action="flagged",
               detail=f"trials without a row in {Path(table_file).name} (keys {tried}); their labels are null")
        qc.add(STEP, "labels", "row_without_trial", orphan.height, action="flagged",
               detail=f"rows of {Path(table_file).name} that match no trial (keys {tried}); not used")
    return Joined(trials=joined, keys=pairs, matched=hit.height, messages=messages, attached=attached)


def _names(available: dict[str, str]) -> str:
    return ", ".join(f"{k}" + (f" (= {v})" if k != v else "") for k, v in available.items())


def _check_unique(right: pl.DataFrame, key_names: list[str], shown: list[str], table_file: str) -> None:
    dups = right.with_row_index("__row", offset=2).filter(pl.len().over(key_names) > 1)
    if dups.height:
        first = dups.head(SHOWN)
        where = "; ".join(f"row {r['__row']}: " + ", ".join(f"{c}={r[c]}" for c in shown)
                          for r in first.iter_rows(named=True))
        raise DataError(f"{dups.height} rows repeat a key ({', '.join(shown)}): {where}; one row per trial is "
                        "expected (rows are never merged)", file=table_file, row=int(first["__row"][0]))


def _normalise(right: pl.DataFrame, table_file: str) -> pl.DataFrame:
    """``is_correct`` as Boolean, ``reading_goal`` checked, ids as text."""
    out = right
    if "is_correct" in out.columns and out.schema["is_correct"] != pl.Boolean:
        text = pl.col("is_correct").cast(pl.String).str.strip_chars().str.to_lowercase()
        out = out.with_columns(pl.when(text.is_in(["true", "1", "1.0", "yes", "correct"])).then(True)
                               .when(text.is_in(["false", "0", "0.0", "no", "incorrect"])).then(False)
                               .alias("__bool"))
        bad = out.filter(pl.col("__bool").is_null() & pl.col("is_correct").is_not_null())
        if bad.height:
            raise ConfigError(f"is_correct: got {bad['is_correct'].cast(pl.String).unique().head(5).to_list()}, "
                              "expected True/False or 1/0", file=table_file, column="is_correct")
        out = out.with_columns(pl.col("__bool").alias("is_correct")).drop("__bool")
    if "reading_goal" in out.columns:
        goal = pl.col("reading_goal").cast(pl.String)
        bad = out.filter(~goal.is_in(GOALS) & goal.is_not_null())["reading_goal"].cast(pl.String).unique()
        if len(bad):
            raise ConfigError(f"reading_goal: got {sorted(bad.to_list())[:5]}, expected {list(GOALS)} (recode the "
                              "column, e.g. preview/no-preview -> information_seeking/ordinary)", file=table_file,
                              column="reading_goal")
        out = out.with_columns(goal)
    for name in ("item_id", "text_id", "question", "selected_answer"):
        if name in out.columns:
            out = out.with_columns(pl.col(name).cast(pl.String))
    return out


def rekey_words(words: pl.DataFrame, trials_before: pl.DataFrame, trials_after: pl.DataFrame,
                qc: QCLog | None = None) -> pl.DataFrame:
    """Words keyed by the table's ``text_id`` when it replaced the export's (each new text takes the boxes of its
    first trial's old text); unchanged otherwise."""
    change = (trials_before.select("trial_id", pl.col("text_id").alias("__old"))
              .join(trials_after.select("trial_id", "text_id"), on="trial_id"))
    change = change.filter(pl.col("text_id").is_not_null() & (pl.col("text_id") != pl.col("__old")))
    if change.height == 0:
        return words
    first = change.sort("trial_id").unique("text_id", keep="first").select("text_id", "__old")
    rekeyed = words.rename({"text_id": "__old"}).join(first, on="__old", how="inner").drop("__old")
    kept = words.filter(~pl.col("text_id").is_in(change["__old"].unique().implode()))
    if qc is not None:
        qc.add(STEP, "words", "text_id_from_labels", rekeyed.height, action="changed",
               detail="words re-keyed to the labels table's text_id (boxes of each text's first trial)")
    return pl.concat([kept, rekeyed.select(words.columns)], how="vertical_relaxed")
