"""Goal reconstruction data: the reader's scanpath written as text, the paragraph, and the question they sought.

Task ``goal_reconstruction`` (Shubi et al., *Decoding open-ended information seeking goals from eye movements in
reading*, arXiv:2505.02872): information-seeking trials; input = paragraph + the reader's scanpath; target = the
trial's ``question``. Folds and regimes are the ones every task uses: :class:`GoalReconstructionData` is a
:class:`readgaze.models.data.ReadingDataModule` and assigns trials with its split logic.

The scanpath is written as in the paper's best format (DalEye), one line per fixation, in temporal order::

    word index, word, duration ms, next saccade
    -, <off-text>, 250, forward
    0, Bridges, 231, forward
    1, are, 198, within
    1, are, 140, backward

* ``word index``: 0-based index of the fixated word in the paragraph; ``-`` for a fixation on no word of the text
  (off text, or a word index the text does not have: counted in the QC log);
* ``word``: the word as displayed, stripped of the punctuation around it (``<off-text>`` off text);
* ``duration ms``: fixation duration, rounded to whole ms;
* ``next saccade``: direction of the saccade to the next fixation, from word indices: ``forward`` (to a later
  word), ``within`` (same word), ``backward`` (to an earlier word), ``off-text`` (the next fixation is off text),
  ``end`` (the trial's last fixation). An off-text fixation sits, for this comparison, at the last word fixated
  before it (-1 before any).
"""

from __future__ import annotations

import logging
from typing import Literal

import polars as pl
from torch.utils.data import DataLoader, Dataset

from readgaze.errors import DataError
from readgaze.models.data import ReadingDataModule
from readgaze.models.data.batch import REGIMES
from readgaze.splits import N_FOLDS

log = logging.getLogger(__name__)
OFF_TEXT_WORD = "<off-text>"
HEADER = "word index, word, duration ms, next saccade"


def scanpath_lines(fixations: pl.LazyFrame | pl.DataFrame, words: pl.LazyFrame | pl.DataFrame) -> pl.DataFrame:
    """One scanpath text per trial, in the format of the module docstring.

    Parameters
    ----------
    fixations : polars frame
        ``trial_id``, ``text_id``, ``fixation_index`` (order within the trial), ``word_index`` (Int, null off
        text) and ``duration_ms``.
    words : polars frame
        ``text_id``, ``word_index``, ``word``.

    Returns
    -------
    polars.DataFrame
        ``trial_id``, ``scanpath`` (String: the header line, then one line per fixation, ``\\n``-separated),
        ``n_fixations``, ``n_unknown_word`` (fixations whose word index is not in the text, written as off text).
    """
    words = words.lazy().select("text_id", pl.col("word_index").cast(pl.Int64),
                                pl.col("word").alias("_word")).unique(["text_id", "word_index"])
    stripped = pl.col("_word").str.strip_chars(".,;:!?\"'()[]")
    joined = (fixations.lazy().select("trial_id", "text_id", "fixation_index", pl.col("word_index").cast(pl.Int64),
                                      "duration_ms")
              .join(words, on=["text_id", "word_index"], how="left")
              .sort("trial_id", "fixation_index")
              .with_columns(unknown=pl.col("word_index").is_not_null() & pl.col("_word").is_null()))
    on_text = pl.col("_word").is_not_null()
    index = pl.when(on_text).then(pl.col("word_index"))
    position = index.forward_fill().over("trial_id").fill_null(-1)
    step = (pl.col("_next_index") - pl.col("_position")).sign()
    lines = (joined.with_columns(_index=index, _position=position)
             .with_columns(_next_index=pl.col("_index").shift(-1).over("trial_id"),
                           _last=pl.col("fixation_index") == pl.col("fixation_index").last().over("trial_id"))
             .with_columns(direction=pl.when(pl.col("_last")).then(pl.lit("end"))
                           .when(pl.col("_next_index").is_null()).then(pl.lit("off-text"))
                           .when(step < 0).then(pl.lit("backward"))
                           .when(step == 0).then(pl.lit("within")).otherwise(pl.lit("forward")),
                           line_word=pl.when(on_text).then(pl.when(stripped == "").then(pl.col("_word"))
                                                           .otherwise(stripped)).otherwise(pl.lit(OFF_TEXT_WORD)),
                           line_index=pl.when(on_text).then(pl.col("word_index").cast(pl.String))
                           .otherwise(pl.lit("-")))
             .with_columns(line=pl.format("{}, {}, {}, {}", "line_index", "line_word",
                                          pl.col("duration_ms").round(0).cast(pl.Int64), "direction")))
    return (lines.group_by("trial_id", maintain_order=True)
            .agg(pl.col("line").str.join("\n").alias("_lines"), pl.len().alias("n_fixations"),
                 pl.col("unknown").sum().alias("n_unknown_word"))
            .select("trial_id", pl.concat_str(pl.lit(HEADER + "\n"), pl.col("_lines")).alias("scanpath"),
                    "n_fixations", "n_unknown_word")
            .collect())


