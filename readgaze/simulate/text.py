"""Synthetic texts for the simulated reader: words, paragraphs, questions and screen layout.

Words are drawn from wordfreq's English list (``wordfreq.top_n_list('en', n)``, shipped inside the
wordfreq package, no download) with probability proportional to their corpus frequency raised to
``frequency_power``. Sampling by frequency reproduces the length/frequency mix of running English
(short function words are frequent, long words rare) although the word order is random.
Each word gets a simulated surprisal (bits) that grows as frequency falls, with noise.

A paragraph has three questions; each question has a critical span (a contiguous run of words,
end exclusive, as OneStop's ``critical_span_indices``) and a distractor span elsewhere. A question
is tied to its span: it names the span's two rarest words, and its question word says where the
span lies (:data:`QUESTION_TEMPLATES`: first, middle or last third of the paragraph, by the span's
centre). Which question a reader had can thus be read off where they slowed down, not off the text.

With ``keyword_questions=True`` (the planted ``question_span`` task of
:func:`readgaze.simulate.simulate_corpus`, which needs the text) it is the other way round: each question is
"What does the text say about {keyword}?", with a keyword from the closed set :data:`KEYWORDS` written into one
word of its critical span; its distractor span is as long and holds no keyword. Only the paragraph's words say
which of two equally long spans answers the question: nothing in the question says where, and nothing in the
gaze says which.

The layout mimics OneStop's screen by default (2560 x 1440 px, text from x = 358 to 2164 px,
first line top at y = 154 px, line pitch 114 px, monospace 19 px per character, boxes that abut
and include the trailing space, one full line pitch tall). Proportional fonts are supported.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import polars as pl

from readgaze.text import TextLayout

# words that must not appear in a demo text (matched as prefixes, or exactly for short ones)
_BLOCK_PREFIXES = ("fuck", "shit", "bitch", "cunt", "dick", "cock", "puss", "porn", "sex", "nigg",
                   "fag", "slut", "whore", "rape", "rapist", "nazi", "dildo", "penis", "vagin", "boob", "asshole",
                   "bullshit", "piss", "crap", "damn", "naked", "horny", "nude", "suicid", "kill",
                   "gun", "drug", "retard", "stupid", "dumb", "murder", "terror", "bomb")
_BLOCK_EXACT = {"ass", "hell", "tit", "tits", "cum", "gay", "die", "dead", "death", "sexy"}
# relative advance widths of a proportional sans-serif font (em units); others get 0.55
_NARROW = dict.fromkeys("ijl.,;:'!|", 0.25) | dict.fromkeys("ftrI", 0.33)
_WIDE = dict.fromkeys("mwMW", 0.85) | dict.fromkeys("ABCDEGHKNOQRUVXYZ", 0.68)
_REL_WIDTH = _NARROW | _WIDE
_MEAN_REL_WIDTH = 0.52  # mean relative width of running English text in this table
KEYWORDS = ("river", "music", "doctor", "garden")
"""Keywords of the ``keyword_questions`` paragraphs: common nouns of 5-6 letters (Zipf frequency 4.8-5.5, so they
are read like the words around them), each one WordPiece token of the shipped MiniLM vocabulary. A small closed
set: three of them recur in every text, so even the tiny random encoder can learn to find them; a paragraph's three
questions ask about three different keywords."""
KEYWORD_QUESTION = "What does the text say about {k}?"
QUESTION_TEMPLATES = ("Who is described with {a} and {b}?",      # span centre in the first third
                      "What does the text say about {a} and {b}?",  # middle third
                      "Why does the text mention {a} and {b}?")     # last third


@lru_cache(maxsize=4)
def word_pool(n_words: int = 6000) -> tuple[np.ndarray, np.ndarray]:
    """English words and their Zipf frequencies from wordfreq's built-in list.

    Returns
    -------
    words : numpy.ndarray of str, shape (n,)
        Lower-case alphabetic words (``a`` and ``i`` are the only one-letter words kept).
    zipf : numpy.ndarray of float64, shape (n,)
        ``wordfreq.zipf_frequency(word, 'en')``: log10 of occurrences per billion words.
    """
    import wordfreq

    keep = []
    for w in wordfreq.top_n_list("en", n_words):
        if not re.fullmatch(r"[a-z]*[aeiouy][a-z]*", w) or (len(w) == 1 and w not in ("a", "i")):
            continue
        if w in _BLOCK_EXACT or w.startswith(_BLOCK_PREFIXES):
            continue
        keep.append(w)
    zipf = np.array([wordfreq.zipf_frequency(w, "en") for w in keep])
    return np.array(keep), zipf


def sample_words(rng: np.random.Generator, n_words: int, *, frequency_power: float = 0.9
                 ) -> tuple[list[str], np.ndarray]:
    """Draw ``n_words`` words with probability proportional to ``frequency ** frequency_power``.

    Returns the words (lower case) and their Zipf frequencies, shape ``(n_words,)`` float64.
    """
    pool, zipf = word_pool()
    weights = 10.0 ** (frequency_power * zipf)
    idx = rng.choice(len(pool), size=n_words, p=weights / weights.sum())
    return [str(w) for w in pool[idx]], zipf[idx].astype(np.float64)


def simulated_surprisal(rng: np.random.Generator, zipf: np.ndarray) -> np.ndarray:
    """Surprisal in bits that rises as frequency falls: ``2 + 1.6 (7.5 - zipf) + N(0, 2)``, in [0.5, 25]."""
    return np.clip(2.0 + 1.6 * (7.5 - zipf) + rng.normal(0, 2.0, len(zipf)), 0.5, 25.0)


@dataclass(frozen=True)
class Paragraph:
    """One simulated text: its words, per-word features and three questions.

    Attributes
    ----------
    words : list of str
        The interest-area labels in reading order (punctuation attached, as OneStop's IA labels).
    zipf : numpy.ndarray, (n_words,) float64
        Zipf frequency of each word.
    surprisal_bits : numpy.ndarray, (n_words,) float64
        Simulated surprisal.
    questions : list of str
        Three questions.
    critical_spans, distractor_spans : list of (int, int)
        Per question, ``(start, end)`` word indices, end exclusive.
    """

    words: list[str]
    zipf: np.ndarray
    surprisal_bits: np.ndarray
    questions: list[str]
    critical_spans: list[tuple[int, int]]
    distractor_spans: list[tuple[int, int]]

    @property
    def n_words(self) -> int:
        return len(self.words)


def make_paragraph(rng: np.random.Generator, n_words: int, *, frequency_power: float = 0.9,
                   easy: bool = False, keyword_questions: bool = False) -> Paragraph:
    """Draw a paragraph of ``n_words`` words in sentences of 6-24 words, with three questions.

    ``easy=True`` (OneStop's elementary level) raises ``frequency_power`` so words are commoner.
    ``keyword_questions``: see the module docstring (False keeps the random stream of earlier versions).
    """
    tokens, z = sample_words(rng, n_words, frequency_power=frequency_power + (0.15 if easy else 0.0))
    ends = np.cumsum(rng.integers(6, 25, size=n_words))
    ends = ends[ends < n_words - 3]
    starts = np.concatenate([[0], ends])
    for s in starts:  # capitalise sentence starts, full stop before each new sentence
        tokens[s] = tokens[s].capitalize()
    for e in ends:
        tokens[e - 1] += "."
    tokens[-1] += "."
    tokens = [("I" if t == "i" else t) for t in tokens]
    commas = rng.random(n_words) < 0.06
    tokens = [t + "," if c and not t.endswith(".") else t for t, c in zip(tokens, commas)]
    surprisal = simulated_surprisal(rng, z)
    if keyword_questions:
        crit, dist, questions = _keyword_questions(rng, tokens, z, surprisal)
    else:
        crit, dist, questions = _questions(rng, tokens, z)
    return Paragraph(tokens, z, surprisal, questions, crit, dist)


def _questions(rng, tokens, zipf):
    """Three questions, each about a critical span of 10-30 % of the text, plus a distractor span.

    A question names the span's two rarest words; its template (:data:`QUESTION_TEMPLATES`) is chosen by the
    third of the paragraph that holds the span's centre.
    """
    n = len(tokens)
    crit, dist, questions = [], [], []
    for _ in range(3):
        length = int(rng.integers(max(3, n // 10), max(4, (3 * n) // 10) + 1))
        start = int(rng.integers(0, n - length + 1))
        crit.append((start, start + length))
        d_len = max(3, length // 2)
        free = [s for s in range(0, n - d_len + 1) if s + d_len <= start or s >= start + length]
        d_start = int(rng.choice(free)) if free else 0
        dist.append((d_start, d_start + d_len))
        span = np.arange(start, start + length)
        content = span[np.argsort(zipf[span])[:2]]  # the two rarest words of the span
        a, b = (tokens[i].strip(".,").lower() for i in sorted(content))
        third = min(2, int(3 * (start + length / 2) / n))  # no random draw: the corpus's streams are unchanged
        questions.append(QUESTION_TEMPLATES[third].format(a=a, b=b))
    return crit, dist, questions


def _keyword_questions(rng, tokens: list[str], zipf: np.ndarray, surprisal: np.ndarray, attempts: int = 50):
    """Three keyword questions (module docstring); ``tokens``, ``zipf`` and ``surprisal`` are changed in place.

    Each question gets a critical span of 3 to ``n // 7`` words (a sentence-sized answer) and one of three different
    keywords written into a random word of it, keeping the replaced word's capital and punctuation; each distractor
    span, as long as its critical span, is drawn among the windows that overlap neither its critical span nor any
    keyword. Spans are redrawn (up to ``attempts`` times, from ``rng``) when the keywords collide or leave no room;
    then ``ValueError``.
    """
    import wordfreq

    n = len(tokens)
    asked = rng.choice(len(KEYWORDS), size=3, replace=False)
    for _ in range(attempts):
        lengths = rng.integers(3, max(3, n // 7) + 1, size=3)
        starts = [int(rng.integers(0, n - length + 1)) for length in lengths]
        places = [int(rng.integers(s, s + length)) for s, length in zip(starts, lengths)]
        if len(set(places)) < 3:
            continue
        free = [[d for d in range(0, n - length + 1) if (d + length <= s or d >= s + length)
                 and not any(d <= k < d + length for k in places)] for s, length in zip(starts, lengths)]
        if all(free):
            break
    else:
        raise ValueError(f"a {n}-word paragraph has no room for three keyword spans and their distractors")
    crit, dist = [], []
    for q in range(3):
        i, keyword = places[q], KEYWORDS[asked[q]]
        punctuation = tokens[i][len(tokens[i].rstrip(".,")):]
        tokens[i] = (keyword.capitalize() if tokens[i][:1].isupper() else keyword) + punctuation
        zipf[i] = wordfreq.zipf_frequency(keyword, "en")
        surprisal[i] = simulated_surprisal(rng, zipf[i:i + 1])[0]
        d_start = int(rng.choice(free[q]))
        crit.append((starts[q], starts[q] + int(lengths[q])))
        dist.append((d_start, d_start + int(lengths[q])))
    return crit, dist, [KEYWORD_QUESTION.format(k=KEYWORDS[a]) for a in asked]


def char_widths(word: str, char_width_px: float, proportional: bool) -> np.ndarray:
    """Advance width of each character of ``word`` in px (monospace: all ``char_width_px``)."""
    if not proportional:
        return np.full(len(word), float(char_width_px))
    rel = np.array([_REL_WIDTH.get(c, 0.55) for c in word])
    return rel * (char_width_px / _MEAN_REL_WIDTH)


def layout_words(words: list[str], *, text_id: str | None = None, left_px: float = 358.0,
                 top_px: float = 154.0, width_px: float = 1806.0, line_pitch_px: float = 114.0,
                 char_width_px: float = 19.0, proportional: bool = False) -> TextLayout:
    """Lay words out left to right in lines that wrap at ``width_px``.

    Each interest-area box spans the word plus its trailing space horizontally (boxes abut, as in
    OneStop's Data Viewer reports) and one full line pitch vertically: line ``k`` occupies
    ``[top_px + k * line_pitch_px, top_px + (k + 1) * line_pitch_px)``.

    Parameters
    ----------
    words : list of str
        Interest-area labels in reading order.
    text_id : str, optional
    left_px, top_px : float
        Top-left corner of the text block, px.
    width_px : float
        Maximum line width, px; a word that would end past it starts a new line.
    line_pitch_px : float
        Distance between successive midlines, px.
    char_width_px : float
        Character advance (monospace) or mean advance (proportional), px.
    proportional : bool
        Use per-character widths of a sans-serif font instead of a fixed advance.

    Returns
    -------
    readgaze.text.TextLayout
        ``words`` with ``ia_index``/``word_index`` (Int32, equal), ``word``, ``line_index`` (Int32)
        and Float64 box edges; ``lines`` with midlines ``y_px``.
    """
    space = char_width_px if not proportional else 0.28 * char_width_px / _MEAN_REL_WIDTH
    widths = np.array([char_widths(w, char_width_px, proportional).sum() + space for w in words])
    left = np.empty(len(words))
    line = np.empty(len(words), dtype=np.int32)
    x, k = left_px, 0
    for i, wpx in enumerate(widths):  # wrapping is sequential by nature; texts have < 1,000 words
        if x > left_px and x + wpx - space > left_px + width_px:
            x, k = left_px, k + 1
        left[i], line[i] = x, k
        x += wpx
    top = top_px + line * line_pitch_px
    frame = pl.DataFrame({
        "ia_index": np.arange(len(words), dtype=np.int32),
        "word_index": np.arange(len(words), dtype=np.int32),
        "word": list(words),
        "line_index": line,
        "left_px": left,
        "right_px": left + widths,
        "top_px": top.astype(np.float64),
        "bottom_px": (top + line_pitch_px).astype(np.float64),
    })
    return TextLayout.from_words(frame, text_id=text_id)
