"""The vault as a LlamaIndex property-graph store (docs/llamaindex.md), so ``PropertyGraphIndex`` builds on it.

How a labelled property graph maps onto the vault (every part stored losslessly, every change
kept in the vault's history):

- **A node** (``EntityNode`` or ``ChunkNode``) is one entity of category ``<namespace>:node``
  whose key is the node id (ids longer than a vault key, or blank, are keyed by their sha256).
  ``content`` is the entity's name or the chunk's text, so recall finds nodes by what they say;
  ``type`` is ``kg_entity`` or ``kg_chunk``; the body keeps the id, label and properties. Both
  kinds share one category because LlamaIndex gives them one id space (a chunk upserted with an
  entity's id replaces it, as in ``SimplePropertyGraphStore``).
- **A relation** is a vault link from its source node's entity to its target's, typed by its
  label: the vault's own graph, which ``traverse``, ``communities`` and GraphRAG walk. A link holds
  a weight but no properties, so each relation also has an entity of category
  ``<namespace>:relation`` (type ``kg_relation``, keyed by a hash of source, label and target)
  whose body keeps its label, ends and properties. A self-loop, which a vault link cannot be,
  is a link from the node to its relation entity.
- **Deleting** archives (``forget``): the graph no longer shows it, the history keeps it, and
  upserting it again restores it. Links of a deleted node or relation are closed (``unlink``).

Reads see the store's scope (``agent_id`` / ``workspace_hash``, exactly: ``None`` means the
unscoped memories) and, with ``as_of_unix_ms``, the graph as the vault believed it then (such a
store is read-only). Writes are batched (``remember_many``: one transaction for a batch's
entities), but a vault link is one write each, so a batch is not atomic as a whole.

Vectors: the vault keeps one vector per entity, made by its own embedder from the entity's text
(``vector_query`` searches entity nodes by them with ``Vault.recall_by_vector``). LlamaIndex's
``node.embedding`` is therefore not stored twice; for the scores to mean anything, the vault's
embedder and the index's ``embed_model`` must be the same model: bridge them with
:class:`~.embeddings.PerseusVaultEmbedding` (LlamaIndex embeds with the vault's model) or
:class:`~.embeddings.LlamaIndexEmbedder` (the vault embeds with LlamaIndex's model). A query vector
of another length is refused by the vault; one of the same length from another model cannot be
detected, and would rank noise.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections.abc import Iterator, Sequence
from typing import Any

from llama_index.core.graph_stores.simple import SimpleGraphStore
from llama_index.core.graph_stores.types import (
    ChunkNode,
    EntityNode,
    LabelledNode,
    PropertyGraphStore,
    Relation,
    Triplet,
)
from llama_index.core.vector_stores.types import VectorStoreQuery

from perseus_vault_core import (
    MAX_BATCH,
    MAX_KEY_CHARS,
    Entity,
    InvalidInput,
    KeyValues,
    NotFound,
    NotSupported,
    Vault,
)

from ..arguments import OwnsItsVault, VaultLike, open_vault, strict
from .vector_stores import to_where

ENTITY_TYPE = "kg_entity"
CHUNK_TYPE = "kg_chunk"
RELATION_TYPE = "kg_relation"
MARK = "llamaindex"  # the body field holding a graph element's LlamaIndex fields
MAX_LABEL_CHARS = 128  # a vault link's relation
PAGE = 1_000


def node_key(node_id: str) -> str:
    """The vault key of a node id: the id itself when it fits a key, else its sha256."""
    if node_id.strip() and len(node_id) <= MAX_KEY_CHARS:
        return node_id
    return "sha256:" + hashlib.sha256(node_id.encode("utf-8", "surrogatepass")).hexdigest()


def relation_key(source_id: str, label: str, target_id: str) -> str:
    # A hash: joining the parts with any separator would be ambiguous for ids that contain it.
    raw = json.dumps([source_id, label, target_id], ensure_ascii=False).encode("utf-8", "surrogatepass")
    return "rel:" + hashlib.sha256(raw).hexdigest()


def _properties_match(props: dict[str, Any], wanted: dict[str, Any]) -> bool:
    """LlamaIndex's rule (``SimplePropertyGraphStore``): any one wanted property equal."""
    return any(k in props and props[k] == v for k, v in wanted.items())


