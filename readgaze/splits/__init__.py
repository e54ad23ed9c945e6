"""Cross-validation splits with the three generalisation regimes of the reading-decoding literature.

Items and participants are each partitioned into K folds (:func:`make_splits`, or the published files
through :func:`read_fold_files`); :func:`assign_fold` turns fold i into train / validation / test trials
with the regimes *new item*, *new participant* and *new item & participant* (EyeBench, Shubi et al., 2025) and
checks that nothing leaks (:func:`check_reader_label` for a label constant within a reader);
:func:`describe` states what a report must say about them; :func:`compare_with_published` checks an assignment
against EyeBench's per-trial fold tables.
"""

from readgaze.splits.assign import SPLITS, assign_fold, check_leakage
from readgaze.splits.describe import SplitDescription, describe
from readgaze.splits.folds import N_FOLDS, Splits, make_splits, read_fold_files
from readgaze.splits.published import PUBLISHED_REGIMES, compare_with_published, read_fold_trial_ids
from readgaze.splits.reader_level import check_reader_label
from readgaze.splits.regimes import (
    ALL,
    BATCH_REGIMES,
    REGIME_ORDER,
    REGIMES,
    SEEN,
    TITLES,
    UNSEEN_ITEM,
    UNSEEN_PARTICIPANT,
    regime_title,
)

__all__ = ["ALL", "BATCH_REGIMES", "PUBLISHED_REGIMES", "REGIMES", "REGIME_ORDER", "SEEN", "SPLITS", "TITLES",
           "UNSEEN_ITEM", "UNSEEN_PARTICIPANT", "regime_title", "SplitDescription", "Splits", "assign_fold",
           "N_FOLDS", "check_leakage", "check_reader_label", "compare_with_published", "describe", "make_splits",
           "read_fold_files", "read_fold_trial_ids"]
