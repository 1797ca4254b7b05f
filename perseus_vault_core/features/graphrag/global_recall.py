"""``global_recall``: breadth over community summaries, then depth into the best ones (docs/graphrag.md).

1. Every community of at least ``min_size`` members has a summary entity (those missing are
   written first; see :mod:`.summaries`).
2. Breadth: the summaries are recalled for the query like any memory (keyword and, when the
   vault has vectors, meaning), and so are the memories themselves (the best :data:`VOTERS`); each
   community scores the reciprocal rank of its summary plus :data:`MEMBER_SHARE` of that of each of its
   members found, and the best ``communities`` are chosen. A summary names what a community is mostly about; its members'
   hits find the community that holds the answer when its summary speaks of something else (on the
   conversations of locomo-dev, 57 of 93 questions found a community holding their evidence among the
   first three, against 41 by summaries alone; on the team memory, 22 of 22 against 21).
3. Depth: the query is recalled again among the chosen communities' members only. Each
   community's evidence is its members' hits in rank order; when fewer than ``per_community``
   members matched, the members linked to those hits (one hop, then two, strongest link first)
   follow, so an answer that sits a link or two away from what the words found still comes
   back; a community where nothing matched gives its most central members.
4. The answer context is markdown: per community its title, its summary and its evidence,
   cut to the character budget.

Everything here is a pure function; the orchestration is :func:`graphrag.verbs.global_recall`.
"""

from __future__ import annotations

from ...contract.models import GlobalCommunity, RecallItem
from ...contract.readable import line_of, truth
from ...contract.text import clip_line, escape_breaks
from ...recall.turns import TURN_TYPE
from .communities import Group

EVIDENCE_CHARS = 300
RANK_K = 60  # reciprocal-rank fusion's constant, as recall's own fusion of its arms
MEMBER_SHARE = 0.1  # of a member hit's reciprocal rank: a summary found counts as ten of its members found
VOTERS = 50  # the memories recalled for the question whose communities count towards choosing them


def choose(
    summary_hits: list[RecallItem], member_hits: list[RecallItem], groups: dict[str, Group], n: int
) -> list[tuple[Group, RecallItem]]:
    """The ``n`` best communities of the caller's view: each scored by the reciprocal rank of its summary among
    ``summary_hits`` plus that of each of its members among ``member_hits`` (``1 / (RANK_K + rank)``), so a
    community whose summary names the question and one whose members answer it both count; ties by the summary's
    rank. Only communities whose summary was found are chosen (it is what the answer shows). Pure."""
    ranked: dict[str, tuple[int, RecallItem]] = {}
    for rank, item in enumerate(summary_hits, start=1):
        group = groups.get(item.key)
        if group is None or (group.agent_id, group.workspace_hash) != (
            item.agent_id or "",
            item.workspace_hash or "",
        ):
            continue
        ranked.setdefault(group.id, (rank, item))
    score = {gid: 1 / (RANK_K + rank) for gid, (rank, _) in ranked.items()}
    home = {m: g.id for g in groups.values() if g.id in ranked for m in g.members}
    for rank, item in enumerate(member_hits, start=1):
        if item.id in home:
            score[home[item.id]] += MEMBER_SHARE / (RANK_K + rank)
    best = sorted(score, key=lambda gid: (-score[gid], ranked[gid][0]))[:n]
    return [(groups[ranked[gid][1].key], ranked[gid][1]) for gid in best]


def plan_evidence(
    group: Group, hits: list[int], per_community: int, allowed: set[int] | None = None
) -> list[tuple[int, str, int]]:
    """(member id, via, hops) for one community, in the order they should be shown; only ``allowed``
    members, when given (a where filter's), are shown, though links are followed through the others."""
    chosen: list[tuple[int, str, int]] = []
    seen: set[int] = set()

    def add(member: int, via: str, hops: int) -> bool:
        if member not in seen and len(chosen) < per_community and (allowed is None or member in allowed):
            seen.add(member)
            chosen.append((member, via, hops))
        return len(chosen) >= per_community

    for member in hits:
        if add(member, "recall", 0):
            return chosen
    neighbours = group.neighbours()
    frontier = [m for m, _, _ in chosen]
    for hop in (1, 2):
        following: list[int] = []
        for node in frontier:
            for other in neighbours.get(node, []):
                if other not in seen:
                    following.append(other)
                    if add(other, "link", hop):
                        return chosen
        frontier = following
    for member in group.central(per_community):
        if add(member, "central", 0):
            break
    return chosen


def _said(e: RecallItem) -> str:
    """What an evidence line shows of a memory: its content; a turn's with its speaker (its summary) first."""
    return line_of(e.content, e.summary) if e.type == TURN_TYPE else e.content


def context(query: str, chosen: list[GlobalCommunity], max_chars: int) -> str:
    """The answer material as markdown, within ``max_chars``: whole lines only, in order of
    importance (each community's heading and summary before its evidence lines, each with its memory's
    id and the date of its version)."""
    if not chosen:
        return clip_line(f"No community of linked memories matches: {query}", max_chars)
    lines = [f"# Communities for: {clip_line(query, 200)}"]
    used = len(lines[0])
    for n, gc in enumerate(chosen, start=1):
        section = [
            f"## {n}. {gc.title} ({gc.community.size} memories, {gc.community.id})",
            gc.summary,
            "Evidence:",
        ]
        section += [
            f"- [{escape_breaks(f'{e.category}/{e.key}')}] {clip_line(_said(e), EVIDENCE_CHARS)} "
            f"(#{e.id}, {truth(e)})"
            for e in gc.evidence
        ]  # dated, as recall's lines
        for line in section:
            if used + 1 + len(line) > max_chars:
                break
            lines.append(line)
            used += 1 + len(line)
    return "\n".join(lines)
