"""``ReadingDataModule``: a dataset folder + one cross-validation fold → batches of :class:`~models.batch.ReadingBatch`.

Steps (``setup``): read the trials of the task, give each its split and regime for the fold
(:func:`readgaze.splits.assign_fold`), build word-, fixation- and trial-level features (:mod:`models.features`),
fit the scalers on the training split only, and tokenise each text once with the encoder's tokenizer, keeping the
token ↔ word alignment from the tokenizer's ``word_ids()``.

Validation and test use one loader each, with every trial's regime in the batch: the base model scores each regime
(and all pooled) from one pass. Per-regime loaders would multiply Lightning's bookkeeping and log names while the
"all" number still needs the pooled predictions, and the new-item-&-participant regime is often a handful of trials.
"""

from __future__ import annotations

import functools
import logging
from pathlib import Path
from typing import Literal

import lightning as L
import numpy as np
import polars as pl
import torch
from torch.utils.data import DataLoader, Dataset

from models import features as feat
from models.batch import OFF_TEXT, REGIMES, ReadingBatch
from models.text_encoder import load_tokenizer
from readgaze.errors import ConfigError, DataError, SchemaError
from readgaze.qc import QCLog
from readgaze.splits import assign_fold, make_splits, read_fold_files

log = logging.getLogger(__name__)
Task = Literal["reading_goal", "comprehension", "goal_question"]
TABLES = ("trials", "words", "fixations", "word_measures")


