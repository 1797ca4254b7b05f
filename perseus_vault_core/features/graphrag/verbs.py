"""The GraphRAG verbs: ``communities``, ``community_summary`` and ``global_recall`` (docs/graphrag.md).

Each reads the partition of the caller's view (:mod:`.communities`), and writes or reads the
extractive summaries (:mod:`.summaries`); ``global_recall`` then recalls over the summaries and
into the chosen communities' members (:mod:`.global_recall` holds its pure steps).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ...contract.errors import InvalidInput, NotFound
from ...contract.models import (
    CommunitiesResult,
    Community,
    CommunityMember,
    CommunitySummary,
    Entity,
    EvidenceItem,
    GlobalCommunity,
    GlobalRecallResult,
    RecallItem,
)
from ...contract.params import (
    MAX_LIMIT,
    CommunitiesParams,
    CommunitySummaryParams,
    Filters,
    GlobalRecallParams,
    RecallParams,
    RememberInput,
    validate,
)
from ...contract.readable import line_of
from ...contract.text import clip_line
from ...embeddings import embedding_text
from ...engine.engine import Engine
from ...primitives.dialect import dialect
from ...primitives.filters import from_ids, id_list, view
from ...recall.turns import TURN_TYPE
from ...records import store
from ...storage import Connection
from . import summaries
from .communities import SUMMARY_TYPE, Communities, Group, Partition
from .global_recall import VOTERS, choose, context, plan_evidence

Polish = Callable[[str], str]


def _partition(engine: Engine, conn: Connection, f: Filters, method: str, now: int) -> Partition:
    clusters = engine.kept(Communities, lambda: Communities(engine.backend.changes))
    return clusters.partition(conn, view(f, now, dialect(conn)), method)


def _scope(f: Filters) -> Filters:
    return Filters(agent_id=f.agent_id, workspace_hash=f.workspace_hash)


def communities(engine: Engine, p: CommunitiesParams) -> CommunitiesResult:
    """Clusters of the link graph in the caller's view, largest first."""
    with engine.reading() as conn:
        part = _partition(engine, conn, p, p.method, engine.now())
        groups = [g for g in part.groups if len(g.members) >= p.min_size]
        if p.containing:
            wanted = set(p.containing)
            groups = [g for g in groups if not wanted.isdisjoint(g.members)]
        shown = describe(conn, groups[: p.limit], p.central)
    return CommunitiesResult(
        communities=shown, total=len(groups), method=p.method, nodes=part.nodes, edges=part.edges
    )


def describe(conn: Connection, groups: list[Group], central: int) -> list[Community]:
    """``groups`` as the API shows them: their ``central`` most central members and their summary's id."""
    wanted = sorted({m for g in groups for m in g.central(central)})
    rows = store.head_rows(conn, wanted)
    summary_ids = summaries.existing(conn, groups)
    out = []
    for g in groups:
        members = [
            CommunityMember(
                id=m,
                category=rows[m]["category"],
                key=rows[m]["key"],
                title=clip_line(_title(rows[m]), 100),
                centrality=g.centrality[m],
            )
            for m in g.central(central)
            if m in rows
        ]
        out.append(
            Community(
                id=g.id,
                size=len(g.members),
                agent_id=g.agent_id or None,
                workspace_hash=g.workspace_hash or None,
                members=list(g.members),
                central=members,
                summary_id=summary_ids.get(g.id),
            )
        )
    return out


def _summary_model(
    group: Group, entity: Entity, *, materialized: bool, replaced: list[int]
) -> CommunitySummary:
    extractive = entity.body.get("extractive", entity.content)
    return CommunitySummary(
        community_id=group.id,
        entity=entity,
        text=entity.content,
        extractive=extractive if isinstance(extractive, str) else entity.content,
        polished="extractive" in entity.body,
        materialized=materialized,
        members=list(group.members),
        replaced=replaced,
    )


def community_summary(
    engine: Engine, p: CommunitySummaryParams, polish: Polish | None = None
) -> CommunitySummary:
    """The summary of one community: read when it exists (and needs no polish), else written."""
    now = engine.now()
    with engine.reading() as conn:
        part = _partition(
            engine, conn, Filters(agent_id=p.agent_id, workspace_hash=p.workspace_hash), p.method, now
        )
        group = part.find(p.community_id)
        if group is None:
            raise NotFound(
                f"no community {p.community_id!r} in this scope now (list the current ones with communities)"
            )
        have = summaries.existing(conn, [group]).get(group.id)
        if have is not None and not p.refresh:
            entity = store.to_entity(store.scoped_head(conn, have, None, None), now)
            # a polish asked of a summary that was never polished is a reason to rewrite it
            if polish is None or "extractive" in entity.body:
                return _summary_model(group, entity, materialized=False, replaced=[])
    return summarize(engine, part, [group], p.max_chars, polish, p.method)[0]


