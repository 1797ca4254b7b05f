"""Curation: what the vault reads of a memory's text, the rules that compare two texts, and the arrangement of
a recall's first places by the relations kept between them. Pure functions (docs/curation.md).

An agent's memory collects the same fact twice (a new session learns it again, under another key) and
facts that changed (production moved region; the team replaced a tool). The vault never merges, hides or
marks a memory on a guess made at read time: a write judges the new memory against its candidates once
(candidates.py, kept by features/relations.py), and :func:`curate` arranges a recall's first places by what
was kept: memories kept as ``duplicates`` collapse into one, the older of an ``updates`` pair is marked
``outdated_by`` the newer, and of two memories kept as related the one valid later goes first unless the
query asks for what only the older holds.

What a text is read as (:class:`Said`): its normal form (:func:`normal`: Unicode's canonical form, letter
case and whitespace set aside, every symbol, sign and digit kept, so "C++" is not "C#"), its content words,
and its *values* (anchors): the tokens that pin a statement down, those holding a digit (versions, dates,
ports, regions such as ``eu-west-1``), identifiers (``ENG-142``, ``#77``, paths, addresses), and capitalised
words inside a sentence (names: people, products, days); record identifiers among them (two tickets).

:func:`relation`, the looser rule ``hygiene`` reports near-duplicates by (a report for a person, never acted
on), calls two memories:

- ``duplicate``: the same text once normalised, or close in meaning with the same values and no sign that
  one value replaced another;
- ``update``: the same subject with a value, a name, an identifier or a few words swapped in an otherwise
  shared statement;
- ``None``: anything else, including two records that name different identifiers.

The rules read no word list of any domain, so they carry over to other memories than the ones they were
measured on.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property, lru_cache
from typing import Literal, Protocol, TypeVar

from ..primitives.porter import stem
from ..primitives.query import STOPWORDS, tokenize

Relation = Literal["duplicate", "update"]


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
SHARED_WORDS = (
    0.4  # a duplicate shares this share of the shorter one's content words (a paraphrase keeps some)
)
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

    @cached_property
    def spelled(self) -> frozenset[str]:
        """Its word tokens of three characters or more that are not all digits: what holds() looks a spelling up
        in (a set, not a scan of the tokens); made at the first holds(), which only a write's candidates ask."""
        return frozenset(t for t in self.tokens if len(t) >= 3 and not t.isdigit())

    @cached_property
    def prefixes(self) -> frozenset[str]:
        """Every prefix of :attr:`spelled`'s tokens from three characters on."""
        return frozenset(t[:k] for t in self.spelled for k in range(3, len(t) + 1))

    @cached_property
    def reach(self) -> frozenset[str]:
        """What a text that holds an anchor has of it (:func:`_probes`): its anchors, its word tokens, and the
        first three characters of each spelling (marked), so that holds() refuses most anchors by one look-up."""
        return self.anchors | self.tokens | frozenset(_PREFIX + t[:3] for t in self.spelled)

    @cached_property
    def arranged(self) -> _Arranged:
        """Its anchors arranged for :func:`held`, which counts those another text holds in a few set operations."""
        plain: dict[str, list[str]] = {}
        spelled: dict[str, list[str]] = {}
        rest = []
        for anchor in self.anchors:
            parts = _parts(anchor)
            if anchor.startswith("-") or len(parts) != 1:
                rest.append(anchor)
            elif len(parts[0]) >= 3 and not parts[0].isdigit():
                spelled.setdefault(parts[0], []).append(anchor)
            else:
                plain.setdefault(parts[0], []).append(anchor)
        chains: dict[str, set[str]] = {}
        for part in spelled:
            for k in range(3, len(part) + 1):
                chains.setdefault(part[:k], set()).add(part)
        single = frozenset(a for group in (*plain.values(), *spelled.values()) for a in group)
        return _Arranged(
            {p: tuple(a) for p, a in plain.items()},
            {p: tuple(a) for p, a in spelled.items()},
            {c: frozenset(p) for c, p in chains.items()},
            single,
            tuple(rest),
        )

    @cached_property
    def negated(self) -> frozenset[str]:
        """The values it holds signed, without their sign (-5: 5), each held only as it is written."""
        return frozenset(a[1:] for a in self.anchors if a.startswith("-"))

    def holds(self, anchor: str) -> bool:
        """Whether this text holds ``anchor`` in some spelling: each of its word tokens here, or one that
        begins with it or that it begins with, from three letters on (Postgres, PostgreSQL; Feb,
        February; prod, production). A signed value is held only as it is: -5 is not 5."""
        probes = _probes(anchor)
        if probes is not None and self.reach.isdisjoint(probes):
            return (
                False  # neither the anchor nor a spelling of its first part: not held (the rule below agrees)
            )
        if anchor.startswith("-") or "-" + anchor in self.anchors:
            return anchor in self.anchors
        return all(
            part in self.tokens
            or (
                len(part) >= 3
                and not part.isdigit()
                and (part in self.prefixes or any(part[:k] in self.spelled for k in range(3, len(part) + 1)))
            )
            for part in _parts(anchor)
        )


