"""Rebuild ``tests/files/`` from ``../shared/data``: ``python tests/files/make_excerpts.py [SHARED_DATA]``.

Copies the small folders whole and cuts the large files by whole rows (lines kept byte for byte, header first), then
prints the SHA-256 of every source and of every file written (``tests/files/README.md`` lists them).
"""

from __future__ import annotations

import hashlib
import json
import shutil
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
COPIED = ("bad_inputs", "eyelink_asc", "pymovements_examples")  # small: every data file, unchanged
ONESTOP_PARAGRAPHS = {"1", "4", "5", "6"}  # of both articles (2_1 and 2_2), for all three readers
TOY_ROWS = {"trial_0_1.csv": 4000, "trial_1_2.csv": 4000}  # the first 4 s at 1 kHz (trial_1_2: its 83 at -32768)
GOLD_TRIALS = ("trial_1", "trial_9", "trial_15", "trial_38")  # two adults, one child; passages 3A, 2A, 2B
SBSAT_LINES = 600  # of the trial report: the header and 599 trials of 8 readers, msd001 ... msd009 (18sat_labels.csv,
# with the readers' sex, language and self-reports, stays out)


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _lines(path: Path) -> list[bytes]:
    return path.read_bytes().splitlines(keepends=True)


def _keep_rows(src: Path, dst: Path, keep) -> int:
    """Write the header and the lines whose fields (split on ``,``, no quoted commas before the key) pass ``keep``."""
    lines = _lines(src)
    header = lines[0].rstrip(b"\r\n").decode().split(",")
    rows = [line for line in lines[1:] if keep(dict(zip(header, line.decode().split(",")[:len(header)])))]
    dst.write_bytes(lines[0] + b"".join(rows))
    return len(rows)


def build(shared: Path, here: Path = HERE) -> dict[str, str]:
    """Write every excerpt under ``here``; return ``{written file: its source under shared}``."""
    made: dict[str, str] = {}
    for folder in COPIED:
        (here / folder).mkdir(exist_ok=True)
        for src in sorted((shared / folder).iterdir()):
            if src.name != "README.md":
                shutil.copyfile(src, here / folder / src.name)
                made[f"{folder}/{src.name}"] = f"{folder}/{src.name}"

    # OneStop: the trials of paragraphs 1, 4, 5 and 6; TRIAL_INDEX -> paragraph from the IA report (fields 1 and
    # paragraph_id come before any quoted field of the row)
    out = here / "onestop_sample"
    out.mkdir(exist_ok=True)
    ia_src = shared / "onestop_sample" / "ia.csv"
    import polars as pl

    ia = pl.read_csv(ia_src, null_values=".", infer_schema_length=None)
    keys = set(ia.filter(pl.col("paragraph_id").cast(pl.String).is_in(ONESTOP_PARAGRAPHS))
               .select("participant_id", pl.col("TRIAL_INDEX").cast(pl.String)).unique().iter_rows())
    for name in ("fixations.csv", "ia.csv"):
        _keep_rows(shared / "onestop_sample" / name, out / name,
                   lambda r: (r["participant_id"], r["TRIAL_INDEX"]) in keys)
        made[f"onestop_sample/{name}"] = f"onestop_sample/{name}"

    out = here / "toy_reading_raw"
    out.mkdir(exist_ok=True)
    for name, rows in TOY_ROWS.items():
        (out / name).write_bytes(b"".join(_lines(shared / "toy_reading_raw" / name)[:rows + 1]))
        made[f"toy_reading_raw/{name}"] = f"toy_reading_raw/{name}"
    shutil.copyfile(shared / "toy_reading_raw" / "toy_text_1_1_aoi.csv", out / "toy_text_1_1_aoi.csv")
    made["toy_reading_raw/toy_text_1_1_aoi.csv"] = "toy_reading_raw/toy_text_1_1_aoi.csv"

    out = here / "line_assignment"
    out.mkdir(exist_ok=True)
    src = shared / "line_assignment"
    trials = pl.read_csv(src / "trials.csv").filter(pl.col("trial_id").is_in(GOLD_TRIALS))
    passages = set(trials["passage_id"])
    _keep_rows(src / "trials.csv", out / "trials.csv", lambda r: r["trial_id"] in GOLD_TRIALS)
    _keep_rows(src / "fixations.csv", out / "fixations.csv", lambda r: r["trial_id"] in GOLD_TRIALS)
    for name in ("lines.csv", "words.csv"):
        _keep_rows(src / name, out / name, lambda r: r["passage_id"] in passages)
    every = json.loads((src / "passages.json").read_text())
    every["passages"] = {k: v for k, v in every["passages"].items() if k in passages}
    (out / "passages.json").write_text(json.dumps(every, ensure_ascii=False, indent=1) + "\n")
    for name in ("trials.csv", "fixations.csv", "lines.csv", "words.csv", "passages.json"):
        made[f"line_assignment/{name}"] = f"line_assignment/{name}"

    out = here / "sbsat" / "fixation"
    out.mkdir(parents=True, exist_ok=True)
    src = shared / "sbsat" / "fixation" / "18sat_trialfinal.csv"
    (out / src.name).write_bytes(b"".join(_lines(src)[:SBSAT_LINES]))
    made[f"sbsat/fixation/{src.name}"] = f"sbsat/fixation/{src.name}"
    return made


if __name__ == "__main__":
    shared = Path(sys.argv[1]) if len(sys.argv) > 1 else HERE.parents[2] / "shared" / "data"
    for written, source in build(shared).items():
        print(f"{written}\t{(HERE / written).stat().st_size}\t{sha256(shared / source)}\t{sha256(HERE / written)}")
