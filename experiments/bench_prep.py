"""Benchmark: `readgaze prep onestop` vs a straightforward pandas implementation of the same steps.

Writes OneStop-scale synthetic reports (default 2.4 M fixation rows, 2.6 M IA rows; OneStop's column
names, ``.`` for missing values, 1-based fixation IA ids and 0-based ``IA_ID``, 360 participants x 54
paragraphs) to /tmp, then times, each in its own process (peak RSS from ``getrusage``):

* readgaze: ``readgaze prep onestop --fixation-report F --ia-report I --out DIR``;
* pandas: read both CSVs, build the text layouts, align fixations to words (nearest line, then the
  box holding x), compute the same word measures and trial features with per-trial Python loops
  (``groupby``, as lab code does it), look up Zipf frequencies, write parquet.

The pandas run can use a fraction of the trials (``--pandas-fraction``; its time is scaled by
1/fraction and its memory reported as measured), because the full scale takes long on 2 shared cores.

Usage::

    python experiments/bench_prep.py                   # full scale
    python experiments/bench_prep.py --scale 0.05      # quick check
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import polars as pl

SAMPLE = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "onestop_sample" / "ia.csv"
LING = ["word_length", "word_length_no_punctuation", "wordfreq_frequency", "subtlex_frequency", "gpt2_surprisal",
        "universal_pos", "ptb_pos", "dependency_relation", "morphological_features", "entity_type", "Reduced_POS",
        "head_word_index", "distance_to_head"]
VOCAB = ["the", "wolf", "stops", "dead.", "Between", "two", "paw", "prints", "on", "a", "muddy", "mountain",
         "however,", "shopper", "secret", "\"Yes,\"", "and", "of", "to", "in", "researcher", "track,", "said"]
LINE_TOP, LINE_H, LEFT, RIGHT_MAX = 154, 114, 358, 2100


# --- synthetic OneStop-like reports -----------------------------------------------------------

def _layouts(rng, n_words: np.ndarray):
    """Word boxes of each text: widths 40-250 px, lines of 114 px from y = 154, x from 358."""
    out = []
    for n in n_words:
        w = rng.integers(40, 250, n)
        left, top, lefts, tops = LEFT, LINE_TOP, np.empty(n, int), np.empty(n, int)
        for i in range(n):  # generation only, a few hundred texts
            if left + w[i] > RIGHT_MAX:
                left, top = LEFT, top + LINE_H
            lefts[i], tops[i] = left, top
            left += w[i]
        out.append((lefts, lefts + w, tops, tops + LINE_H))
    return out


def _masked(values: np.ndarray, keep: np.ndarray) -> pl.Series:
    """values where keep, else null (written as `.`)."""
    return pl.select(pl.when(pl.Series(keep)).then(pl.Series(values))).to_series()


def write_reports(folder: Path, scale: float, seed: int = 0) -> tuple[Path, Path]:
    rng = np.random.default_rng(seed)
    sample = pl.read_csv(SAMPLE, null_values=".", infer_schema_length=None)
    paragraphs = [(b, a, k, lvl) for b in (1, 2, 3) for a in range(1, 11) for k in range(1, 7) for lvl in ("Adv", "Ele")]
    paragraphs = paragraphs[: 2 * 162]
    n_words = rng.integers(103, 166, len(paragraphs))
    layouts = _layouts(rng, n_words)
    labels = [rng.choice(VOCAB, n) for n in n_words]
    n_part = max(2, round(360 * scale))
    trials = []
    for p in range(n_part):  # each participant: the 54 paragraphs of one batch, each at one level
        batch = p % 3 + 1
        for j, (b, a, k, lvl) in enumerate(paragraphs[::2]):
            if b == batch:
                idx = 2 * j + int(rng.integers(0, 2))
                trials.append((f"l{p % 60 + 1}_{p + 1}", idx, len(trials) % 70 + 1))
    t_part = np.array([t[0] for t in trials])
    t_par = np.array([t[1] for t in trials])
    n_fix = np.maximum(20, (n_words[t_par] * rng.uniform(0.75, 1.1, len(trials))).astype(int))
    # scanpaths: forward steps, refixations, skips, regressions (vectorised over all trials)
    total = int(n_fix.sum())
    trial_of = np.repeat(np.arange(len(trials)), n_fix)
    steps = rng.choice([1, 2, 0, -1, -3, 3], total, p=[0.6, 0.15, 0.12, 0.08, 0.02, 0.03])
    first = np.r_[0, np.cumsum(n_fix)[:-1]]
    steps[first] = 0
    pos = np.cumsum(steps)
    pos -= np.repeat(pos[first], n_fix)
    word = np.clip(pos, 0, n_words[t_par][trial_of] - 1)
    box = [np.concatenate([layouts[t_par[t]][c] for t in range(len(trials))]) for c in range(4)]
    offs = np.r_[0, np.cumsum(n_words[t_par])[:-1]]
    g = offs[trial_of] + word
    x = rng.uniform(box[0][g], box[1][g]).astype(int)
    y = (box[2][g] + LINE_H // 2 + rng.normal(0, 15, total)).astype(int)
    off = rng.random(total) < 0.013
    x[off] = 200  # left of every text: off word
    dur = np.clip(rng.gamma(4.0, 55.0, total), 20, 1500).astype(int)
    start = np.cumsum(dur + 30) - np.repeat(np.cumsum(dur + 30)[first], n_fix) + 1000
    fix_idx = np.arange(total) - np.repeat(first, n_fix) + 1
    meta = pl.DataFrame({
        "participant_id": t_part, "TRIAL_INDEX": np.array([t[2] for t in trials]) + 10,
        "trial_index": np.array([t[2] for t in trials]),
        "article_batch": [paragraphs[i][0] for i in t_par], "article_id": [paragraphs[i][1] for i in t_par],
        "paragraph_id": [paragraphs[i][2] for i in t_par], "difficulty_level": [paragraphs[i][3] for i in t_par],
        "article_title": "Synthetic article", "question_preview": (np.arange(len(trials)) // 54) % 2 == 0,
        "question": "What did the wolf do?", "repeated_reading_trial": False, "selected_answer": "A",
        "is_correct": True, "EYE_TRACKED": "Right"})
    meta = meta.with_columns(
        pl.concat_str("article_batch", "article_id", "paragraph_id", "difficulty_level", separator="_")
        .alias("unique_paragraph_id"))
    meta = meta.with_columns((pl.col("participant_id") + "_" + pl.col("unique_paragraph_id") + "_r0")
                             .alias("unique_trial_id"))
    lab = np.concatenate([labels[t_par[t]] for t in range(len(trials))])
    fx = pl.DataFrame({"_t": trial_of, "CURRENT_FIX_DURATION": dur, "CURRENT_FIX_END": start + dur - 1,
                       "CURRENT_FIX_INDEX": fix_idx,
                       "CURRENT_FIX_INTEREST_AREA_ID": pl.Series(np.where(off, 0, word + 1)).replace(0, None),
                       "CURRENT_FIX_INTEREST_AREA_LABEL": _masked(lab[g], ~off),
                       "CURRENT_FIX_START": start, "CURRENT_FIX_X": x, "CURRENT_FIX_Y": y,
                       "NEXT_SAC_AMPLITUDE": np.round(rng.uniform(0.5, 6, total), 2),
                       "NEXT_SAC_DIRECTION": rng.choice(["RIGHT", "LEFT", "UP", "DOWN"], total)})
    fx = fx.join(meta.with_row_index("_t").with_columns(pl.col("_t").cast(pl.Int64)), on="_t").drop("_t")
    fix_path, ia_path = folder / "fixations.csv", folder / "ia.csv"
    fx.write_csv(fix_path, null_value=".")
    # IA report: one row per trial x word; Data Viewer measures from simple counts, `.` for unfixated
    ia_trial = np.repeat(np.arange(len(trials)), n_words[t_par])
    ia_id = np.arange(len(ia_trial)) - np.repeat(offs, n_words[t_par])
    cnt = np.bincount(g[~off], minlength=len(ia_trial))
    dwell = np.bincount(g[~off], weights=dur[~off], minlength=len(ia_trial)).astype(int)
    ling = sample.select(LING)
    ling = ling[np.arange(len(ia_trial)) % ling.height]

    def measure(v):
        return _masked(v, cnt > 0)

    ia = pl.DataFrame({"_t": ia_trial, "IA_BOTTOM": box[3], "IA_DWELL_TIME": dwell,
                       "IA_FIRST_FIXATION_DURATION": measure(np.minimum(dwell, 250)),
                       "IA_FIRST_RUN_DWELL_TIME": measure(dwell), "IA_FIXATION_COUNT": cnt, "IA_ID": ia_id,
                       "IA_LABEL": np.concatenate([labels[t_par[t]] for t in range(len(trials))]),
                       "IA_LAST_RUN_DWELL_TIME": measure(dwell), "IA_LEFT": box[0],
                       "IA_REGRESSION_IN": measure(np.zeros(len(ia_trial), int)),
                       "IA_REGRESSION_IN_COUNT": measure(np.zeros(len(ia_trial), int)),
                       "IA_REGRESSION_OUT": measure(np.zeros(len(ia_trial), int)),
                       "IA_REGRESSION_OUT_COUNT": measure(np.zeros(len(ia_trial), int)),
                       "IA_REGRESSION_PATH_DURATION": measure(dwell), "IA_RIGHT": box[1],
                       "IA_SECOND_RUN_DWELL_TIME": pl.Series([None] * len(ia_trial), dtype=pl.Int64),
                       "IA_SKIP": (cnt == 0).astype(int), "IA_TOP": box[2],
                       "critical_span_indices": "[(4,44)]", "distractor_span_indices": "[(84,106)]"})
    ia = pl.concat([ia, ling], how="horizontal")
    ia = ia.join(meta.with_row_index("_t").with_columns(pl.col("_t").cast(pl.Int64)), on="_t").drop("_t")
    ia.write_csv(ia_path, null_value=".")
    return fix_path, ia_path


# --- the pandas baseline (run in its own process) ------------------------------------------------

def _pandas_measures(tr):
    """Per-trial Python loop over the in-word scanpath: Data Viewer's definitions."""
    seq = tr[tr["word_index"].notna()]
    words = seq["word_index"].astype(int).to_numpy()
    durs = seq["CURRENT_FIX_DURATION"].to_numpy(float)
    res = {}
    max_so_far = -1
    for i, (w, d) in enumerate(zip(words, durs)):
        r = res.get(w)
        new_run = i == 0 or words[i - 1] != w
        if r is None:
            end = next((j for j in range(i + 1, len(words)) if words[j] > w), len(words))
            r = res[w] = {"first_fixation_duration_ms": d, "gaze_duration_ms": 0.0, "total_fixation_duration_ms": 0.0,
                          "regression_path_duration_ms": durs[i:end].sum(), "fixation_count": 0, "run_count": 0,
                          "skipped": max_so_far > w, "regression_in_count": 0, "regression_out_count": 0,
                          "_first_run": True}
        elif new_run:
            r["_first_run"] = False
        if r["_first_run"]:
            r["gaze_duration_ms"] += d
        r["total_fixation_duration_ms"] += d
        r["fixation_count"] += 1
        r["run_count"] += new_run
        r["regression_in_count"] += bool(new_run and i > 0 and words[i - 1] > w)
        max_so_far = max(max_so_far, w)
        if i + 1 < len(words) and words[i + 1] < w and max_so_far == w:
            r["regression_out_count"] += 1
    return res


