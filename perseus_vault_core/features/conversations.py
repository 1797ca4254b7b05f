"""Conversations (docs/conversations.md): a chat's messages kept as numbered turns of a session,
ordinary memories that recall finds, read back in order a page at a time or around one turn.

How a turn is stored: an entity of type ``turn`` in category ``conversation``, keyed
``<session>#<turn>`` (the turn number from 1, zero-padded to six digits), with summary = the speaker
(so a hit reads "Caroline: I went to ..." and the name is searchable), content = the text, topic
path ``conversation/<session>``, and body ``{session, turn, speaker, role, at_ms, at, message_id}``
(``role``, the times and the id only when the message had them). A session lives in one scope.

Turn numbers are given inside the write transaction (after the highest number the session ever
had, archived turns included), so writers appending to one session never share a number. A
message with an ``id`` is found again by it: sent again it keeps its turn, and changes nothing
unless its text, speaker, role or time changed (then the turn is updated, history kept); a turn
that was forgotten (or superseded) stays so, since a resent log must not undo a deliberate forget.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from ..contract.errors import NotFound
from ..contract.models import ConversationResult, ConversationTurn, ConversationWrite, Entity, TurnWritten
from ..contract.params import (
    ConversationParams,
    Filters,
    MessageInput,
    RememberConversationParams,
    RememberInput,
)
from ..contract.readable import iso_time
from ..contract.text import collapse_whitespace, escape_breaks
from ..engine.engine import Engine
from ..primitives.dialect import Dialect, dialect
from ..primitives.filters import FROM, view
from ..recall.turns import TURN_TYPE
from ..records import store
from ..storage import Connection
from . import turn_topics

CATEGORY = "conversation"
TYPE = TURN_TYPE  # curation leaves turns alone: two turns may say the same words, and both were said
PAD = 6  # digits of the turn number in a key: keys sort in turn order up to 999,999 turns


def _turn(d: Dialect) -> str:
    """A turn's number, from its body, as SQL."""
    return f"CAST({d.field('v.body', 'turn')} AS INTEGER)"


def key(session: str, turn: int) -> str:
    return f"{session}#{turn:0{PAD}d}"


def topic_path(session: str) -> str:
    return f"{CATEGORY}/{session}"


def key_range(session: str) -> tuple[str, str]:
    """The keys of a session's turns are those from ``<session>#`` up to ``<session>$`` ('$' follows
    '#'): one range of the scope's unique index, whatever the session is called (it holds no '#')."""
    return session + "#", session + "$"


# --- writing -------------------------------------------------------------------------------------


@dataclass
class Batch:
    """A call's messages numbered as turns: the memories to write (one per message, or None for a
    message whose turn was forgotten), each message's turn number and, for a forgotten one, its id,
    and the session's last turn number once they are written."""

    items: list[RememberInput | None]
    turns: list[int]
    kept: dict[int, int]  # message index -> the forgotten turn's entity id
    last: int

    @property
    def writes(self) -> list[RememberInput]:
        return [item for item in self.items if item is not None]


def batch(conn: Connection, p: RememberConversationParams) -> Batch:
    """Number ``p.messages`` as turns of their session, as the session stands on ``conn``: call it
    inside the write transaction, so that the numbers it gives are still free when they are written."""
    lo, hi = key_range(p.session)
    rows = conn.execute(
        f"SELECT e.id, e.key, v.type, v.status, {dialect(conn).field('v.body', 'message_id')} FROM entities e "
        "JOIN entity_versions v ON v.entity_id = e.id AND v.scope = e.scope AND v.recorded_to_ms IS NULL "
        "WHERE e.agent_id = ? AND e.workspace_hash = ? AND e.category = ? AND e.key >= ? AND e.key < ?",
        (p.agent_id or "", p.workspace_hash or "", CATEGORY, lo, hi),
    ).fetchall()
    last = 0
    by_id: dict[str, tuple[int, int, str]] = {}  # message id -> (turn, entity id, status)
    for entity_id, k, kind, status, message_id in rows:
        suffix = k[len(lo) :]
        # Whatever memory sits at a turn's key, its number is taken (a number past 15 digits is no turn's).
        if suffix.isascii() and suffix.isdigit() and len(suffix) <= 15:
            last = max(last, int(suffix))
            if kind == TYPE and isinstance(message_id, str):
                by_id[message_id] = (int(suffix), int(entity_id), status)
    items: list[RememberInput | None] = []
    turns, kept = [], {}
    for n, message in enumerate(p.messages):
        known = by_id.get(message.id) if message.id is not None else None
        if known is None:
            last += 1
            turn = last
        else:
            turn = known[0]
        if known is not None and known[2] != "active":
            # Forgotten (or superseded) on purpose: sending the log again must not bring it back.
            kept[n] = known[1]
            items.append(None)
        else:
            items.append(_item(p, message, turn))
        turns.append(turn)
    return Batch(items, turns, kept, last)


