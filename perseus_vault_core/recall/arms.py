"""What the vault lends recall (:class:`Arms`): its storage backend, its in-memory indexes and, if it has
one, a query embedder; and the one place that chooses, for each arm, whether an in-memory index or the
backend's SQL answers. The engine makes them (``Engine.arms``); the pipeline and the curated window read
them, so that recall knows no engine.

The choice is the same for both arms: the index answers when it can vouch for the snapshot being read and
covers the view (the current heads, not a point in time or a list of entities); otherwise the backend's
search does, with the same scores. An index only ranks; the view's rules are applied to its ranking here,
best first (:func:`hits.visible_hits`). Storage knows nothing of the indexes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

import numpy as np

from ..contract.params import Fusion
from ..indexes.keyword import KeywordIndex
from ..indexes.vector import VectorIndex
from ..primitives.filters import View, from_vids, id_list
from ..primitives.hits import Hit, Ranking, kept_by_where, selected_hits, selection, visible_hits
from ..storage import Backend, Connection
from .kept_relations import KeptRelations


@dataclass
class Arms:
    """What the vault lends recall: its storage backend, its in-memory indexes and, if it has one, a
    query embedder."""

    backend: Backend
    keyword_index: KeywordIndex | None = None
    vector_index: VectorIndex | None = None
    embed_query: Callable[[str], np.ndarray] | None = None
    embedder_model: Callable[[], tuple[str, int]] | None = None
    fusion: Fusion | None = None
    relations: KeptRelations | None = None  # the relations curation acts on, held for the open vault
    # Whether a version names a time (asked.py): the engine lends the dict it holds for the open vault.
    named_times: dict[int, bool] = field(default_factory=dict)

    def keyword(
        self, conn: Connection, words: list[str], stems: list[str], view: View, pool: int
    ) -> tuple[list[Hit], float]:
        """The ``pool`` best visible keyword matches for the OR of ``words`` (BM25, best first, ties by id) and
        the query's ceiling (``stems``: the words' index terms, in the same order): from the keyword index
        when it can answer (:meth:`_indexed_keyword`), else from the backend's search; the same hits."""
        if not words:
            return [], 0.0
        found = self._indexed_keyword(conn, words, stems, view, pool)
        return found if found is not None else self.backend.keyword.search(conn, words, view, pool)

    def _indexed_keyword(
        self, conn: Connection, words: list[str], stems: list[str], view: View, pool: int
    ) -> tuple[list[Hit], float] | None:
        """The keyword index's ``pool`` best visible hits and the query's ceiling, or None when it cannot
        answer: no index, a view it does not cover (a point in time, a list of ids), non-ASCII words (which
        FTS5 tokenizes by its own rules), or a snapshot it is not at."""
        index = self.keyword_index
        if index is None or view.historical or view.narrowed or not all(w.isascii() for w in words):
            return None
        # The best rows only (pruned: see indexes/keyword.py), deep enough for the pool in most views;
        # when the view's filters hide many of them, every match is ranked.
        ranking = index.search(conn, stems, *view.scope, depth=2 * pool + 64)
        if ranking is None:
            return None
        hits = visible_hits(conn, ranking, view, pool)
        if len(hits) < pool and ranking.partial:
            ranking = index.search(conn, stems, *view.scope)
            if ranking is None:
                return None
            hits = visible_hits(conn, ranking, view, pool)
        return hits, ranking.ceiling

    def dense(
        self,
        conn: Connection,
        query: np.ndarray,
        depth: int,
        agent_id: str | None,
        workspace_hash: str | None,
        keep: int,
    ) -> tuple[Ranking, bool]:
        """The ``depth`` current heads in scope nearest ``query`` by sign-bit distance, cut to a shortlist of
        ``keep`` scored by exact cosine, and whether that was every candidate (``VectorStore.candidates``):
        from the vector index when it can answer for this snapshot, else from the backend; the same ranking."""
        if self.vector_index is not None:
            found = self.vector_index.search(conn, query, depth, agent_id, workspace_hash, keep)
            if found is not None:
                return found
        return self.backend.vectors.candidates(conn, query, depth, agent_id, workspace_hash, keep)

    def exact_dense(self, conn: Connection, query: np.ndarray, view: View, pool: int) -> list[Hit]:
        """The ``pool`` visible versions nearest ``query`` by exact cosine, for a view no index covers (a
        point in time, a list of entities): the backend's scan of those."""
        hits, found = self.backend.vectors.search(conn, query, view, pool)
        return self.backend.vectors.rescore(hits, found, query)

    def cosines(self, conn: Connection, vids: list[int], query: np.ndarray, view: View) -> dict[int, float]:
        """The cosine of each of these versions: from the vector index's memory when it can answer for this
        snapshot and the versions are heads (the current view's), else from the file; the same scores."""
        if self.vector_index is not None and not view.historical:
            found = self.vector_index.cosines(conn, vids, query)
            if found is not None:
                return found
        return self.backend.vectors.cosines(conn, vids, query)

    def vectors(self, conn: Connection, vids: list[int], historical: bool) -> dict[int, np.ndarray]:
        """Each of these versions' vector (``historical``: of a view at a point in time, which may be older than the
        heads the vector index holds): from the vector index's memory when it can answer, else from the file."""
        found = (
            self.vector_index.vectors(conn, vids)
            if self.vector_index is not None and not historical
            else None
        ) or {}
        missing = [vid for vid in vids if vid not in found]
        return {**found, **self.backend.vectors.vectors(conn, missing)} if missing else found

    def with_cosines(
        self,
        conn: Connection,
        ids: Iterable[int],
        known: dict[int, float],
        vids: dict[int, int],
        query: np.ndarray,
        view: View,
    ) -> dict[int, float]:
        """``known`` (cosines to ``query`` by entity id) with the cosine of each of ``ids`` it lacks (``vids``: each
        entity's version): hybrid weighs every candidate by both arms, so a keyword hit the dense pool did not
        reach still gets its cosine."""
        lacking = [e for e in ids if e not in known]
        by_vid = self.cosines(conn, [vids[e] for e in lacking], query, view) if lacking else {}
        return {**known, **{e: by_vid[vids[e]] for e in lacking if vids[e] in by_vid}}

    def openings(self, conn: Connection, vids: list[int], chars: int) -> dict[int, str]:
        """The first ``chars`` characters of each of these versions' content, by version: enough to tell a document
        by its first words (:func:`fusion.is_document`) or whether a memory names a time (:mod:`.asked`), never a
        whole file."""
        sql = f"SELECT v.vid, substr(v.content, 1, {int(chars)}) FROM {from_vids(conn)}"
        return {int(row[0]): row[1] for row in conn.execute(sql, {"vids": id_list(vids)})}

    def kept_nearest(self, conn: Connection, query: np.ndarray, view: View, pool: int) -> list[Hit]:
        """The ``pool`` visible heads the where filter keeps nearest to ``query`` by exact cosine, ties by id:
        with the vector index, the heads it holds asked of the filter (answers remembered, indexes/heads.py),
        then their cosines from memory; else one pass of SQL over the heads. The same hits either way."""
        index = self.vector_index
        live = index.live(conn) if index is not None else None
        if index is not None and live is not None:
            vids, entity_ids = live
            keep = kept_by_where(conn, view, vids, index.heads, len(vids))
            scores = index.cosines(conn, vids[keep].tolist(), query)
            if scores is not None:
                held = [
                    (vid, eid)
                    for vid, eid in zip(vids[keep].tolist(), entity_ids[keep].tolist())
                    if vid in scores
                ]
                ranking = Ranking(
                    np.asarray([h[0] for h in held], dtype=np.int64),
                    np.asarray([h[1] for h in held], dtype=np.int64),
                    np.asarray([scores[h[0]] for h in held], dtype=np.float32),
                    heads=index.heads,
                )
                return visible_hits(conn, ranking, view, pool)  # the view's other rules
        visible = selection(conn, view)
        by_vid = self.backend.vectors.cosines(
            conn, list(visible), query
        )  # a head without a vector is no candidate
        held_vids = [vid for vid in visible if vid in by_vid]
        ranking = Ranking(
            np.asarray(held_vids, dtype=np.int64),
            np.asarray([visible[vid][0] for vid in held_vids], dtype=np.int64),
            np.asarray([by_vid[vid] for vid in held_vids], dtype=np.float32),
        )
        return selected_hits(ranking, visible, pool)