@dataclass(frozen=True)
class _Arranged:
    """A text's anchors by how :meth:`Said.holds` decides them: of one part that is held as a token (``plain``,
    part -> its anchors), of one part that a spelling may stand for (``spelled``), each prefix of three characters
    or more of those parts (``chains``, prefix -> the parts it begins), the anchors of one part (``single``, not
    signed), and the rest (signed, of several parts or none), decided one by one."""

    plain: dict[str, tuple[str, ...]]
    spelled: dict[str, tuple[str, ...]]
    chains: dict[str, frozenset[str]]
    single: frozenset[str]
    rest: tuple[str, ...]


def held(of: Said, text: Said, most: int) -> int:
    """How many of ``of``'s anchors ``text`` holds (:meth:`Said.holds`), ``most`` at the most: what calling holds()
    for each would count, by set operations over the whole text (a write's candidates count thousands)."""
    a = of.arranged
    parts = (a.plain.keys() & text.tokens) | (a.spelled.keys() & text.prefixes if a.spelled else set())
    for prefix in a.chains.keys() & text.spelled if a.chains else ():
        parts |= a.chains[prefix]  # a token of the text the part begins with
    found = {anchor for part in parts for anchor in a.plain.get(part) or a.spelled[part]}
    signed = a.single & text.negated  # held only as written, when the text has the signed value
    count = len(found - signed) + sum(anchor in text.anchors for anchor in signed)
    for anchor in a.rest:
        if count >= most:
            break
        count += text.holds(anchor)
    return min(count, most)


def normal(text: str) -> str:
    """The text exact repeats share: Unicode's canonical form (NFC), letter case folded, whitespace runs as one
    space, and nothing else: every symbol, sign and digit counts ("written in C++" is not "written in C#",
    "-5 C" is not "5 C")."""
    return unicodedata.normalize("NFC", " ".join(unicodedata.normalize("NFC", text).casefold().split()))


@dataclass(frozen=True)
class Values:
    """What ordering a pair reads of a memory's text (:func:`_names_the_older`): its anchors, its record
    identifiers and its word tokens, without the stemmed words (:class:`Said` has those too)."""

    anchors: frozenset[str]
    records: frozenset[str]
    tokens: frozenset[str]


@lru_cache(maxsize=8192)
def values(text: str) -> Values:
    """The anchors, records and tokens of ``text``'s first :data:`READ_CHARS` characters (see :class:`Said`)."""
    text = text[:READ_CHARS]
    anchors = set()
    first = True
    for raw in text.split():
        for token in _WORD.findall(raw):
            if _VALUE.search(token) or (
                not first and token[0].isupper() and token != "I" and token.lower() not in STOPWORDS
            ):
                value = token.lower().strip(".-:")
                signed = raw.startswith(("-", "−")) and raw[1:2].isdigit() and raw[1:].startswith(token)
                anchors.add("-" + value if signed else value)  # a sign is part of the value: -5 is not 5
            first = False
        first = bool(_SENTENCE_END.search(raw))
    anchors.discard("")
    records = frozenset(a for a in anchors if _RECORD.match(a) and any(c.isdigit() for c in a))
    return Values(frozenset(anchors), records, frozenset(tokenize(text)))


