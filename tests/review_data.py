"""Helpers of the review tests: a small dataset prepared from a simulated lab export, and a running server."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import polars as pl

from readgaze.cli import main


def export(folder: Path) -> dict:
    """A simulated Data Viewer export: 3 participants x 2 texts (6 trials, 43-138 fixations each)."""
    from readgaze.simulate.lab_export import write_lab_export

    return write_lab_export(folder, n_participants=3, n_items=2, paragraphs_per_item=1)


def prep(files: dict, out: Path, *more: str) -> int:
    """``readgaze prep dataviewer`` with the ``nearest`` assigner (the recorded y: two trials disagree with the
    vote, the worst on 23 % of its fixations)."""
    return main(["prep", "dataviewer", "--fixation-report", str(files["fixations"]), "--ia-report", str(files["ia"]),
                 "--out", str(out), "--line-assigner", "nearest", "--quiet", *more])


def tables(folder: Path) -> dict[str, pl.DataFrame]:
    return {name: pl.read_parquet(folder / f"{name}.parquet") for name in ("trials", "fixations", "word_measures")}


def qc(folder: Path, step: str = "review") -> dict[tuple[str, str], int]:
    """``{(table, reason): count}`` of one step's QC records in the manifest."""
    manifest = json.loads((folder / "manifest.json").read_text())
    return {(r["table"], r["reason"]): r["count"] for r in manifest["qc"] if r["step"] == step}


class Server:
    """``readgaze review FOLDER --port 0`` in a subprocess; ``url`` holds the printed address with its token."""

    def __init__(self, folder: Path):
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        self.proc = subprocess.Popen([sys.executable, "-m", "readgaze.cli", "review", str(folder), "--port", "0",
                                      "--reviewer", "tester"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                     text=True, env=env)
        lines = []
        for line in self.proc.stdout:
            lines.append(line)
            if "http://" in line:
                self.url = line.split()[1]
                break
        else:
            raise RuntimeError("readgaze review did not start:\n" + "".join(lines))
        self.base, self.token = self.url.split("/?token=")

    def request(self, path: str, body: dict | None = None, token: str | None = "default") -> tuple[int, dict | str]:
        """``(status, parsed JSON or text)`` of a GET (or a POST of ``body``) with the token (unless None)."""
        headers = {"Content-Type": "application/json"}
        if token is not None:
            headers["X-Readgaze-Token"] = self.token if token == "default" else token
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.base + path, data=data, headers=headers)
        try:
            with urllib.request.urlopen(req, timeout=30) as r:
                status, text = r.status, r.read().decode()
        except urllib.error.HTTPError as e:
            status, text = e.code, e.read().decode()
        try:
            return status, json.loads(text)
        except ValueError:
            return status, text

    def stop(self, sig: int = signal.SIGTERM) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            self.proc.wait(timeout=30)
        self.proc.stdout.close()
