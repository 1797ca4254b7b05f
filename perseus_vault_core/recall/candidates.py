"""Candidates: the memories a new one may repeat, update or contradict, and how each relates to it. Pure
(docs/curation.md).

When a memory is written, ``remember`` looks it up among its scope's memories by both recall arms (its
vector's nearest, and the best keyword matches for its words) and hands what it found here. Each found
memory is scored as a candidate by how close the two are in meaning (the cosine of their vectors) and by
what they share beyond it: content words, values (the anchors of :mod:`.curation`: numbers, identifiers,
names), the category, words of their keys, the topic. The best few above a floor are the candidates:
found with high recall (an update phrased another way, "Production moved to us-east-2" after "Production
runs in eu-west-1", shares a subject and little else), few per write (at most :data:`MOST`, about two on
average), for the agent, a language model, or a judge the application passes, to decide on.

Each candidate carries its relation to the new memory, judged by rules that guess only where a guess is
safe, since recall acts on it for every query that returns the two (the vault never merges or hides a
memory on a guess):

- ``duplicate``: the same text once normalised (:func:`.curation.normal`: Unicode's canonical form, case
  and whitespace aside, every symbol and sign kept);
- ``update``: the same statement with one value replaced by another (a number, a version, a region, an
  identifier: one on each side), close in meaning: the one valid later updates the other;
- ``same_subject``: a candidate scored high enough to be about the same thing (close in meaning, and sharing
  values or words), or one whose one value of the statement was exchanged for one of the same shape however
  the rest is worded (a region for a region: :func:`exchanged`);
- ``related``: a candidate, for the agent to judge, nothing more.

Measured on benchmarks/data/curation.json and candidates.json (docs/benchmarks.md, "Candidates").
"""

from __future__ import annotations

import heapq
import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

from . import curation
from .curation import Said

Relation = Literal["duplicate", "update", "same_subject", "related"]

MOST = 3  # candidates kept at the most
FLOOR = 0.36  # a candidate's score at least this (with vectors: the cosine's scale)
WORDS_FLOOR = 0.30  # without vectors: the score built on the word sets' Jaccard instead
SAME_SUBJECT = (
    0.70  # a candidate's score at least this: the two are about one thing (a value or words shared too)
)
# What a candidate's score adds to the cosine, for what the two share beyond meaning.
W_WORDS = 0.40  # x the content words' Jaccard
W_VALUES = 0.10  # x the values (anchors) the new memory shares with it, three at the most
W_KEYWORD = 0.10  # x the keyword arm's score of it for the new memory's words (0..1)
W_CATEGORY = 0.05  # the same category
W_KEY = 0.05  # x the words their keys share past the first, two at the most
W_TOPIC = 0.05  # the same topic path


@dataclass(frozen=True)
class Memory:
    """What candidates reads of one memory: its id, text features, category, key, topic and when it became
    valid (its valid_from, else its write)."""

    id: int
    said: Said
    category: str
    key: str
    topic: str | None
    valid_ms: int


@dataclass(frozen=True)
class Found:
    """A memory one of the arms found for the new one: its cosine to the new memory (``None`` when either
    has no vector) and its keyword score for the new memory's words (0 when that arm did not find it)."""

    memory: Memory
    cosine: float | None
    keyword: float = 0.0


@dataclass(frozen=True)
class Candidate:
    """A memory the new one may repeat, update or contradict: its id, score, relation and cosine."""

    id: int
    score: float
    relation: Relation
    cosine: float | None


def judge(new: Memory, found: Sequence[Found]) -> list[Candidate]:
    """``found`` as candidates of ``new``: scored, the best :data:`MOST` at or above the floor, best first,
    each with its relation (the module docstring), each memory once. The new memory's own entity is never its
    candidate."""
    scored = _best(new, [f for f in found if f.memory.id != new.id])
    out: list[Candidate] = []
    for value, f in scored:
        if len(out) == MOST:
            break
        if any(
            c.id == f.memory.id for c in out
        ):  # found twice (by two look-ups, or in the store and the batch)
            continue
        if value >= (FLOOR if f.cosine is not None else WORDS_FLOOR):
            out.append(
                Candidate(
                    f.memory.id, round(value, 4), relation(new.said, f.memory.said, f.cosine, value), f.cosine
                )
            )
    # An exact repeat is always reported, whatever it scored (a text with no words scores nothing by them).
    for f in found:
        if (
            f.memory.id != new.id
            and f.memory.said.normal == new.said.normal
            and all(c.id != f.memory.id for c in out)
        ):
            out.insert(0, Candidate(f.memory.id, 1.0, "duplicate", f.cosine))
    return out[:MOST]


def score(new: Memory, f: Found) -> float:
    """How likely ``f`` is a memory ``new`` repeats or updates: the cosine (else the content words'
    Jaccard), plus what the two share beyond meaning (the ``W_*`` weights)."""
    return _without_values(new, f) + W_VALUES * _values(new, f)


