"""``PerseusVaultVectorStore``: the vault as a LlamaIndex vector store (docs/llamaindex.md), so that
``VectorStoreIndex`` keeps its nodes in the vault: ``StorageContext.from_defaults(vector_store=...)``.

How nodes map onto memories: a store owns one vault category (``collection``, default ``llamaindex``) in
one scope (``agent_id`` / ``workspace_hash``). A node is the entity whose key is its node id, whose
content is its text (what recall searches and the vault's model embeds), and whose body keeps its
``metadata`` (what ``MetadataFilters`` test), its ``ref_doc_id`` and the rest of the node as LlamaIndex
serializes it. Adding a node id again writes a new version; ``delete(ref_doc_id)``, ``delete_nodes`` and
``clear`` purge (the nodes and their history leave the vault).

Vectors: the vault keeps one vector per memory, made by its own model from the node's text, so the
index's ``embed_model`` must be that model (``PerseusVaultEmbedding(vault)``, or a vault opened with
``LlamaIndexEmbedder(embed_model)``). ``add`` checks it: the first node's embedding is compared with the
vault model's vector of the same text, and another model is refused (``Conflict``) before anything is
written, when the index is built. A query vector is checked the same way, once, against its text.

Queries: ``similarity_top_k`` hits; ``filters`` (every ``FilterOperator`` but the substring ones, every
condition, nested) become recall's ``where`` and apply inside the query; ``doc_ids`` / ``node_ids``
narrow it; ``where_document`` (``query(q, where_document=...)``, a retriever's ``vector_store_kwargs``, as
LlamaIndex's Chroma store takes it: ``{"$contains": "text"}``, ``$not_contains``, ``$and`` / ``$or``) tests
the nodes' text, in ``delete_nodes`` too. Modes: ``default`` (the query vector, ``recall_by_vector``),
``text_search`` (keyword, BM25) and ``hybrid`` (keyword and meaning fused; ``alpha`` weighs them, 0 keyword .. 1 dense). Other modes are
refused with :class:`NotSupported`. Scores are recall's (docs/recall.md).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Iterator, Sequence
from typing import Any, Literal

import numpy as np
from llama_index.core.bridge.pydantic import ConfigDict, PrivateAttr
from llama_index.core.schema import BaseNode, MetadataMode
from llama_index.core.vector_stores.types import (
    BasePydanticVectorStore,
    FilterCondition,
    FilterOperator,
    MetadataFilter,
    MetadataFilters,
    VectorStoreQuery,
    VectorStoreQueryMode,
    VectorStoreQueryResult,
)
from llama_index.core.vector_stores.utils import metadata_dict_to_node, node_to_metadata_dict

from perseus_vault_core import (
    MAX_KEY_CHARS,
    MAX_LIMIT,
    Conflict,
    Entity,
    InvalidInput,
    NotSupported,
    RecallItem,
    Vault,
)

from ..arguments import OwnsItsVault, VaultLike, document_where, strict, vault_from

NODE_TYPE = "llamaindex_node"
SAME_MODEL = 0.98  # the cosine above which an embedding of a text is the vault model's (the same model: 1.0)
Mode = Literal["fts5", "dense", "hybrid"]
MODES: dict[VectorStoreQueryMode, Mode] = {
    VectorStoreQueryMode.DEFAULT: "dense",
    VectorStoreQueryMode.TEXT_SEARCH: "fts5",
    VectorStoreQueryMode.HYBRID: "hybrid",
}
_ORDER = {
    FilterOperator.EQ: "$eq",
    FilterOperator.NE: "$ne",
    FilterOperator.GT: "$gt",
    FilterOperator.GTE: "$gte",
    FilterOperator.LT: "$lt",
    FilterOperator.LTE: "$lte",
    FilterOperator.IN: "$in",
    FilterOperator.NIN: "$nin",
}


# --- MetadataFilters as recall's where ----------------------------------------------------------


def to_where(filters: Any, field: Callable[[str], str], name: str = "filters") -> dict[str, Any] | None:
    """LlamaIndex ``MetadataFilters`` as a vault ``where`` (docs/filters.md), each key named by ``field``;
    ``None`` for no filter. An operator the vault cannot apply is refused, naming where it is."""
    if filters is None:
        return None
    if not isinstance(filters, MetadataFilters):
        raise InvalidInput(name, f"must be LlamaIndex MetadataFilters, not {type(filters).__name__}")
    return _group(filters, field, name) if filters.filters else None


def _group(filters: MetadataFilters, field: Callable[[str], str], at: str) -> dict[str, Any]:
    parts = [
        _group(f, field, f"{at}.filters[{i}]")
        if isinstance(f, MetadataFilters)
        else _condition(f, field, f"{at}.filters[{i}]")
        for i, f in enumerate(filters.filters)
    ]
    condition = filters.condition or FilterCondition.AND
    if not parts:
        return {}
    if condition == FilterCondition.AND:
        return parts[0] if len(parts) == 1 else {"$and": parts}
    either = parts[0] if len(parts) == 1 else {"$or": parts}
    if condition == FilterCondition.OR:
        return either
    return {"$not": either}  # NOT: none of them holds, as LlamaIndex's own stores read it


def _condition(f: MetadataFilter, field: Callable[[str], str], at: str) -> dict[str, Any]:
    key, op, value = field(f.key), f.operator, f.value
    many = value if isinstance(value, list) else None
    if op in (FilterOperator.IN, FilterOperator.NIN, FilterOperator.ANY, FilterOperator.ALL) and many is None:
        raise InvalidInput(f"{at}.value", f"must be a list for the operator {op.value!r}")
    if op in _ORDER:
        return {key: {_ORDER[op]: value}}
    if op == FilterOperator.ANY:  # a list field holding any of the values
        return {key: {"$in": many}}
    if op == FilterOperator.ALL:  # ... holding every one of them
        return {"$and": [{key: {"$eq": v}} for v in many or []]} if many else {}
    if op == FilterOperator.CONTAINS:  # a list field holding the value
        return {key: {"$eq": value}}
    if (
        op == FilterOperator.IS_EMPTY
    ):  # missing, null, "", or [] (a list holding no string, number or boolean)
        return {
            "$or": [
                {key: {"$exists": False}},
                {key: {"$eq": ""}},
                {
                    "$and": [
                        {key: {"$exists": True}},
                        {
                            "$not": {
                                "$or": [
                                    {key: {"$gte": ""}},
                                    {key: {"$gte": -1e308}},
                                    {key: {"$in": [True, False]}},
                                ]
                            }
                        },
                    ]
                },
            ]
        }
    if op in (
        FilterOperator.TEXT_MATCH,
        FilterOperator.TEXT_MATCH_INSENSITIVE,
    ):  # a text field holding the text
        if not isinstance(value, str) or not value:
            raise InvalidInput(f"{at}.value", f"must be a non-empty string for the operator {op.value!r}")
        return {key: {"$substring" if op == FilterOperator.TEXT_MATCH else "$isubstring": value}}
    raise NotSupported(f"{at}: the operator {op.value!r} is not one the vault's vector store knows")


# --- the store -----------------------------------------------------------------------------------


class PerseusVaultVectorStore(OwnsItsVault, BasePydanticVectorStore):
    """A LlamaIndex vector store whose nodes are memories of one vault category (see the module docstring).

    ``vault``: an open :class:`~perseus_vault_core.Vault`, or a path or ``postgresql://`` URL (the store
    then opens the vault, and closes it in :meth:`close`). ``collection``: the category of its nodes;
    ``agent_id`` / ``workspace_hash``: their scope. Any other argument is refused.

    >>> store = PerseusVaultVectorStore(vault)                                          # doctest: +SKIP
    >>> index = VectorStoreIndex.from_documents(docs, embed_model=PerseusVaultEmbedding(vault),
    ...     storage_context=StorageContext.from_defaults(vector_store=store))            # doctest: +SKIP
    """

    model_config = ConfigDict(arbitrary_types_allowed=True, extra="forbid")

    stores_text: bool = True
    is_embedding_query: bool = True
    flat_metadata: bool = False
    collection: str = "llamaindex"
    agent_id: str | None = None
    workspace_hash: str | None = None
    _vault: Vault = PrivateAttr()
    _owned_vault: Vault | None = PrivateAttr(default=None)
    _checked_model: bool = PrivateAttr(default=False)

    @strict
    def __init__(
        self,
        vault: VaultLike,
        *,
        collection: str = "llamaindex",
        agent_id: str | None = None,
        workspace_hash: str | None = None,
    ) -> None:
        if not isinstance(collection, str) or not collection.strip():
            raise InvalidInput("collection", "must be a non-empty string (the vault category of the nodes)")
        with vault_from(vault) as (opened, owned):
            super().__init__(
                collection=collection,
                agent_id=agent_id,  # type: ignore[call-arg]
                workspace_hash=workspace_hash,
            )
        self._vault, self._owned_vault = opened, owned

    @classmethod
    def from_params(
        cls,
        uri: str,
        *,
        collection: str = "llamaindex",
        agent_id: str | None = None,
        workspace_hash: str | None = None,
    ) -> PerseusVaultVectorStore:
        """A store over the vault at ``uri`` (a file path or a ``postgresql://`` URL), as LlamaIndex's
        database-backed vector stores are made."""
        return cls(uri, collection=collection, agent_id=agent_id, workspace_hash=workspace_hash)

    @classmethod
    def class_name(cls) -> str:
        return "PerseusVaultVectorStore"

    @property
    def client(self) -> Vault:
        return self._vault

    @property
    def vault(self) -> Vault:
        return self._vault

    def _scope(self) -> dict[str, Any]:
        # '' is the unscoped scope itself: without it an unscoped store would read every scope.
        return {
            "category": self.collection,
            "agent_id": self.agent_id or "",
            "workspace_hash": self.workspace_hash or "",
        }

    # --- writing --------------------------------------------------------------------------------

    def add(self, nodes: Sequence[BaseNode], **kwargs: Any) -> list[str]:
        """Write the nodes as memories in one transaction; their ids. The first node's embedding is checked
        against the vault's model first (see the module docstring)."""
        if kwargs:
            raise InvalidInput(next(iter(kwargs)), "is not an argument of add")
        nodes = list(nodes)
        self._check_model(
            next(
                (
                    (n.get_content(metadata_mode=MetadataMode.EMBED), n.embedding)
                    for n in nodes
                    if n.embedding is not None
                ),
                None,
            )
        )
        items = [self._item(node, i) for i, node in enumerate(nodes)]
        if items:
            self._vault.remember_many(items)
        return [node.node_id for node in nodes]

    def _item(self, node: BaseNode, index: int) -> dict[str, Any]:
        if not isinstance(node, BaseNode):
            raise InvalidInput(f"nodes[{index}]", "must be a LlamaIndex node")
        if not node.node_id.strip() or len(node.node_id) > MAX_KEY_CHARS:
            raise InvalidInput(
                f"nodes[{index}].id_", f"must be a non-blank id of at most {MAX_KEY_CHARS} characters"
            )
        stored = node_to_metadata_dict(node, remove_text=True, flat_metadata=False)
        try:
            json.dumps(node.metadata, allow_nan=False)
        except (TypeError, ValueError) as exc:
            raise InvalidInput(f"nodes[{index}].metadata", f"must be JSON: {exc}") from None
        body = {
            "metadata": node.metadata,
            "ref_doc_id": node.ref_doc_id,
            "node_type": stored["_node_type"],
            "node": stored["_node_content"],
        }
        return {
            **self._scope(),
            "key": node.node_id,
            "type": NODE_TYPE,
            "body": body,
            "content": node.get_content(metadata_mode=MetadataMode.NONE),
        }

    def _check_model(self, sample: tuple[str, list[float]] | None) -> None:
        """Refuse an embedding (of ``sample``'s text) that the vault's model would not have made."""
        model = self._vault.embedder
        if sample is None or model is None or self._checked_model:
            return
        text, given = sample
        theirs = np.asarray(given, dtype=np.float32)
        ours = np.asarray(model.embed([text])[0], dtype=np.float32)
        if theirs.shape != ours.shape:
            raise Conflict(
                f"the index's embed_model makes {theirs.size}-dimension vectors but this vault's model "
                f"({model.identity}) makes {ours.size}: use embed_model=PerseusVaultEmbedding(vault), or "
                "open the vault with embedder=LlamaIndexEmbedder(embed_model)"
            )
        cosine = float(np.dot(theirs, ours) / ((np.linalg.norm(theirs) * np.linalg.norm(ours)) or 1.0))
        if cosine < SAME_MODEL:
            raise Conflict(
                f"the index's embed_model is not this vault's model ({model.identity}): the same text "
                f"embeds at cosine {cosine:.2f} to it; use embed_model=PerseusVaultEmbedding(vault), or "
                "open the vault with embedder=LlamaIndexEmbedder(embed_model)"
            )
        self._checked_model = True

    def delete(self, ref_doc_id: str, **delete_kwargs: Any) -> None:
        """Purge every node of the document ``ref_doc_id``."""
        if delete_kwargs:
            raise InvalidInput(next(iter(delete_kwargs)), "is not an argument of delete")
        if not isinstance(ref_doc_id, str):
            raise InvalidInput("ref_doc_id", "must be a string")
        self._purge(self._entities({"ref_doc_id": ref_doc_id}))

    def delete_nodes(
        self, node_ids: list[str] | None = None, filters: MetadataFilters | None = None, **delete_kwargs: Any
    ) -> None:
        """Purge the nodes among ``node_ids`` that pass ``filters`` and ``where_document`` (at least one of
        them must be given)."""
        where_document = delete_kwargs.pop("where_document", None)
        if delete_kwargs:
            raise InvalidInput(next(iter(delete_kwargs)), "is not an argument of delete_nodes")
        if node_ids is None and filters is None and where_document is None:
            raise InvalidInput(
                "node_ids",
                "name the nodes to delete, or give filters or where_document (clear() deletes them all)",
            )
        if node_ids is not None and not node_ids:
            return
        self._purge(self._entities(self._where(node_ids, None, filters, where_document)))

    def clear(self) -> None:
        """Purge every node of the store's collection."""
        self._purge(self._entities(None))

    def _purge(self, entities: list[Entity]) -> None:
        scope = {"agent_id": self.agent_id, "workspace_hash": self.workspace_hash}
        for entity in entities:
            if entity.status != "archived":
                self._vault.forget(entity.id, **scope)
            self._vault.purge(entity.id, **scope)

    # --- reading --------------------------------------------------------------------------------

    def get_nodes(
        self, node_ids: list[str] | None = None, filters: MetadataFilters | None = None
    ) -> list[BaseNode]:
        """The stored nodes among ``node_ids`` (all when ``None``) that pass ``filters``, in the order added."""
        if node_ids is not None and not node_ids:
            return []
        return [_node(entity) for entity in self._entities(self._where(node_ids, None, filters))]

    def _entities(self, where: dict[str, Any] | None) -> list[Entity]:
        return list(self._scan(where))

    def _scan(self, where: dict[str, Any] | None) -> Iterator[Entity]:
        cursor = None
        filters = {**self._scope(), "type": NODE_TYPE, **({"where": where} if where else {})}
        while True:
            page = self._vault.scan(cursor=cursor, limit=MAX_LIMIT, **filters)
            yield from page.items
            if not page.has_more:
                return
            cursor = page.next_cursor

    def _where(
        self,
        node_ids: Sequence[str] | None,
        doc_ids: Sequence[str] | None,
        filters: MetadataFilters | None,
        where_document: Any = None,
    ) -> dict[str, Any] | None:
        parts = []
        for name, field, ids in (("node_ids", "key", node_ids), ("doc_ids", "ref_doc_id", doc_ids)):
            if ids is not None:
                if isinstance(ids, str) or not all(isinstance(i, str) for i in ids):
                    raise InvalidInput(name, "must be a list of ids")
                parts.append({field: {"$in": list(ids)}})
        metadata = to_where(filters, lambda key: f"metadata.{key}")
        if metadata:
            parts.append(metadata)
        if where_document is not None:
            parts.append(document_where(where_document))
        return None if not parts else parts[0] if len(parts) == 1 else {"$and": parts}

    def query(self, query: VectorStoreQuery, **kwargs: Any) -> VectorStoreQueryResult:
        """The ``similarity_top_k`` best nodes for ``query`` in its mode (see the module docstring)."""
        kwargs = dict(kwargs)
        where_document = kwargs.pop("where_document", None)
        if kwargs:
            raise InvalidInput(next(iter(kwargs)), "is not an argument of query (it takes where_document)")
        mode = MODES.get(query.mode)
        if mode is None:
            raise NotSupported(
                f"query mode {query.mode.value!r} is not offered by the vault's vector store: use "
                "'default' (meaning), 'text_search' (keyword) or 'hybrid'"
            )
        top_k = query.hybrid_top_k if mode == "hybrid" and query.hybrid_top_k else query.similarity_top_k
        if isinstance(top_k, bool) or not isinstance(top_k, int) or not 1 <= top_k <= MAX_LIMIT:
            raise InvalidInput("similarity_top_k", f"must be a whole number from 1 to {MAX_LIMIT}")
        args: dict[str, Any] = {**self._scope(), "limit": top_k, "min_score": None, "type": NODE_TYPE}
        # An empty list narrows nothing here: VectorIndexRetriever passes its (empty) node list on every query.
        where = self._where(query.node_ids or None, query.doc_ids or None, query.filters, where_document)
        if where:
            args["where"] = where
        if mode == "hybrid" and query.alpha is not None:
            args["fusion"] = {"keyword_weight": 1.0 - float(query.alpha), "dense_weight": float(query.alpha)}
        args["curate"] = False  # a vector store returns each node by similarity, repeats included
        items = self._recall(mode, query, args)
        return VectorStoreQueryResult(
            nodes=[_node(item) for item in items],
            similarities=[i.score for i in items],
            ids=[item.key for item in items],
        )

    def _recall(self, mode: Mode, query: VectorStoreQuery, args: dict[str, Any]) -> list[RecallItem]:
        if mode == "dense" and query.query_embedding is not None:
            if query.query_str:
                self._check_model((query.query_str, query.query_embedding))
            return self._vault.recall_by_vector(query.query_embedding, **args).items
        if not query.query_str:
            raise InvalidInput("query_str", f"is required in query mode {query.mode.value!r}")
        return self._vault.recall(query.query_str, mode=mode, **args).items

    # --- async: the same, in a worker thread ----------------------------------------------------

    async def async_add(self, nodes: Sequence[BaseNode], **kwargs: Any) -> list[str]:
        return await asyncio.to_thread(self.add, list(nodes), **kwargs)

    async def adelete(self, ref_doc_id: str, **delete_kwargs: Any) -> None:
        await asyncio.to_thread(self.delete, ref_doc_id, **delete_kwargs)

    async def adelete_nodes(
        self, node_ids: list[str] | None = None, filters: MetadataFilters | None = None, **delete_kwargs: Any
    ) -> None:
        await asyncio.to_thread(self.delete_nodes, node_ids, filters, **delete_kwargs)

    async def aget_nodes(
        self, node_ids: list[str] | None = None, filters: MetadataFilters | None = None
    ) -> list[BaseNode]:
        return await asyncio.to_thread(self.get_nodes, node_ids, filters)

    async def aclear(self) -> None:
        await asyncio.to_thread(self.clear)

    async def aquery(self, query: VectorStoreQuery, **kwargs: Any) -> VectorStoreQueryResult:
        return await asyncio.to_thread(self.query, query, **kwargs)


def _node(memory: Entity | RecallItem) -> BaseNode:
    """A stored node back as LlamaIndex made it (its text from the memory's content)."""
    body = memory.body
    return metadata_dict_to_node(
        {"_node_content": body["node"], "_node_type": body["node_type"]}, text=memory.content
    )
