"""``readgaze assign-lines --method M DIR``: (re)assign fixations to lines in a dataset folder.

Reads ``fixations.parquet``, ``words.parquet`` and ``trials.parquet`` from DIR, rewrites the ``line_index``
column of ``fixations.parquet`` (every other column is kept as it was) and records the method, its counts and
a per-trial vertical-drift summary under ``"line_assignment"`` in ``manifest.json``. Word alignment is not
re-run here (``readgaze prep`` does that). A reviewer's ``corrections.parquet`` (``readgaze review``) is re-applied
on top of the method's lines and counted.
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

import numpy as np
import polars as pl

from readgaze.dataset import MANIFEST, table_file
from readgaze.errors import ConfigError, ParseError


def _parse_value(text: str):
    """A ``--param`` value: JSON when it parses (numbers, lists, booleans), else the plain string."""
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def parse_params(items: list[str]) -> dict:
    """``["y_thresh=55", "methods=[\\"slice\\",\\"warp\\"]"]`` -> ``{"y_thresh": 55, "methods": [...]}``."""
    out = {}
    for item in items:
        if "=" not in item:
            raise ConfigError(f"--param: got {item!r}, expected NAME=VALUE (e.g. y_thresh=55)")
        key, value = item.split("=", 1)
        out[key.strip()] = _parse_value(value)
    return out


def _atomic_write_json(path: Path, obj) -> None:
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(obj, indent=1) + "\n")
    os.replace(tmp, path)


def assign_folder(folder: str | Path, method: str = "slice", **params) -> dict:
    """Assign lines in a dataset folder in place; return what was written to the manifest.

    Raises
    ------
    ParseError
        A parquet file is missing.
    SchemaError, ConfigError
        As :func:`readgaze.lines.assign_lines`.
    """
    from readgaze.lines import assign_lines

    folder = Path(folder)
    paths = {name: folder / table_file(name) for name in ("fixations", "words", "trials")}
    for name, path in paths.items():
        if not path.is_file():
            raise ParseError(f"{name}.parquet not found; expected a readgaze dataset folder", file=path)
    fixations = pl.read_parquet(paths["fixations"])
    out, qc = assign_lines(fixations, pl.scan_parquet(paths["words"]), pl.scan_parquet(paths["trials"]),
                           method=method, **params)
    reviewed = _reapply_corrections(folder, fixations.with_columns(out["line_index"]), qc)
    if reviewed is not None:  # the reviewer's hand-made lines (readgaze review) on top of the method's
        out = out.with_columns(reviewed["line_index"])
    had = "line_index" in fixations.columns
    changed = int((out["line_index"].ne_missing(fixations["line_index"].cast(pl.Int32))).sum()) if had else out.height
    qc.add("assign_lines", "fixations", "line_index differs from the previous assignment", changed, action="changed")
    new = fixations.with_columns(out["line_index"])
    tmp = paths["fixations"].with_suffix(".parquet.tmp")
    new.write_parquet(tmp)
    os.replace(tmp, paths["fixations"])
    drift = out.group_by("trial_id").agg(pl.col("vertical_drift_px").first())["vertical_drift_px"].drop_nulls()
    drift_np = np.abs(drift.to_numpy()) if len(drift) else np.zeros(1)
    record = {"method": method, "params": {k: v for k, v in params.items()}, "qc": qc.to_json(),
              "n_fixations": out.height, "n_assigned": int(out["line_index"].is_not_null().sum()),
              "vertical_drift_px": {"median_abs": float(np.median(drift_np)), "max_abs": float(drift_np.max()),
                                    "n_trials": len(drift)}}
    manifest_path = folder / MANIFEST
    manifest = json.loads(manifest_path.read_text()) if manifest_path.is_file() else {}
    manifest["line_assignment"] = record
    _atomic_write_json(manifest_path, manifest)
    return record


def _reapply_corrections(folder: Path, fixations: pl.DataFrame, qc) -> pl.DataFrame | None:
    """The folder's corrections log (:mod:`readgaze.corrections`) applied to the new lines, or None without one.

    Stale corrections are refused and counted; excluded trials are counted, not dropped (``readgaze prep`` drops
    them; this command rewrites one column)."""
    from readgaze import corrections

    if not corrections.log_path(folder).is_file():
        return None
    valid, stale = corrections.current(corrections.read_log(folder), fixations)
    corrections.count_stale(stale, qc)
    excluded = corrections.exclusions(valid)
    qc.add(corrections.STEP, "trials", "excluded by reviewer (kept here; readgaze prep drops them)", excluded.height,
           action="flagged", detail=", ".join(excluded["trial_id"].head(10).to_list()) or None)
    return corrections.apply_lines(fixations, valid, qc)[0]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("folder", type=Path, help="dataset folder (its fixations, words and trials tables)")
    parser.add_argument("--method", default="slice",
                        help="line-assignment method (default slice), e.g. warp, vote, dist")
    parser.add_argument("--param", action="append", default=[], metavar="NAME=VALUE",
                        help="method parameter, repeatable (JSON values), e.g. --param y_thresh=55 "
                             "--param 'methods=[\"slice\",\"cluster\",\"warp\"]'")


def run(args: argparse.Namespace) -> int:
    record = assign_folder(args.folder, args.method, **parse_params(args.param))
    print(f"{args.method}: {record['n_assigned']} of {record['n_fixations']} fixations assigned; "
          f"median |vertical drift| {record['vertical_drift_px']['median_abs']:.1f} px over "
          f"{record['vertical_drift_px']['n_trials']} trials")
    return 0
