"""``PerseusVaultVectorStore``: the vault as a LangChain ``VectorStore`` (docs/langchain.md), so chains built on
``vectorstore.as_retriever()`` switch over unchanged.

How documents map onto entities: a store owns one category (``collection``, default ``langchain``) in
one scope (``agent_id`` / ``workspace_hash``). A document is the entity whose key is the document's
string id (the caller's, or a fresh UUID), its ``page_content`` the entity's content and its metadata
kept (as JSON) in the entity body under ``metadata``. Adding an id again writes a new version of that
entity (the vault keeps the old one in its history); ``delete`` purges it for good, so no search, no
``get_by_ids`` and no ``include_archived`` recall reaches it again.

Embeddings: by default the vault's own model embeds documents and queries. Pass a LangChain
``Embeddings`` with a path and the vault is opened with it (``LangChainEmbedder``); the vault records
its identity and dimension and refuses to mix them with another model's vectors. A
``PerseusVaultEmbeddings`` is the vault's model itself, recorded under that model's identity, so the
file is read by ``Vault(path)``, the CLI and MCP as it was written.

Scores (``similarity_search_with_score``) are cosine similarities between the query and each document,
in -1..1; relevance scores map them to 0..1 as ``(1 + cosine) / 2``.

Metadata filters (``filter=``) take Chroma's operators: a value, or ``$eq $ne $gt $gte $lt $lte $in $nin
$exists $not`` on a metadata field, and ``$and`` / ``$or`` / ``$not`` over filters. They become the
vault's ``where`` over the metadata (docs/filters.md) and are applied inside the search, so ``k``
documents come back whenever ``k`` match; an operator the vault does not take is refused, naming it. A
function of a ``Document`` is accepted too: it cannot be searched with, so recall's ranking is read in
pages until ``k`` documents pass it. A filter on the documents' text is Chroma's ``where_document``
(``{"$contains": "text"}``, ``{"$not_contains": ...}``, ``$and`` / ``$or`` of them), beside ``filter`` in
every search and in ``delete``, which also takes ``filter`` (or Chroma's ``where``) to delete the
documents that match.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Literal

import numpy as np
from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_core.vectorstores import VectorStore
from langchain_core.vectorstores.utils import maximal_marginal_relevance

from perseus_vault_core import (
    MAX_KEY_CHARS,
    MAX_LIMIT,
    MAX_OFFSET,
    Conflict,
    Embedder,
    Entity,
    InvalidInput,
    NotFound,
    NotSupported,
    RecallItem,
    Vault,
)

from ..arguments import OwnsItsVault, VaultLike, check_recall_params, document_where, open_vault
from .embeddings import (
    LangChainEmbedder,
    PerseusVaultEmbeddings,
    document_vectors,
    query_vector,
    vault_embedder,
)

DOCUMENT_TYPE = "document"
# Recall parameters the store sets itself: its collection and scope, and the hit count of each search.
SET_HERE = ("query", "limit", "offset", "mode", "category", "agent_id", "workspace_hash", "include_archived")
MetadataFilter = dict[str, Any] | Callable[[Document], bool]


class PerseusVaultVectorStore(OwnsItsVault, VectorStore):
    """A LangChain vector store whose documents are entities of one vault category.

    ``vault``: an open :class:`Vault`, or a path (the store then opens the vault, with ``embedding``
    when given, and closes it in :meth:`close`). ``mode``: how ``similarity_search`` ranks (``dense``
    by default; ``hybrid`` or ``fts5`` use the vault's keyword arm too). ``recall_params``: any other
    recall knob or filter (``trust_weight``, ``topic_path``, ``reinforce``, ...) for every search.
    """

    def __init__(
        self,
        vault: VaultLike,
        embedding: Embeddings | None = None,
        *,
        collection: str = "langchain",
        agent_id: str | None = None,
        workspace_hash: str | None = None,
        mode: Literal["fts5", "dense", "hybrid"] = "dense",
        **recall_params: Any,
    ) -> None:
        if not isinstance(collection, str) or not collection.strip():
            raise InvalidInput(
                "collection", "must be a non-empty string (it is the vault category of the documents)"
            )
        if mode not in ("fts5", "dense", "hybrid"):
            raise InvalidInput("mode", "must be 'fts5', 'dense' or 'hybrid'")
        check_recall_params(
            recall_params, SET_HERE, "is set by the vector store itself", own=("embedding", "collection")
        )
        embedder = vault_embedder(embedding) if embedding is not None else None
        if isinstance(vault, Vault) and embedder is not None:
            own = vault.embedder
            if not (isinstance(own, LangChainEmbedder) and own.embeddings is embedding) and not (
                isinstance(embedding, PerseusVaultEmbeddings)
                and own is not None
                and own.identity == embedder.identity
            ):
                raise InvalidInput(
                    "embedding",
                    "this vault embeds with another model; pass a path instead, or open "
                    "the Vault with embedder=LangChainEmbedder(embedding)",
                )
        self.vault, self._owned_vault = open_vault(vault, embedder=embedder)
        self.collection = collection
        self.agent_id = agent_id
        self.workspace_hash = workspace_hash
        self.mode = mode
        self.recall_params = recall_params
        self._embedding = embedding
        self._checked_model = False

    # --- housekeeping ---------------------------------------------------------------------------

    @property
    def embeddings(self) -> Embeddings | None:
        if self._embedding is not None:
            return self._embedding
        embedder = self.vault.embedder
        if isinstance(embedder, LangChainEmbedder):
            return embedder.embeddings
        return PerseusVaultEmbeddings(embedder=embedder) if embedder is not None else None

    def _embedder(self) -> Embedder:
        embedder = self.vault.embedder
        if embedder is None:
            raise NotSupported(
                "this vault was opened without an embedder (embedder=False): "
                "vector search needs one; use mode='fts5' for keyword search"
            )
        return embedder

    def _scope(self) -> dict[str, Any]:
        # '' is the unscoped scope itself: without it an unscoped store would read every scope.
        return {
            "agent_id": self.agent_id or "",
            "workspace_hash": self.workspace_hash or "",
            "category": self.collection,
        }

    def _guard(self) -> None:
        """A query vector carries no model name: before searching with one, check that the vault's
        vectors come from this store's embedder (as the vault itself does for text queries)."""
        if self._checked_model or self.vault.embedder is None:
            return
        stats = self.vault.stats()
        if stats.embedding_model is None:
            return  # no vectors yet: nothing to mix with
        embedder = self.vault.embedder
        if (stats.embedding_model, stats.embedding_dimension) != (embedder.identity, embedder.dimension):
            raise Conflict(
                f"this vault's vectors come from {stats.embedding_model} ({stats.embedding_dimension} "
                f"dimensions) but the store embeds with {embedder.identity} ({embedder.dimension} "
                "dimensions); run `perseus-vault embed --reembed` to switch models"
            )
        self._checked_model = True

    def _select_relevance_score_fn(self) -> Callable[[float], float]:
        return lambda cosine: max(0.0, min(1.0, (1.0 + cosine) / 2.0))

    # --- writing --------------------------------------------------------------------------------

    def add_texts(
        self,
        texts: Iterable[str],
        metadatas: list[dict[str, Any]] | None = None,
        *,
        ids: list[str] | None = None,
        **kwargs: Any,
    ) -> list[str]:
        """Write the texts as entities in one transaction; returns their ids (the given ones kept)."""
        if kwargs:
            raise InvalidInput(next(iter(kwargs)), "is not an add_texts argument")
        batch = list(texts)
        if metadatas is not None and len(metadatas) != len(batch):
            raise InvalidInput("metadatas", f"has {len(metadatas)} entries for {len(batch)} texts")
        if ids is not None and len(ids) != len(batch):
            raise InvalidInput("ids", f"has {len(ids)} entries for {len(batch)} texts")
        keys = [self._id(ids[i] if ids else None, i) for i in range(len(batch))]
        items = []
        for i, (text, key) in enumerate(zip(batch, keys)):
            if not isinstance(text, str):
                raise InvalidInput(f"texts[{i}]", "must be a string")
            metadata = _json_metadata(metadatas[i] if metadatas else {}, i)
            items.append(
                {
                    "category": self.collection,
                    "key": key,
                    "content": text,
                    "type": DOCUMENT_TYPE,
                    "body": {"metadata": metadata},
                    "agent_id": self.agent_id,
                    "workspace_hash": self.workspace_hash,
                }
            )
        if items:
            self.vault.remember_many(items)
        return keys

    @staticmethod
    def _id(given: str | None, index: int) -> str:
        if given is None:
            return str(uuid.uuid4())
        if not isinstance(given, str) or not given.strip() or len(given) > MAX_KEY_CHARS:
            raise InvalidInput(
                f"ids[{index}]", f"must be a non-blank string of at most {MAX_KEY_CHARS} characters"
            )
        return given

    def delete(
        self,
        ids: list[str] | None = None,
        *,
        filter: dict[str, Any] | None = None,
        where: dict[str, Any] | None = None,
        where_document: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> bool | None:
        """Delete documents for good (purged from the vault with their history): those named by ``ids``
        (unknown ones are skipped), or those that match a metadata ``filter`` (Chroma calls it ``where``)
        and/or ``where_document``, as a search reads them; with both, the named ones that match."""
        if kwargs:
            raise InvalidInput(
                next(iter(kwargs)), "is not a delete argument (it takes ids, filter or where, where_document)"
            )
        if filter is not None and where is not None:
            raise InvalidInput("where", "is Chroma's name for filter: give one of them")
        conditions = self._conditions(filter if filter is not None else where, where_document)
        if ids is None and conditions is None:
            raise InvalidInput(
                "ids",
                "name the documents to delete, or give a filter or where_document "
                "(deleting a whole collection is not offered)",
            )
        if ids is None:
            targets = self._matching(conditions)
        else:
            targets = self._entities(ids, active_only=False)
            if conditions is not None:  # the named ones that match, asked a bounded $in at a time
                keys = [entity.key for entity in targets]
                kept = {
                    e.key
                    for start in range(0, len(keys), MAX_LIMIT)
                    for e in self._matching(
                        {"$and": [{"key": {"$in": keys[start : start + MAX_LIMIT]}}, conditions]}
                    )
                }
                targets = [entity for entity in targets if entity.key in kept]
        for entity in targets:
            if entity.status != "archived":
                self.vault.forget(entity.id)
            self.vault.purge(entity.id)
        return True

    def _conditions(
        self, filter: dict[str, Any] | None, where_document: dict[str, Any] | None
    ) -> dict[str, Any] | None:
        """A metadata filter and a document filter as one ``where`` (``None``: neither)."""
        if filter is not None and not isinstance(filter, dict):
            raise InvalidInput("filter", "must be a dict of metadata conditions")
        parts = ([metadata_where(filter)] if filter else []) + (
            [document_where(where_document)] if where_document is not None else []
        )
        return None if not parts else parts[0] if len(parts) == 1 else {"$and": parts}

    def _matching(self, where: dict[str, Any] | None) -> list[Entity]:
        """Every document of the store (archived ones too) that ``where`` keeps."""
        found, cursor = [], None
        filters: dict[str, Any] = {**self._scope(), "type": DOCUMENT_TYPE, "include_archived": True}
        if where:
            filters["where"] = where
        while True:
            try:
                page = self.vault.scan(cursor=cursor, limit=MAX_LIMIT, **filters)
            except InvalidInput as error:
                raise _as_filter(error) from None
            found.extend(page.items)
            if not page.has_more:
                return found
            cursor = page.next_cursor

    # --- reading by id --------------------------------------------------------------------------

    def get_by_ids(self, ids: Sequence[str], /) -> list[Document]:
        return [self._document(entity) for entity in self._entities(ids, active_only=True)]

    def _entities(self, ids: Sequence[str], *, active_only: bool) -> list[Entity]:
        out = []
        for i, key in enumerate(ids):
            if not isinstance(key, str):
                raise InvalidInput(f"ids[{i}]", "must be a string")
            if not key.strip() or len(key) > MAX_KEY_CHARS:
                continue  # no document can have such an id
            try:
                head = self.vault.history(
                    self.collection, key, agent_id=self.agent_id, workspace_hash=self.workspace_hash, limit=1
                ).items[0]
            except NotFound:
                continue
            if not active_only or head.status == "active":
                out.append(head)
        return out

    @staticmethod
    def _document(entity: Entity) -> Document:
        metadata = entity.body.get("metadata")
        return Document(
            id=entity.key,
            page_content=entity.content,
            metadata=dict(metadata) if isinstance(metadata, dict) else {},
        )

    # --- searching ------------------------------------------------------------------------------

    def _search(
        self,
        query: str | None,
        vector: np.ndarray | None,
        k: int,
        filter: MetadataFilter | None,
        params: dict[str, Any],
    ) -> list[RecallItem]:
        """Up to ``k`` hits for a text query or a vector; a metadata ``filter`` dict is the search's
        ``where``; a function pages through recall's ranking until ``k`` documents pass (or the ranking
        ends, or recall's offset cap is reached)."""
        if isinstance(k, bool) or not isinstance(k, int) or k < 1:
            raise InvalidInput("k", "must be a positive whole number")
        if filter is not None and not callable(filter) and not isinstance(filter, dict):
            raise InvalidInput("filter", "must be a dict of metadata conditions or a function of a Document")
        for name in SET_HERE:
            if name in params:
                raise InvalidInput(name, "is set by the vector store itself")
        params = dict(params)
        where_document = params.pop("where_document", None)
        # A vector store answers k nearest documents as they are (repeats included, no relevance cut),
        # unless its caller asks otherwise through recall_params or the call.
        args = {"curate": False, "min_score": None, **self.recall_params, **params, **self._scope()}
        conditions = self._conditions(filter if isinstance(filter, dict) else None, where_document)
        if conditions is not None:  # applied inside the search
            given = args.get("where")
            args["where"] = {"$and": [given, conditions]} if given else conditions
        if isinstance(filter, dict):
            filter = None
        if vector is not None:
            self._guard()
        page = min(MAX_LIMIT, k if filter is None else max(4 * k, 50))
        found: list[RecallItem] = []
        offset = 0
        while len(found) < k:
            try:
                if vector is not None:
                    result = self.vault.recall_by_vector(vector, limit=page, offset=offset, **args)
                else:
                    assert query is not None
                    result = self.vault.recall(query, mode=self.mode, limit=page, offset=offset, **args)
            except InvalidInput as error:
                raise _as_filter(error) from None
            except NotSupported:
                if not self.vault.scan(limit=1, **self._scope()).items:
                    return []  # an empty collection has nothing to search yet, whatever the mode
                raise
            found.extend(item for item in result.items if _passes(filter, item))
            offset += page
            if len(result.items) < page or offset > MAX_OFFSET:
                break
        return found[:k]

    def _with_scores(self, items: list[RecallItem], query: np.ndarray | None) -> list[tuple[Document, float]]:
        docs = [_document_of(item) for item in items]
        if query is None or not items:
            return [(doc, item.score) for doc, item in zip(docs, items)]
        rows = document_vectors(self._embedder(), [item.content for item in items])
        return [(doc, float(np.dot(row, query))) for doc, row in zip(docs, rows)]

    def _query_vector(self, query: str) -> np.ndarray | None:
        return query_vector(self.vault.embedder, query) if self.vault.embedder is not None else None

    def similarity_search(
        self, query: str, k: int = 4, filter: MetadataFilter | None = None, **kwargs: Any
    ) -> list[Document]:
        if self.mode == "dense":
            return self.similarity_search_by_vector(list(self._vector_for(query)), k, filter=filter, **kwargs)
        return [_document_of(item) for item in self._search(query, None, k, filter, kwargs)]

    def _vector_for(self, query: str) -> np.ndarray:
        if not isinstance(query, str):
            raise InvalidInput("query", "must be a string")
        return query_vector(self._embedder(), query)

    def similarity_search_with_score(
        self, query: str, k: int = 4, filter: MetadataFilter | None = None, **kwargs: Any
    ) -> list[tuple[Document, float]]:
        """Documents with their cosine similarity to ``query`` (the vault's recall score in a
        keyword-only vault, which has no vectors to compare)."""
        if self.mode == "dense":
            vector = self._vector_for(query)
            return self._with_scores(self._search(None, vector, k, filter, kwargs), vector)
        items = self._search(query, None, k, filter, kwargs)
        return self._with_scores(items, self._query_vector(query))

    def similarity_search_by_vector(
        self, embedding: list[float], k: int = 4, filter: MetadataFilter | None = None, **kwargs: Any
    ) -> list[Document]:
        vector = np.asarray(embedding, dtype=np.float32)
        return [_document_of(item) for item in self._search(None, vector, k, filter, kwargs)]

    def similarity_search_with_score_by_vector(
        self, embedding: list[float], k: int = 4, filter: MetadataFilter | None = None, **kwargs: Any
    ) -> list[tuple[Document, float]]:
        vector = np.asarray(embedding, dtype=np.float32)
        items = self._search(None, vector, k, filter, kwargs)
        norm = float(np.linalg.norm(vector))
        return self._with_scores(items, vector / norm if norm else None)

    def max_marginal_relevance_search(
        self,
        query: str,
        k: int = 4,
        fetch_k: int = 20,
        lambda_mult: float = 0.5,
        filter: MetadataFilter | None = None,
        **kwargs: Any,
    ) -> list[Document]:
        return self.max_marginal_relevance_search_by_vector(
            list(self._vector_for(query)), k, fetch_k, lambda_mult, filter=filter, **kwargs
        )

    def max_marginal_relevance_search_by_vector(
        self,
        embedding: list[float],
        k: int = 4,
        fetch_k: int = 20,
        lambda_mult: float = 0.5,
        filter: MetadataFilter | None = None,
        **kwargs: Any,
    ) -> list[Document]:
        """``fetch_k`` candidates by similarity, then ``k`` of them chosen for relevance and diversity."""
        if isinstance(fetch_k, bool) or not isinstance(fetch_k, int) or fetch_k < 1:
            raise InvalidInput("fetch_k", "must be a positive whole number")
        if (
            isinstance(lambda_mult, bool)
            or not isinstance(lambda_mult, (int, float))
            or not 0 <= lambda_mult <= 1
        ):
            raise InvalidInput("lambda_mult", "must be a number from 0 to 1")
        vector = np.asarray(embedding, dtype=np.float32)
        candidates = self._search(None, vector, max(k, fetch_k), filter, kwargs)
        if not candidates:
            return []
        rows = document_vectors(self._embedder(), [item.content for item in candidates])
        chosen = maximal_marginal_relevance(vector, rows.tolist(), lambda_mult=float(lambda_mult), k=k)
        return [_document_of(candidates[i]) for i in chosen]

    # --- construction ---------------------------------------------------------------------------

    @classmethod
    def from_texts(
        cls,
        texts: list[str],
        embedding: Embeddings | None = None,
        metadatas: list[dict[str, Any]] | None = None,
        *,
        ids: list[str] | None = None,
        **kwargs: Any,
    ) -> PerseusVaultVectorStore:
        """A store over ``kwargs["vault"]`` (a Vault or a path) holding ``texts``; other keyword
        arguments go to the constructor."""
        if "vault" not in kwargs:
            raise InvalidInput(
                "vault", "is required: the Vault, or the path of the file to keep the documents in"
            )
        store = cls(kwargs.pop("vault"), embedding, **kwargs)
        store.add_texts(texts, metadatas, ids=ids)
        return store


def _json_metadata(metadata: Any, index: int) -> dict[str, Any]:
    if not isinstance(metadata, dict):
        raise InvalidInput(f"metadatas[{index}]", "must be a dict")
    try:
        json.dumps(metadata, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise InvalidInput(
            f"metadatas[{index}]", f"must be JSON (strings, numbers, lists, dicts): {exc}"
        ) from None
    return metadata


def _document_of(item: RecallItem) -> Document:
    metadata = item.body.get("metadata")
    return Document(
        id=item.key, page_content=item.content, metadata=dict(metadata) if isinstance(metadata, dict) else {}
    )


def _passes(filter: Callable[[Document], bool] | None, item: RecallItem) -> bool:
    return filter is None or bool(filter(_document_of(item)))


METADATA = "metadata"  # where a document's metadata lives in its entity's body


def metadata_where(filter: dict[str, Any]) -> dict[str, Any]:
    """A Chroma-style metadata filter as the vault's ``where`` (docs/filters.md): each field becomes the
    body field ``metadata.<field>``; operators and ``$and`` / ``$or`` / ``$not`` are the vault's own
    (an operator it does not take is left for the vault to refuse, by name)."""
    out: dict[str, Any] = {}
    for key, value in filter.items():
        if key in ("$and", "$or") and isinstance(value, list):
            out[key] = [metadata_where(f) if isinstance(f, dict) else f for f in value]
        elif key == "$not" and isinstance(value, dict):
            out[key] = metadata_where(value)
        elif isinstance(key, str) and not key.startswith("$"):
            out[f"{METADATA}.{key}"] = value
        else:
            out[key] = value
    return out


def _as_filter(error: InvalidInput) -> InvalidInput:
    """A refusal of the filter's translation, named as the caller wrote the filter."""
    if error.field != "where" and not error.field.startswith("where."):
        return error
    path = error.field.removeprefix("where").removeprefix(".").replace(f"{METADATA}.", "")
    return InvalidInput(f"filter.{path}" if path else "filter", error.message)
