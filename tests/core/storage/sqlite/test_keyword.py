"""The keyword arm: scoped BM25 statistics on the SQL path, and the bounds on query expansion."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest

from perseus_vault_core import Vault
from perseus_vault_core.contract.params import Expansion, Filters
from perseus_vault_core.primitives.filters import view
from perseus_vault_core.primitives.query import parse
from perseus_vault_core.recall.arms import Arms
from perseus_vault_core.storage.sqlite import keyword
from perseus_vault_core.storage.sqlite.connection import read_snapshot
from perseus_vault_core.storage.sqlite.keyword import varints_total

from ....conftest import Clock

WORDS = (
    "billing ledger invoice postgres sqlite replica backup restore cache latency queue worker deploy rollback "
    "canary schema migration index vector search ranking memory agent token secret rotate the of and"
).split()
# Words FTS5 tokenizes otherwise than Python does: a diacritic it folds, and New Tai Lue vowel signs
# (letters to Python, separators to FTS5's Unicode tables) that split one query word into a phrase.
SPLIT = "ab\u19b1cd"  # FTS5: the phrase "ab cd"
REPEAT = "aa\u19b1aa"  # FTS5: "aa aa", which occurs twice (overlapping) in "aa aa aa"
ODD = ["café", SPLIT, REPEAT, "ab cd ab cd", "aa aa aa", "naïve"]


def _text(rng: random.Random, n: int) -> str:
    words = [rng.choice(WORDS) for _ in range(n)]
    if rng.random() < 0.3:
        words.insert(rng.randrange(len(words) + 1), rng.choice(ODD))
    return " ".join(words)


def _history(rng: random.Random, prefix: str, n: int) -> list[tuple[str, dict[str, Any]]]:
    """A tenant's writes, in order: memories (some over 128 tokens, whose size records take two
    bytes), then updates, archives and a purge."""
    out: list[tuple[str, dict[str, Any]]] = []
    for i in range(n):
        length = rng.choice([3, 8, 20, 150]) if i % 7 else 300
        out.append(
            (
                "remember",
                {
                    "category": "note",
                    "key": f"{prefix}{i}",
                    "content": _text(rng, length),
                    "summary": _text(rng, 4) if rng.random() < 0.3 else None,
                    "topic_path": rng.choice(WORDS) if rng.random() < 0.3 else None,
                },
            )
        )
    for i in range(0, n, 5):
        out.append(("remember", {"category": "note", "key": f"{prefix}{i}", "content": _text(rng, 12)}))
    out += [("forget", {"key": f"{prefix}{i}"}) for i in range(1, n, 9)]
    out.append(("purge", {"key": f"{prefix}1"}))
    return out


def _replay(
    vault: Vault, clock: Clock, steps: list[tuple[str, dict[str, Any]]], scope: dict[str, str]
) -> None:
    for op, args in steps:
        if op == "remember":
            vault.remember(**args, **scope)
        else:
            entity = next(
                i
                for i in vault.recall("", limit=1000, include_archived=True, reinforce=False, **scope).items
                if i.key == args["key"]
            )
            getattr(vault, op)(entity.id, **scope)
        clock.advance(10)


def _hits(vault: Vault, query: str, use_index: bool, **filters: Any) -> list[tuple[str, float]]:
    """Raw BM25 hits (key, score), best first, on one path (the SQL search, or the in-memory index as recall
    asks it); and last, the query's ceiling, as ("", ceiling), which the paths must agree on too."""
    conn = vault.engine.conn()
    terms = parse(query)
    v = view(Filters(**filters), vault.engine.now())
    with read_snapshot(conn):
        if use_index:
            arms = Arms(vault.engine.backend, keyword_index=vault.engine.keyword_index)
            hits, top = arms.keyword(conn, list(terms.words), list(terms.stems), v, 1000)
        else:
            hits, top = keyword.search(conn, list(terms.words), v, 1000)
        keys = dict(conn.execute("SELECT id, key FROM entities").fetchall())
    return [(keys[h.entity_id], h.score) for h in hits] + [("", top)]


QUERIES = [
    "billing ledger",
    "postgres replica backup restore",
    "cache",
    "café naïve",
    SPLIT,
    f"{REPEAT} canary",
    "secret rotate token agent memory note",
]


