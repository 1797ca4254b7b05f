"""``/browse``: every memory of a scope, filtered by type, category, topic path, status and text.

Without text it is ``scan``: keyset pages by id, which cost the same on the last page of 100,000 memories
as on the first (a page's link carries its cursor, so it can be shared). With text it is keyword recall
(``recall`` in ``fts5`` mode, nothing reinforced): the best matches first, paged by offset; a status other
than active keeps the matches showing it.
"""

from __future__ import annotations

from typing import Any

from perseus_vault_core import MAX_OFFSET

from ..layout import (
    Page,
    address,
    checkbox,
    choice,
    field,
    form,
    memory_link,
    message,
    preview,
    scope_fields,
    status_badge,
    table,
    text_input,
    true_dates,
)
from ..markup import Markup, el, join
from ..query import Ask, Context

STATUSES = ("active", "archived", "expired", "superseded", "any")
SIZES = ("25", "50", "100", "250")


def render(ctx: Context, ask: Ask) -> Page:
    status = ask.pick("status", STATUSES, "active")
    limit = int(ask.pick("limit", SIZES, "50"))
    text = ask.text("q")
    filters = ask.filters()
    controls = [
        *scope_fields(ask.scope),
        field("type", text_input("type", filters["type"], size_=10)),
        field("category", text_input("category", filters["category"], size_=12)),
        field("topic path", text_input("topic_path", filters["topic_path"], size_=14)),
        field("status", choice("status", [(s, s) for s in STATUSES], status)),
        field("text", text_input("q", text, placeholder="words to find", size_=18)),
        field("per page", choice("limit", [(n, n) for n in SIZES], str(limit))),
        checkbox("full", ask.flag("full"), "whole content"),
    ]
    query = {
        k: v
        for k, v in {**filters, "status": status, "q": text, "limit": limit, "full": ask.flag("full")}.items()
        if k not in ("agent_id", "workspace_hash")
    }
    listing = (
        _found(ctx, ask, text, status, limit, filters, query)
        if text
        else _scanned(ctx, ask, status, limit, filters, query)
    )
    return Page("Browse", join(form(controls, path="/browse"), listing))


def _row(ask: Ask, e: Any, *extra: Any) -> list[Any]:
    content = e.content if ask.flag("full") else preview(e.content)
    return [
        memory_link(ask.scope, e.id),
        memory_link(ask.scope, e.id, address(e)),
        e.type,
        e.topic_path or "—",
        status_badge(e.status),
        true_dates(e),
        *extra,
        el("span", content, class_="text"),
    ]


HEAD = ("id", "category/key", "type", "topic path", "status", "true from")


def _scanned(
    ctx: Context, ask: Ask, status: str, limit: int, filters: dict[str, Any], query: dict[str, Any]
) -> Markup:
    cursor = ask.text("cursor")
    chosen = {"include_archived": True} if status == "any" else {"status": status}
    page = ctx.vault.scan(cursor=cursor, limit=limit, **filters, **chosen)
    pager = [
        el("a", "First page", href=ask.scope.link("/browse", **query)) if cursor else None,
        el("a", "Next page", href=ask.scope.link("/browse", **query, cursor=page.next_cursor), rel="next")
        if page.has_more
        else None,
    ]
    return join(
        table((*HEAD, "content"), (_row(ask, e) for e in page.items), empty="no memory matches"),
        el("p", pager, class_="pager"),
    )


def _found(
    ctx: Context, ask: Ask, text: str, status: str, limit: int, filters: dict[str, Any], query: dict[str, Any]
) -> Markup:
    offset = ask.number("offset", 0, 0, MAX_OFFSET)
    result = ctx.vault.recall(
        text,
        mode="fts5",
        limit=limit,
        offset=offset,
        reinforce=False,
        include_archived=status != "active",
        **filters,
    )
    items = [i for i in result.items if status in ("any", "active") or i.status == status]
    pager = [
        el("a", "Previous", href=ask.scope.link("/browse", **query, offset=max(0, offset - limit)))
        if offset
        else None,
        el("a", "Next", href=ask.scope.link("/browse", **query, offset=offset + limit), rel="next")
        if len(result.items) == limit and offset + limit <= MAX_OFFSET
        else None,
    ]
    note = message(
        f"Matches {offset + 1}–{offset + len(result.items)} for the words of “{text}”, best first "
        "(keyword recall, nothing reinforced)"
        + ("" if status in ("any", "active") else f"; {len(items)} of them {status}")
        + "."
    )
    return join(
        note,
        table(
            (*HEAD, "score", "content"),
            (_row(ask, i, f"{i.score:.3f}") for i in items),
            empty="no memory matches",
        ),
        el("p", pager, class_="pager"),
    )
