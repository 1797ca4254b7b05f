"""Curation: which memories repeat one another, and which one updates another. Pure functions
(docs/curation.md).

An agent's memory collects the same fact twice (a new session learns it again, under another key) and
facts that changed (production moved region; the team replaced a tool). Recall, ``prepare``,
``remember`` and ``hygiene`` ask this module about pairs of memories, judged offline from what the
vault holds: the two texts, their stored vectors (the bundled model's), and when each became valid.

A pair is one of:

- ``duplicate``: the two say the same thing. The same text once normalised (case, whitespace and
  punctuation aside), or close in meaning with the same *values* (below) and no sign that one value
  replaced another;
- ``update``: the two speak of the same subject and differ in a value: a number, a name, an identifier
  (its *anchors*) or a few words swapped in an otherwise shared statement. The one valid later updates
  the other;
- ``None``: anything else, including two records that name different identifiers (two tickets, two
  incidents), which are never merged nor ordered.

Values (*anchors*) are the tokens that pin a statement down: those holding a digit (versions, dates,
ports, regions such as ``eu-west-1``), identifiers (``ENG-142``, ``#77``, paths, addresses), and
capitalised words inside a sentence (names: people, products, days). The rules read no word list of
any domain, so they carry over to other memories than the ones they were measured on.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache
from dataclasses import dataclass
from typing import Literal, Protocol, TypeVar

import numpy as np

from ..primitives.porter import stem
from ..primitives.query import STOPWORDS, tokenize

Relation = Literal["duplicate", "update"]
TURN_TYPE = "turn"  # a conversation's turns (conversations.py): events, never curated


class _HasId(Protocol):
    @property
    def id(self) -> int: ...


H = TypeVar("H", bound=_HasId)

# Similarity (cosine of the stored vectors) at which two memories may be about the same thing at all,
# may repeat each other, and may update each other. Measured on benchmarks/data/curation.json (the "dev"
# half; docs/benchmarks.md gives the "check" half beside it).
RELATED = 0.55
DUPLICATE = 0.68
UPDATE = 0.60
SHARED_WORDS = 0.4  # a duplicate shares this share of the shorter one's content words (a paraphrase keeps some)
SWAP_CEILING = 0.90  # at or above this cosine, words exchanged are synonyms (starts, begins), not new values
# A memory of more content words than this is a document, not a statement: two documents close in meaning
# are on one topic (two abstracts), and only a near copy (by vector and by words) is a duplicate.
LONG_WORDS = 16
# What of a memory its words, values and records are read from: its first characters. A longer memory is a
# document (a file, a transcript): the exact-repeat check still reads all of it, and a pair of documents
# is only ever a duplicate, by near-identical vectors and words (LONG_DUPLICATE, LONG_JACCARD).
READ_CHARS = 16_384
LONG_DUPLICATE = 0.90
LONG_JACCARD = 0.6
# Without vectors (a keyword-only vault) the word sets' Jaccard stands in for the cosine.
WORDS_RELATED = 0.3
WORDS_DUPLICATE = 0.8
WORDS_UPDATE = 0.35

_WORD = re.compile(r"[\w][\w.\-/:@#]*[\w]|[\w]")
_RECORD = re.compile(r"^(?:[a-z][a-z0-9]*-\d+|#\d+|[0-9a-f]{7,40})$")  # eng-142, #77, a commit hash
_SENTENCE_END = re.compile(r"[.!?:;]\s*$")
_VALUE = re.compile(r"[\d/@#]|.[A-Z]")  # a digit or a mark anywhere, or a capital after the first letter


@dataclass(frozen=True)
class Said:
    """What curation reads of one memory's text: its normal form, its content words (stemmed, no
    stopwords), its word tokens as written (lower-cased), its anchors (values, lower-cased) and, among
    them, record identifiers."""

    normal: str
    words: frozenset[str]
    anchors: frozenset[str]
    records: frozenset[str]
    tokens: frozenset[str] = frozenset()

    def holds(self, anchor: str) -> bool:
        """Whether this text holds ``anchor`` in some spelling: each of its word tokens here, or one that
        begins with it or that it begins with, from three letters on (Postgres, PostgreSQL; Feb,
        February; prod, production)."""
        return all(part in self.tokens or (len(part) >= 3 and not part.isdigit() and any(
            (t.startswith(part) or part.startswith(t)) and len(t) >= 3 and not t.isdigit() for t in self.tokens))
            for part in tokenize(anchor))


def normal(text: str) -> str:
    """The text exact repeats share: case folded, punctuation dropped, whitespace collapsed."""
    return " ".join(tokenize(text.casefold()))


@lru_cache(maxsize=8192)
def said(text: str) -> Said:
    """The features of ``text`` (see :class:`Said`), its values and words from its first
    :data:`READ_CHARS` characters; kept for the texts met most recently, since the same memories come
    back recall after recall."""
    whole, text = text, text[:READ_CHARS]
    anchors = set()
    first = True
    for raw in text.split():
        for token in _WORD.findall(raw):
            if _VALUE.search(token) or (not first and token[0].isupper() and token != "I"
                                        and token.lower() not in STOPWORDS):
                anchors.add(token.lower().strip(".-:"))
            first = False
        first = bool(_SENTENCE_END.search(raw))
    anchors.discard("")
    records = frozenset(a for a in anchors if _RECORD.match(a) and any(c.isdigit() for c in a))
    tokens = tokenize(text)
    words = frozenset(stem(t) for t in tokens if t not in STOPWORDS)
    return Said(normal(whole), words, frozenset(anchors), records, frozenset(tokens))


def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    return len(a & b) / len(a | b) if a or b else 1.0


def relation(a: Said, b: Said, cosine: float | None) -> Relation | None:
    """How two memories relate (see the module docstring); ``cosine`` of their stored vectors, or
    ``None`` when either has none (the word sets then stand in)."""
    if a.normal == b.normal:
        return "duplicate"
    if a.records and b.records and a.records != b.records:
        return None  # two records: two tickets, two incidents, two commits
    similar = cosine if cosine is not None else jaccard(a.words, b.words)
    related, duplicate, update = (RELATED, DUPLICATE, UPDATE) if cosine is not None else \
        (WORDS_RELATED, WORDS_DUPLICATE, WORDS_UPDATE)
    if similar < related:
        return None
    if max(len(a.words), len(b.words)) > LONG_WORDS:  # a document on the same topic is not the same statement
        return "duplicate" if similar >= LONG_DUPLICATE and jaccard(a.words, b.words) >= LONG_JACCARD else None
    only_a = [x for x in a.anchors if not b.holds(x)]
    only_b = [x for x in b.anchors if not a.holds(x)]
    if only_a and only_b:  # a value on each side that the other lacks: one replaced the other ...
        return "update" if similar >= update and _same_statement(a, b) else None  # ... when all else stays
    if similar < SWAP_CEILING and _swapped(a, b):  # a word or two exchanged: dark and light mode, Aisha and Marco
        return None
    if only_a or only_b:  # values on one side only: the same statement with more detail, or another one
        fewer, more = (a, b) if only_b else (b, a)
        if not _within(fewer, more):
            return None
    shared = len(a.words & b.words) / max(1, min(len(a.words), len(b.words)))
    return "duplicate" if similar >= duplicate and shared >= SHARED_WORDS else None


def _within(fewer: Said, more: Said) -> bool:
    """Whether ``fewer`` says nothing ``more`` does not: most of its content words (four in five) are
    among the other's, so the other only adds detail (a name, a number) to the same statement."""
    return bool(fewer.words) and len(fewer.words & more.words) >= 0.8 * len(fewer.words)


