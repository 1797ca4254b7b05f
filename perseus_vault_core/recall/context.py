"""A dialogue's turns judged in context (docs/conversations.md, "Recall in context").

A turn said in a conversation rarely answers a question alone: "Yes, I painted that lake last summer"
answers "what did Melanie paint?" only beside the turn before it, and the session it was said in is
about one thing or a few. A lone memory has no such context; a turn has two:

- its **neighbours**, the turns said just before and after it: a turn next to a strong match gains
  :data:`NEIGHBOUR` of that match's relevance (and joins the candidates if no arm had found it);
- its **session**: every candidate turn of a session gains :data:`SESSION` of the best relevance among
  the session's candidates, so the session that holds the answer lifts its turns together.

Which memories are turns is :mod:`.turns`'s to say, whatever way they were written; each shape has its
neighbours:

- a numbered turn (``remember_conversation``'s, key ``<session>#<n>``): turns ``n - 1`` and ``n + 1`` of
  the same session;
- a turn in a session (its body names a speaker or role and a session: LangChain's chat messages): the
  memories written just before and after it in the same scope and category that are turns of the same
  session, whoever said them;
- a labelled turn (``Speaker: text``, or ``Speaker`` and a line break before the text, stored with
  ``remember`` or ``remember_many``): the memories written just before and after it in the same scope and
  category that are labelled turns too, with another speaker's label (two notes that open ``Decision:``
  are not a dialogue).

A turn of a session (numbered or named in its body) also rises with its session; a labelled turn has none.
Anything else is left as it is. Only the best :data:`ANCHORS` candidates lift their neighbours, and only
when one of them is a turn, so a recall over memories that are not a dialogue pays one small read (a
version's type, key, first characters and, when its body is not empty, the few body fields a turn's shape
names; never the whole body).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from typing import Any

from ..primitives.dialect import Dialect, dialect
from ..primitives.filters import FROM, View, id_list
from ..primitives.labels import HEAD_CHARS
from ..storage import Connection
from .ranking import Scored
from .turns import body_sql, read_body_sql, shape

NEIGHBOUR = 0.3  # a turn's share of the relevance of the best adjacent turn among the anchors
SESSION = 0.3  # a turn's share of its session's best relevance among the candidates
ANCHORS = 10  # the best candidates whose neighbours are lifted


@dataclass(frozen=True)
class Place:
    """Where a turn sits in a dialogue: its entity and version, scope and category, its session (``None``
    for a labelled turn), its number in the session (a numbered turn's only) and its speaker."""

    id: int
    vid: int
    scope: tuple[str, str, str]
    session: str | None
    turn: int | None
    speaker: str | None = None

    def adjacent(self, other: Place) -> bool:
        """Whether ``other`` was said just before or after this turn, in the same dialogue: written next to
        it in its scope and category, and of its session (turn numbers one apart where both have one), or,
        where neither has a session, both labelled, by different speakers."""
        if other.scope != self.scope or abs(other.id - self.id) != 1:
            return False
        if self.session is not None or other.session is not None:
            if other.session != self.session:
                return False
            return self.turn is None or other.turn is None or abs(other.turn - self.turn) == 1
        return self.speaker is not None and other.speaker is not None and self.speaker != other.speaker


def _place(row: tuple[Any, ...]) -> Place | None:
    """A row of :func:`_columns` as a place, or ``None`` when the memory is not a turn (:func:`.turns.shape`
    says which are)."""
    entity_id, vid, agent, workspace, category, key, kind, head, fields = row
    turn = shape(kind or "", key or "", head or "", read_body_sql(fields))
    if turn is None:
        return None
    scope = (agent or "", workspace or "", category)
    return Place(int(entity_id), int(vid), scope, turn.session, turn.number, turn.speaker)


def _columns(conn: Connection) -> str:
    """What a turn's place is read from: ids, scope, category, key, type, the content's first characters
    and the body's few fields a turn's shape names (:func:`.turns.body_sql`)."""
    return _columns_in(dialect(conn))


@cache
def _columns_in(d: Dialect) -> str:  # every recall reads them: spelled once a dialect
    return (
        "e.id, v.vid, e.agent_id, e.workspace_hash, e.category, e.key, v.type, "
        f"substr(v.content, 1, {HEAD_CHARS}), {body_sql(d)}"
    )


def places(conn: Connection, vids: list[int]) -> dict[int, Place]:
    """The turns among these versions (heads or not, as the caller's view chose them), by entity id."""
    d = dialect(conn)
    sql = (
        f"SELECT {_columns(conn)} FROM {d.ids(':vids')} j CROSS JOIN entity_versions v ON v.vid = j.value "
        "CROSS JOIN entities e ON e.id = v.entity_id AND e.scope = v.scope"
    )
    found = (_place(tuple(row)) for row in conn.execute(sql, {"vids": id_list(vids)}))
    return {p.id: p for p in found if p is not None}


def _neighbours(conn: Connection, v: View, anchors: list[Place]) -> dict[int, Place]:
    """The visible turns adjacent to ``anchors`` (under the caller's view: scope, status, filters)."""
    wanted = sorted({a.id + step for a in anchors for step in (-1, 1)})
    d = dialect(conn)
    near = f"e.id IN (SELECT value FROM {d.ids(':near')} j)"
    sql = f"SELECT {_columns(conn)} FROM {FROM} WHERE {v.where} AND {near}"
    found = (_place(tuple(row)) for row in conn.execute(sql, dict(v.params, near=id_list(wanted))))
    by_id = {p.id: p for p in found if p is not None}
    return {i: p for i, p in by_id.items() if any(a.adjacent(p) for a in anchors)}


def lift(
    conn: Connection,
    v: View,
    scored: list[Scored],
    vids: dict[int, int],
    relevance_of: Callable[[dict[int, int]], dict[int, float]],
    related: dict[int, bool],
) -> list[Scored]:
    """``scored`` with each turn's relevance raised by its context (see the module docstring), and the
    anchors' neighbours that no arm found added; unchanged when no anchor is a turn. ``vids`` (entity
    id -> version) gains the added neighbours; ``relevance_of`` scores versions no arm scored (by the
    mode's own rule, from what the arms can compute for given versions). ``related``: whether each
    candidate's own relevance judged it related (recall's thresholds); a turn beside a related anchor
    becomes related in context, and an added neighbour is entered."""
    if v.historical or not scored:
        return scored
    best = sorted(scored, key=lambda s: (not related.get(s.id, False), -s.relevance, s.id))[:ANCHORS]
    anchor_places = places(conn, [vids[s.id] for s in best])
    if not anchor_places:
        return scored
    held = {s.id: s for s in scored}
    anchors = [(held[i], p) for i, p in anchor_places.items()]
    near = _neighbours(conn, v, [p for _, p in anchors])
    fresh = {i: p.vid for i, p in near.items() if i not in held}
    if fresh:
        own = relevance_of(fresh)
        for i, vid in fresh.items():
            if i in own:
                held[i] = Scored(i, own[i], own[i])
                related[i] = False
                vids[i] = vid
    gains: dict[int, float] = {}
    for s, p in anchors:
        for i, q in near.items():
            if i in held and p.adjacent(q):
                gains[i] = max(gains.get(i, 0.0), s.relevance)
                related[i] = related.get(i, False) or related.get(s.id, False)  # beside a related turn
    turns = places(conn, [vids[i] for i in held if i not in anchor_places and i not in near])
    turns.update({i: p for i, p in (*anchor_places.items(), *near.items()) if i in held})
    sessions: dict[tuple[tuple[str, str, str], str], float] = {}
    for i, p in turns.items():
        if p.session is not None:
            key = (p.scope, p.session)
            sessions[key] = max(sessions.get(key, float("-inf")), held[i].relevance)
    for s in held.values():
        at = turns.get(s.id)
        context = NEIGHBOUR * gains.get(s.id, 0.0)
        if at is not None and at.session is not None:
            context += SESSION * sessions[(at.scope, at.session)]
        s.relevance += context
        s.score = s.relevance
    return list(held.values())
