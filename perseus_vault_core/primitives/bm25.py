"""BM25 as FTS5's ``bm25()`` computes it, and tokenizing text as FTS5's ``porter unicode61
remove_diacritics 2`` does: ASCII text fast (:func:`ascii_terms`), any text in pure Python
(:func:`unicode_terms`, tested against FTS5 on every code point).

Pure functions, shared by the keyword indexes' SQL paths (:mod:`storage.sqlite.keyword`,
:mod:`storage.postgres.keyword`, whose postings are tokenized here) and the in-memory mirror
(:mod:`indexes.keyword`), so all give the very same scores.
"""

from __future__ import annotations

import bisect
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
    """True when every non-ASCII character is one that unicode61 treats as a separator (by FTS5's own
    Unicode tables, :func:`_fold`: an emoji newer than them is a token character to FTS5)."""
    return all(ord(ch) < 128 or _FOLDING[ord(ch)] == " " for ch in text)


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


# --- tokenizing any text as FTS5's ``unicode61 remove_diacritics 2`` does, in pure Python ---------
#
# unicode61's token characters are the categories L*, N* and Co of the Unicode tables compiled into
# SQLite, which are older than Python's: a character assigned since (a newer symbol, an emoji, a mark)
# is unassigned to FTS5, and FTS5 takes unassigned code points as token characters. The tables below
# are what separates Python's categories (Unicode 14, Python 3.11) from FTS5's (SQLite 3.50), found by
# tokenizing every code point with FTS5 (tests/core/primitives/test_bm25.py holds them to it): code points FTS5
# takes as token characters though Python's category separates, the reverse, and the ones FTS5 leaves
# as they are (no case pair in its tables). Ranges in hex, inclusive.
_FTS5_TOKEN_CHARS = (
    "300-304 306-30c 30f 311 31b 323-328 32d-32e 330-331 58d-58e 605 61c-61d 7fd-7ff 888 890-89f 8ca-8e3 8ff "
    "9fd-9fe a76 afa-aff b55 c00 c04 c3c c77 c81 c84 d00-d01 d3b-d3c d4f d81 eba 1715 180f 1885-1886 "
    "1ab0-1ace 1b7d-1b7e 1cf7-1cf9 1de7-1dfb 2066-2069 20ba-20c0 218a-218b 23f4-23ff 2700 2b4d-2b4f 2b5a-2bff "
    "2e3c-2e5d 32ff a69e a82c a8c5 a8fc a8ff a9e5 aa7c-aa7d ab5b ab6a-ab6b fbc2 fd40-fd4f fdcf fdfe-fdff "
    "fe27-fe2f 1018c-1018e 1019c-101a0 102e0 10376-1037a 1056f 10877-10878 10ac8 10ae5-10ae6 10af0-10af6 "
    "10b99-10b9c 10d24-10d27 10eab-10ead 10f46-10f50 10f55-10f59 10f82-10f89 11070 11073-11074 1107f "
    "110c2-110cd 11145-11146 11173-11175 111c9-111cf 111db 111dd-111df 1122c-1123e 112a9 112df-112ea "
    "11300-11303 1133b-1133c 1133e-1134d 11357 11362-11374 11435-11446 1144b-1144f 1145a-1145e 114b0-114c3 "
    "114c6 115af-115d7 115dc-115dd 11630-11643 11660-1166c 116b9 1171d-1172b 1173c-1173f 1182c-1183b "
    "11930-1193e 11940 11942-11946 119d1-119e0 119e2 119e4 11a01-11a0a 11a33-11a39 11a3b-11a47 11a51-11a5b "
    "11a8a-11a9c 11a9e-11aa2 11c2f-11c3f 11c41-11c45 11c70-11c71 11c92-11cb6 11d31-11d45 11d47 11d8a-11d97 "
    "11ef3-11ef8 11fd5-11fff 12474 12ff1-12ff2 13430-13438 16a6e-16a6f 16af0-16af5 16b30-16b3f 16b44-16b45 "
    "16e97-16e9a 16f4f 16f7f-16f87 16fe2 16fe4-16ff1 1bc9c-1cfc3 1d1de-1d1ea 1d800-1daaf 1e000-1e02a "
    "1e130-1e136 1e14f 1e2ae 1e2ec-1e2ef 1e2ff 1e8d0-1e8d6 1e944-1e94a 1e95e-1e95f 1ecac 1ecb0 1ed2e 1f0bf "
    "1f0e0-1f0f5 1f10d-1f10f 1f12f 1f16c-1f16f 1f19b-1f1ad 1f23b 1f260-1f265 1f321-1f32f 1f336 1f37d-1f37f "
    "1f394-1f39f 1f3c5 1f3cb-1f3df 1f3f1-1f3ff 1f43f 1f441 1f4f8 1f4fd-1f4ff 1f53e-1f53f 1f544-1f54f "
    "1f568-1f5fa 1f641-1f644 1f650-1f67f 1f6c6-1f6fc 1f780-1fbca"
)
_FTS5_SEPARATORS = "19b0-19c0 19c8-19c9 1cf2-1cf3 fffe-ffff"
_FTS5_UNFOLDED = (
    "37f 528-52e 13f8-13fd 1c80-1cbf 2c2f a698-a69a a796-a79e a7ab-a7f5 ab70-abbf 104b0-10595 10c80-10cb2 "
    "118a0-118bf 16e40-16e5f 1e900-1e921"
)
_FTS5_MARKS_KEPT = "1e0-1e3 1fc-1ff"  # folded to lower case with their diacritics
# The combining marks that remove_diacritics makes token characters, and drops from the token.
_FTS5_DIACRITICS = frozenset(
    int(c, 16)
    for c in (
        "300 301 302 303 304 306 307 308 309 30a 30b 30c 30f 311 31b 323 324 325 326 327 328 32d 32e 330 331".split()
    )
)


