"""``recall``: choose the mode, run its arms, combine their scores, keep the related, weigh them with the
knobs, curate the first places, page, reinforce (docs/recall.md).

The order of work:

1. the mode: ``fts5`` (keyword), ``dense`` (meaning) or ``hybrid`` (both); omitted, the vault uses
   hybrid when it holds vectors and has an embedder, else fts5 (``search_mode`` says); an empty query
   (``''``) lists what the view holds instead;
2. each arm returns a pool of visible candidates (scope, status, time and ``where`` applied inside its
   query): keyword and dense from the in-memory indexes (:mod:`indexes`) when they can answer, else
   from the backend's search (:mod:`storage`), as :class:`.arms.Arms` chooses for both;
3. hybrid combines the arms' scores (:mod:`.fusion`): relevance = keyword weight x keyword score + dense
   weight x cosine, the weights the query's own (each arm's base weight over how far it reaches for the query,
   read before any filter: :class:`_Reach`), over every candidate either arm found (a keyword hit the dense pool missed still gets its
   cosine); every item keeps its rank in each arm. Read with the weights, once a recall: a memory only the
   model finds, trusted when it stands out (:func:`.fusion.trusted`), and, when the best two memories are
   related documents, the query fed back toward them (:func:`.fusion.fed_back`: the dense arm searched again).
   For a question asking when, a memory naming a time is weighed as if it matched one more word (:mod:`.asked`);
4. a dialogue's turns are judged in their context (:mod:`.context`), with ``follow_links`` the best hits'
   linked memories join (:mod:`.linked`), and each candidate is related or not: ``min_score="auto"`` (the default) leaves the unrelated out, a number cuts below it;
5. the knobs (:mod:`.ranking`, :mod:`.validity`, :mod:`.actionability`) re-score the pool, and its first
   places are curated (:mod:`.curated` reads, :mod:`.curation` judges: a duplicate collapses into the
   newest wording, a newer fact goes before the older one it updates);
6. ``offset``/``limit`` cut the page, placed tier by tier so that a place does not depend on how deep the
   caller asks (:func:`tiers`), and its rows are fetched whole;
7. only then is the retrieval counted, by the caller (the engine: reinforcement never changes the order it
   follows), for the ids this returns beside the result.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..contract.errors import InvalidInput
from ..contract.models import RecallItem, RecallResult, Validity
from ..contract.params import Fusion, RecallParams
from ..embeddings import embedding_text
from ..primitives.dialect import dialect
from ..primitives.filters import FROM, View, from_vids, id_list, narrow, narrows, view, widened
from ..primitives.forking import GATE, Pool
from ..primitives.hits import POOL_COLUMNS, POOL_NAMES, Hit, visible_hits, walk
from ..primitives.porter import stem
from ..primitives.query import is_enumeration, parse, tokenize
from ..records import store
from ..storage import Connection
from . import context, curation, linked
from .actionability import actionability, startup_factor
from .arms import Arms
from .asked import asks_time, says_time
from .curated import window
from .fusion import (
    ASKED_SHARE,
    FEEDBACK_MEMORIES,
    combine,
    fed_back,
    is_document,
    keyword_score,
    query_weights,
    trusted,
)
from .modes import bundled, check_vector, choose
from .ranking import KNOB_RANGE, Scored, bounded, diversify, order, recency, trust, witness
from .validity import validity

_EMBED_POOL = Pool(4, "perseus-vault-embed")


def _embed_in_gate(embed: Callable[[str], np.ndarray], text: str) -> np.ndarray:
    """The query embedding, on the pool's thread: inside the fork gate, so a fork never copies the
    model's locks mid-call (forking.py)."""
    with GATE.inside():
        return embed(text)


# min_score="auto": below these an arm's score most likely means an unrelated memory (see _related).
# Measured with the bundled model (docs/recall.md): on the evaluation collections they keep 99 to 100%
# of the relevant hits in the top ten, and cut most best hits of another collection's questions.
MIN_SCORE = {"fts5": 0.1, "dense": 0.25}
# A question of one word sits further from its memory (MiniLM's cosine of "database" to "ledger keeps its
# books in Postgres" is about 0.25, of "hosting" to "the portal is hosted on Vercel" 0.24, "uptime" to an
# SLO 0.17): its meaning hits are judged at this lower cosine (docs/recall.md).
MIN_COSINE_ONE_WORD = 0.18

