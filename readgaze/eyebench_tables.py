"""EyeBench's published CopCo tables, read, and readgaze's scores set beside them in EyeBench's layout.

EyeBench (Shubi et al., 2025) publishes one CSV per task and split (``results/CopCo_TYP_test.csv``: dyslexia
detection; ``CopCo_RCS_test.csv``: reading-comprehension skill regression; ``_val`` for validation): one row per
model, one column per ``{regime}_{metric}`` with cells ``"mean ± SEM"`` over its 4 folds, rounded to one decimal.
Classification cells are in %, regression cells in the score's units. The regimes are EyeBench's "Unseen Reader"
(readgaze ``new_participant``), "Unseen Text" (``new_item``), "Unseen Text & Reader" (``new_item_participant``) and
"Average" (``all``: the test trials of the three regimes pooled per fold, then averaged over folds, as readgaze's
``all``; checked on the files: RF's TYP Average AUROC 82.9 is not the mean of its regime cells, 79.2).

:func:`read_eyebench_table` reads a file into a long frame; :func:`compare_with_eyebench` pairs it with a readgaze
evaluation (:func:`readgaze.metrics.evaluate` or :func:`readgaze.metrics_regression.evaluate_regression`) by
:data:`EYEBENCH_MODELS`; :func:`eyebench_table` writes the Markdown table: per EyeBench model its published row, the
readgaze row and their difference, then readgaze's models that EyeBench does not list.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

import polars as pl

from readgaze.errors import DataError, ParseError

EYEBENCH_REGIMES = {"Unseen Reader": "new_participant", "Unseen Text": "new_item",
                    "Unseen Text \\& Reader": "new_item_participant", "Average": "all"}
"""EyeBench's regime column prefixes, in its order, and readgaze's regime names."""
EYEBENCH_TITLES = {"new_participant": "Unseen Reader", "new_item": "Unseen Text",
                   "new_item_participant": "Unseen Text & Reader", "all": "Average"}
EYEBENCH_METRICS = {"\\makecell{Balanced\\\\Accuracy}": "balanced_accuracy", "AUROC": "auroc", "RMSE": "rmse",
                    "MAE": "mae", "R²": "r2"}
"""EyeBench's metric column suffixes and readgaze's metric names (``balanced_accuracy`` is at the 0.5 threshold)."""
METRIC_TITLES = {"balanced_accuracy": "BA", "auroc": "AUROC", "rmse": "RMSE", "mae": "MAE", "r2": "R²"}
PERCENT_METRICS = ("balanced_accuracy", "auroc")
"""Metrics EyeBench prints in % (readgaze's evaluations hold fractions)."""
EYEBENCH_MODELS: dict[str, tuple[str, str]] = {
    "Majority Class / Chance": ("majority", "chance_mean"),
    "Reading Speed": ("words_per_paragraph_time_logistic_regression", "words_per_paragraph_time_linear_regression"),
    "Text-Only Roberta": ("TextOnly", "TextOnly"),
    "Logistic Regression": ("meziere_logistic_regression", "ridge"),
    "SVM": ("svm", "svr"),
    "Random Forest": ("random_forest", "random_forest_regressor"),
    "AhnRNN": ("AhnRNN", "AhnRNN"),
    "AhnCNN": ("AhnCNN", "AhnCNN"),
    "BEyeLSTM": ("BEyeLSTM", "BEyeLSTM"),
    "PLM-AS": ("PLMAS", "PLMAS"),
    "PLM-AS-RM": ("PLMASRM", "PLMASRM"),
    "RoBERTEye-W": ("RoBERTEyeW", "RoBERTEyeW"),
    "RoBERTEye-F": ("RoBERTEyeF", "RoBERTEyeF"),
    "MAG-Eye": ("MAGEye", "MAGEye"),
    "PostFusion-Eye": ("PostFusionEye", "PostFusionEye"),
}
"""EyeBench's row name → readgaze's ``model`` for (classification, regression): the same model, or readgaze's
counterpart (EyeBench's "Logistic Regression" row of a regression task is a linear model on the same features;
readgaze runs ridge; its "Reading Speed" is words / paragraph reading time)."""
_CELL = re.compile(r"^\s*(-?\d+(?:\.\d+)?)\s*±\s*(\d+(?:\.\d+)?)\s*$")


def read_eyebench_table(path: str | Path) -> pl.DataFrame:
    """Read one EyeBench results CSV (``CopCo_{TYP,RCS}_{test,val}.csv``) into one row per (model, regime, metric).

    Returns
    -------
    polars.DataFrame
        ``model`` (EyeBench's name, citation removed), ``citation`` (the ``\\cite`` key or null), ``regime``
        (readgaze's name; ``all`` = Average), ``metric`` (:data:`EYEBENCH_METRICS` values), ``mean`` and ``sem``
        (Float64, as printed: % for balanced accuracy and AUROC), ``row`` (1-based file line), in file order.

    Raises
    ------
    ParseError
        The file is missing, has no ``Model`` column, or a column name is not ``{regime}_{metric}`` of
        :data:`EYEBENCH_REGIMES` and :data:`EYEBENCH_METRICS`.
    DataError
        A cell is not ``"mean ± SEM"`` (naming the file, row and column).
    """
    path = Path(path)
    if not path.is_file():
        raise ParseError("EyeBench results table not found", file=path)
    try:
        table = pl.read_csv(path, infer_schema_length=0)
    except pl.exceptions.PolarsError as error:
        raise ParseError(f"cannot read it as CSV ({error.__class__.__name__}: {str(error).splitlines()[0]})",
                         file=path) from None
    if "Model" not in table.columns:
        raise ParseError(f"no 'Model' column (got {table.columns[:3]}...); expected EyeBench's results layout",
                         file=path)
    columns = {}
    for column in table.columns[1:]:
        regime, _, metric = column.rpartition("_")
        if regime not in EYEBENCH_REGIMES or metric not in EYEBENCH_METRICS:
            raise ParseError(f"column {column!r} is not {{regime}}_{{metric}} with regime in {list(EYEBENCH_REGIMES)} "
                             f"and metric in {list(EYEBENCH_METRICS)}", file=path)
        columns[column] = (EYEBENCH_REGIMES[regime], EYEBENCH_METRICS[metric])
    names = table["Model"].str.extract(r"^(.*?)(?:~\\cite[pt]?\{([^}]*)\})?$", 1)
    citations = table["Model"].str.extract(r"~\\cite[pt]?\{([^}]*)\}", 1)
    rows = []
    for index, cells in enumerate(table.drop("Model").iter_rows()):
        for column, cell in zip(columns, cells):
            match = _CELL.match(cell or "")
            if match is None:
                raise DataError(f"got {cell!r}, expected 'mean ± SEM'", file=path, row=index + 2, column=column)
            rows.append({"model": names[index].strip(), "citation": citations[index], "regime": columns[column][0],
                         "metric": columns[column][1], "mean": float(match[1]), "sem": float(match[2]),
                         "row": index + 2})
    return pl.DataFrame(rows, schema={"model": pl.String, "citation": pl.String, "regime": pl.String,
                                      "metric": pl.String, "mean": pl.Float64, "sem": pl.Float64, "row": pl.Int64})


def compare_with_eyebench(ours: pl.DataFrame, published: pl.DataFrame, *, names: dict[str, str] | None = None
                          ) -> pl.DataFrame:
    """Pair readgaze's evaluation with EyeBench's published table, cell by cell.

    Parameters
    ----------
    ours : polars.DataFrame
        :func:`readgaze.metrics.evaluate` or :func:`readgaze.metrics_regression.evaluate_regression` output
        (``model``, ``regime``, ``<metric>_mean``, ``<metric>_sem``; classification in fractions).
    published : polars.DataFrame
        :func:`read_eyebench_table` of one file.
    names : dict, optional
        EyeBench model → readgaze ``model``; default :data:`EYEBENCH_MODELS` (the regression column when the table
        has RMSE).

    Returns
    -------
    polars.DataFrame
        One row per (EyeBench model or readgaze-only model, regime, metric of the table): ``eyebench_model``
        (null for a readgaze-only model), ``model`` (readgaze's, null when EyeBench's has no counterpart),
        ``regime``, ``metric``, ``published_mean``, ``published_sem``, ``ours_mean``, ``ours_sem`` (in the
        table's units: % for BA and AUROC), ``difference`` (ours − published; null where either is missing) and
        ``within_band``: ``|difference| <= published SEM + rounding + ours SEM``, where the published SEM is taken
        as at least 0.05 (half its printed precision: ``± 0.0`` is an SEM under 0.05) and ``rounding`` is half the
        printed precision of the published mean (0.05 for % metrics, 0.005 for regression ones).
    """
    metrics = published["metric"].unique(maintain_order=True).to_list()
    regression = "rmse" in metrics
    names = names if names is not None else {k: v[1 if regression else 0] for k, v in EYEBENCH_MODELS.items()}
    long = pl.concat([
        ours.select("model", "regime", pl.lit(m).alias("metric"),
                    (pl.col(f"{m}_mean") * (100.0 if m in PERCENT_METRICS else 1.0)).alias("ours_mean"),
                    (pl.col(f"{m}_sem") * (100.0 if m in PERCENT_METRICS else 1.0)).alias("ours_sem"))
        for m in metrics if f"{m}_mean" in ours.columns])
    mapping = pl.DataFrame({"eyebench_model": list(names), "model": list(names.values())},
                           schema={"eyebench_model": pl.String, "model": pl.String})
    theirs = published.select(pl.col("model").alias("eyebench_model"), "regime", "metric",
                              pl.col("mean").alias("published_mean"), pl.col("sem").alias("published_sem"))
    order = ["eyebench_model", "model", "regime", "metric", "published_mean", "published_sem", "ours_mean", "ours_sem"]
    paired = theirs.join(mapping, on="eyebench_model", how="left", maintain_order="left").join(
        long, on=["model", "regime", "metric"], how="left", maintain_order="left").select(order)
    extra = long.filter(~pl.col("model").is_in(paired["model"].drop_nulls().implode())).select(
        pl.lit(None, pl.String).alias("eyebench_model"), "model", "regime", "metric",
        pl.lit(None, pl.Float64).alias("published_mean"), pl.lit(None, pl.Float64).alias("published_sem"),
        "ours_mean", "ours_sem")
    difference = pl.col("ours_mean") - pl.col("published_mean")
    rounding = pl.when(pl.col("metric").is_in(list(PERCENT_METRICS))).then(0.05).otherwise(0.005)
    band = (pl.max_horizontal(pl.col("published_sem"), pl.lit(0.05)) + rounding + pl.col("ours_sem").fill_null(0.0)
            + 1e-9)
    return pl.concat([paired, extra]).with_columns(difference.alias("difference")).with_columns(
        (pl.col("difference").abs() <= band).alias("within_band"))


def eyebench_table(comparison: pl.DataFrame, *, title: str = "", notes: tuple[str, ...] = ()) -> str:
    """Markdown in EyeBench's layout: per model an *EyeBench* row, a *readgaze* row and a *Δ* row.

    Columns: for each metric of ``comparison`` the four regimes in EyeBench's order (Unseen Reader, Unseen Text,
    Unseen Text & Reader, Average); cells ``mean ± SEM``, one decimal for % metrics and two for regression ones
    (EyeBench's SEM as printed, one decimal: its ``± 0.0`` is an SEM under 0.05).
    A Δ cell is ours − published, marked ``≈`` when within the band (:func:`compare_with_eyebench`); "not run" marks
    a model readgaze has not scored. readgaze-only models follow, with their readgaze row only.
    """
    metrics = comparison["metric"].unique(maintain_order=True).to_list()
    regimes = list(EYEBENCH_TITLES)
    header = [f"{EYEBENCH_TITLES[r]} {METRIC_TITLES[m]}" for m in metrics for r in regimes]
    lines = ([f"### {title}", ""] if title else []) + [
        "| Model | Source | " + " | ".join(header) + " |", "|---|---|" + "---|" * len(header)]
    cells = {(r["eyebench_model"], r["model"], r["regime"], r["metric"]): r for r in comparison.iter_rows(named=True)}
    keys = comparison.select("eyebench_model", "model").unique(maintain_order=True).rows()
    for eyebench_model, model in keys:
        row = [cells.get((eyebench_model, model, r, m)) for m in metrics for r in regimes]
        name = eyebench_model or model
        if eyebench_model is not None:
            lines.append(f"| {name} | EyeBench | " + " | ".join(
                _value(c and c["published_mean"], c and c["published_sem"], c and c["metric"], sem_digits=1)
                for c in row) + " |")
        ran = any(c is not None and c["ours_mean"] is not None for c in row)
        label = f"readgaze `{model}`" if model else "readgaze"
        ours = [_value(c and c["ours_mean"], c and c["ours_sem"], c and c["metric"]) for c in row]
        lines.append(f"| {name} | {label} | " + (" | ".join(ours) if ran else " | ".join(["not run"] * len(row)))
                     + " |")
        if eyebench_model is not None and ran:
            lines.append(f"| {name} | Δ | " + " | ".join(_difference(c) for c in row) + " |")
    notes = ["Cells are mean ± SEM over folds (BA and AUROC in %). 'Average' pools each fold's test trials over the "
             "three regimes, then averages over folds (readgaze's 'all'). Δ = readgaze − EyeBench; ≈ marks a "
             "difference within the two ± bands plus EyeBench's rounding (its SEM taken as at least 0.05, half its "
             "printed precision).", *notes]
    return "\n".join(lines) + "\n\n" + "\n".join(f"- {note}" for note in notes) + "\n"


def _value(mean: float | None, sem: float | None, metric: str | None, sem_digits: int | None = None) -> str:
    if mean is None or (isinstance(mean, float) and math.isnan(mean)):
        return "–"
    digits = 1 if metric in PERCENT_METRICS else 2
    return f"{mean:.{digits}f}" + ("" if sem is None else f" ± {sem:.{sem_digits or digits}f}")


def _difference(cell: dict | None) -> str:
    if cell is None or cell["difference"] is None:
        return "–"
    digits = 1 if cell["metric"] in PERCENT_METRICS else 2
    return f"{cell['difference']:+.{digits}f}" + (" ≈" if cell["within_band"] else "")