class GoalReconstructionData(ReadingDataModule):
    """Information-seeking trials as (paragraph, scanpath text, question) for one fold.

    Parameters
    ----------
    path, fold, n_folds, split_seed, fold_files, strict, split_unit, batch_size, num_workers
        As :class:`readgaze.models.data.ReadingDataModule` (the same folds and regimes).
    task : {"goal_reconstruction"}
        The only task of this datamodule (kept as an argument so configs and results name it).

    Each item is a dict: ``trial_id``, ``regime`` (index into :data:`readgaze.models.data.batch.REGIMES`),
    ``paragraph`` (the
    text's words joined by spaces), ``scanpath`` (:func:`scanpath_lines`), ``question`` (the target),
    ``candidates`` (the paragraph's questions, ordered by ``onestopqa_question_id``) and ``label`` (the target's
    index among them). ``trials`` keeps, per trial, ``candidate_spans`` and ``slowest_span_candidate`` (the
    candidate whose critical span got the most fixation time per word: the reference selection, see
    :mod:`readgaze.models.training.goal_cv`).
    """

    def __init__(self, path: str, task: Literal["goal_reconstruction"] = "goal_reconstruction", fold: int = 0,
                 n_folds: int = N_FOLDS, split_seed: int = 0, fold_files: str | None = None, strict: bool = False,
                 split_unit: Literal["auto", "participant_item", "trial"] = "auto", batch_size: int = 8,
                 num_workers: int = 0) -> None:
        super().__init__(path, "reading_goal", fold, n_folds, split_seed, fold_files, strict, split_unit,
                         batch_size=batch_size, num_workers=num_workers)
        self.task = task
        self.items: dict[str, list[dict]] = {}

    @property
    def num_classes(self) -> int:
        """The most candidate questions any paragraph has (3 in OneStop)."""
        if self._num_classes is None:
            self._num_classes = int(self._scan("trials").group_by("text_id")
                                    .agg(pl.col("question").n_unique()).select(pl.col("question").max())
                                    .collect().item())
        return self._num_classes

    def setup(self, stage: str | None = None) -> None:
        if self.trials is not None:
            return
        trials = self._task_trials()
        trials = trials.join(self._assignment(trials), on="trial_id", how="left")
        self.qc.add("fold", "trials", "not in this fold's regimes (strict)", trials["split"].null_count())
        trials = trials.filter(pl.col("split").is_not_null())
        if trials.filter(pl.col("split") == "train").height == 0:
            raise DataError(f"{self.path}: fold {self.fold} has no training trials")
        fixations = self._scan("fixations").join(trials.lazy().select("trial_id", "text_id"), on="trial_id")
        scanpaths = scanpath_lines(fixations, self._scan("words"))
        self.qc.add("scanpath", "fixations", "word_index not in the text: written as off text",
                    int(scanpaths["n_unknown_word"].sum()), "changed")
        paragraphs = (self._scan("words").sort("text_id", "word_index").group_by("text_id", maintain_order=True)
                      .agg(pl.col("word").str.join(" ").alias("paragraph")).collect())
        trials = trials.join(paragraphs, on="text_id", how="left").join(scanpaths, on="trial_id", how="left")
        no_text = trials.filter(pl.col("paragraph").is_null()).height
        if no_text:
            raise DataError(f"{no_text} trials have a text_id with no rows in words.parquet",
                            file=self.dataset.file("words"), column="text_id")
        self.qc.add("scanpath", "trials", "no fixations (empty scanpath)", trials["scanpath"].null_count(), "changed")
        trials = trials.with_columns(pl.col("scanpath").fill_null(HEADER), pl.col("n_fixations").fill_null(0))
        self.trials = trials.join(_slowest_span(fixations, trials), on="trial_id", how="left").sort(
            "trial_id").with_row_index("trial_row")
        for split in ("train", "val", "test"):
            self.items[split] = _items(self.trials.filter(pl.col("split") == split))
        log.info("fold %d: %s", self.fold, {s: len(d) for s, d in self.items.items()})

    def _task_trials(self) -> pl.DataFrame:
        """Information-seeking trials with a question; ``candidates``/``candidate_spans`` from all the text's trials."""
        trials = self._read_trials(["trial_id", "participant_id", "item_id", "text_id", "reading_goal", "question",
                                    "onestopqa_question_id", "critical_span_start_index",
                                    "critical_span_end_index"])
        span = pl.concat_list(pl.col("critical_span_start_index").list.first(),
                              pl.col("critical_span_end_index").list.first())
        candidates = (trials.filter(pl.col("question").is_not_null() & pl.col("onestopqa_question_id").is_not_null())
                      .select("text_id", "onestopqa_question_id", "question", span.alias("span"))
                      .unique(["text_id", "onestopqa_question_id"]).sort("text_id", "onestopqa_question_id")
                      .group_by("text_id", maintain_order=True)
                      .agg(pl.col("question").alias("candidates"), pl.col("span").alias("candidate_spans"),
                           pl.col("onestopqa_question_id").alias("_ids")))
        keep = (pl.col("reading_goal") == "information_seeking") & pl.col("question").is_not_null()
        self.qc.add("task", "trials", "not information seeking, or no question", trials.filter(~keep).height)
        ranks = (candidates.select("text_id", pl.col("_ids").alias("onestopqa_question_id")).explode(
            "onestopqa_question_id").with_columns(label=pl.int_range(pl.len(), dtype=pl.Int64).over("text_id")))
        return (trials.filter(keep).join(candidates.drop("_ids"), on="text_id", how="left")
                .join(ranks, on=["text_id", "onestopqa_question_id"], how="left"))

    def train_dataloader(self) -> DataLoader:
        return self._loader("train", shuffle=True)

    def _loader(self, split: str, shuffle: bool = False) -> DataLoader:
        return DataLoader(_Items(self.items[split]), batch_size=self.batch_size, shuffle=shuffle,
                          num_workers=self.num_workers, collate_fn=collate)


