"""``ReadingDataModule``: a dataset folder + one cross-validation fold → batches of
:class:`~readgaze.models.data.batch.ReadingBatch`.

Over 400 lines, one class on purpose: its steps (the task's trials, the fold's regimes, the feature matrices, the
scalers, the tokenisation, the QC) each read and write the datamodule's state and QC log, so they are its methods;
what stands alone lives beside it (``tasks``, ``features``, ``tokenise``, ``dataset``, ``batch``) and the class
docstring is the reference of its ~20 options.

Steps (``setup``): read the trials of the task, give each its split and regime for the fold
(:func:`readgaze.splits.assign_fold`), build word-, fixation- and trial-level features
(:mod:`readgaze.features`),
fit the scalers on the training split only, and tokenise each text once with the encoder's tokenizer, keeping the
token ↔ word alignment from the tokenizer's ``word_ids()``.

Text, as EyeBench (Shubi et al., 2025) builds it: ``[CLS] paragraph [SEP]`` for the reading goal,
``[CLS] paragraph [SEP] "Question: " + question [SEP]`` for comprehension (the question cut to
:data:`MAX_QUESTION_TOKENS` tokens; RoBERTa's ``<s> P </s></s> Q </s>``), the paragraph plus the candidate
questions for goal_question. An over-long paragraph is truncated from the *left* at a word boundary (its last
words are kept); the cut words' rows and the fixations on them are dropped, later word indices shift down, and
both drops are counted in QC.

Validation and test use one loader each, with every trial's regime in the batch: the base model scores each regime
(and all pooled) from one pass. Per-regime loaders would multiply Lightning's bookkeeping and log names while the
"all" number still needs the pooled predictions, and the new-item-&-participant regime is often a handful of trials.
"""

from __future__ import annotations

import functools
import json
import logging
from pathlib import Path
from typing import Literal

import lightning as L
import numpy as np
import polars as pl
import torch
from torch.utils.data import DataLoader

from readgaze import features as feat
from readgaze.dataset import Dataset
from readgaze.errors import ConfigError, DataError, SchemaError
from readgaze.features import FEATURE_SETS, compute_feature_sets, feature_matrix
from readgaze.models.data.batch import OFF_TEXT
from readgaze.models.data.dataset import _offsets, _TrialDataset, collate
from readgaze.models.data.tasks import TASKS
from readgaze.models.data.tokenise import _encode
from readgaze.models.text_encoder import load_tokenizer
from readgaze.qc import QCLog
from readgaze.splits import N_FOLDS, assign_fold, check_reader_label, make_splits, read_fold_files
from readgaze.splits.regimes import fold_roles
from readgaze.tasks import TASKS as REGISTRY
from readgaze.tasks import check_missing_label, fill_missing_label

log = logging.getLogger(__name__)
Task = Literal[tuple(TASKS)]  # every task of readgaze.tasks (regression too): one registry entry adds one
ReadingRegime = Literal["ordinary", "information_seeking", "all"]
FEATURE_SOURCES = {
    "surprisal_bits": ("words", "readgaze prep ... --surprisal-model PATH (a local causal LM)"),
    "frequency_zipf": ("words", "readgaze prep ... --language CODE (wordfreq frequencies)"),
    "pupil": ("fixations", "a fixation report with a pupil column (CURRENT_FIX_PUPIL)"),
    "x_px": ("fixations", "a fixation report with fixation positions"),
    "y_px": ("fixations", "a fixation report with fixation positions"),
    "gaze_duration_ms": ("word_measures", "readgaze prep (word measures are computed from the fixations)"),
    "regression_path_duration_ms": ("word_measures", "readgaze prep (word measures are computed from the fixations)"),
    "total_fixation_duration_ms": ("word_measures", "readgaze prep (word measures are computed from the fixations)"),
}
"""Feature columns a dataset may lack, the table they live in and how ``readgaze prep`` makes them."""
_WARNED: set[tuple[str, str]] = set()


