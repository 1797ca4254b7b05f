"""``/``: the store at a glance: counts by status, scope, type and category, the file and its indexes, and
the latest writes (``counts``, ``stats``, ``recent``)."""

from __future__ import annotations

from typing import Any

from ..layout import Page, Scope, address, facts, memory_link, preview, size, table, when
from ..markup import Markup, el, join
from ..query import Ask, Context

LATEST = 15


def render(ctx: Context, ask: Ask) -> Page:
    scope = ask.scope
    counts = ctx.counts(scope, top=ask.number("top", 20, 1, 1000))  # kept until the next write
    latest = ctx.vault.recent(limit=LATEST, **scope.args())
    parts = [el("section", el("h2", "Memories"), _counts(counts, scope), class_="counts")]
    if not scope.bound:  # stats reach past any scope: a bound inspector does not show them
        parts.append(el("section", el("h2", "The store"), _store(ctx.stats())))
    parts.append(
        el(
            "section",
            el("h2", "Latest writes"),
            table(
                ("when", "change", "memory", "version", "content"),
                (
                    [
                        when(e.recorded_from_ms),
                        e.change,
                        memory_link(scope, e.id, address(e)),
                        f"v{e.version}",
                        preview(e.content, 100),
                    ]
                    for e in latest.items
                ),
                empty="no writes yet",
            ),
            el("p", el("a", "Older writes", href=scope.link("/time"))) if latest.has_more else None,
        )
    )
    return Page("Overview", join(parts))


def _counts(c: Any, scope: Scope) -> Markup:
    statuses = [
        [", " if i else "", el("a", f"{n:,} {status}", href=scope.link("/browse", status=status))]
        for i, (status, n) in enumerate(c.by_status.items())
    ] or "none"
    by_scope = table(
        ("agent", "workspace", "memories"),
        (
            [
                s.agent_id or "—",
                s.workspace_hash or "—",
                el("a", f"{s.count:,}", href=Scope(s.agent_id, s.workspace_hash).link("/browse")),
            ]
            for s in c.by_scope
        ),
        empty="no memories",
    )

    def listing(name: str, counted: dict[str, int], total: int) -> Markup:
        rows = (
            [el("a", value, href=scope.link("/browse", **{name: value})), f"{n:,}"]
            for value, n in counted.items()
        )
        more = el("p", f"and {total - len(counted)} more", class_="more") if total > len(counted) else None
        return el("div", el("h3", f"By {name} ({total})"), table((name, "memories"), rows), more)

    return join(
        el("p", el("strong", f"{c.total:,}"), " active memories; by status: ", statuses, "."),
        el(
            "div",
            el("div", el("h3", f"By scope ({c.scopes})"), by_scope) if not scope.bound else None,
            listing("type", c.by_type, c.types),
            listing("category", c.by_category, c.categories),
            class_="columns",
        ),
    )


def _store(s: Any) -> Markup:
    return facts(
        [
            ("where", f"{s.path} ({s.backend}, schema {s.schema_version})"),
            ("memories", f"{s.entities:,} ({', '.join(f'{n:,} {k}' for k, n in s.by_status.items())})"),
            ("versions, links", f"{s.versions:,} versions, {s.links:,} links"),
            ("size", size(s.db_bytes)),
            ("keyword index", s.keyword_index),
            ("vector index", s.vector_index),
            ("embeddings", f"{s.embedding_model or 'none'} ({s.embedding_coverage:.0%} of versions)"),
            ("encrypted", "yes" if s.encrypted else "no"),
        ]
    )
