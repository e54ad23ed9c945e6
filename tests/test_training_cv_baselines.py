"""``readgaze cv --baselines``: which classical baselines a run adds."""

import pytest

from readgaze.baselines import BASELINES
from readgaze.errors import ConfigError
from readgaze.models.training.cv import DEFAULT_BASELINES, baseline_kinds


def test_default_all_none_and_named_kinds():
    assert baseline_kinds(True) == DEFAULT_BASELINES
    assert {"majority", "reading_speed", "mean_total_fixation_duration"} <= set(DEFAULT_BASELINES)
    assert baseline_kinds(False) == ()
    assert baseline_kinds(["all"]) == tuple(BASELINES)
    assert baseline_kinds(["svm", "majority"]) == ("svm", "majority")


def test_an_unknown_kind_names_the_valid_ones():
    with pytest.raises(ConfigError, match="unknown svn.*meziere_logistic_regression"):
        baseline_kinds(["svn"])
