"""The drawings: a walk laid out as a radial tree, the same every time; a fact's versions on two time axes."""

from __future__ import annotations

import math
import re
from types import SimpleNamespace

from perseus_vault_integrations.inspector.drawing import (
    NO_COMMUNITY,
    PALETTE,
    RING,
    Node,
    colour,
    neighbourhood,
    radial,
    timeline,
)

from ...conftest import DAY_MS, T0


def walk() -> list[Node]:
    """1 -> 2, 3, 4; 2 -> 5, 6; 4 -> 7 (ids out of order on purpose)."""
    return [
        Node(1, 0, None, "start", 0),
        Node(4, 1, 1, "four", 0),
        Node(2, 1, 1, "two", 1),
        Node(3, 1, 1, "three", None),
        Node(6, 2, 2, "six", 1),
        Node(5, 2, 2, "five", 1),
        Node(7, 2, 4, "seven", 9),
    ]


def test_the_start_is_in_the_middle_and_each_hop_on_its_ring() -> None:
    at = radial(walk())
    assert at[1] == (0.0, 0.0)
    for node in walk():
        assert math.isclose(math.hypot(*at[node.id]), node.depth * RING, abs_tol=0.2)


def test_children_sit_within_their_parent_s_share_and_the_layout_never_varies() -> None:
    nodes = walk()
    at = radial(nodes)
    assert radial(list(reversed(nodes))) == at  # the order the walk lists them in does not matter
    angle = {n: math.atan2(y, x) % (2 * math.pi) for n, (x, y) in at.items() if n != 1}
    # leaves below: 2 has two, 3 one, 4 one: 2 takes half the circle, 3 and 4 a quarter each, in id order
    assert angle[2] < angle[3] < angle[4]
    assert angle[5] < angle[2] < angle[6]  # a parent sits between its children
    assert len(set(at.values())) == len(nodes)


def test_the_graph_names_every_node_and_colours_it_by_community() -> None:
    edges = [
        SimpleNamespace(from_id=1, to_id=2, relation="supports", weight=1.0),
        SimpleNamespace(from_id=6, to_id=5, relation="mentions", weight=0.5),
        SimpleNamespace(from_id=1, to_id=99, relation="elsewhere", weight=1.0),
    ]  # an end not drawn: no line
    svg = neighbourhood(walk(), edges, lambda i: f"/graph?id={i}")
    assert svg.count("<circle") == 7 and svg.count("<line") == 2
    assert re.findall(r'data-node="(\d+)"', svg) == ["1", "4", "2", "3", "6", "5", "7"]
    assert f'fill="{PALETTE[0]}"' in svg and f'fill="{PALETTE[1]}"' in svg and f'fill="{NO_COMMUNITY}"' in svg
    assert colour(9) == NO_COMMUNITY and 'href="/graph?id=7"' in svg
    assert neighbourhood(walk(), edges, lambda i: f"/graph?id={i}") == svg


def version(
    n: int, recorded: tuple[int, int | None], valid: tuple[int | None, int | None]
) -> SimpleNamespace:
    return SimpleNamespace(
        version=n,
        recorded_from_ms=recorded[0],
        recorded_to_ms=recorded[1],
        valid_from_ms=valid[0],
        valid_to_ms=valid[1],
    )


def test_the_timeline_draws_two_bars_a_version_and_open_ends_to_the_edge() -> None:
    versions = [
        version(2, (T0 + DAY_MS, None), (T0 + 5 * DAY_MS, None)),
        version(1, (T0, T0 + DAY_MS), (T0, None)),
    ]
    svg = timeline(versions)
    assert (
        svg.count('class="bar believed') == 3 and svg.count('class="bar true') == 3
    )  # the legend has one of each
    assert svg.index(">v1<") < svg.index(">v2<")  # oldest at the top
    assert svg.count(" open") == 3  # v2 believed until now; both versions true with no end
    assert "2026-01-01" in svg
