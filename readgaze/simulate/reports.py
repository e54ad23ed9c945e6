"""Write a simulated corpus as OneStop's Data Viewer reports (fixation report + IA report).

The files copy the format of OneStop's released reports (Berzak et al., OneStop Eye Movements): comma separated,
``.`` for missing values (an empty field, as pandas wrote NaN, for ``NEXT_SAC_AMPLITUDE`` after a
trial's last fixation and for ``entity_type``),
``True``/``False`` booleans, integer pixel and millisecond values, ``IA_ID`` 0-based in the IA
report and ``CURRENT_FIX_INTEREST_AREA_ID`` 1-based (``.`` off words) in the fixation report,
spans as ``"[(4,44)]"`` (end exclusive). Both reports carry the sample's columns in its order,
then the full release's ``CURRENT_FIX_INTEREST_AREA_INDEX`` (1-based, 0 off words; fixation report
only), ``onestopqa_question_id``, ``practice_trial``, ``list_number``, ``same_critical_span`` and
``auxiliary_span_type`` (IA report only).

As Data Viewer does, the interest area of a fixation is the word box containing its recorded
(drifted) position, not the word the reader aimed at; IA measures follow from those hits.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl

from readgaze.simulate._ia_measures import ia_measures
from readgaze.simulate.corpus import PX_PER_DEG, SimCorpus

_FUNCTION_POS = {**dict.fromkeys(("the", "a", "an", "this", "that", "these", "those", "some", "any", "no",
                                  "every", "each", "all"), ("DET", "DT", "det")),
                 **dict.fromkeys(("of", "in", "to", "for", "on", "with", "at", "by", "from", "about", "as",
                                  "into", "over", "after", "under", "between", "through"), ("ADP", "IN", "prep")),
                 **dict.fromkeys(("and", "but", "or", "nor"), ("CCONJ", "CC", "cc")),
                 **dict.fromkeys(("i", "you", "he", "she", "it", "we", "they", "me", "him", "her", "us", "them",
                                  "my", "your", "his", "its", "our", "their"), ("PRON", "PRP", "nsubj")),
                 **dict.fromkeys(("is", "are", "was", "were", "be", "been", "being", "has", "have", "had", "do",
                                  "does", "did", "will", "would", "can", "could", "should", "may", "might",
                                  "must"), ("AUX", "VBZ", "aux")),
                 "not": ("PART", "RB", "neg"), "if": ("SCONJ", "IN", "mark"), "when": ("SCONJ", "WRB", "advmod")}
_REDUCED = {"NOUN": "NOUN", "PROPN": "NOUN", "VERB": "VERB", "ADJ": "ADJ", "ADV": "UNKNOWN"}


def _pos(word: str) -> tuple[str, str, str]:
    w = word.strip(".,").lower()
    if w in _FUNCTION_POS:
        return _FUNCTION_POS[w]
    if w.endswith("ly"):
        return "ADV", "RB", "advmod"
    if w.endswith("ing"):
        return "VERB", "VBG", "xcomp"
    if w.endswith("ed"):
        return "VERB", "VBD", "ROOT"
    if w.endswith(("ous", "ful", "able", "ive", "al")):
        return "ADJ", "JJ", "amod"
    return ("NOUN", "NNS", "pobj") if w.endswith("s") and len(w) > 3 else ("NOUN", "NN", "dobj")


def _word_features(corpus: SimCorpus) -> pl.DataFrame:
    rows = []
    for text_id, par in corpus.paragraphs.items():
        pos = [_pos(w) for w in par.words]
        n = par.n_words
        idx = np.arange(n)
        head = np.clip(np.where(np.isin([p[0] for p in pos], ["DET", "ADJ", "ADP"]), idx + 1, idx - 1), 0, n - 1)
        neg_log2 = (9.0 - par.zipf) * np.log2(10.0)
        rows.append(pl.DataFrame({
            "text_id": [text_id] * n, "IA_ID": idx,
            "word_length": [len(w) for w in par.words],
            "word_length_no_punctuation": [len(w.strip(".,")) for w in par.words],
            "wordfreq_frequency": neg_log2, "subtlex_frequency": neg_log2 + 0.1 * np.sin(idx),
            "gpt2_surprisal": par.surprisal_bits,
            "universal_pos": [p[0] for p in pos], "ptb_pos": [p[1] for p in pos],
            "dependency_relation": [p[2] for p in pos], "morphological_features": ["[]"] * n,
            "entity_type": pl.Series([None] * n, dtype=pl.String),
            "Reduced_POS": [_REDUCED.get(p[0], "FUNC") for p in pos],
            "head_word_index": head, "distance_to_head": head - idx,
        }))
    return pl.concat(rows)


def _trial_columns(corpus: SimCorpus) -> pl.DataFrame:
    """Trial-level report columns, one row per trial (keyed by the canonical ``trial_id``, ``text_id``)."""
    t = corpus.trials
    span = lambda a, b: pl.format("[({},{})]", pl.col(a).list.first(), pl.col(b).list.first())  # noqa: E731
    same = [sum(1 for o in corpus.paragraphs[tid].critical_spans if o == corpus.paragraphs[tid].critical_spans[q]) - 1
            for tid, q in zip(t["text_id"], t["onestopqa_question_id"])]
    return t.select(
        pl.col("participant_id"), (pl.col("trial_index") + 9).alias("TRIAL_INDEX"),
        pl.col("article_id"), pl.format("Simulated article {}", pl.col("article_id")).alias("article_title"),
        span("critical_span_start_index", "critical_span_end_index").alias("critical_span_indices"),
        pl.col("article_batch"),
        span("distractor_span_start_index", "distractor_span_end_index").alias("distractor_span_indices"),
        (pl.col("reading_goal") == "information_seeking").alias("question_preview"), pl.col("difficulty_level"),
        pl.col("paragraph_id"), pl.col("question"), pl.col("repeated_reading").alias("repeated_reading_trial"),
        pl.col("trial_index"), pl.col("selected_answer"), pl.col("is_correct"),
        pl.col("critical_span_start_index").list.first().alias("aspan_ind_start"),
        pl.col("critical_span_end_index").list.first().alias("aspan_ind_end"),
        pl.col("distractor_span_start_index").list.first().alias("dspan_ind_start"),
        pl.col("distractor_span_end_index").list.first().alias("dspan_ind_end"),
        pl.format("{}_{}_{}_{}", "article_batch", "article_id", "paragraph_id", "difficulty_level")
        .alias("unique_paragraph_id"),
        pl.format("{}_{}_{}_{}_{}_r0", "participant_id", "article_batch", "article_id", "paragraph_id",
                  "difficulty_level").alias("unique_trial_id"), pl.col("trial_id"), pl.col("text_id"),
        pl.col("onestopqa_question_id"), pl.col("practice").alias("practice_trial"),
        pl.col("participant_id").str.extract(r"^l(\d+)_").cast(pl.Int32).alias("list_number"),
        pl.Series("same_critical_span", same, dtype=pl.Int32))


def _hits(corpus: SimCorpus) -> np.ndarray:
    """0-based word box containing each recorded fixation (-1 off words), per trial's text."""
    fx = corpus.fixations.join(corpus.trials.select("trial_id", "text_id"), on="trial_id", maintain_order="left")
    hit = np.full(fx.height, -1, dtype=np.int64)
    x, y, text = fx["x_px"].to_numpy(), fx["y_px"].to_numpy(), fx["text_id"].to_numpy()
    for text_id, layout in corpus.layouts.items():
        sel = np.flatnonzero(text == text_id)
        if sel.size == 0:
            continue
        w = layout.words
        inside = ((w["left_px"].to_numpy() <= x[sel, None]) & (x[sel, None] < w["right_px"].to_numpy())
                  & (w["top_px"].to_numpy() <= y[sel, None]) & (y[sel, None] < w["bottom_px"].to_numpy()))
        hit[sel] = np.where(inside.any(axis=1), inside.argmax(axis=1), -1)
    return hit


