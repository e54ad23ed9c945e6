"""The ``copco`` recipe: CopCo's published files -> a readgaze dataset folder, in one call.

CopCo (Hollenstein, Barrett & Björnsdóttir, LREC 2022; dyslexia subset: Björnsdóttir, Hollenstein & Barrett,
NoDaLiDa 2023): Danish readers reading speeches paragraph by paragraph. ``DIR`` is laid out as the corpus authors
publish it::

    fixation_reports/FIX_report_PNN.txt   one Data Viewer report per reader, character interest areas, no x/y
    aois/partN_IA_<speech>_<paragraph>_{chars,words}.ias
    labels/participant_stats.csv          dyslexia, score_reading_comprehension_test
    labels/stimuli_and_comp_results.csv   per reader x paragraph: reading time, question, answer (optional)

What the recipe does (each count goes to the QC log and ``manifest.json``):

1. reads the reports (:func:`readgaze.io.charreport.read_char_report`: three-quote labels and double-encoded
   labels repaired and counted);
2. applies the authors' selection: practice (``speechid`` 1327) and title screens (``paragraphid`` -1) dropped,
   fixations under 100 ms dropped, rows without a speech id dropped;
3. builds each paragraph's layout from its ``.ias`` files (:func:`readgaze.io.charlayout.char_layout`): the word
   boxes of the words file; each character IA goes to the word box holding its centre (IAs of the question screen
   left out); the 45 characters no word box holds take their word from the authors' char->word map;
4. gives each fixation its word (the fixated character's) and a position (the centre of that character's box, or
   of the nearest character's off text: ``position_source``);
5. runs the pipeline with the report's interest areas (line assigner ``report``), runs as Data Viewer's
   (an off-text fixation ends a run: ``off_text="dataviewer"``), Danish word frequencies.

Ids: ``trial_id`` is EyeBench's ``unique_trial_id`` (``P01_7905_0``: reader, speech, paragraph), ``text_id`` the
paragraph (``7905_0``), ``item_id`` the speech (EyeBench's item folds hold out speeches), ``word_index`` the corpus's
``wordId`` (the word's rank in the paragraph; a word broken across lines has a second box, from its characters).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import polars as pl

from readgaze.errors import ConfigError, DataError
from readgaze.io.charlayout import char_layout, ias_index
from readgaze.io.charreport import char_positions, char_words, read_char_report
from readgaze.io.ias import read_ias_files
from readgaze.qc import QCLog

__all__ = ["PRACTICE_SPEECH", "TITLE_PARAGRAPH", "MIN_FIXATION_MS", "load_copco", "prepare_copco"]

PRACTICE_SPEECH = 1327
"""The practice speech's id (dropped, as by the corpus authors and EyeBench)."""
TITLE_PARAGRAPH = -1
"""The paragraph id of a speech's title screen (dropped)."""
MIN_FIXATION_MS = 100
"""Fixations shorter than this are dropped (the authors' ``extract_features.py``)."""
IAS_PATTERN = r"part(?P<part>\d+)_IA_(?P<speech_id>-?\d+)_(?P<paragraph_id>-?\d+)_(?P<level>chars|words)\.ias"
"""CopCo's ``.ias`` file names (:func:`readgaze.io.charlayout.ias_index`)."""
_KEYS = ("speechid", "paragraphid")


def _reports(data: Path, readers: Sequence[str] | None) -> list[Path]:
    folder = data / "fixation_reports"
    found = sorted(folder.glob("FIX_report_*.txt"))
    if not found:
        raise ConfigError("no fixation reports (fixation_reports/FIX_report_PNN.txt): is --data CopCo's folder?",
                          file=folder)
    if readers:
        by_name = {p.stem.removeprefix("FIX_report_"): p for p in found}
        unknown = [r for r in readers if r not in by_name]
        if unknown:
            raise ConfigError(f"readers {unknown} have no report; available: {', '.join(sorted(by_name))}",
                              file=folder)
        found = [by_name[r] for r in readers]
    return found


