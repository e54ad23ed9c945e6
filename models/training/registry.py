"""Every model and baseline readgaze offers, one line each, and the ``readgaze models`` listing.

A model is still one file plus one YAML per task (``experiments/configs/<task>/<config>.yaml``); this table only
says, for people and for the ``learns`` tests, which class it is, which tasks it serves, which paper it follows and
how to run it briefly on CPU. Nothing imports the classes here: the listing works even while one model file is
broken (``readgaze models --check`` imports each and says which fail).

Adding a model = one :class:`Entry` line in :data:`MODELS`. Classical baselines are listed from
:data:`readgaze.baselines.BASELINES` (a new baseline appears by itself; its paper goes in :data:`BASELINE_PAPERS`).

Example::

    readgaze models             # the table
    readgaze models --check     # also import every class and check every config file exists
"""

from __future__ import annotations

import argparse
import importlib
import sys
from dataclasses import dataclass, field

RG, RC, GQ = "reading_goal", "comprehension", "goal_question"
SHUBI_2024 = "Shubi et al. 2024, EMNLP, arXiv:2410.04484"
SHUBI_2025 = "Shubi et al. 2025, ACL, arXiv:2410.20779"


@dataclass(frozen=True)
class Entry:
    """One model: display name, ``module.Class``, tasks served, paper, config stem, CPU settings.

    ``quick`` holds constructor arguments for a brief CPU run with the tiny encoder (the ``learns`` tests and the
    demo use them); ``sees_gaze`` False marks a model that cannot learn from gaze (text-only), which the ``learns``
    tests skip. ``kind``: "neural" (a classifier: the zoo and ``learns`` tests cover it), "generator" (generates
    text; listed, not trained by those tests), "baseline" (classical, run by ``readgaze cv``).
    """

    name: str
    target: str
    tasks: tuple[str, ...]
    paper: str
    config: str
    quick: dict = field(default_factory=dict)
    sees_gaze: bool = True
    kind: str = "neural"

    def load(self) -> type:
        """The model class (imports its module)."""
        module, _, name = self.target.rpartition(".")
        return getattr(importlib.import_module(module), name)

    def build(self, **overrides):
        """An instance with :attr:`quick` settings, then ``overrides``."""
        return self.load()(**{**self.quick, **overrides})


# One line per model; add yours anywhere in the tuple.
MODELS: tuple[Entry, ...] = (
    Entry("RoBERTEye-W", "readgaze.models.roberteye_w.RoBERTEyeW", (RG, RC), SHUBI_2024, "roberteye_w",
          dict(learning_rate=3e-3, eye_projection_dropout=0.1, weight_decay=0.01, warmup_ratio=0.0)),
    Entry("RoBERTEye-F", "readgaze.models.roberteye_f.RoBERTEyeF", (RG, RC, GQ), SHUBI_2024, "roberteye_f",
          dict(learning_rate=3e-3, eye_projection_dropout=0.1, weight_decay=0.01, warmup_ratio=0.0)),
    Entry("MAG-Eye", "readgaze.models.mag_eye.MAGEye", (RG, RC), f"{SHUBI_2024}; gate: Rahman et al. 2020, ACL",
          "mag_eye",
          dict(learning_rate=3e-3, mag_beta_shift=1.0, mag_dropout=0.1, weight_decay=0.01, warmup_ratio=0.0)),
    Entry("PostFusion-Eye", "readgaze.models.postfusion_eye.PostFusionEye", (RG, RC), SHUBI_2024, "postfusion_eye",
          dict(learning_rate=3e-3, weight_decay=0.01, warmup_ratio=0.0)),
    Entry("PLM-AS", "readgaze.models.plm_as.PLMAS", (RG, RC), "Yang & Hollenstein 2023, NLDL", "plm_as",
          dict(learning_rate=3e-3, weight_decay=0.1, dropout=0.3, freeze_text_encoder=True)),
    Entry("PLM-AS-RM (Haller RNN)", "readgaze.models.plm_as_rm.PLMASRM", (RG, RC, GQ),
          "Haller et al. 2022, TSAR@EMNLP; goal selection: arXiv:2505.02872", "plm_as_rm",
          dict(learning_rate=3e-3, lstm_hidden_size=32, freeze_text_encoder=False)),
    Entry("Eyettention", "readgaze.models.eyettention.Eyettention", (RG,), f"Deng et al. 2023, ETRA; {SHUBI_2025}",
          "eyettention", dict(learning_rate=3e-3, lstm_hidden_size=32, word_lstm_layers=1, fixation_lstm_layers=1,
                              mlp_sizes=(64,), lstm_dropout=0.1)),
    Entry("BEyeLSTM", "readgaze.models.beyelstm.BEyeLSTM", (RG, RC), "Reich et al. 2022, ETRA", "beyelstm",
          dict(learning_rate=3e-3)),
    Entry("FSE (BiEyeLSTM - No Text)", "readgaze.models.fse.FSE", (RG, RC), f"{SHUBI_2025}; after Reich et al. 2022",
          "fse",
          dict(learning_rate=3e-3)),
    Entry("AhnRNN", "readgaze.models.ahn_rnn.AhnRNN", (RG, RC), "Ahn et al. 2020, ETRA", "ahn_rnn",
          dict(learning_rate=1e-2)),
    Entry("AhnCNN", "readgaze.models.ahn_cnn.AhnCNN", (RG, RC), "Ahn et al. 2020, ETRA", "ahn_cnn",
          dict(learning_rate=3e-3)),
    Entry("Scanpath image", "readgaze.models.scanpath_image.ScanpathImage", (RG, RC), f"{SHUBI_2025} (v3)",
          "scanpath_image", dict(learning_rate=5e-4)),
    Entry("Text only", "readgaze.models.text_only.TextOnly", (RG, RC), f"{SHUBI_2024} (RoBERTa, no eyes)", "text_only",
          dict(learning_rate=3e-3, weight_decay=0.01, warmup_ratio=0.0), sees_gaze=False),
    Entry("DalEye (goal reconstruction)", "readgaze.models.daleye.DalEye", ("goal_reconstruction",),
          "Shubi et al. 2026, ICLR, arXiv:2505.02872", "daleye", dict(learning_rate=3e-3), kind="generator"),
)
"""The neural models, in the order ``readgaze models`` lists them."""

