"""``/time``: the store as it was believed at a chosen time (and, optionally, as it held in the world at
another): its counts then beside now, and its memories then, in keyset pages, each opening the version
believed then (``counts`` and ``scan`` with ``as_of_unix_ms`` / ``valid_at_unix_ms``). Without a time, the
latest writes (``recent``), newest first, to choose one."""

from __future__ import annotations

from typing import Any

from ..layout import (
    Page,
    address,
    field,
    form,
    memory_link,
    message,
    preview,
    scope_fields,
    status_badge,
    table,
    text_input,
    when,
)
from ..markup import Markup, el, join
from ..query import Ask, Context

PAGE = 50


def render(ctx: Context, ask: Ask) -> Page:
    at, valid = ask.text("at"), ask.text("valid_at")
    controls = [
        field("believed at", text_input("at", at, placeholder="2026-01-31T09:30Z or unix ms", size_=22)),
        field("true at (optional)", text_input("valid_at", valid, size_=22)),
        *scope_fields(ask.scope),
        field("type", text_input("type", ask.text("type"), size_=10)),
        field("category", text_input("category", ask.text("category"), size_=10)),
    ]
    if at is None and valid is None:
        return Page("Time travel", join(form(controls, path="/time", submit="Travel"), _writes(ctx, ask)))
    when_args: dict[str, Any] = {
        "as_of_unix_ms": ask.instant("at"),
        "valid_at_unix_ms": ask.instant("valid_at"),
    }
    filters = {k: v for k, v in ask.filters().items() if k not in ("agent_id", "workspace_hash")}
    then = ctx.counts(ask.scope, **filters, **when_args, top=20)
    now = ctx.counts(ask.scope, **filters, top=20)  # the overview's, when no filter is set
    page = ctx.vault.scan(cursor=ask.text("cursor"), limit=PAGE, **ask.filters(), **when_args)
    rows = (
        [
            memory_link(ask.scope, e.id, address(e), as_of=at),
            f"v{e.version}",
            e.type,
            status_badge(e.status),
            when(e.recorded_from_ms),
            el("span", preview(e.content, 140), class_="text"),
        ]
        for e in page.items
    )
    query = {
        k: v
        for k, v in {**ask.filters(), "at": at, "valid_at": valid}.items()
        if k not in ("agent_id", "workspace_hash")
    }
    pager = (
        el("a", "Next page", href=ask.scope.link("/time", **query, cursor=page.next_cursor), rel="next")
        if page.has_more
        else None
    )
    return Page(
        "Time travel",
        join(
            form(controls, path="/time", submit="Travel"),
            el("section", el("h2", "Then and now"), _compare(then, now)),
            el(
                "section",
                el("h2", "The memories then"),
                table(
                    ("memory (as believed then)", "version", "type", "status", "believed since", "content"),
                    rows,
                    empty="nothing was stored then",
                ),
                el("p", pager, class_="pager"),
            ),
        ),
    )


def _compare(then: Any, now: Any) -> Markup:
    def rows(a: dict[str, int], b: dict[str, int]) -> list[list[str]]:
        return [[name, f"{a.get(name, 0):,}", f"{b.get(name, 0):,}"] for name in dict.fromkeys([*a, *b])]

    return join(
        message(f"{then.total:,} active memories then, {now.total:,} now."),
        el(
            "div",
            el(
                "div",
                el("h3", "By status"),
                table(("status", "then", "now"), rows(then.by_status, now.by_status)),
            ),
            el("div", el("h3", "By type"), table(("type", "then", "now"), rows(then.by_type, now.by_type))),
            el(
                "div",
                el("h3", "By category"),
                table(("category", "then", "now"), rows(then.by_category, now.by_category)),
            ),
            class_="columns",
        ),
    )


def _writes(ctx: Context, ask: Ask) -> Markup:
    page = ctx.vault.recent(cursor=ask.text("cursor"), limit=PAGE, **ask.scope.args())
    rows = (
        [
            el("a", when(e.recorded_from_ms), href=ask.scope.link("/time", at=e.recorded_from_ms)),
            e.change,
            memory_link(ask.scope, e.id, address(e)),
            f"v{e.version}",
            el("span", preview(e.content, 120), class_="text"),
        ]
        for e in page.items
    )
    older = (
        el("a", "Older writes", href=ask.scope.link("/time", cursor=page.next_cursor), rel="next")
        if page.has_more
        else None
    )
    return join(
        message("Choose a time, or open one of the writes below to see the store as it stood then."),
        el(
            "section",
            el("h2", "Writes, newest first"),
            table(
                ("when (travel there)", "change", "memory", "version", "content"), rows, empty="no writes yet"
            ),
            el("p", older, class_="pager"),
        ),
    )
