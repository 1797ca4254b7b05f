"""Turning a user's query text into keyword terms, safely. Pure functions.

The contract (docs/recall.md):

- Words are OR'd: any matching word finds an entity; BM25 ranks entities that match
  more, and rarer, words higher.
- Stopwords never match on their own: they are dropped from the query (and so are the
  verbs of :data:`FUNCTION_VERBS`), so a query made only of stopwords matches nothing.
- User text is data, never search syntax: the query is split into word tokens the way
  FTS5's ``unicode61`` tokenizer splits text, and the backend sends each token as a quoted string
  (:func:`storage.sqlite.keyword.match_expression`).
  ``"``, ``NEAR(``, ``col:x``, ``AND``, ``*``, ``-`` and unbalanced parentheses are
  therefore just separators or ordinary words.
- ``""`` (or only whitespace) enumerates; ``"*"`` has no word in it and matches nothing.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from .porter import stem

# English function words (and question words agents open queries with). They carry no
# topic, and their long posting lists are what makes an OR query slow.
STOPWORDS = frozenset(
    """
    a about above after again against all am an and any are as at be because been before being
    below between both but by can could did do does doing down during each either else ever every
    few for from further had has have having he her here hers herself him himself his how however
    i if in into is it its itself just let me might more most much must my myself neither no nor
    not now of off on once only or other ought our ours ourselves out over own per same shall she
    should since so some such than that the their theirs them themselves then there these they
    this those though through thus to too under until up upon us very via was we were what whatever
    when whenever where whereas wherever whether which while who whoever whom whose why will with
    within without would yet you your yours yourself yourselves
    """.split()
)

# Verbs a question carries whatever it asks about ("what do we use for queues", "which database does
# ledger use"): not stopwords of the language, but a memory that holds one ("we use X for Y") is no
# more about the question for it. Left out of a query's keyword terms, as stopwords are (docs/recall.md);
# on the team-memory collection it moved first-hit accuracy on attribute questions from 0.92 to 1.00.
FUNCTION_VERBS = frozenset({"use", "used", "uses", "using"})

# unicode61 token characters: letters, numbers and private-use characters; "_" separates.
_TOKEN = re.compile(r"[^\W_]+", re.UNICODE)


def tokenize(text: str) -> list[str]:
    """Split ``text`` into lower-case word tokens at the characters FTS5's ``unicode61`` treats as
    separators. Tokens are not folded here: FTS5 folds what it folds (Latin diacritics) when it
    reads the quoted token, exactly as it did for the stored text, in every script."""
    return _TOKEN.findall(text.lower())


@dataclass(frozen=True)
class Terms:
    """A parsed query: its distinct content words in query order, and their stems."""

    words: tuple[str, ...]
    stems: tuple[str, ...]

    @property
    def empty(self) -> bool:
        return not self.words


@lru_cache(maxsize=1024)
def parse(text: str) -> Terms:
    """Content words of ``text``: tokens minus stopwords, de-duplicated by stem, in order. (Pure, and
    asked for twice by every recall: the last thousand answers are kept.)"""
    words: list[str] = []
    stems: list[str] = []
    for token in tokenize(text):
        if token in STOPWORDS or token in FUNCTION_VERBS:
            continue
        s = stem(token)
        if s in stems:
            continue
        words.append(token)
        stems.append(s)
    return Terms(tuple(words), tuple(stems))


def is_enumeration(text: str) -> bool:
    """The query contract's match-all path: an empty (or all-whitespace) query."""
    return not text.strip()