@dataclass(frozen=True, slots=True)
class Pins:
    """What ordering a pair reads of a memory's text (:func:`_names_the_older`), read once with its version so that
    a window is curated without its texts: its record identifiers, its values that hold a digit (``numbers``: a
    query's number the older holds), and those with its word tokens that hold one (``written``: where a query's
    number is looked for in the newer)."""

    records: frozenset[str] = frozenset()
    numbers: frozenset[str] = frozenset()
    written: frozenset[str] = frozenset()


NO_PINS = Pins()  # a text of no number: most memories share this one


def pins(text: str) -> Pins:
    """What ordering a pair reads of ``text`` (:class:`Pins`), from its :func:`values` (of its first
    :data:`READ_CHARS` characters, which are all the cache keeps of it)."""
    return _pins(text[:READ_CHARS])


@lru_cache(maxsize=8192)
def _pins(text: str) -> Pins:
    found = values(text)
    numbers = frozenset(a for a in found.anchors if _numbered(a))
    written = numbers | frozenset(t for t in found.tokens if _numbered(t))
    return Pins(found.records, numbers, written) if found.records or written else NO_PINS


def asked(query: str) -> frozenset[str]:
    """The values holding a digit that ``query`` names (a version, a price, a date): what ordering a pair asks of
    the older (:func:`_names_the_older`)."""
    return pins(query).numbers if _numbered(query) else frozenset()


def _numbered(value: str) -> bool:
    return any(map(str.isdigit, value))


@lru_cache(maxsize=8192)
def said(text: str) -> Said:
    """The features of ``text`` (see :class:`Said`), its values and words from its first
    :data:`READ_CHARS` characters; kept for the texts met most recently, since the same memories come
    back recall after recall."""
    found = values(text)
    words = frozenset(stem(t) for t in found.tokens if t not in STOPWORDS)
    return Said(normal(text), words, found.anchors, found.records, found.tokens)


@lru_cache(maxsize=65536)
def _parts(anchor: str) -> tuple[str, ...]:
    return tuple(tokenize(anchor))


_PREFIX = "\x00"  # marks a spelling's first three characters in Said.reach (no token holds it)


@lru_cache(maxsize=65536)
def _probes(anchor: str) -> tuple[str, ...] | None:
    """What a text must have of ``anchor`` to hold it (:meth:`Said.holds`), one of them at least: the anchor
    itself among its anchors (a signed value, held only as it is), or its first part among its tokens, or, for a
    part a spelling may stand for (three characters or more, not all digits), a token that begins with the
    part's first three characters. ``None``: an anchor of no parts, which every text holds."""
    parts = _parts(anchor)
    if not parts:
        return None
    first = parts[0]
    spelled = len(first) >= 3 and not first.isdigit()
    return (anchor, _PREFIX + first[:3]) if spelled else (anchor, first)


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
    related, duplicate, update = (
        (RELATED, DUPLICATE, UPDATE) if cosine is not None else (WORDS_RELATED, WORDS_DUPLICATE, WORDS_UPDATE)
    )
    if similar < related:
        return None
    if max(len(a.words), len(b.words)) > LONG_WORDS:  # a document on the same topic is not the same statement
        return (
            "duplicate" if similar >= LONG_DUPLICATE and jaccard(a.words, b.words) >= LONG_JACCARD else None
        )
    only_a = [x for x in a.anchors if not b.holds(x)]
    only_b = [x for x in b.anchors if not a.holds(x)]
    if only_a and only_b:  # a value on each side that the other lacks: one replaced the other ...
        return "update" if similar >= update and same_statement(a, b) else None  # ... when all else stays
    if similar < SWAP_CEILING and _swapped(
        a, b
    ):  # a word or two exchanged: dark and light mode, Aisha and Marco
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


def same_statement(a: Said, b: Said) -> bool:
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


# --- a result's curation: duplicates collapsed, newer facts first ------------------------------------

WINDOW = 30  # the first ranked candidates curated, whatever the limit (the top of a list never depends on it)
# The newer of two memories kept as an update or as of the same subject goes first when it is about as relevant
# to the query: at least this share of the older's relevance (a newer memory on another subject keeps its place).
# Memories kept only as ``related`` (a shared name, value or topic) keep their places: on the team memory's natural
# questions, moving the newer of those first put a memory about another attribute of the same service ahead of
# the answer (first hit 0.35 against 0.59 uncurated; docs/benchmarks.md).
AS_RELEVANT = 0.4
NEWER_FIRST = ("updates", "same_subject")