class ReadingDataModule(L.LightningDataModule):
    """Trials of a dataset folder for one task and fold.

    Parameters
    ----------
    path : str
        Dataset folder written by ``readgaze prep`` (``trials.parquet``, ``words.parquet``, ``fixations.parquet``,
        ``word_measures.parquet``).
    task : {"reading_goal", "comprehension", "goal_question"}
        reading_goal: 1 = information seeking, text = paragraph. comprehension: 1 = ``is_correct``, text =
        paragraph + question. goal_question: the index of the reader's question among the paragraph's questions
        (sorted by ``onestopqa_question_id``; information-seeking trials only), text = paragraph + all its questions.
    fold : int
        Validation fold; test is ``fold + 1`` (mod ``n_folds``).
    n_folds : int
        K for :func:`readgaze.splits.make_splits` (ignored with ``fold_files``).
    split_seed : int
        Seed of the fold assignment.
    fold_files : str, optional
        Folder of published fold files (``items/fold_k.csv``, ``subjects/fold_k.csv``) instead of making folds.
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
        Tokenizer name (see :mod:`models.text_encoder`); in the CLI, linked to the model's ``text_encoder``.
    max_text_tokens : int
        Token budget of the text (paragraph truncated from the end; fixations on cut words count as off text).
    batch_size : int
    num_workers : int
    """

    def __init__(self, path: str, task: Task = "reading_goal", fold: int = 0, n_folds: int = 10,
                 split_seed: int = 0, fold_files: str | None = None, strict: bool = False,
                 split_unit: Literal["auto", "participant_item", "trial"] = "auto", text_encoder: str = "tiny", max_text_tokens: int = 512, batch_size: int = 16,
                 num_workers: int = 0) -> None:
        super().__init__()
        self.path, self.task, self.fold, self.n_folds = Path(path), task, fold, n_folds
        self.split_seed, self.fold_files, self.strict, self.split_unit = split_seed, fold_files, strict, split_unit
        self.text_encoder, self.max_text_tokens = text_encoder, max_text_tokens
        self.batch_size, self.num_workers = batch_size, num_workers
        self.qc = QCLog()
        self.trials: pl.DataFrame | None = None
        self.trial_features_raw: pl.DataFrame | None = None  # unscaled TRIAL_FEATURES per trial (baselines)
        self._datasets: dict[str, _TrialDataset] = {}
        self._num_classes: int | None = None

    # ---- dimensions the models need (linked in models.cli) ----
    @property
    def n_fixation_features(self) -> int:
        return len(feat.FIXATION_FEATURES)

    @property
    def n_word_features(self) -> int:
        return len(feat.WORD_FEATURES)

    @property
    def n_trial_features(self) -> int:
        return len(feat.TRIAL_FEATURE_NAMES)

    @property
    def num_classes(self) -> int:
        """2 for the binary tasks; for goal_question the most questions any paragraph has."""
        if self._num_classes is None:
            if self.task == "goal_question" and "onestopqa_question_id" not in self._scan("trials").collect_schema():
                raise ConfigError("task goal_question needs the column onestopqa_question_id (which of the "
                                  "paragraph's questions the reader was given); this dataset has none",
                                  file=self.path / "trials.parquet", column="onestopqa_question_id")
            self._num_classes = 2 if self.task != "goal_question" else int(
                self._scan("trials").group_by("text_id").agg(pl.col("onestopqa_question_id").n_unique())
                .select(pl.col("onestopqa_question_id").max()).collect().item())
        return self._num_classes

    @property
    def class_counts(self) -> torch.Tensor:
        """Training trials per class, ``(num_classes,)`` int64 (for the class weights of the loss)."""
        labels = self.trials.filter(pl.col("split") == "train")["label"].to_numpy()
        return torch.as_tensor(np.bincount(labels, minlength=self.num_classes), dtype=torch.int64)

    # ---- Lightning hooks ----
    def setup(self, stage: str | None = None) -> None:
        if self.trials is not None:
            return
        trials = self._task_trials()
        trials = trials.join(self._assignment(trials), on="trial_id", how="left")
        unused = trials.filter(pl.col("split").is_null()).height
        self.qc.add("fold", "trials", "not in this fold's regimes (strict)", unused)
        self.trials = trials.filter(pl.col("split").is_not_null()).sort("trial_id").with_row_index("trial_row")
        if self.trials.filter(pl.col("split") == "train").height == 0:
            raise DataError(f"{self.path}: fold {self.fold} has no training trials")
        classes = self.trials["label"].n_unique()
        if classes < 2:
            message = (f"task {self.task}: every trial of this dataset has the same label "
                       f"({self.trials['label'][0]}); the model can run but learns and measures nothing")
            log.warning(message)
            self.qc.add("task", "trials", "single_class_label", self.trials.height, "warning", message)
        arrays = self._feature_arrays()
        tokens = self._tokenise()
        for split in ("train", "val", "test"):
            rows = self.trials.filter(pl.col("split") == split)["trial_row"].to_numpy()
            self._datasets[split] = _TrialDataset(rows, self.trials, arrays, tokens)
        log.info("fold %d: %s", self.fold, {s: len(d) for s, d in self._datasets.items()})

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
    def _scan(self, table: str) -> pl.LazyFrame:
        file = self.path / f"{table}.parquet"
        if not file.is_file():
            raise ConfigError(f"dataset folder {self.path} has no {table}.parquet (expected {', '.join(TABLES)})")
        return pl.scan_parquet(file)

    def _task_trials(self) -> pl.DataFrame:
        """The task's trials with an Int64 ``label``; excluded trials are counted per reason."""
        trials = self._scan("trials").collect()
        needed = {"reading_goal": ["reading_goal"], "comprehension": ["is_correct", "question"],
                  "goal_question": ["reading_goal", "onestopqa_question_id", "question"]}[self.task]
        missing = [c for c in ["trial_id", "participant_id", "item_id", "text_id", *needed] if c not in trials.columns]
        if missing:
            raise SchemaError(f"trials.parquet lacks column(s) {missing} needed for task {self.task}",
                              file=self.path / "trials.parquet")
        for flag in ("practice", "repeated_reading"):
            if flag in trials.columns:
                self.qc.add("task", "trials", f"{flag} trial", trials[flag].fill_null(False).sum())
                trials = trials.filter(~pl.col(flag).fill_null(False))
        if self.task == "reading_goal":
            label = (pl.col("reading_goal") == "information_seeking").cast(pl.Int64)
            keep = pl.col("reading_goal").is_in(["ordinary", "information_seeking"])
        elif self.task == "comprehension":
            label, keep = pl.col("is_correct").cast(pl.Int64), pl.col("is_correct").is_not_null()
        else:
            ids = pl.col("onestopqa_question_id")
            candidates = (trials.filter(ids.is_not_null()).select("text_id", "onestopqa_question_id", "question")
                          .unique().sort("text_id", "onestopqa_question_id")
                          .group_by("text_id", maintain_order=True)
                          .agg(pl.col("question").str.join(" ").alias("candidate_questions")))
            keep = (pl.col("reading_goal") == "information_seeking") & ids.is_not_null()
            trials = trials.join(candidates, on="text_id", how="left").with_columns(
                (ids.rank("dense").over("text_id").cast(pl.Int64) - 1).alias("_rank"))
            label = pl.col("_rank")
        self.qc.add("task", "trials", f"no {self.task} label", trials.filter(~keep.fill_null(False)).height)
        return trials.filter(keep.fill_null(False)).with_columns(label.alias("label"))

    def _assignment(self, trials: pl.DataFrame) -> pl.DataFrame:
        if self.split_unit == "trial":
            return _trial_assignment(trials, self.n_folds, self.fold, self.split_seed)
        if self.fold_files:
            splits = read_fold_files(self.fold_files)
        else:
            stratify = "reading_goal" if "reading_goal" in trials.columns else None
            try:
                splits = make_splits(trials, n_folds=self.n_folds, seed=self.split_seed, stratify_by=stratify)
            except ConfigError as error:
                if self.split_unit == "auto":
                    return self._fallback_to_trials(trials, error)
                raise ConfigError(f"{error.message} (data too small for {self.n_folds} participant and item folds: "
                                  f"lower data.n_folds, or for a smoke run set data.split_unit trial)") from error
        return assign_fold(trials, splits, self.fold, strict=self.strict).select(
            "trial_id", "fold_index", "split", "regime")

    def _fallback_to_trials(self, trials: pl.DataFrame, error: ConfigError) -> pl.DataFrame:
        """split_unit auto on data too small for participant x item folds: trial folds, said loudly."""
        n_folds = max(3, min(self.n_folds, trials.height))
        message = (f"{error.message}: data too small for participant x item folds, so trials are dealt into "
                   f"{n_folds} random folds (participants and items leak across splits; smoke run only, "
                   f"regime 'seen'; readgaze cv refuses this)")
        log.warning(message)
        self.qc.add("split", "trials", "split_unit_fallback_to_trial", trials.height, "warning", message)
        return _trial_assignment(trials, n_folds, self.fold % n_folds, self.split_seed)

    def _feature_arrays(self) -> dict[str, np.ndarray]:
        """Scaled word/fixation/trial matrices, rows ordered by trial, plus per-trial offsets."""
        trials = self.trials.lazy().select("trial_row", "trial_id", "text_id")
        words = feat.word_table(self._scan("words"))
        trial_words = feat.trial_word_table(trials, words, self._scan("word_measures")).collect()
        no_words = self.trials.height - trial_words["trial_row"].n_unique()
        if no_words:
            raise DataError(f"{no_words} trials have a text_id with no rows in words.parquet",
                            file=self.path / "words.parquet", column="text_id")
        fixations = feat.fixation_table(trials, self._scan("fixations"), trial_words.lazy()).collect()
        trial_table = feat.trial_feature_table(trials, fixations.lazy(), trial_words.lazy()).collect()
        self.trial_features_raw = self.trials.select("trial_row", "trial_id").join(trial_table, on="trial_row")
        unknown = fixations.filter(pl.col("word_index").is_not_null() & ~pl.col("on_known_word")).height
        self.qc.add("features", "fixations", "word_index not in the text: treated as off text", unknown, "changed")
        train = self.trials.filter(pl.col("split") == "train")["trial_row"].to_numpy()
        word_raw = trial_words.select(*feat.WORD_MEASURES, *feat.WORD_LEXICAL).to_numpy()
        fix_own = fixations.select(feat.FIXATION_OWN).to_numpy()
        fix_word = fixations.select(*feat.WORD_MEASURES, *feat.WORD_LEXICAL).to_numpy()
        trial_raw = trial_table.select(feat.TRIAL_FEATURES).to_numpy()
        in_train = np.isin(trial_words["trial_row"].to_numpy(), train)
        word_scaler = feat.RobustScaler(feat.WORD_MEASURES + feat.WORD_LEXICAL).fit(word_raw[in_train])
        fix_scaler = feat.RobustScaler(feat.FIXATION_OWN).fit(
            fix_own[np.isin(fixations["trial_row"].to_numpy(), train)])
        trial_scaler = feat.RobustScaler(feat.TRIAL_FEATURES).fit(trial_raw[train])
        n = self.trials.height
        return {
            "word": word_scaler.transform(word_raw),
            "word_offsets": _offsets(trial_words["trial_row"].to_numpy(), n),
            "word_index": trial_words["word_index"].to_numpy().astype(np.int64),
            "fixation": np.concatenate([fix_scaler.transform(fix_own), word_scaler.transform(fix_word)], axis=1),
            "fixation_offsets": _offsets(fixations["trial_row"].to_numpy(), n),
            "fixation_word_index": np.where(fixations["on_known_word"].to_numpy(),
                                            fixations["word_index"].fill_null(OFF_TEXT).to_numpy(), OFF_TEXT)
            .astype(np.int64),
            "fixation_word_category": fixations["word_category"].to_numpy().astype(np.int64),
            "fixation_word_is_content": fixations["word_is_content"].to_numpy().astype(np.int64),
            "trial": trial_scaler.transform(trial_raw),
            "text_words": trial_words,
        }

    def _tokenise(self) -> dict[str, np.ndarray]:
        """Tokenise each distinct (text, second segment) once; ``key`` maps each trial row to its encoding."""
        tokenizer = load_tokenizer(self.text_encoder)
        second = {"reading_goal": pl.lit(None, pl.String), "comprehension": pl.col("question"),
                  "goal_question": pl.col("candidate_questions")}[self.task]
        keys = self.trials.select("trial_row", "text_id", second.alias("second"))
        texts = (feat.word_table(self._scan("words")).select("text_id", "word").collect()
                 .group_by("text_id", maintain_order=True).agg("word"))
        unique = keys.select("text_id", "second").unique(maintain_order=True).with_row_index("key")
        unique = unique.join(texts, on="text_id", how="left")
        encodings, truncated = [], 0
        for text_words, second_text in zip(unique["word"].to_list(), unique["second"].to_list()):
            enc = _encode(tokenizer, text_words, second_text, self.max_text_tokens)
            truncated += int((enc["word_token_end"] == 0).sum())
            encodings.append(enc)
        self.qc.add("tokenise", "words", "cut off by max_text_tokens (their fixations count as off text)",
                    truncated, "changed")
        key = keys.join(unique, on=["text_id", "second"], how="left", nulls_equal=True).sort("trial_row")["key"]
        return {"key": key.to_numpy(), "encodings": encodings}