def layouts(data: Path, texts: pl.DataFrame, qc: QCLog) -> tuple[pl.DataFrame, pl.DataFrame, list[str]]:
    """The words and the character layout of the paragraphs in ``texts`` (``speech_id``, ``paragraph_id``), by
    :func:`readgaze.io.charlayout.char_layout` (the authors' char->word map for the 45 characters no word box holds).

    Returns
    -------
    (words, chars, files)
        ``words``: ``text_id``, ``ia_index`` (one per box, in reading order: a word broken across lines has two),
        ``word_index`` (the word's rank: the corpus's ``wordId``), ``word`` (the whole word on each of its boxes),
        the box (px), ``part``, ``speech_id``, ``paragraph_id``. ``chars``: ``text_id``, ``ia_id``, box, ``label``,
        ``word_id`` (the ``ia_index`` of the box the character is in). ``files``: the ``.ias`` files read.
    """
    index = ias_index(data / "aois", IAS_PATTERN).with_columns(
        pl.col("part").cast(pl.Int32), pl.col("speech_id", "paragraph_id").cast(pl.Int64))
    if not index.height:
        raise ConfigError("no interest-area files (aois/partN_IA_<speech>_<paragraph>_{chars,words}.ias): is --data "
                          "CopCo's folder?", file=data / "aois")
    need = texts.join(index, on=["speech_id", "paragraph_id"], how="left")
    twice = need.filter(pl.len().over("speech_id", "paragraph_id", "level") > 1).head(1)
    if twice.height:  # (the practice speech's are: it is dropped before)
        raise DataError(f"speech {twice['speech_id'][0]} paragraph {twice['paragraph_id'][0]} has .ias files in two "
                        f"parts", file=data / "aois")
    missing = need.filter(pl.col("path").is_null())
    qc.add("layout", "trials", "no .ias file for the paragraph", missing.height, action="flagged",
           detail=", ".join(f"{s}_{p}" for s, p in missing.select("speech_id", "paragraph_id").head(5).rows()) or None)
    need = need.filter(pl.col("path").is_not_null()).with_columns(
        pl.concat_str(pl.col("speech_id").cast(pl.String), pl.col("paragraph_id").cast(pl.String),
                      separator="_").alias("text_id"))
    ias = read_ias_files(need["path"].to_list()).join(
        need.select(pl.col("path").alias("file"), "level", "text_id"), on="file", how="left")
    words, chars = char_layout(ias, by="text_id", mapping=_authors_map(data), qc=qc, source=data / "aois")
    keys = need.select("text_id", "part", "speech_id", "paragraph_id").unique("text_id")
    words = words.join(keys, on="text_id", how="left", maintain_order="left")
    return words, chars, need["path"].to_list()


def _merge_files(per_file: QCLog, qc: QCLog) -> None:
    """One QC record per reason over all reports (count summed; detail: the files and lines that have some)."""
    merged: dict[tuple, dict] = {}
    for r in per_file.records:
        key = (r["step"], r["table"], r["reason"], r["action"])
        m = merged.setdefault(key, {"count": 0, "details": []})
        m["count"] += r["count"]
        if r["count"] and r["detail"]:
            m["details"].append(r["detail"] if " " in r["detail"] else f"{r['detail']} {r['count']:,}")
    for (step, table, reason, action), m in merged.items():
        detail = "; ".join(m["details"][:12]) + ("; ..." if len(m["details"]) > 12 else "")
        qc.add(step, table, reason, m["count"], action=action, detail=detail or None)


def _authors_map(data: Path) -> pl.DataFrame | None:
    """``labels/word2char_IA_mapping.csv`` as (``text_id``, ``ia_id``, ``word_rank``: the wordId), or None when absent.
    (It lacks the double-encoded letters: used only for characters that no word box holds.)"""
    path = data / "labels" / "word2char_IA_mapping.csv"
    if not path.exists():
        return None
    table = pl.read_csv(path, columns=["speechId", "paragraphId", "wordId", "char_IA_ids"])
    return (table.select(pl.concat_str(pl.col("speechId").cast(pl.String), pl.col("paragraphId").cast(pl.String),
                                       separator="_").alias("text_id"),
                         pl.col("wordId").cast(pl.Int32).alias("word_rank"),
                         pl.col("char_IA_ids").str.extract_all(r"\d+").alias("ia_id"))
            .explode("ia_id").with_columns(pl.col("ia_id").cast(pl.Int32)).unique(["text_id", "ia_id"], keep="first"))


