"""What a report must say about a split: regime sizes, and whether the label is a participant constant.

In OneStop the reading goal is between-participant (Shubi et al., 2024, arXiv:2410.20779): every participant read either
all paragraphs with the question first (information seeking) or all without. In the new-item regime
the participant was seen in training, so a model can score by recognising the reader; only the
new-participant regimes measure generalisation, and reports headline them.
"""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from readgaze.errors import SchemaError
from readgaze.splits.regimes import REGIMES

HEADLINE_IF_PARTICIPANT_CONSTANT = ("new_participant", "new_item_participant")


@dataclass(frozen=True, eq=False)
class SplitDescription:
    """Facts about a labelled trial set and, optionally, its fold assignments.

    Attributes
    ----------
    label : str
        The label column described (e.g. ``"reading_goal"``, ``"is_correct"``).
    n_trials, n_participants, n_items : int
        Counts in ``trials``.
    n_label_values : int
        Distinct non-null label values.
    label_constant_per_participant, label_constant_per_item : bool or None
        Every participant (item) has one label value; None when the label column is absent.
    headline_regimes : tuple of str
        ``("new_participant", "new_item_participant")`` when the label is constant per participant and
        has at least two values (``("new_item", "new_item_participant")`` when constant per item, only the
        last when both); otherwise all three regimes.
    regime_counts : polars.DataFrame or None
        Per ``fold_index``, ``split``, ``regime``: ``n_trials``, ``n_participants``, ``n_items`` (UInt32).
    n_unused : int
        Trial-fold pairs with a null split (``strict=True`` drops them).
    n_seen_side_untrained : int
        Val/test trial-fold pairs whose "seen" participant (new_item) or item (new_participant) has no
        training trial in that fold (e.g. a validation-fold participant in the default protocol).
    notes : tuple of str
        Sentences for a report.
    """

    label: str
    n_trials: int
    n_participants: int
    n_items: int
    n_label_values: int
    label_constant_per_participant: bool | None
    label_constant_per_item: bool | None
    headline_regimes: tuple[str, ...]
    regime_counts: pl.DataFrame | None
    n_unused: int
    n_seen_side_untrained: int
    notes: tuple[str, ...]

    def to_markdown(self) -> str:
        """The notes as a bullet list, then regime sizes per fold (min–max over folds) as a table."""
        lines = [f"- {note}" for note in self.notes]
        if self.regime_counts is not None and self.regime_counts.height:
            summary = (self.regime_counts.filter(pl.col("split").is_not_null())
                       .group_by("split", "regime")
                       .agg(pl.col("n_trials").min().alias("lo"), pl.col("n_trials").max().alias("hi"),
                            pl.col("n_participants").min().alias("p_lo"), pl.col("n_participants").max().alias("p_hi"),
                            pl.col("n_items").min().alias("i_lo"), pl.col("n_items").max().alias("i_hi"),
                            pl.len().alias("folds"))
                       .sort(pl.col("split").replace_strict({"train": 0, "val": 1, "test": 2}, default=3), "regime"))
            lines += ["", "| split | regime | trials per fold | participants | items | folds |",
                      "|---|---|---|---|---|---|"]
            for r in summary.iter_rows(named=True):
                lines.append(f"| {r['split']} | {r['regime']} | {_span(r['lo'], r['hi'])} | "
                             f"{_span(r['p_lo'], r['p_hi'])} | {_span(r['i_lo'], r['i_hi'])} | {r['folds']} |")
        return "\n".join(lines) + "\n"


def _span(lo: int, hi: int) -> str:
    return f"{lo:,}" if lo == hi else f"{lo:,}–{hi:,}"