class ReadingDataModule(L.LightningDataModule):
    """Trials of a dataset folder for one task and fold.

    Parameters
    ----------
    path : str
        Dataset folder written by ``readgaze prep`` (``trials.parquet``, ``words.parquet``, ``fixations.parquet``,
        ``word_measures.parquet``).
    task : {"reading_goal", "comprehension", "goal_question"}
        reading_goal: 1 = information seeking, text = paragraph (both reading goals). comprehension: 1 =
        ``is_correct``, text = paragraph + question, trials of ``reading_regime``. goal_question (goal selection,
        Shubi et al. 2025, arXiv:2505.02872): which of the paragraph's three questions the reader was given,
        as the question's *role* (:data:`QUESTION_ROLES`: 0 the lonely question, 1 and 2 the coupled pair that
        shares a critical span, in ``onestopqa_question_id`` order), so a class means the same thing in every
        difficulty level and layout version of the paragraph; information-seeking trials only; text = paragraph
        + the candidate questions in role order. The role comes from ``same_critical_span`` (0 = no other
        question shares the span; OneStop); a paragraph without exactly one lonely question falls back to the
        rank of ``onestopqa_question_id`` within the paragraph (QC record ``no lonely/coupled structure``).
        Paragraphs are ``(item_id, paragraph_id)`` when the trials have ``paragraph_id``, else ``text_id``.
        With ``questions``, the roles and candidates come from OneStopQA instead. Every other task of
        :mod:`readgaze.tasks` too (``dyslexia``; ``reading_comprehension_skill``, a regression: a Float64 label,
        ``num_classes`` 1, ``task_kind`` regression); a reader-level task's fold is checked at ``setup`` by
        :func:`readgaze.splits.check_reader_label` (one value per reader, no reader of an unseen-reader regime in
        training).
    reading_regime : {"ordinary", "information_seeking", "all"}, optional
        comprehension only: the reading goal of the trials kept. Default ``"ordinary"`` when the trials have a
        ``reading_goal`` column (EyeBench ``OneStop_RC``: ordinary reading, first reading, 9,718 trials), else
        ``"all"``. The comprehension paper (Shubi et al. 2024) trains each regime separately.
    questions : str, optional
        goal_question only: the OneStopQA file (``onestop_qa.json``; Berzak et al. 2020) giving each paragraph's
        three questions and their roles (``question_prediction_label``: 0 lonely, 1 and 2 the coupled pair, which
        is what its span ``references`` define). Trials are matched on ``item_id`` (= the article id
        ``{batch}_{article}``), ``paragraph_id`` and the question text (typographic apostrophes and whitespace
        normalised), so ``onestopqa_question_id`` and ``same_critical_span`` are not needed (the OneStop sample
        has neither); unmatched trials are counted (``no goal_question label``).
    fold : int
        Validation fold; test is ``fold + 1`` (mod ``n_folds``).
    n_folds : int
        K for :func:`readgaze.splits.make_splits` (ignored with ``fold_files``).
    split_seed : int
        Seed of the fold assignment.
    fold_files : str, optional
        Folder of published fold files instead of making folds: ``items/fold_k.csv`` (articles as
        ``{article_batch}_{article_id}``) and ``subjects/fold_k.csv`` (participant ids), headerless, K = the number
        of files (EyeBench's OneStop folds: 10 x 3 articles, 10 x 18 participants). The fold's regimes are then
        :func:`readgaze.splits.assign_fold` of those folds, which equals EyeBench's published per-fold trial
        tables (``trial_ids/fold_k_trial_ids_by_regime.csv``) for comprehension on ordinary reading.
        ``n_folds``, ``split_seed`` and ``split_within`` are ignored; trials whose participant or item is in no
        fold file raise :class:`readgaze.errors.DataError`. When the folder has the published per-trial table of
        the fold (``trial_ids/fold_k_trial_ids_by_regime.csv``: EyeBench's OneStop and CopCo folds), every task
        trial the table lists must have exactly its published split and regime, and the counts per regime are the
        file's (:func:`readgaze.splits.published.check_fold_table`; the counts in :attr:`published_counts`);
        CopCo's folds: the ``eyebench/folds`` folder of CopCo's published files (a reader-level task's readers
        are checked at ``setup`` for every fold, as above).
    split_within : str, optional
        Readgaze's own folds only: a trial column constant per participant and per item (OneStop:
        ``article_batch``, as the goal-decoding code's per-batch split) within which participants and items are
        dealt evenly to folds (:func:`readgaze.splits.make_splits` ``within``).
    trial_feature_set : {"readgaze", "beyelstm_global", "fse_global"}
        What ``trial_features`` holds: readgaze's trial features (:data:`readgaze.features.TRIAL_FEATURES`,
        default),
        or a published global set of :data:`readgaze.features.FEATURE_SETS` (BEyeLSTM's 692 grouped
        means and entropies; FSE's 4 global features), computed per trial and scaled on the training split.
    strict : bool
        :func:`readgaze.splits.assign_fold`'s strict regimes.
    split_unit : {"auto", "participant_item", "trial"}
        ``participant_item``: the field's protocol (participants and items in folds, three test regimes).
        ``auto`` (default): ``participant_item``, unless the data are too small for it (fewer participants or items
        than folds, as in the 2-participant OneStop sample); then ``trial``, with a warning and a QC record, so a
        smoke ``fit`` runs. ``readgaze cv`` never falls back: it requires ``participant_item``.
        ``trial``: trials dealt at random (seeded) into ``n_folds`` folds, val = fold k, test = fold k+1, every
        trial in regime "seen". Participants and items leak across splits: only for smoke runs on data too small
        for the protocol (the 2-participant OneStop sample), never for reported numbers.
    text_encoder : str
        Tokenizer name (see :mod:`readgaze.models.text_encoder`); in the CLI, linked to the model's ``text_encoder``.
    max_text_tokens : int
        Token budget of the text, special tokens included. A longer paragraph loses its first words (EyeBench keeps
        the last tokens); those words and the fixations on them are dropped (QC ``cut off by max_text_tokens``).
    batch_size : int
    num_workers : int
    ablate : {None, "none", "text", "gaze"}, optional
        A modality ablation applied to every split (:mod:`readgaze.models.data.ablate`): ``text`` permutes each
        trial's paragraph words (tokens and lexical features; gaze, layout and question kept), ``gaze`` gives each
        trial the gaze of another trial of the same text. Trained with it, a model is its own ablated twin
        (``readgaze cv --ablate text gaze`` runs the twins and writes the comparison). Seeded by ``split_seed``.
    missing_label : float, optional
        Regression tasks only: the value given to trials whose reader-level label is null (EyeBench's published
        CopCo_RCS table uses -1.0 for CopCo's 12 readers without a comprehension score:
        ``--data.missing_label -1.0``). None (default) drops them, counted (QC ``no <task> label``); with a value
        they stay in every split with it, counted in trials and readers (QC ``no <task> label, given <value>
        (missing_label)``, and in ``qc.json``), by :func:`readgaze.tasks.fill_missing_label`, the classical
        baselines' definition too. A classification task refuses it (:class:`ConfigError`).
    """

    def __init__(self, path: str, task: Task = "reading_goal", fold: int = 0, n_folds: int = N_FOLDS,
                 split_seed: int = 0, fold_files: str | None = None, strict: bool = False,
                 split_unit: Literal["auto", "participant_item", "trial"] = "auto", text_encoder: str = "tiny",
                 max_text_tokens: int = 512, batch_size: int = 16, num_workers: int = 0,
                 reading_regime: ReadingRegime | None = None, split_within: str | None = None,
                 trial_feature_set: Literal["readgaze", "beyelstm_global", "fse_global"] = "readgaze",
                 questions: str | None = None, ablate: str | None = None,
                 missing_label: float | None = None) -> None:
        super().__init__()
        from readgaze.models.data.ablate import check_ablation

        self.ablate = check_ablation(ablate)
        if task not in TASKS:
            raise ConfigError(f"data.task: got {task!r}, expected one of {sorted(TASKS)}")
        self.missing_label = check_missing_label(task, missing_label, option="data.missing_label")
        if reading_regime not in (None, "ordinary", "information_seeking", "all"):
            raise ConfigError(f"data.reading_regime: got {reading_regime!r}, expected ordinary, "
                              f"information_seeking or all")
        self.path, self.task, self.fold, self.n_folds = Path(path), task, fold, n_folds
        self.reading_regime, self.split_within = reading_regime, split_within
        self.questions = questions
        if trial_feature_set not in ("readgaze", "beyelstm_global", "fse_global"):
            raise ConfigError(f"data.trial_feature_set: got {trial_feature_set!r}, expected readgaze, "
                              f"beyelstm_global or fse_global")
        self.trial_feature_set = trial_feature_set
        self.split_seed, self.fold_files, self.strict, self.split_unit = split_seed, fold_files, strict, split_unit
        self.text_encoder, self.max_text_tokens = text_encoder, max_text_tokens
        self.batch_size, self.num_workers = batch_size, num_workers
        self.qc = QCLog()
        self.trials: pl.DataFrame | None = None
        self.trial_features_raw: pl.DataFrame | None = None  # unscaled TRIAL_FEATURES per trial (baselines)
        self._datasets: dict[str, _TrialDataset] = {}
        self._num_classes: int | None = None
        self._dataset: Dataset | None = None
        self.published_counts: pl.DataFrame | None = None
        """With ``fold_files`` whose folder has the fold's published table: its counts per (split, regime) next to
        the assignment's (``n_published``, ``n_assigned``: equal, checked); else None."""
        self.scalers: dict[str, feat.RobustScaler] | None = None
        """The fitted word, fixation and trial scalers (after ``setup``; saved in a model bundle, which brings its
        own when scoring new data)."""

    # ---- dimensions the models need (linked in readgaze.models.training.cli) ----
    @property
    def n_fixation_features(self) -> int:
        return len(feat.FIXATION_FEATURES)

    @property
    def n_word_features(self) -> int:
        return len(feat.WORD_FEATURES)

    @property
    def n_trial_features(self) -> int:
        return len(feat.with_indicators(FEATURE_SETS[self.trial_feature_set]))

    @property
    def num_classes(self) -> int:
        """2 for the binary tasks; 3 for goal_question (the question roles)."""
        if self._num_classes is None:
            if (self.task == "goal_question" and not self.questions
                    and "onestopqa_question_id" not in self._scan("trials").collect_schema()):
                raise ConfigError("task goal_question needs the column onestopqa_question_id (which of the "
                                  "paragraph's questions the reader was given); this dataset has none",
                                  file=self.dataset.file("trials"), column="onestopqa_question_id")
            self._num_classes = TASKS[self.task].num_classes
        return self._num_classes

    @property
    def task_kind(self) -> str:
        """The task's kind in :mod:`readgaze.tasks`: ``classification`` or ``regression`` (linked to the model; a
        task outside the registry, goal_reconstruction, counts as classification)."""
        return TASKS[self.task].kind if self.task in TASKS else "classification"

    @property
    def label_stats(self) -> tuple[float, float]:
        """Regression: mean and standard deviation (ddof 0) of the training trials' labels, in the target's units
        (what the model standardises its target by)."""
        labels = self.trials.filter(pl.col("split") == "train")["label"].cast(pl.Float64)
        return float(labels.mean()), float(labels.std(ddof=0))

    @property
    def effective_reading_regime(self) -> str:
        """The reading goal(s) of the task's trials: ``ordinary``, ``information_seeking`` or ``all``."""
        if self.task == "reading_goal":
            return "all"
        if self.task == "goal_question":
            return "information_seeking"
        if self.task != "comprehension":  # another task of the registry (dyslexia, ...): every trial
            return "all"
        if self.reading_regime is not None:
            return self.reading_regime
        return "ordinary" if "reading_goal" in self._scan("trials").collect_schema().names() else "all"

    def qc_records(self) -> list[dict]:
        """The datamodule's QC records (drops, fallbacks, cut words, unknown words, missing columns)."""
        return self.qc.to_json()

    def write_qc(self, directory: str | Path) -> Path:
        """Write ``qc.json``: the task, reading regime, split unit and every QC record; returns its path."""
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        path = directory / "qc.json"
        fallback = any(r["reason"] == "split_unit_fallback_to_trial" for r in self.qc.records)
        record = {"task": self.task, "reading_regime": self.effective_reading_regime, "fold": self.fold,
                  "ablate": self.ablate, "missing_label": self.missing_label,
                  "split_unit": "trial" if self.split_unit == "trial" or fallback else "participant_item",
                  "fold_files": self.fold_files, "records": self.qc_records()}
        path.write_text(json.dumps(record, indent=2, default=str), encoding="utf-8")
        return path

    @property
    def class_counts(self) -> torch.Tensor:
        """Training trials per class, ``(num_classes,)`` int64 (for the class weights of the loss)."""
        if self.task_kind == "regression":
            raise ConfigError(f"task {self.task} is a regression: its labels are values, not classes to count")
        labels = self.trials.filter(pl.col("split") == "train")["label"].to_numpy()
        return torch.as_tensor(np.bincount(labels, minlength=self.num_classes), dtype=torch.int64)

    # ---- Lightning hooks ----
    def setup(self, stage: str | None = None) -> None:
        if self.trials is not None:
            return
        shared = self._shared()  # the task's trials and unscaled arrays: built once per dataset and task, cached
        self.qc.records.extend(dict(r) for r in shared["qc"])
        task_trials = shared["trials"]
        trials = task_trials.join(self._assignment(task_trials), on="trial_id", how="left")
        unused = trials.filter(pl.col("split").is_null()).height
        self.qc.add("fold", "trials", "not in this fold's regimes (strict)", unused)
        # trial_row: the trial's row in the task's (cached) arrays, in trial_id order; gaps where strict drops trials
        self.trials = trials.filter(pl.col("split").is_not_null()).sort("trial_id")
        if self.trials.filter(pl.col("split") == "train").height == 0:
            raise DataError(f"{self.path}: fold {self.fold} has no training trials")
        if REGISTRY[self.task].level == "reader":  # a reader's trait: no reader of a new-reader regime in training
            counts = check_reader_label(self.trials, "label")
            seen = int(counts["n_readers_in_train"].sum()) if counts.height else 0
            self.qc.add("split", "participants", "reader-level label: evaluated readers with training trials (new_item "
                        "or seen only; none in the new-reader regimes, checked)", seen, "kept")
        classes = self.trials["label"].n_unique()
        if classes < 2:
            message = (f"task {self.task}: every trial of this dataset has the same label "
                       f"({self.trials['label'][0]}); the model can run but learns and measures nothing")
            log.warning(message)
            self.qc.add("task", "trials", "single_class_label", self.trials.height, "warning", message)
        self._warn_missing_features()
        kept = self.trials["trial_row"].to_numpy()
        source = self._ablated(shared) if self.ablate else shared
        self.trial_features_raw = self.trials.select("trial_row", "trial_id").join(
            source["trial_features"], on="trial_row")
        self.qc.add("features", "fixations", "word_index not in the text: treated as off text",
                    int(source["unknown_per_trial"][kept].sum()), "changed")
        arrays = self._fold_arrays(shared, source)
        tokens = {"key": source["token_key"], "encodings": source["encodings"], "cut_per_trial": source["token_cut"]}
        self.qc.add("tokenise", "words", "cut off by max_text_tokens (the paragraph's first words, left truncation)",
                    int(tokens["cut_per_trial"][kept].sum()), "dropped",
                    "word rows of all trials; EyeBench keeps the last tokens")
        self._count_cut_fixations(arrays, tokens, kept)
        regime = task_trials.select("trial_id").join(self.trials.select("trial_id", "regime"), on="trial_id",
                                                      how="left", maintain_order="left")
        aligned = task_trials.select("trial_id", "label").with_columns(  # row = trial_row (dropped rows unused)
            regime["regime"].fill_null("seen").alias("regime"))
        for split in ("train", "val", "test"):
            rows = self.trials.filter(pl.col("split") == split)["trial_row"].to_numpy()
            self._datasets[split] = _TrialDataset(rows, aligned, arrays, tokens)
        log.info("fold %d: %s", self.fold, {s: len(d) for s, d in self._datasets.items()})

    def _shared(self) -> dict:
        """The fold-independent part of setup (:mod:`readgaze.models.data.cache`): from the array cache, built
        on first use; in memory when ``READGAZE_ARRAY_CACHE=0``."""
        from readgaze.models.data import cache

        if not cache.enabled():
            self._cache_key = None
            return self._build_shared()
        settings = {"task": self.task, "reading_regime": self.effective_reading_regime, "questions": self.questions,
                    "trial_feature_set": self.trial_feature_set, "text_encoder": self.text_encoder,
                    "max_text_tokens": self.max_text_tokens}
        if self.missing_label is not None:  # other trials in the arrays; unset, the keys stay what they were
            settings["missing_label"] = self.missing_label
        self._cache_key = cache.array_key(self.dataset, settings, extra_files=(self.questions,))
        entry, built = cache.load_or_build(self._cache_key, self._build_shared)
        log.info("%s arrays for task %s (%s)", "built and cached" if built else "read the cached", self.task,
                 self._cache_key)
        return entry

    def _build_shared(self) -> dict:
        """The task's trials (``trial_row`` = position in trial_id order), unscaled feature matrices, the texts'
        tokenisations and the QC records of these steps."""
        qc, self.qc = self.qc, QCLog()
        try:
            trials = self._task_trials().sort("trial_id").with_row_index("trial_row")
            entry = {"trials": trials, **self._raw_arrays(trials), **self._tokenise(trials)}
            entry["qc"] = self.qc.to_json()
        finally:
            self.qc = qc
        return entry

    def train_dataloader(self) -> DataLoader:
        return self._loader("train", shuffle=True)

    def val_dataloader(self) -> DataLoader:
        return self._loader("val")

    def test_dataloader(self) -> DataLoader:
        return self._loader("test")

    def predict_dataloader(self) -> DataLoader:
        return self._loader("test")

    def _loader(self, split: str, shuffle: bool = False) -> DataLoader:
        pad_id = load_tokenizer(self.text_encoder).pad_token_id or 0
        return DataLoader(self._datasets[split], batch_size=self.batch_size, shuffle=shuffle,
                          num_workers=self.num_workers, collate_fn=functools.partial(collate, pad_token_id=pad_id))

    # ---- steps of setup ----
    @property
    def dataset(self) -> Dataset:
        """The dataset folder (:class:`readgaze.Dataset`), opened on first use; raises :class:`ConfigError` when
        ``path`` is not a dataset folder."""
        if self._dataset is None:
            self._dataset = Dataset(self.path)
        return self._dataset

    def _scan(self, table: str) -> pl.LazyFrame:
        """A table of the dataset folder (:meth:`readgaze.Dataset.scan`: validated against :mod:`readgaze.schema`
        on first use; :class:`SchemaError` naming the file and column, :class:`ConfigError` when absent)."""
        return self.dataset.scan(table)

    def _read_trials(self, needed: list[str]) -> pl.DataFrame:
        """``trials.parquet`` without practice and repeated-reading trials (counted in QC).

        Raises :class:`SchemaError` naming the file when a column of ``needed`` (those the task uses) is absent.
        """
        trials = self._scan("trials").collect()
        missing = [c for c in needed if c not in trials.columns]
        if missing:
            raise SchemaError(f"trials.parquet lacks column(s) {missing} needed for task {self.task}",
                              file=self.dataset.file("trials"))
        for flag in ("practice", "repeated_reading"):
            if flag in trials.columns:
                self.qc.add("task", "trials", f"{flag} trial", trials[flag].fill_null(False).sum())
                trials = trials.filter(~pl.col(flag).fill_null(False))
        return trials

    def _task_trials(self) -> pl.DataFrame:
        """The task's trials with an Int64 ``label`` (Float64 for a regression task); excluded trials are counted per
    reason."""
        spec = TASKS[self.task]
        trials = self._read_trials(["trial_id", "participant_id", "item_id", "text_id", *spec.needs])
        if self.reading_regime not in (None, "all") and self.task == "comprehension":
            if "reading_goal" not in trials.columns:
                raise SchemaError(f"data.reading_regime {self.reading_regime}: trials.parquet has no reading_goal "
                                  f"column (use reading_regime all)", file=self.dataset.file("trials"),
                                  column="reading_goal")
        labelled = spec.trials(trials, self)
        if self.missing_label is not None:  # EyeBench's CopCo_RCS: unscored readers kept at -1.0 (counted)
            unlabelled = labelled.filter(pl.col("label").is_null())
            log.info("data.missing_label: %d trials of %d readers without a %s label given %s", unlabelled.height,
                     unlabelled["participant_id"].n_unique(), self.task, self.missing_label)
            labelled = fill_missing_label(labelled, self.task, self.missing_label, qc=self.qc,
                                          option="data.missing_label")
        keep = pl.col("label").is_not_null()
        self.qc.add("task", "trials", f"no {self.task} label", labelled.filter(~keep).height)
        labelled = labelled.filter(keep)
        regime = self.effective_reading_regime
        if self.task == "comprehension" and regime != "all":
            other = labelled.filter(pl.col("reading_goal") != regime).height
            self.qc.add("task", "trials", f"reading_regime {regime}: other reading goal", other)
            if other and other == labelled.height:
                goals = sorted(labelled["reading_goal"].drop_nulls().unique().to_list())
                raise ConfigError(f"{self.dataset.file('trials')}: comprehension keeps the {regime} trials "
                                  f"(data.reading_regime, default ordinary, as EyeBench), but all {other:,} labelled "
                                  f"trials have reading_goal {', '.join(goals) or 'null'}; pass "
                                  f"--data.reading_regime all (or {goals[0] if goals else 'information_seeking'})")
            labelled = labelled.filter(pl.col("reading_goal") == regime)
        return labelled.with_columns(pl.col("label").cast(spec.label_dtype))

    def _warn_missing_features(self) -> None:
        """Warn once per feature column the dataset lacks (it becomes all-missing), naming the prep option."""
        derived = set(getattr(feat, "SHARES", {}))  # computed by readgaze.features from other measures
        sources = {c: ("word_measures", "readgaze prep (re-run it: this version computes the word measure)")
                   for c in feat.WORD_MEASURES if c not in derived}
        sources.update(FEATURE_SOURCES)
        have = {table: set(self._scan(table).collect_schema().names()) for table in ("words", "fixations",
                                                                                    "word_measures")}
        for column, (table, option) in sources.items():
            if column in have[table]:
                continue
            message = (f"{table}.parquet has no column {column}: the feature {column} is all missing (0 with its "
                       f"indicator set) for every trial; make it with {option}")
            if (str(self.path), column) not in _WARNED:  # once per dataset and process (cv builds one per fold)
                _WARNED.add((str(self.path), column))
                log.warning(message)
            self.qc.add("features", table, f"missing feature column {column}", self.trials.height, "warning",
                        message)

    def _assignment(self, trials: pl.DataFrame) -> pl.DataFrame:
        if self.split_unit == "trial":
            return _trial_assignment(trials, self.n_folds, self.fold, self.split_seed)
        if self.fold_files:
            splits = read_fold_files(self.fold_files)
        else:
            stratify = "reading_goal" if "reading_goal" in trials.columns else None
            if self.split_within is not None and self.split_within not in trials.columns:
                raise ConfigError(f"data.split_within: trials.parquet has no column {self.split_within!r}",
                                  file=self.dataset.file("trials"), column=self.split_within)
            try:
                splits = make_splits(trials, n_folds=self.n_folds, seed=self.split_seed, stratify_by=stratify,
                                     within=self.split_within)
            except ConfigError as error:
                if self.split_unit == "auto":
                    return self._fallback_to_trials(trials, error)
                raise ConfigError(f"{error.message} (data too small for {self.n_folds} participant and item folds: "
                                  f"lower data.n_folds, or for a smoke run set data.split_unit trial)") from error
        assignment = assign_fold(trials, splits, self.fold, strict=self.strict).select(
            "trial_id", "fold_index", "split", "regime")
        if self.fold_files:  # the folder's per-trial table of this fold, when it has one: every role checked
            from readgaze.splits.published import check_fold_table

            self.published_counts = check_fold_table(assignment, trials, self.fold_files, self.fold, qc=self.qc)
        return assignment

    def _fallback_to_trials(self, trials: pl.DataFrame, error: ConfigError) -> pl.DataFrame:
        """split_unit auto on data too small for participant x item folds: trial folds, said loudly."""
        n_folds = max(3, min(self.n_folds, trials.height))
        message = (f"{error.message}: data too small for participant x item folds, so trials are dealt into "
                   f"{n_folds} random folds (participants and items leak across splits; smoke run only, "
                   f"regime 'seen'; readgaze cv refuses this)")
        log.warning(message)
        self.qc.add("split", "trials", "split_unit_fallback_to_trial", trials.height, "warning", message)
        return _trial_assignment(trials, n_folds, self.fold % n_folds, self.split_seed)

    def _raw_arrays(self, trials: pl.DataFrame) -> dict:
        """Unscaled word/fixation/trial matrices of every task trial, rows ordered by ``trial_row``, per-trial offsets,
        the trial feature table and each trial's count of fixations on a word index its text lacks."""
        lazy = trials.lazy().select("trial_row", "trial_id", "text_id")
        words = feat.word_table(self._scan("words"))
        trial_words = feat.trial_word_table(lazy, words, self._scan("word_measures")).collect()
        no_words = trials.height - trial_words["trial_row"].n_unique()
        if no_words:
            raise DataError(f"{no_words} trials have a text_id with no rows in words.parquet",
                            file=self.dataset.file("words"), column="text_id")
        fixations = feat.fixation_table(lazy, self._scan("fixations"), trial_words.lazy()).collect()
        trial_table = feat.trial_feature_table(lazy, fixations.lazy(), trial_words.lazy()).collect()
        n = trials.height
        unknown = fixations.filter(pl.col("word_index").is_not_null() & ~pl.col("on_known_word"))["trial_row"]
        trial_raw = trial_table.select(feat.TRIAL_FEATURES).to_numpy()
        if self.trial_feature_set != "readgaze":
            trial_raw = self._published_trial_features(trials, FEATURE_SETS[self.trial_feature_set])
        return {  # the big matrices column-major: a fold's scaler reads one contiguous column at a time
            "word_raw": np.asfortranarray(trial_words.select(*feat.WORD_MEASURES, *feat.WORD_LEXICAL).to_numpy()),
            "word_offsets": _offsets(trial_words["trial_row"].to_numpy(), n),
            "word_index": trial_words["word_index"].to_numpy().astype(np.int64),
            "fixation_own_raw": np.asfortranarray(fixations.select(feat.FIXATION_OWN).to_numpy()),
            "fixation_word_raw": np.asfortranarray(fixations.select(*feat.WORD_MEASURES, *feat.WORD_LEXICAL)
                                                   .to_numpy()),
            "fixation_offsets": _offsets(fixations["trial_row"].to_numpy(), n),
            "fixation_word_index": np.where(fixations["on_known_word"].to_numpy(),
                                            fixations["word_index"].fill_null(OFF_TEXT).to_numpy(), OFF_TEXT)
            .astype(np.int64),
            "fixation_word_category": fixations["word_category"].to_numpy().astype(np.int64),
            "fixation_word_is_content": fixations["word_is_content"].to_numpy().astype(np.int64),
            "trial_raw": np.asarray(trial_raw, dtype=np.float64),
            "trial_features": trial_table,
            "unknown_per_trial": np.bincount(unknown.to_numpy().astype(np.int64), minlength=n),
        }

    def _fold_arrays(self, shared: dict, source: dict | None = None) -> dict:
        """The arrays the fold's datasets read: the shared matrices (or ``source``'s, an ablated copy), scaled on
        access by scalers fit on this fold's training trials of ``shared`` only (cached per training set when the
        array cache is on)."""
        from readgaze.models.data import cache

        n = shared["trials"].height
        train = np.sort(self.trials.filter(pl.col("split") == "train")["trial_row"].to_numpy().astype(np.int64))
        is_train = np.zeros(n, bool)
        is_train[train] = True
        trial_names = FEATURE_SETS[self.trial_feature_set]
        names = {"word": feat.WORD_MEASURES + feat.WORD_LEXICAL, "fixation": feat.FIXATION_OWN, "trial": trial_names}

        def fit() -> dict[str, np.ndarray]:
            rows = {"word": np.repeat(is_train, np.diff(shared["word_offsets"])),
                    "fixation": np.repeat(is_train, np.diff(shared["fixation_offsets"])), "trial": is_train}
            matrices = {"word": shared["word_raw"], "fixation": shared["fixation_own_raw"],
                        "trial": shared["trial_raw"]}
            stats = {}
            for part, keep in rows.items():  # column by column: one column's training rows in memory at a time
                fitted = [feat.RobustScaler((name,)).fit(np.asarray(matrices[part][:, j])[keep][:, None])
                          for j, name in enumerate(names[part])]
                stats[f"{part}_center"] = np.concatenate([f.center for f in fitted])
                stats[f"{part}_scale"] = np.concatenate([f.scale for f in fitted])
            return stats

        if self.scalers is None:  # fit on the training split; a model bundle brings its own (scoring new data)
            key = getattr(self, "_cache_key", None)
            stats = cache.load_or_fit_scalers(key, train, fit) if key else fit()
            self.scalers = {}
            for part, part_names in names.items():
                scaler = feat.RobustScaler(part_names)
                scaler.center, scaler.scale = stats[f"{part}_center"], stats[f"{part}_scale"]
                self.scalers[part] = scaler
        scalers = self.scalers
        source = shared if source is None else source
        return {
            "word": _ScaledRows((source["word_raw"], scalers["word"])),
            "word_offsets": source["word_offsets"],
            "word_index": source["word_index"],
            "fixation": _ScaledRows((source["fixation_own_raw"], scalers["fixation"]),
                                    (source["fixation_word_raw"], scalers["word"])),
            "fixation_offsets": source["fixation_offsets"],
            "fixation_word_index": source["fixation_word_index"],
            "fixation_word_category": source["fixation_word_category"],
            "fixation_word_is_content": source["fixation_word_is_content"],
            "trial": _ScaledRows((source["trial_raw"], scalers["trial"])),
        }

    def _published_trial_features(self, trials: pl.DataFrame, names: tuple[str, ...]) -> np.ndarray:
        """``(n_trials, len(names))`` float64 of a :mod:`readgaze.features` set, rows in ``trial_row`` order."""
        tables = {t: self._scan(t) for t in ("fixations", "words", "word_measures")}
        table = compute_feature_sets(tables["fixations"], tables["words"], tables["word_measures"],
                                     trials.lazy().select("trial_id", "text_id"), sets=(self.trial_feature_set,))
        ordered = trials.select("trial_row", "trial_id").join(table, on="trial_id", how="left").sort("trial_row")
        return feature_matrix(ordered, names)

    def _tokenise(self, trials: pl.DataFrame) -> dict:
        """Tokenise each distinct (text, second segment) once: ``token_key`` maps each trial row to its encoding in
        ``encodings``, ``token_cut`` is each trial's number of words cut from the paragraph's start."""
        tokenizer = load_tokenizer(self.text_encoder)
        second = TASKS[self.task].second_segment
        keys = trials.select("trial_row", "text_id", second.alias("second"))
        texts = (feat.word_table(self._scan("words")).select("text_id", "word").collect()
                 .group_by("text_id", maintain_order=True).agg("word"))
        unique = keys.select("text_id", "second").unique(maintain_order=True).with_row_index("key")
        unique = unique.join(texts, on="text_id", how="left")
        encodings = [_encode(tokenizer, text_words, second_text, self.max_text_tokens,
                             TASKS[self.task].second_max_tokens)
                     for text_words, second_text in zip(unique["word"].to_list(), unique["second"].to_list())]
        key = keys.join(unique, on=["text_id", "second"], how="left", nulls_equal=True).sort("trial_row")["key"]
        key = key.to_numpy()
        cut_per_trial = np.array([enc["first_word"] for enc in encodings], np.int64)[key]
        return {"token_key": np.asarray(key, np.int64), "encodings": encodings, "token_cut": cut_per_trial}

    def _ablated(self, shared: dict) -> dict:
        """The task arrays with :attr:`ablate` applied (:mod:`readgaze.models.data.ablate`), in memory (the cache
        keeps the real ones); the fold's scalers are still fit on the real training trials."""
        from readgaze.models.data.ablate import apply_ablation

        spec = TASKS[self.task]
        trials = shared["trials"].select("trial_row", "text_id", spec.second_segment.alias("_second")).join(
            self.trials.select("trial_row", "split"), on="trial_row", how="left", maintain_order="left")
        word_rows = None
        if self.ablate == "text":
            counts = np.diff(shared["word_offsets"])
            word_rows = pl.DataFrame({"text_id": np.repeat(trials["text_id"].to_numpy(), counts),
                                      "word_index": shared["word_index"]}).cast({"text_id": trials["text_id"].dtype})
            table = feat.word_table(self._scan("words")).select(
                "text_id", "word_index", "word", "word_category", "word_is_content").collect()
            word_rows = word_rows.cast({"word_index": table["word_index"].dtype}).join(
                table, on=["text_id", "word_index"], how="left", maintain_order="left")
        tokenizer, second = load_tokenizer(self.text_encoder), trials["_second"].to_list()

        def encode(words: list[str], row: int) -> dict:
            return _encode(tokenizer, words, second[row], self.max_text_tokens, spec.second_max_tokens)

        return apply_ablation(self.ablate, shared, trials, seed=self.split_seed, qc=self.qc, encode=encode,
                              word_rows=word_rows)

    def _count_cut_fixations(self, arrays: dict, tokens: dict, kept: np.ndarray) -> None:
        """QC: fixations of the fold's trials on words cut off by the left truncation (the dataset drops them, see
        ``_TrialDataset``)."""
        counts = np.diff(arrays["fixation_offsets"])
        is_kept = np.zeros(len(counts), bool)
        is_kept[kept] = True
        per_fixation = np.repeat(np.where(is_kept, tokens["cut_per_trial"], 0), counts)
        word = arrays["fixation_word_index"]
        self.qc.add("tokenise", "fixations", "cut off by max_text_tokens: on a word cut from the paragraph",
                    int(((word >= 0) & (word < per_fixation)).sum()), "dropped",
                    "later fixations keep their order; word indices shift down by the number of cut words")