def _without_values(new: Memory, f: Found, key: frozenset[str] | None = None) -> float:
    """Its score but for the values; ``key``: the new memory's key words (:func:`_key_words`), when already read."""
    old = f.memory
    mine, theirs = new.said.words, old.said.words
    if mine and theirs:  # the content words' Jaccard, the union counted, not made
        shared = len(mine & theirs)
        words = shared / (len(mine) + len(theirs) - shared)
    else:
        words = 0.0
    base = f.cosine if f.cosine is not None else words
    keys = len(
        (_key_words(new.key) if key is None else key) & _key_words(old.key)
    )  # cached: a key meets many
    return (
        base
        + W_WORDS * words
        + W_KEYWORD * min(max(f.keyword, 0.0), 1.0)
        + W_CATEGORY * (new.category == old.category)
        + W_KEY * min(keys, 2)
        + W_TOPIC * (bool(new.topic) and new.topic == old.topic)
    )


def _values(new: Memory, f: Found) -> int:
    """The new memory's values ``f`` holds in some spelling, three at the most (the dearest part of a score)."""
    return curation.held(new.said, f.memory.said, 3)


def _best(new: Memory, found: Sequence[Found]) -> list[tuple[float, Found]]:
    """``found`` scored, best first (ties by id), as far as the first :data:`MOST` of each memory need: the values
    held are counted only for a memory whose score could still reach that far (a write finds some 50 memories and
    keeps three) and could still reach the floor (a memory that cannot is left out: it is never a candidate), so
    the candidates judge() takes from what is returned are those all the scores would give, in the same order."""
    most = W_VALUES * min(len(new.said.anchors), 3)
    key = _key_words(new.key)
    bounded = sorted(
        ((_without_values(new, f, key), f) for f in found), key=lambda p: (-p[0], p[1].memory.id)
    )
    floors = {FLOOR if f.cosine is not None else WORDS_FLOOR for f in found}
    # One floor for all (all found with vectors, or all without): what cannot reach it is never a candidate.
    floor = floors.pop() if len(floors) == 1 else float("-inf")
    exact: list[tuple[float, Found]] = []
    best: dict[int, float] = {}  # each memory at its best score so far
    for partial, f in bounded:
        if partial + most < floor:
            break  # nothing from here on can reach the floor
        if len(best) >= MOST and heapq.nlargest(MOST, best.values())[-1] > partial + most:
            break  # nothing from here on can reach the first MOST
        value = partial + W_VALUES * _values(new, f)
        exact.append((value, f))
        best[f.memory.id] = max(value, best.get(f.memory.id, value))
    return sorted(exact, key=lambda p: (-p[0], p[1].memory.id))


def relation(a: Said, b: Said, cosine: float | None, value: float) -> Relation:
    """How two candidates of each other relate (the module docstring); ``value``: the candidate's score."""
    if a.normal == b.normal:
        return "duplicate"
    if replaced(a, b, cosine):
        return "update"
    return "same_subject" if value >= SAME_SUBJECT or exchanged(a, b) else "related"


def exchanged(a: Said, b: Said) -> bool:
    """One value on each side that the other lacks, and no other, both of one shape: the subject's value changed,
    however the rest is worded ("Production runs in eu-west-1 on EKS" and "Production moved to us-east-2 in July"); two records
    never are."""
    if a.records != b.records and a.records and b.records:
        return False
    only_a = [x for x in a.anchors if _is_value(x) and not b.holds(x)]
    only_b = [x for x in b.anchors if _is_value(x) and not a.holds(x)]
    return len(only_a) == 1 and len(only_b) == 1 and _shape(only_a[0]) == _shape(only_b[0])


def _shape(value: str) -> str:
    """A value's shape: each run of letters as ``a``, of digits as ``9``, marks kept (``eu-west-1``: ``a-a-9``),
    so that a region is exchanged for a region and a version for a version, not a port for a web address."""
    return re.sub(r"[a-z]+", "a", re.sub(r"[0-9]+", "9", value.lower()))


def replaced(a: Said, b: Said, cosine: float | None) -> bool:
    """The same statement with one value replaced by another: one anchor on each side that the other lacks,
    each a value (a digit or a mark in it: a version, a region, a time, an identifier; a name exchanged is
    another subject), all else of the statement kept, and close in meaning. "Production runs in us-east-1"
    and "Production runs in eu-west-1" are; "1:1 with Aisha: Tuesdays 15:30" and "1:1 with Marco: Tuesdays
    15:00" are not (two meetings); two records (two tickets) never are."""
    if a.records and b.records and a.records != b.records:
        return False
    close = cosine if cosine is not None else curation.jaccard(a.words, b.words)
    if close < (curation.UPDATE if cosine is not None else curation.WORDS_UPDATE):
        return False
    only_a = [x for x in a.anchors if not b.holds(x)]
    only_b = [x for x in b.anchors if not a.holds(x)]
    if len(only_a) != 1 or len(only_b) != 1 or not (_is_value(only_a[0]) and _is_value(only_b[0])):
        return False
    return curation.same_statement(a, b)


def newer(a: Memory, b: Memory) -> tuple[Memory, Memory]:
    """The pair as (newer, older): the one valid later is newer (the later written, on a tie)."""
    return (a, b) if (a.valid_ms, a.id) > (b.valid_ms, b.id) else (b, a)


def _is_value(anchor: str) -> bool:
    return any(c.isdigit() for c in anchor) or any(c in anchor for c in "/@#")


@lru_cache(maxsize=65536)
def _key_words(key: str) -> frozenset[str]:
    return frozenset(
        w for w in key.lower().replace("_", "-").replace("/", "-").split("-") if w and not w.isdigit()
    )
