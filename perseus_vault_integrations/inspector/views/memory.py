"""``/memory/ID``: one memory whole: its content and body, every version on its two time axes, its links
in and out, its communities, its provenance and usage (``get_entity``, ``history``, ``traverse``,
``communities``). With ``as_of``, the version believed at that time (``as_of``). With ``--allow-edits``,
forms to forget, restore or verify it (POSTs, see :mod:`..edits`)."""

from __future__ import annotations

from typing import Any

from perseus_vault_core import MAX_LIMIT, Entity, NotFound

from ..drawing import timeline
from ..layout import (
    Page,
    Scope,
    address,
    facts,
    json_block,
    memory_link,
    message,
    preview,
    status_badge,
    table,
    text_block,
    when,
)
from ..markup import Markup, el, join
from ..query import Ask, Context


def render(ctx: Context, ask: Ask, entity_id: int) -> Page:
    scope = ask.scope
    e = ctx.vault.get_entity(entity_id, **scope.args())
    own = Scope(e.agent_id, e.workspace_hash, scope.bound)
    shown: Entity | None = e
    at = ask.text("as_of")
    if at is not None:
        shown = ctx.vault.as_of(e.category, e.key, ask.instant("as_of") or at, **own.args())
    parts: list[Any] = [
        el(
            "p",
            status_badge(e.status),
            f" {e.type} · version {e.version} · ",
            el("a", "its neighbourhood in the graph", href=scope.link("/graph", id=e.id)),
            class_="lead",
        )
    ]
    if at is not None:
        parts.append(
            message(
                [
                    "As believed at ",
                    at,
                    ": ",
                    "no version then" if shown is None else f"version {shown.version}",
                    " (",
                    el("a", "now", href=scope.link(f"/memory/{e.id}")),
                    ")",
                ]
            )
        )
    if shown is not None:
        parts += [_content(shown), _edits(ctx, e) if ctx.edits and at is None else None, _about(shown)]
    parts += [_history(ctx, e, own), _links(ctx, e, own), _communities(ctx, e, own, scope)]
    return Page(f"{address(e)} (#{e.id})", join(parts))


def _content(e: Entity) -> Markup:
    body = {k: v for k, v in e.body.items()}
    return el(
        "section",
        el("h2", "Content"),
        el("p", el("strong", e.summary)) if e.summary else None,
        text_block(e.content),
        el("h3", "Body fields") if body else None,
        json_block(body) if body else None,
        el("h3", "Recalled unasked when") if e.recall_when else None,
        el("ul", [el("li", phrase) for phrase in e.recall_when]) if e.recall_when else None,
    )


def _about(e: Entity) -> Markup:
    return el(
        "section",
        el("h2", "Provenance and usage"),
        el(
            "div",
            facts(
                [
                    ("agent / workspace", f"{e.agent_id or '—'} / {e.workspace_hash or '—'}"),
                    ("topic path", e.topic_path),
                    ("source", e.source),
                    ("provenance", e.provenance_class),
                    ("verified", "yes" if e.verified else "no"),
                    ("certainty", None if e.certainty is None else f"{e.certainty:g}"),
                ]
            ),
            facts(
                [
                    ("retrievals", str(e.retrieval_count)),
                    ("last retrieved", when(e.last_accessed_ms)),
                    ("decay", f"{e.decay:.3f}"),
                    ("created", when(e.created_at_ms)),
                    ("updated", when(e.updated_at_ms)),
                    ("valid", join(when(e.valid_from_ms), " to ", when(e.valid_to_ms))),
                    ("expires", when(e.expires_at_ms)),
                    ("supersedes", e.supersedes),
                    ("superseded by", e.superseded_by),
                ]
            ),
            class_="columns",
        ),
    )


