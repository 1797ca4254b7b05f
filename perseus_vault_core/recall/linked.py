"""One-hop expansion: the memories linked to recall's best hits join its candidates (``follow_links``;
docs/recall.md, "Following links").

An answer sometimes needs a memory that shares nothing with the question: "which region hosts the service
Alice owns?" finds "Alice owns billing-api", and the answer is in "billing-api runs in eu-west-1", which
names neither Alice nor a region. When the two are linked (an agent's ``link``, or a relation the vault
inferred when one of them was written: features/relations.py), the link is the bridge.

With ``follow_links``, the best :data:`ANCHORS` related candidates (those recall's thresholds judge related,
by relevance) are the anchors; every memory linked to one of them, by an open link of any relation and source, either way, that
the caller's view shows (scope, status, filters, ``where``, time travel: the same view as the arms'), is a
neighbour. A neighbour no arm found joins the candidates, scored as the arms score a memory (its keyword
score, its cosine, or both fused, by the mode's rule; in dense, one without a vector does not join); every neighbour that is not an anchor itself then gains
:data:`SHARE` of the relevance of the best anchor it is linked to, and is related. The
knobs and paging then treat it as any other candidate: it is ranked, not appended. Curation judges it on its
own relevance and relatedness, without the gain (``Scored.lift``, ``Scored.linked``): "the newer of two kept
memories first" never moves a neighbour before the hit that brought it for the link alone.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..primitives.dialect import dialect
from ..primitives.filters import FROM, View, id_list
from ..storage import Connection
from .ranking import Scored

ANCHORS = 5  # the best candidates whose neighbours join
SHARE = 0.2  # a neighbour's gain: this share of the relevance of the best anchor linked to it


def _open(v: View) -> tuple[str, dict[str, Any]]:
    """The links open in the view: now, or at its point in time (as features/graph.open_links)."""
    if v.historical:
        at = v.params.get("believed", v.params.get("as_of"))
        return (
            "l.recorded_from_ms <= :link_at AND (l.recorded_to_ms IS NULL OR l.recorded_to_ms > :link_at)",
            {"link_at": at},
        )
    return "l.recorded_to_ms IS NULL", {}


def links(conn: Connection, v: View, anchors: list[int]) -> list[tuple[int, int]]:
    """``(anchor, other end)`` of every link open in the view with one end among ``anchors``, either way."""
    d = dialect(conn)
    clause, params = _open(v)
    sql = (
        f"SELECT l.from_id, l.to_id FROM {d.ids(':ids')} j CROSS JOIN links l ON l.from_id = j.value WHERE {clause} "
        f"UNION SELECT l.to_id, l.from_id FROM {d.ids(':ids')} j CROSS JOIN links l ON l.to_id = j.value WHERE {clause}"
    )
    return [(int(a), int(b)) for a, b in conn.execute(sql, dict(params, ids=id_list(anchors)))]


def visible(conn: Connection, v: View, ids: list[int]) -> dict[int, int]:
    """Those of ``ids`` the view shows, with the version it shows of each (entity id -> vid)."""
    d = dialect(conn)
    sql = f"SELECT e.id, v.vid FROM {FROM} WHERE {v.where} AND e.id IN (SELECT value FROM {d.ids(':near')} j)"
    return {int(e): int(vid) for e, vid in conn.execute(sql, dict(v.params, near=id_list(ids)))}


def join(
    conn: Connection,
    v: View,
    scored: list[Scored],
    vids: dict[int, int],
    relevance_of: Callable[[dict[int, int]], dict[int, float]],
    related: dict[int, bool],
) -> list[Scored]:
    """``scored`` with the anchors' visible neighbours added and lifted (see the module docstring). ``vids``
    (entity id -> version) gains the added ones; ``relevance_of`` scores versions no arm scored, by the mode's
    rule; in ``related``, every neighbour is marked related (it is beside a related hit)."""
    if not scored:
        return scored
    best = sorted((s for s in scored if related.get(s.id, False)), key=lambda s: (-s.relevance, s.id))[
        :ANCHORS
    ]
    anchors = {s.id: s for s in best}
    linked: dict[int, list[int]] = {}
    for anchor, other in links(conn, v, list(anchors)):
        if other not in anchors:
            linked.setdefault(other, []).append(anchor)
    if not linked:
        return scored
    shown = visible(conn, v, sorted(linked))
    held = {s.id: s for s in scored}
    fresh = {i: vid for i, vid in shown.items() if i not in held}
    own = relevance_of(fresh) if fresh else {}
    for i, vid in fresh.items():
        if i in own:  # a memory the mode cannot score (no vector, in dense) is no candidate
            held[i] = Scored(i, own[i], own[i])
            related[i] = False
            vids[i] = vid
    for i in (i for i in shown if i in held):
        s = held[i]
        s.lift = SHARE * max(anchors[a].relevance for a in linked[i])
        s.relevance += s.lift
        s.score = s.relevance
        s.linked = not related.get(i, False)
        related[i] = True  # beside a related hit
    return list(held.values())