def _polished(polish: Polish, text: str) -> str:
    try:
        content = polish(text)
    except Exception as exc:  # the caller's model failed: nothing is written
        raise InvalidInput("polish", f"raised {type(exc).__name__}: {exc}") from exc
    if not isinstance(content, str) or not content.strip():
        raise InvalidInput("polish", "must return non-empty text")
    return content


def _summary_item(
    group: Group, n: int, draft: tuple[str, str, list[str], str | None], method: str, polish: Polish | None
) -> RememberInput:
    title, text, terms, topic_path = draft
    body: dict[str, Any] = {
        "community_id": group.id,
        "size": len(group.members),
        "method": method,
        "terms": terms,
    }
    if polish is not None:
        body["extractive"] = text
    return validate(
        RememberInput,
        {
            "category": summaries.SUMMARY_CATEGORY,
            "key": group.id,
            "content": _polished(polish, text) if polish is not None else text,
            "summary": title,
            "type": SUMMARY_TYPE,
            "topic_path": topic_path,
            "body": body,
            "agent_id": group.agent_id or None,
            "workspace_hash": group.workspace_hash or None,
            "source": "perseus-vault community_summary",
            "provenance_class": "ai_draft" if polish is not None else "tool",
        },
        prefix="polish" if polish is not None else f"summary.{n}",
    )


def _centroids(
    engine: Engine, conn: Connection, items: list[RememberInput], groups: list[Group], texts: list[str]
) -> dict[str, np.ndarray]:
    """The vectors of the summaries about to be written, from their members' stored vectors."""
    wanted = set(texts)
    chosen = [(embedding_text(i.content, i.summary), g) for i, g in zip(items, groups)]
    chosen = [(t, g) for t, g in chosen if t in wanted]
    stored = engine.backend.vectors.head_vectors(conn, sorted({m for _, g in chosen for m in g.members}))
    out: dict[str, np.ndarray] = {}
    for text, group in chosen:
        vector = summaries.centroid(group, stored)
        if vector is not None:
            out[text] = vector
    return out


def summarize(
    engine: Engine, part: Partition, groups: list[Group], max_chars: int, polish: Polish | None, method: str
) -> list[CommunitySummary]:
    """Write the summaries of ``groups`` (one transaction), each linked to its members."""
    with engine.reading() as conn:
        drafts = [
            (
                *summaries.extract(summaries.member_texts(conn, g), len(g.members), max_chars),
                summaries.topic(conn, g),
            )
            for g in groups
        ]
    items = [_summary_item(g, n, draft, method, polish) for n, (g, draft) in enumerate(zip(groups, drafts))]
    current = {g.id for g in part.groups}
    plan = engine.plan(
        lambda c: store.texts_to_embed(c, items),
        known=lambda c, texts: _centroids(engine, c, items, groups, texts),
    )

    def work(c: Connection) -> list[tuple[int, str, list[int]]]:
        now = engine.now()
        written = store.remember_batch(engine.backend, c, items, now, plan)
        return [
            (eid, change, summaries.attach(engine.backend, c, eid, g, current, now))
            for (eid, change), g in zip(written, groups)
        ]

    results = engine.write_planned(plan, work)
    rows = store.head_rows(engine.conn(), [eid for eid, _, _ in results])
    now = engine.now()
    return [
        _summary_model(
            g, store.to_entity(rows[eid], now), materialized=change != "unchanged", replaced=replaced
        )
        for g, (eid, change, replaced) in zip(groups, results)
    ]


def _ensure_summaries(engine: Engine, p: GlobalRecallParams) -> tuple[dict[str, Group], dict[str, int]]:
    """The communities of the caller's view with at least ``min_size`` members, and their summaries'
    ids (those missing are written first)."""
    with engine.reading() as conn:
        part = _partition(
            engine,
            conn,
            Filters(agent_id=p.agent_id, workspace_hash=p.workspace_hash),
            p.method,
            engine.now(),
        )
        groups = {g.id: g for g in part.groups if len(g.members) >= p.min_size}
        have = summaries.existing(conn, list(groups.values()))
    missing = [g for g in groups.values() if g.id not in have]
    if missing:
        for s in summarize(engine, part, missing, summaries.DEFAULT_MAX_CHARS, None, p.method):
            have[s.community_id] = s.entity.id
    return groups, have