def _edits(ctx: Context, e: Entity) -> Markup:
    def button(action: str, label: str) -> Markup:
        return el(
            "form",
            el("input", type="hidden", name="csrf", value=ctx.csrf),
            el("button", label, type="submit"),
            method="post",
            action=f"/memory/{e.id}/{action}",
            class_="edit",
        )

    return el(
        "section",
        el("h2", "Change it"),
        button("forget", "Forget (archive)") if e.status != "archived" else button("restore", "Restore"),
        button("verify", "Mark verified") if not e.verified else None,
        class_="edits",
    )


def _history(ctx: Context, e: Entity, own: Scope) -> Markup:
    page = ctx.vault.history(e.category, e.key, limit=MAX_LIMIT, **own.args())
    rows = (
        [
            f"v{v.version}",
            v.change,
            status_badge(v.status),
            when(v.recorded_from_ms),
            when(v.recorded_to_ms),
            when(v.valid_from_ms),
            when(v.valid_to_ms),
            el("a", preview(v.content, 90), href=own.link(f"/memory/{e.id}", as_of=v.recorded_from_ms)),
        ]
        for v in page.items
    )
    return el(
        "section",
        el("h2", f"History ({page.total} version{'s' if page.total != 1 else ''})"),
        timeline(page.items),
        table(
            ("version", "change", "status", "believed from", "until", "true from", "until", "content"), rows
        ),
        message(f"the newest {len(page.items)} shown") if page.has_more else None,
        id="history",
    )


def _links(ctx: Context, e: Entity, own: Scope) -> Markup:
    try:
        walk = ctx.vault.traverse(e.id, depth=1, include_archived=True, **own.args())
    except NotFound:  # a walk starts in the current view, where a memory not valid now is not
        return el(
            "section",
            el("h2", "Links"),
            message("Links are walked in the current view, where this memory is not (it is not valid now)."),
            id="links",
        )
    titles = {n.entity.id: n.entity for n in walk.nodes}

    def rows(out: bool) -> list[list[Any]]:
        found = []
        for link in walk.edges:
            other = link.to_id if out else link.from_id
            if (link.from_id == e.id) == out and other in titles:
                o = titles[other]
                relation = f"{link.relation} (inferred)" if link.source == "inferred" else link.relation
                found.append(
                    [
                        relation,
                        f"{link.weight:g}",
                        memory_link(own, other, address(o)),
                        status_badge(o.status),
                        preview(o.summary or o.content, 90),
                        when(link.recorded_from_ms),
                    ]
                )
        return found

    head = ("relation", "weight", "memory", "status", "content", "since")
    return el(
        "section",
        el("h2", "Links"),
        el("h3", "Out of it"),
        table(head, rows(True), empty="no links out"),
        el("h3", "Into it"),
        table(head, rows(False), empty="no links in"),
        id="links",
    )


def _communities(ctx: Context, e: Entity, own: Scope, scope: Scope) -> Markup:
    ready, seconds = ctx.clustered(scope)
    if not ready:
        return el(
            "section",
            el("h2", "Communities"),
            message(
                [
                    f"The link graph is being clustered ({seconds:.0f} s so far); ",
                    el("a", "reload", href=scope.link(f"/memory/{e.id}")),
                    " to see this memory's communities.",
                ]
            ),
        )
    # The page's scope, not the memory's: links never join two scopes, so its communities are the same,
    # and every page of the inspector then reads one partition of the graph (clustered once per write).
    found = ctx.vault.communities(containing=[e.id], **scope.args())
    items = []
    for c in found.communities:
        summary = (
            ctx.vault.get_entity(c.summary_id, **own.args()).content if c.summary_id is not None else None
        )
        items.append(
            el(
                "li",
                el("strong", f"{c.size} memories"),
                " · central: ",
                [
                    [", " if i else "", memory_link(own, m.id, preview(m.title, 50))]
                    for i, m in enumerate(c.central)
                ],
                el("p", preview(summary, 400), class_="summary") if summary else None,
            )
        )
    return el(
        "section",
        el("h2", "Communities"),
        el("ul", items) if items else el("p", "in no community (no links in this view)", class_="empty"),
    )