BASELINE_PAPERS = {
    "majority": "-",
    "reading_speed": "readgaze (words per minute over the fixation span; not a published definition)",
    "words_per_paragraph_time": "EyeBench 'Reading Speed' (words / paragraph reading time)",
    "mean_total_fixation_duration": f"{SHUBI_2025} 'Reading Time' (mean total fixation duration per word)",
    "meziere_logistic_regression": "Mézière et al. 2023, Sci. Stud. Reading",
    "svm": "Hollenstein et al. 2022, Front. Psychol.",
    "random_forest": "Makowski et al. 2024, Appl. Sci.",
    "knn": "Shubi et al. 2024 (kNN baseline, appendix)",
    "gradient_boosting": "gradient-boosted trees (scikit-learn HistGradientBoostingClassifier)",
}
"""Paper of each classical baseline of :data:`readgaze.baselines.BASELINES`, by kind (missing: "-")."""


def baselines() -> tuple[Entry, ...]:
    """One entry per classical baseline of :mod:`readgaze.baselines`; they run inside ``readgaze cv``."""
    try:
        from readgaze.baselines import BASELINES, TASKS
    except Exception as error:  # noqa: BLE001 - the listing must survive a broken baselines module
        return (Entry("(baselines unavailable)", "readgaze.baselines", (), f"import failed: {error}", "",
                      kind="baseline"),)
    return tuple(Entry(kind, f"readgaze.baselines.BASELINES[{kind!r}]", tuple(TASKS), BASELINE_PAPERS.get(kind, "-"),
                       "", kind="baseline") for kind in BASELINES)


def find(name: str) -> Entry:
    """The entry named ``name`` (display name or config stem). Raises ``KeyError`` naming the known ones."""
    for entry in MODELS:
        if name in (entry.name, entry.config):
            return entry
    raise KeyError(f"no model {name!r}; known: {', '.join(e.name for e in MODELS)}")


def config_status(entry: Entry) -> dict[str, str | None]:
    """``{task: "<task>/<config>" if that YAML exists, else None}`` for every task the entry serves."""
    if entry.kind == "baseline":
        return {}
    try:
        from readgaze.models.training.configs import config_root

        root = config_root()
    except Exception:  # noqa: BLE001
        root = None
    return {task: (f"{task}/{entry.config}" if root is not None and (root / task / f"{entry.config}.yaml").is_file()
                   else None) for task in entry.tasks}


def rows(check: bool = False) -> list[dict[str, str]]:
    """The listing as plain rows (``name, kind, tasks, paper, configs`` and, with ``check``, ``status``)."""
    out = []
    for entry in (*MODELS, *baselines()):
        configs = config_status(entry)
        row = {"name": entry.name, "kind": entry.kind, "tasks": ", ".join(entry.tasks), "paper": entry.paper,
               "configs": ", ".join(c or f"{t}/{entry.config} (missing)" for t, c in configs.items())
               if entry.kind != "baseline" else "run by readgaze cv"}
        if check:
            try:
                if entry.kind == "baseline":
                    from readgaze.baselines import BASELINES

                    BASELINES[entry.name].estimator_class()  # a dotted name: imports scikit-learn's module
                    row["status"] = "ok"
                else:
                    entry.load()
                    row["status"] = "ok" if all(configs.values()) else "config missing"
            except Exception as error:  # noqa: BLE001 - report, keep listing
                row["status"] = f"import failed: {type(error).__name__}: {error}"
        out.append(row)
    return out


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``readgaze models``; ``argv[0]`` is ``"models"``. Returns 1 when ``--check`` finds a problem."""
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = argparse.ArgumentParser(prog="readgaze models", description="list every model and baseline")
    parser.add_argument("--check", action="store_true", help="import every model class and check its configs")
    args = parser.parse_args(argv[1:])
    table = rows(check=args.check)
    if sys.stdout.isatty():
        from rich.console import Console
        from rich.table import Table

        view = Table(title="readgaze models (configs: readgaze fit -c <config> --data.path DIR)")
        for column in table[0]:
            view.add_column(column, overflow="fold")
        for row in table:
            view.add_row(*row.values())
        Console().print(view)
    else:  # piped or captured: one tab-separated line per entry, nothing cut to a terminal width
        print("\t".join(table[0]))
        for row in table:
            print("\t".join(row.get(column, "") for column in table[0]))
    return int(args.check and any(r.get("status", "ok") != "ok" for r in table if r["kind"] != "baseline"))


if __name__ == "__main__":
    raise SystemExit(main())
