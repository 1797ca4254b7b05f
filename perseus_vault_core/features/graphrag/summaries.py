"""Community summaries: extractive text, materialized as an entity linked to its members (docs/graphrag.md).

The summary of a community is built from its members alone, with no model:

1. the community's vocabulary: each content word's stem, weighted by how many members use it;
2. the headline: the five stems most members share (shown as their most common spelling);
3. for each of the most central members (highest weighted degree inside the community, ties by
   id), the one sentence of its summary or content that carries the most shared vocabulary
   (sum of the other members' use of its stems, damped by the square root of its length;
   the earlier sentence wins a tie), cut at 240 characters;
4. lines are added in centrality order until the character budget is spent.

It is stored as an entity of type ``community_summary`` whose ``key`` is the community id, in
the community's scope, with a ``summarizes`` link to every member. As the id is a hash of the
members, an unchanged membership finds the summary already there and nothing is recomputed;
when the membership changes, the new community gets a new summary, and older summaries of its
members' communities that no longer exist are archived (if an old membership comes back, its
summary is restored and rewritten). A caller may pass a
``polish`` function (any LLM): its text becomes the summary's content and the extractive text is
kept in ``body.extractive`` as the evidence it was written from.
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter, defaultdict
from collections.abc import Mapping

import numpy as np

from ...contract.readable import line_of
from ...primitives.dialect import dialect
from ...primitives.filters import id_list
from ...primitives.porter import stem
from ...primitives.query import STOPWORDS, tokenize
from ...recall.turns import TURN_TYPE
from ...records import store
from ...storage import Backend, Connection
from .. import graph
from .communities import SUMMARY_TYPE, Group

SUMMARY_CATEGORY = "community_summary"
RELATION = "summarizes"
DEFAULT_MAX_CHARS = 1_200
MIN_MAX_CHARS = 200
MAX_MAX_CHARS = 20_000
SENTENCE_CHARS = 240
MEMBERS_READ = 40  # the most central members whose sentences may be used
HEADLINE_TERMS = 5

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")


def _stems(text: str) -> list[tuple[str, str]]:
    """(stem, word) for each content word of ``text``."""
    return [(stem(w), w) for w in tokenize(text) if w not in STOPWORDS and not w.isdigit()]


def _cut(text: str, limit: int) -> str:
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    cut = text[: limit - 1].rsplit(" ", 1)[0] or text[: limit - 1]
    return cut + "…"


def extract(
    members: list[tuple[int, str | None, str]], size: int, max_chars: int
) -> tuple[str, str, list[str]]:
    """(title, text, headline terms) for a community. ``members``: (id, summary, content), most
    central first; ``size``: the community's size (``members`` may be only its central part). Pure."""
    df: Counter[str] = Counter()
    spelling: dict[str, Counter[str]] = defaultdict(Counter)
    for _, summary, content in members:
        pairs = _stems(f"{summary or ''} {content}")
        df.update({s for s, _ in pairs})
        for s, w in pairs:
            spelling[s][w] += 1
    shared = sorted((s for s in df if df[s] >= 2 or len(members) == 1), key=lambda s: (-df[s], s))
    terms = [min(spelling[s].items(), key=lambda kv: (-kv[1], kv[0]))[0] for s in shared[:HEADLINE_TERMS]]
    headline = f"{size} linked memories" + (f" about {', '.join(terms)}." if terms else ".")
    lines = [headline]
    used = len(headline)
    for entity_id, summary, content in members:
        sentence = _best_sentence(summary, content, df)
        if not sentence:
            continue
        line = f"- {_cut(sentence, SENTENCE_CHARS)} (#{entity_id})"
        if used + 1 + len(line) > max_chars:
            break
        lines.append(line)
        used += 1 + len(line)
    title = "Community: " + (", ".join(terms[:3]) if terms else f"{size} linked memories")
    return title, "\n".join(lines)[:max_chars], terms


def _best_sentence(summary: str | None, content: str, df: Counter[str]) -> str:
    candidates = [
        s.strip() for part in (summary or "", content) for s in _SENTENCE_END.split(part) if s.strip()
    ]
    best, best_score = "", -1.0
    for sentence in candidates:
        unique = {s for s, _ in _stems(sentence)}
        if not unique:
            continue
        score = sum(df[s] - 1 for s in unique) / math.sqrt(len(unique) + 1)
        if score > best_score:
            best, best_score = sentence, score
    return best


# --- in the file ---------------------------------------------------------------------------------