def _fixation_report(corpus: SimCorpus, hit: np.ndarray, trial_cols: pl.DataFrame) -> pl.DataFrame:
    labels = corpus.words.select("text_id", pl.col("ia_index").cast(pl.Int64).alias("hit"), "word")
    fx = corpus.fixations.join(corpus.trials.select("trial_id", "text_id"), on="trial_id", maintain_order="left")
    fx = fx.with_columns(pl.Series("hit", hit)).join(labels, on=["text_id", "hit"], how="left", maintain_order="left")
    dx = pl.col("x_px").shift(-1).over("trial_id") - pl.col("x_px")
    dy = pl.col("y_px").shift(-1).over("trial_id") - pl.col("y_px")
    direction = (pl.when(dx.is_null()).then(None).when(dx.abs() >= dy.abs())
                 .then(pl.when(dx >= 0).then(pl.lit("RIGHT")).otherwise(pl.lit("LEFT")))
                 .otherwise(pl.when(dy > 0).then(pl.lit("DOWN")).otherwise(pl.lit("UP"))))
    end = pl.col("start_ms") + pl.col("duration_ms") - 1
    rep = fx.select(
        pl.col("trial_id"),
        pl.col("duration_ms").cast(pl.Int64).alias("CURRENT_FIX_DURATION"),
        end.cast(pl.Int64).alias("CURRENT_FIX_END"),
        (pl.col("fixation_index") + 1).cast(pl.Int64).alias("CURRENT_FIX_INDEX"),
        pl.when(pl.col("hit") >= 0).then(pl.col("hit") + 1).alias("CURRENT_FIX_INTEREST_AREA_ID"),
        pl.col("word").alias("CURRENT_FIX_INTEREST_AREA_LABEL"),
        pl.col("start_ms").cast(pl.Int64).alias("CURRENT_FIX_START"),
        pl.col("x_px").cast(pl.Int64).alias("CURRENT_FIX_X"), pl.col("y_px").cast(pl.Int64).alias("CURRENT_FIX_Y"),
        pl.lit("Right").alias("EYE_TRACKED"),
        ((dx ** 2 + dy ** 2).sqrt() / PX_PER_DEG).round(2).alias("NEXT_SAC_AMPLITUDE"),
        direction.alias("NEXT_SAC_DIRECTION"),
        (pl.col("hit") + 1).alias("CURRENT_FIX_INTEREST_AREA_INDEX"),
    )
    rep = rep.join(trial_cols, on="trial_id", maintain_order="left")
    sample_order = ["participant_id", "TRIAL_INDEX", "CURRENT_FIX_DURATION", "CURRENT_FIX_END", "CURRENT_FIX_INDEX",
                    "CURRENT_FIX_INTEREST_AREA_ID", "CURRENT_FIX_INTEREST_AREA_LABEL", "CURRENT_FIX_START",
                    "CURRENT_FIX_X", "CURRENT_FIX_Y", "EYE_TRACKED", "NEXT_SAC_AMPLITUDE", "NEXT_SAC_DIRECTION",
                    "article_id", "article_title", "article_batch", "question_preview", "difficulty_level",
                    "paragraph_id", "question", "repeated_reading_trial", "trial_index", "selected_answer",
                    "is_correct", "unique_paragraph_id", "unique_trial_id", "CURRENT_FIX_INTEREST_AREA_INDEX",
                    "onestopqa_question_id", "practice_trial", "list_number"]
    return rep.select(sample_order)


