"""Check that two prepared dataset folders hold the same tables: every Parquet file's columns, dtypes, row order
and values equal (polars ``DataFrame.equals``, nulls equal to nulls).

Usage::

    python experiments/compare_prepared.py BEFORE_DIR AFTER_DIR

Exits 1 (naming the first differing columns) when a table differs or is missing.
"""

from __future__ import annotations

import sys
from pathlib import Path

import polars as pl


def differences(a: Path, b: Path) -> list[str]:
    """One line per table of ``a`` that ``b`` lacks or holds differently."""
    out = []
    names = sorted(p.name for p in Path(a).glob("*.parquet"))
    if not names:
        return [f"{a}: no Parquet tables"]
    for name in names:
        other = Path(b) / name
        if not other.is_file():
            out.append(f"{name}: missing from {b}")
            continue
        x, y = pl.read_parquet(Path(a) / name), pl.read_parquet(other)
        if x.equals(y, null_equal=True) and x.schema == y.schema:
            continue
        if x.columns != y.columns:
            out.append(f"{name}: columns {x.columns} != {y.columns}")
        elif x.height != y.height:
            out.append(f"{name}: {x.height} rows != {y.height}")
        else:
            bad = [c for c in x.columns if x.schema[c] != y.schema[c] or not x[c].equals(y[c], check_names=True)]
            out.append(f"{name}: columns differ: {bad}")
    return out


def main(argv=None) -> int:
    a, b = (Path(p) for p in (argv or sys.argv[1:]))
    bad = differences(a, b)
    for line in bad:
        print(line)
    if not bad:
        print(f"identical: {', '.join(sorted(p.name for p in a.glob('*.parquet')))}")
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
