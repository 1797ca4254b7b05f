"""Communities of the link graph: deterministic clusters with stable ids (docs/graphrag.md).

The graph is the caller's view of the vault: the entities it may see (scope, status and time
rules as for every read, summaries of communities left out) and the links open in that view
whose two ends it may see. Written links (``link``, a judge's verdict but ``distinct``) count at their
weight and place the memories they join; a relation the vault inferred at write time counts at
:data:`INFERRED_SHARE` of its score, and only between two memories nobody placed, so that a store nobody
linked has communities and one whose writer linked keeps exactly those its links make. Links are undirected
here; several links between one pair add their weights, and a pair whose weights sum to zero or less is
not an edge.

Determinism. The graph is rebuilt in a canonical order (nodes by id, edges by id pair) and
clustered by label propagation (the default: networkx's semi-synchronous variant, which involves
no randomness, run on each connected component) or by Louvain modularity with a fixed seed; a
community's id is a hash of its sorted member ids. The same graph therefore gives
the same communities and the same ids in every run and every process, whatever order the
entities and links were written in. Links never join two scopes, so neither can a community.

Incremental. With label propagation a component's clusters depend on that component alone, so
they are memoised by a fingerprint of its nodes and edges: after a change only the components it
touched are clustered again, and every other community keeps its members and its id. Modularity
weighs every community against the whole graph, so that method clusters the graph as one unit
(memoised by the whole graph's fingerprint) and any change can move any community. A whole partition
is also kept until the graph changes (the links table, or any entity's current version) or
the clock passes an expiry or validity boundary that could change who is visible (and is never
served for an instant earlier than the one it was built for).
"""

from __future__ import annotations

import hashlib
import math
import threading
from collections import OrderedDict, defaultdict
from dataclasses import dataclass, field
from typing import Any, Literal

from ...primitives.dbapi import Connection
from ...primitives.filters import FROM, View
from ...recall.curation import INFERRED, JUDGE
from ...storage.base import ChangeLog
from ..graph import open_links

Method = Literal["label_propagation", "modularity"]
METHODS: tuple[str, ...] = ("label_propagation", "modularity")
SUMMARY_TYPE = "community_summary"
_MEMO_SIZE = 4_096
INFERRED_SHARE = 0.5  # of an inferred link's score, as its weight: below a written link's default 1.0
_PARTITIONS_KEPT = 16


@dataclass(frozen=True)
class Group:
    """One community: its id, scope, members (ascending) and each member's weighted degree inside it."""

    id: str
    agent_id: str
    workspace_hash: str
    members: tuple[int, ...]
    centrality: dict[int, float]
    edges: tuple[tuple[int, int, float], ...]  # inside the community, ascending

    def neighbours(self) -> dict[int, list[int]]:
        """Each member's neighbours inside the community, strongest link first, ties by id."""
        out: dict[int, list[tuple[float, int]]] = defaultdict(list)
        for a, b, w in self.edges:
            out[a].append((-w, b))
            out[b].append((-w, a))
        return {m: [n for _, n in sorted(out[m])] for m in self.members}

    def central(self, n: int) -> list[int]:
        """The ``n`` most central members: highest weighted degree inside the community, ties by id."""
        return sorted(self.members, key=lambda m: (-self.centrality[m], m))[:n]


@dataclass(frozen=True)
class Partition:
    groups: tuple[Group, ...]  # largest first, ties by id
    nodes: int
    edges: int

    def find(self, community_id: str) -> Group | None:
        return next((g for g in self.groups if g.id == community_id), None)


@dataclass
class Graph:
    nodes: dict[int, tuple[str, str]] = field(default_factory=dict)  # id -> (agent_id, workspace_hash)
    edges: dict[tuple[int, int], float] = field(default_factory=dict)  # (low id, high id) -> weight
    next_change_ms: int | None = None  # when time alone could next change who is visible


def community_id(members: tuple[int, ...] | list[int]) -> str:
    """A community's id: a hash of its sorted member ids (the same members, the same id)."""
    digest = hashlib.sha256(",".join(str(m) for m in sorted(members)).encode()).hexdigest()
    return "c" + digest[:16]


# --- reading the graph -------------------------------------------------------------------------