def _same_statement(a: Said, b: Said) -> bool:
    """Whether the two say the same thing but for their values: one's content words, values aside, all
    among the other's ("Production runs in us-east-1", "Production runs in eu-west-1"). Two statements
    about different subjects differ in a word beside the values (the web team's standup, the mobile
    team's), and are not one's update of the other."""
    wa, wb = a.words - _value_words(a), b.words - _value_words(b)
    return bool(wa and wb) and (wa <= wb or wb <= wa)


def _value_words(s: Said) -> set[str]:
    return {stem(t) for anchor in s.anchors for t in tokenize(anchor)}


def _swapped(a: Said, b: Said) -> bool:
    """One or two content words exchanged for as many others in a statement that otherwise stays."""
    only_a, only_b, shared = a.words - b.words, b.words - a.words, a.words & b.words
    return 0 < len(only_a) <= 2 and 0 < len(only_b) <= 2 and len(shared) >= 2 * max(len(only_a), len(only_b))


def cosines(vectors: Sequence[np.ndarray | None]) -> np.ndarray:
    """Pairwise cosines of unit vectors (NaN where either is missing)."""
    n = len(vectors)
    out = np.full((n, n), np.nan)
    have = [i for i, v in enumerate(vectors) if v is not None]
    if have:
        matrix = np.stack([vectors[i] for i in have]).astype(np.float64)  # type: ignore[misc]
        matrix /= np.maximum(np.linalg.norm(matrix, axis=1, keepdims=True), 1e-12)
        block = matrix @ matrix.T
        out[np.ix_(have, have)] = block
    return out