def pandas_prep(fix_path, ia_path, out, fraction):
    import pandas as pd
    from wordfreq import zipf_frequency

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    fx = pd.read_csv(fix_path, na_values=".", keep_default_na=False)
    ia = pd.read_csv(ia_path, na_values=".", keep_default_na=False)
    t_read = time.perf_counter() - t0
    for df in (fx, ia):
        df["trial_id"] = df["unique_trial_id"]
    keep = sorted(ia["trial_id"].unique())
    keep = set(keep[: max(1, int(len(keep) * fraction))])
    fx, ia = fx[fx["trial_id"].isin(keep)].copy(), ia[ia["trial_id"].isin(keep)].copy()
    t1 = time.perf_counter()
    words = ia.drop_duplicates(["unique_paragraph_id", "IA_ID"])[
        ["unique_paragraph_id", "IA_ID", "IA_LABEL", "IA_LEFT", "IA_RIGHT", "IA_TOP", "IA_BOTTOM"]]
    words = words.assign(line_index=words.groupby("unique_paragraph_id")["IA_TOP"].rank(method="dense").astype(int) - 1)
    # align: nearest line by y, then the box holding x on that line
    lines = words.groupby(["unique_paragraph_id", "line_index"]).agg(top=("IA_TOP", "min"), bottom=("IA_BOTTOM", "max"))
    lines = lines.reset_index().assign(mid=lambda d: (d.top + d.bottom) / 2).sort_values("mid")
    fx = fx.sort_values("CURRENT_FIX_Y")
    fx["CURRENT_FIX_Y"] = fx["CURRENT_FIX_Y"].astype(float)
    fx = pd.merge_asof(fx, lines[["unique_paragraph_id", "mid", "line_index"]], left_on="CURRENT_FIX_Y",
                       right_on="mid", by="unique_paragraph_id", direction="nearest")
    fx["CURRENT_FIX_X"] = fx["CURRENT_FIX_X"].astype(float)
    w2 = words.sort_values("IA_LEFT").assign(IA_LEFT=lambda d: d.IA_LEFT.astype(float))
    fx = pd.merge_asof(fx.sort_values("CURRENT_FIX_X"), w2[["unique_paragraph_id", "line_index", "IA_LEFT", "IA_RIGHT", "IA_ID"]],
                       left_on="CURRENT_FIX_X", right_on="IA_LEFT", by=["unique_paragraph_id", "line_index"])
    fx["word_index"] = fx["IA_ID"].where(fx["CURRENT_FIX_X"] < fx["IA_RIGHT"])
    fx = fx.sort_values(["trial_id", "CURRENT_FIX_INDEX"])
    rows = []
    for trial_id, tr in fx.groupby("trial_id", sort=True):
        for w, r in _pandas_measures(tr).items():
            r.pop("_first_run")
            rows.append({"trial_id": trial_id, "word_index": w, **r})
    measured = pd.DataFrame(rows)
    grid = ia[["trial_id", "IA_ID"]].rename(columns={"IA_ID": "word_index"})
    wm = grid.merge(measured, on=["trial_id", "word_index"], how="left")
    wm["total_fixation_duration_ms"] = wm["total_fixation_duration_ms"].fillna(0)
    wm["fixation_count"] = wm["fixation_count"].fillna(0)
    wm["skipped"] = wm["skipped"].fillna(True).astype(bool)

    def features(tr):
        t = tr.sort_values("CURRENT_FIX_INDEX")
        dx = t["CURRENT_FIX_X"].diff()
        amp = np.hypot(dx, t["CURRENT_FIX_Y"].diff())[dx > 0]
        return pd.Series({"fixation_count": len(t), "mean_forward_saccade_amplitude_px": amp.mean(),
                          "reading_time_ms": (t["CURRENT_FIX_START"] + t["CURRENT_FIX_DURATION"]).max()
                          - t["CURRENT_FIX_START"].min()})
    trial_feats = fx.groupby("trial_id").apply(features)
    trial_feats["skip_rate"] = wm.groupby("trial_id")["skipped"].mean()
    freq = {w: zipf_frequency(w.strip(".,\"'"), "en") for w in words["IA_LABEL"].unique()}
    words["frequency_zipf"] = words["IA_LABEL"].map(freq)
    fx.to_parquet(out / "fixations.parquet")
    wm.to_parquet(out / "word_measures.parquet")
    words.to_parquet(out / "words.parquet")
    trial_feats.to_parquet(out / "trials.parquet")
    return json.dumps({"trials": len(keep), "read_s": t_read, "rest_s": time.perf_counter() - t1})