def _matching(engine: Engine, members: list[int], p: GlobalRecallParams) -> set[int]:
    """The members that ``p.where`` lets be evidence (in the caller's current view)."""
    f = Filters(where=p.where, agent_id=p.agent_id, workspace_hash=p.workspace_hash)
    with engine.reading() as conn:
        v = view(f, engine.now(), dialect(conn))
        sql = f"SELECT e.id FROM {from_ids(conn)} WHERE {v.where}"
        return {int(i) for (i,) in conn.execute(sql, dict(v.params, ids=id_list(members)))}


def _evidence(
    engine: Engine,
    chosen: list[tuple[Group, RecallItem]],
    hits: dict[int, RecallItem],
    per_community: int,
    allowed: set[int] | None = None,
) -> list[GlobalCommunity]:
    """Each chosen community with its evidence: its members' hits, then linked or central members
    (``allowed`` ones only, when given)."""
    now = engine.now()
    with engine.reading() as conn:
        models = {c.id: c for c in describe(conn, [g for g, _ in chosen], 5)}
        planned = [
            (g, item, plan_evidence(g, [i for i in hits if i in set(g.members)], per_community, allowed))
            for g, item in chosen
        ]
        extra = store.head_rows(
            conn, sorted({m for _, _, plan in planned for m, _, _ in plan if m not in hits})
        )
    out: list[GlobalCommunity] = []
    for g, item, plan in planned:
        evidence = []
        for m, via, hops in plan:
            if m in hits:
                evidence.append(
                    EvidenceItem.model_validate({**hits[m].model_dump(), "via": via, "hops": hops})
                )
            elif m in extra:  # else purged since the partition was read
                evidence.append(store.to_hit(EvidenceItem, extra[m], now, 0.0, {}, via=via, hops=hops))
        out.append(
            GlobalCommunity(
                community=models[g.id],
                title=item.summary or g.id,
                summary=item.content,
                summary_id=item.id,
                score=item.score,
                evidence=evidence,
            )
        )
    fitted = iter(store.fit([e for gc in out for e in gc.evidence]))  # the response budget, over all evidence
    return [gc.model_copy(update={"evidence": [next(fitted) for _ in gc.evidence]}) for gc in out]


def _title(row: dict[str, Any]) -> str:
    """A member's title: its summary, else its content; a turn's with its speaker (its summary) before its words."""
    if row["type"] == TURN_TYPE:
        return line_of(row["content"], row["summary"])
    return str(row["summary"] or row["content"])


def global_recall(engine: Engine, p: GlobalRecallParams) -> GlobalRecallResult:
    """The best communities for ``p.query`` by their summaries, then the best evidence among their members."""
    scope = {
        k: v for k, v in (("agent_id", p.agent_id), ("workspace_hash", p.workspace_hash)) if v is not None
    }
    groups, have = _ensure_summaries(engine, p)
    if not groups:
        return GlobalRecallResult(
            query=p.query, communities=[], context=context(p.query, [], p.max_chars), search_mode="none"
        )
    found = engine.recall(
        validate(
            RecallParams,
            {
                "query": p.query,
                "mode": p.mode,
                "type": SUMMARY_TYPE,
                "category": summaries.SUMMARY_CATEGORY,
                "limit": min(MAX_LIMIT, max(50, 10 * p.communities)),
                "reinforce": False,
                "min_score": None,
                "curate": False,
                **scope,
            },
        ),  # every summary ranked (breadth: the best communities, however weakly they match)
        only=sorted(have[g] for g in groups if g in have),
    )
    voters = engine.recall(
        validate(
            RecallParams,
            {
                "query": p.query,
                "mode": p.mode,
                "limit": VOTERS,
                "reinforce": False,
                "min_score": None,
                "where": p.where,
                **scope,
            },
        )
    )  # the memories that answer it: their communities count too
    chosen = choose(found.items, voters.items, groups, p.communities)
    members = sorted({m for g, _ in chosen for m in g.members})
    allowed = _matching(engine, members, p) if p.where is not None else None
    if allowed is not None:
        members = sorted(allowed)
    drill = (
        engine.recall(
            validate(
                RecallParams,
                {
                    "query": p.query,
                    "mode": p.mode,
                    "reinforce": False,
                    "min_score": p.min_score,
                    "where": p.where,
                    **scope,
                    "limit": min(MAX_LIMIT, max(p.per_community * len(chosen) * 4, 10)),
                },
            ),
            only=members,
        )
        if members
        else None
    )
    out = _evidence(
        engine, chosen, {item.id: item for item in drill.items} if drill else {}, p.per_community, allowed
    )
    if p.reinforce:
        ids = sorted({e.id for gc in out for e in gc.evidence})
        if ids:
            engine.reinforce(ids)
    return GlobalRecallResult(
        query=p.query,
        communities=out,
        context=context(p.query, out, p.max_chars),
        search_mode=found.search_mode,
    )