def _item(p: RememberConversationParams, message: MessageInput, turn: int) -> RememberInput:
    body: dict[str, Any] = {"session": p.session, "turn": turn, "speaker": message.who}
    if message.role is not None:
        body["role"] = message.role
    if message.time is not None:
        body["at_ms"] = message.time
        at = iso_time(message.time, "auto")
        if at is not None:
            body["at"] = at
    if message.id is not None:
        body["message_id"] = message.id
    return RememberInput.model_validate(
        {
            "category": CATEGORY,
            "key": key(p.session, turn),
            "type": TYPE,
            "content": message.text,
            "summary": message.who,
            "topic_path": topic_path(p.session),
            "body": body,
            "agent_id": p.agent_id,
            "workspace_hash": p.workspace_hash,
        }
    )


def report(p: RememberConversationParams, b: Batch, changes: list[tuple[int, str]]) -> ConversationWrite:
    """What the call did to each message (``changes``: what the written ones became, in order)."""
    written = iter(changes)
    turns = []
    for n, (m, turn) in enumerate(zip(p.messages, b.turns)):
        entity_id, change = (b.kept[n], "skipped") if n in b.kept else next(written)
        turns.append(
            TurnWritten.model_validate(
                {"id": entity_id, "turn": turn, "speaker": m.who, "message_id": m.id, "change": change}
            )
        )
    counts = {c: sum(t.change == c for t in turns) for c in ("created", "updated", "unchanged", "skipped")}
    return ConversationWrite(
        session=p.session,
        agent_id=p.agent_id,
        workspace_hash=p.workspace_hash,
        turns=turns,
        last_turn=b.last,
        **counts,
    )


# --- reading -------------------------------------------------------------------------------------


def conversation(engine: Engine, p: ConversationParams) -> ConversationResult:
    """The ``conversation`` verb: :func:`read` in one read snapshot."""
    with engine.reading() as conn:
        return read(conn, p, engine.now())


def read(conn: Connection, p: ConversationParams, now_ms: int) -> ConversationResult:
    """The session's turns in order: a page from ``p.from_turn``, or the turns around ``p.around``.

    Without ``around`` the session is the one in the scope given (the default scope for an omitted
    field); with it, the one in the hit's scope (scope arguments, when given, must match the hit)."""
    lo, hi = key_range(p.session)
    hit = None
    if p.around is not None:
        try:
            hit = store.scoped_head(conn, p.around, p.agent_id, p.workspace_hash)
        except NotFound as exc:
            raise NotFound(f"around: {exc}") from None
        at = _turn_of(hit)
        if at is None or hit["category"] != CATEGORY or hit["type"] != TYPE or not lo <= hit["key"] < hi:
            raise NotFound(
                f"around: entity {p.around} is not a turn of conversation {p.session!r} in this scope"
            )
        scope = (hit["agent_id"], hit["workspace_hash"])
    else:
        scope = (p.agent_id or "", p.workspace_hash or "")
    # '' is the default scope itself (an omitted field would be no filter at all).
    d = dialect(conn)
    v = view(Filters(agent_id=scope[0], workspace_hash=scope[1], category=CATEGORY, type=TYPE), now_ms, d)
    # Only memories this module wrote as turns: a hand-made one at a turn's key has no turn number.
    where = f"{v.where} AND e.key >= :lo AND e.key < :hi AND {d.integer_field('v.body', 'turn')}"
    turn = _turn(d)
    args = dict(v.params, lo=lo, hi=hi)
    total = int(conn.execute(f"SELECT count(*) FROM {FROM} WHERE {where}", args).fetchone()[0])
    select = f"SELECT {store.ENTITY_COLUMNS} FROM {FROM} WHERE {where}"
    if hit is not None:
        earlier = conn.execute(
            f"{select} AND {turn} < :at ORDER BY {turn} DESC, e.id DESC LIMIT :n",
            dict(args, at=at, n=p.before),
        ).fetchall()
        later = conn.execute(
            f"{select} AND {turn} > :at ORDER BY {turn}, e.id LIMIT :n", dict(args, at=at, n=p.after + 1)
        ).fetchall()
        entities = [store.to_entity(r, v.instant) for r in earlier[::-1]]
        entities.append(store.to_entity(hit, v.instant))
        entities += [store.to_entity(r, v.instant) for r in later[: p.after]]
        following = later[p.after] if len(later) > p.after else None
        turns = _turns(entities, fit=True)
    else:
        rows = conn.execute(
            f"{select} AND {turn} >= :start ORDER BY {turn}, e.id LIMIT :n",
            dict(args, start=p.from_turn, n=p.limit + 1),
        ).fetchall()
        page = store.within_budget(rows[: p.limit])  # a page of huge turns ends early; next_turn goes on
        following = rows[len(page)] if len(rows) > len(page) else None
        turns = _turns([store.to_entity(r, v.instant) for r in page], fit=False)
    next_turn = _turn_of(store.row_dict(following)) if following is not None else None
    return ConversationResult(
        session=p.session,
        agent_id=scope[0] or None,
        workspace_hash=scope[1] or None,
        turns=turns,
        total=total,
        next_turn=next_turn,
    )


