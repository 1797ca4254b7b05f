"""BM25 as FTS5's ``bm25()`` computes it, and tokenizing ASCII text as FTS5's ``porter unicode61`` does.

Pure functions, shared by the keyword index's SQL path (:mod:`storage.sqlite.keyword`) and its
in-memory mirror (:mod:`indexes.keyword`), so both give the very same scores.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections import Counter
from collections.abc import Sequence

import numpy as np

from .porter import stem

K1 = 1.2
B = 0.75
# Column weights of (content, summary, tags): a word in the summary counts as one in the content.
WEIGHTS = (1.0, 1.0, 0.5)
ASCII_TOKEN = re.compile(r"[a-z0-9]+")
Terms = dict[str, float]  # stem -> weighted frequency in one document


# --- BM25 as FTS5's fts5Bm25Function computes it -------------------------------------------------


def idf(n_rows: int, df: int) -> float:
    """log((N - df + 0.5) / (df + 0.5)), and 1e-6 when that is not positive (a word in over half the rows)."""
    value = math.log((n_rows - df + 0.5) / (df + 0.5))
    return value if value > 0.0 else 1e-6


def ceiling(n_rows: int, dfs: Sequence[int]) -> float:
    """The most a query of words with these document frequencies could score: each word's idf times
    (K1 + 1), which its share of a row's score approaches as its frequency there grows."""
    return sum(idf(n_rows, df) for df in dfs) * (K1 + 1.0)


def avgdl(n_rows: int, n_tokens: int) -> float:
    return n_tokens / n_rows if n_rows else 1.0


def length_norm(lengths: np.ndarray, mean: float) -> np.ndarray:
    """k1 * (1 - b + b * D / avgdl) per row, in FTS5's order of operations."""
    return K1 * (1 - B + B * lengths / mean)


def phrase_scores(freqs: np.ndarray, norm: np.ndarray, weight: float) -> np.ndarray:
    """One phrase's share of the score in each row holding it (``weight`` is its idf). A row's score
    is the sum of its phrases' shares in query order, as FTS5 sums them."""
    f = freqs.astype(np.float64)
    shares: np.ndarray = weight * ((f * (K1 + 1.0)) / (f + norm))
    return shares


# --- tokenizing as FTS5 does -----------------------------------------------------------------


def _separators_only(text: str) -> bool:
    """True when every non-ASCII character is one that unicode61 treats as a separator.

    unicode61's token characters are the categories L*, N* and Co; everything else separates.
    """
    for ch in text:
        if ord(ch) > 127:
            category = unicodedata.category(ch)
            if category[0] in "LN" or category == "Co":
                return False
    return True


def ascii_columns(columns: Sequence[str | None]) -> list[str] | None:
    """The columns lower-cased, with separator-only non-ASCII blanked; ``None`` if FTS5 must tokenize."""
    out = []
    for text in columns:
        if text and not text.isascii():
            if not _separators_only(text):
                return None
            text = "".join(ch if ord(ch) < 128 else " " for ch in text)
        out.append(text.lower() if text else "")
    return out


def ascii_terms(columns: Sequence[str | None]) -> tuple[Terms, int] | None:
    """Weighted term frequencies and total length, or ``None`` if FTS5 must tokenize this text."""
    texts = ascii_columns(columns)
    if texts is None:
        return None
    counts: Terms = {}
    length = 0
    for text, weight in zip(texts, WEIGHTS):
        tokens = ASCII_TOKEN.findall(text)
        length += len(tokens)
        for token, n in Counter(tokens).items():
            term = stem(token)
            counts[term] = counts.get(term, 0.0) + n * weight
    return counts, length