# The knobs re-rank a pool deeper than the page, so a boosted item can climb into it.
POOL_FACTOR = 4
MIN_POOL = 100
CONTENT_READ = 4_000  # characters of a memory read to tell a document (fusion.is_document) from a statement
TIME_READ = 1_000  # characters of a memory read to tell whether it names a time (asked.py)
TIMES_HELD = 200_000  # versions whose answer is held (_Reach.answering); about 20 MB at most
# Dense candidates taken by sign-bit distance (see indexes/vector.py): at least DENSE_DEPTH, and
# DEPTH_PER_POOL per pool slot; of those, a shortlist scored exactly: SHORTLIST_PER_POOL per pool
# slot, and at least a SHORTLIST_SHARE of the depth when the search goes deeper.
DENSE_DEPTH = 1_500
DEPTH_PER_POOL = 15
SHORTLIST_PER_POOL = 4
SHORTLIST_SHARE = 4
NEAREST_DEPTH = 1_000  # candidates of nearest(), a shortlist of a quarter of them scored exactly
# A where filter that keeps under this share of the first dense candidates is answered by the exact cosine
# of each head it keeps, not by going deeper: at 100k, one kept in a thousand took 1.5 s of deepening.
SELECTIVE = 0.02


def recall(
    conn: Connection,
    params: RecallParams,
    now_ms: int,
    arms: Arms,
    only: list[int] | None = None,
    vector: np.ndarray | None = None,
) -> tuple[RecallResult, list[int]]:
    """The result, and the ids its caller counts as retrieved (none for a point in time, or when asked not
    to: ``reinforce``). ``only``: when given, recall among those entities alone (still under every rule of the
    view). ``vector``: a query the caller embedded; the search is then dense, by that vector, and ``query``
    is ignored."""
    v = view(params, now_ms, dialect(conn))
    wide = widened(params, now_ms, dialect(conn)) if only is not None or narrows(params) else None
    if only is not None:
        v = narrow(v, only, dialect(conn))
    with arms.backend.read_snapshot(conn):
        if vector is not None:
            check_vector(conn, vector, arms)
            mode = "dense"
        else:
            mode = choose(conn, params, arms)
        found: Iterable[RecallItem]
        if vector is None and is_enumeration(params.query):
            found, variant_count, mode = _enumerate(conn, params, v), 0, "enumerate"
        else:
            found, variant_count = _search(
                conn, params, v, mode, arms, vector, _Reach(wide, asks_time(params.query))
            )
        items = store.fit(found)
    retrieved = [item.id for item in items] if params.reinforce and not v.historical else []
    return RecallResult(items=items, total=len(items), variants=variant_count, search_mode=mode), retrieved