@dataclass(slots=True)
class Candidate:
    """One ranked memory as curation sees it: its relevance to the query, whether that judged it
    related, when it became valid, whether it is a conversation turn (turns.py; never curated: two turns may
    say the same words and both happened), what ordering a pair reads of its text (:class:`Pins`) and its scope
    (an unscoped recall sees every tenant's
    memories: one tenant's never stands for another's, nor updates it)."""

    id: int
    relevance: float
    related: bool
    valid_ms: int
    turn: bool
    pins: Pins
    scope: tuple[str, str] = ("", "")  # (agent_id, workspace_hash): two tenants' memories are never paired
    written_ms: int = 0  # when this version was written


@dataclass
class Curated:
    """The window's new order (ids), each kept memory's collapsed duplicates, and each memory a newer
    one likely updates (id -> the newer's id)."""

    window: list[int]
    order: list[int]
    duplicates: dict[int, list[int]]
    outdated_by: dict[int, int]
    confirmed: frozenset[int] = frozenset()  # of the outdated: those whose update someone confirmed

    def apply(self, ranked: Sequence[H], include_outdated: bool = True) -> list[H]:
        """``ranked`` (best first) in the curated order: the window as curated, the rest as it was;
        without the collapsed duplicates, and unless ``include_outdated``, without the outdated ones whose
        update someone confirmed (the agent's ``updates`` link, a judge): a mark the vault inferred by rule
        orders and annotates, and never hides a memory (it may be two true facts: the 2024 and 2025 budgets)."""
        gone = self.left_out(include_outdated)
        n = len(self.window)
        if [item.id for item in ranked[:n]] == self.window:  # as recall gives it: the window, then the rest
            head = {item.id: item for item in ranked[:n]}
            return [head[i] for i in self.order if i not in gone] + list(ranked[n:])
        by_id = {item.id: item for item in ranked}
        window = set(self.window)
        return [by_id[i] for i in self.order if i not in gone] + [
            item for item in ranked if item.id not in window
        ]

    def left_out(self, include_outdated: bool = True) -> set[int]:
        """The window's memories :meth:`apply` leaves out: the collapsed duplicates and, unless
        ``include_outdated``, the outdated ones whose update someone confirmed."""
        collapsed = set(self.window).difference(self.order)
        return collapsed if include_outdated else collapsed | (set(self.outdated_by) & self.confirmed)


Kept = tuple[int, int, str]  # a kept relation: (from id, to id, relation), from the newer memory to the older
INFERRED = "inferred"  # the source of a relation the vault judged at write time (features/relations.py)
JUDGE = "judge"  # the source of a judge's verdict, kept at write time