def _trial_assignment(trials: pl.DataFrame, n_folds: int, fold: int, seed: int) -> pl.DataFrame:
    """Trials (not participants or items) in ``n_folds`` random folds; val = fold, test = fold + 1; regime "seen"."""
    if n_folds < 3 or trials.height < n_folds:
        raise ConfigError(f"split_unit trial: got n_folds {n_folds} for {trials.height} trials, expected "
                          f"3 <= n_folds <= trials")
    order = np.random.default_rng(seed).permutation(trials.height)
    trial_fold = np.empty(trials.height, np.int64)
    trial_fold[order] = np.arange(trials.height) % n_folds
    split = np.where(trial_fold == fold, "val", np.where(trial_fold == (fold + 1) % n_folds, "test", "train"))
    return pl.DataFrame({"trial_id": trials["trial_id"], "fold_index": pl.Series([fold] * trials.height, dtype=pl.Int32),
                         "split": split, "regime": "seen"})


def _encode(tokenizer, words: list[str], second: str | None, max_tokens: int) -> dict[str, np.ndarray]:
    """Token ids, segment ids and each paragraph word's half-open token span ``[start, end)`` (0, 0 if cut off)."""
    enc = tokenizer(words, second.split() if second else None, is_split_into_words=True,
                    truncation="only_first" if second else True, max_length=max_tokens)
    word_ids = np.array([-1 if w is None else w for w in enc.word_ids()])
    sequence = np.array([-1 if s is None else s for s in enc.sequence_ids()])
    segment = np.where(sequence == 0, 1, np.where(sequence == 1, 2, 0))
    start, end = np.zeros(len(words), np.int64), np.zeros(len(words), np.int64)
    positions = np.flatnonzero(segment == 1)
    ids = word_ids[positions]
    first = np.r_[True, ids[1:] != ids[:-1]]
    last = np.r_[ids[1:] != ids[:-1], True]
    start[ids[first]] = positions[first]
    end[ids[last]] = positions[last] + 1
    return {"input_ids": np.array(enc["input_ids"], np.int64), "token_segment": segment.astype(np.int64),
            "word_token_start": start, "word_token_end": end}


