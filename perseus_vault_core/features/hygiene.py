"""``hygiene``: a read-only report of the low-signal memories that weaken a startup block (docs/hygiene.md).

It examines the active memories in the caller's scope (including those whose ``expires_at_ms`` has
passed but which nobody has archived) and flags each one for any of these reasons:

- ``vague``, ``date-only``, ``very short``: the penalties of recall/actionability.py, judged on the text
  the memory is embedded by (summary and content);
- ``duplicate``: the same text, compared case-insensitively with whitespace collapsed, as an earlier
  (lower id) memory of the same tenant; ``duplicate_of`` is the earliest such memory;
- ``near-duplicate``: an earlier memory of the same tenant says the same thing in other words, as
  recall/curation.py judges a pair (the rule recall collapses duplicates by): close in meaning (cosine >=
  0.68 when both have a stored vector, else word-set Jaccard >= 0.8) with the same values (numbers,
  names, identifiers), so two tickets of one template or two services' facts are not flagged;
  ``duplicate_of`` is the most similar such earlier memory (ties: the lower id);
- ``expired``: ``expires_at_ms`` is at or before now;
- ``never retrieved``: ``retrieval_count`` is 0 and the memory is older than ``min_age_days``.

Beside the flagged memories, ``conflicts`` lists the pairs a write kept as ``updates`` or ``same_subject``
(features/relations.py) that nobody has settled: neither superseded by the other, their inferred link not
closed by an ``unlink``, no judge's verdict. Each may be one fact stated twice, or a fact and its update.

A tenant is one (``agent_id``, ``workspace_hash``) pair: memories of two tenants are never
compared. Community summaries and stored memory files (written by the vault, see graphrag/summaries.py and
memory_files/files.py) are not examined; memory-file entries are, like any memory. Nothing
here writes (no reinforcement), and the same store gives the same report.

Similar pairs are found without weighing every pair one by one: vectors by blocks of matrix
products (a loose float32 pass, then the canonical float64 cosine of primitives/dense.py for the
few candidates, so the answer does not hang on BLAS rounding); words by prefix filtering (two word
sets with Jaccard >= t must share one of their rarest tokens, see :func:`_jaccard_matches`).

The loops call primitives/cancel.py's :func:`checkpoint` every ``_CHUNK`` memories (and every block of cosines), so a
caller that gave up (the web inspector, for a page nobody has open any more) stops the report early.
"""

from __future__ import annotations

import functools
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from ..contract.models import HygieneConflict, HygieneItem, HygieneReason, HygieneReport
from ..contract.params import Filters, HygieneParams
from ..embeddings import embedding_text
from ..engine.engine import Engine
from ..primitives.cancel import checkpoint
from ..primitives.dense import cosine
from ..primitives.dialect import dialect
from ..primitives.filters import FROM_VERSIONS_FIRST, view
from ..primitives.query import tokenize
from ..recall import curation
from ..recall.actionability import actionability
from ..records import store
from ..storage import Backend, Connection
from .graphrag.communities import SUMMARY_TYPE

REASONS: tuple[HygieneReason, ...] = (
    "vague",
    "date-only",
    "very short",
    "duplicate",
    "near-duplicate",
    "expired",
    "never retrieved",
)
TEXT_REASONS: tuple[HygieneReason, ...] = ("vague", "date-only", "very short")  # from actionability
FILTERS = ("type", "category", "topic_path", "agent_id", "workspace_hash")  # the ones hygiene takes
NEAR_COSINE = curation.DUPLICATE  # candidates; curation.relation then judges each pair
NEAR_JACCARD = Fraction(4, 5)  # exact, so "at least 0.8" has no rounding edge; candidates, judged as above
PREVIEW_CHARS = 200
DAY_MS = 86_400_000
_SLACK = 1e-3  # float32 matrix products are within ~1e-6 of the exact cosine; candidates get this margin
_BLOCK_CELLS = 1 << 22  # similarity cells per matrix block (16 MiB of float32)
_CHUNK = 1024  # memories between two cancellation checkpoints (a few milliseconds of work)


