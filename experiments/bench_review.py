"""Render timings of ``readgaze review`` in headless Chromium, and the screenshots of docs/review.md.

Builds a 24,000-trial dataset folder from a simulated lab export (its six trials' fixations repeated, ids made
unique, one trial stretched to 300 fixations), serves it with ``readgaze review``, and measures with the
browser's Performance API (``performance.measure`` entries the page records):

* the first page of the trial list, worst first (fetch + table drawn);
* a 300-fixation trial view (SVG built and laid out), and the same with its fetch.

Usage: ``python experiments/bench_review.py [--repeats 7] [--shots docs/img]`` (needs /usr/bin/chromium,
playwright, the review extra). Prints the median and range of each timing in ms.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import polars as pl

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))


def build(home: Path, n_trials: int = 24_000) -> Path:
    from review_data import export, prep

    small = home / "small"
    assert prep(export(home / "export"), small) == 0
    trials, fx = pl.read_parquet(small / "trials.parquet"), pl.read_parquet(small / "fixations.parquet")
    reps = -(-n_trials // trials.height)
    big_trials = pl.concat([trials.with_columns(pl.col("trial_id") + f"_r{r:04d}",
                                                pl.col("participant_id") + f"_{r % 180:03d}") for r in range(reps)]
                           ).head(n_trials)
    big_fx = pl.concat([fx.with_columns(pl.col("trial_id") + f"_r{r:04d}") for r in range(reps)])
    long = fx.filter(pl.col("trial_id") == "s01_1")
    long = pl.concat([long] * 3).head(300).with_columns(
        pl.lit("long_300").alias("trial_id"), pl.int_range(300).cast(pl.Int32).alias("fixation_index"))
    big_trials = pl.concat([big_trials, trials.filter(pl.col("trial_id") == "s01_1").with_columns(
        pl.lit("long_300").alias("trial_id"))])
    out = home / "big"
    out.mkdir()
    for name in ("words.parquet", "manifest.json"):
        (out / name).write_bytes((small / name).read_bytes())
    big_trials.write_parquet(out / "trials.parquet")
    pl.concat([big_fx.filter(pl.col("trial_id").is_in(big_trials["trial_id"].implode())), long]).sort(
        "trial_id", "fixation_index").write_parquet(out / "fixations.parquet")
    return out


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeats", type=int, default=7)
    p.add_argument("--shots", type=Path, default=None, help="write review-list.png and review-trial.png here")
    args = p.parse_args()
    from playwright.sync_api import sync_playwright
    from review_data import Server

    with tempfile.TemporaryDirectory() as tmp:
        folder = build(Path(tmp))
        server = Server(folder)
        try:
            with sync_playwright() as pw:
                browser = pw.chromium.launch(executable_path="/usr/bin/chromium", args=["--no-sandbox"])
                page = browser.new_page(viewport={"width": 1400, "height": 860})
                lists, renders, totals = [], [], []
                for _ in range(args.repeats):
                    page.goto("about:blank")
                    page.goto(server.url)
                    page.wait_for_selector("body[data-ready='1']")
                    page.evaluate("() => sessionStorage.clear()")
                    page.keyboard.press("w")
                    page.wait_for_function("() => window.readgazeState.list.sort === 'agreement'")
                    page.wait_for_timeout(300)
                    lists.append(page.evaluate("() => performance.getEntriesByName('readgaze-list').at(-1).duration"))
                for _ in range(args.repeats):
                    page.goto("about:blank")
                    page.goto(server.url + "#trial=long_300")
                    page.wait_for_selector("body[data-ready='1']")
                    renders.append(page.evaluate("() => window.readgazeTimings.trialRender"))
                    totals.append(page.evaluate("() => window.readgazeTimings.trialTotal"))
                n = page.evaluate("() => window.readgazeState.trial.data.fixations.x_px.length")
                total = page.evaluate("() => window.readgazeState.list.total")
                for name, xs in ((f"list, first page of {total} trials (fetch + table)", lists),
                                 (f"trial view, {n} fixations (SVG built + laid out)", renders),
                                 (f"trial view, {n} fixations (fetch + lines + render)", totals)):
                    print(f"{name}: median {statistics.median(xs):.1f} ms (min {min(xs):.1f}, max {max(xs):.1f}, "
                          f"n={len(xs)})")
                if args.shots:
                    shots(page, server, args.shots)
                browser.close()
        finally:
            server.stop()
    return 0


def shots(page, server, where: Path) -> None:
    """The list (worst first, one trial excluded, one corrected) and a trial view with a run selected."""
    where.mkdir(parents=True, exist_ok=True)
    page.goto("about:blank")
    page.goto(server.url)
    page.wait_for_selector("body[data-ready='1']")
    page.keyboard.press("w")
    page.wait_for_timeout(300)
    page.keyboard.press("Enter")
    page.wait_for_selector("#trial-view:not([hidden]) #scene circle.fix")
    for _ in range(5):
        page.keyboard.press("Shift+ArrowRight")
    page.keyboard.press("ArrowDown")
    page.wait_for_function("() => /saved correction/.test(document.getElementById('message').textContent)")
    for _ in range(3):
        page.keyboard.press("Shift+ArrowRight")
    page.wait_for_timeout(200)
    page.screenshot(path=str(where / "review-trial.png"))
    page.keyboard.press("n")
    page.wait_for_timeout(300)
    page.keyboard.press("x")
    page.locator("#exclude-reason").fill("calibration lost after the break")
    page.keyboard.press("Enter")
    page.wait_for_function("() => /excluded/.test(document.getElementById('message').textContent)")
    page.keyboard.press("Escape")
    page.wait_for_timeout(400)
    page.screenshot(path=str(where / "review-list.png"))
    subprocess.run(["ls", "-l", str(where)], check=False)


if __name__ == "__main__":
    raise SystemExit(main())