_IA_ORDER = ["participant_id", "TRIAL_INDEX", "IA_BOTTOM", "IA_DWELL_TIME", "IA_FIRST_FIXATION_DURATION",
             "IA_FIRST_RUN_DWELL_TIME", "IA_FIXATION_COUNT", "IA_ID", "IA_LABEL", "IA_LAST_RUN_DWELL_TIME", "IA_LEFT",
             "IA_REGRESSION_IN", "IA_REGRESSION_IN_COUNT", "IA_REGRESSION_OUT", "IA_REGRESSION_OUT_COUNT",
             "IA_REGRESSION_PATH_DURATION", "IA_RIGHT", "IA_SECOND_RUN_DWELL_TIME", "IA_SKIP", "IA_TOP",
             "TRIAL_DWELL_TIME", "TRIAL_FIXATION_COUNT", "TRIAL_IA_COUNT", "article_id", "article_title",
             "critical_span_indices", "article_batch", "distractor_span_indices", "question_preview",
             "difficulty_level", "paragraph_id", "question", "repeated_reading_trial", "trial_index", "word_length",
             "word_length_no_punctuation", "wordfreq_frequency", "subtlex_frequency", "gpt2_surprisal",
             "universal_pos", "ptb_pos", "dependency_relation", "morphological_features", "entity_type",
             "Reduced_POS", "head_word_index", "distance_to_head", "selected_answer", "is_correct", "is_in_aspan",
             "is_in_dspan", "aspan_ind_start", "aspan_ind_end", "dspan_ind_start", "dspan_ind_end",
             "unique_paragraph_id", "unique_trial_id", "onestopqa_question_id", "practice_trial", "list_number",
             "same_critical_span", "auxiliary_span_type"]