def describe(trials: pl.DataFrame | pl.LazyFrame, assignment: pl.DataFrame | None = None, *,
             label: str = "reading_goal") -> SplitDescription:
    """Describe a trial set and its fold assignments for a report.

    Parameters
    ----------
    trials : polars.DataFrame or LazyFrame
        ``trial_id``, ``participant_id``, ``item_id`` and, if present, ``label``.
    assignment : polars.DataFrame, optional
        Output of :func:`readgaze.splits.assign_fold`, one fold or several concatenated
        (``trial_id``, ``fold_index``, ``split``, ``regime``).
    label : str, default "reading_goal"
        The task's label column.

    Returns
    -------
    SplitDescription

    Raises
    ------
    SchemaError
        ``trials`` or ``assignment`` lacks a needed column.
    """
    frame = trials.lazy() if isinstance(trials, pl.DataFrame) else trials
    names = frame.collect_schema().names()
    missing = [c for c in ("trial_id", "participant_id", "item_id") if c not in names]
    if missing:
        raise SchemaError(f"trials lack column(s) {missing}; describe needs trial_id, participant_id, item_id")
    has_label = label in names
    frame = frame.select("trial_id", "participant_id", "item_id", *([label] if has_label else [])).collect()
    n_values = frame[label].drop_nulls().n_unique() if has_label else 0
    per_participant = _constant_within(frame, "participant_id", label) if has_label else None
    per_item = _constant_within(frame, "item_id", label) if has_label else None
    headline = _headline(n_values, per_participant, per_item)
    counts, n_unused, n_untrained = None, 0, 0
    if assignment is not None:
        counts, n_unused, n_untrained = _assignment_facts(frame, assignment)
    notes = _notes(label, has_label, n_values, per_participant, per_item,
                   frame["participant_id"].n_unique(), n_unused, n_untrained)
    return SplitDescription(label=label, n_trials=frame.height, n_participants=frame["participant_id"].n_unique(),
                            n_items=frame["item_id"].n_unique(), n_label_values=n_values,
                            label_constant_per_participant=per_participant, label_constant_per_item=per_item,
                            headline_regimes=headline, regime_counts=counts, n_unused=n_unused,
                            n_seen_side_untrained=n_untrained, notes=tuple(notes))


def _headline(n_values: int, per_participant: bool | None, per_item: bool | None) -> tuple[str, ...]:
    """Regimes where the label cannot be read off a seen participant or a seen item."""
    if n_values < 2:
        return REGIMES
    if per_participant and per_item:
        return ("new_item_participant",)
    if per_participant:
        return HEADLINE_IF_PARTICIPANT_CONSTANT
    if per_item:
        return ("new_item", "new_item_participant")
    return REGIMES


def _constant_within(frame: pl.DataFrame, key: str, label: str) -> bool:
    return bool(frame.group_by(key).agg(pl.col(label).drop_nulls().n_unique().alias("n"))["n"].max() <= 1)


def _assignment_facts(frame: pl.DataFrame, assignment: pl.DataFrame) -> tuple[pl.DataFrame, int, int]:
    missing = [c for c in ("trial_id", "fold_index", "split", "regime") if c not in assignment.columns]
    if missing:
        raise SchemaError(f"assignment lacks column(s) {missing}; pass the output of assign_fold")
    joined = assignment.select("trial_id", "fold_index", "split", "regime").join(
        frame.select("trial_id", "participant_id", "item_id"), on="trial_id", how="left")
    counts = (joined.group_by("fold_index", "split", "regime")
              .agg(pl.len().alias("n_trials"), pl.col("participant_id").n_unique().alias("n_participants"),
                   pl.col("item_id").n_unique().alias("n_items"))
              .sort("fold_index", "split", "regime", nulls_last=True))
    train = joined.filter(pl.col("split") == "train")
    trained_p = train.select("fold_index", "participant_id").unique().with_columns(pl.lit(True).alias("p_trained"))
    trained_i = train.select("fold_index", "item_id").unique().with_columns(pl.lit(True).alias("i_trained"))
    held = (joined.filter(pl.col("split").is_in(["val", "test"]))
            .join(trained_p, on=["fold_index", "participant_id"], how="left")
            .join(trained_i, on=["fold_index", "item_id"], how="left"))
    untrained = held.filter(((pl.col("regime") == "new_item") & pl.col("p_trained").is_null())
                            | ((pl.col("regime") == "new_participant") & pl.col("i_trained").is_null())).height
    return counts, joined.filter(pl.col("split").is_null()).height, untrained


def _notes(label: str, has_label: bool, n_values: int, per_participant: bool | None, per_item: bool | None,
           n_participants: int, n_unused: int, n_untrained: int) -> list[str]:
    notes = []
    if not has_label:
        notes.append(f"The label column {label!r} is absent; label facts are not reported.")
    elif n_values < 2:
        notes.append(f"{label} has {n_values} distinct value(s): no classifier can be evaluated on it.")
    elif per_participant:
        notes.append(f"{label} is constant within each of the {n_participants} participants: in the new-item "
                     f"regime a model can score by recognising the reader, so the new-participant regimes "
                     f"(new participant; new item & participant) are the headline.")
    if has_label and n_values >= 2 and per_item:
        notes.append(f"{label} is constant within each item: the new-participant regime can be solved by "
                     f"recognising the item; the new-item regimes are the headline for this label.")
    if n_unused:
        notes.append(f"{n_unused} trial-fold pairs are used in no split (strict protocol: a validation "
                     f"participant on a test item, or a test participant on a validation item).")
    if n_untrained:
        notes.append(f"{n_untrained} val/test trial-fold pairs are on the 'seen' side without a training "
                     f"trial for that participant or item (e.g. validation-fold participants in the new-item "
                     f"test regime; strict=True removes those).")
    return notes