def load(conn: Connection, view: View) -> Graph:
    """The caller's view of the link graph (see the module's docstring)."""
    graph = Graph()
    boundary: list[int] = []
    sql = (
        f"SELECT e.id, e.agent_id, e.workspace_hash, v.expires_at_ms, v.valid_to_ms FROM {FROM} "
        f"WHERE {view.where} AND v.type != '{SUMMARY_TYPE}'"
    )
    for entity_id, agent, workspace, expires, valid_to in conn.execute(sql, view.params):
        graph.nodes[entity_id] = (agent, workspace)
        boundary.extend(t for t in (expires, valid_to) if t is not None and t > view.instant)
    if not view.historical:  # entities whose validity has not started yet appear when it does
        row = conn.execute(
            "SELECT min(valid_from_ms) FROM entity_versions WHERE recorded_to_ms IS NULL AND valid_from_ms > ?",
            (view.instant,),
        ).fetchone()
        if row[0] is not None:
            boundary.append(int(row[0]))
    graph.next_change_ms = min(boundary) if boundary else None
    clause, params = open_links(view)
    nodes = graph.nodes
    weights: dict[tuple[int, int], list[float]] = defaultdict(list)
    placed: set[int] = set()  # the memories someone linked: their written links decide their communities
    inferred: list[tuple[int, int, float]] = []
    for a, b, weight, source, relation in conn.execute(
        f"SELECT l.from_id, l.to_id, l.weight, l.source, l.relation FROM links l WHERE {clause}", params
    ):
        if a not in nodes or b not in nodes or nodes[a] != nodes[b]:
            continue
        if source == INFERRED:
            inferred.append((a, b, weight))
        elif (
            source != JUDGE or relation != "distinct"
        ):  # a judge's verdict counts as written, but for 'distinct'
            weights[(a, b) if a < b else (b, a)].append(weight)
            placed.update((a, b))
    # The relations the vault judged at write time (features/relations.py) cluster the memories nobody linked: an
    # inferred link is an edge where neither end has a written link, at a share of its score.
    for a, b, weight in inferred:
        if a not in placed and b not in placed:
            weights[(a, b) if a < b else (b, a)].append(INFERRED_SHARE * weight)
    # fsum is exact (row order cannot change a sum) and rounding keeps 0.1 + 0.2 - 0.3 at zero
    summed = {pair: round(math.fsum(ws), 9) for pair, ws in weights.items()}
    graph.edges = {pair: w for pair, w in sorted(summed.items()) if w > 0}
    return graph


def stamp(conn: Connection, changes: ChangeLog) -> tuple[int, ...]:
    """Changes whenever a link or any entity's current version changes (a few milliseconds at 50k
    links: it counts them, and reads the closed ones and the change log's position by index)."""
    links = conn.execute("SELECT count(*), coalesce(max(id), 0) FROM links").fetchone()
    closed = conn.execute("SELECT count(*) FROM links WHERE recorded_to_ms IS NOT NULL").fetchone()
    return (*(int(x) for x in links), int(closed[0]), changes.position(conn))


# --- clustering ----------------------------------------------------------------------------------


def components(graph: Graph) -> list[tuple[list[int], list[tuple[int, int, float]]]]:
    """Connected components with at least one edge: (nodes ascending, edges ascending), ordered by first node."""
    parent: dict[int, int] = {}

    def root(x: int) -> int:
        while parent.get(x, x) != x:
            parent[x] = parent.get(parent[x], parent[x])
            x = parent[x]
        return x

    for a, b in graph.edges:
        ra, rb = root(a), root(b)
        if ra != rb:
            parent[max(ra, rb)] = min(ra, rb)
    nodes: dict[int, list[int]] = defaultdict(list)
    for n in sorted({n for pair in graph.edges for n in pair}):
        nodes[root(n)].append(n)
    edges: dict[int, list[tuple[int, int, float]]] = defaultdict(list)
    for (a, b), w in graph.edges.items():  # already in ascending order
        edges[root(a)].append((a, b, w))
    return [(nodes[r], edges[r]) for r in sorted(nodes)]


def fingerprint(method: str, nodes: list[int], edges: list[tuple[int, int, float]]) -> str:
    h = hashlib.sha256(method.encode())
    h.update(",".join(map(str, nodes)).encode())
    h.update(";".join(f"{a}-{b}:{w!r}" for a, b, w in edges).encode())
    return h.hexdigest()


