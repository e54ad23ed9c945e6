"""Trials of an ``.asc`` recording: which recording block or message span each row belongs to.

Default: one trial per recording block, named by its ``TRIALID`` message (the last one between
the previous block and this ``START``, else the first inside the block), else ``block_<i>``.
With ``trial_message`` (a regex on message text), each matching message starts a trial inside
its block at ``max(message time, START)``; rows before the first one form ``<id>_pre``, which is
kept only when it holds data. Repeated ids get ``_block<i>`` appended, with a warning.
"""

from __future__ import annotations

import polars as pl

from readgaze.io.asc_scan import AscScan, Block


def segments(scan: AscScan, messages: pl.DataFrame, trial_message: str | None, name: str,
              warnings: list[str]) -> dict[int, pl.DataFrame]:
    """Per block: trial start times (``seg_start_ms``, the first is -inf), ``trial_id``, ``start_line``."""
    pattern = trial_message or r"^TRIALID\s+(.+)$"
    hits = messages.filter(pl.col("text").str.contains(pattern)).with_columns(
        label=pl.col("text").str.extract(pattern, 1).fill_null(pl.col("text")).str.strip_chars())
    if trial_message is not None and not hits.height:
        seen = messages.filter(~pl.col("text").str.starts_with("!"))["text"].unique(maintain_order=True).head(5)
        warnings.append(f"{name}: trial_message {trial_message!r} matches no message, so each recording block "
                        f"is one trial; messages seen include {', '.join(repr(t[:40]) for t in seen)}")
    out, seen = {}, {}
    for prev, block in zip([None, *scan.blocks[:-1]], scan.blocks):
        lo = prev.last_line if prev else 0
        before = hits.filter(pl.col("line") > lo, pl.col("line") < block.start_line)
        inside = hits.filter(pl.col("block") == block.index)
        if trial_message is None:
            pick = before.tail(1) if before.height else inside.head(1)
            ids = pick["label"].to_list() or [f"block_{block.index}"]
            frame = pl.DataFrame({"seg_start_ms": [float("-inf")], "trial_id": ids[:1],
                                  "start_line": [block.start_line]})
        else:
            marks = pl.concat([before, inside]).with_columns(
                seg_start_ms=pl.max_horizontal(pl.col("time_ms"), pl.lit(block.start_ms))).sort("seg_start_ms")
            pre_id = f"{marks['label'][0] if marks.height else f'block_{block.index}'}_pre"
            frame = pl.concat([pl.DataFrame({"seg_start_ms": [float("-inf")], "trial_id": [pre_id],
                                             "start_line": [block.start_line]}),
                               marks.select("seg_start_ms", trial_id="label", start_line=pl.col("line"))],
                              how="vertical_relaxed")
        out[block.index] = _unique_ids(frame, block, seen, name, warnings)
    return out


def _unique_ids(frame: pl.DataFrame, block: Block, seen: dict, name: str, warnings: list[str]) -> pl.DataFrame:
    ids = []
    for tid in frame["trial_id"].to_list():
        if tid in seen:
            new, n = f"{tid}_block{block.index}", 2
            while new in seen:
                new, n = f"{tid}_block{block.index}_{n}", n + 1
            warnings.append(f"{name} line {block.start_line}: trial id {tid!r} repeats (first in block "
                            f"{seen[tid]}); renamed {new!r}")
            tid = new
        seen[tid] = block.index
        ids.append(tid)
    return frame.with_columns(trial_id=pl.Series(ids, dtype=pl.String), start_line=pl.col("start_line").cast(pl.Int64))


def assign_trials(frame: pl.DataFrame, segments: pl.DataFrame, time_column: str) -> pl.DataFrame:
    """Give every row the trial whose start is the last one at or before its time."""
    if frame.height == 0:
        return frame.with_columns(trial_id=pl.lit(None, dtype=pl.String))
    keyed = frame.with_row_index("_i").sort(time_column)
    joined = keyed.join_asof(segments.select("seg_start_ms", "trial_id"), left_on=time_column,
                             right_on="seg_start_ms", strategy="backward")
    return joined.sort("_i").drop("_i", "seg_start_ms")


