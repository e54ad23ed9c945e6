"""``readgaze review`` driven in headless Chromium (Debian's ``chromium`` through Playwright): a reviewer opens the
worst trial, moves a run of fixations down a line by keyboard, reloads, accepts the vote on another trial and undoes
it, excludes that trial (undo, redo), and prep re-applies the log (exactly those trials change, the QC says so)."""

from __future__ import annotations

import shutil
from pathlib import Path

import polars as pl
import pytest
from review_data import Server, export, prep, qc, tables

from readgaze import corrections

CHROMIUM = Path("/usr/bin/chromium")
pytest.importorskip("starlette", reason="readgaze review needs the review extra (starlette, uvicorn)")
pytest.importorskip("playwright.sync_api", reason="Playwright for Python is not installed (pip install playwright)")
if not CHROMIUM.is_file():
    pytest.skip(f"no browser: {CHROMIUM} is absent (apt-get install chromium)", allow_module_level=True)

PALETTE = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#17becf"]


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import Error, sync_playwright

    with sync_playwright() as p:
        try:
            b = p.chromium.launch(executable_path=str(CHROMIUM), args=["--no-sandbox"])
        except Error as e:
            pytest.skip(f"no browser: {CHROMIUM} does not start headless ({str(e).splitlines()[0]})")
        yield b
        b.close()


@pytest.fixture
def reviewed(tmp_path):
    files = export(tmp_path / "export")
    assert prep(files, tmp_path / "ds") == 0
    shutil.copytree(tmp_path / "ds", tmp_path / "before")
    server = Server(tmp_path / "ds")
    yield files, tmp_path / "ds", tmp_path / "before", server
    server.stop()


def _state(page, expr: str):
    return page.evaluate(f"() => {{ const s = window.readgazeState; return {expr}; }}")


def _saved(page, n: int):
    page.wait_for_function(f"() => /saved correction {n}:/.test(document.getElementById('message').textContent)")


def test_correct_by_keyboard_reload_exclude_and_reprep(browser, reviewed):
    files, folder, before, server = reviewed
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    errors = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(server.url)
    page.wait_for_selector("body[data-ready='1']")
    assert page.locator("#trials tbody tr").count() == 6

    # worst first (one key), open it, select fixations 0-4 (Shift+Right x4), move them down a line: 7 keystrokes
    page.keyboard.press("w")
    page.wait_for_function("() => window.readgazeState.list.sort === 'agreement'")
    assert page.locator("#trials tbody tr").first.locator("td").first.inner_text() == "s01_2"
    page.keyboard.press("Enter")
    page.wait_for_selector("#trial-view:not([hidden]) #scene circle.fix")
    assert _state(page, "s.trial.data.trial_id") == "s01_2"
    lines = _state(page, "s.trial.data.fixations.current")
    for _ in range(4):
        page.keyboard.press("Shift+ArrowRight")
    assert page.locator("#scene circle.fix.sel").count() == 5
    page.keyboard.press("ArrowDown")
    _saved(page, 1)
    moved = [line + 1 for line in lines[:5]]
    assert _state(page, "s.trial.data.fixations.current")[:5] == moved
    assert _state(page, "s.trial.data.fixations.current")[5:] == lines[5:]

    # reload: the page comes back on the same trial, with the correction (it is in corrections.parquet)
    page.reload()
    page.wait_for_selector("body[data-ready='1']")
    assert _state(page, "s.trial.data.trial_id") == "s01_2"
    assert _state(page, "s.trial.data.fixations.current")[:5] == moved
    fill = page.locator("#scene circle.fix[data-i='0']").get_attribute("fill")
    assert fill == PALETTE[moved[0]]
    log = corrections.read_log(folder)
    assert log.rows(named=True)[0] | {"time_utc": None} == {
        "correction_id": 1, "trial_id": "s01_2", "kind": "move", "fixation_index": [0, 1, 2, 3, 4],
        "line_before": lines[:5], "line_after": moved, "method": None, "reason": None, "time_utc": None,
        "reviewer": "tester", "fingerprint": _state(page, "s.trial.data.fingerprint")}

    # the next trial (s01_1): view the vote (key 3), accept it for the whole trial, undo that
    page.keyboard.press("n")
    page.wait_for_function("() => window.readgazeState.trial.data.trial_id === 's01_1'")
    shipped = _state(page, "s.trial.data.fixations.current")
    page.keyboard.press("3")
    page.wait_for_function("() => window.readgazeState.trial.view === 'vote'")
    vote = _state(page, "s.trial.lines.vote")
    assert vote != shipped
    page.keyboard.press("a")
    _saved(page, 2)
    assert _state(page, "s.trial.data.fixations.current") == vote
    page.keyboard.press("z")
    _saved(page, 3)
    assert _state(page, "s.trial.data.fixations.current") == [v if s is None else s for s, v in zip(shipped, vote)]

    # then exclude it with a reason; undo brings it back, redo excludes it again
    page.keyboard.press("x")
    page.locator("#exclude-reason").fill("eye tracker lost the calibration")
    page.keyboard.press("Enter")
    _saved(page, 4)
    assert _state(page, "s.trial.data.excluded") == "eye tracker lost the calibration"
    page.keyboard.press("z")
    _saved(page, 5)
    assert _state(page, "s.trial.data.excluded") is None
    page.keyboard.press("y")
    _saved(page, 6)
    assert _state(page, "s.trial.data.excluded") == "eye tracker lost the calibration"

    # a request without the token is refused, from the page's own origin too
    assert page.request.get(server.base + "/api/trials").status == 403
    assert page.request.get(server.base + "/api/trials/s01_2").status == 403
    assert errors == []
    page.close()
    server.stop()

    # re-run prep: exactly the corrected trial's measures change, the excluded trial is dropped, QC says so
    assert prep(files, folder, "--force") == 0
    old, new = tables(before), tables(folder)
    assert "s01_1" not in new["trials"]["trial_id"].to_list()
    others = pl.col("trial_id").is_in(["s02_1", "s02_2", "s03_1", "s03_2"])
    for name in ("fixations", "word_measures", "trials"):
        assert new[name].filter(others).equals(old[name].filter(others)), name
    one = pl.col("trial_id") == "s01_2"
    assert not new["word_measures"].filter(one).equals(old["word_measures"].filter(one))
    assert new["fixations"].filter(one)["line_index"].head(5).to_list() == moved
    counts = qc(folder)
    assert counts[("fixations", "line corrected by reviewer")] == 5
    assert counts[("trials", "line assignment corrected by reviewer")] == 1
    assert counts[("trials", "excluded by reviewer: eye tracker lost the calibration")] == 1