# --- a result's curation: duplicates collapsed, newer facts first ------------------------------------

WINDOW = 30  # the first ranked candidates curated, whatever the limit (the top of a list never depends on it)
NEWER_GAP_MS = 3_600_000  # "newer" by the order rule alone: valid at least an hour later (not one batch's spread)
SAME_SUBJECT = 0.50  # the two memories' cosine at least this: the order rule may put the newer first ...
SIMILAR_RELEVANCE = 0.85  # ... when the newer is about as relevant to the query (a near tie: a newer fact about
# another attribute of the same thing, further from the question, keeps its place)
# A conversation's line stored as a plain memory ("Caroline: I went to the support group"): a turn.
SPEAKER = re.compile(r"^[A-Z][A-Za-z'.-]{0,30}(?: [A-Z][A-Za-z'.-]{0,30}){0,2}: \S")


def is_turn(kind: str, content: str) -> bool:
    """A conversation's turn: written by ``remember_conversation`` (its type), or a plain memory that opens
    with a speaker's name (:data:`SPEAKER`). Turns are events: never collapsed, never ordered by time."""
    return kind == TURN_TYPE or SPEAKER.match(content) is not None


@dataclass
class Candidate:
    """One ranked memory as curation sees it: its relevance to the query, whether that judged it
    related, when it became valid, whether it is a conversation turn (never curated: two turns may
    say the same words and both happened), its text, stored vector and scope (an unscoped recall sees
    every tenant's memories: one tenant's never stands for another's, nor updates it)."""

    id: int
    relevance: float
    related: bool
    valid_ms: int
    turn: bool
    text: str
    vector: np.ndarray | None
    scope: tuple[str, str] = ("", "")  # (agent_id, workspace_hash): two tenants' memories are never paired
    _said: Said | None = None

    @property
    def said(self) -> Said:
        if self._said is None:
            self._said = said(self.text)
        return self._said


@dataclass
class Curated:
    """The window's new order (ids), each kept memory's collapsed duplicates, and each memory a newer
    one likely updates (id -> the newer's id)."""

    window: list[int]
    order: list[int]
    duplicates: dict[int, list[int]]
    outdated_by: dict[int, int]

    def apply(self, ranked: Sequence[H], include_outdated: bool = True) -> list[H]:
        """``ranked`` (best first) in the curated order: the window as curated, the rest as it was;
        without the collapsed duplicates, and without the outdated ones unless ``include_outdated``."""
        by_id = {item.id: item for item in ranked}
        window = set(self.window)
        gone = set() if include_outdated else set(self.outdated_by)
        return [by_id[i] for i in self.order if i not in gone] + [item for item in ranked if item.id not in window]