def curate(
    ranked: Sequence[Candidate],
    kept: Sequence[Kept],
    asked: frozenset[str] = frozenset(),
    confirmed: frozenset[tuple[int, int]] = frozenset(),
    directed: frozenset[tuple[int, int]] = frozenset(),
) -> Curated:
    """Curate ``ranked`` (best first; recall gives its first :data:`WINDOW`) by the relations kept between
    its memories (features/relations.py: judged when the newer of each pair was written, by rule, judge or
    agent), never by a guess made now. Memories linked as ``duplicates`` collapse into one each, the most
    recent wording taking the group's best place; the older of an ``updates`` pair is marked ``outdated_by``
    the newer; and the one valid later of a pair kept as an update or of the same subject (:data:`NEWER_FIRST`)
    goes just before the older when both are related to the query and the newer is about as relevant
    (:data:`AS_RELEVANT`), unless the query names a value only
    the older holds (:func:`_names_the_older`; ``asked``: the query's numbers, :func:`asked`). The newer of a pair in
    ``directed`` (from, to) is its ``from``: the write that judged it knew which came later (a new version of an
    old key is the newer, whatever date it carries); of another pair, the one valid later, of two valid at once
    the one written later. ``confirmed``: the kept pairs someone stated (the agent, a judge) rather than the vault
    inferred. Two tenants' memories and conversation turns are never paired."""
    at = {c.id: k for k, c in enumerate(ranked)}
    pairs = [
        (at[a], at[b], name)
        for a, b, name in kept
        if a in at
        and b in at
        and a != b
        and ranked[at[a]].scope == ranked[at[b]].scope
        and not (ranked[at[a]].turn or ranked[at[b]].turn)
    ]
    n = len(ranked)
    order, duplicates = _collapsed(ranked, [(i, j) for i, j, name in pairs if name == "duplicates"])
    outdated: dict[int, int] = {}
    sure: set[int] = set()
    later: dict[int, set[int]] = {}  # an index -> the indexes valid after it that may go before it
    for i, j, name in pairs:
        if name == "duplicates":
            continue
        x, y = ranked[i], ranked[j]
        judged = (x.id, y.id) in directed or (y.id, x.id) in directed
        newer, older = (
            (i, j)
            if (x.id, y.id) in directed or (not judged and (x.valid_ms, x.id) >= (y.valid_ms, y.id))
            else (j, i)
        )
        if name == "updates":
            outdated.setdefault(ranked[older].id, ranked[newer].id)
            if (x.id, y.id) in confirmed:
                sure.add(ranked[older].id)
        # later: valid later, or judged newer by a later write (two written at one instant are neither)
        later_ = ranked[newer].valid_ms > ranked[older].valid_ms or (
            judged and ranked[newer].written_ms != ranked[older].written_ms
        )
        if (
            later_
            and name in NEWER_FIRST
            and ranked[newer].related
            and ranked[older].related
            and ranked[newer].relevance >= AS_RELEVANT * ranked[older].relevance
            and not _names_the_older(asked, ranked[older].pins, ranked[newer].pins)
        ):
            later.setdefault(older, set()).add(newer)
    pos, moves = 0, 0
    while later and pos < len(order) and moves < n * n:  # each place: its newest fact about the subject
        wanted = later.get(order[pos])
        if not wanted:  # nothing newer may go before it
            pos += 1
            continue
        found = next((q for q in range(pos + 1, len(order)) if order[q] in wanted), None)
        if found is None:
            pos += 1
            continue
        order.insert(pos, order.pop(found))
        moves += 1
    return Curated(
        [c.id for c in ranked], [ranked[k].id for k in order], duplicates, outdated, frozenset(sure)
    )


def _collapsed(
    ranked: Sequence[Candidate], same: list[tuple[int, int]]
) -> tuple[list[int], dict[int, list[int]]]:
    """The window's places (indexes) with each group of duplicates (``same``: pairs of indexes) at its best member's
    place, the group's most recent wording standing for it; and each standing memory's collapsed duplicates (ids)."""
    n = len(ranked)
    if not same:  # most windows: nothing collapses
        return list(range(n)), {}
    head = list(range(n))  # index -> its group's first (best ranked) member

    def first(k: int) -> int:
        while head[k] != k:
            k = head[k]
        return k

    for i, j in same:
        a, b = first(i), first(j)
        head[max(a, b)] = min(a, b)
    members: dict[int, list[int]] = {}
    for j in range(n):
        members.setdefault(first(j), []).append(j)
    chosen = {
        f: idx[0] if len(idx) == 1 else max(idx, key=lambda k: (ranked[k].valid_ms, -k))
        for f, idx in members.items()
    }
    order = [chosen[f] for f in sorted(members)]  # each group at its best member's place
    duplicates = {
        ranked[chosen[f]].id: sorted(ranked[k].id for k in idx if k != chosen[f])
        for f, idx in members.items()
        if len(idx) > 1
    }
    return order, duplicates


def _names_the_older(asked: frozenset[str], older: Pins, newer: Pins) -> bool:
    """Whether the query names a value only the older memory holds, so that it asks for the older and the newer
    goes first no more: a number, version or price of the query the older holds and the newer does not ("is the
    Pro plan still $12?"). A record (a ticket, an incident) restates no fact nor another record: the newer
    one goes first only when it names the same identifiers as the older. The
    query's other words say nothing here: "where does production run" asks what is true now, whichever of
    "Production runs in eu-west-1" and "Production moved to us-east-2" shares more of its words."""
    if newer.records and older.records != newer.records:  # a ticket restates no fact, nor another ticket
        return True
    return any(a in older.numbers and a not in newer.written for a in asked)