# --- driver ---------------------------------------------------------------------------------------

def _child(code: str) -> tuple[float, float, str]:
    """Run Python code in a fresh process; return (seconds, peak RSS GiB, its last stdout line)."""
    t0 = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", code + "\nimport resource\n"
                           "print('MAXRSS', resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)"],
                          capture_output=True, text=True, env={**os.environ, "HF_HUB_OFFLINE": "1"})
    seconds = time.perf_counter() - t0
    if done.returncode:
        raise SystemExit(done.stderr[-3000:])
    lines = done.stdout.strip().splitlines()
    rss = int(lines[-1].split()[1]) / 2**20
    return seconds, rss, (lines[-2] if len(lines) > 1 else "")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--scale", type=float, default=1.0, help="fraction of OneStop's 360 participants")
    p.add_argument("--pandas-fraction", type=float, default=0.1, help="fraction of trials the pandas run uses")
    p.add_argument("--folder", default="/tmp/readgaze_bench_prep")
    p.add_argument("--reuse", action="store_true", help="reuse reports already written")
    p.add_argument("--line-assigner", default="nearest",
                   help="readgaze's line assigner (default nearest: the same work as the pandas baseline, which "
                        "assigns lines by nearest y; prep's own default is slice)")
    args = p.parse_args(argv)
    folder = Path(args.folder)
    folder.mkdir(parents=True, exist_ok=True)
    fix_path, ia_path = folder / "fixations.csv", folder / "ia.csv"
    if not (args.reuse and fix_path.exists() and ia_path.exists()):
        t0 = time.perf_counter()
        write_reports(folder, args.scale)
        print(f"wrote synthetic reports in {time.perf_counter() - t0:.0f} s")
    n_fix = pl.scan_csv(fix_path).select(pl.len()).collect().item()
    n_ia = pl.scan_csv(ia_path).select(pl.len()).collect().item()
    print(f"fixation rows {n_fix:,} ({fix_path.stat().st_size / 2**20:.0f} MiB), "
          f"IA rows {n_ia:,} ({ia_path.stat().st_size / 2**20:.0f} MiB)")
    rg_s, rg_gb, split = _child(
        "import json, time\nfrom readgaze.cli import main\nimport data_prep.sources as S\n"
        "load = S.load_onestop\nspent = {}\n"
        "def timed(*a, **k):\n    t = time.perf_counter(); r = load(*a, **k); spent['load_s'] = time.perf_counter() - t; return r\n"
        "S.load_onestop = timed\n"
        f"assert main(['prep', 'onestop', '--fixation-report', {str(fix_path)!r}, '--ia-report', {str(ia_path)!r}, "
        f"'--out', {str(folder / 'rg')!r}, '--force', '--quiet', '--line-assigner', {args.line_assigner!r}]) == 0\n"
        "print(json.dumps(spent))")
    load_s = json.loads(split)["load_s"]
    print(f"readgaze prep: {rg_s:.1f} s (readgaze.io.onestop.load_onestop {load_s:.1f} s, the steps after "
          f"loading {rg_s - load_s:.1f} s incl. start-up), peak RSS {rg_gb:.2f} GiB")
    m = json.loads((folder / "rg" / "manifest.json").read_text())
    print(f"  rows out: {m['rows_out']}")
    pd_s, pd_gb, kept = _child(f"import sys; sys.path.insert(0, {str(Path(__file__).parent)!r}); "
                               f"from bench_prep import pandas_prep; print(pandas_prep({str(fix_path)!r}, "
                               f"{str(ia_path)!r}, {str(folder / 'pd')!r}, {args.pandas_fraction}))")
    info = json.loads(kept)
    other = pd_s - info["read_s"] - info["rest_s"]  # interpreter start, imports, filtering
    scaled = other + info["read_s"] + info["rest_s"] / args.pandas_fraction
    print(f"pandas: read the full CSVs {info['read_s']:.1f} s; the steps after reading on "
          f"{args.pandas_fraction:.0%} of the trials ({info['trials']} trials) {info['rest_s']:.1f} s; "
          f"process total {pd_s:.1f} s, peak RSS {pd_gb:.2f} GiB")
    print(f"pandas extrapolated to all trials (read + steps / fraction + rest): {scaled:.0f} s")
    print(f"ratio pandas / readgaze: {scaled / rg_s:.1f}x end to end (goal >= 10x); steps after loading: "
          f"{info['rest_s'] / args.pandas_fraction / (rg_s - load_s):.1f}x; readgaze peak {rg_gb:.2f} GiB (goal <= 4)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
