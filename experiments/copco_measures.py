"""readgaze's word measures on CopCo against the corpus authors' own (``extracted_features/PNN.csv``), word by word.

    python experiments/copco_measures.py --data ../shared/data/copco [--readers P01 P02] [--dataset DS] [--out MD]

Builds the dataset with the ``copco`` recipe (or reads ``--dataset``), joins each reader's published features on
(trial, ``wordId``) and reports, per measure, the exact agreement on all words and on *untouched* words (no full
stop, only ASCII letters: the words the authors' two bugs cannot reach). Every disagreement is attributed to the
first cause that explains it:

1. ``full_stop``: the word holds a full stop that the reader fixated in that trial (the authors' code treats a
   fixation whose label is ``"."`` as off text);
2. ``lost_letters``: the word lost letters in the authors' char->word map (double-encoded labels) and one of them
   was fixated;
3. ``first_run_across_off_ia`` (gaze): readgaze's gaze duration with an off-IA fixation *not* ending the run
   (``off_text="skip"``) equals theirs: their first pass continued across it, Data Viewer's does not;
4. ``their_go_past`` (go-past): their rule (:func:`their_go_past`: the path is followed only when an off-IA
   fixation ends it; when a fixation to the right ends it, their value is the first pass) reproduces their value,
   where readgaze computes the standard regression-path duration (every fixation until a word to the right);
   ``their_go_past_truncated``: their value is not their rule's but is a partial sum of readgaze's regression path
   (their path stopped early, by a rule not identified here);
5. ``unexplained``.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import polars as pl

PAIRS = {"first_fixation": ("first_fixation_duration_ms", "word_first_fix_dur"),
         "gaze": ("gaze_duration_ms", "word_first_pass_dur"),
         "go_past": ("regression_path_duration_ms", "word_go_past_time"),
         "total": ("total_fixation_duration_ms", "word_total_fix_dur"),
         "count": ("fixation_count", "number_of_fixations"),
         "not_fixated": ("_not_fixated", "_their_not_fixated")}
CAUSES = ("full_stop", "lost_letters", "first_run_across_off_ia", "their_go_past", "their_go_past_truncated",
          "unexplained")


def their_go_past(fixations: pl.DataFrame) -> pl.DataFrame:
    """The authors' go-past per (trial, word), as their values show it: from the word's first fixation, the
    following fixations while each is on the word or an earlier word; when the first fixation beyond is off every
    IA (or the trial ends), the sum of them all (a regression path cut at the off-IA fixation); when it is on a word
    to the right, only the first pass (the first fixation and those right after it on the same word): regressions
    are not followed."""
    fx = fixations.sort("trial_id", "fixation_index").with_columns(pl.int_range(pl.len()).over("trial_id").alias("i"))
    first = (fx.filter(pl.col("word_index").is_not_null()).group_by("trial_id", "word_index")
             .agg(pl.col("i").min().alias("start")))
    rows = fx.select("trial_id", "i", pl.col("word_index").alias("w2"), "duration_ms")
    joined = first.join(rows, on="trial_id").filter(pl.col("i") >= pl.col("start"))
    ends = (pl.col("w2").is_null() | (pl.col("w2") > pl.col("word_index"))) & (pl.col("i") > pl.col("start"))
    stop = (joined.filter(ends).group_by("trial_id", "word_index")
            .agg(pl.col("i").min().alias("stop"), pl.col("w2").sort_by("i").first().is_not_null().alias("right")))
    off_run = (pl.col("w2") != pl.col("word_index")).fill_null(True) & (pl.col("i") > pl.col("start"))
    first_pass_end = (joined.filter(off_run).group_by("trial_id", "word_index").agg(pl.col("i").min().alias("fp")))
    joined = (joined.join(stop, on=["trial_id", "word_index"], how="left")
              .join(first_pass_end, on=["trial_id", "word_index"], how="left")
              .filter(pl.col("stop").is_null() | (pl.col("i") < pl.col("stop")))
              .filter(~pl.col("right").fill_null(False) | pl.col("fp").is_null() | (pl.col("i") < pl.col("fp"))))
    return joined.group_by("trial_id", "word_index").agg(pl.col("duration_ms").sum().alias("their_rule_go_past"))


def path_prefixes(fixations: pl.DataFrame) -> pl.DataFrame:
    """Per (trial, word), every partial sum of the standard regression path (the on-text fixations from the word's
    first fixation up to, not including, the first fixation on a word to its right): ``prefix_sums`` (List)."""
    fx = (fixations.filter(pl.col("word_index").is_not_null()).sort("trial_id", "fixation_index")
          .with_columns(pl.int_range(pl.len()).over("trial_id").alias("i")))
    first = fx.group_by("trial_id", "word_index").agg(pl.col("i").min().alias("start"))
    rows = fx.select("trial_id", "i", pl.col("word_index").alias("w2"), "duration_ms")
    joined = first.join(rows, on="trial_id").filter(pl.col("i") >= pl.col("start"))
    stop = (joined.filter(pl.col("w2") > pl.col("word_index")).group_by("trial_id", "word_index")
            .agg(pl.col("i").min().alias("stop")))
    joined = (joined.join(stop, on=["trial_id", "word_index"], how="left")
              .filter(pl.col("stop").is_null() | (pl.col("i") < pl.col("stop"))).sort("trial_id", "word_index", "i"))
    return joined.group_by("trial_id", "word_index").agg(pl.col("duration_ms").cum_sum().alias("prefix_sums"))


def compare(ds: Path, data: Path, readers: list[str]) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    from readgaze.measures import compute_word_measures

    words = pl.read_parquet(ds / "words.parquet")
    fixations = pl.read_parquet(ds / "fixations.parquet")
    trials = pl.read_parquet(ds / "trials.parquet")
    ours = pl.read_parquet(ds / "word_measures.parquet")
    skip = compute_word_measures(fixations, words, trials, off_text="skip").collect().select(
        "trial_id", "word_index", pl.col("gaze_duration_ms").alias("gaze_skip"))
    gp = their_go_past(fixations).join(path_prefixes(fixations), on=["trial_id", "word_index"], how="full",
                                       coalesce=True)
    feats = []
    for r in readers:
        path = data / "extracted_features" / f"{r}.csv"
        if path.exists():
            feats.append(pl.read_csv(path, schema_overrides={"char_IA_ids": pl.String}).with_columns(
                pl.lit(r).alias("participant_id")))
    theirs = pl.concat(feats).with_columns(
        pl.concat_str("participant_id", pl.col("speechId").cast(pl.String), pl.col("paragraphId").cast(pl.String),
                      separator="_").alias("trial_id"),
        pl.col("wordId").cast(pl.Int32).alias("word_index"),
        pl.col("char_IA_ids").str.extract_all(r"\d+").list.len().alias("their_chars"),
        (pl.col("number_of_fixations") == 0).alias("_their_not_fixated"))
    # the fixated characters per (trial, word): full stops, and characters the authors' map lost
    layout = (words.unique(["text_id", "word_index"], keep="first", maintain_order=True)  # a word on two lines: 2 boxes
              .select("text_id", "word_index", "word", pl.col("word").str.len_chars().alias("our_chars")))
    on_stop = (fixations.filter(pl.col("char_label") == ".").select("trial_id", "word_index").unique()
               .with_columns(pl.lit(True).alias("stop_fixated")))
    non_ascii = (fixations.filter(pl.col("word_index").is_not_null() & ~pl.col("char_label").fill_null("")
                                  .str.contains(r"^[\x00-\x7f]*$"))
                 .select("trial_id", "word_index").unique().with_columns(pl.lit(True).alias("lost_fixated")))
    joined = (theirs.join(ours, on=["trial_id", "word_index"], how="left")
              .join(trials.select("trial_id", "text_id"), on="trial_id", how="left")
              .join(layout, on=["text_id", "word_index"], how="left")
              .join(skip, on=["trial_id", "word_index"], how="left")
              .join(gp, on=["trial_id", "word_index"], how="left")
              .join(on_stop, on=["trial_id", "word_index"], how="left")
              .join(non_ascii, on=["trial_id", "word_index"], how="left")
              .with_columns((pl.col("fixation_count").fill_null(0) == 0).alias("_not_fixated"),
                            pl.col("stop_fixated", "lost_fixated").fill_null(False),
                            (~pl.col("word").str.contains(".", literal=True)
                             & pl.col("word").str.contains(r"^[\x00-\x7f]*$")).alias("untouched")))
    missing = joined.filter(pl.col("word").is_null()).height
    if missing:
        print(f"warning: {missing} feature rows have no word in readgaze's dataset", file=sys.stderr)
    rows, causes = [], []
    for name, (a, b) in PAIRS.items():
        x, y = pl.col(a).cast(pl.Float64), pl.col(b).cast(pl.Float64)
        same = (x == y) | (x.is_null() & y.is_null())
        if name in ("total",):  # they write NaN where readgaze writes 0 (never fixated)
            same = same | ((x == 0) & y.is_null())
        j = joined.with_columns(same.fill_null(False).alias("same"))
        u = j.filter("untouched")
        rows.append({"measure": name, "words": j.height, "exact": j["same"].mean(), "untouched_words": u.height,
                     "untouched_exact": u["same"].mean(), "differ": j.height - j["same"].sum()})
        cause = (pl.when(pl.col("stop_fixated")).then(pl.lit("full_stop"))
                 .when(pl.col("lost_fixated") & (pl.col("their_chars") < pl.col("our_chars")))
                 .then(pl.lit("lost_letters")))
        if name == "gaze":
            cause = cause.when(pl.col("gaze_skip").cast(pl.Float64) == y).then(pl.lit("first_run_across_off_ia"))
        if name == "go_past":
            cause = (cause.when(pl.col("their_rule_go_past").cast(pl.Float64) == y).then(pl.lit("their_go_past"))
                     .when(pl.col("prefix_sums").list.contains(y)).then(pl.lit("their_go_past_truncated")))
        counts = (j.filter(~pl.col("same")).with_columns(cause.otherwise(pl.lit("unexplained")).alias("cause"))
                  .group_by("cause").len())
        causes.append({"measure": name, **{c: 0 for c in CAUSES},
                       **dict(zip(counts["cause"].to_list(), counts["len"].to_list()))})
    runs = joined.filter(pl.col("gaze_duration_ms").cast(pl.Float64).eq_missing(pl.col("word_first_pass_dur"))
                         & pl.col("gaze_skip").cast(pl.Float64).ne_missing(pl.col("word_first_pass_dur")))
    print(f"gaze: {runs.height:,} words agree only because an off-IA fixation ends a run (off_text='dataviewer'; "
          f"{runs.filter('untouched').height:,} of them untouched)", file=sys.stderr)
    return pl.DataFrame(rows), pl.DataFrame(causes), joined


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data", default="../shared/data/copco")
    p.add_argument("--readers", nargs="+", default=None, help="default: every reader with published features")
    p.add_argument("--dataset", default=None, help="a dataset built by readgaze prep copco (default: built now)")
    p.add_argument("--out", default=None, help="write the tables as Markdown here")
    args = p.parse_args(argv)
    data = Path(args.data)
    readers = args.readers or sorted(f.stem for f in (data / "extracted_features").glob("P*.csv"))
    ds = Path(args.dataset) if args.dataset else None
    if ds is None:
        from readgaze.data_prep.copco import prepare_copco

        ds = Path(tempfile.mkdtemp()) / "copco"
        prepare_copco(data, out=ds, readers=readers)
    agreement, causes, _ = compare(ds, data, readers)
    with pl.Config(tbl_rows=20, tbl_cols=20, float_precision=5, tbl_width_chars=200):
        text = f"readers: {len(readers)}\n\n{agreement}\n\n{causes}\n"
    print(text)
    if args.out:
        Path(args.out).write_text(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