@dataclass(frozen=True, eq=False)
class Memory:
    """What hygiene needs of one active memory."""

    id: int
    tenant: tuple[str, str]  # (agent_id, workspace_hash), '' for unset
    category: str
    key: str
    content: str
    text: str  # embedding_text(content, summary)
    created_at_ms: int
    retrieval_count: int
    expires_at_ms: int | None
    vector: np.ndarray | None

    @functools.cached_property
    def said(self) -> curation.Said:
        return curation.said(self.text)


def _duplicates(a: Memory, b: Memory, cosine: float | None) -> bool:
    """Whether ``a`` and ``b`` say the same thing (curation.relation)."""
    return curation.relation(a.said, b.said, cosine) == "duplicate"


def hygiene(engine: Engine, p: HygieneParams) -> HygieneReport:
    """The ``hygiene`` verb: the report for the memories ``p`` selects, in one read snapshot."""
    with engine.reading() as conn:
        return examine(engine.backend, conn, p.filters(), engine.now(), p.min_age_days, p.limit)


def examine(
    backend: Backend, conn: Connection, filters: Filters, now_ms: int, min_age_days: int, limit: int
) -> HygieneReport:
    """The report for the memories ``filters`` select (call inside a read snapshot)."""
    memories, now = read(backend, conn, filters, now_ms)
    found = report(memories, now, min_age_days, limit)
    return found.model_copy(update={"conflicts": conflicts(conn, {m.id for m in memories}, limit)})


def conflicts(conn: Connection, active: set[int], limit: int) -> list[HygieneConflict]:
    """The pairs among ``active`` kept as ``updates`` or ``same_subject`` by inference (features/relations.py):
    candidates of each other that may state one fact two ways, which no one has settled (superseded, unlinked,
    judged). Newest first."""
    rows = conn.execute(
        "SELECT l.from_id, l.to_id, l.relation, a.content, a.summary, coalesce(a.valid_from_ms, a.updated_at_ms), "
        "b.content, b.summary, coalesce(b.valid_from_ms, b.updated_at_ms) FROM links l "
        "JOIN entity_versions a ON a.entity_id = l.from_id AND a.scope = l.scope AND a.recorded_to_ms IS NULL "
        "JOIN entity_versions b ON b.entity_id = l.to_id AND b.scope = l.scope AND b.recorded_to_ms IS NULL "
        "WHERE l.recorded_to_ms IS NULL AND l.source = 'inferred' AND l.relation IN ('updates', 'same_subject') "
        "AND a.status = 'active' AND b.status = 'active' ORDER BY l.id DESC"
    ).fetchall()
    out = []
    for newer, older, relation, a_content, a_summary, a_valid, b_content, b_summary, b_valid in rows:
        if newer in active and older in active:
            out.append(
                HygieneConflict(
                    newer=newer,
                    older=older,
                    relation=relation,
                    newer_preview=embedding_text(a_content, a_summary)[:200],
                    older_preview=embedding_text(b_content, b_summary)[:200],
                    newer_true_from_ms=int(a_valid),
                    older_true_from_ms=int(b_valid),
                )
            )
            if len(out) == limit:
                break
    return out


def read(backend: Backend, conn: Connection, filters: Filters, now_ms: int) -> tuple[list[Memory], int]:
    """The active memories ``filters`` select (expired ones included), by id, with their stored
    vectors; and the instant they were judged at."""
    v = view(filters.model_copy(update={"include_archived": True}), now_ms, dialect(conn))
    recorded = backend.vectors.model(conn)
    vector_bytes = 4 * recorded[1] if recorded is not None else -1
    sql = (
        f"SELECT {store.ENTITY_COLUMNS}, x.embedding FROM {FROM_VERSIONS_FIRST} "
        f"LEFT JOIN {backend.vectors.TABLE} x ON x.vid = v.vid AND x.scope = v.scope "
        f"WHERE {v.where} AND v.status = 'active' AND v.type NOT IN ('{SUMMARY_TYPE}', 'memory_file') ORDER BY v.entity_id"
    )
    out = []
    for n, row in enumerate(conn.execute(sql, v.params)):
        if n % _CHUNK == 0:
            checkpoint()
        r, blob = store.row_dict(row[:-1]), row[-1]
        vector = (
            np.frombuffer(blob, dtype=np.float32) if blob is not None and len(blob) == vector_bytes else None
        )
        out.append(
            Memory(
                id=int(r["id"]),
                tenant=(r["agent_id"] or "", r["workspace_hash"] or ""),
                category=r["category"],
                key=r["key"],
                content=r["content"],
                text=embedding_text(r["content"], r["summary"]),
                created_at_ms=int(r["created_at_ms"]),
                retrieval_count=int(r["retrieval_count"]),
                expires_at_ms=r["expires_at_ms"],
                vector=vector,
            )
        )
    return out, v.instant