def _offsets(trial_rows: np.ndarray, n_trials: int) -> np.ndarray:
    """``(n_trials + 1,)`` start offsets of each trial's rows in a frame sorted by trial row."""
    return np.concatenate([[0], np.cumsum(np.bincount(trial_rows, minlength=n_trials))])


class _TrialDataset(Dataset):
    """One item per trial: numpy slices of the feature matrices and the trial's text encoding."""

    def __init__(self, rows: np.ndarray, trials: pl.DataFrame, arrays: dict, tokens: dict) -> None:
        self.rows, self.arrays, self.tokens = rows, arrays, tokens
        self.trial_id = trials["trial_id"].to_list()
        self.label = trials["label"].to_numpy()
        regime_code = {r: i for i, r in enumerate(REGIMES)}
        self.regime = np.array([regime_code[r] for r in trials["regime"].to_list()])

    def __len__(self) -> int:
        return len(self.rows)

    def __getitem__(self, i: int) -> dict:
        row, a = int(self.rows[i]), self.arrays
        w0, w1 = a["word_offsets"][row], a["word_offsets"][row + 1]
        f0, f1 = a["fixation_offsets"][row], a["fixation_offsets"][row + 1]
        enc = self.tokens["encodings"][self.tokens["key"][row]]
        n_words = len(enc["word_token_start"])
        if w1 - w0 != n_words:
            raise DataError(f"trial {self.trial_id[row]}: {w1 - w0} word rows but {n_words} words in its text")
        word_index = a["fixation_word_index"][f0:f1]
        cut_off = (word_index >= 0) & (enc["word_token_end"][np.maximum(word_index, 0)] == 0)
        return {"trial_id": self.trial_id[row], "label": self.label[row], "regime": self.regime[row],
                "word": a["word"][w0:w1], "fixation": a["fixation"][f0:f1],
                "fixation_word_index": np.where(cut_off, OFF_TEXT, word_index),
                "fixation_word_category": a["fixation_word_category"][f0:f1],
                "fixation_word_is_content": a["fixation_word_is_content"][f0:f1],
                "trial": a["trial"][row], **enc}