class PerseusVaultPropertyGraphStore(OwnsItsVault, PropertyGraphStore):
    """A ``PropertyGraphStore`` on the vault's entities and links (see the module docstring).

    >>> store = PerseusVaultPropertyGraphStore(Vault("memory.db"))              # doctest: +SKIP
    >>> index = PropertyGraphIndex.from_documents(docs, property_graph_store=store)  # doctest: +SKIP
    """

    supports_structured_queries: bool = False
    supports_vector_queries: bool = True

    @strict
    def __init__(
        self,
        vault: VaultLike,
        *,
        namespace: str = "llamaindex",
        agent_id: str | None = None,
        workspace_hash: str | None = None,
        as_of_unix_ms: int | None = None,
    ) -> None:
        if not isinstance(namespace, str) or not namespace.strip() or ":" in namespace or len(namespace) > 64:
            raise InvalidInput("namespace", "must be a non-blank name of at most 64 characters without ':'")
        for name, value in (("agent_id", agent_id), ("workspace_hash", workspace_hash)):
            if value is not None and not isinstance(value, str):
                raise InvalidInput(name, "must be a string")
        if as_of_unix_ms is not None and (
            not isinstance(as_of_unix_ms, int) or isinstance(as_of_unix_ms, bool) or as_of_unix_ms < 0
        ):
            raise InvalidInput("as_of_unix_ms", "must be a non-negative integer (unix milliseconds)")
        self.vault, self._owned_vault = open_vault(vault)
        self.node_category = f"{namespace}:node"
        self.relation_category = f"{namespace}:relation"
        self.as_of_unix_ms = as_of_unix_ms
        self.agent_id, self.workspace_hash = agent_id, workspace_hash
        self._scope = {"agent_id": agent_id, "workspace_hash": workspace_hash}
        # Filters treat an omitted scope as "every scope"; this store means exactly its own.
        self._view: dict[str, Any] = {"agent_id": agent_id or "", "workspace_hash": workspace_hash or ""}
        if as_of_unix_ms is not None:
            self._view["as_of_unix_ms"] = as_of_unix_ms

    @property
    def client(self) -> Vault:
        return self.vault

    # --- reading ------------------------------------------------------------------------------

    def get(
        self, properties: dict[str, Any] | None = None, ids: list[str] | None = None
    ) -> list[LabelledNode]:
        """Nodes with any of ``properties`` and among ``ids`` (each filter only when given)."""
        reader = _Reader(self)
        entities = reader.nodes(ids) if ids else list(reader.scan(self.node_category))
        out = []
        for entity in sorted(entities, key=lambda e: e.id):
            node = reader.node_of(entity)
            if node is not None and (not properties or _properties_match(node.properties, properties)):
                out.append(node)
        return out

    def get_triplets(
        self,
        entity_names: list[str] | None = None,
        relation_names: list[str] | None = None,
        properties: dict[str, Any] | None = None,
        ids: list[str] | None = None,
    ) -> list[Triplet]:
        """Triplets touching ``entity_names`` and ``ids`` (as subject or object), labelled one of
        ``relation_names``, with any of ``properties`` on a node or the relation: every given filter
        applies; none given means none returned (LlamaIndex's rule)."""
        if not (entity_names or relation_names or properties or ids):
            return []
        reader = _Reader(self)
        if entity_names or ids:
            found: dict[str, tuple[int, Triplet]] = {}
            for node_id in dict.fromkeys(entity_names or ids or []):
                for order, triplet in reader.around(node_id):
                    found.setdefault(_triplet_key(triplet), (order, triplet))
            triplets = [t for _, t in sorted(found.values(), key=lambda pair: pair[0])]
        else:
            triplets = [
                t
                for t in (reader.triplet_of(e) for e in reader.scan(self.relation_category))
                if t is not None
            ]
        if entity_names:
            triplets = [t for t in triplets if t[0].id in entity_names or t[2].id in entity_names]
        if ids:
            triplets = [t for t in triplets if t[0].id in ids or t[2].id in ids]
        if relation_names:
            triplets = [t for t in triplets if t[1].label in relation_names]
        if properties:
            triplets = [
                t for t in triplets if any(_properties_match(part.properties, properties) for part in t)
            ]
        return triplets

    def get_rel_map(
        self,
        graph_nodes: list[LabelledNode],
        depth: int = 2,
        limit: int = 30,
        ignore_rels: list[str] | None = None,
    ) -> list[Triplet]:
        """The relations within ``depth`` hops of ``graph_nodes``, breadth first, each once, at most
        ``limit``. Both directions are walked. Relations labelled in ``ignore_rels`` are neither
        returned nor walked through (ignoring ``SOURCE`` keeps a walk off the chunk nodes)."""
        if not isinstance(depth, int) or isinstance(depth, bool) or depth < 0:
            raise InvalidInput("depth", "must be a non-negative integer")
        if not isinstance(limit, int) or isinstance(limit, bool) or limit < 0:
            raise InvalidInput("limit", "must be a non-negative integer")
        ignore = set(ignore_rels or [])
        reader = _Reader(self)
        frontier = list(dict.fromkeys(node.id for node in graph_nodes))
        reached = set(frontier)
        taken: set[str] = set()
        out: list[Triplet] = []
        for _ in range(depth):
            following: list[str] = []
            for node_id in frontier:
                for _, triplet in reader.around(node_id):
                    key = _triplet_key(triplet)
                    if triplet[1].label in ignore or key in taken:
                        continue
                    if len(out) >= limit:
                        return out
                    taken.add(key)
                    out.append(triplet)
                    for end in (triplet[0].id, triplet[2].id):
                        if end not in reached:
                            reached.add(end)
                            following.append(end)
            frontier = following
        return out

    def vector_query(self, query: VectorStoreQuery, **kwargs: Any) -> tuple[list[LabelledNode], list[float]]:
        """Entity nodes nearest to ``query.query_embedding`` (the vault's dense recall by vector,
        scores as the vault ranks them: higher is nearer). The vector must come from the vault's
        embedding model (see the module docstring). ``filters`` (``MetadataFilters`` over the nodes'
        properties) and ``node_ids`` narrow the search inside the vault's query (its ``where``)."""
        if query.query_embedding is None:
            raise InvalidInput("query_embedding", "is required: vector_query searches by a query vector")
        if query.doc_ids:
            raise NotSupported(
                "vector_query takes no doc_ids: graph nodes belong to no document (use filters on "
                "their properties, or node_ids)"
            )
        k = query.similarity_top_k
        if not isinstance(k, int) or isinstance(k, bool) or k < 1:
            raise InvalidInput("similarity_top_k", "must be a positive integer")
        parts: list[dict[str, Any]] = []
        if (wanted := to_where(query.filters, lambda key: f"{MARK}.properties.{key}")) is not None:
            parts.append(wanted)
        if query.node_ids:
            parts.append({"key": {"$in": [node_key(i) for i in query.node_ids]}})
        where = (parts[0] if len(parts) == 1 else {"$and": parts}) if parts else None
        try:
            found = self.vault.recall_by_vector(
                query.query_embedding,
                limit=min(k, 1_000),
                category=self.node_category,
                type=ENTITY_TYPE,
                trust_weight=0.0,
                reinforce=False,
                where=where,
                curate=False,
                **self._view,
            )
        except NotSupported:
            if not any(True for _ in _Reader(self).scan(self.node_category, limit=1)):
                return [], []  # an empty graph: nothing to be near (and no vectors yet)
            raise
        reader = _Reader(self)
        nodes: list[LabelledNode] = []
        scores: list[float] = []
        for item in found.items:
            node = reader.node_of(item)
            if node is not None:
                nodes.append(node)
                scores.append(float(item.score))
        return nodes, scores

    def structured_query(self, query: str, param_map: dict[str, Any] | None = None) -> Any:
        raise NotSupported(
            "the vault has no graph query language (Cypher or other): supports_structured_queries is False; "
            "use get_triplets, get_rel_map or vector_query, or Vault.traverse"
        )

    # --- writing ------------------------------------------------------------------------------

    def upsert_nodes(self, nodes: Sequence[LabelledNode]) -> None:
        """Create or replace nodes by id (a later duplicate in the batch wins)."""
        self._writable()
        items: dict[str, dict[str, Any]] = {}
        for n, node in enumerate(nodes):
            item = self._node_item(node, f"nodes.{n}")  # every node is checked before anything is written
            items.pop(item["key"], None)
            items[item["key"]] = item
        self._remember(list(items.values()))

    def upsert_relations(self, relations: list[Relation]) -> None:
        """Create or replace relations by (source, label, target); an end that is no node yet becomes
        an ``EntityNode`` named by its id, as ``SimplePropertyGraphStore`` does."""
        self._writable()
        checked: dict[str, Relation] = {}
        for n, rel in enumerate(relations):
            if not isinstance(rel, Relation):
                raise InvalidInput(f"relations.{n}", "must be a llama_index Relation")
            if not isinstance(rel.label, str) or not rel.label.strip() or len(rel.label) > MAX_LABEL_CHARS:
                raise InvalidInput(
                    f"relations.{n}.label",
                    f"must be non-blank text of at most {MAX_LABEL_CHARS} "
                    "characters (a vault link's relation)",
                )
            key = relation_key(rel.source_id, rel.label, rel.target_id)
            checked.pop(key, None)
            checked[key] = rel
        if not checked:
            return
        reader = _Reader(self)
        ends = list(dict.fromkeys(end for rel in checked.values() for end in (rel.source_id, rel.target_id)))
        missing = [end for end in ends if reader.node_entity(end) is None]
        items = [self._node_item(EntityNode(name=end), "relations") for end in missing]
        items += [self._relation_item(rel, key) for key, rel in checked.items()]
        written = self._remember(items)
        node_cat, rel_cat = self.node_category, self.relation_category
        by_key = {(entity.category, entity.key): entity for entity in written}
        for key, rel in checked.items():
            source = by_key.get((node_cat, node_key(rel.source_id))) or reader.node_entity(rel.source_id)
            target = by_key.get((node_cat, node_key(rel.target_id))) or reader.node_entity(rel.target_id)
            if source is None or target is None:  # deleted by another writer meanwhile
                raise NotFound(
                    f"relation {rel.source_id!r} -{rel.label}-> {rel.target_id!r} lost an end while written"
                )
            if source.id == target.id:  # a vault link needs two entities: loop through the relation's own
                target = by_key[(rel_cat, key)]
            self.vault.link(
                source.id, target.id, rel.label, agent_id=self.agent_id, workspace_hash=self.workspace_hash
            )

    def delete(
        self,
        entity_names: list[str] | None = None,
        relation_names: list[str] | None = None,
        properties: dict[str, Any] | None = None,
        ids: list[str] | None = None,
    ) -> None:
        """Archive what matches any one argument: the nodes named in ``entity_names`` or ``ids``, or
        having any of ``properties``, each with every relation it has; the relations labelled one of
        ``relation_names`` or having any of ``properties``. (``SimplePropertyGraphStore`` also drops
        both ends of a matched relation, and every node when only relations are named; this store
        deletes only what was asked for.) The history keeps all of it."""
        self._writable()
        reader = _Reader(self)
        doomed_nodes: dict[int, str] = {}
        for node_id in dict.fromkeys([*(entity_names or []), *(ids or [])]):
            entity = reader.node_entity(node_id)
            if entity is not None:
                doomed_nodes[entity.id] = node_id
        if properties:
            for entity in reader.scan(self.node_category):
                node = reader.node_of(entity)
                if node is not None and _properties_match(node.properties, properties):
                    doomed_nodes[entity.id] = node.id
        doomed_rels: dict[str, Triplet] = {}
        if relation_names or properties:
            for entity in reader.scan(self.relation_category):
                triplet = reader.triplet_of(entity)
                if triplet is not None and (
                    (relation_names and triplet[1].label in relation_names)
                    or (properties and _properties_match(triplet[1].properties, properties))
                ):
                    doomed_rels[_triplet_key(triplet)] = triplet
        for node_id in doomed_nodes.values():
            for _, triplet in reader.around(node_id):
                doomed_rels[_triplet_key(triplet)] = triplet
        for key, (source, rel, target) in doomed_rels.items():
            a, b = reader.node_entity(source.id), reader.node_entity(target.id)
            rel_entity = reader.relation_entity(key)
            if a is not None and b is not None:
                other = rel_entity if a.id == b.id else b
                if other is not None:
                    self.vault.unlink(
                        a.id, other.id, rel.label, agent_id=self.agent_id, workspace_hash=self.workspace_hash
                    )
            if rel_entity is not None:
                self.vault.forget(rel_entity.id, agent_id=self.agent_id, workspace_hash=self.workspace_hash)
        for entity_id in doomed_nodes:
            self.vault.forget(entity_id, agent_id=self.agent_id, workspace_hash=self.workspace_hash)

    def _writable(self) -> None:
        if self.as_of_unix_ms is not None:
            raise NotSupported(
                "this store shows the graph as of a past instant (as_of_unix_ms) and is read-only"
            )

    def _node_item(self, node: Any, field: str) -> dict[str, Any]:
        if isinstance(node, ChunkNode):
            kind, content, type_ = "chunk", node.text, CHUNK_TYPE
        elif isinstance(node, EntityNode):
            kind, content, type_ = "entity", node.name, ENTITY_TYPE
        else:
            raise InvalidInput(field, "must be a llama_index EntityNode or ChunkNode")
        if not isinstance(node.properties, dict):
            raise InvalidInput(f"{field}.properties", "must be a dict")
        # Name or text lives in content; the body keeps the rest. A chunk's id is kept as computed
        # here: without an id_, LlamaIndex derives it from Python's per-process string hash.
        data = {"kind": kind, "id": node.id, "label": node.label, "properties": node.properties}
        return {
            "category": self.node_category,
            "key": node_key(node.id),
            "content": content,
            "type": type_,
            "body": {MARK: data},
            "source": "llamaindex",
            **self._scope,
        }

    def _relation_item(self, rel: Relation, key: str) -> dict[str, Any]:
        data = {
            "kind": "relation",
            "label": rel.label,
            "source_id": rel.source_id,
            "target_id": rel.target_id,
            "properties": rel.properties,
        }
        return {
            "category": self.relation_category,
            "key": key,
            "content": f"{rel.source_id} {rel.label} {rel.target_id}",
            "type": RELATION_TYPE,
            "body": {MARK: data},
            "source": "llamaindex",
            **self._scope,
        }

    def _remember(self, items: list[dict[str, Any]]) -> list[Entity]:
        written: list[Entity] = []
        for start in range(0, len(items), MAX_BATCH):
            written += self.vault.remember_many(items[start : start + MAX_BATCH])
        return written

    # --- async: the vault's calls run in a worker thread, off the event loop --------------------

    async def aget(
        self, properties: dict[str, Any] | None = None, ids: list[str] | None = None
    ) -> list[LabelledNode]:
        return await asyncio.to_thread(self.get, properties, ids)

    async def aget_triplets(
        self,
        entity_names: list[str] | None = None,
        relation_names: list[str] | None = None,
        properties: dict[str, Any] | None = None,
        ids: list[str] | None = None,
    ) -> list[Triplet]:
        return await asyncio.to_thread(self.get_triplets, entity_names, relation_names, properties, ids)

    async def aget_rel_map(
        self,
        graph_nodes: list[LabelledNode],
        depth: int = 2,
        limit: int = 30,
        ignore_rels: list[str] | None = None,
    ) -> list[Triplet]:
        return await asyncio.to_thread(self.get_rel_map, graph_nodes, depth, limit, ignore_rels)

    async def aupsert_nodes(self, nodes: list[LabelledNode]) -> None:
        await asyncio.to_thread(self.upsert_nodes, nodes)

    async def aupsert_relations(self, relations: list[Relation]) -> None:
        await asyncio.to_thread(self.upsert_relations, relations)

    async def adelete(
        self,
        entity_names: list[str] | None = None,
        relation_names: list[str] | None = None,
        properties: dict[str, Any] | None = None,
        ids: list[str] | None = None,
    ) -> None:
        await asyncio.to_thread(self.delete, entity_names, relation_names, properties, ids)

    async def avector_query(
        self, query: VectorStoreQuery, **kwargs: Any
    ) -> tuple[list[LabelledNode], list[float]]:
        return await asyncio.to_thread(self.vector_query, query, **kwargs)

    async def astructured_query(self, query: str, param_map: dict[str, Any] | None = None) -> Any:
        return self.structured_query(query, param_map)


