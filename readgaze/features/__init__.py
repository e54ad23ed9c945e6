"""Reading features: the one implementation of every trial-level and fixation-step feature readgaze computes.

Prep (the trial features written into ``trials.parquet``), the classical baselines and the neural models' inputs all
compute a feature of a given name with the same expression, and a feature *set* is a named list over those
definitions (:data:`FEATURE_SETS`): the kNN and gradient-boosting baselines and the models' trial vector both take
the set ``readgaze``. The modules:

* :mod:`readgaze.features.trial`: trial-level features (speed, skipping, both regression rates under their own
  names, saccades, gaze entropies), the shared aggregations and the missing-value rule (:func:`nan_mean`).
* :mod:`readgaze.features.sets`: the published baselines' sets, BEyeLSTM's global block, the fixation steps
  (:func:`fixation_steps`) and the word classes.
* :mod:`readgaze.features.inputs`: the models' word, fixation and trial tables and matrices, the published
  feature correspondence and the robust scaler.

:func:`definitions_fingerprint` changes whenever one of these definitions does (the models' array cache keys on it).
"""

from __future__ import annotations

import hashlib
import inspect
import sys

from readgaze.features.inputs import (
    BINARY,
    CONTENT_POS,
    FIXATION_FEATURES,
    FIXATION_OWN,
    NULLABLE,
    PUBLISHED_FEATURES,
    SHARES,
    TRIAL_FEATURE_NAMES,
    WORD_FEATURES,
    WORD_LEXICAL,
    WORD_MEASURES,
    RobustScaler,
    feature_set,
    fixation_table,
    trial_feature_table,
    trial_word_table,
    with_indicators,
    word_table,
)
from readgaze.features.sets import (
    BEYELSTM_GROUPS,
    BEYELSTM_WORD_MEASURES,
    ENTITY_TYPES,
    FEATURE_SETS,
    FSE_GLOBAL,
    REDUCED_POS,
    STATISTICS,
    SUMMARY_FIXATION_COLUMNS,
    SUMMARY_WORD_MEASURES,
    UNIVERSAL_POS,
    UNIVERSAL_TO_REDUCED,
    compute_feature_sets,
    feature_matrix,
    fixation_steps,
    word_classes,
)
from readgaze.features.trial import (
    SUMMARY_FEATURES,
    TRIAL_FEATURES,
    compute_trial_features,
    fixation_regression_rate,
    nan_mean,
    reading_speed_wpm,
    trial_fixation_aggregates,
    trial_word_aggregates,
)

MODULES = ("readgaze.features.trial", "readgaze.features.sets", "readgaze.features.inputs")


def definitions_fingerprint() -> str:
    """SHA-256 (24 hex digits) of every feature definition as it is now: the source of each function and class of
    this package and its modules (looked up by name, so a replaced definition counts) and the value of each
    constant (feature lists, sets, groups). A change to any feature, set or missing-value rule changes it."""
    digest = hashlib.sha256()
    for name in (__name__, *MODULES):
        namespace = vars(sys.modules[name])
        for key in sorted(namespace):
            value = namespace[key]
            if key.startswith("__") or inspect.ismodule(value):
                continue
            if inspect.isfunction(value) or inspect.isclass(value):
                try:
                    text = inspect.getsource(value)
                except (OSError, TypeError):
                    text = repr(getattr(value, "__code__", value))
            elif isinstance(value, (str, int, float, tuple, list, dict, frozenset, set)):
                text = repr(sorted(value) if isinstance(value, (set, frozenset)) else value)
            else:
                continue
            digest.update(f"{name}.{key}\0{text}\0".encode())
    return digest.hexdigest()[:24]


__all__ = [
    "BEYELSTM_GROUPS", "BEYELSTM_WORD_MEASURES", "BINARY", "CONTENT_POS", "ENTITY_TYPES", "FEATURE_SETS",
    "FIXATION_FEATURES", "FIXATION_OWN", "FSE_GLOBAL", "MODULES", "NULLABLE", "PUBLISHED_FEATURES", "REDUCED_POS",
    "SHARES", "STATISTICS", "SUMMARY_FEATURES", "SUMMARY_FIXATION_COLUMNS", "SUMMARY_WORD_MEASURES",
    "TRIAL_FEATURES", "TRIAL_FEATURE_NAMES", "UNIVERSAL_POS", "UNIVERSAL_TO_REDUCED", "WORD_FEATURES", "WORD_LEXICAL",
    "WORD_MEASURES", "RobustScaler", "compute_feature_sets", "compute_trial_features", "definitions_fingerprint",
    "feature_matrix", "feature_set", "fixation_regression_rate", "fixation_steps", "fixation_table", "nan_mean",
    "reading_speed_wpm", "trial_feature_table", "trial_fixation_aggregates", "trial_word_aggregates",
    "trial_word_table", "with_indicators", "word_classes", "word_table",
]
