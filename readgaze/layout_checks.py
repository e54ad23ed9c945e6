"""Does a text layout hold up: the interest-area faults of an IA report (:func:`ia_quirks`, the ones EyeBench
fixed by hand) and how the fixations recorded on each text sit on its layout (:func:`layout_fit`,
:func:`layout_fit_warnings`: a layout from another study, screen or coordinate system). Both report, neither changes
a row; :mod:`readgaze.text` builds the layouts they check.
"""

from __future__ import annotations

import polars as pl

from readgaze.io.labels import NO_BREAK_SPACES
from readgaze.qc import QCLog
from readgaze.text import assign_box_lines


def ia_quirks(ia: pl.DataFrame | pl.LazyFrame, *, name: str = "IA report") -> QCLog:
    """Check interest-area rows for the alignment faults EyeBench fixed by hand in its data.

    EyeBench (Shubi et al., 2025, NeurIPS Datasets & Benchmarks; its data notes) lists: no-break spaces
    inside labels, a hyphenated label duplicated over a line break, cp1252 bytes in SB-SAT exports, an
    interest area spanning a line break, and MECO readers of Chinese with ``IA_FIRST_FIX_PROGRESSIVE``
    0 on every row. What readgaze does with each: no-break spaces become plain spaces
    (:func:`readgaze.text.clean_label`); the duplicated label shares one ``word_index``
    (:func:`readgaze.text.merge_hyphen_splits`);
    cp1252 is read with ``encoding="cp1252"`` (a UTF-8 error names the row,
    :func:`readgaze.io.csv.scan_csv`); a tall box joins the line it starts on (:func:`readgaze.text.assign_box_lines`).
    This function counts each in the returned log (``table="words"``, ``action="flagged"``), and flags
    a report whose ``IA_FIRST_FIX_PROGRESSIVE`` is 0 on every fixated row (``action="warning"``: Data
    Viewer's first-pass measures are then all empty, readgaze's own measures from fixations are not).

    Parameters
    ----------
    ia : polars.DataFrame or LazyFrame
        Rows of :func:`readgaze.io.read_ia_report`: ``trial_id``, ``ia_index``, ``word``, ``top_px``,
        ``bottom_px``, optional ``text_id``, ``line_index``, ``IA_FIRST_FIX_PROGRESSIVE`` and
        ``IA_FIXATION_COUNT``.
    name : str
        The report's name, used in the details.
    """
    df = ia.lazy().collect()
    key = "text_id" if "text_id" in df.columns else "trial_id"
    layout = df.unique([key, "ia_index"], keep="first").sort(key, "ia_index")
    qc, step = QCLog(), "ia_quirks"

    def first(frame: pl.DataFrame) -> str | None:
        return f"{name}: first at {key} {frame[key][0]}, IA {frame['ia_index'][0]}" if frame.height else None

    nbsp = layout.filter(pl.col("word").str.contains(NO_BREAK_SPACES))
    qc.add(step, "words", "no-break space in label", nbsp.height, action="flagged", detail=first(nbsp))
    height = pl.col("bottom_px") - pl.col("top_px")
    tall = layout.filter(height > 1.5 * height.median().over(key))
    qc.add(step, "words", "interest area spans a line break", tall.height, action="flagged", detail=first(tall))
    lines = layout if "line_index" in layout.columns else assign_box_lines(layout, by=key)
    prev = pl.col("word").shift(1).over(key)
    dup = lines.filter((prev == pl.col("word")) & pl.col("word").str.contains(r"\w-\w")
                       & (pl.col("line_index").shift(1).over(key) < pl.col("line_index")))
    qc.add(step, "words", "hyphenated label repeated over a line break", dup.height, action="flagged",
           detail=first(dup))
    if "IA_FIRST_FIX_PROGRESSIVE" in df.columns:
        fixated = df.filter(pl.col("IA_FIXATION_COUNT") > 0) if "IA_FIXATION_COUNT" in df.columns else df
        progressive = fixated["IA_FIRST_FIX_PROGRESSIVE"].cast(pl.Float64, strict=False).drop_nulls()
        if progressive.len() and (progressive == 0).all():
            qc.add(step, "words", "IA_FIRST_FIX_PROGRESSIVE is 0 on every fixated row", progressive.len(),
                   action="warning", detail=f"{name}: Data Viewer's first-pass measures are empty; compute "
                                            "measures from the fixations instead")
    return qc


