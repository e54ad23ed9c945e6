"""Loaders for the three ``readgaze prep`` modes, each returning canonical tables.

* ``onestop``: :func:`readgaze.io.onestop.load_onestop`;
* ``dataviewer``: any Data Viewer fixation + IA report pair through ``readgaze.io`` with a column map;
* ``asc``: EyeLink ``.asc`` recordings (:func:`readgaze.io.asc.read_asc`) plus a text layout file.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import polars as pl

from readgaze.errors import ConfigError
from readgaze.qc import QCLog
from readgaze.text import TextLayout, layout_from_ia_rows, read_aoi_file, read_passages


@dataclass
class Loaded:
    """Canonical input tables plus what the manifest records about loading."""

    trials: pl.DataFrame
    words: pl.DataFrame
    fixations: pl.DataFrame
    qc: QCLog
    sources: dict[str, list[str]]
    id_bases: dict = field(default_factory=dict)
    loader: str = ""


def load_onestop(fixation_report, ia_report) -> Loaded:
    """OneStop reports → canonical tables through :func:`readgaze.io.onestop.load_onestop`."""
    from readgaze.io.onestop import load_onestop as _load

    loader = "readgaze.io.onestop.load_onestop"
    data = _load(fixation_report, ia_report)
    fixations = data.fixations.lazy().collect()
    if "report_ia_index" not in fixations.columns and "word_index" in fixations.columns:
        fixations = fixations.rename({"word_index": "report_word_index"})
    fixations = fixations.drop("line_index", "word_index", "ia_index", strict=False)
    return Loaded(trials=data.trials.lazy().collect(), words=data.words.lazy().collect(), fixations=fixations,
                  qc=data.qc, sources={"fixation_report": [str(fixation_report)], "ia_report": [str(ia_report)]},
                  id_bases=dict(data.id_bases or {}), loader=loader)


def _read_columns_map(path) -> dict:
    import yaml

    try:
        spec = yaml.safe_load(Path(path).read_text()) or {}
    except (OSError, yaml.YAMLError) as e:
        raise ConfigError(f"cannot read the column map: {e}", file=path) from None
    if not isinstance(spec, dict):
        raise ConfigError("expected a mapping {fixations: {role: column}, ia: {role: column}}", file=path)
    return spec


def load_dataviewer(fixation_report, ia_report, columns=None, source: str = "dataviewer") -> Loaded:
    """Data Viewer fixation + IA reports; ``columns`` is a YAML file ``{fixations: {...}, ia: {...}}``."""
    from readgaze.io import read_fixation_report, read_ia_report

    spec = _read_columns_map(columns) if columns else {}
    source = spec.get("source", source)
    fix = read_fixation_report(fixation_report, columns=spec.get("fixations"), source=source)
    ia = read_ia_report(ia_report, columns=spec.get("ia"), source=source)
    fix, ia = (getattr(x, "lazy", lambda x=x: x)() for x in (fix, ia))
    fix, ia = fix.collect(), ia.collect()
    if "text_id" not in ia.columns:
        ia = ia.with_columns(pl.col("trial_id").alias("text_id"))
    box = ["text_id", "ia_index", "word", "left_px", "right_px", "top_px", "bottom_px"]
    words = ia.select(box).unique(["text_id", "ia_index"], keep="first").sort("text_id", "ia_index")
    trial_cols = [c for c in ("trial_id", "participant_id", "text_id") if c in ia.columns]
    trials = ia.select(trial_cols).unique("trial_id", keep="first").sort("trial_id")
    if "item_id" not in trials.columns:
        trials = trials.with_columns(pl.col("text_id").alias("item_id"))
    for name in ("word_index", "ia_index", "line_index"):
        if name in fix.columns:
            fix = fix.rename({name: f"report_{name}"})
    return Loaded(trials=trials, words=words, fixations=fix, qc=QCLog(),
                  sources={"fixation_report": [str(fixation_report)], "ia_report": [str(ia_report)]},
                  id_bases={"columns": spec or "source defaults", "source": source}, loader="readgaze.io")


def read_layout(path, text_id: str | None = None) -> TextLayout:
    """A layout from a passages.json (``text_id`` picks the passage), an AOI file or an IA report."""
    path = Path(path)
    if path.suffix == ".json":
        layouts = read_passages(path)
        if text_id is None and len(layouts) == 1:
            text_id = next(iter(layouts))
        if text_id not in layouts:
            raise ConfigError(f"--text-id {text_id!r} is not a passage of the file; expected one of "
                              f"{sorted(layouts)}", file=path)
        return layouts[text_id]
    header = path.open(encoding="utf-8").readline()
    if "IA_LEFT" in header:
        from readgaze.io.csv import scan_csv
        return layout_from_ia_rows(scan_csv(path).collect(), text_id=text_id or path.stem)
    return read_aoi_file(path, text_id=text_id or path.stem)


def load_asc(files, layout, text_id: str | None = None) -> Loaded:
    """EyeLink recordings read with :func:`readgaze.io.asc.read_asc`; every trial shows ``layout``.

    With several files, trial ids become ``<file stem>_<trial id>``; ``participant_id`` is the file
    stem unless the recording names it.
    """
    from readgaze.io.asc import read_asc

    lay = read_layout(layout, text_id)
    tid = lay.text_id or Path(layout).stem
    words = lay.words.with_columns(pl.lit(tid).alias("text_id"))
    trials, fixations, qc = [], [], QCLog()
    for f in files:
        rec = read_asc(f)
        qc.extend(rec.qc)
        # one recording per participant: trial ids are made unique across files by the file's stem
        stem, tid_expr = Path(f).stem, pl.lit(Path(f).stem + "_") + pl.col("trial_id").cast(pl.String)
        t, x = rec.trials.lazy().collect(), rec.fixations.lazy().collect()
        if len(files) > 1:
            t, x = t.with_columns(tid_expr.alias("trial_id")), x.with_columns(tid_expr.alias("trial_id"))
        if "participant_id" not in t.columns:
            t = t.with_columns(pl.lit(stem).alias("participant_id"))
        trials.append(t)
        fixations.append(x)
    trials = pl.concat(trials, how="diagonal_relaxed")
    trials = trials.with_columns(pl.lit(tid).alias("text_id"))
    if "item_id" not in trials.columns:
        trials = trials.with_columns(pl.lit(tid).alias("item_id"))
    return Loaded(trials=trials, words=words, fixations=pl.concat(fixations, how="diagonal_relaxed"), qc=qc,
                  sources={"asc": [str(f) for f in files], "layout": [str(layout)]}, loader="readgaze.io.asc")