def _turn_of(row: dict[str, Any]) -> int | None:
    turn = json.loads(row["body"]).get("turn")
    return turn if type(turn) is int else None


def _turns(entities: list[Entity], *, fit: bool) -> list[ConversationTurn]:
    """Turns from their memories (read before any preview cuts a body); with ``fit``, past the
    response budget the memories come as previews."""
    shown = store.fit(entities) if fit else entities
    out = []
    for whole, entity in zip(entities, shown):
        body = whole.body
        at_ms = body.get("at_ms")
        role, message_id = body.get("role"), body.get("message_id")
        out.append(
            ConversationTurn(
                turn=int(body["turn"]),
                speaker=str(body.get("speaker") or whole.summary or ""),
                role=role if isinstance(role, str) else None,
                at_ms=at_ms if isinstance(at_ms, int) else whole.created_at_ms,
                message_id=message_id if isinstance(message_id, str) else None,
                entity=entity,
            )
        )
    return out


def transcript(result: ConversationResult, around: int | None = None) -> str:
    """The turns as text, one line each: ``#id turn speaker (time): text``; with ``around``, the hit's
    line is marked ``>``. Whitespace inside a text is collapsed and a speaker's line breaks escaped (a turn
    written by hand, or before they were refused, may hold some), so a line is one turn."""
    if not result.turns:
        held = f" from that turn on (it has {result.total})" if result.total else ""
        return f"no turns in conversation {result.session!r}{held}"
    lines = []
    for t in result.turns:
        when = iso_time(t.at_ms, "minutes") or str(t.at_ms)  # to the minute: a transcript, not a log
        line = f"#{t.entity.id} {t.turn} {escape_breaks(t.speaker)} ({when}): {collapse_whitespace(t.entity.content)}"
        if around is not None:
            line = ("> " if t.entity.id == around else "  ") + line
        lines.append(line)
    if result.next_turn is not None:
        lines.append(f"(more from turn {result.next_turn}; {result.total} turns in all)")
    return "\n".join(lines)


def remember(engine: Engine, p: RememberConversationParams) -> ConversationWrite:
    """Store ``p.messages`` as the session's next turns, in one transaction."""
    plan = engine.plan(lambda conn: store.texts_to_embed(conn, batch(conn, p).writes))
    vectors = plan.by_text if plan is not None else {}
    near = turn_topics.stored_near(
        engine, {"agent_id": p.agent_id, "workspace_hash": p.workspace_hash}, vectors
    )

    def work(conn: Connection) -> ConversationWrite:
        b = batch(conn, p)  # numbered inside the transaction: no other writer shares a number
        written = store.remember_batch(engine.backend, conn, b.writes, engine.now(), plan)
        if written:
            turn_topics.keep(engine.backend, conn, b.writes, written, vectors, near, engine.now())
        return report(p, b, written)

    return engine.write_planned(plan, work)