class _ScaledRows:
    """Rows of one or more unscaled matrices (memory-mapped from the array cache), each part scaled by its
    :class:`~readgaze.features.RobustScaler` when read; the parts' columns side by side.

    ``rows[a:b]`` gives ``(b - a, n_columns)`` float32, ``rows[i]`` one row: what a scaled matrix would give, without
    holding the whole scaled matrix in every process.
    """

    def __init__(self, *parts: tuple[np.ndarray, feat.RobustScaler]) -> None:
        self.parts = parts

    def __len__(self) -> int:
        return len(self.parts[0][0])

    def __getitem__(self, index) -> np.ndarray:
        single = isinstance(index, (int, np.integer))
        blocks = [scaler.transform(np.asarray(raw[index], np.float64).reshape(1, -1) if single else raw[index])
                  for raw, scaler in self.parts]
        out = blocks[0] if len(blocks) == 1 else np.concatenate(blocks, axis=1)
        return out[0] if single else out


def _trial_assignment(trials: pl.DataFrame, n_folds: int, fold: int, seed: int) -> pl.DataFrame:
    """Trials (not participants or items) in ``n_folds`` random folds; val = fold, test = fold + 1; regime "seen"."""
    if n_folds < 3 or trials.height < n_folds:
        raise ConfigError(f"split_unit trial: got n_folds {n_folds} for {trials.height} trials, expected "
                          f"3 <= n_folds <= trials")
    order = np.random.default_rng(seed).permutation(trials.height)
    trial_fold = np.empty(trials.height, np.int64)
    trial_fold[order] = np.arange(trials.height) % n_folds
    val, test = fold_roles(fold, n_folds)
    split = np.where(trial_fold == val, "val", np.where(trial_fold == test, "test", "train"))
    return pl.DataFrame({"trial_id": trials["trial_id"], "fold_index": pl.Series([fold] * trials.height,
                                                                                 dtype=pl.Int32),
                         "split": split, "regime": "seen"})
