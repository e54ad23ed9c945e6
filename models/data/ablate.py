"""Modality ablations: the same trials with the text, or the gaze, made uninformative (``--data.ablate``).

A model that reads both the text and the eyes should lose accuracy when either is taken away. Each ablation is a
step on the datamodule's built arrays (after features and tokenisation, before the datasets), applied to every split
alike, so a model trained and tested with it is the model's *ablated twin* (retrained, not a test-time perturbation).
Both are deterministic in ``seed`` (the datamodule's ``split_seed``).

``text``: each trial's paragraph words are permuted within the trial (a fresh random permutation per trial). What
moves with a word is what the text says about it: its token(s), which the encoder reads, and its lexical features
(``word_length``, ``frequency_zipf``, ``surprisal_bits`` and their missing flags; the word class and content flag
that BEyeLSTM embeds). What stays at each word *position* is the gaze: every reading measure of the word slot, the
fixations (order, durations, coordinates, saccades, which position they land on), and the layout (``left_px``,
``top_px``, line starts and ends, relative position). So a word-level gaze model such as RoBERTEye-W keeps each
slot's reading measures at the slot's position while the word there (tokens and lexical features) is another word
of the same paragraph: "text" means the identity of the words, "gaze" how each position was read. The bag of words
stays (the text's topic survives; its order and its alignment with the gaze do not), and the second text segment
(the comprehension question, the goal_question candidates) is kept: the question asks, the permuted paragraph can no
longer answer. Trial-level features are left as computed (published global sets grouped by part of speech, such as
BEyeLSTM's, still group by the true words).

``gaze``: each trial's gaze (word reading measures, fixation sequence, trial-level gaze features) is replaced by the
gaze of another trial of the same text in the same split, so the text, layout, label and question are the trial's
own while the eye movements are someone else's reading of the same page. Donors are a derangement within each
(split, text) group (random order, each trial takes the next one's gaze). A trial alone in its split with its text
takes the gaze of a random other trial of the text from another split (counted in QC); a trial whose text no other
trial read keeps its own fixations in a random temporal order and its word measures (counted, a warning: gaze is
then only partly ablated).
"""

from __future__ import annotations

import numpy as np
import polars as pl

from readgaze.errors import ConfigError
from readgaze.features import WORD_LEXICAL, WORD_MEASURES
from readgaze.qc import QCLog

ABLATIONS = ("text", "gaze")
"""The ``ablate`` values (``None`` = no ablation)."""
TEXT_IDENTITY = ("word_length", "frequency_zipf", "surprisal_bits")
"""Word columns that describe the word itself and move with it under the text ablation (their missing flags, set
when the value is missing, move with them)."""
WORD_COLUMNS = WORD_MEASURES + WORD_LEXICAL
"""The columns of the unscaled word matrices (``word_raw``, ``fixation_word_raw``)."""


def check_ablation(ablate: str | None) -> str | None:
    """``ablate`` itself; ``"none"`` -> None. Raises :class:`ConfigError` for another value."""
    if ablate in (None, "none", ""):
        return None
    if ablate not in ABLATIONS:
        raise ConfigError(f"data.ablate: got {ablate!r}, expected none, {' or '.join(ABLATIONS)}", column="ablate")
    return ablate