def _ia_report(corpus: SimCorpus, hit: np.ndarray, trial_cols: pl.DataFrame) -> pl.DataFrame:
    fx = corpus.fixations
    tid = fx["trial_id"].to_numpy()
    dur = fx["duration_ms"].to_numpy()
    bounds = np.r_[0, np.flatnonzero(tid[1:] != tid[:-1]) + 1, len(tid)]
    n_words = dict(corpus.words.group_by("text_id").len().iter_rows())
    text_of = dict(corpus.trials.select("trial_id", "text_id").iter_rows())
    parts = []
    for a, b in zip(bounds[:-1], bounds[1:]):
        n = n_words[text_of[tid[a]]]
        m = ia_measures(hit[a:b], dur[a:b], n)
        m.update(trial_id=np.full(n, tid[a]), IA_ID=np.arange(n), TRIAL_DWELL_TIME=np.full(n, dur[a:b].sum()),
                 TRIAL_FIXATION_COUNT=np.full(n, b - a), TRIAL_IA_COUNT=np.full(n, n))
        parts.append(m)
    cols = {c: np.concatenate([p[c] for p in parts]) for c in parts[0]}
    nullable = ("IA_REGRESSION_IN", "IA_REGRESSION_OUT", "IA_SECOND_RUN_DWELL_TIME")
    ia = pl.DataFrame(cols).with_columns(
        [pl.col(c).fill_nan(None).round(0).cast(pl.Int64) for c in nullable]
        + [pl.col("TRIAL_DWELL_TIME").round(0).cast(pl.Int64)])
    boxes = corpus.words.select(
        pl.col("text_id"), pl.col("ia_index").cast(pl.Int64).alias("IA_ID"),
        pl.col("word").alias("IA_LABEL"), *[pl.col(f"{e}_px").round(0).cast(pl.Int64).alias(f"IA_{e.upper()}")
                                            for e in ("left", "right", "top", "bottom")])
    ia = (ia.join(trial_cols, on="trial_id", maintain_order="left")
          .join(boxes, on=["text_id", "IA_ID"], maintain_order="left")
          .join(_word_features(corpus).with_columns(pl.col("IA_ID").cast(pl.Int64)),
                on=["text_id", "IA_ID"], maintain_order="left"))
    in_a = (pl.col("IA_ID") >= pl.col("aspan_ind_start")) & (pl.col("IA_ID") < pl.col("aspan_ind_end"))
    in_d = (pl.col("IA_ID") >= pl.col("dspan_ind_start")) & (pl.col("IA_ID") < pl.col("dspan_ind_end"))
    span_type = (pl.when(in_a).then(pl.lit("critical")).when(in_d).then(pl.lit("distractor"))
                 .otherwise(pl.lit("outside")))
    return ia.with_columns(is_in_aspan=in_a, is_in_dspan=in_d, auxiliary_span_type=span_type).select(_IA_ORDER)


def _write(frame: pl.DataFrame, path: Path, empty_when_null: tuple[str, ...] = ()) -> None:
    """CSV as Data Viewer/pandas wrote OneStop: ``.`` nulls, ``True``/``False``, ``,,`` where pandas wrote NaN."""
    sentinel = "\x00EMPTY\x00"
    frame = frame.with_columns(
        [pl.when(pl.col(c)).then(pl.lit("True")).otherwise(pl.lit("False")).alias(c)
         for c, t in frame.schema.items() if t == pl.Boolean]
        + [pl.col(c).cast(pl.String).fill_null(sentinel) for c in empty_when_null])
    text = frame.write_csv(null_value=".")
    path.write_text(text.replace(sentinel, ""), encoding="utf-8")


def write_onestop_reports(corpus: SimCorpus, out_dir: str | Path) -> tuple[Path, Path]:
    """Write ``fixations.csv`` and ``ia.csv`` in the OneStop sample's Data Viewer format.

    Parameters
    ----------
    corpus : SimCorpus
        From :func:`readgaze.simulate.simulate_corpus`.
    out_dir : str or Path
        Created if absent; existing files of the same name are overwritten.

    Returns
    -------
    (Path, Path)
        The fixation report and the IA report. Read them back with
        ``pl.read_csv(path, null_values=".", infer_schema_length=None)``.

    Notes
    -----
    The fixation report has the 26 columns of the OneStop sample in its order, then
    ``CURRENT_FIX_INTEREST_AREA_INDEX``, ``onestopqa_question_id``, ``practice_trial``, ``list_number``;
    the IA report the sample's 57 columns, then ``onestopqa_question_id``, ``practice_trial``,
    ``list_number``, ``same_critical_span``, ``auxiliary_span_type``. Gold line and word indices are
    not written (they are in ``corpus.fixations``). Word features (POS, dependency, frequency) are
    simple stand-ins: suffix rules and a function-word list, not a parser.

    Examples
    --------
    >>> import tempfile
    >>> from readgaze.simulate import simulate_corpus
    >>> corpus = simulate_corpus(n_participants=2, n_items=1, paragraphs_per_item=1, seed=0)
    >>> fix, ia = write_onestop_reports(corpus, tempfile.mkdtemp())
    >>> pl.read_csv(ia, null_values=".", infer_schema_length=None)["IA_ID"].min()
    0
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    hit = _hits(corpus)
    trial_cols = _trial_columns(corpus)
    fix_path, ia_path = out / "fixations.csv", out / "ia.csv"
    _write(_fixation_report(corpus, hit, trial_cols), fix_path, empty_when_null=("NEXT_SAC_AMPLITUDE",))
    _write(_ia_report(corpus, hit, trial_cols), ia_path, empty_when_null=("entity_type",))
    return fix_path, ia_path