def load_copco(data: str | Path, readers: Sequence[str] | None = None, *, encoding: str = "utf-8",
               qc: QCLog | None = None):
    """Load CopCo's reports, layouts and labels as canonical tables (see the module docstring).

    Returns
    -------
    (trials, words, fixations, qc, sources)
        Polars DataFrames, the QC log and the files read by kind.
    """
    data = Path(data)
    qc = qc if qc is not None else QCLog()
    paths = _reports(data, readers)
    per_file = QCLog()
    frames = [read_char_report(p, encoding=encoding, keep=_KEYS, qc=per_file) for p in paths]
    _merge_files(per_file, qc)
    fix = pl.concat(frames, how="vertical_relaxed")
    del frames
    fix = fix.with_columns(pl.col("speechid").cast(pl.Int64, strict=False).alias("speech_id"),
                           pl.col("paragraphid").cast(pl.Int64, strict=False).alias("paragraph_id")).drop(*_KEYS)
    step = "select"
    for reason, keep in (("no speech id (not a reading trial)", pl.col("speech_id").is_not_null()),
                         (f"practice speech (speechid {PRACTICE_SPEECH})", pl.col("speech_id") != PRACTICE_SPEECH),
                         (f"title screen (paragraphid {TITLE_PARAGRAPH})", pl.col("paragraph_id") != TITLE_PARAGRAPH),
                         (f"fixation under {MIN_FIXATION_MS} ms (the authors' selection)",
                          pl.col("duration_ms") >= MIN_FIXATION_MS)):
        n = fix.height
        fix = fix.filter(keep.fill_null(False) if "speech id" in reason else keep.fill_null(True))
        qc.add(step, "fixations", reason, n - fix.height)
    fix = fix.with_columns(pl.concat_str("participant_id", pl.col("speech_id").cast(pl.String),
                                         pl.col("paragraph_id").cast(pl.String), separator="_").alias("trial_id"),
                           pl.concat_str(pl.col("speech_id").cast(pl.String), pl.col("paragraph_id").cast(pl.String),
                                         separator="_").alias("text_id"))
    again = fix.group_by("trial_id").agg(pl.col("trial").n_unique().alias("n")).filter(pl.col("n") > 1)
    if again.height:
        raise DataError(f"{again.height} reader x paragraph pairs were read in two trials (e.g. "
                        f"{again['trial_id'][0]}): CopCo shows each paragraph once per reader", file=data)
    texts = fix.select("speech_id", "paragraph_id").unique().sort("speech_id", "paragraph_id")
    words, chars, ias_files = layouts(data, texts, qc)
    fix = char_positions(fix, chars, by=["text_id"], qc=qc)
    fix = char_words(fix, chars, by=["text_id"], qc=qc)
    fix = fix.with_columns(pl.col("report_word_id").cast(pl.Int32).alias("report_ia_index"))
    trials = (fix.group_by("trial_id", maintain_order=True)
              .agg(pl.col("participant_id", "speech_id", "paragraph_id", "text_id", "trial").first())
              .join(words.select("text_id", "part").unique("text_id"), on="text_id", how="left")
              .with_columns(pl.col("speech_id").cast(pl.String).alias("item_id")))
    trials = _reader_labels(data, trials, qc)
    trials = _trial_labels(data, trials, qc)
    # the speech id as a String, as EyeBench's fold tables read by readgaze.splits.published have it
    trials = trials.with_columns(pl.col("speech_id").cast(pl.String))
    words = words.with_columns(pl.col("speech_id").cast(pl.String))
    fix = fix.drop("text_id", "trial", "report_word_id", "participant_id", "speech_id", "paragraph_id")
    sources = {"fixations": [str(p) for p in paths], "aois": ias_files}
    for name in ("participant_stats.csv", "stimuli_and_comp_results.csv"):
        if (data / "labels" / name).exists():
            sources.setdefault("labels", []).append(str(data / "labels" / name))
    return trials, words, fix, qc, sources


def _reader_labels(data: Path, trials: pl.DataFrame, qc: QCLog) -> pl.DataFrame:
    """``dyslexia`` (Boolean) and ``reading_comprehension_skill`` (Float64, null where absent) per reader."""
    path = data / "labels" / "participant_stats.csv"
    if not path.exists():
        qc.add("labels", "trials", "no labels/participant_stats.csv: dyslexia and reading skill null", trials.height,
               action="flagged")
        return trials.with_columns(pl.lit(None, pl.Boolean).alias("dyslexia"),
                                   pl.lit(None, pl.Float64).alias("reading_comprehension_skill"))
    stats = pl.read_csv(path, infer_schema=False)
    for column in ("subj", "dyslexia", "score_reading_comprehension_test"):
        if column not in stats.columns:
            raise ConfigError(f"missing column {column}", file=path)
    bad = stats.filter(~pl.col("dyslexia").is_in(["yes", "no"]))
    if bad.height:
        raise DataError(f"dyslexia {bad['dyslexia'][0]!r}: expected yes or no", file=path, column="dyslexia",
                        row=int(stats["subj"].to_list().index(bad["subj"][0])) + 2)
    table = stats.select(pl.col("subj").alias("participant_id"), (pl.col("dyslexia") == "yes").alias("dyslexia"),
                         pl.col("score_reading_comprehension_test").str.strip_chars().replace("", None)
                         .cast(pl.Float64).alias("reading_comprehension_skill"))
    out = trials.join(table, on="participant_id", how="left", maintain_order="left")
    qc.add("labels", "trials", "reader not in participant_stats.csv: labels null",
           out["dyslexia"].null_count(), action="flagged")
    qc.add("labels", "trials", "no reading comprehension score for the reader: reading_comprehension_skill null",
           out["reading_comprehension_skill"].null_count(), action="flagged")
    return out


