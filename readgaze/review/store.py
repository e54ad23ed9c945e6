"""What ``readgaze review`` shows and changes: a dataset folder's tables in memory, and its corrections log.

No web stack here: :class:`Store` answers the server's questions (a page of the trial list, one trial, a
correction) with plain dicts and raises :class:`RequestError` (an HTTP status and a message) for bad requests.
The tables are read once and again whenever ``fixations.parquet`` or ``trials.parquet`` changes on disk (a
re-run of prep); the log is re-read on every request that needs it (another server may have written to it).
"""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np
import polars as pl

from readgaze import corrections
from readgaze.dataset import MANIFEST, table_file
from readgaze.errors import ParseError

SORTABLE = ("trial_id", "participant_id", "item_id", "label", "n_fixations", "agreement", "line_agreement_vote",
            "line_agreement_slice", "off_text", "off_screen", "index_gaps", "status")
"""Columns the trial list sorts by; ``agreement`` is the lower of the two line-agreement shares."""
STATUSES = ("all", "flagged", "corrected", "excluded", "unreviewed")
FLAG_BELOW = 0.95
"""A trial whose lines agree with the vote or slice on less than this share of fixations is flagged (as prep
flags it)."""
VIEW_METHODS = ("vote", "slice", "warp", "chain", "cluster", "attach", "split", "merge", "regress", "segment",
                "stretch", "compare")


def view_methods() -> tuple[str, ...]:
    """:data:`VIEW_METHODS` and the ``readgaze.line_assigners`` plugins (``dist`` when readgaze.models is there)."""
    from readgaze.lines import plugins

    return VIEW_METHODS + tuple(sorted(name for name in plugins() if name not in VIEW_METHODS))


def qc_notes(manifest: dict) -> list[str]:
    """What prep did to the whole dataset that no per-trial column shows, one line each: rows dropped or changed,
    word boxes estimated from the fixations, repairs of damaged input (the manifest's ``qc`` and ``notes``)."""
    out = [f"{r['action']} {r['count']} {r['table']}: {r['reason']} ({r['step']})" for r in manifest.get("qc", [])
           if r.get("count") and r.get("step") != "review" and (r.get("action") in ("dropped", "changed")
                                                               or "estimated" in str(r.get("reason")))]
    repairs = [n for n in manifest.get("notes", []) if str(n).startswith("repaired:")]
    return out + ([f"{len(repairs)} repair(s) of damaged input (manifest notes)"] if repairs else [])