def _triplet_key(triplet: Triplet) -> str:
    return relation_key(triplet[0].id, triplet[1].label, triplet[2].id)


class _Reader:
    """One read of the graph: lookups by id are cached for its length (a walk meets nodes often)."""

    def __init__(self, store: PerseusVaultPropertyGraphStore) -> None:
        self.store = store
        self.vault = store.vault
        self._entities: dict[tuple[str, str], Entity | None] = {}

    def scan(self, category: str, limit: int | None = None) -> Iterator[Entity]:
        cursor: str | None = None
        seen = 0
        while True:
            page = self.vault.scan(
                cursor=cursor, limit=PAGE if limit is None else limit, category=category, **self.store._view
            )
            for entity in page.items:
                yield entity
                seen += 1
                if limit is not None and seen >= limit:
                    return
            if not page.has_more or page.next_cursor is None:
                return
            cursor = page.next_cursor

    def _lookup(self, category: str, key: str) -> Entity | None:
        if (category, key) in self._entities:
            return self._entities[(category, key)]
        agent, workspace = self.store.agent_id, self.store.workspace_hash
        try:
            if self.store.as_of_unix_ms is None:
                page = self.vault.history(category, key, limit=1, agent_id=agent, workspace_hash=workspace)
                entity = page.items[0] if page.items else None
            else:
                entity = self.vault.as_of(
                    category, key, self.store.as_of_unix_ms, agent_id=agent, workspace_hash=workspace
                )
        except NotFound:
            entity = None
        if entity is not None and entity.status != "active":
            entity = None
        self._entities[(category, key)] = entity
        return entity

    def node_entity(self, node_id: str) -> Entity | None:
        entity = self._lookup(self.store.node_category, node_key(node_id))
        # a hashed key stands for exactly one id; check it, and skip entities written by others
        if entity is None or _mark(entity).get("id") != node_id:
            return None
        return entity

    def relation_entity(self, key: str) -> Entity | None:
        return self._lookup(self.store.relation_category, key)

    def nodes(self, ids: list[str]) -> list[Entity]:
        return [e for e in (self.node_entity(i) for i in dict.fromkeys(ids)) if e is not None]

    def node_of(self, entity: Entity) -> LabelledNode | None:
        data = _mark(entity)
        if entity.category != self.store.node_category or data.get("kind") not in ("entity", "chunk"):
            return None  # not a node this store wrote
        properties = dict(data.get("properties") or {})
        if data["kind"] == "chunk":
            return ChunkNode(text=entity.content, id_=data["id"], label=data["label"], properties=properties)
        return EntityNode(name=entity.content, label=data["label"], properties=properties)

    def triplet_of(self, entity: Entity) -> Triplet | None:
        """The triplet a relation entity stands for, when both its ends are visible."""
        data = _mark(entity)
        if data.get("kind") != "relation":
            return None
        source, target = self.node_entity(data["source_id"]), self.node_entity(data["target_id"])
        if source is None or target is None:
            return None
        a, b = self.node_of(source), self.node_of(target)
        if a is None or b is None:
            return None
        rel = Relation(
            label=data["label"],
            source_id=data["source_id"],
            target_id=data["target_id"],
            properties=dict(data.get("properties") or {}),
        )
        return a, rel, b

    def around(self, node_id: str) -> list[tuple[int, Triplet]]:
        """Every relation of one node (either direction), with its relation entity's id for order."""
        start = self.node_entity(node_id)
        if start is None:
            return []
        walk = self.vault.traverse(start.id, depth=1, direction="both", **self.store._view)
        near = {n.entity.id: n.entity for n in walk.nodes}
        out: list[tuple[int, Triplet]] = []
        for edge in walk.edges:
            a, b = near.get(edge.from_id), near.get(edge.to_id)
            if a is None or b is None:
                continue
            if b.category == self.store.relation_category:  # a self-loop goes through its relation entity
                rel_entity: Entity | None = b
                data = _mark(b)
                if data.get("source_id") != node_id or data.get("target_id") != node_id:
                    continue
            else:
                na, nb = _mark(a).get("id"), _mark(b).get("id")
                if a.category != self.store.node_category or b.category != self.store.node_category:
                    continue
                rel_entity = self.relation_entity(relation_key(str(na), edge.relation, str(nb)))
            triplet = self.triplet_of(rel_entity) if rel_entity is not None else None
            if rel_entity is not None and triplet is not None:
                out.append((rel_entity.id, triplet))
        return out


