"""Per-trial line-assignment confidence: how often the chosen lines agree with the vote and with slice.

No method is right on every trial (Carr et al. 2022: every algorithm has trials below 30 %), and a trial whose
lines are wrong has every word measure of those lines wrong. Two robust classical references fail differently:
``slice`` (Glandorf & Schroeder 2021) follows the drift run by run, and the ``vote`` of slice, cluster and warp
fails only where two of them fail together. Where the chosen lines part from either on more than 5 % of a
trial's fixations, some lines of that trial are in doubt; :func:`line_agreement` measures it per trial and
:func:`low_agreement` names those trials, so a researcher sees which trials to look at before trusting their
measures. ``readgaze prep`` writes the two columns into ``trials.parquet``; ``readgaze inspect DATASET`` names
the trials below :data:`THRESHOLD`.

Cost. The references run batched on one grouping of the fixations (:func:`readgaze.lines.frame_batch.method_lines`):
slice with array operations across all trials, the vote's cluster and warp in one compiled pass each, split over the
cores in threads (:func:`readgaze.lines._common.in_parts`), and the vote is their majority (two of three, else
slice, as :func:`readgaze.lines.vote.majority` breaks ties); a reference that is the chosen method itself is not run
again (its agreement is 1), and the chosen slice lines are the vote's slice column. Cluster's 100 k-means++ starts
per trial (the vote's own cost) dominate: at OneStop's scale (2.4 M fixations, 23,860 trials) its compiled pass took
5.7 CPU s and takes 3.5 since issue 39 (one pass per start and centre, same lines bit for bit; measured alternating
in one process on a loaded 2-core machine, ``experiments/bench_agreement.py`` times the whole pass). ``readgaze
prep`` runs the pass before the reading measures, so that its working arrays are freed before the measures' tables
grow. Its floor is the running sum over all starts that NumPy's k-means++ draw reads, one addition after another
(about 1.6 G additions here); running several centres' sums side by side (independent chains) measured no faster
on the 2-core machine (the pass is bound by its loads and stores, not the additions' latency).
"""

from __future__ import annotations

import polars as pl

THRESHOLD = 0.95
"""Trials whose lines agree with a reference on fewer than this share of their assigned fixations are named."""
REFERENCES = ("vote", "slice")
HINT = ("their lines part from the vote or slice on over 5 % of fixations: plot them "
        "(readgaze.plots.plot_scanpath) or re-assign with `readgaze assign-lines DATASET --method vote` before "
        "trusting their word measures")