def _ranges(spec: str) -> tuple[list[int], list[int]]:
    """``"a-b c"`` (hex) as sorted starts and ends."""
    starts, ends = [], []
    for item in spec.split():
        first, _, last = item.partition("-")
        starts.append(int(first, 16))
        ends.append(int(last or first, 16))
    return starts, ends


_TOKEN_CHARS, _SEPARATORS = _ranges(_FTS5_TOKEN_CHARS), _ranges(_FTS5_SEPARATORS)
_UNFOLDED, _MARKS_KEPT = _ranges(_FTS5_UNFOLDED), _ranges(_FTS5_MARKS_KEPT)


def _within(code: int, table: tuple[list[int], list[int]]) -> bool:
    i = bisect.bisect_right(table[0], code) - 1
    return i >= 0 and code <= table[1][i]


def _latin(ch: str) -> bool:
    code = ord(ch)
    return (ch.isascii() and ch.isalpha()) or 0xC0 <= code <= 0x24F or 0x1E00 <= code <= 0x1EFF


def _fold(code: int) -> str:
    """One character as unicode61 leaves it in a token: folded to lower case, a Latin letter's
    diacritics removed; ``""`` for a diacritic dropped from its token; ``" "`` for a separator."""
    ch = chr(code)
    if code < 128:
        return ch.lower() if ch.isalnum() else " "
    if _within(code, _SEPARATORS):
        return " "
    if not _within(code, _TOKEN_CHARS):
        category = unicodedata.category(ch)
        if not (category[0] in "LN" or category in ("Co", "Cn")):
            return " "
    if code in _FTS5_DIACRITICS:
        return ""
    if _within(code, _UNFOLDED):
        return ch
    low = ch.casefold()  # simple case folding: a character that folds to several keeps its lower case
    if len(low) != 1:
        low = ch.lower()
    if _within(code, _MARKS_KEPT):
        return low
    parts = unicodedata.normalize("NFD", low)
    if len(parts) > 1 and _latin(parts[0]) and all(unicodedata.category(m) == "Mn" for m in parts[1:]):
        return parts[0]
    return low


class _Folding(dict[int, str]):
    """``str.translate``'s table for :func:`_fold`, filled as characters are met."""

    def __missing__(self, code: int) -> str:
        folded = self[code] = _fold(code)
        return folded


_FOLDING = _Folding((code, _fold(code)) for code in range(128))


def unicode_tokens(text: str | None) -> list[str]:
    """The tokens of ``text`` as FTS5's ``unicode61 remove_diacritics 2`` makes them, before stemming."""
    if not text:
        return []
    return [token for token in text.translate(_FOLDING).split(" ") if token]


def unicode_terms(columns: Sequence[str | None]) -> tuple[Terms, int]:
    """Weighted term frequencies and total length of any text, tokenized as FTS5's ``porter unicode61
    remove_diacritics 2`` does (equal to :func:`ascii_terms` where that applies)."""
    counts: Terms = {}
    length = 0
    for text, weight in zip(columns, WEIGHTS):
        tokens = unicode_tokens(text)
        length += len(tokens)
        for token, n in Counter(tokens).items():
            term = stem(token)
            counts[term] = counts.get(term, 0.0) + n * weight
    return counts, length


def terms(columns: Sequence[str | None]) -> tuple[Terms, int]:
    """Weighted term frequencies and total length: :func:`ascii_terms` when it applies (faster), else
    :func:`unicode_terms`."""
    found = ascii_terms(columns)
    return found if found is not None else unicode_terms(columns)


def phrase(word: str) -> tuple[str, ...]:
    """The index terms of one query word, in order (usually one; none, or several when the word holds
    separators)."""
    return tuple(stem(token) for token in unicode_tokens(word))