def report(memories: Sequence[Memory], now_ms: int, min_age_days: int, limit: int) -> HygieneReport:
    """Judge ``memories`` (in id order) at ``now_ms``. Pure."""
    exact = duplicates(memories)
    near = near_duplicates([m for m in memories if m.id not in exact])
    old_enough = now_ms - min_age_days * DAY_MS
    flagged: list[tuple[float, int, Memory, list[HygieneReason], int | None]] = []
    for n, m in enumerate(memories):
        if n % _CHUNK == 0:
            checkpoint()
        action = actionability(m.text)
        reasons = [r for r in TEXT_REASONS if r in action.reasons]
        duplicate_of = exact.get(m.id)
        if duplicate_of is not None:
            reasons.append("duplicate")
        elif m.id in near:
            reasons.append("near-duplicate")
            duplicate_of = near[m.id][1]
        if m.expires_at_ms is not None and m.expires_at_ms <= now_ms:
            reasons.append("expired")
        if m.retrieval_count == 0 and m.created_at_ms < old_enough:
            reasons.append("never retrieved")
        if reasons:
            flagged.append((action.score, m.id, m, reasons, duplicate_of))
    flagged.sort(key=lambda f: (f[0], f[1]))
    counts: dict[str, int] = dict.fromkeys(REASONS, 0)
    for _, _, _, reasons, _ in flagged:
        for reason in reasons:
            counts[reason] += 1
    items = [
        HygieneItem(
            id=m.id,
            category=m.category,
            key=m.key,
            preview=m.content[:PREVIEW_CHARS],
            actionability=score,
            reasons=reasons,
            duplicate_of=duplicate_of,
            retrieval_count=m.retrieval_count,
            created_at_ms=m.created_at_ms,
        )
        for score, _, m, reasons, duplicate_of in flagged[:limit]
    ]
    return HygieneReport(items=items, total=len(flagged), scanned=len(memories), counts=counts)


def normalized(text: str) -> str:
    """The text exact duplicates share: case folded, whitespace collapsed."""
    return " ".join(text.casefold().split())


def words(text: str) -> frozenset[str]:
    """The case-folded word tokens of ``text``, as a set (what Jaccard compares)."""
    return frozenset(tokenize(text.casefold()))


def duplicates(memories: Sequence[Memory]) -> dict[int, int]:
    """Exact duplicates: id -> the earliest memory of the same tenant with the same normalized text."""
    first: dict[tuple[tuple[str, str], str], int] = {}
    out = {}
    for m in sorted(memories, key=lambda m: m.id):
        original = first.setdefault((m.tenant, normalized(m.text)), m.id)
        if original != m.id:
            out[m.id] = original
    return out


def near_duplicates(memories: Sequence[Memory]) -> dict[int, tuple[float, int]]:
    """Near duplicates: id -> (similarity, the most similar earlier memory of the same tenant)."""
    tenants: dict[tuple[str, str], list[Memory]] = defaultdict(list)
    for m in sorted(memories, key=lambda m: m.id):
        tenants[m.tenant].append(m)
    out: dict[int, tuple[float, int]] = {}
    for group in tenants.values():
        for found in (_cosine_matches(group), _jaccard_matches(group)):
            for memory_id, (similarity, other) in found.items():
                best = out.get(memory_id)
                if best is None or (similarity, -other) > (best[0], -best[1]):
                    out[memory_id] = (similarity, other)
    return out