def cluster(method: str, nodes: list[int], edges: list[tuple[int, int, float]]) -> list[tuple[int, ...]]:
    """Communities of one connected component, each as ascending member ids, sorted."""
    import networkx as nx  # here, not at the top: importing it costs a fresh process ~0.2 s
    from networkx.algorithms import community as nx_community

    g = nx.Graph()
    g.add_nodes_from(nodes)
    g.add_weighted_edges_from(edges)
    if method == "label_propagation":
        groups = nx_community.label_propagation_communities(g)
    else:
        groups = nx_community.louvain_communities(g, weight="weight", seed=20_261_129)
    return sorted(tuple(sorted(group)) for group in groups)


def _groups(
    found: list[tuple[int, ...]], edges: list[tuple[int, int, float]], scopes: dict[int, tuple[str, str]]
) -> list[Group]:
    """Groups of one unit: each community with its scope, inner edges and members' weighted degrees."""
    home = {m: i for i, members in enumerate(found) for m in members}
    inner: list[list[tuple[int, int, float]]] = [[] for _ in found]
    for edge in edges:
        if home[edge[0]] == home[edge[1]]:
            inner[home[edge[0]]].append(edge)
    out = []
    for members, own in zip(found, inner):
        degree = dict.fromkeys(members, 0.0)
        for a, b, w in own:
            degree[a] += w
            degree[b] += w
        centrality = {m: round(d, 9) for m, d in degree.items()}
        agent, workspace = scopes[members[0]]  # links never join scopes, so neither do communities
        out.append(Group(community_id(members), agent, workspace, members, centrality, tuple(own)))
    return out


class Communities:
    """Clusters the graph and remembers what it found (per vault; thread-safe)."""

    def __init__(self, changes: ChangeLog) -> None:
        self._changes = changes  # the backend's change log: a new position means new current versions
        self._lock = threading.Lock()
        self._memo: OrderedDict[str, list[tuple[int, ...]]] = OrderedDict()
        # view -> (stamp, built at, valid until, partition)
        self._partitions: OrderedDict[tuple[Any, ...], tuple[tuple[int, ...], int, int | None, Partition]] = (
            OrderedDict()
        )
        self.clustered = 0  # components clustered (not served from the memo) since this object was made

    def partition(self, conn: Connection, view: View, method: str) -> Partition:
        key = (
            method,
            view.where,
            tuple(sorted((k, v) for k, v in view.params.items() if k not in ("now", "instant"))),
        )
        current = stamp(conn, self._changes)
        with self._lock:
            kept = self._partitions.get(key)
        if kept is not None:
            kept_stamp, built_at, next_change, partition = kept
            if (
                kept_stamp == current
                and built_at <= view.instant
                and (next_change is None or view.instant < next_change)
            ):
                return partition
        graph = load(conn, view)
        partition = self._build(graph, method)
        with self._lock:
            self._partitions[key] = (current, view.instant, graph.next_change_ms, partition)
            self._partitions.move_to_end(key)
            while len(self._partitions) > _PARTITIONS_KEPT:
                self._partitions.popitem(last=False)
        return partition

    def _build(self, graph: Graph, method: str) -> Partition:
        groups: list[Group] = []
        parts = components(graph)
        if method == "modularity" and parts:
            # Modularity weighs each community against the whole graph, so the graph is one unit.
            parts = [
                (sorted(n for nodes, _ in parts for n in nodes), [e for _, edges in parts for e in edges])
            ]
        for nodes, edges in parts:
            print_ = fingerprint(method, nodes, edges)
            with self._lock:
                found = self._memo.get(print_)
                if found is not None:
                    self._memo.move_to_end(print_)
            if found is None:
                found = cluster(method, nodes, edges)
                with self._lock:
                    self.clustered += 1
                    self._memo[print_] = found
                    while len(self._memo) > _MEMO_SIZE:
                        self._memo.popitem(last=False)
            groups.extend(_groups(found, edges, graph.nodes))
        groups.sort(key=lambda g: (-len(g.members), g.id))
        return Partition(tuple(groups), nodes=len(graph.nodes), edges=len(graph.edges))
