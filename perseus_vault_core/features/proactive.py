"""Proactive recall: ``recall_when`` triggers matched against a context, and ``prepare``.

An entity's ``recall_when`` phrases say when it should come back unasked ("choosing a
database", "editing the audit-chain module"). ``recall_when(context)`` scores each visible
entity by its best-matching phrase:

- ``phrase`` (1.0): the phrase's words appear in the context in order and next to each other,
  compared by Porter stem, so "edited the audit chain modules" matches "editing the audit-chain
  module";
- ``terms`` (0.75 x coverage): the phrase's content words (stopwords aside) appear anywhere in the
  context, by stem; at least two-thirds of them, and at least two when the phrase has two or more;
- ``meaning`` (0.7 x cosine): when the vault has vectors and an embedder, the cosine between the
  context's embedding and the phrase's, if at least ``min_similarity`` (default 0.6).

Words are matched against the context's last ``MAX_CONTEXT_TOKENS`` tokens (its most recent part):
the context is tokenized and indexed once (stem -> places), each distinct phrase is analysed once,
and a phrase is looked for only where its rarest word occurs.

Which memories are examined comes from an index, never a scan of every memory's phrases:

- by words, ``trigger_terms`` (storage/trigger_terms.py): content stem -> (version, phrase, how many of its stems a
  match needs), for every version, written with it. A phrase can match by words only if the context holds that many
  of its content stems, so the versions with such a phrase are all those that can, and the only ones read; the cost
  follows the words the context holds, not how many phrases are stored;
- by meaning, every (scope, phrase) vector of the model as one matrix this process keeps (trigger_meaning.py): one
  product screens them all, the phrases at or above ``min_similarity`` are scored exactly (one float64 dot product)
  and the versions holding them are found in ``trigger_terms`` too, whatever words they share with the context.

Only those versions are then read, through the view every read uses (scope, filters, status, time travel), and
``match`` applies the rules above to all their phrases, so the results are what reading every visible memory's
phrases gave (tests/core/features/test_trigger_meaning.py holds the two equal on random stores).

Phrases are embedded once per model and scope and kept in the file (``trigger_vectors``), so a fresh process
embeds only the context. Each scope keeps its own vectors, even of a phrase another scope uses too: what one tenant
stored never changes what another's writes cost or what its triggers match by. Results are ranked by score, then id.

``prepare(context)`` is the block an agent injects before a turn: the triggered entities first,
then the entities ``recall`` finds most relevant to the context, as markdown within a character
budget (1,500 by default). Each line names the entity so the agent can fetch it whole, and the date
its version was written, so that of two memories that disagree the newer can be told.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ..contract.errors import NotSupported
from ..contract.memory_names import FILE_TYPE
from ..contract.models import PrepareResult, RecallItem, RecallWhenResult, TriggeredItem
from ..contract.params import (
    MAX_QUERY_CHARS,
    Filters,
    PrepareParams,
    RecallParams,
    RecallWhenParams,
    validate,
)
from ..contract.readable import truth
from ..contract.text import escape_breaks
from ..engine.engine import Engine
from ..primitives.dialect import dialect
from ..primitives.filters import View, from_vids, id_list, view
from ..primitives.porter import stem
from ..primitives.query import STOPWORDS, tokenize
from ..records import store
from ..storage import Connection, trigger_terms
from . import trigger_meaning
from .graphrag.communities import SUMMARY_TYPE

PHRASE, TERMS, MEANING = 1.0, 0.75, 0.7
LINE_CHARS = 400
# Words are matched in the context's most recent tokens only: a 32,768-character context holds about
# 6,000, and every trigger phrase of every visible memory is looked for in them.
MAX_CONTEXT_TOKENS = 2_048


@dataclass(frozen=True)
class Match:
    entity_id: int
    score: float
    trigger: str
    kind: str  # phrase | terms | meaning


@dataclass(frozen=True)
class Context:
    """A context, tokenized once: its stem sequence (the last ``MAX_CONTEXT_TOKENS`` tokens), its set of
    content stems, and where each stem occurs in the sequence."""

    sequence: tuple[str, ...]
    content: frozenset[str]
    positions: dict[str, tuple[int, ...]] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        where: dict[str, list[int]] = {}
        for i, s in enumerate(self.sequence):
            where.setdefault(s, []).append(i)
        object.__setattr__(self, "positions", {s: tuple(places) for s, places in where.items()})

    @staticmethod
    def of(text: str) -> Context:
        tokens = tokenize(text)[-MAX_CONTEXT_TOKENS:]
        sequence = tuple(stem(t) for t in tokens)
        return Context(sequence, frozenset(s for t, s in zip(tokens, sequence) if t not in STOPWORDS))


_analysed = trigger_terms.analysed  # one analysis for the index and the match, so the index finds every match


def _contains(context: Context, part: tuple[str, ...]) -> bool:
    """Whether ``part`` occurs in the context's sequence as consecutive stems; only the places of its
    rarest stem are tried, so a phrase costs at most as many comparisons as that stem occurs."""
    n = len(part)
    if n == 0 or n > len(context.sequence):
        return False
    places = [context.positions.get(s, ()) for s in part]
    k = min(range(n), key=lambda j: len(places[j]))
    sequence = context.sequence
    return any(sequence[i - k : i - k + n] == part for i in places[k] if i >= k)


def lexical(phrase: str, context: Context) -> tuple[float, str] | None:
    """How ``phrase`` matches ``context`` by words: (score, kind), or None. Pure."""
    stems, content = _analysed(phrase)
    if not content:  # stopwords never match on their own
        return None
    # Too few of its content stems anywhere in the context: neither rule can match (the trigger index's test).
    if sum(1 for s in content if s in context.positions) < trigger_terms.needed(len(content)):
        return None
    if _contains(context, stems):
        return PHRASE, "phrase"
    found = sum(1 for s in content if s in context.content)
    coverage = found / len(content)
    if coverage >= 2 / 3 and found >= min(2, len(content)):
        return round(TERMS * coverage, 6), "terms"
    return None


def candidates(conn: Connection, view: View, vids: Sequence[int]) -> list[dict[str, Any]]:
    """Those of ``vids`` (versions the trigger index found) that the view shows and that have trigger phrases: ``id``,
    ``vid``, ``scope`` (its key) and ``recall_when`` (their texts are read later, for the matches only: see
    ``store.rows_in_order``)."""
    if not vids:
        return []
    sql = f"SELECT e.id, v.vid, v.scope, v.recall_when FROM {from_vids(conn)} WHERE {view.where} AND v.recall_when != '[]'"
    return [
        {"id": i, "vid": vid, "scope": scope, "recall_when": phrases}
        for i, vid, scope, phrases in conn.execute(sql, {**view.params, "vids": id_list(list(vids))})
    ]


def match(
    rows: Sequence[dict[str, Any]],
    context: Context,
    similarity: dict[tuple[str, str], float] | None,
    min_similarity: float,
    by_index: dict[int, set[int]] | None = None,
) -> list[Match]:
    """Each entity's best match (highest score; ties: phrase order as stored), ranked by score then id. Pure.

    ``similarity``: cosine of the context to each phrase by (scope key, phrase), when meaning is used. ``by_index``:
    for each version (vid), the places of the phrases that can match by words (the trigger index's answer); the
    others are matched by meaning only. None: every phrase is matched by words."""
    out = []
    by_words: dict[str, tuple[float, str] | None] = {}  # a phrase many memories share is matched once
    for row in rows:
        best: Match | None = None
        wordy = by_index.get(row["vid"], set()) if by_index is not None else None
        for place, phrase in enumerate(json.loads(row["recall_when"])):
            if wordy is not None and place not in wordy:
                found = None
            else:
                if phrase not in by_words:
                    by_words[phrase] = lexical(phrase, context)
                found = by_words[phrase]
            cosine = similarity.get((row["scope"], phrase)) if similarity is not None else None
            if cosine is not None and cosine >= min_similarity:
                meaning = (round(MEANING * cosine, 6), "meaning")
                if found is None or meaning[0] > found[0]:
                    found = meaning
            if found is not None and (best is None or found[0] > best.score):
                best = Match(row["id"], found[0], phrase, found[1])
        if best is not None:
            out.append(best)
    out.sort(key=lambda m: (-m.score, m.entity_id))
    return out


# --- prepare ---------------------------------------------------------------------------------------


def _text(summary: str | None, content: str) -> str:
    text = " ".join(content.split())
    if summary and summary.strip() and summary.strip() not in text:
        text = f"{' '.join(summary.split())}: {text}"
    return text


def _line(label: str, text: str, suffix: str, room: int) -> str | None:
    """``- **label** text suffix`` cut to ``room`` characters (None when not even a stub fits)."""
    head, tail = f"- **{label}** ", f" {suffix}"
    space = min(room, LINE_CHARS) - len(head) - len(tail)
    if space < 20:
        return None
    if len(text) > space:
        text = text[: space - 1].rstrip() + "…"
    return head + text + tail


def block(
    triggered: Sequence[tuple[Any, str]], related: Sequence[Any], max_chars: int
) -> tuple[str, list[int], list[int]]:
    """The markdown block: (text, triggered ids shown, related ids shown). ``triggered``: (entity,
    trigger phrase) pairs, best first; ``related``: entities, best first. Whole lines, in that order,
    while they fit; a line that would overflow is shortened, or left out. Pure."""
    lines: list[str] = []
    used = 0
    shown: tuple[list[int], list[int]] = ([], [])

    def add(line: str) -> bool:
        nonlocal used
        cost = len(line) + (1 if lines else 0)
        if used + cost > max_chars:
            return False
        lines.append(line)
        used += cost
        return True

    sections = [
        (
            "### Triggered",
            [(e, f'(#{e.id}, {truth(e)}; when: "{" ".join(phrase.split())}")') for e, phrase in triggered],
            shown[0],
        ),
        ("### Related", [(e, f"(#{e.id}, {truth(e)})") for e in related], shown[1]),
    ]
    if not triggered and not related:
        return "", [], []
    if not add("## Memory for this turn"):
        return "", [], []
    for heading, entries, ids in sections:
        if not entries or not add(heading):
            continue
        for entity, suffix in entries:
            room = max_chars - used - 1
            # Stored text stays inside its line: names escaped (a vault may hold some from before they were
            # refused), texts with their whitespace collapsed.
            label = escape_breaks(f"{entity.category}/{entity.key}")
            line = _line(label, _text(entity.summary, entity.content), suffix, room)
            if line is None or not add(line):
                break
            ids.append(entity.id)
        if not ids:  # a heading with no line under it says nothing
            used -= len(lines.pop()) + 1
    if len(lines) == 1:
        return "", [], []
    text = "\n".join(lines)
    return text, shown[0], shown[1]


# --- the verbs -----------------------------------------------------------------------------------

# Files and community summaries repeat other memories: a turn's block leaves them out.
NOT_IN_PREPARE = (SUMMARY_TYPE, FILE_TYPE)


def recall_when(engine: Engine, p: RecallWhenParams) -> RecallWhenResult:
    """Entities whose trigger phrases match ``p.context``, best first (the module docstring's rules)."""
    f = Filters(
        type=p.type,
        category=p.category,
        topic_path=p.topic_path,
        where=p.where,
        agent_id=p.agent_id,
        workspace_hash=p.workspace_hash,
        query_time_unix_ms=p.query_time_unix_ms,
    )
    with engine.reading() as conn:
        stored_model = engine.backend.vectors.model(conn)
    usable = stored_model is not None and engine.embedder is not None
    if p.semantic and not usable:
        raise NotSupported(
            "semantic trigger matching needs an embedding model and stored vectors "
            "(run `perseus-vault embed`), or pass semantic=False"
        )
    semantic = usable if p.semantic is None else p.semantic
    similarity = None
    if semantic and tokenize(p.context):
        similarity = trigger_meaning.near(engine, p.context, p.min_similarity)
    context = Context.of(p.context)
    with engine.reading() as conn:
        v = view(f, engine.now(), dialect(conn))
        wordy = trigger_terms.phrases(conn, sorted(set(context.sequence)))
        vids = set(wordy) | trigger_meaning.holders(
            conn, sorted(k for k, c in (similarity or {}).items() if c >= p.min_similarity)
        )
        rows = candidates(conn, v, sorted(vids))
        matches = match(rows, context, similarity, p.min_similarity, wordy)[: p.limit]
        vid_of = {row["id"]: row["vid"] for row in rows}
        full = store.rows_in_order(conn, [vid_of[m.entity_id] for m in matches])
        items = store.fit(
            store.to_hit(
                TriggeredItem, row, v.instant, m.score, {"recall_when": n}, trigger=m.trigger, match=m.kind
            )
            for n, (m, row) in enumerate(zip(matches, full), start=1)
        )
    if p.reinforce and items:
        engine.reinforce([item.id for item in items])
    return RecallWhenResult(items=items, total=len(items), semantic=semantic)


def prepare(engine: Engine, p: PrepareParams) -> PrepareResult:
    """The markdown block for a turn: triggered entities first, then related ones, within ``p.max_chars``."""
    scope = {
        k: v for k, v in (("agent_id", p.agent_id), ("workspace_hash", p.workspace_hash)) if v is not None
    }
    triggered: list[tuple[TriggeredItem, str]] = []
    if p.triggered:
        found = recall_when(
            engine,
            validate(
                RecallWhenParams,
                {
                    "context": p.context,
                    "limit": p.triggered,
                    "semantic": p.semantic,
                    "where": p.where,
                    **scope,
                },
            ),
        )
        triggered = [(item, item.trigger) for item in found.items]
    related: list[RecallItem] = []
    mode = "none"
    query = p.context[-MAX_QUERY_CHARS:]  # the end of a long context is the most recent part
    if p.related and tokenize(query):
        # Files and summaries are left out inside the query (a filter on columns: judged in memory), so the
        # page holds as many other memories as asked for.
        kept: dict[str, Any] = {"type": {"$nin": list(NOT_IN_PREPARE)}}
        result = engine.recall(
            validate(
                RecallParams,
                {
                    "query": query,
                    "mode": p.mode,
                    "limit": p.related + len(triggered),
                    "reinforce": False,
                    "min_score": p.min_score,
                    "where": {"$and": [p.where, kept]} if p.where else kept,
                    "include_outdated": p.include_outdated,
                    **scope,
                },
            )
        )
        mode = result.search_mode
        seen = {item.id for item, _ in triggered}
        related = [item for item in result.items if item.id not in seen][: p.related]
    text, shown_triggered, shown_related = block(triggered, related, p.max_chars)
    if p.reinforce and (shown_triggered or shown_related):
        engine.reinforce(sorted(set(shown_triggered + shown_related)))
    return PrepareResult(
        markdown=text, triggered=shown_triggered, related=shown_related, chars=len(text), search_mode=mode
    )