def nearest(
    conn: Connection, params: RecallParams, now_ms: int, arms: Arms, vector: np.ndarray | None = None
) -> list[tuple[int, float]]:
    """The ``params.limit`` visible memories nearest ``vector`` by cosine (the dense arm alone), or, without
    a vector, best for ``params.query``'s words (the keyword arm alone): (entity id, the arm's score), with
    no fusion, knob, curation or context. What remember's similar-memory report reads (remembering.py)."""
    v = view(params, now_ms, dialect(conn))
    with arms.backend.read_snapshot(conn):
        if vector is None:
            hits, _ = _keyword_arm(conn, params, v, params.limit, arms)
        else:  # a shallow search: what matters is the closest few (a repeat is at distance 0)
            agent, workspace = v.params.get("agent_id"), v.params.get("workspace_hash")
            ranking, _ = arms.dense(conn, vector, NEAREST_DEPTH, agent, workspace, NEAREST_DEPTH // 4)
            hits = visible_hits(conn, ranking, v, params.limit)
    return [(h.entity_id, float(h.score)) for h in hits[: params.limit]]


# Knobs that weigh query words: an enumeration has none, so asking for them is refused, not ignored.
_WORD_KNOBS = ("content_weight", "diversity_halving", "expansion", "follow_links", "fusion", "min_score")


def _enumerate(conn: Connection, params: RecallParams, v: View) -> Iterator[RecallItem]:
    """``query=""``: every visible entity in the default order (decay, then recency, then id), each
    scored by its decay. The knobs that need no query words re-rank it as they re-rank a search:
    ``startup``, ``profile="validity"``, ``recency_half_life_secs``, and ``trust_weight`` when given
    (its default would reorder every listing, so it applies only when asked for)."""
    for name in _WORD_KNOBS:
        field = RecallParams.model_fields[name]
        if getattr(params, name) not in (field.default, False):
            raise InvalidInput(
                name, "weighs query words, and query='' has none (it lists everything in scope)"
            )
    trust_asked = "trust_weight" in params.model_fields_set and params.trust_weight > 0
    reranked = (
        params.startup or params.profile == "validity" or bool(params.recency_half_life_secs) or trust_asked
    )
    depth = max(POOL_FACTOR * (params.offset + params.limit), MIN_POOL) if reranked else params.limit
    sql = (
        f"SELECT {store.ENTITY_COLUMNS}, "
        "pv_decay(:decay_at, e.last_accessed_ms, v.updated_at_ms, e.retrieval_count) AS d "
        f"FROM {FROM} WHERE {v.where} ORDER BY d DESC, v.updated_at_ms DESC, e.id LIMIT :limit OFFSET :offset"
    )
    offset = 0 if reranked else params.offset
    rows = conn.execute(sql, dict(v.params, decay_at=v.instant, limit=depth, offset=offset))
    marks = _Marks()
    if not reranked:  # the default order: items made one row at a time, as the response budget takes them
        for r in rows:
            s, row = Scored(int(r[0]), float(r[-1]), float(r[-1])), store.row_dict(r[:-1])
            _weigh(s, row, params, v, marks, trust_on=False, rerank_validity=False)
            yield _item(row, s, {}, params, v, marks)
        return
    fetched = rows.fetchall()
    scored = [Scored(int(r[0]), float(r[-1]), float(r[-1])) for r in fetched]
    by_id = {int(r[0]): store.row_dict(r[:-1]) for r in fetched}
    for s in scored:
        _weigh(s, by_id[s.id], params, v, marks, trust_on=trust_asked, rerank_validity=True)
    for s in order(scored)[params.offset : params.offset + params.limit]:
        yield _item(by_id[s.id], s, {}, params, v, marks)


@dataclass
class _Marks:
    """What the knobs found about each candidate, for its item."""

    validities: dict[int, Validity] = field(default_factory=dict)
    actions: dict[int, float] = field(default_factory=dict)


def _weigh(
    s: Scored,
    row: dict[str, Any],
    params: RecallParams,
    v: View,
    marks: _Marks,
    *,
    trust_on: bool,
    rerank_validity: bool,
    witnessed: float = 0.0,
) -> None:
    """The knobs on one candidate: trust, content witness, validity and startup each multiply its
    relevance, and their product is held to :data:`ranking.KNOB_RANGE` (a re-order of near-ties);
    recency multiplies in full, ``0.5 ** (age / half-life)``, age from the memory's valid-from time
    (else its creation) to the query's instant. Related candidates rank before unrelated ones whatever
    the knobs say (:func:`ranking.order`)."""
    factor = 1.0
    if trust_on:
        factor *= 1.0 + params.trust_weight * trust(bool(row["verified"]), row["certainty"])
    if params.content_weight:
        factor *= 1.0 + params.content_weight * witnessed
    if params.profile == "validity" or params.validity_annotate:
        marks.validities[s.id] = _validity(row, v, params)
        if rerank_validity and params.profile == "validity":
            factor *= marks.validities[s.id].multiplier
    if params.startup:
        marks.actions[s.id] = actionability(embedding_text(row["content"], row["summary"])).score
        factor *= startup_factor(marks.actions[s.id], *KNOB_RANGE)
    s.score = s.relevance * bounded(factor)
    if params.recency_half_life_secs:
        born = row["valid_from_ms"] if row.get("valid_from_ms") is not None else row["created_at_ms"]
        s.score *= recency(v.instant - born, params.recency_half_life_secs)


def _trust_only(params: RecallParams) -> bool:
    """Whether trust is the only knob that weighs a search's candidates (the defaults)."""
    return not (
        params.content_weight
        or params.recency_half_life_secs
        or params.startup
        or params.profile == "validity"
        or params.validity_annotate
    )


def _item(
    row: dict[str, Any], s: Scored, ranks: dict[str, int], params: RecallParams, v: View, marks: _Marks
) -> RecallItem:
    item = store.to_item(row, v.instant, score=s.score, ranks=ranks)
    item.actionability = marks.actions.get(s.id)
    item.validity = marks.validities.get(s.id)
    return _preview(item, params)


# --- the arms ------------------------------------------------------------------------------------


def _keyword_arm(
    conn: Connection, params: RecallParams, v: View, pool: int, arms: Arms
) -> tuple[list[Hit], int]:
    """Keyword hits scored on the absolute scale (:func:`fusion.keyword_score`), and how many
    expansion variants the search used."""
    terms = parse(params.query)
    if terms.empty:
        return [], 0
    config = params.expansion_config()
    extra = arms.backend.keyword.variants(conn, terms.stems, config, v) if config else []
    hits, top = arms.keyword(conn, list(terms.words) + extra, list(terms.stems) + extra, v, pool)
    for h in hits:  # the arm's own hits: scored in place, on the absolute scale
        h.score = keyword_score(h.score, top)
    return hits, len(extra)


def _dense_arm(conn: Connection, query: np.ndarray, v: View, pool: int, arms: Arms) -> list[Hit]:
    """Dense candidates (see indexes/vector.py): scope is applied while choosing them; when the view's
    other filters reject many, the search goes deeper until as many visible candidates have been
    weighed as an unfiltered search weighs. A where filter that keeps fewer than :data:`SELECTIVE` of
    the first candidates is answered exactly instead: the cosine of every head it keeps."""
    if v.historical or v.narrowed:  # a point in time, or a list of entities: an exact scan of those
        return arms.exact_dense(conn, query, v, pool)
    agent, workspace = v.params.get("agent_id"), v.params.get("workspace_hash")
    target = max(DENSE_DEPTH, DEPTH_PER_POOL * pool)
    depth = target
    for _ in range(6):
        keep = max(SHORTLIST_PER_POOL * pool, depth // SHORTLIST_SHARE)
        ranking, complete = arms.dense(conn, query, depth, agent, workspace, keep)
        hits, examined = walk(conn, ranking, v, pool)
        accepted = len(hits) / max(1, examined)
        if complete or (len(hits) >= pool and accepted * depth >= target / 2):
            break
        if v.condition_sql is not None and accepted < SELECTIVE:
            return arms.kept_nearest(conn, query, v, pool)
        depth = int(depth * min(8.0, max(2.0, 1.0 / max(accepted, 0.01))))  # filters bite: look deeper
    return hits


def _search(
    conn: Connection,
    params: RecallParams,
    v: View,
    mode: str,
    arms: Arms,
    vector: np.ndarray | None = None,
    reach: _Reach | None = None,
) -> tuple[Iterable[RecallItem], int]:
    """``vector``: the caller's query vector (dense only); the query text then has no words, so no
    knob matches words against content. ``reach``: where hybrid reads how far its arms reach (:class:`_Reach`).

    The answer is built in tiers (:func:`tiers`): tier ``t`` runs the arms at pool ``MIN_POOL x
    POOL_FACTOR^t`` and gives the places after the earlier tiers' up to a quarter of its pool. A place
    is therefore decided by the same search whatever ``limit`` and ``offset`` the caller passes: the
    first ``k`` items of a recall are the first ``k`` of any deeper one, and pages never disagree."""
    if vector is None and not tokenize(params.query):
        return [], 0  # no word at all ("*"): matches nothing, in every mode
    query = _QueryVector(vector)
    if vector is None and mode in ("dense", "hybrid"):
        assert arms.embed_query is not None
        if mode == "dense":
            query.vector = _embed_in_gate(arms.embed_query, params.query)  # inline
        else:  # the model runs outside the GIL: embed the query while the keyword arm searches
            query.pending = _EMBED_POOL.get().submit(_embed_in_gate, arms.embed_query, params.query)
    wanted = params.offset + params.limit
    placed: list[tuple[Scored, _Tier]] = []
    taken: set[int] = set()
    variant_count = 0
    reach = reach or _Reach(None)
    for pool, places in tiers(wanted):
        tier, variant_count, deeper = _tier(conn, params, v, mode, arms, pool, query, reach)
        for s in tier.ranked:
            if len(placed) >= (places if deeper else wanted):  # no arm filled its pool: this ranking is whole
                break
            if s.id not in taken:
                placed.append((s, tier))
                taken.add(s.id)
        taken |= tier.hidden  # collapsed or left out by this tier's curation: never shown by a later one
        if len(placed) >= wanted or not deeper:
            break
    return _items(conn, params, v, placed[params.offset : wanted]), variant_count


def tiers(wanted: int) -> Iterator[tuple[int, int]]:
    """``(pool, places)`` of each tier a page reaching place ``wanted`` needs: pools of ``MIN_POOL x
    POOL_FACTOR^t``, each deciding the places up to a quarter of its pool (the knobs re-rank a pool
    deeper than the places it decides, so a boosted item can climb into them)."""
    pool = MIN_POOL
    while True:
        places = pool // POOL_FACTOR
        yield pool, places
        if places >= wanted:
            return
        pool *= POOL_FACTOR


@dataclass
class _QueryVector:
    """The query's embedding: given, embedded, or being embedded (asked for once, whatever the tiers)."""

    vector: np.ndarray | None
    pending: Future[np.ndarray] | None = None

    def get(self) -> np.ndarray | None:
        if self.pending is not None:
            self.vector, self.pending = self.pending.result(), None
        return self.vector


@dataclass
class _Reach:
    """How far each arm reaches for the query (its best score), which hybrid's weights are read from
    (:func:`fusion.query_weights`), over the caller's scope before any filter: read once a recall, at the first
    tier's pool, whatever tier or page asks. ``view``: the view to read them in, the recall's without its
    filters; ``None`` when the recall has none, and the first tier's own arms give them."""

    view: View | None
    asks_time: bool = False  # the question asks when (asked.py)
    known: bool = False
    keyword: float | None = None
    dense: float | None = None
    trusted: int | None = None  # the memory only the model finds that hybrid trusts (fusion.trusted)
    bundled: bool = False  # the vault's model is the bundled one, which the rules were measured on
    lists: dict[str, list[Hit]] | None = None  # the unfiltered first pool, when the recall has a filter
    fed: bool = False  # feedback() has decided
    floor: float = 1.0  # the bundled model's cosine of a related memory, for this query
    moved: np.ndarray | None = None  # the query's vector fed back (fusion.fed_back), or None

    def answering(self, conn: Connection, arms: Arms, vids: dict[int, int]) -> set[int]:
        """Those of ``vids`` (entity id -> version) that say what the question asks for (:mod:`.asked`): the ones
        naming a time, when it asks when; none otherwise. A version's opening is read once while the vault is open
        (``Arms.named_times``; versions never change), at most :data:`TIMES_HELD` of them at a time."""
        if not self.asks_time:
            return set()
        held = arms.named_times
        unread = [vid for vid in vids.values() if vid not in held]
        if unread:
            if len(held) + len(unread) > TIMES_HELD:
                held.clear()
            texts = arms.openings(conn, unread, TIME_READ)
            held.update({vid: says_time(texts.get(vid, "")) for vid in unread})
        return {e for e, vid in vids.items() if held.get(vid, False)}

    def fuse(
        self,
        conn: Connection,
        arms: Arms,
        fused: tuple[dict[int, float], dict[int, float], dict[int, int]],
        fusion: Fusion,
        places: int,
    ) -> list[tuple[int, float]]:
        """Hybrid's ranking (:func:`fusion.combine`) of ``fused`` (keyword scores, cosines and versions, by entity
        id), the trusted memory and the memories saying what is asked lifted. Only the candidates that could reach
        the first ``places`` with the lift are read for it: the ranking of those places is exact."""
        kw, cos, vids = fused
        ranking = combine(kw, cos, fusion, self.trust())
        if not self.asks_time or not ranking:
            return ranking
        floor = ranking[min(places, len(ranking)) - 1][1] - fusion.keyword_weight * ASKED_SHARE
        near = {e: vids[e] for e, score in ranking if score >= floor}
        return combine(kw, cos, fusion, self.trust(), self.answering(conn, arms, near))

    def weights(
        self,
        conn: Connection,
        params: RecallParams,
        arms: Arms,
        lists: dict[str, list[Hit]],
        query: np.ndarray,
        base: Fusion,
    ) -> Fusion:
        """The query's weights; ``lists``: the first tier's arms when this recall has no filter."""
        if not self.known:
            if self.view is not None:
                lists = self.lists = {
                    "fts5": _keyword_arm(conn, params, self.view, MIN_POOL, arms)[0],
                    "dense": _dense_arm(conn, query, self.view, MIN_POOL, arms),
                }
            self.keyword = max((h.score for h in lists["fts5"]), default=None)
            self.dense = max((h.score for h in lists["dense"]), default=None)
            self.bundled = bundled(arms)  # the rules below were measured on it, and read its floor of related
            if self.bundled:
                self.floor = _related_floor(params.query)
                best = heapq.nsmallest(2, lists["dense"], key=lambda h: (-h.score, h.entity_id))
                found = {h.entity_id for h in lists["fts5"]}
                self.trusted = trusted(
                    self.keyword, [(h.entity_id, h.score) for h in best], found, self.floor
                )
            self.known = True
        return query_weights(self.keyword, self.dense, base)

    def trust(self) -> tuple[int, float] | None:
        """The trusted memory and the keyword score it is weighed with (:func:`fusion.combine`), once known."""
        return None if self.trusted is None or self.keyword is None else (self.trusted, self.keyword)

    def feedback(
        self,
        conn: Connection,
        arms: Arms,
        first: tuple[dict[int, float], dict[int, float], dict[int, int], list[tuple[int, float]]] | None,
        query: np.ndarray,
        fusion: Fusion,
        v: View,
    ) -> np.ndarray | None:
        """The query's vector moved toward the best memories when they are documents (:func:`fusion.fed_back`),
        else ``None``: decided once a recall (after :meth:`weights`), from the unfiltered first pool's ranking.
        ``first``: the first tier's keyword scores, cosines (every keyword hit's too) and versions, by entity id,
        which are that pool when the recall has no filter (``None`` once decided, or with a filter); ``v``: the
        recall's view. Only memories related to the query as asked move it (a keyword score of at least
        MIN_SCORE["fts5"] or a cosine at the related floor): a question about nothing is never moved toward the
        store's documents."""
        if not self.fed:
            self.fed = True
            if self.bundled:  # measured on the bundled model
                if self.lists is not None:  # a filter: the pool without it
                    kw = {h.entity_id: h.score for h in self.lists["fts5"]}
                    vids = {h.entity_id: h.vid for hits in self.lists.values() for h in hits}
                    dense = {h.entity_id: h.score for h in self.lists["dense"]}
                    cos = arms.with_cosines(conn, kw, dense, vids, query, self.view)  # type: ignore[arg-type]
                    ranking = self.fuse(conn, arms, (kw, cos, vids), fusion, FEEDBACK_MEMORIES)
                else:
                    assert first is not None
                    kw, cos, vids, ranking = first
                ids = [e for e, _ in ranking[:FEEDBACK_MEMORIES]]
                best = [vids[e] for e in ids]
                if (
                    len(best) == FEEDBACK_MEMORIES
                    and all(
                        kw.get(e, 0.0) >= MIN_SCORE["fts5"] or cos.get(e, -1.0) >= self.floor for e in ids
                    )
                    and all(map(is_document, arms.openings(conn, best, CONTENT_READ).values()))
                ):
                    held = arms.vectors(conn, best, v.historical)
                    if len(held) == len(best):
                        self.moved = fed_back(query, [held[vid] for vid in best])
        return self.moved


@dataclass
class _Tier:
    """One tier's ranking (curated), and what its items need: versions, arm ranks, knob marks, curation."""

    ranked: list[Scored]
    vids: dict[int, int]
    ranks: dict[str, dict[int, int]]
    marks: _Marks
    curated: curation.Curated | None
    hidden: set[int]


def _tier(
    conn: Connection,
    params: RecallParams,
    v: View,
    mode: str,
    arms: Arms,
    pool: int,
    query: _QueryVector,
    reach: _Reach,
) -> tuple[_Tier, int, bool]:
    """The arms at ``pool``, fused and ranked with the knobs; the variants used; and whether a deeper
    pool could find more (some arm filled this one)."""
    lists: dict[str, list[Hit]] = {}
    variant_count = 0
    if mode == "dense":
        lists["dense"] = _dense_arm(conn, query.get(), v, pool, arms)  # type: ignore[arg-type]
    if mode in ("fts5", "hybrid"):
        lists["fts5"], variant_count = _keyword_arm(conn, params, v, pool, arms)
    fusion = params.fusion or arms.fusion or Fusion()
    asked = query.get()  # the query's vector, as asked (hybrid's may be fed back: fed)
    fed: np.ndarray | None = None
    if mode == "hybrid":
        assert asked is not None
        if reach.view is not None or reach.known:  # decided without this tier's arms: search as decided
            fusion = reach.weights(conn, params, arms, lists, asked, fusion)
            fed = reach.feedback(conn, arms, None, asked, fusion, v)
        lists["dense"] = _dense_arm(conn, asked if fed is None else fed, v, pool, arms)
    deeper = any(len(hits) >= pool for hits in lists.values())
    ranks = {arm: {h.entity_id: rank for rank, h in enumerate(hits, start=1)} for arm, hits in lists.items()}
    vids: dict[int, int] = {}
    known: dict[int, tuple[Any, ...]] = {}  # pool columns the arms read already, by entity id
    for hits in reversed(lists.values()):  # the first arm to hold an entity says its version and columns
        vids.update({h.entity_id: h.vid for h in hits})
        known.update({h.entity_id: h.row for h in hits if h.row is not None})
    kw = {h.entity_id: h.score for h in lists.get("fts5", [])}
    cos = {h.entity_id: h.score for h in lists.get("dense", [])}
    judged = cos if fed is None else {}  # the cosines relatedness is judged on: the query's as asked
    combined: list[tuple[int, float]] | None = None  # hybrid's ranking of the candidates
    if mode == "hybrid":
        assert asked is not None
        if not reach.fed:  # the first tier of a recall without a filter: its arms decide
            fusion = reach.weights(conn, params, arms, lists, asked, fusion)
            cos = judged = arms.with_cosines(conn, kw, cos, vids, asked, v)
            combined = reach.fuse(conn, arms, (kw, cos, vids), fusion, pool)
            fed = reach.feedback(conn, arms, (kw, cos, vids, combined), asked, fusion, v)
            if fed is not None:  # the dense arm searched again, nearer the best documents
                lists["dense"] = _dense_arm(conn, fed, v, pool, arms)
                deeper = any(len(hits) >= pool for hits in lists.values())
                ranks["dense"] = {h.entity_id: rank for rank, h in enumerate(lists["dense"], start=1)}
                for h in lists["dense"]:
                    vids.setdefault(h.entity_id, h.vid)
                    if h.row is not None:
                        known.setdefault(h.entity_id, h.row)
                cos = {h.entity_id: h.score for h in lists["dense"]}
        if combined is None or fed is not None:  # else the first tier's ranking stands
            cos = arms.with_cosines(conn, kw, cos, vids, asked if fed is None else fed, v)
            combined = reach.fuse(conn, arms, (kw, cos, vids), fusion, pool)
        # relatedness stays the question's own: a move toward documents judges nothing
        judged = cos if fed is None else arms.with_cosines(conn, cos, judged, vids, asked, v)
        scored = [Scored(eid, score, score) for eid, score in combined[:pool]]
    else:
        scored = [Scored(h.entity_id, h.score, h.score) for h in lists[mode]]
    floor = _related_floor(params.query)
    related = {s.id: _related(kw.get(s.id), judged.get(s.id), mode, arms, floor) for s in scored}
    ranked_by = asked if fed is None else fed  # the vector this tier ranks by

    def own(fresh: dict[int, int]) -> dict[int, float]:  # a candidate the arms did not find, by their rule
        by_vid = arms.cosines(conn, list(fresh.values()), ranked_by, v) if mode != "fts5" else {}  # type: ignore[arg-type]
        cosine = {e: by_vid[vid] for e, vid in fresh.items() if vid in by_vid} if mode != "fts5" else {}
        if mode == "fts5":
            return {e: kw.get(e, 0.0) for e in fresh}
        if mode == "dense":
            return cosine
        words = {e: kw.get(e, 0.0) for e in cosine}
        return dict(combine(words, cosine, fusion, reach.trust(), reach.answering(conn, arms, fresh)))

    scored = context.lift(conn, v, scored, vids, own, related)  # a dialogue's turns, judged in context
    if params.follow_links:  # the best hits' linked memories join (linked.py)
        scored = linked.join(conn, v, scored, vids, own, related)
    for s in scored:  # judged on relevance, before any knob: related ones rank first (ranking.order)
        s.related = related[s.id]
    if params.min_score == "auto":
        scored = [s for s in scored if s.related]
    elif params.min_score is not None:
        floor = float(params.min_score)
        scored = [s for s in scored if s.relevance >= floor]
    tier = _rank(conn, params, v, mode, scored, vids, ranks, known, arms)
    return tier, variant_count, deeper


# --- the knobs -----------------------------------------------------------------------------------


def _rank(
    conn: Connection,
    params: RecallParams,
    v: View,
    mode: str,
    scored: list[Scored],
    vids: dict[int, int],
    ranks: dict[str, dict[int, int]],
    known: dict[int, tuple[Any, ...]],
    arms: Arms,
) -> _Tier:
    """The candidates weighed by the knobs, ordered and curated (``ranks``: each arm's rank of each entity
    it found, in the order the arms ran)."""
    text = bool(params.content_weight or params.diversity_halving < 1.0 or params.startup)
    columns = {} if text else {i: known[i] for i in (s.id for s in scored) if i in known}
    missing = [vids[s.id] for s in scored if s.id not in columns]
    if missing:
        columns.update(_pool_rows(conn, missing, text))
    stems = parse(params.query).stems
    needs_text = bool(params.content_weight or params.diversity_halving < 1.0)
    marks = _Marks()
    if _trust_only(params) and not needs_text:  # the defaults: _weigh's arithmetic, its branches decided once
        weight = params.trust_weight
        factors: dict[
            tuple[Any, Any], float
        ] = {}  # few distinct (verified, certainty) pairs: each weighed once
        for s in scored:
            held = columns[s.id]
            key = (held[_VERIFIED], held[_CERTAINTY])
            factor = factors.get(key)
            if factor is None:
                factor = factors[key] = bounded(1.0 + weight * trust(bool(key[0]), key[1]))
            s.score = s.relevance * factor
    else:
        names = POOL_NAMES + (_TEXT_NAMES if text else ())
        rows = {i: dict(zip(names, row)) for i, row in columns.items()}
        for s in scored:
            row = rows[s.id]
            witnessed = 0.0
            if needs_text:
                content_stems = {stem(t) for t in tokenize(row["content"])}
                witnessed = witness(stems, content_stems, len(row["content"]))
                matched = content_stems | {stem(t) for t in tokenize(f"{row['summary'] or ''} {row['tags']}")}
                s.keyword = next((i for i, st in enumerate(stems) if st in matched), None)
            _weigh(
                s, row, params, v, marks, trust_on=True, rerank_validity=mode == "hybrid", witnessed=witnessed
            )
    ranked = diversify(order(scored), params.offset + params.limit, params.diversity_halving)
    curated = window(conn, params, v, ranked, vids, arms)
    hidden: set[int] = set()
    if curated is not None:
        hidden = curated.left_out(params.include_outdated)
        ranked = curated.apply(ranked, params.include_outdated)
    return _Tier(ranked, vids, ranks, marks, curated, hidden)


def _items(
    conn: Connection, params: RecallParams, v: View, page: list[tuple[Scored, _Tier]]
) -> Iterator[RecallItem]:
    """The page's items, their rows fetched whole (a chunk at a time: see store.fit)."""
    by_id = {s.id: (s, tier) for s, tier in page}
    for row in store.rows_in_order(conn, [tier.vids[s.id] for s, tier in page]):
        s, tier = by_id[row["id"]]
        ranks = {arm: at[s.id] for arm, at in tier.ranks.items() if s.id in at}
        item = _item(row, s, ranks, params, v, tier.marks)
        if tier.curated is not None:  # set only where curation marked it (a model's attribute is slow to set)
            if s.id in tier.curated.duplicates:
                item.duplicates = tier.curated.duplicates[s.id]
            if s.id in tier.curated.outdated_by:
                item.outdated_by = tier.curated.outdated_by[s.id]
        yield item


def _related(keyword: float | None, cosine: float | None, mode: str, arms: Arms, floor: float) -> bool:
    """``min_score="auto"`` (the default): a hit is kept when an arm that ran judges it related, its keyword
    score at least MIN_SCORE["fts5"] or its cosine at least ``floor`` (MIN_SCORE["dense"], or
    :data:`MIN_COSINE_ONE_WORD` for a question of one word). The cosine thresholds were measured on the
    bundled model; another model's cosines spread differently, so its meaning hits are all kept."""
    if keyword is not None and keyword >= MIN_SCORE["fts5"]:
        return True
    if mode == "fts5":
        return False
    if not bundled(arms):
        return cosine is not None
    return cosine is not None and cosine >= floor


def _related_floor(query: str) -> float:
    """The bundled model's cosine of a memory related to ``query`` (a question of one word has its own)."""
    return MIN_COSINE_ONE_WORD if len(parse(query).stems) == 1 else MIN_SCORE["dense"]


def _validity(row: dict[str, Any], v: View, params: RecallParams) -> Validity:
    return validity(
        now_ms=v.instant,
        updated_at_ms=row["updated_at_ms"],
        status=row["status"],
        superseded_by=row["superseded_by"],
        expires_at_ms=row["expires_at_ms"],
        verified=bool(row["verified"]),
        provenance_class=row["provenance_class"],
        workspace_hash=row["workspace_hash"] or None,
        query_workspace=params.workspace_hash,
    )


_TEXT_COLUMNS = ("v.content", "v.summary", "v.tags")
_TEXT_NAMES = tuple(c.split(".")[1] for c in _TEXT_COLUMNS)
_VERIFIED, _CERTAINTY = POOL_NAMES.index("verified"), POOL_NAMES.index("certainty")


def _pool_rows(conn: Connection, vids: list[int], text: bool) -> dict[int, tuple[Any, ...]]:
    """The columns the knobs need (:data:`POOL_COLUMNS`, then the texts when a knob reads them), for
    every pool candidate, in one statement, by entity id."""
    sql = f"SELECT {', '.join(POOL_COLUMNS + (_TEXT_COLUMNS if text else ()))} FROM {from_vids(conn)}"
    return {row[0]: tuple(row) for row in conn.execute(sql, {"vids": id_list(vids)})}


def _preview(item: RecallItem, params: RecallParams) -> RecallItem:
    return item if params.preview_cap is None else store.preview(item, params.preview_cap)