class RequestError(Exception):
    """A request the store refuses: ``status`` (400, 404, 409) and a message naming the field or id."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status, self.message = status, message


class Store:
    """A dataset folder opened for review.

    Parameters
    ----------
    folder : path
        A readgaze dataset folder (``trials``, ``words``, ``fixations`` parquet files).
    reviewer : str
        Written with each correction.

    Raises
    ------
    ParseError
        A table is missing.
    """

    def __init__(self, folder: str | Path, reviewer: str = "reviewer"):
        self.folder, self.reviewer = Path(folder), reviewer
        self._lock = threading.RLock()
        self._stamp = None
        for name in ("trials", "words", "fixations"):
            if not (self.folder / table_file(name)).is_file():
                raise ParseError(f"{table_file(name)} not found; expected a readgaze dataset folder",
                                 file=self.folder / table_file(name))
        self.refresh()

    # -- tables ------------------------------------------------------------------------------------------------
    def _files_stamp(self):
        return tuple((p.stat().st_mtime_ns, p.stat().st_size)
                     for p in (self.folder / table_file("fixations"), self.folder / table_file("trials")))

    def refresh(self) -> None:
        """Read the tables again when the files changed since they were read."""
        with self._lock:
            stamp = self._files_stamp()
            if stamp == self._stamp:
                return
            fx = pl.read_parquet(self.folder / table_file("fixations"), columns=[
                "trial_id", "fixation_index", "x_px", "y_px", "duration_ms", "line_index", "word_index"])
            fx = fx.with_columns(pl.col("x_px", "y_px", "duration_ms").cast(pl.Float64),
                                 pl.col("line_index", "word_index", "fixation_index").cast(pl.Int32)
                                 ).sort("trial_id", "fixation_index")
            manifest = self._manifest()
            screen = (manifest.get("config") or {}).get("screen_px")
            off = (pl.col("x_px") < 0) | (pl.col("y_px") < 0)
            if screen:
                off = off | (pl.col("x_px") >= screen[0]) | (pl.col("y_px") >= screen[1])
            runs = fx.group_by("trial_id", maintain_order=True).agg(
                pl.len().alias("n_fixations"), pl.col("word_index").is_null().sum().alias("off_text"),
                (pl.col("word_index").is_null() & off.fill_null(False)).sum().alias("off_screen"),
                (pl.col("fixation_index").max() - pl.col("fixation_index").min() + 1 - pl.len()).alias("index_gaps"))
            self.qc_notes = qc_notes(manifest)
            starts = np.r_[0, np.cumsum(runs["n_fixations"].to_numpy())[:-1]]
            trials = pl.read_parquet(self.folder / table_file("trials"))
            label = next((c for c in ("reading_goal", "is_correct", "label") if c in trials.columns), None)
            keep = [pl.col(c) if c in trials.columns else pl.lit(None, pl.String).alias(c)
                    for c in ("trial_id", "participant_id", "item_id", "text_id")]
            agree = [pl.col(c).cast(pl.Float64) if c in trials.columns else pl.lit(None, pl.Float64).alias(c)
                     for c in ("line_agreement_vote", "line_agreement_slice")]
            table = trials.select(*keep, (pl.col(label).cast(pl.String) if label else pl.lit(None, pl.String))
                                  .alias("label"), *agree)
            table = (table.join(runs, on="trial_id", how="left")
                     .with_columns(pl.col("n_fixations", "off_text", "off_screen", "index_gaps").fill_null(0),
                                   pl.min_horizontal("line_agreement_vote", "line_agreement_slice").alias("agreement")))
            self.fixations, self.table, self._stamp = fx, table, stamp
            self.start = dict(zip(runs["trial_id"].to_list(), starts.tolist()))
            self.count = dict(zip(runs["trial_id"].to_list(), runs["n_fixations"].to_list()))
            self.words = pl.read_parquet(self.folder / table_file("words"))
            self._text_cache: dict = {}

    def _manifest(self) -> dict:
        import json

        path = self.folder / MANIFEST
        try:
            return json.loads(path.read_text()) if path.is_file() else {}
        except ValueError:  # a damaged manifest does not stop a review
            return {}

    def log(self) -> pl.DataFrame:
        return corrections.read_log(self.folder)

    def _trial_fixations(self, trial_id: str) -> pl.DataFrame:
        if trial_id not in self.start:
            raise RequestError(404, f"unknown trial {trial_id!r}: not in trials.parquet / fixations.parquet")
        return self.fixations.slice(self.start[trial_id], self.count[trial_id])

    # -- the trial list ----------------------------------------------------------------------------------------
    def page(self, *, offset: int = 0, limit: int = 50, sort: str = "agreement", descending: bool = False,
             query: str = "", status: str = "all") -> dict:
        """One page of the trial list, sorted and filtered on the server.

        ``sort``: one of :data:`SORTABLE` (nulls last); ``query``: a case-insensitive substring of the trial,
        participant, item or label; ``status``: one of :data:`STATUSES` (``flagged``: agreement below
        :data:`FLAG_BELOW`). Returns ``{"total", "offset", "rows", "qc"}`` (``qc``: the manifest's rows dropped or
        changed by prep, one line each: what no per-trial column shows).
        """
        if sort not in SORTABLE:
            raise RequestError(400, f"field 'sort': got {sort!r}, expected one of {list(SORTABLE)}")
        if status not in STATUSES:
            raise RequestError(400, f"field 'status': got {status!r}, expected one of {list(STATUSES)}")
        if offset < 0 or not 1 <= limit <= 1000:
            raise RequestError(400, "field 'offset' / 'limit': expected offset >= 0 and 1 <= limit <= 1000")
        self.refresh()
        log = self.log()
        excluded = corrections.exclusions(log).rename({"reason": "excluded"})
        moved = log.filter(pl.col("kind").is_in(["move", "method"]))["trial_id"].unique()
        frame = self.table.lazy().join(excluded.lazy(), on="trial_id", how="left").with_columns(
            pl.when(pl.col("excluded").is_not_null()).then(pl.lit("excluded"))
            .when(pl.col("trial_id").is_in(moved.implode())).then(pl.lit("corrected"))
            .otherwise(pl.lit("")).alias("status"))
        if query:
            q = query.lower()
            frame = frame.filter(pl.any_horizontal(pl.col(c).cast(pl.String).str.to_lowercase().str.contains(
                q, literal=True) for c in ("trial_id", "participant_id", "item_id", "label")))
        if status == "flagged":
            frame = frame.filter(pl.col("agreement") < FLAG_BELOW)
        elif status in ("corrected", "excluded"):
            frame = frame.filter(pl.col("status") == status)
        elif status == "unreviewed":
            frame = frame.filter(pl.col("status") == "")
        total = frame.select(pl.len()).collect().item()
        rows = (frame.sort(sort, "trial_id", descending=[descending, False], nulls_last=True)
                .slice(offset, limit).collect())
        return {"total": total, "offset": offset, "rows": rows.to_dicts(), "qc": self.qc_notes}

    # -- one trial ---------------------------------------------------------------------------------------------
    def _text(self, text_id) -> dict:
        if text_id not in self._text_cache:
            w = self.words.filter(pl.col("text_id") == text_id).sort("ia_index")
            mid = (w.group_by("line_index").agg(((pl.col("top_px") + pl.col("bottom_px")) / 2).mean().alias("y"))
                   .sort("line_index"))
            self._text_cache[text_id] = {"words": w, "line_y_px": mid["y"].to_numpy().astype(np.float64)}
        return self._text_cache[text_id]

    def trial(self, trial_id: str) -> dict:
        """Everything the trial view draws: the word boxes, the fixations (raw position, duration, shipped and
        current line), the line midlines, the trial's fingerprint and exclusion."""
        self.refresh()
        fx = self._trial_fixations(trial_id)
        row = self.table.filter(pl.col("trial_id") == trial_id).row(0, named=True)
        text = self._text(row["text_id"])
        w = text["words"]
        log = self.log().filter(pl.col("trial_id") == trial_id)
        valid, stale = corrections.current(log, fx)
        excluded = corrections.exclusions(valid)
        return {
            **{k: row[k] for k in ("trial_id", "participant_id", "item_id", "text_id", "label",
                                   "line_agreement_vote", "line_agreement_slice")},
            "fingerprint": corrections.trial_fingerprint(fx),
            "excluded": excluded["reason"][0] if excluded.height else None,
            "stale_corrections": stale.height,
            "line_y_px": text["line_y_px"].tolist(),
            "words": {"word": w["word"].to_list() if "word" in w.columns else [""] * w.height,
                      **{c: w[c].to_list() for c in ("left_px", "right_px", "top_px", "bottom_px", "line_index")}},
            "fixations": {"fixation_index": fx["fixation_index"].to_list(), "x_px": fx["x_px"].to_list(),
                          "y_px": fx["y_px"].to_list(), "duration_ms": fx["duration_ms"].to_list(),
                          "shipped": fx["line_index"].to_list(),
                          "current": corrections.effective_lines(fx, valid).to_list()},
            "methods": ["raw", "shipped", "current", *view_methods()],
        }

    def method_lines(self, trial_id: str, method: str) -> list[int]:
        """The lines ``method`` (a :mod:`readgaze.lines` method name) gives the trial's fixations."""
        from readgaze.errors import ReadgazeError
        from readgaze.lines import assign_trial

        if method not in view_methods():
            raise RequestError(400, f"field 'method': got {method!r}, expected one of {list(view_methods())}")
        self.refresh()
        fx = self._trial_fixations(trial_id)
        text_id = self.table.filter(pl.col("trial_id") == trial_id)["text_id"][0]
        text = self._text(text_id)
        w = text["words"].sort("word_index", "ia_index")
        word_xy = np.c_[(w["left_px"] + w["right_px"]).to_numpy() / 2, (w["top_px"] + w["bottom_px"]).to_numpy() / 2]
        try:
            lines = assign_trial(fx.select("x_px", "y_px").to_numpy(), text["line_y_px"], method,
                                 word_xy=word_xy, word_line=w["line_index"].to_numpy())
        except ReadgazeError as e:
            raise RequestError(400, f"field 'method': {method!r} cannot assign this trial: {e}") from e
        return lines.tolist()

    # -- corrections -------------------------------------------------------------------------------------------
    def correct(self, trial_id: str, body: dict) -> dict:
        """Check a correction against the trial as it is now and append it to the log; returns the row written.

        ``body``: ``kind`` (:data:`readgaze.corrections.KINDS`), ``fingerprint`` (the trial's, as the page got
        it), and per kind ``fixation_index`` + ``line_before`` + ``line_after`` (``move``), ``method``
        (``method``), ``reason`` (``exclude``, required).

        Raises
        ------
        RequestError
            404: unknown trial; 400: a malformed field (named); 409: the trial's fingerprint differs (the dataset
            changed underneath) or ``line_before`` is not the trial's current lines (changed in another tab).
        """
        if not isinstance(body, dict):
            raise RequestError(400, "body: expected a JSON object")
        kind = body.get("kind")
        if kind not in corrections.KINDS:
            raise RequestError(400, f"field 'kind': got {kind!r}, expected one of {list(corrections.KINDS)}")
        print_ = body.get("fingerprint")
        if not isinstance(print_, str):
            raise RequestError(400, "field 'fingerprint': expected the trial's fingerprint (a string)")
        with self._lock:
            self.refresh()
            fx = self._trial_fixations(trial_id)
            now = corrections.trial_fingerprint(fx)
            if print_ != now:
                raise RequestError(409, f"trial {trial_id!r} changed underneath (fingerprint {print_} was given, the "
                                        f"dataset now has {now}): the dataset was re-prepared; reload the page")
            log = corrections.current(self.log().filter(pl.col("trial_id") == trial_id), fx)[0]
            lines = np.asarray(corrections.effective_lines(fx, log).to_list(), dtype=object)
            index = fx["fixation_index"].to_list()
            row = {"trial_id": trial_id, "kind": kind, "fingerprint": now, "reviewer": self.reviewer,
                   "fixation_index": [], "line_before": [], "line_after": [], "reason": body.get("reason")}
            if row["reason"] is not None and not isinstance(row["reason"], str):
                raise RequestError(400, "field 'reason': expected a string")
            if kind == "move":
                row |= self._move(body, index, lines, len(self._text(self.table.filter(
                    pl.col("trial_id") == trial_id)["text_id"][0])["line_y_px"]))
            elif kind == "method":
                method = body.get("method")
                if method not in view_methods():
                    raise RequestError(400, f"field 'method': got {method!r}, expected one of {list(view_methods())}")
                new = self.method_lines(trial_id, method)  # every fixation: the trial is the method's, whatever
                row |= {"method": method, "fixation_index": index,  # assigner a later prep runs
                        "line_before": lines.tolist(), "line_after": new}
            elif kind == "exclude" and not (row["reason"] or "").strip():
                raise RequestError(400, "field 'reason': an exclusion needs a reason")
            written = corrections.append(self.folder, [row])
            return written.to_dicts()[0]

    @staticmethod
    def _move(body: dict, index: list[int], lines: np.ndarray, n_lines: int) -> dict:
        got = {}
        for name in ("fixation_index", "line_before", "line_after"):
            value = body.get(name)
            if not isinstance(value, list) or not value or not all(isinstance(v, int) and not isinstance(v, bool)
                                                                   for v in value):
                raise RequestError(400, f"field {name!r}: expected a non-empty list of integers")
            got[name] = value
        if not len(got["fixation_index"]) == len(got["line_before"]) == len(got["line_after"]):
            raise RequestError(400, "fields 'fixation_index', 'line_before', 'line_after': expected equal lengths")
        where = {f: k for k, f in enumerate(index)}
        unknown = [f for f in got["fixation_index"] if f not in where]
        if unknown:
            raise RequestError(400, f"field 'fixation_index': fixation(s) {unknown[:5]} are not in this trial")
        bad = [v for v in got["line_after"] if not 0 <= v < n_lines]
        if bad:
            raise RequestError(400, f"field 'line_after': line(s) {bad[:5]} outside the text's 0..{n_lines - 1}")
        now = [lines[where[f]] for f in got["fixation_index"]]
        if now != got["line_before"]:
            raise RequestError(409, f"field 'line_before': the fixations are on lines {now[:10]} now, not "
                                    f"{got['line_before'][:10]} (changed in another tab?): reload the trial")
        return got