def line_agreement(fixations: pl.DataFrame | pl.LazyFrame, words: pl.DataFrame | pl.LazyFrame,
                   trials: pl.DataFrame | pl.LazyFrame | None = None, *, chosen: str | None = None,
                   references: tuple[str, ...] = REFERENCES, direction: str | None = None,
                   unordered: list[str] | None = None) -> pl.DataFrame:
    """Share of each trial's assigned fixations whose ``line_index`` equals each reference method's line.

    Parameters
    ----------
    fixations : polars.DataFrame or LazyFrame
        ``trial_id``, ``fixation_index``, ``x_px``, ``y_px`` and the chosen ``line_index`` (Int, null =
        unassigned).
    words, trials, direction :
        As :func:`readgaze.lines.assign_lines`.
    chosen : str, optional
        The method that made ``line_index``; a reference equal to it is not run again (agreement 1).
    references : tuple of str
        Reference methods (default vote and slice).
    unordered : list of str, optional
        :func:`unordered_texts` of ``words``, when the caller has it already (computed here otherwise).

    Returns
    -------
    polars.DataFrame
        ``trial_id`` (the fixations' dtype) and ``line_agreement_<reference>`` (Float64 in [0, 1]; null for a trial
        without assigned fixations, and for a trial of a text whose lines are not top to bottom, see
        :func:`unordered_texts`), one row per trial of ``fixations``.
    """
    from readgaze.lines.frame import _trial_texts
    from readgaze.lines.frame_batch import method_lines

    fixations = fixations.collect() if isinstance(fixations, pl.LazyFrame) else fixations
    words = words.collect() if isinstance(words, pl.LazyFrame) else words
    trials = trials.collect() if isinstance(trials, pl.LazyFrame) else trials
    base = fixations.select("trial_id", "fixation_index", "x_px", "y_px", "line_index")
    positions = base.drop("line_index")
    skipped = unordered_texts(words) if unordered is None else unordered
    if skipped:  # the references cannot run on such a layout (e.g. one built from a fixation report's own y)
        texts = _trial_texts(base["trial_id"].cast(pl.String), words, trials)
        unchecked = pl.col("trial_id").cast(pl.String).is_in(
            texts.filter(pl.col("text_id").is_in(skipped))["trial_id"].implode())
        base = base.with_columns(pl.when(unchecked).then(None).otherwise(pl.col("line_index")).alias("line_index"))
        positions = positions.filter(~unchecked)  # whole trials out; the others' fixations all stay
        words = words.filter(~pl.col("text_id").cast(pl.String).is_in(skipped))
    lines: dict[str, pl.Series] = {}
    needed = {m for ref in references if ref != chosen for m in (("slice", "cluster", "warp") if ref == "vote"
                                                                  else (ref,))}
    needed.discard(chosen)
    # every method not chosen, run on one grouping of the fixations (method_lines), in a fixed order
    got_lines = method_lines(positions, words, trials, tuple(sorted(needed)), direction=direction) if needed else {}

    def lines_of(method: str) -> pl.Series:
        if method not in lines:
            if method == chosen:
                lines[method] = base["line_index"]
            else:
                got = got_lines[method]
                lines[method] = (got if not skipped else base.select("trial_id", "fixation_index").join(
                    positions.select("trial_id", "fixation_index").with_columns(line_index=got),
                    on=["trial_id", "fixation_index"], how="left", maintain_order="left")["line_index"])
        return lines[method]

    assigned = pl.col("line_index").is_not_null()
    columns = {}
    for ref in references:
        name = f"line_agreement_{ref}"
        if ref == chosen:
            columns[name] = pl.when(assigned).then(1.0)
            continue
        if ref == "vote":   # the vote of slice, cluster and warp: two of three, else slice (the first; vote.majority)
            s, c, w = (lines_of(m) for m in ("slice", "cluster", "warp"))
            got = pl.select(pl.when(c == w).then(c).otherwise(s)).to_series()
        else:
            got = lines_of(ref)
        columns[name] = pl.when(assigned & got.is_not_null()).then((pl.col("line_index") == got).cast(pl.Float64))
    return (base.with_columns(**columns).group_by("trial_id", maintain_order=True)
            .agg(pl.col(list(columns)).mean()))


def unordered_texts(words: pl.DataFrame) -> list[str]:
    """``text_id`` (as String) of the texts whose lines, in ``line_index`` order, are not strictly top to bottom
    (midline half-way between the line's highest word top and lowest word bottom, as
    :func:`readgaze.lines.frame.text_layout`); the line assigners need such lines, so agreement is not computed
    for their trials."""
    mid = (words.group_by("text_id", "line_index").agg(((pl.col("top_px").min() + pl.col("bottom_px").max()) / 2)
                                                       .alias("y")).sort("text_id", "line_index"))
    bad = mid.group_by("text_id").agg(((pl.col("y").diff() <= 0).any() | pl.col("y").is_nan().any()
                                       | pl.col("y").is_null().any()).alias("bad"))
    return sorted(bad.filter("bad")["text_id"].cast(pl.String).to_list())


def low_agreement(trials: pl.DataFrame, threshold: float = THRESHOLD) -> pl.DataFrame:
    """The rows of ``trials`` with any ``line_agreement_*`` column below ``threshold``, lowest first.

    Returns ``trial_id`` and the agreement columns (an empty frame when ``trials`` has none).
    """
    cols = [c for c in trials.columns if c.startswith("line_agreement_")]
    if not cols:
        return trials.select("trial_id").clear()
    low = pl.any_horizontal(pl.col(c) < threshold for c in cols).fill_null(False)
    return trials.filter(low).select("trial_id", *cols).sort(pl.min_horizontal(cols))


def describe(trials: pl.DataFrame, threshold: float = THRESHOLD, shown: int = 10) -> list[str]:
    """One line naming the trials below ``threshold`` (at most ``shown`` ids, lowest first) with the hint; []
    when every trial agrees (or the frame has no agreement columns)."""
    low = low_agreement(trials, threshold)
    if low.height == 0:
        return []
    ids = ", ".join(str(t) for t in low["trial_id"].head(shown).to_list()) + (", ..." if low.height > shown else "")
    return [f"line assignment: {low.height:,} trial(s) below {threshold:.0%} agreement ({ids}): {HINT}"]
