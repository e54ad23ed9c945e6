"""``readgaze review``'s server over HTTP: the token, bad requests, and no acknowledged correction lost to SIGKILL."""

from __future__ import annotations

import shutil
import signal
import sys
import threading
import time

import polars as pl
import pytest
from review_data import Server, export, prep

from readgaze import corrections

pytest.importorskip("starlette", reason="readgaze review needs the review extra (starlette, uvicorn)")
pytest.importorskip("uvicorn", reason="readgaze review needs the review extra (starlette, uvicorn)")


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    home = tmp_path_factory.mktemp("review-server")
    assert prep(export(home / "export"), home / "ds") == 0
    return home / "ds"


@pytest.fixture
def server(dataset, tmp_path):
    folder = tmp_path / "ds"
    shutil.copytree(dataset, folder)
    s = Server(folder)
    s.folder = folder
    yield s
    s.stop()


def test_binds_loopback_and_refuses_requests_without_the_token(server):
    assert server.base.startswith("http://127.0.0.1:")
    assert len(server.token) >= 32
    status, body = server.request("/api/trials/s01_2")
    assert status == 200
    fingerprint = body["fingerprint"]
    for token in (None, "wrong", server.token[:-1]):
        for path in ("/", "/static/app.js", "/api/trials", "/api/trials/s01_2"):
            status, text = server.request(path, token=token)
            assert status == 403 and "access token" in text, (path, token)
        status, _ = server.request("/api/trials/s01_2/corrections", {
            "kind": "exclude", "reason": "x", "fingerprint": fingerprint}, token=token)
        assert status == 403
    assert not (server.folder / "corrections.parquet").exists()  # nothing was written
    status, html = server.request(f"/?token={server.token}", token=None)  # the printed URL itself works
    assert status == 200 and "readgaze review" in html and server.token in html


def test_list_is_paged_sorted_and_filtered_on_the_server(server):
    status, page = server.request("/api/trials?limit=2&sort=agreement")
    assert status == 200 and page["total"] == 6 and len(page["rows"]) == 2
    assert [r["trial_id"] for r in page["rows"]] == ["s01_2", "s01_1"]  # worst agreement first
    assert page["rows"][0]["line_agreement_vote"] == pytest.approx(33 / 43)
    assert [r["n_fixations"] for r in page["rows"]] == [43, 138]
    assert [r["off_text"] for r in page["rows"]] == [1, 4] and [r["off_screen"] for r in page["rows"]] == [0, 0]
    assert [r["index_gaps"] for r in page["rows"]] == [0, 0]
    assert page["qc"] == []  # the simulated export: prep dropped and changed nothing
    status, page = server.request("/api/trials?status=flagged")
    assert page["total"] == 2
    status, page = server.request("/api/trials?q=S03&sort=n_fixations&desc=1")
    assert [r["trial_id"] for r in page["rows"]] == ["s03_1", "s03_2"]
    status, body = server.request("/api/trials?sort=colour")
    assert status == 400 and "field 'sort'" in body["error"]


def test_qc_notes_name_what_prep_did_to_the_whole_dataset():
    from readgaze.review.store import qc_notes

    manifest = {"qc": [{"step": "clean", "table": "fixations", "reason": "invalid_duration", "action": "dropped",
                        "count": 3},
                       {"step": "clean", "table": "trials", "reason": "no_text", "action": "dropped", "count": 0},
                       {"step": "load", "table": "words", "reason": "boxes_estimated_from_fixations",
                        "action": "flagged", "count": 40},
                       {"step": "align", "table": "fixations", "reason": "off_text", "action": "flagged", "count": 9},
                       {"step": "review", "table": "trials", "reason": "excluded by reviewer: x", "action": "dropped",
                        "count": 1}],
                "notes": ["repaired: 2 rows had a BOM", "warning: something"]}
    assert qc_notes(manifest) == ["dropped 3 fixations: invalid_duration (clean)",
                                  "flagged 40 words: boxes_estimated_from_fixations (load)",
                                  "1 repair(s) of damaged input (manifest notes)"]


def test_bad_requests_name_the_trial_or_field(server):
    status, body = server.request("/api/trials/no-such-trial")
    assert status == 404 and "'no-such-trial'" in body["error"]
    status, trial = server.request("/api/trials/s01_1")
    fp, lines = trial["fingerprint"], trial["fixations"]["current"]
    post = lambda body, trial_id="s01_1": server.request(f"/api/trials/{trial_id}/corrections", body)  # noqa: E731
    assert post({"kind": "exclude", "reason": "x", "fingerprint": fp}, "ghost")[0] == 404
    cases = [({"kind": "shove", "fingerprint": fp}, "field 'kind'"),
             ({"kind": "move", "fingerprint": fp, "fixation_index": [0], "line_before": [lines[0]]},
              "field 'line_after'"),
             ({"kind": "move", "fingerprint": fp, "fixation_index": [0], "line_before": [lines[0]],
               "line_after": [99]}, "field 'line_after'"),
             ({"kind": "move", "fingerprint": fp, "fixation_index": [5000], "line_before": [0], "line_after": [1]},
              "field 'fixation_index'"),
             ({"kind": "exclude", "fingerprint": fp}, "field 'reason'"),
             ({"kind": "method", "method": "magic", "fingerprint": fp}, "field 'method'"),
             ({"kind": "exclude", "reason": "x"}, "field 'fingerprint'")]
    for body, field in cases:
        status, got = post(body)
        assert status == 400 and field in got["error"], (body, got)
    status, got = post({"kind": "exclude", "reason": "x", "fingerprint": "0" * 16})
    assert status == 409 and "changed underneath" in got["error"]
    status, got = post({"kind": "move", "fingerprint": fp, "fixation_index": [0], "line_before": [lines[0] + 1],
                        "line_after": [lines[0]]})
    assert status == 409 and "another tab" in got["error"]
    assert not (server.folder / "corrections.parquet").exists()
    _, vote = server.request("/api/trials/s01_1/lines/vote")
    differ = [k for k, (a, b) in enumerate(zip(lines, vote["lines"])) if a != b]
    assert 13 <= len(differ) <= 15  # agreement 90.5 % of 138 (+ the off-text fixations without a line)
    status, got = post({"kind": "method", "method": "vote", "fingerprint": fp})  # a well-formed one is written
    assert status == 200 and got["method"] == "vote"
    assert got["fixation_index"] == trial["fixations"]["fixation_index"]  # the whole trial, as the vote has it
    assert got["line_after"] == vote["lines"] and got["line_before"] == lines
    assert corrections.read_log(server.folder).height == 1
    _, trial = server.request("/api/trials/s01_1")
    assert trial["fixations"]["current"] == vote["lines"]  # the trial now has the vote's lines