@pytest.mark.parametrize("use_index", [False, True], ids=["sql", "mirror"])
def test_a_scoped_search_scores_as_a_store_holding_only_that_scope(tmp_path: Path, use_index: bool) -> None:
    """Statistics are the scope's own: every head in it (archived ones too, as FTS5 counts rows),
    and for a point in time every version of its entities, as in a store of its own."""
    alice = _history(random.Random(1), "a", 60)
    scope = {"agent_id": "alice", "workspace_hash": "ws-a"}
    clocks = Clock(), Clock()
    with (
        Vault(tmp_path / "only.db", clock=clocks[0], embedder=False) as only,
        Vault(tmp_path / "mixed.db", clock=clocks[1], embedder=False) as mixed,
    ):
        # the other tenants: another agent in alice's workspace, alice's agent in another workspace
        _replay(
            mixed,
            clocks[1],
            _history(random.Random(2), "a", 40),
            {"agent_id": "bob", "workspace_hash": "ws-a"},
        )
        _replay(
            mixed,
            clocks[1],
            _history(random.Random(3), "a", 20),
            {"agent_id": "alice", "workspace_hash": "ws-b"},
        )
        clocks[0].now = clocks[1].now
        _replay(only, clocks[0], alice[:70], {})
        _replay(mixed, clocks[1], alice[:70], scope)
        middle = clocks[0].now
        _replay(
            mixed,
            clocks[1],
            _history(random.Random(4), "b", 10),
            {"agent_id": "bob", "workspace_hash": "ws-a"},
        )
        clocks[0].now = clocks[1].now
        _replay(only, clocks[0], alice[70:], {})
        _replay(mixed, clocks[1], alice[70:], scope)
        if use_index:
            assert only.wait_for_keyword_index() and mixed.wait_for_keyword_index()
        for query in QUERIES:
            for archived in (False, True):
                expected = _hits(only, query, use_index, include_archived=archived)
                assert expected, query
                assert _hits(mixed, query, use_index, include_archived=archived, **scope) == expected, query
            # a point in time: the history index (SQL on both paths)
            then = _hits(only, query, use_index, as_of_unix_ms=middle)
            assert _hits(mixed, query, use_index, as_of_unix_ms=middle, **scope) == then, query
        # one field of the scope given: bob's rows in ws-a, or alice's in ws-b, are then in it
        assert _hits(mixed, "billing ledger", use_index, agent_id="alice") != _hits(
            only, "billing ledger", use_index
        )
        assert _hits(mixed, "billing ledger", use_index, workspace_hash="ws-a") != _hits(
            only, "billing ledger", use_index
        )


def test_varints_total_reads_size_records() -> None:
    def varint(value: int) -> bytes:
        groups = [value & 0x7F]
        value >>= 7
        while value:
            groups.append(0x80 | (value & 0x7F))
            value >>= 7
        return bytes(reversed(groups))

    values = [0, 1, 127, 128, 300, 16_383, 16_384, 2_097_152 + 5, 0]
    assert varints_total(b"".join(varint(v) for v in values)) == sum(values)
    assert varints_total(b"") == 0


# --- expansion's bounds ------------------------------------------------------------------------------


class _Counting:
    """A connection that counts expansion's statements: vocabulary reads and visibility checks."""

    def __init__(self, conn: Any) -> None:
        self.conn, self.vocabulary, self.checks = conn, 0, 0

    def execute(self, sql: str, params: Any = ()) -> Any:
        if "_vocab" in sql:
            self.vocabulary += 1
        elif "MATCH" in sql:
            self.checks += 1
        return self.conn.execute(sql, params)


def _letters(i: int, width: int) -> str:
    """``i`` in consonants (no 's' or 'y'), a word the Porter stemmer leaves as it is."""
    alphabet = "bcdfghjklmnpqrtvwxz"
    out = ""
    for _ in range(width):
        i, r = divmod(i, len(alphabet))
        out += alphabet[r]
    return out


def test_expansion_is_bounded_per_call(vault: Vault) -> None:
    """Long queries of stems that each extend to words of another tenant (refused, being bob's):
    expansion reads the vocabulary for the first MAX_EXPANDED_STEMS stems only, and checks at most
    MAX_VARIANT_CHECKS terms in all. Uncapped, the first call would read 200 vocabularies and make
    402 checks, the second 480 checks."""
    few = ["zq" + _letters(i, 2) for i in range(200)]  # two of bob's words extend each
    many = ["xw" + _letters(i, 2) for i in range(40)]  # twelve of bob's words extend each
    words = [b + _letters(j, 2) for b in few for j in range(2)] + [
        b + _letters(j, 2) for b in many for j in range(12)
    ]
    for n in range(0, len(words), 200):
        vault.remember("note", f"theirs{n}", " ".join(words[n : n + 200]), agent_id="bob")
    vault.remember("note", "mine", f"{few[0]}kk {few[100]}kk", agent_id="alice")
    conn = vault.engine.conn()
    alice = view(Filters(agent_id="alice"), vault.engine.now())
    for bases, reads, checks, found in (
        (few, keyword.MAX_EXPANDED_STEMS, 2 * keyword.MAX_EXPANDED_STEMS + 1, [f"{few[0]}kk"]),
        (many, -(-keyword.MAX_VARIANT_CHECKS // 12), keyword.MAX_VARIANT_CHECKS, []),
    ):
        counting = _Counting(conn)
        with read_snapshot(conn):
            assert keyword.variants(counting, parse(" ".join(bases)).stems, Expansion(), alice) == found
        assert (counting.vocabulary, counting.checks) == (reads, checks)
    # the 101st stem is past the cap: alice's own variant of it is not looked for
    with read_snapshot(conn):
        assert keyword.variants(conn, parse(few[100]).stems, Expansion(), alice) == [f"{few[100]}kk"]
