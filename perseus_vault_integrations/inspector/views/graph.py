"""``/graph``: the link neighbourhood of a memory, each node coloured by its community, with the
communities' summaries; without a memory, the largest communities, each a way into the graph
(``traverse``, ``communities`` with ``containing``, a summary when one was written)."""

from __future__ import annotations

from typing import Any

from ..drawing import Node, colour, neighbourhood
from ..layout import (
    Page,
    Scope,
    choice,
    field,
    form,
    memory_link,
    message,
    preview,
    scope_fields,
    table,
    text_input,
)
from ..markup import Markup, el, join
from ..query import Ask, Context

DIRECTIONS = ("both", "out", "in")
LARGEST = 25


def render(ctx: Context, ask: Ask) -> Page:
    start = ask.number("id", 0, 0, 2**53 - 1)
    depth = ask.number("depth", 2, 1, 4)
    direction: Any = ask.pick("direction", DIRECTIONS, "both")  # one of traverse's directions
    inferred = ask.pick("inferred", ("yes", "no"), "yes")  # the links the vault inferred at write time too
    controls = [
        *scope_fields(ask.scope),
        field("memory id", text_input("id", start or None, size_=8)),
        field("hops", choice("depth", [(str(n), str(n)) for n in range(1, 5)], str(depth))),
        field("links", choice("direction", [(d, d) for d in DIRECTIONS], direction)),
        field("inferred links", choice("inferred", [("yes", "shown"), ("no", "left out")], inferred)),
    ]
    ready, seconds = ctx.clustered(ask.scope)
    waiting = (
        None
        if ready
        else join(
            el("meta", http_equiv="refresh", content="3"),
            message(
                f"The link graph is being clustered ({seconds:.0f} s so far): the communities appear when it is done; "
                "this page reloads itself until then."
            ),
        )
    )
    if not start:
        return Page("Graph", join(form(controls, path="/graph"), waiting or _largest(ctx, ask.scope)))
    walk = ctx.vault.traverse(
        start,
        depth=depth,
        direction=direction,
        include_archived=ask.flag("include_archived"),
        inferred=inferred == "yes",
        **ask.scope.args(),
    )
    ids = [n.entity.id for n in walk.nodes]
    found = (
        ctx.vault.communities(containing=ids, limit=1000, central=3, **ask.scope.args()) if ready else None
    )
    index = {m: i for i, c in enumerate(found.communities) for m in c.members} if found else {}
    nodes = [
        Node(
            n.entity.id,
            n.depth,
            n.path[-2] if len(n.path) > 1 else None,
            preview(n.entity.summary or n.entity.content, 60),
            index.get(n.entity.id),
        )
        for n in walk.nodes
    ]
    picture = neighbourhood(
        nodes,
        walk.edges,
        lambda i: ask.scope.link("/graph", id=i, depth=depth, direction=direction, inferred=inferred),
    )
    start_entity = walk.nodes[0].entity
    return Page(
        f"Graph around #{start}",
        join(
            form(controls, path="/graph"),
            message(
                [
                    f"{len(walk.nodes)} memories within {depth} hop(s) of ",
                    memory_link(ask.scope, start, f"{start_entity.category}/{start_entity.key}"),
                    f", {len(walk.edges)} links ({sum(e.source == 'inferred' for e in walk.edges)} inferred by the vault"
                    " when a memory was written, dashed); a node links to its own neighbourhood, its tooltip names it.",
                ]
            ),
            el("div", picture, class_="figure"),
            waiting
            or el(
                "section",
                el("h2", f"Communities here ({len(found.communities) if found else 0})"),
                _legend(ctx, ask.scope, found.communities if found else [], set(ids)),
            ),
        ),
    )


def swatch(index: int | None) -> Markup:
    """A small square of the community's colour (as the graph draws it)."""
    return el(
        "svg",
        el("rect", width=12, height=12, rx=2, fill=colour(index)),
        width=12,
        height=12,
        class_="swatch",
        aria_hidden="true",
    )


def _legend(ctx: Context, scope: Scope, communities: list[Any], here: set[int]) -> Markup:
    items = []
    for i, c in enumerate(communities):
        summary = (
            ctx.vault.get_entity(c.summary_id, **scope.args()).content if c.summary_id is not None else None
        )
        shown = len(here.intersection(c.members))
        items.append(
            el(
                "li",
                swatch(i),
                el("strong", f"{c.size} memories"),
                f" ({shown} shown) · central: ",
                [
                    [", " if k else "", memory_link(scope, m.id, preview(m.title, 40))]
                    for k, m in enumerate(c.central)
                ],
                el("p", preview(summary, 300), class_="summary")
                if summary
                else el("p", "no summary written yet (community_summary writes one)", class_="summary none"),
            )
        )
    grey = el("li", swatch(None), " grey: in no community, or past the eighth colour")
    return (
        el("ul", items, grey, class_="legend")
        if items
        else el("p", "no communities among these memories", class_="empty")
    )


def _largest(ctx: Context, scope: Scope) -> Markup:
    found = ctx.vault.communities(limit=LARGEST, central=3, **scope.args())
    rows = (
        [
            swatch(i),
            str(c.size),
            [
                [", " if k else "", el("a", preview(m.title, 40), href=scope.link("/graph", id=m.id))]
                for k, m in enumerate(c.central)
            ],
            c.agent_id or "—",
            c.workspace_hash or "—",
            memory_link(scope, c.summary_id, "summary") if c.summary_id is not None else "—",
        ]
        for i, c in enumerate(found.communities)
    )
    return join(
        message(
            f"{found.total} communities among {found.nodes:,} memories and {found.edges:,} links "
            f"({found.method}); the largest {min(found.total, LARGEST)}, each by its central memories:"
        ),
        table(
            ("", "size", "central memories (open one's neighbourhood)", "agent", "workspace", "summary"),
            rows,
            empty="no communities: no memory is linked yet",
        ),
    )