def test_sigkill_during_a_burst_loses_no_acknowledged_correction(server):
    """Four writers (four tabs) append moves as fast as the server takes them; the server is killed mid-burst.
    Every correction it acknowledged is in the log, and the log reads back whole."""
    trials = ["s01_1", "s02_1", "s02_2", "s03_1"]
    acked: list[int] = []
    stop = threading.Event()

    def writer(trial_id):
        _, trial = server.request(f"/api/trials/{trial_id}")
        lines = list(trial["fixations"]["current"])
        for k in range(10_000):
            if stop.is_set():
                return
            i = k % len(lines)
            body = {"kind": "move", "fingerprint": trial["fingerprint"], "fixation_index": [
                trial["fixations"]["fixation_index"][i]], "line_before": [lines[i]],
                "line_after": [1 - lines[i] if lines[i] <= 1 else 0]}
            try:
                status, got = server.request(f"/api/trials/{trial_id}/corrections", body)
            except OSError:  # the server is gone
                return
            if status != 200:
                return
            lines[i] = body["line_after"][0]
            acked.append(got["correction_id"])

    threads = [threading.Thread(target=writer, args=(t,)) for t in trials]
    for t in threads:
        t.start()
    deadline = time.monotonic() + 60
    while len(acked) < 40 and time.monotonic() < deadline:
        time.sleep(0.01)
    server.proc.send_signal(signal.SIGKILL)
    server.proc.wait(timeout=30)
    stop.set()
    for t in threads:
        t.join(timeout=60)
    log = corrections.read_log(server.folder)
    assert len(acked) >= 40
    assert set(acked) <= set(log["correction_id"].to_list())
    assert log["correction_id"].to_list() == list(range(1, log.height + 1))  # no gap, no duplicate
    assert log.filter(pl.col("kind") != "move").height == 0


def test_without_the_review_extra_one_line_says_what_to_install(dataset, monkeypatch, capsys):
    from readgaze.cli import main

    monkeypatch.setitem(sys.modules, "uvicorn", None)  # as if not installed: importing it raises ImportError
    assert main(["review", str(dataset)]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["readgaze review needs the web stack (starlette, uvicorn): pip install -e '.[review]' in the "
                   "readgaze checkout (readgaze is not on PyPI)"]


def test_a_busy_port_is_one_line_naming_it(dataset):
    import socket
    import subprocess

    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        run = subprocess.run([sys.executable, "-m", "readgaze.cli", "review", str(dataset), "--port", str(port)],
                             capture_output=True, text=True, timeout=120)
    assert run.returncode == 2
    assert run.stderr.strip() == (f"readgaze review: error: cannot listen on 127.0.0.1:{port} (Address already in "
                                  "use); pass --port 0 for a free port")


def test_a_correction_against_a_dataset_changed_underneath_is_refused(server):
    _, trial = server.request("/api/trials/s02_1")
    fixations = pl.read_parquet(server.folder / "fixations.parquet")
    shifted = fixations.with_columns(pl.when(pl.col("trial_id") == "s02_1").then(pl.col("x_px") + 1.0)
                                     .otherwise(pl.col("x_px")).alias("x_px"))
    shifted.write_parquet(server.folder / "fixations.new.parquet")
    (server.folder / "fixations.new.parquet").replace(server.folder / "fixations.parquet")  # re-prepared underneath
    status, got = server.request("/api/trials/s02_1/corrections", {
        "kind": "exclude", "reason": "x", "fingerprint": trial["fingerprint"]})
    assert status == 409 and "changed underneath" in got["error"] and "reload the page" in got["error"]
    assert not (server.folder / "corrections.parquet").exists()
    _, fresh = server.request("/api/trials/s02_1")  # the page, reloaded, gets the new fingerprint; it is accepted
    assert fresh["fingerprint"] != trial["fingerprint"]
    assert fresh["fixations"]["x_px"][0] == trial["fixations"]["x_px"][0] + 1.0
    status, _ = server.request("/api/trials/s02_1/corrections", {
        "kind": "exclude", "reason": "x", "fingerprint": fresh["fingerprint"]})
    assert status == 200
