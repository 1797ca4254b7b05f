"""``PerseusVaultStore``: the vault as LangGraph's long-term memory, a ``BaseStore`` (docs/langchain.md).

Plug it in where LangGraph takes a store: ``graph.compile(store=...)`` or ``create_agent(...,
store=...)``. Its behaviour is checked op-for-op against LangGraph's ``InMemoryStore``.

How items map onto entities: a store owns one vault category (``category``, default ``langgraph``)
in one scope (``agent_id`` / ``workspace_hash``). An item is the entity whose topic path is its
namespace (each label percent-encoded, so ``("users", "a/b")`` is two segments and a namespace prefix
is a topic-path prefix), whose key is the JSON array of namespace and key, and whose body holds the
value, the namespace and the key. Its content is the text of its indexed fields (``index["fields"]``,
by default the whole value, written as one ``field: value`` line per value it holds, not as JSON),
which the vault searches by keyword and meaning, and which the vault's own recall shows; an item put
with ``index=False`` (or whose indexed fields hold no text) reads so too, but the store's query
searches leave it out of the hits: it only fills them up after the hits, unscored, as in
``InMemoryStore``.

- ``search`` without ``query``: items in the order they were first put (an update keeps its place;
  a deleted and re-put item goes last), filtered by ``filter`` (``$eq $ne $gt $gte $lt $lte``, nested
  dicts, exact lists), then ``offset`` / ``limit``.
- ``search`` with ``query``: the vault's recall (``mode``: auto, i.e. hybrid when the vault has
  vectors) within the namespace prefix, best first, each with its recall ``score``. Items
  scoring below ``min_score`` are left out ("auto", the default: the mode's threshold for unrelated
  memories; ``None`` returns every indexed item, best first, as ``InMemoryStore`` does).
- A ``filter`` is applied inside the vault's query, as a ``where`` (docs/filters.md) that keeps every
  item LangGraph's semantics keep (:func:`pushdown`); LangGraph's exact semantics (``InMemoryStore``'s:
  Python equality, so ``1 == True``; numbers compared as floats, numeric strings too; lists equal as
  wholes) then settle the few borderline items, so the answers are ``InMemoryStore``'s.
- ``delete`` purges the entity (a LangGraph delete is a request to forget for good).
- TTL (minutes): the vault's ``expires_at_ms``. An expired item reads as absent everywhere; reads
  refresh the TTL (``refresh_ttl``, default from ``ttl`` config's ``refresh_on_read``) by writing a
  new expiry, which the vault records as a new version.
- A batch answers its reads first, then applies its writes (the last write to a key wins), as
  ``InMemoryStore`` does.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable, Iterable, Iterator
from datetime import UTC, datetime
from typing import Any, Literal
from urllib.parse import quote

from langchain_core.embeddings import Embeddings
from langgraph.store.base import (
    BaseStore,
    GetOp,
    IndexConfig,
    Item,
    ListNamespacesOp,
    MatchCondition,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
    TTLConfig,
    ensure_embeddings,
    get_text_at_path,
    tokenize_path,
    validate_op_namespace,
)

from perseus_vault_core import (
    MAX_KEY_CHARS,
    MAX_LIMIT,
    MAX_OFFSET,
    MAX_TOPIC_PATH_CHARS,
    Entity,
    InvalidInput,
    NotFound,
    Vault,
)

from ..arguments import Opening, OwnsItsVault, VaultLike, strict, vault_from
from ..arguments import conn_string as checked_conn_string
from .embeddings import vault_embedder

ITEM_TYPE = "store_item"
MINUTE_MS = 60_000
Mode = Literal["fts5", "dense", "hybrid"]


class PerseusVaultStore(OwnsItsVault, BaseStore):
    """LangGraph long-term memory kept in a vault.

    ``vault``: an open :class:`Vault`, or a path (the store then opens it, embedding with
    ``index["embed"]`` when given, and closes it in :meth:`close`). ``index``: LangGraph's index
    config; ``fields`` picks the text that is searched (default ``["$"]``, the whole value), ``dims``
    is checked against the embedder. ``ttl``: LangGraph's TTL config (``default_ttl``,
    ``refresh_on_read``). ``mode``: the recall mode of query searches (default: the vault's auto).
    ``clock``: unix milliseconds for TTLs; give the vault's own clock if it was opened with one.
    """

    supports_ttl: bool = True

    @strict
    def __init__(
        self,
        vault: VaultLike,
        *,
        index: IndexConfig | None = None,
        ttl: TTLConfig | None = None,
        category: str = "langgraph",
        agent_id: str | None = None,
        workspace_hash: str | None = None,
        mode: Mode | None = None,
        min_score: float | Literal["auto"] | None = "auto",
        clock: Callable[[], int] | None = None,
    ) -> None:
        config: dict[str, Any] = dict(index or {})
        unknown = set(config) - {"dims", "embed", "fields"}
        if unknown:
            raise InvalidInput(f"index.{sorted(unknown)[0]}", "is not an index setting (dims, embed, fields)")
        fields = config.get("fields") or ["$"]
        if not isinstance(fields, list) or not all(isinstance(f, str) and f for f in fields):
            raise InvalidInput("index.fields", "must be a list of field paths")
        if not isinstance(category, str) or not category.strip():
            raise InvalidInput("category", "must be a non-empty string")
        if mode not in (None, "fts5", "dense", "hybrid"):
            raise InvalidInput("mode", "must be 'fts5', 'dense', 'hybrid' or None (auto)")
        embed = config.get("embed")
        if isinstance(vault, Vault) and embed is not None:
            raise InvalidInput(
                "index.embed",
                "an open Vault embeds with its own model; pass a path to embed "
                "with this one, or open the Vault with embedder=LangChainEmbedder(...)",
            )
        embedder = vault_embedder(_embeddings(embed)) if embed is not None else None
        with vault_from(vault, embedder=embedder) as (self.vault, self._owned_vault):
            dims = config.get("dims")
            model = self.vault.embedder
            if dims is not None and (model is None or model.dimension != dims):
                raise InvalidInput(
                    "index.dims",
                    f"is {dims}, but the vault's embedder makes "
                    f"{model.dimension if model else 'no'} dimensions",
                )
        self.index_config = config or None
        self.ttl_config = ttl
        self.fields = [(f, tokenize_path(f) if f != "$" else f) for f in fields]
        self.category = category
        self.agent_id = agent_id
        self.workspace_hash = workspace_hash
        self.mode = mode
        self.min_score = min_score
        self._clock = clock or (lambda: time.time_ns() // 1_000_000)

    @classmethod
    def from_conn_string(
        cls,
        conn_string: str,
        *,
        index: IndexConfig | None = None,
        ttl: TTLConfig | None = None,
        category: str = "langgraph",
        agent_id: str | None = None,
        workspace_hash: str | None = None,
        mode: Mode | None = None,
    ) -> Opening[PerseusVaultStore]:
        """A store over the vault at ``conn_string`` (a file path or a ``postgresql://`` URL), as a context
        manager for ``with`` or ``async with``, in the form of LangGraph's ``SqliteStore`` and
        ``PostgresStore``: the vault is opened on entry and closed on exit."""
        where = checked_conn_string(conn_string)
        return Opening(
            lambda: cls(
                where,
                index=index,
                ttl=ttl,
                category=category,
                agent_id=agent_id,
                workspace_hash=workspace_hash,
                mode=mode,
            )
        )

    def setup(self) -> None:
        """Nothing to do: the vault makes its tables when it opens. Kept so that code written for LangGraph's
        SQLite and Postgres stores, which call it first, runs unchanged."""

    # --- the batch --------------------------------------------------------------------------

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        ops = list(ops)
        for op in ops:
            if not isinstance(op, (GetOp, SearchOp, ListNamespacesOp, PutOp)):
                raise InvalidInput("ops", f"{type(op).__name__} is not a store operation")
            validate_op_namespace(op)
        results: list[Result] = []
        puts: dict[tuple[tuple[str, ...], str], PutOp] = {}
        refresh: dict[int, Entity] = {}
        for op in ops:
            if isinstance(op, GetOp):
                entity = self._find(op.namespace, op.key)
                if entity is not None and op.refresh_ttl:
                    refresh[entity.id] = entity
                results.append(_item(entity) if entity is not None else None)
            elif isinstance(op, SearchOp):
                found = self._search(op)
                if op.refresh_ttl:
                    refresh.update((e.id, e) for e, _ in found)
                results.append([_search_item(e, score) for e, score in found])
            elif isinstance(op, ListNamespacesOp):
                results.append(self._list_namespaces(op))
            else:
                puts[(tuple(op.namespace), op.key)] = op
                results.append(None)
        self._refresh(refresh.values(), {k for k in puts})
        for op in puts.values():
            self._put(op)
        return results

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        # SQLite and the model block: a worker thread keeps the event loop free.
        return await asyncio.to_thread(self.batch, list(ops))

    # --- scope and addressing ---------------------------------------------------------------

    def _filters(self, prefix: tuple[str, ...] = ()) -> dict[str, Any]:
        # '' is the unscoped scope itself: without it an unscoped store would read every scope.
        out: dict[str, Any] = {
            "category": self.category,
            "agent_id": self.agent_id or "",
            "workspace_hash": self.workspace_hash or "",
        }
        if prefix:
            out["topic_path"] = _topic(prefix)
        return out

    def _find(self, namespace: tuple[str, ...], key: str) -> Entity | None:
        entity_key = _entity_key(namespace, key)
        if len(entity_key) > MAX_KEY_CHARS:
            return None  # no item can have been stored under such a long address
        try:
            head = self.vault.history(
                self.category, entity_key, agent_id=self.agent_id, workspace_hash=self.workspace_hash, limit=1
            ).items[0]
        except NotFound:
            return None
        return head if head.status == "active" else None  # expired items read as absent

    def _scan(self, prefix: tuple[str, ...], filter: dict[str, Any] | None = None) -> Iterator[Entity]:
        """Every live item under ``prefix``, in the order the items were first put (entity id); with a
        ``filter``, only those its :func:`pushdown` keeps."""
        cursor = None
        filters = self._filters(prefix)
        where = pushdown(filter)
        if where:
            filters["where"] = where
        while True:
            page = self.vault.scan(cursor=cursor, limit=MAX_LIMIT, **filters)
            yield from (e for e in page.items if e.type == ITEM_TYPE)
            if not page.has_more:
                return
            cursor = page.next_cursor

    # --- writes -----------------------------------------------------------------------------

    def _put(self, op: PutOp) -> None:
        namespace = tuple(op.namespace)
        if op.value is None:
            self._delete(namespace, op.key)
            return
        if not namespace:
            raise InvalidInput("namespace", "must not be empty")
        if not isinstance(op.key, str) or not op.key:
            raise InvalidInput("key", "must be a non-empty string")
        value = dict(op.value)
        try:
            json.dumps(value, allow_nan=False)
        except (TypeError, ValueError) as exc:
            raise InvalidInput("value", f"must be JSON (strings, numbers, lists, dicts): {exc}") from None
        entity_key = _entity_key(namespace, op.key)
        topic = _topic(namespace)
        if len(entity_key) > MAX_KEY_CHARS or len(topic) > MAX_TOPIC_PATH_CHARS:
            raise InvalidInput("namespace", "and key are too long to address an item in the vault")
        texts = self._texts(value, op.index)
        body: dict[str, Any] = {
            "namespace": list(namespace),
            "key": op.key,
            "value": value,
            "indexed": bool(texts),
        }
        # What recall shows and searches: the indexed text; an unindexed item is still read as text, never as ''.
        content = "\n".join(texts) or "\n".join(readable_lines(value)) or op.key
        expires = None
        if op.ttl is not None:
            if isinstance(op.ttl, bool) or not isinstance(op.ttl, (int, float)) or not op.ttl > 0:
                raise InvalidInput("ttl", "must be a positive number of minutes, or None")
            body["ttl_minutes"] = op.ttl
            expires = self._now() + int(op.ttl * MINUTE_MS)
        self.vault.remember(
            category=self.category,
            key=entity_key,
            content=content,
            type=ITEM_TYPE,
            topic_path=topic,
            body=body,
            agent_id=self.agent_id,
            workspace_hash=self.workspace_hash,
            expires_at_ms=expires,
            keep_duplicate=True,
        )  # put addresses by key: every put is kept

    def _texts(self, value: dict[str, Any], index: Literal[False] | list[str] | None) -> list[str]:
        if index is False:
            return []
        paths = self.fields if index is None else [(p, tokenize_path(p) if p != "$" else p) for p in index]
        out: list[str] = []
        for (
            _,
            tokens,
        ) in paths:  # the whole value ("$") as field: value lines, where LangGraph writes its JSON
            out.extend(readable_lines(value) if tokens == "$" else get_text_at_path(value, tokens))
        return [t for t in out if t]

    def _delete(self, namespace: tuple[str, ...], key: str) -> None:
        entity_key = _entity_key(namespace, key)
        if len(entity_key) > MAX_KEY_CHARS:
            return
        try:
            head = self.vault.history(
                self.category, entity_key, agent_id=self.agent_id, workspace_hash=self.workspace_hash, limit=1
            ).items[0]
        except NotFound:
            return
        if head.status != "archived":
            self.vault.forget(head.id)
        self.vault.purge(head.id)

    def _refresh(self, entities: Iterable[Entity], overwritten: set[tuple[tuple[str, ...], str]]) -> None:
        """Push back the expiry of items that were read (and are not rewritten by this batch)."""
        now = self._now()
        for entity in entities:
            minutes = entity.body.get("ttl_minutes")
            address = (tuple(entity.body["namespace"]), entity.body["key"])
            if minutes is None or address in overwritten:
                continue
            self.vault.remember(
                category=self.category,
                key=entity.key,
                content=entity.content,
                agent_id=self.agent_id,
                workspace_hash=self.workspace_hash,
                expires_at_ms=now + int(minutes * MINUTE_MS),
            )

    def _now(self) -> int:
        return int(self._clock())

    # --- reads ------------------------------------------------------------------------------

    def _search(self, op: SearchOp) -> list[tuple[Entity, float | None]]:
        prefix = tuple(op.namespace_prefix)
        if op.limit < 0 or op.offset < 0:
            raise InvalidInput("limit" if op.limit < 0 else "offset", "must not be negative")
        check_filter(op.filter)
        wanted = op.offset + op.limit
        if not op.query:
            matched = (e for e in self._scan(prefix, op.filter) if matches(e.body.get("value"), op.filter))
            out: list[tuple[Entity, float | None]] = []
            for entity in matched:
                out.append((entity, None))
                if len(out) >= wanted:
                    break
            return out[op.offset :]
        hits: list[tuple[Entity, float | None]] = []
        if wanted:
            hits = self._recall(op.query, prefix, op.filter, wanted)
        if len(hits) < wanted:  # as InMemoryStore: unindexed items fill up, unscored
            hits.extend(
                (e, None)
                for e in self._scan(prefix, op.filter)
                if not e.body.get("indexed") and matches(e.body.get("value"), op.filter)
            )
        return hits[op.offset : wanted]

    def _recall(
        self, query: str, prefix: tuple[str, ...], filter: dict[str, Any] | None, wanted: int
    ) -> list[tuple[Entity, float | None]]:
        prefix_filters = self._filters(prefix)
        where = pushdown(filter)
        indexed = {"indexed": True}  # an unindexed item is text too, but never a hit (InMemoryStore's rule)
        prefix_filters["where"] = {"$and": [where, indexed]} if where else indexed
        page = min(MAX_LIMIT, max(wanted, 10))
        out: list[tuple[Entity, float | None]] = []
        offset = 0
        while len(out) < wanted:
            args = dict(
                prefix_filters,
                type=ITEM_TYPE,
                limit=page,
                offset=offset,
                reinforce=False,
                min_score=self.min_score,
                curate=False,
            )  # items by key, each one found (as InMemoryStore)
            if self.mode is not None:
                args["mode"] = self.mode
            result = self.vault.recall(query, **args)
            out.extend(
                (item, item.score)
                for item in result.items
                if item.body.get("indexed") and matches(item.body.get("value"), filter)
            )
            offset += page
            if len(result.items) < page or offset > MAX_OFFSET:
                break
        return out[:wanted]

    def _list_namespaces(self, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        if op.limit < 0 or op.offset < 0:
            raise InvalidInput("limit" if op.limit < 0 else "offset", "must not be negative")
        namespaces = {tuple(e.body["namespace"]) for e in self._scan(())}
        conditions = op.match_conditions or ()
        chosen = {ns for ns in namespaces if all(_matches_condition(c, ns) for c in conditions)}
        if op.max_depth is not None:
            chosen = {ns[: op.max_depth] for ns in chosen}
        return sorted(chosen)[op.offset : op.offset + op.limit]


# --- pure helpers ------------------------------------------------------------------------------


def readable_lines(value: Any, at: str = "") -> list[str]:
    """A JSON value as text a person or a model reads: one ``field: value`` line per value it holds
    (nested fields dotted, a list's values joined by commas), where its JSON would be braces and quotes."""
    if isinstance(value, dict):
        return [
            line
            for name, inner in value.items()
            for line in readable_lines(inner, f"{at}.{name}" if at else str(name))
        ]
    if isinstance(value, list) and all(not isinstance(v, (dict, list)) for v in value):
        text = ", ".join(_scalar(v) for v in value)
    elif isinstance(value, list):
        return [
            line
            for i, inner in enumerate(value)
            for line in readable_lines(inner, f"{at}.{i}" if at else str(i))
        ]
    else:
        text = _scalar(value)
    if not text:
        return []
    return [f"{at}: {text}" if at else text]


def _scalar(value: Any) -> str:
    if isinstance(value, str):
        return value
    return "" if value is None else json.dumps(value)


def _embeddings(embed: Any) -> Embeddings:
    made = ensure_embeddings(embed)
    if not isinstance(made, Embeddings):  # pragma: no cover - ensure_embeddings always returns one
        raise InvalidInput("index.embed", "must be an Embeddings object or an embedding function")
    return made


def _topic(namespace: tuple[str, ...]) -> str:
    return "/".join(quote(label, safe="") for label in namespace)


def _entity_key(namespace: tuple[str, ...], key: str) -> str:
    return json.dumps([*namespace, key], ensure_ascii=False)


def _when(ms: int) -> datetime:
    return datetime.fromtimestamp(ms / 1000, tz=UTC)


def _item(entity: Entity) -> Item:
    body = entity.body
    return Item(
        value=body["value"],
        key=body["key"],
        namespace=tuple(body["namespace"]),
        created_at=_when(entity.created_at_ms),
        updated_at=_when(entity.updated_at_ms),
    )


def _search_item(entity: Entity, score: float | None) -> SearchItem:
    body = entity.body
    return SearchItem(
        namespace=tuple(body["namespace"]),
        key=body["key"],
        value=body["value"],
        created_at=_when(entity.created_at_ms),
        updated_at=_when(entity.updated_at_ms),
        score=score,
    )


def _matches_condition(condition: MatchCondition, namespace: tuple[str, ...]) -> bool:
    path = tuple(condition.path)
    if len(namespace) < len(path):
        return False
    if condition.match_type == "prefix":
        window = namespace[: len(path)]
    elif condition.match_type == "suffix":
        window = namespace[len(namespace) - len(path) :]
    else:
        raise InvalidInput("match_type", f"must be 'prefix' or 'suffix', not {condition.match_type!r}")
    return all(want in ("*", have) for want, have in zip(path, window))


OPERATORS = ("$eq", "$ne", "$gt", "$gte", "$lt", "$lte")


def matches(value: Any, filter: dict[str, Any] | None) -> bool:
    """Whether a stored value passes a LangGraph store filter: each field must equal the given
    value, or pass every ``$`` operator given for it; a dict without operators matches nested
    fields; a list matches an equal list."""
    if not filter:
        return True
    if not isinstance(value, dict):
        return False
    return all(_field_matches(value.get(name), wanted) for name, wanted in filter.items())


def check_filter(filter: Any) -> None:
    """Refuse a malformed filter before any item is read (an unknown operator, a non-dict)."""
    if filter is None:
        return
    if not isinstance(filter, dict):
        raise InvalidInput("filter", "must be a dict of field values")
    stack = list(filter.values())
    while stack:
        wanted = stack.pop()
        if isinstance(wanted, dict):
            for name, inner in wanted.items():
                if isinstance(name, str) and name.startswith("$") and name not in OPERATORS:
                    raise InvalidInput("filter", f"unknown operator {name!r} (use {', '.join(OPERATORS)})")
                stack.append(inner)
        elif isinstance(wanted, (list, tuple)):
            stack.extend(wanted)


def pushdown(filter: dict[str, Any] | None, at: str = "value") -> dict[str, Any] | None:
    """A vault ``where`` over the items' values (``body.value``) that keeps every item ``filter`` keeps
    under LangGraph's semantics (see :func:`matches`), and as few others as it can express: equality
    as the vault's typed ``$in`` of the Python-equal values (``1`` also asks for ``true``), an order
    as the same order over numbers or any string or boolean (LangGraph reads ``"5"`` and ``true`` as
    numbers), a nested dict as dotted fields, a list as holding each of its elements. ``$ne``, and a
    field name the vault cannot address (a dot, a quote), ask for nothing. None: nothing to ask."""
    parts: list[dict[str, Any]] = []
    for name, wanted in list((filter or {}).items())[:PUSHED_FIELDS]:
        if (
            not isinstance(name, str)
            or not name
            or any(c in name for c in '."\\')
            or name.startswith("$")
            or not name.isprintable()
            or len(at) + len(name) > 200
            or at.count(".") >= 8
        ):
            continue  # a name the vault cannot address, or too deep: the exact check below decides
        path = f"{at}.{name}"
        if isinstance(wanted, dict) and not any(isinstance(k, str) and k.startswith("$") for k in wanted):
            inner = pushdown(wanted, path)
            if inner:
                parts.append(inner)
            continue
        conditions = wanted.items() if isinstance(wanted, dict) else [("$eq", wanted)]
        parts.extend(part for op, operand in conditions if (part := _pushed(path, op, operand)) is not None)
    if not parts:
        return None
    return parts[0] if len(parts) == 1 else {"$and": parts}


PUSHED_FIELDS = 16  # fields of one filter object asked of the vault (the exact check below reads them all)


def _equal_values(value: Any) -> list[Any] | None:
    """The JSON scalars Python finds equal to ``value`` (None: not a scalar the vault compares)."""
    if value is True or value is False:
        return [value, int(value)]
    if isinstance(value, (int, float)) and value in (0, 1):
        return [value, bool(value)]
    if isinstance(value, (int, float)) and abs(value) < 2**63:
        return [value] if value == value and abs(value) != float("inf") else None
    return [value] if isinstance(value, str) and len(value) <= 4_096 else None


def _pushed(path: str, op: str, operand: Any) -> dict[str, Any] | None:
    if op == "$eq":
        if operand is None:
            return {path: None}
        if isinstance(operand, (list, tuple)):  # an equal list holds each of its elements
            held = [
                {path: {"$in": values}}
                for e in operand[:PUSHED_FIELDS]
                if (values := _equal_values(e)) is not None
            ]
            return {"$and": held} if held else {path: {"$exists": True}}
        values = _equal_values(operand)
        return {path: {"$in": values}} if values is not None else None
    if op in ("$gt", "$gte", "$lt", "$lte"):
        try:
            bound = float(operand)
        except (TypeError, ValueError):
            return {path: {"$in": []}}  # LangGraph compares nothing with it
        if bound != bound or abs(bound) == float("inf"):
            return None
        return {"$or": [{path: {op: bound}}, {path: {"$gte": ""}}, {path: {"$in": [True, False]}}]}
    return None  # $ne holds for lists that hold the value, and missing fields: nothing narrower to ask


def _field_matches(have: Any, wanted: Any) -> bool:
    if isinstance(wanted, dict):
        if any(isinstance(k, str) and k.startswith("$") for k in wanted):
            return all(_operator(have, op, operand) for op, operand in wanted.items())
        return isinstance(have, dict) and all(_field_matches(have.get(k), v) for k, v in wanted.items())
    if isinstance(wanted, (list, tuple)):
        return (
            isinstance(have, (list, tuple))
            and len(have) == len(wanted)
            and all(_field_matches(h, w) for h, w in zip(have, wanted))
        )
    return bool(have == wanted)


def _operator(have: Any, op: str, operand: Any) -> bool:
    if op == "$eq":
        return bool(have == operand)
    if op == "$ne":
        return bool(have != operand)
    if op not in OPERATORS:
        raise InvalidInput("filter", f"unknown operator {op!r} (use {', '.join(OPERATORS)})")
    try:
        left, right = float(have), float(operand)
    except (TypeError, ValueError):
        return False  # a missing or non-numeric field is neither greater nor smaller than anything
    if op == "$gt":
        return left > right
    if op == "$gte":
        return left >= right
    if op == "$lt":
        return left < right
    return left <= right