def apply_ablation(kind: str, shared: dict, trials: pl.DataFrame, *, seed: int, qc: QCLog, encode=None,
                   word_rows: pl.DataFrame | None = None) -> dict:
    """The datamodule's task arrays (:mod:`readgaze.models.data.cache`'s entry) with ``kind`` ablated.

    Parameters
    ----------
    kind : {"text", "gaze"}
    shared : dict
        ``ReadingDataModule._shared()``: unscaled ``word_raw`` (columns ``WORD_MEASURES + WORD_LEXICAL``),
        ``fixation_own_raw``, ``fixation_word_raw``, ``trial_raw``, offsets, word indices, word classes,
        ``trial_features``, ``unknown_per_trial`` and the tokenisation (``token_key``, ``encodings``, ``token_cut``),
        rows in ``trial_row`` order.
    trials : polars.DataFrame
        One row per ``trial_row`` (all of ``shared``'s trials, in order) with ``text_id`` and ``split`` (null for a
        trial outside the fold).
    seed : int
        Seed of the permutations and donors.
    qc : QCLog
        Receives one record per ablation step (the fold's trials changed) and per fallback.
    encode : callable, optional
        ``encode(words: list[str], trial_row: int) -> encoding`` (text ablation: tokenises a permuted paragraph
        with the trial's second segment, as the datamodule's tokenisation does).
    word_rows : polars.DataFrame, optional
        Text ablation: one row per row of ``word_raw`` with ``word`` (str), ``word_category`` and
        ``word_is_content`` (Int64), the word at that row.

    Returns
    -------
    dict
        A new dict (the input and its arrays are not modified; the cache stays as built). The datamodule scales it
        with the fold's scalers fit on the real (unablated) training trials.
    """
    rng = np.random.default_rng(seed)
    in_fold = trials["split"].is_not_null().to_numpy()
    if kind == "text":
        if encode is None or word_rows is None:
            raise ValueError("the text ablation needs encode and word_rows (to tokenise the permuted paragraphs)")
        return _permute_text(shared, rng, qc, encode, word_rows, in_fold)
    if kind == "gaze":
        return _swap_gaze(shared, trials.with_columns(pl.col("split").fill_null("(not in fold)")), rng, qc, in_fold)
    raise ConfigError(f"data.ablate: got {kind!r}, expected {' or '.join(ABLATIONS)}", column="ablate")


def _trial_of_rows(offsets: np.ndarray) -> np.ndarray:
    """``(offsets[-1],)`` int64: the trial row of each row of a trial-ordered matrix."""
    return np.repeat(np.arange(len(offsets) - 1), np.diff(offsets))


def _permute_text(shared: dict, rng: np.random.Generator, qc: QCLog, encode, word_rows: pl.DataFrame,
                  in_fold: np.ndarray) -> dict:
    """Words permuted within each trial: tokens and lexical columns move, gaze and layout stay (module docstring)."""
    offsets = shared["word_offsets"]
    trial = _trial_of_rows(offsets)  # (n_word_rows,)
    source = np.lexsort((rng.random(len(trial)), trial))  # word row placed at each row: a permutation per trial
    identity = [WORD_COLUMNS.index(c) for c in TEXT_IDENTITY]
    word = np.array(shared["word_raw"], order="F")  # a copy (the cache's array is read-only)
    word[:, identity] = np.asarray(shared["word_raw"])[source][:, identity]
    category = word_rows["word_category"].to_numpy()[source]
    content = word_rows["word_is_content"].to_numpy()[source]
    # fixations: the word now at the fixated position gives the lexical part of the vector
    fixation_word = np.array(shared["fixation_word_raw"], order="F")
    f_trial = _trial_of_rows(shared["fixation_offsets"])
    index = shared["fixation_word_index"]
    on_word = index >= 0
    row = np.where(on_word, np.minimum(offsets[f_trial] + np.maximum(index, 0), len(word) - 1), 0)
    fixation_word[np.ix_(on_word, identity)] = word[row[on_word]][:, identity]
    words = word_rows["word"].to_numpy()[source]
    encodings = [encode(list(words[offsets[r]:offsets[r + 1]]), r) for r in range(len(offsets) - 1)]
    qc.add("ablate", "trials", "text ablation: paragraph words permuted within the trial (tokens and lexical "
           "features; gaze, layout and question kept)", int(in_fold.sum()), "changed")
    return {**shared, "word_raw": word, "fixation_word_raw": fixation_word,
            "fixation_word_category": np.where(on_word, category[row], shared["fixation_word_category"]),
            "fixation_word_is_content": np.where(on_word, content[row], shared["fixation_word_is_content"]),
            "token_key": np.arange(len(encodings), dtype=np.int64), "encodings": encodings,
            "token_cut": np.array([e["first_word"] for e in encodings], np.int64)}