FIT_LIMITS = {"extent_ratio": (0.5, 1.6), "centre_pitches": 1.5, "x_extent_ratio": (0.45, 1.5),
              "x_centre_share": 0.2, "on_words": 0.5}
"""When :func:`layout_fit_warnings` warns (per text, median over its trials): the fixations' vertical spread (5th to
95th percentile of y) over the layout's (first to last line midline, texts of 3+ lines) outside ``extent_ratio``;
their vertical centre more than ``centre_pitches`` line pitches from the text's; the same for x against the text's
left and right edge (``x_extent_ratio``; centre off by more than ``x_centre_share`` of the text's width); or fewer
than ``on_words`` of the fixations on a word box. Layouts of the texts the readers saw stay well inside: Carr et
al.'s 24 real trials with vertical drift (``line_assignment``, children and adults) spread 0.90-0.98 x their lines,
centred within 0.7 pitch, 0.83-0.89 x the width; the lab example's 40 simulated texts 0.75-1.10. Geometry cannot
tell apart two texts of the same shape on the same screen (a swap among the lab example's texts is caught in 7 of
40); it catches a layout from another study, screen or coordinate system."""


def layout_fit_warnings(fixations: pl.DataFrame, words: pl.DataFrame, trials: pl.DataFrame,
                        shown: int = 3) -> list[str]:
    """Warnings for texts whose layout does not fit the fixations recorded on them (wrong text, wrong coordinates).

    Parameters
    ----------
    fixations : polars.DataFrame
        ``trial_id``, ``x_px``, ``y_px`` (recorded, px) and ``word_index`` (null off the word boxes) if aligned.
    words : polars.DataFrame
        ``text_id``, ``left_px``, ``right_px``, ``top_px``, ``bottom_px``, ``line_index``.
    trials : polars.DataFrame
        ``trial_id``, ``text_id``.
    shown : int
        Texts named per kind of misfit.

    Returns
    -------
    list of str
        One ``"warning: ..."`` per kind of misfit (:data:`FIT_LIMITS`), naming up to ``shown`` texts with their
        numbers. Empty when every layout fits.
    """
    fit = layout_fit(fixations, words, trials)
    lo, hi = FIT_LIMITS["extent_ratio"]
    xlo, xhi = FIT_LIMITS["x_extent_ratio"]
    checks = [
        ((pl.col("n_lines") >= 3) & ~pl.col("extent").is_between(lo, hi),
         lambda r: f"{r['text_id']} (fixations spread over {r['extent']:.2f} x its {r['n_lines']} lines' height)",
         "the fixations' vertical spread does not fit the layout's lines"),
        (pl.col("centre").abs() > FIT_LIMITS["centre_pitches"],
         lambda r: f"{r['text_id']} (fixations centred {abs(r['centre']):.1f} line pitches "
                   f"{'below' if r['centre'] > 0 else 'above'} the text's middle)",
         "the fixations lie off the layout's lines"),
        (~pl.col("x_extent").is_between(xlo, xhi) | (pl.col("x_centre").abs() > FIT_LIMITS["x_centre_share"]),
         lambda r: f"{r['text_id']} (fixations span {r['x_extent']:.2f} x the text's width, centre off by "
                   f"{abs(r['x_centre']):.0%} of it)",
         "the fixations' horizontal spread does not fit the layout's lines"),
        (pl.col("on_words") < FIT_LIMITS["on_words"],
         lambda r: f"{r['text_id']} ({r['on_words']:.0%} of the fixations on a word box)",
         "most fixations are off the text"),
    ]
    out = []
    for condition, describe, what in checks:
        bad = fit.filter(condition.fill_null(False))
        if bad.height:
            named = "; ".join(describe(r) for r in bad.head(shown).iter_rows(named=True))
            more = f" and {bad.height - shown} more" if bad.height > shown else ""
            out.append(f"warning: {what} in {bad.height} of {fit.height} text(s) (median over their trials): "
                       f"{named}{more}. Is the layout the text these recordings show, in the same screen coordinates?")
    return out