def existing(conn: Connection, groups: list[Group]) -> dict[str, int]:
    """Community id -> id of its summary entity, for the groups whose summary exists and is active."""
    if not groups:
        return {}
    # (agent, workspace, category, key) is the entities table's unique index: one lookup per group.
    wanted = json.dumps(sorted([g.agent_id, g.workspace_hash, g.id] for g in groups))
    sql = (
        f"SELECT e.key, e.id FROM {dialect(conn).items(':wanted')} j CROSS JOIN entities e ON e.agent_id = j.value ->> 0 "
        "AND e.workspace_hash = j.value ->> 1 AND e.category = :category AND e.key = j.value ->> 2 "
        "CROSS JOIN entity_versions v ON v.entity_id = e.id AND v.scope = e.scope AND v.recorded_to_ms IS NULL "
        "WHERE v.status = 'active'"
    )
    return {
        key: int(entity_id)
        for key, entity_id in conn.execute(sql, {"wanted": wanted, "category": SUMMARY_CATEGORY})
    }


def member_texts(conn: Connection, group: Group) -> list[tuple[int, str | None, str]]:
    """(id, summary, content) of the group's most central members, most central first; a conversation turn's as
    (id, None, "Speaker: text"), its summary being its speaker."""
    central = group.central(MEMBERS_READ)
    rows = conn.execute(
        f"SELECT e.id, v.summary, v.content, v.type FROM {dialect(conn).ids(':ids')} j CROSS JOIN entities e "
        "ON e.id = j.value CROSS JOIN entity_versions v ON v.entity_id = e.id AND v.scope = e.scope AND "
        "v.recorded_to_ms IS NULL",
        {"ids": id_list(central)},
    )
    by_id = {
        int(r[0]): (int(r[0]), None, line_of(r[2], r[1])) if r[3] == TURN_TYPE else (int(r[0]), r[1], r[2])
        for r in rows
    }
    return [by_id[i] for i in central if i in by_id]


def topic(conn: Connection, group: Group) -> str | None:
    """The members' most common topic path (ties: the shortest, then alphabetical)."""
    rows = conn.execute(
        f"SELECT v.topic_path, count(*) FROM {dialect(conn).ids(':ids')} j CROSS JOIN entity_versions v "
        "ON v.entity_id = j.value AND v.recorded_to_ms IS NULL WHERE v.topic_path IS NOT NULL GROUP BY v.topic_path",
        {"ids": id_list(list(group.members))},
    ).fetchall()
    if not rows:
        return None
    return str(min(rows, key=lambda r: (-r[1], len(r[0]), r[0]))[0])


def attach(
    backend: Backend, conn: Connection, summary_id: int, group: Group, current_ids: set[str], now_ms: int
) -> list[int]:
    """Link a freshly written summary to its members and archive the summaries it replaces (those
    of its members' former communities). Returns the archived summaries' ids."""
    graph.link_many(backend, conn, summary_id, list(group.members), RELATION, now_ms)
    rows = conn.execute(
        f"SELECT DISTINCT l.from_id FROM {dialect(conn).ids(':ids')} j CROSS JOIN links l ON l.to_id = j.value "
        "WHERE l.relation = :relation AND l.recorded_to_ms IS NULL AND l.from_id != :me",
        {"ids": id_list(list(group.members)), "relation": RELATION, "me": summary_id},
    ).fetchall()
    replaced = []
    for (old_id,) in sorted(rows):
        old = store.head_row(conn, int(old_id))
        if (
            old is None
            or old["type"] != SUMMARY_TYPE
            or old["status"] != "active"
            or old["key"] in current_ids
        ):
            continue
        if (old["agent_id"], old["workspace_hash"]) != (group.agent_id, group.workspace_hash):
            continue
        # Archived, not superseded: should that membership come back, remembering its summary again
        # restores it (a superseded entity cannot be updated).
        store.forget(backend, conn, int(old_id), None, None, now_ms)
        replaced.append(int(old_id))
    return replaced


def centroid(group: Group, vectors: Mapping[int, np.ndarray]) -> np.ndarray | None:
    """The summary's vector: the unit mean of its members' vectors, so that a community is found by
    what any of its members means, with no model call (a community of hundreds costs one mean, where
    embedding its summary cost the model a long text). ``None`` when a member has no vector yet (the
    model then embeds the summary's text) or the mean vanishes."""
    if not group.members or any(m not in vectors for m in group.members):
        return None
    mean: np.ndarray = np.stack([vectors[m] for m in group.members]).astype(np.float64).mean(axis=0)
    norm = float(np.linalg.norm(mean))
    return (mean / norm).astype(np.float32) if norm > 1e-6 else None