def curate(ranked: Sequence[Candidate], query: Said | None = None, sims: np.ndarray | None = None) -> Curated:
    """Curate ``ranked`` (best first; recall gives its first :data:`WINDOW`). Duplicates collapse into one
    memory each, the most recent wording taking the group's best place. Then a newer memory goes just
    before an older one about the same subject: an ``update`` pair (the older marked ``outdated_by`` the
    newer), or a near tie (both related to the query, close in meaning, the newer valid an hour or more
    later and about as relevant) where the query names no value the older alone holds (``query``: the
    query's features). Only pairs whose vectors are close enough are read further (by numpy masks), so a
    window costs little when nothing in it is alike. ``sims``: the candidates' :func:`cosines`, when the
    caller has them."""
    n = len(ranked)
    if sims is None:
        sims = cosines([c.vector for c in ranked])
    missing = np.isnan(sims)  # a memory without a vector: its words decide (relation's Jaccard)
    codes: dict[tuple[str, str], int] = {}
    scope = np.array([codes.setdefault(c.scope, len(codes)) for c in ranked])
    plain = np.array([not c.turn for c in ranked])
    same = (scope[:, None] == scope[None, :]) & plain[:, None] & plain[None, :]
    known: dict[tuple[int, int], Relation | None] = {}

    def pair(i: int, j: int) -> Relation | None:
        i, j = min(i, j), max(i, j)
        if (i, j) not in known:
            known[i, j] = relation(ranked[i].said, ranked[j].said, None if missing[i, j] else float(sims[i, j]))
        return known[i, j]

    close = np.nan_to_num(sims, nan=-1.0)
    # The masks are walked as lists: a numpy call per place would cost more than the window's arithmetic.
    alike = (same & (missing | (close >= DUPLICATE))).T.tolist()  # alike[j][i]: i and j may repeat each other
    head = list(range(n))  # index -> its group's first (best ranked) member
    for j in range(1, n):
        for i in range(j):
            if alike[j][i] and head[i] == i and pair(i, j) == "duplicate":
                head[j] = i
                break
    members: dict[int, list[int]] = {}
    for j in range(n):
        members.setdefault(head[j], []).append(j)
    kept = {first: max(idx, key=lambda k: (ranked[k].valid_ms, -k)) for first, idx in members.items()}
    order = [kept[first] for first in sorted(members)]  # each group at its best member's place
    duplicates = {ranked[kept[f]].id: sorted(ranked[k].id for k in idx if k != kept[f])
                  for f, idx in members.items() if len(idx) > 1}
    outdated: dict[int, int] = {}
    valid = np.array([c.valid_ms for c in ranked], dtype=np.int64)
    later = same & (valid[None, :] > valid[:, None])  # [i, j]: j is valid after i, in i's scope
    maybe = (later & (missing | (close >= min(UPDATE, SAME_SUBJECT)))).tolist()

    def newer_first(i: int, j: int) -> bool:
        older, newer = ranked[i], ranked[j]
        if pair(i, j) == "update":
            outdated.setdefault(older.id, newer.id)
            return True
        return (not missing[i, j] and close[i, j] >= SAME_SUBJECT and older.related and newer.related
                and newer.valid_ms - older.valid_ms >= NEWER_GAP_MS
                and newer.relevance >= SIMILAR_RELEVANCE * older.relevance
                and not _names_the_older(query, older.said, newer.said))

    pos, moves = 0, 0
    while pos < len(order) and moves < n * n:  # each place: its newest fact about the subject
        i = order[pos]
        found = next((pos + 1 + q for q, j in enumerate(order[pos + 1 :]) if maybe[i][j] and newer_first(i, j)), None)
        if found is None:
            pos += 1
            continue
        order.insert(pos, order.pop(found))
        moves += 1
    return Curated([c.id for c in ranked], [ranked[k].id for k in order], duplicates, outdated)


def _names_the_older(query: Said | None, older: Said, newer: Said) -> bool:
    """Whether the query names a value (an anchor: a name, a number) the older memory holds and the
    newer does not: then the two answer different questions (ticket ENG-1 and ENG-2, staging and
    production), and the newer is not the older's update for this one."""
    if older.records and newer.records and older.records != newer.records:
        return True  # two records: two tickets, two incidents
    if query is None:
        return False
    return any(a in older.anchors and a not in newer.anchors and a not in newer.normal.split()
               for a in query.anchors if any(c.isdigit() for c in a))
