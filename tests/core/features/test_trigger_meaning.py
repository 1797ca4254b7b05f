"""features/trigger_meaning.py and the indexed path of proactive.py: the phrase matrix, and ``recall_when`` through
the trigger index giving exactly what reading every visible memory's phrases gives (today's rules, brute force)."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from perseus_vault_core import Vault
from perseus_vault_core.contract.params import Filters
from perseus_vault_core.features import proactive
from perseus_vault_core.features.proactive import Context, match
from perseus_vault_core.features.trigger_meaning import SLACK, PhraseMatrix
from perseus_vault_core.primitives.dialect import dialect
from perseus_vault_core.primitives.filters import FROM, view

from ...conftest import Clock, FakeEmbedder

WORDS = (
    "deploy",
    "deploying",
    "the",
    "audit",
    "chain",
    "module",
    "database",
    "choosing",
    "alice",
    "meeting",
    "planning",
    "of",
    "a",
    "billing",
    "release",
    "window",
    "it",
    "before",
    "you",
)
SCOPES = (None, "alice", "bob")


def brute_force(
    vault: Vault,
    context: str,
    *,
    agent_id: str | None = None,
    category: str | None = None,
    query_time_unix_ms: int | None = None,
    min_similarity: float = 0.6,
    semantic: bool | None = None,
    limit: int = 10,
) -> list[tuple[int, float, str, str]]:
    """Today's rules the way they were run before the index: every visible memory with phrases read, every one of
    their (scope, phrase) vectors compared with the context's (the stored vector: the embedder's own)."""
    engine = vault.engine
    f = Filters(category=category, agent_id=agent_id, query_time_unix_ms=query_time_unix_ms)
    with engine.reading() as conn:
        v = view(f, engine.now(), dialect(conn))
        rows = [
            {"id": i, "vid": vid, "scope": scope, "recall_when": text}
            for i, vid, scope, text in conn.execute(
                f"SELECT e.id, v.vid, v.scope, v.recall_when FROM {FROM} WHERE {v.where} AND v.recall_when != '[]'",
                v.params,
            )
        ]
    similarity = None
    use = engine.embedder is not None if semantic is None else semantic
    if use and rows and context.split():
        query = engine.embed_query(context).astype(np.float64)
        pairs = {(row["scope"], p) for row in rows for p in json.loads(row["recall_when"])}
        assert engine.embedder is not None
        similarity = {
            (s, p): float(
                np.dot(np.asarray(engine.embedder.embed([p])[0], dtype=np.float32).astype(np.float64), query)
            )
            for s, p in pairs
        }
    return [
        (m.entity_id, m.score, m.trigger, m.kind)
        for m in match(rows, Context.of(context), similarity, min_similarity)[:limit]
    ]


def indexed(vault: Vault, context: str, **options: Any) -> list[tuple[int, float, str, str]]:
    return [(i.id, i.score, i.trigger, i.match) for i in vault.recall_when(context, **options).items]


phrase = st.lists(st.sampled_from(WORDS), min_size=1, max_size=4).map(" ".join)
operation = st.one_of(
    st.tuples(
        st.just("remember"),
        st.integers(0, 7),
        st.sampled_from(SCOPES),
        st.lists(phrase, max_size=4),
        st.booleans(),
    ),
    st.tuples(st.just("forget"), st.integers(0, 7)),
    st.tuples(st.just("supersede"), st.integers(0, 7), st.integers(0, 7)),
)


def _apply(vault: Vault, clock: Clock, program: list[tuple[Any, ...]], times: list[int]) -> None:
    ids: dict[int, tuple[int, str | None]] = {}
    for op in program:
        clock.advance(1_000)
        times.append(clock.now)
        if op[0] == "remember":
            _, key, agent, phrases, expires = op
            agent = ids[key][1] if key in ids else agent  # a key keeps its scope
            item = vault.remember(
                "note" if key % 2 else "task",
                f"k{key}",
                f"memory {key} " + " ".join(phrases),
                recall_when=phrases,
                agent_id=agent,
                expires_at_ms=clock.now + 2_500 if expires else None,
            )
            ids[key] = (item.id, agent)
        elif op[0] == "forget" and op[1] in ids:
            vault.forget(ids[op[1]][0], agent_id=ids[op[1]][1])
        elif op[0] == "supersede" and op[1] in ids and op[2] in ids and ids[op[1]][1] == ids[op[2]][1]:
            try:
                vault.supersede(ids[op[1]][0], ids[op[2]][0], agent_id=ids[op[1]][1])
            except Exception:  # an entity superseding itself, or one superseded already: refused, as intended
                pass


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    program=st.lists(operation, min_size=1, max_size=14),
    contexts=st.lists(phrase, min_size=1, max_size=3),
    dense=st.booleans(),
    threshold=st.sampled_from([-1.0, 0.0, 0.3, 0.6, 0.9]),
    data=st.data(),
)
def test_the_index_finds_exactly_what_reading_every_phrase_finds(
    program: list[tuple[Any, ...]], contexts: list[str], dense: bool, threshold: float, data: Any
) -> None:
    clock = Clock()
    with tempfile.TemporaryDirectory() as folder:
        with Vault(Path(folder) / "v.db", clock=clock, embedder=FakeEmbedder() if dense else False) as vault:
            times: list[int] = []
            _apply(vault, clock, program, times)
            clock.advance(1_000)
            for context in contexts:
                context = data.draw(st.sampled_from(["", "we are ", "now: "])) + context
                options = {
                    "agent_id": data.draw(st.sampled_from(SCOPES)),
                    "category": data.draw(st.sampled_from([None, "note"])),
                    "query_time_unix_ms": data.draw(st.sampled_from([None, *times])),
                    "min_similarity": threshold,
                    "limit": data.draw(st.sampled_from([1, 3, 50])),
                }
                assert indexed(vault, context, **options) == brute_force(vault, context, **options)
                assert indexed(vault, context, semantic=False, **options) == brute_force(
                    vault, context, semantic=False, **options
                )


def test_a_phrase_sharing_no_word_with_the_context_still_matches_by_meaning(dense_vault: Vault) -> None:
    """FakeEmbedder's vectors of two texts without a common word are orthogonal or close: a threshold of zero lets
    every phrase through by meaning, whatever words it shares, and the index finds them all."""
    first = dense_vault.remember("note", "a", "first", recall_when=["billing window"]).id
    second = dense_vault.remember("note", "b", "second", recall_when=["before you deploy it"]).id
    found = dense_vault.recall_when("audit chain", min_similarity=-1.0).items
    assert {i.id for i in found} == {first, second} and {i.match for i in found} == {"meaning"}
    assert indexed(dense_vault, "audit chain", min_similarity=-1.0) == brute_force(
        dense_vault, "audit chain", min_similarity=-1.0
    )


def test_another_process_writes_are_followed(
    vault_path: Any, clock: Clock, fake_embedder: FakeEmbedder
) -> None:
    with (
        Vault(vault_path, clock=clock, embedder=fake_embedder) as one,
        Vault(vault_path, clock=clock, embedder=FakeEmbedder()) as two,
    ):
        one.remember("note", "a", "first", recall_when=["deploy window"])
        assert [i.key for i in two.recall_when("the deploy window", min_similarity=0.99).items] == ["a"]
        b = one.remember("note", "b", "second", recall_when=["release train"]).id
        assert [i.id for i in two.recall_when("release train", min_similarity=0.99, semantic=True).items] == [
            b
        ]
        one.reindex()  # logs a rebuild: the matrix is built again
        assert indexed(two, "release train", min_similarity=0.0) == brute_force(
            two, "release train", min_similarity=0.0
        )


def test_the_matrix_screens_in_float32_and_scores_exactly() -> None:
    rng = np.random.default_rng(7)
    vectors = rng.normal(size=(500, 16)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    held = PhraseMatrix(16)
    held.add({("", f"p{i}"): v for i, v in enumerate(vectors)})
    held.add({("", "p0"): np.zeros(16, dtype=np.float32)})  # a phrase held keeps its row
    query = vectors[3].astype(np.float64) * 0.5 + vectors[4].astype(np.float64) * 0.5
    query /= np.linalg.norm(query)
    exact = {("", f"p{i}"): float(np.dot(v.astype(np.float64), query)) for i, v in enumerate(vectors)}
    found = held.near(query, 0.3)
    assert found == {k: c for k, c in exact.items() if c >= 0.3 - SLACK}
    assert {k for k, c in found.items() if c >= 0.3} == {k for k, c in exact.items() if c >= 0.3}
    assert len(held.keys) == 500 and held.matrix.shape[0] >= 500


@pytest.mark.parametrize("unused", [0, 2_000])
def test_the_cost_follows_the_words_the_context_holds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, unused: int
) -> None:
    """No timing: the versions the index names and the rows read through the view are the same whether or not the
    vault holds thousands of phrases the context does not hold, or holds a word of but too few to match."""
    examined: list[int] = []
    found = proactive.candidates

    def counted(conn: Any, v: Any, vids: Any) -> list[dict[str, Any]]:
        examined.append(len(vids))
        rows = found(conn, v, vids)
        examined.append(len(rows))
        return rows

    with Vault(tmp_path / "v.db", embedder=False) as vault:
        vault.remember_many(
            [
                {
                    "category": "note",
                    "key": f"hit{i}",
                    "content": f"hit {i}",
                    "recall_when": ["choosing a database", f"unrelated thing {i}"],
                }
                for i in range(5)
            ]
        )
        vault.remember_many(
            [
                {
                    "category": "note",
                    "key": f"miss{i}",
                    "content": f"miss {i}",
                    "recall_when": [
                        f"zebra{i % 97} crossing{i % 89}",
                        "quarterly report",
                        "lunch order",
                        # a word of the context each, short of a match: not read either
                        "choosing a restaurant",
                        "database migration plan",
                        "lunch today",
                    ],
                }
                for i in range(unused)
            ]
        )
        monkeypatch.setattr(proactive, "candidates", counted)
        assert len(vault.prepare("we are choosing a database today").triggered) == 5
        assert len(vault.recall_when("we are choosing a database today").items) == 5
    assert examined == [5, 5, 5, 5]
