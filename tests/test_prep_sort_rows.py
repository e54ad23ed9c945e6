"""sort_rows' per-run order check (a String key and an integer index) agrees with the whole-column
expression it short-cuts (#18): sorted tables, ties, a key in two runs, an index falling within a run."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from readgaze.data_prep.pipeline import _in_order, _sorted_by


def _cases():
    rng = np.random.default_rng(11)
    ids = np.repeat([f"r{i:03d}" for i in range(50)], rng.integers(1, 30, 50))
    idx = np.concatenate([np.sort(rng.integers(0, 40, (ids == t).sum())) for t in dict.fromkeys(ids)])
    done = pl.DataFrame({"t": ids, "i": idx.astype(np.int32)})  # sorted, with ties
    yield "sorted with ties", done, True
    swapped = done.with_columns(pl.col("i").reverse().over("t"))
    yield "index falls within a run", swapped, bool(swapped.select(_in_order(["t", "i"])).item())
    split = pl.concat([done.slice(0, 40), done.slice(60), done.slice(40, 20)])
    yield "a trial in two runs", split, False
    yield "keys descending", done.sort("t", descending=True, maintain_order=True), False
    yield "one row", done.head(1), True
    a = pl.DataFrame({"t": ["a", "b", "a"], "i": [0, 0, 1]})
    yield "key back after another", a, False
    b = pl.DataFrame({"t": ["a", "a", "b", "b"], "i": [3, 5, 0, 0]})
    yield "index restarts at a new key", b, True


@pytest.mark.parametrize("name, frame, want", list(_cases()), ids=[c[0] for c in _cases()])
def test_sorted_by_equals_the_expression(name, frame, want):
    expr = frame.select(_in_order(["t", "i"])).item() if frame.height > 1 else True
    assert expr == want
    assert _sorted_by(frame, ["t", "i"]) == want