def _pad(arrays: list[np.ndarray], value, dtype) -> torch.Tensor:
    """Stack ragged arrays along a new batch axis, right-padded with ``value`` to the longest."""
    longest = max(len(x) for x in arrays)
    out = np.full((len(arrays), longest, *arrays[0].shape[1:]), value, dtype=dtype)
    for i, x in enumerate(arrays):
        out[i, :len(x)] = x
    return torch.from_numpy(out)


def collate(items: list[dict], pad_token_id: int) -> ReadingBatch:
    """Pad a list of trials to the batch's longest text, word and fixation sequence."""
    get = lambda key: [it[key] for it in items]  # noqa: E731
    input_ids = _pad(get("input_ids"), pad_token_id, np.int64)
    return ReadingBatch(
        trial_id=get("trial_id"),
        label=torch.as_tensor(np.array(get("label")), dtype=torch.int64),
        regime_index=torch.as_tensor(np.array(get("regime")), dtype=torch.int64),
        input_ids=input_ids,
        attention_mask=_pad([np.ones(len(x), bool) for x in get("input_ids")], False, bool),
        token_segment=_pad(get("token_segment"), 0, np.int64),
        word_token_start=_pad(get("word_token_start"), 0, np.int64),
        word_token_end=_pad(get("word_token_end"), 0, np.int64),
        word_features=_pad(get("word"), 0.0, np.float32),
        word_mask=_pad([np.ones(len(x), bool) for x in get("word")], False, bool),
        fixation_features=_pad(get("fixation"), 0.0, np.float32),
        fixation_mask=_pad([np.ones(len(x), bool) for x in get("fixation")], False, bool),
        fixation_word_index=_pad(get("fixation_word_index"), OFF_TEXT, np.int64),
        fixation_word_category=_pad(get("fixation_word_category"), 0, np.int64),
        fixation_word_is_content=_pad(get("fixation_word_is_content"), 0, np.int64),
        trial_features=torch.as_tensor(np.stack(get("trial")), dtype=torch.float32),
    )
