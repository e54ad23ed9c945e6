"""The line-assignment method protocol: one trial, many trials, a batch; plug-ins as objects or plain functions."""

from __future__ import annotations

import ast
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from readgaze import lines
from readgaze.errors import ConfigError
from readgaze.lines.batch import Batch
from readgaze.lines.protocol import LineAssigner, Method, ReportingLineAssigner, TrialFlags

TRIALS = [(np.array([[0.0, 48.0], [5.0, 99.0], [9.0, 151.0]]), np.array([50.0, 100.0, 150.0]), None, None),
          (np.array([[0.0, 104.0]]), np.array([50.0, 100.0]), None, None),
          (np.zeros((0, 2)), np.array([50.0, 100.0]), None, None),                  # no fixation: not passed on
          (np.array([[0.0, 10.0], [1.0, 900.0]]), np.array([50.0]), None, None)]    # one line: not passed on


def _nearest(xy, line_y_px):
    return np.abs(xy[:, 1, None] - line_y_px[None, :]).argmin(axis=1)


def test_every_builtin_method_is_a_line_assigner_with_all_three_entry_points():
    for name, method in lines.METHODS.items():
        assert isinstance(method, LineAssigner) and isinstance(method, Method), name
    assert lines.get_method("nearest") is lines.METHODS["attach"]
    # no function attributes any more: batching is the Method's
    assert not hasattr(lines.slice, "assign_many") and lines.METHODS["slice"].batch is not None


def test_a_plain_function_is_wrapped_and_derives_many_and_batch():
    calls = []

    def one(xy, line_y_px):
        calls.append(len(xy))
        return _nearest(xy, line_y_px)

    method = lines.get_method(one)
    assert isinstance(method, Method) and method.name == "one"
    got = lines.assign_trials(TRIALS, one)
    assert [g.tolist() for g in got] == [[0, 1, 2], [1], [], [0, 0]] and calls == [3, 1]   # edge trials answered
    batch = Batch.from_trials(TRIALS)
    assert lines.assign_batch(batch, one).tolist() == [0, 1, 2, 1, 0, 0]


def test_a_line_assigner_object_is_used_through_its_entry_points():
    class Counting:
        name = "counting"

        def __init__(self):
            self.seen = []

        def parameters(self):
            return {}

        def assign_trial(self, xy, line_y_px, **params):
            self.seen.append("trial")
            return _nearest(xy, line_y_px)

        def assign_trials(self, trials, **params):
            self.seen.append(("trials", len(trials)))
            return [_nearest(t[0], t[1]) for t in trials]

        def assign_batch(self, batch, **params):
            self.seen.append("batch")
            return np.concatenate([_nearest(t[0], t[1]) for t in batch.trials()])

    obj = Counting()
    assert isinstance(obj, LineAssigner) and lines.get_method(obj) is obj
    lines.assign_trials(TRIALS, obj)
    lines.assign_trial(TRIALS[0][0], TRIALS[0][1], obj)
    lines.assign_batch(Batch.from_trials(TRIALS), obj)
    assert obj.seen == [("trials", 2), "trial", "batch"]
    with pytest.raises(ConfigError, match="counting.*unknown"):
        lines.assign_trials(TRIALS, obj, unknown=1)


def test_a_reporting_assigner_flags_trials_in_assign_lines_qc():
    class Flagging(Method):
        def assign_trials_reported(self, trials, **params):
            got = self.assign_trials(trials, **params)
            return got, TrialFlags(np.array([len(t[0]) > 2 for t in trials]), "too many fixations to trust")

    method = Flagging("flagging", _nearest)
    assert isinstance(method, ReportingLineAssigner) and not isinstance(lines.METHODS["slice"], ReportingLineAssigner)
    got, flags = lines.assign_trials_reported(TRIALS, method)
    assert flags.flagged.tolist() == [True, False, False, False]
    fixations = pl.DataFrame({"trial_id": ["a"] * 3 + ["b"], "fixation_index": [0, 1, 2, 0],
                              "x_px": [0.0, 5.0, 9.0, 0.0], "y_px": [48.0, 99.0, 151.0, 104.0]})
    words = pl.DataFrame({"text_id": "t", "line_index": [0, 1, 2], "top_px": [40.0, 90.0, 140.0],
                          "bottom_px": [60.0, 110.0, 160.0]})
    _, qc = lines.assign_lines(fixations, words, method=method)
    (record,) = [r for r in qc.records if r["table"] == "trials"]
    assert (record["count"], record["detail"]) == (1, "a") and "too many fixations" in record["reason"]


def test_dist_plugin_is_a_reporting_assigner_through_the_entry_point():
    pytest.importorskip("readgaze.models.dist")
    method = lines.get_method("dist")
    assert isinstance(method, ReportingLineAssigner) and method.name == "dist"


def test_models_dist_imports_no_private_name_of_readgaze_lines():
    folder = Path(__file__).resolve().parents[1] / "models" / "dist"
    private = []
    for path in folder.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("readgaze.lines"):
                private += [f"{path.name}: {node.module}.{a.name}" for a in node.names if a.name.startswith("_")]
                private += [f"{path.name}: {node.module}" for part in (node.module or "").split(".")
                            if part.startswith("_")]
    assert private == []