def trials_table(scan, segments, eyes, sample_counts, fixations) -> pl.DataFrame:
    """One row per trial with its block, lines, rate, eyes, eye used and sample/fixation counts.

    ``sample_counts``: ``trial_id, n_samples`` per trial (:meth:`readgaze.io.asc_samples.SampleSink.sample_counts`).
    """
    rows = []
    for block in scan.blocks:
        for seg_start, tid, line in segments[block.index].iter_rows():
            rows.append({"trial_id": tid, "block": block.index, "start_line": line, "end_line": block.last_line,
                         "sampling_rate_hz": block.sampling_rate_hz, "eyes": " ".join(block.eyes),
                         "eye": eyes[block.index], "pre": seg_start == float("-inf") and tid.endswith("_pre")})
    trials = pl.DataFrame(rows).with_columns(pl.col("block").cast(pl.Int32))
    n_s = sample_counts.select("trial_id", "n_samples")
    n_f = fixations.filter(pl.col("drop_reason").is_null()).group_by("trial_id").agg(n_fixations=pl.len())
    trials = trials.join(n_s, on="trial_id", how="left").join(n_f, on="trial_id", how="left").with_columns(
        pl.col("n_samples", "n_fixations").fill_null(0).cast(pl.Int64))
    n_any = fixations.group_by("trial_id").len()
    keep = ~pl.col("pre") | (pl.col("n_samples") > 0) | pl.col("trial_id").is_in(n_any["trial_id"].implode())
    return trials.filter(keep).drop("pre")


def assign_messages(messages: pl.DataFrame, segments: dict[int, pl.DataFrame]) -> pl.DataFrame:
    """Messages inside a block get its trial by time; messages between blocks keep a null trial."""
    parts = [messages.filter(pl.col("block").is_null()).with_columns(trial_id=pl.lit(None, dtype=pl.String))]
    for block, seg in segments.items():
        inside = messages.filter(pl.col("block") == block).with_columns(pl.col("time_ms").fill_null(float("-inf")))
        parts.append(assign_trials(inside, seg, "time_ms"))
    return pl.concat(parts, how="vertical_relaxed").sort("line")


TRIAL_VAR_RE = r"^!V TRIAL_VAR\s+(\S+)\s*(.*)$"


def with_trial_variables(trials: pl.DataFrame, messages: pl.DataFrame, scan: AscScan,
                         segments: dict[int, pl.DataFrame]) -> pl.DataFrame:
    """Add one String column per ``!V TRIAL_VAR name value`` message (Data Viewer trial variables).

    A message inside a block belongs to the trial running at its time; one between blocks (Experiment
    Builder writes them after ``END``) to the last trial of the block before it. A later value of the
    same variable in one trial replaces an earlier one. A name that is already a column gets the prefix
    ``trial_var_``. SR Research, *EyeLink Data Viewer User's Manual* 4.2, "Trial variables" (``!V``
    commands).
    """
    tv = messages.filter(pl.col("text").str.contains(r"^!V TRIAL_VAR\s")).with_columns(
        g=pl.col("text").str.extract_groups(TRIAL_VAR_RE))
    if not tv.height:
        return trials
    last = pl.DataFrame({"_last": [b.last_line for b in scan.blocks],
                         "_trial": [segments[b.index]["trial_id"][-1] for b in scan.blocks]},
                        schema={"_last": pl.Int64, "_trial": pl.String})
    tv = tv.sort("line").join_asof(last, left_on="line", right_on="_last", strategy="backward")
    tv = tv.select(trial_id=pl.coalesce("trial_id", "_trial"), name=pl.col("g").struct.field("1"),
                   value=pl.col("g").struct.field("2").str.strip_chars()).drop_nulls(["trial_id", "name"])
    if not tv.height:
        return trials
    wide = tv.unique(["trial_id", "name"], keep="last", maintain_order=True).pivot(
        "name", index="trial_id", values="value")
    wide = wide.rename({c: f"trial_var_{c}" for c in wide.columns if c != "trial_id" and c in trials.columns})
    return trials.join(wide, on="trial_id", how="left")


def check_trial_results(messages: pl.DataFrame, name: str, warnings: list[str], qc) -> None:
    """Flag a file that ends inside a trial: Experiment Builder closes each trial's messages with ``TRIAL_RESULT``
    (its ``!V TRIAL_VAR`` lines come before it), so where a file uses ``TRIAL_RESULT`` and trial-variable lines follow
    the last one, the file stops before that trial's end (cut short at a line end?). The variables read are kept; a
    warning and a QC record (``trials``, flagged) name the first such line. A file without ``TRIAL_RESULT`` is not
    checked."""
    results = messages.filter(pl.col("text").str.contains(r"^TRIAL_RESULT\b"))["line"]
    if not results.len():
        return
    after = messages.filter(pl.col("text").str.contains(r"^!V TRIAL_VAR\s"), pl.col("line") > results.max())
    if after.height:
        first = int(after["line"][0])
        warnings.append(f"{name} line {first}: {after.height} trial-variable line(s) after the last TRIAL_RESULT and "
                        "no TRIAL_RESULT closing them: the file ends inside a trial (cut short?); the variables read "
                        "are kept")
        qc.add("read_asc", "trials", "file ends inside a trial (trial variables after the last TRIAL_RESULT)", 1,
               action="flagged", detail=f"line {first}")