def _trial_labels(data: Path, trials: pl.DataFrame, qc: QCLog) -> pl.DataFrame:
    """``reading_time_ms`` (the paragraph screen's duration), ``question``, ``is_correct`` from
    ``stimuli_and_comp_results.csv`` (null where the reader or paragraph is absent, or no question was asked)."""
    path = data / "labels" / "stimuli_and_comp_results.csv"
    empty = [pl.lit(None, pl.Float64).alias("reading_time_ms"), pl.lit(None, pl.String).alias("question"),
             pl.lit(None, pl.Boolean).alias("is_correct")]
    if not path.exists():
        return trials.with_columns(empty)
    table = pl.read_csv(path, infer_schema_length=None).select(
        pl.col("Session_Name_").alias("participant_id"), pl.col("speechid").alias("speech_id"),
        pl.col("paragraphid").alias("paragraph_id"), pl.col("SENTENCE_RT").cast(pl.Float64).alias("reading_time_ms"),
        pl.when(pl.col("QUESTION_ACCURACY") >= 0).then(pl.col("question")).alias("question"),
        pl.when(pl.col("QUESTION_ACCURACY") >= 0).then(pl.col("QUESTION_ACCURACY") == 1).alias("is_correct"))
    out = trials.join(table, on=["participant_id", "speech_id", "paragraph_id"], how="left", maintain_order="left")
    qc.add("labels", "trials", "not in stimuli_and_comp_results.csv: reading_time_ms, question, is_correct null",
           out["reading_time_ms"].null_count(), action="flagged")
    return out


def prepare_copco(data: str | Path, *, out: str | Path, readers: Sequence[str] | None = None,
                  encoding: str = "utf-8", format: str = "parquet", force: bool = False,
                  surprisal_model: str | None = None, first_pass_from_first_line: bool = False, progress=None):
    """``readgaze prep copco``: CopCo's files -> a dataset folder (see the module docstring).

    Parameters
    ----------
    data : path
        CopCo's folder (``fixation_reports/``, ``aois/``, ``labels/``).
    out : path
        The dataset folder.
    readers : list of str, optional
        Reader ids (``P01``); default every report.
    first_pass_from_first_line : bool
        Leave out of first-pass measures the fixations a trial makes on a later line before its first fixation on
        the first line (:func:`readgaze.data_prep.screens.early_later_line`); off by default, so the measures stay
        comparable with Data Viewer's and the authors'. The trials are flagged either way.

    Returns
    -------
    readgaze.data_prep.api.PrepResult
    """
    from contextlib import nullcontext

    from readgaze.data_prep.api import PrepResult
    from readgaze.data_prep.dataset import DatasetWriter, check_target
    from readgaze.data_prep.pipeline import prepare as run_pipeline
    from readgaze.data_prep.screens import flag_early_later_line

    step = progress or (lambda name: nullcontext())
    check_target(out, force)
    with step("load"):
        trials, words, fixations, qc, sources = load_copco(data, readers, encoding=encoding)
        trials, fixations = flag_early_later_line(trials, fixations, words, qc, leave_out=first_pass_from_first_line)
    notes = ["positions are the centres of the fixated (or nearest) character's interest-area box: the reports have "
             "no fixation coordinates; lines and words come from the report's interest areas (line assigner "
             "'report'), landing positions are at character resolution"]
    config = {"mode": "copco", "line_assigner": "report", "off_text": "dataviewer", "language": "da",
              "readers": list(readers) if readers else None, "min_fixation_ms": MIN_FIXATION_MS,
              "practice_speech": PRACTICE_SPEECH, "title_paragraph": TITLE_PARAGRAPH, "format": format,
              "first_pass_from_first_line": first_pass_from_first_line, "surprisal_model": surprisal_model}
    from readgaze.corrections import log_path, read_log

    corrections = read_log(out) if log_path(out).is_file() else None  # a reviewer's log (readgaze review): kept
    if corrections is not None:
        sources["corrections"] = [str(log_path(out))]
    with DatasetWriter(out, force=force, fmt=format) as writer:
        prepared = run_pipeline(trials, words, fixations, qc, line_assigner="report", language="da",
                                surprisal_model=surprisal_model, progress=progress, sink=writer.put,
                                off_text="dataviewer", corrections=corrections)
        with step("write"):
            written = writer.finish(prepared, sources=sources, config=config, notes=notes)
    return PrepResult(out=written, format=format, prepared=prepared, notes=notes, config=config)
