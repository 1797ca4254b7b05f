"""The two pictures the inspector draws, as SVG laid out here (no script, no library, the same input
gives the same drawing): a memory's link neighbourhood coloured by community, and a fact's versions on
its two time axes.

The neighbourhood is drawn as a radial tree: the memory in the middle, each hop on a ring further out,
every node placed within the angle its parent's share of the walk gives it (shares by the number of
leaves below, children in id order), so the picture follows the walk's own shortest paths. Links that
are not on those paths are drawn too, as thinner lines.

The timeline gives each version two bars: when the vault believed it (transaction time,
``recorded_from_ms`` to ``recorded_to_ms``) and when it held in the world (valid time, ``valid_from_ms``
to ``valid_to_ms``); an open end runs to the edge of the picture.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from perseus_vault_core import iso_time

from .markup import Markup, el

# Colour-blind-safe categorical colours (Okabe and Ito), then greys for the rest.
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#000000")
NO_COMMUNITY = "#9aa0a6"
RING = 150
MARGIN = 40
LABEL_ROOM = 150  # to the right of the rightmost node, for its name
LABEL_CHARS = 22
MAX_LABELS = 80  # past this many nodes, names are in each node's tooltip only


def colour(index: int | None) -> str:
    """The colour of the ``index``-th community (largest first); grey for none or past the palette."""
    return PALETTE[index] if index is not None and index < len(PALETTE) else NO_COMMUNITY


@dataclass(frozen=True)
class Node:
    id: int
    depth: int
    parent: int | None
    label: str
    community: int | None  # index into the communities shown, largest first


def radial(nodes: Sequence[Node]) -> dict[int, tuple[float, float]]:
    """Positions of the walk's nodes (see the module's docstring), the start at (0, 0)."""
    children: dict[int, list[int]] = defaultdict(list)
    for n in nodes:
        if n.parent is not None:
            children[n.parent].append(n.id)
    for kids in children.values():
        kids.sort()
    leaves: dict[int, int] = {}

    def count(node: int) -> int:
        leaves[node] = sum(count(k) for k in children[node]) or 1
        return leaves[node]

    root = next(n.id for n in nodes if n.parent is None)
    count(root)
    depth = {n.id: n.depth for n in nodes}
    at: dict[int, tuple[float, float]] = {}
    stack = [(root, 0.0, 2 * math.pi)]
    while stack:
        node, start, span = stack.pop()
        angle = start + span / 2
        radius = depth[node] * RING
        at[node] = (round(radius * math.cos(angle), 1), round(radius * math.sin(angle), 1))
        offset = start
        for kid in children[node]:
            share = span * leaves[kid] / leaves[node]
            stack.append((kid, offset, share))
            offset += share
    return at


def neighbourhood(nodes: Sequence[Node], edges: Sequence[Any], link: Callable[[int], str]) -> Markup:
    """The SVG of a walk: ``edges`` are its links (``from_id``, ``to_id``, ``relation``, ``weight``)."""
    at = radial(nodes)
    xs, ys = [x for x, _ in at.values()], [y for _, y in at.values()]
    left, top = min(xs) - MARGIN, min(ys) - MARGIN
    width, height = round(max(xs) + MARGIN + LABEL_ROOM - left), round(max(ys) + MARGIN - top)
    lines = []
    for e in edges:
        if e.from_id in at and e.to_id in at:
            (x1, y1), (x2, y2) = at[e.from_id], at[e.to_id]
            inferred = getattr(e, "source", None) == "inferred"  # judged by the vault at write time
            lines.append(
                el(
                    "line",
                    el(
                        "title",
                        f"{e.relation} ({e.weight:g}{', inferred' if inferred else ''}): "
                        f"#{e.from_id} → #{e.to_id}",
                    ),
                    x1=x1,
                    y1=y1,
                    x2=x2,
                    y2=y2,
                    class_="edge inferred" if inferred else "edge",
                    marker_end="url(#arrow)",
                    data_from=e.from_id,
                    data_to=e.to_id,
                )
            )
    labelled = len(nodes) <= MAX_LABELS
    dots = []
    for n in nodes:
        x, y = at[n.id]
        label = n.label if len(n.label) <= LABEL_CHARS else n.label[: LABEL_CHARS - 1] + "…"
        dots.append(
            el(
                "a",
                el(
                    "circle",
                    el("title", f"#{n.id} {n.label}"),
                    cx=x,
                    cy=y,
                    r=14 if n.depth == 0 else 9,
                    fill=colour(n.community),
                    class_="node start" if n.depth == 0 else "node",
                ),
                el("text", label, x=x + 13, y=y + 4, class_="label") if labelled or n.depth == 0 else None,
                href=link(n.id),
                data_node=n.id,
            )
        )
    marker = el(
        "marker",
        el("path", d="M0,0 L8,4 L0,8 z", class_="arrowhead"),
        id="arrow",
        viewBox="0 0 8 8",
        refX=20,
        refY=4,
        markerWidth=8,
        markerHeight=8,
        orient="auto",
    )
    return el(
        "svg",
        el("defs", marker),
        el("g", lines, class_="edges"),
        el("g", dots, class_="nodes"),
        viewBox=f"{left:g} {top:g} {width} {height}",
        width=width,
        height=height,
        class_="graph",
        role="img",
        aria_label=f"{len(nodes)} memories and {len(lines)} links around #{nodes[0].id}",
    )


# --- timeline ---------------------------------------------------------------------------------------

WIDTH = 860
LEFT = 70
ROW = 16


def timeline(versions: Sequence[Any]) -> Markup:
    """The SVG of a fact's versions (oldest at the top): believed and true intervals on one time axis,
    from a little before its first instant to a little after its last (open ends run to the edge)."""
    ordered = sorted(versions, key=lambda e: e.version)
    times: list[float] = [
        t
        for e in ordered
        for t in (e.recorded_from_ms, e.recorded_to_ms, e.valid_from_ms, e.valid_to_ms)
        if t is not None
    ]
    low, high = min(times), max(times)
    pad = max((high - low) * 0.05, 3_600_000.0)  # at least an hour either side: one instant still has a width
    low, high = low - pad, high + pad

    def x(ms: float | None, open_end: float) -> float:
        value = float(open_end if ms is None else ms)
        return round(LEFT + (WIDTH - LEFT - 10) * (value - low) / (high - low), 1)

    rows = []
    for i, e in enumerate(ordered):
        top = 24 + i * 2 * ROW
        believed = (x(e.recorded_from_ms, low), x(e.recorded_to_ms, high))
        true = (x(e.valid_from_ms, low), x(e.valid_to_ms, high))
        rows.append(el("text", f"v{e.version}", x=4, y=top + ROW - 3, class_="axis"))
        for n, ((a, b), kind, start, end) in enumerate(
            (
                (believed, "believed", e.recorded_from_ms, e.recorded_to_ms),
                (true, "true", e.valid_from_ms, e.valid_to_ms),
            )
        ):
            since, until = (
                iso_time(start, "minutes") if start else "always",
                iso_time(end, "minutes") if end else "now on",
            )
            tip = f"v{e.version} {kind} from {since} to {until}"
            rows.append(
                el(
                    "rect",
                    el("title", tip),
                    x=a,
                    y=top + n * ROW,
                    width=max(b - a, 2),
                    height=ROW - 4,
                    class_=f"bar {kind}" + (" open" if end is None else ""),
                )
            )
    height = 24 + len(ordered) * 2 * ROW + 24
    ticks = [low + (high - low) * k / 4 for k in range(5)]
    anchors = ("start", "middle", "middle", "middle", "end")  # the outer labels stay inside the picture
    axis = [
        el("text", iso_time(t, "minutes"), x=x(t, t), y=height - 6, class_="axis", text_anchor=a)
        for t, a in zip(ticks, anchors)
    ]
    legend = [
        el("rect", x=LEFT, y=2, width=12, height=10, class_="bar believed"),
        el("text", "believed (transaction time)", x=LEFT + 16, y=11, class_="axis"),
        el("rect", x=LEFT + 220, y=2, width=12, height=10, class_="bar true"),
        el("text", "true in the world (valid time)", x=LEFT + 236, y=11, class_="axis"),
    ]
    return el(
        "svg",
        legend,
        rows,
        axis,
        viewBox=f"0 0 {WIDTH} {height}",
        width=WIDTH,
        height=height,
        class_="timeline",
        role="img",
        aria_label=f"{len(ordered)} versions on their two time axes",
    )