def _cosine_matches(group: list[Memory]) -> dict[int, tuple[float, int]]:
    """Pairs where both memories have a vector: for each, the most similar earlier one at cosine >= 0.95."""
    members = [m for m in group if m.vector is not None]
    if len(members) < 2:
        return {}
    matrix = np.stack([m.vector for m in members if m.vector is not None])
    n = len(members)
    step = max(16, min(1024, _BLOCK_CELLS // n))
    out = {}
    for start in range(0, n, step):
        checkpoint()
        end = min(n, start + step)
        block = matrix[start:end] @ matrix[:end].T
        block[:, start:][np.triu_indices(end - start)] = -np.inf  # earlier ones only
        top = block.max(axis=1)
        for r in np.flatnonzero(top >= NEAR_COSINE - _SLACK):
            i = start + int(r)
            near = np.flatnonzero(block[r] >= NEAR_COSINE - _SLACK)
            exact = cosine(matrix[near], matrix[i])
            for k in sorted(
                range(len(near)), key=lambda k: (-exact[k], int(near[k]))
            ):  # most similar first, then id
                other = members[int(near[k])]
                if exact[k] >= NEAR_COSINE and _duplicates(other, members[i], float(exact[k])):
                    out[members[i].id] = (float(exact[k]), other.id)
                    break
    return out


def _jaccard_matches(group: list[Memory]) -> dict[int, tuple[float, int]]:
    """Pairs where at least one memory has no vector: for each, the most similar earlier one at
    Jaccard >= 0.8. Sets are visited smallest first (AllPairs), so each probe meets only sets no
    larger than itself: it probes with its rarest ``n - ceil(t * n) + 1`` tokens and is indexed by
    its rarest ``n - ceil(2t / (1 + t) * n) + 1``, and a pair with Jaccard >= t shares one of them."""
    plain = [m.vector is None for m in group]
    if not any(plain):
        return {}
    sets = [words(m.text) for m in group]
    sizes = [len(s) for s in sets]
    rarity = Counter(t for s in sets for t in s)
    rank = {t: r for r, t in enumerate(sorted(rarity, key=lambda t: (rarity[t], t)))}
    num, den = NEAR_JACCARD.numerator, NEAR_JACCARD.denominator
    everyone = _Postings(sizes)
    without_vectors = _Postings(sizes)  # only the members without a vector
    best: dict[int, tuple[float, int]] = {}
    for n, i in enumerate(sorted((i for i, size in enumerate(sizes) if size), key=lambda i: (sizes[i], i))):
        if n % _CHUNK == 0:
            checkpoint()
        s, size = sets[i], sizes[i]
        tokens = sorted(map(rank.__getitem__, s))  # rarest first
        smallest = _ceil_div(num * size, den)  # t * size: the smallest set that can still match
        # A memory with a vector is compared by cosine with every other that has one.
        index = everyone if plain[i] else without_vectors
        for j in index.candidates(tokens[: size - smallest + 1], smallest):
            shared = len(s & sets[j])
            union = size + sizes[j] - shared
            if shared * den >= union * num and _duplicates(group[i], group[j], None):
                later, earlier = (group[i], group[j]) if group[i].id > group[j].id else (group[j], group[i])
                found = (shared / union, earlier.id)
                known = best.get(later.id)
                if known is None or (found[0], -found[1]) > (known[0], -known[1]):
                    best[later.id] = found
        for t in tokens[: size - _ceil_div(2 * num * size, num + den) + 1]:
            everyone.add(t, i)
            if plain[i]:
                without_vectors.add(t, i)
    return best


class _Postings:
    """Token -> the members indexed by it, in the (non-decreasing) size order they were added; members
    too small to match any later probe are skipped for good."""

    def __init__(self, sizes: list[int]) -> None:
        self.sizes = sizes
        self.lists: dict[int, list[int]] = defaultdict(list)
        self.first: dict[int, int] = defaultdict(int)

    def add(self, token: int, member: int) -> None:
        self.lists[token].append(member)

    def candidates(self, tokens: list[int], smallest: int) -> set[int]:
        out: set[int] = set()
        for t in tokens:
            members = self.lists.get(t)
            if members:
                k = self.first[t]
                while k < len(members) and self.sizes[members[k]] < smallest:
                    k += 1
                self.first[t] = k
                out.update(members[k:])
        return out


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)