def _mark(entity: Entity) -> dict[str, Any]:
    data = entity.body.get(MARK)
    return data if isinstance(data, dict) else {}


class PerseusVaultGraphStore(OwnsItsVault, SimpleGraphStore):
    """LlamaIndex's older triplet store (``GraphStore``, what ``StorageContext`` holds as ``graph_store``) kept
    in the vault's key-value collections, so that ``storage_context.persist()`` writes no
    ``graph_store.json``: each subject's triplets are one value (collection ``<namespace>/graph``),
    written when they change; ``persist`` has nothing left to write. Reads are ``SimpleGraphStore``'s,
    over the triplets loaded when the store is made. (``PropertyGraphIndex`` uses
    :class:`PerseusVaultPropertyGraphStore`, which keeps a graph in the vault's own entities and links.)
    """

    @strict
    def __init__(
        self,
        vault: VaultLike,
        *,
        namespace: str = "llamaindex",
        agent_id: str | None = None,
        workspace_hash: str | None = None,
    ) -> None:
        super().__init__()
        self.vault, self._owned_vault = open_vault(vault)
        self.values = KeyValues(self.vault, agent_id=agent_id, workspace_hash=workspace_hash)
        self.collection = f"{namespace}/graph"
        self._data.graph_dict = {
            subj: list(value["triplets"]) for subj, value in self.values.get_all(self.collection).items()
        }

    def upsert_triplet(self, subj: str, rel: str, obj: str) -> None:
        super().upsert_triplet(subj, rel, obj)
        self.values.put(self.collection, subj, {"triplets": self._data.graph_dict[subj]})

    def delete(self, subj: str, rel: str, obj: str) -> None:
        """Delete one triplet. (``SimpleGraphStore.delete`` compares a tuple with its lists and so never
        deletes; this one does.)"""
        kept = [t for t in self._data.graph_dict.get(subj, []) if list(t) != [rel, obj]]
        if kept:
            self._data.graph_dict[subj] = kept
            self.values.put(self.collection, subj, {"triplets": kept})
        else:
            self._data.graph_dict.pop(subj, None)
            self.values.delete(self.collection, subj)

    def persist(self, persist_path: str = "", fs: Any = None) -> None:
        """Nothing to write: every change is in the vault already."""