def _slowest_span(fixations: pl.LazyFrame, trials: pl.DataFrame) -> pl.DataFrame:
    """Per trial, the candidate whose critical span has the most fixation ms per span word (ties: lowest index)."""
    spans = (trials.lazy().select("trial_id", pl.col("candidate_spans"))
             .with_columns(candidate=pl.int_ranges(pl.col("candidate_spans").list.len()))
             .explode("candidate_spans", "candidate")
             .select("trial_id", "candidate", pl.col("candidate_spans").list.get(0).alias("s0"),
                     pl.col("candidate_spans").list.get(1).alias("s1")))
    dwell = (spans.join(fixations.select("trial_id", pl.col("word_index").cast(pl.Int64), "duration_ms"),
                        on="trial_id", how="left")
             .with_columns(inside=(pl.col("word_index") >= pl.col("s0")) & (pl.col("word_index") < pl.col("s1")))
             .group_by("trial_id", "candidate", "s0", "s1")
             .agg((pl.col("duration_ms") * pl.col("inside").fill_null(False)).sum().alias("ms"))
             .with_columns(per_word=pl.col("ms") / (pl.col("s1") - pl.col("s0")).clip(lower_bound=1))
             .sort("trial_id", pl.col("per_word"), pl.col("candidate"), descending=[False, True, False]))
    return dwell.group_by("trial_id").agg(pl.col("candidate").first().alias("slowest_span_candidate")).collect()


def _items(trials: pl.DataFrame) -> list[dict]:
    regime = {r: i for i, r in enumerate(REGIMES)}
    columns = ["trial_id", "regime", "paragraph", "scanpath", "question", "candidates", "label"]
    return [{**row, "regime": regime[row["regime"]]} for row in trials.select(columns).iter_rows(named=True)]


class _Items(Dataset):
    def __init__(self, items: list[dict]) -> None:
        self.items = items

    def __len__(self) -> int:
        return len(self.items)

    def __getitem__(self, i: int) -> dict:
        return self.items[i]


def collate(items: list[dict]) -> dict:
    """A batch: each key of the items as a list (strings stay strings; the model tokenises)."""
    return {key: [item[key] for item in items] for key in items[0]}