def gaze_donors(trials: pl.DataFrame, rng: np.random.Generator) -> tuple[np.ndarray, dict[str, int]]:
    """For each trial row, the row whose gaze it takes (module docstring), and the count of each fallback.

    ``trials`` in ``trial_row`` order with ``text_id`` and ``split``. Returns ``(n_trials,)`` int64 donors (a donor
    equal to the row itself = no other trial of the text) and ``{"other split": n, "no other trial": n}``.
    """
    n = trials.height
    keyed = trials.select(pl.int_range(n, dtype=pl.Int64).alias("row"), "text_id", "split",
                          pl.Series("key", rng.random(n))).sort("split", "text_id", "key")
    group = pl.struct("split", "text_id")
    donors_frame = keyed.with_columns(pl.col("row").shift(-1).over(group).fill_null(pl.col("row").first().over(group))
                                      .alias("donor"))
    donor = np.empty(n, np.int64)
    donor[donors_frame["row"].to_numpy()] = donors_frame["donor"].to_numpy()
    alone = np.flatnonzero(donor == np.arange(n))
    text = trials["text_id"].to_numpy()
    other_split = 0
    if alone.size:  # a trial alone in its split: a random other trial of its text, any split
        by_text = trials.select(pl.int_range(n, dtype=pl.Int64).alias("row"), "text_id").group_by("text_id").agg("row")
        rows_of = dict(zip(by_text["text_id"].to_list(), by_text["row"].to_list()))
        for r in alone:  # few rows (the small groups), not a hot path
            others = [o for o in rows_of[text[r]] if o != r]
            if others:
                donor[r] = others[int(rng.integers(len(others)))]
                other_split += 1
    return donor, {"other split": other_split, "no other trial": int((donor == np.arange(n)).sum())}


def _swap_gaze(shared: dict, trials: pl.DataFrame, rng: np.random.Generator, qc: QCLog, in_fold: np.ndarray) -> dict:
    """Each trial's gaze from another trial of the same text (module docstring)."""
    donor, _ = gaze_donors(trials, rng)
    w_off = shared["word_offsets"]
    if not np.array_equal(np.diff(w_off)[donor], np.diff(w_off)):
        raise ValueError("gaze ablation: a donor trial of the same text has another number of words")
    w_trial = _trial_of_rows(w_off)
    word_source = w_off[donor[w_trial]] + (np.arange(len(w_trial)) - w_off[w_trial])
    f_off = shared["fixation_offsets"]
    lengths = np.diff(f_off)[donor]
    new_off = np.concatenate([[0], np.cumsum(lengths)]).astype(f_off.dtype)
    f_trial = _trial_of_rows(new_off)
    fix_source = f_off[donor[f_trial]] + (np.arange(len(f_trial)) - new_off[f_trial])
    lonely = donor == np.arange(len(donor))
    if lonely.any():  # no other reading of the text: its own fixations, in a random order
        shuffled = np.flatnonzero(lonely[f_trial])
        order = np.lexsort((rng.random(shuffled.size), f_trial[shuffled]))
        fix_source[shuffled] = fix_source[shuffled][order]
    split = trials["split"].to_numpy()
    other_split = in_fold & ~lonely & (split[donor] != split)
    none, same = in_fold & lonely, in_fold & ~lonely & (split[donor] == split)
    qc.add("ablate", "trials", "gaze ablation: gaze from another trial of the same text in the same split",
           int(same.sum()), "changed")
    qc.add("ablate", "trials", "gaze ablation: alone in its split with its text, gaze from another split's trial "
           "of the text", int(other_split.sum()), "changed")
    qc.add("ablate", "trials", "gaze ablation: no other trial of its text, own fixations shuffled in time (gaze "
           "only partly ablated)", int(none.sum()), "warning" if none.any() else "changed")
    return {**shared, "word_raw": np.asarray(shared["word_raw"])[word_source],
            "fixation_own_raw": np.asarray(shared["fixation_own_raw"])[fix_source],
            "fixation_word_raw": np.asarray(shared["fixation_word_raw"])[fix_source], "fixation_offsets": new_off,
            "fixation_word_index": np.asarray(shared["fixation_word_index"])[fix_source],
            "fixation_word_category": np.asarray(shared["fixation_word_category"])[fix_source],
            "fixation_word_is_content": np.asarray(shared["fixation_word_is_content"])[fix_source],
            "trial_raw": np.asarray(shared["trial_raw"])[donor],
            "trial_features": _donor_rows(shared["trial_features"], donor),
            "unknown_per_trial": np.asarray(shared["unknown_per_trial"])[donor]}


def _donor_rows(table: pl.DataFrame, donor: np.ndarray) -> pl.DataFrame:
    """``table`` (one row per ``trial_row``, in order) with each trial's values taken from its donor's row; the
    identifying columns (``trial_row``, ``trial_id``, ``text_id``) stay the trial's own."""
    own = [c for c in ("trial_row", "trial_id", "text_id") if c in table.columns]
    return table.select(own).hstack(table.drop(own)[donor])
