"""``recall``: choose the arm, rank with the knobs, page, reinforce (SPEC 5.1).

The order of work: parse the query (``query``), gather a candidate pool from the arm
(``keyword``), score it (``ranking``), take ``offset``/``limit``, fetch those rows whole,
and only then count the retrieval (reinforcement never changes the order it follows).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from . import keyword, store
from .connection import read_snapshot
from .errors import NotSupported
from .filters import FROM, FROM_VIDS, View, id_list, view
from .keyword_index import KeywordIndex
from .models import RecallItem, RecallParams, RecallResult
from .query import is_enumeration, parse, tokenize
from .porter import stem
from .ranking import Scored, diversify, normalize, order, preview, recency, trust, witness

# The knobs re-rank a pool deeper than the page, so a boosted item can climb into it.
POOL_FACTOR = 4
MIN_POOL = 100


def _unsupported(params: RecallParams) -> None:
    if params.mode in ("dense", "hybrid"):
        raise NotSupported(
            f"mode={params.mode!r} needs stored embeddings, which this vault does not have yet; "
            "use mode='fts5' (or omit mode)"
        )
    if params.startup:
        raise NotSupported("startup re-ranking (actionability) is not available in this build")
    if params.profile is not None or params.validity_annotate:
        raise NotSupported("the validity profile is not available in this build")


def recall(
    conn: Any, params: RecallParams, now_ms: int, reinforce: Callable[[list[int]], None],
    index: KeywordIndex | None = None,
) -> RecallResult:
    _unsupported(params)
    mode: str = params.mode or "fts5"
    v = view(params, now_ms)
    with read_snapshot(conn):
        if is_enumeration(params.query):
            items = _enumerate(conn, params, v)
            mode = "enumerate"
            variant_count = 0
        else:
            items, variant_count = _keyword(conn, params, v, index)
    if params.reinforce and not v.historical and items:
        reinforce([item.id for item in items])
    return RecallResult(items=items, total=len(items), variants=variant_count, search_mode=mode)


def _enumerate(conn: Any, params: RecallParams, v: View) -> list[RecallItem]:
    """``query=""``: every visible entity in the default order (decay, then recency, then id)."""
    sql = (
        f"SELECT {store.ENTITY_COLUMNS}, "
        "pv_decay(:decay_at, e.last_accessed_ms, v.updated_at_ms, e.retrieval_count) AS d "
        f"FROM {FROM} WHERE {v.where} ORDER BY d DESC, v.updated_at_ms DESC, e.id LIMIT :limit OFFSET :offset"
    )
    rows = conn.execute(sql, dict(v.params, decay_at=v.instant, limit=params.limit, offset=params.offset))
    items = []
    for row in rows:
        item = store.to_item(row[:-1], v.instant, score=float(row[-1]), ranks={})
        items.append(_preview(item, params))
    return items


def _keyword(conn: Any, params: RecallParams, v: View, index: KeywordIndex | None) -> tuple[list[RecallItem], int]:
    terms = parse(params.query)
    if terms.empty:
        return [], 0
    words = list(terms.words)
    config = params.expansion_config()
    extra = keyword.variants(conn, terms.stems, config, v) if config else []
    pool = max(POOL_FACTOR * (params.offset + params.limit), MIN_POOL)
    hits = keyword.search(conn, words + extra, list(terms.stems) + extra, v, pool, index)
    if not hits:
        return [], len(extra)
    arm_rank = {h.entity_id: i + 1 for i, h in enumerate(hits)}
    vids = {h.entity_id: h.vid for h in hits}
    scored = [Scored(h.entity_id, h.score) for h in hits]
    normalize(scored)
    needs_text = bool(params.content_weight or params.diversity_halving < 1.0)
    rows = _pool_rows(conn, [h.vid for h in hits], needs_text) if _needs_rows(params) else {}
    now = v.instant
    stems = terms.stems
    for s in scored:
        row = rows.get(s.id)
        if row is None:
            continue
        s.score += params.trust_weight * trust(bool(row["verified"]), row["certainty"])
        if needs_text:
            content_stems = {stem(t) for t in tokenize(row["content"])}
            if params.content_weight:
                s.score += params.content_weight * witness(stems, content_stems, len(row["content"]))
            matched = content_stems | {stem(t) for t in tokenize(f"{row['summary'] or ''} {row['tags']}")}
            s.keyword = next((i for i, st in enumerate(stems) if st in matched), None)
        if params.recency_half_life_secs:
            s.score *= recency(now - row["created_at_ms"], params.recency_half_life_secs)
    ranked = diversify(order(scored), params.offset + params.limit, params.diversity_halving)
    page = ranked[params.offset : params.offset + params.limit]
    full = store.version_rows(conn, [vids[s.id] for s in page])
    items = [
        _preview(store.to_item(full[s.id], now, score=s.score, ranks={"fts5": arm_rank[s.id]}), params)
        for s in page
    ]
    return items, len(extra)


def _needs_rows(params: RecallParams) -> bool:
    return bool(
        params.trust_weight or params.content_weight or params.diversity_halving < 1.0 or params.recency_half_life_secs
    )


def _pool_rows(conn: Any, vids: list[int], text: bool) -> dict[int, dict[str, Any]]:
    """The few columns the knobs need, for every pool candidate (the texts only when asked)."""
    columns = ["v.entity_id", "v.verified", "v.certainty", "e.created_at_ms"]
    if text:
        columns += ["v.content", "v.summary", "v.tags"]
    names = [c.split(".")[1] for c in columns]
    sql = f"SELECT {', '.join(columns)} FROM {FROM_VIDS}"
    return {row[0]: dict(zip(names, row)) for row in conn.execute(sql, {"vids": id_list(vids)})}


def _preview(item: RecallItem, params: RecallParams) -> RecallItem:
    if params.preview_cap is not None and len(item.content) > params.preview_cap:
        cut = preview(item.content, params.preview_cap, item.id)
        item.content = cut
        item.body = dict(item.body, content=cut)
    return item