def layout_fit(fixations: pl.DataFrame, words: pl.DataFrame, trials: pl.DataFrame) -> pl.DataFrame:
    """Per text, how its trials' fixations sit on its layout (medians over trials; see :data:`FIT_LIMITS`).

    Returns ``text_id``, ``n_lines``, ``extent`` (vertical spread / the lines' spread), ``centre`` (vertical centre
    offset in line pitches, + = below), ``x_extent``, ``x_centre`` (share of the width, + = right), ``on_words``
    (share on a word box), ``trials``, ``fixations``; inputs as :func:`layout_fit_warnings`.
    """
    lines = (words.group_by("text_id", "line_index")
             .agg(((pl.col("top_px") + pl.col("bottom_px")) / 2).mean().alias("mid"), pl.col("left_px").min(),
                  pl.col("right_px").max())
             .group_by("text_id")
             .agg(pl.len().alias("n_lines"), pl.col("mid").min().alias("first"), pl.col("mid").max().alias("last"),
                  pl.col("left_px").min().alias("left"), pl.col("right_px").max().alias("right"),
                  pl.col("mid").sort().diff().median().alias("pitch")))
    has_words = "word_index" in fixations.columns
    # per trial first, then its text: a join of the 2.4 M fixation rows on their String trial id before the
    # group-by cost twice the CPU and 0.3-0.4 GiB at OneStop's scale
    used = ["trial_id", "x_px", "y_px"] + (["word_index"] if has_words else [])
    per_trial = (fixations.lazy().select(used)
                 .group_by("trial_id")
                 .agg(pl.col("y_px").quantile(0.05).alias("y05"), pl.col("y_px").quantile(0.95).alias("y95"),
                      pl.col("y_px").median().alias("y50"), pl.col("x_px").quantile(0.05).alias("x05"),
                      pl.col("x_px").quantile(0.95).alias("x95"),
                      (pl.col("word_index").is_not_null().mean() if has_words else pl.lit(1.0)).alias("on_words"),
                      pl.len().alias("n"))
                 .join(trials.lazy().select("trial_id", "text_id"), on="trial_id")
                 .collect())
    fit = (per_trial.join(lines, on="text_id")
           .with_columns(pl.col("pitch").fill_null((pl.col("last") - pl.col("first")).clip(lower_bound=1.0)))
           .with_columns(((pl.col("y95") - pl.col("y05")) / (pl.col("last") - pl.col("first"))
                          .clip(lower_bound=1.0)).alias("extent"),
                         ((pl.col("y50") - (pl.col("first") + pl.col("last")) / 2) / pl.col("pitch")).alias("centre"),
                         ((pl.col("x95") - pl.col("x05")) / (pl.col("right") - pl.col("left"))).alias("x_extent"),
                         (((pl.col("x95") + pl.col("x05")) - (pl.col("right") + pl.col("left"))) / 2
                          / (pl.col("right") - pl.col("left"))).alias("x_centre"))
           .group_by("text_id").agg(pl.col("n_lines").first(), pl.col("extent", "centre", "x_extent", "x_centre",
                                                                       "on_words").median(),
                                    pl.len().alias("trials"), pl.col("n").sum().alias("fixations"))
           .sort("text_id"))
    return fit
