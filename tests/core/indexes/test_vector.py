"""The in-memory vector index (indexes/vector.py): it answers as the backend's SQL search does, follows
writes from this vault and from another process, waits for the first vector, and follows a re-embed."""

from __future__ import annotations

import pytest

from perseus_vault_core import Conflict, Vault
from perseus_vault_core.storage.sqlite import vectors

from ...conftest import Clock, FakeEmbedder

pytestmark = pytest.mark.both_backends  # the contract suite: SQLite and PostgreSQL (tests/conftest.py)


def test_mirror_and_sql_paths_agree(dense_vault: Vault, dense_notes: dict[str, int], clock: Clock) -> None:
    assert dense_vault.wait_for_vector_index()
    dense_vault.remember("note", "db", "The billing ledger moved to sqlite")  # the mirror follows the write
    fast = [
        (i.id, i.score)
        for i in dense_vault.recall("billing ledger sqlite", mode="dense", limit=20, reinforce=False).items
    ]
    index, dense_vault.engine.vector_index = dense_vault.engine.vector_index, None
    slow = [
        (i.id, i.score)
        for i in dense_vault.recall("billing ledger sqlite", mode="dense", limit=20, reinforce=False).items
    ]
    dense_vault.engine.vector_index = index
    assert [i for i, _ in fast] == [i for i, _ in slow]
    assert [s for _, s in fast] == pytest.approx([s for _, s in slow], abs=1e-5)


def test_the_vector_index_waits_for_the_first_vector(db_path, fake_embedder: FakeEmbedder) -> None:  # type: ignore[no-untyped-def]
    with Vault(db_path, embedder=fake_embedder) as vault:
        assert not vault.wait_for_vector_index(timeout=5)
        assert vault.engine.vector_index is not None and not vault.engine.vector_index.disabled
        vault.remember("note", "k", "now there is a vector")
        assert vault.wait_for_vector_index()


def _other_process_writes(path: str) -> None:
    from tests.conftest import FakeEmbedder

    with Vault(path, embedder=FakeEmbedder()) as other:
        other.remember_many(
            {"category": "note", "key": f"p{i}", "content": f"zebra stripes pattern {i}"} for i in range(20)
        )
        other.forget(other.recall("zebra stripes", mode="fts5", limit=1).items[0].id)


def test_vector_index_follows_another_process(db_path, fake_embedder: FakeEmbedder) -> None:  # type: ignore[no-untyped-def]
    import multiprocessing

    with Vault(db_path, embedder=fake_embedder) as vault:
        vault.remember_many(
            {"category": "note", "key": f"k{i}", "content": f"ledger entry {i}"} for i in range(50)
        )
        assert vault.wait_for_vector_index()
        proc = multiprocessing.get_context("spawn").Process(
            target=_other_process_writes, args=(str(db_path),)
        )
        proc.start()
        proc.join(120)
        assert proc.exitcode == 0
        fast = [
            (i.id, i.score)
            for i in vault.recall("zebra stripes", mode="dense", limit=30, reinforce=False).items
        ]
        assert vault.engine.vector_index is not None and vault.engine.vector_index.ready
        index, vault.engine.vector_index = vault.engine.vector_index, None
        slow = [
            (i.id, i.score)
            for i in vault.recall("zebra stripes", mode="dense", limit=30, reinforce=False).items
        ]
        vault.engine.vector_index = index
        assert fast == slow and len([1 for i, _ in fast]) >= 19


@pytest.mark.parametrize("shortlisted", [False, True])
def test_shallow_prefilter_same_answer_in_memory_and_in_sql(
    dense_vault: Vault, monkeypatch: pytest.MonkeyPatch, shortlisted: bool, backend: str
) -> None:
    """With a pre-filter far shallower than the store, both paths take the same candidates (cut to the
    same shortlist when one is taken), and a filter that rejects most of them makes the search look
    deeper rather than return short."""
    if backend == "postgres":
        pytest.skip(
            "SQLite's SQL path repeats the in-memory index's Hamming pre-filter; Postgres's takes HNSW's candidates"
        )
    from perseus_vault_core.recall import pipeline as recall_module

    monkeypatch.setattr(recall_module, "DENSE_DEPTH", 5)
    monkeypatch.setattr(recall_module, "DEPTH_PER_POOL", 1)
    monkeypatch.setattr(recall_module, "MIN_POOL", 16)  # the first tier: pool 16, its places the 4 asked for
    if shortlisted:  # a shortlist of a quarter of the depth: half the pool, so it must look deeper
        monkeypatch.setattr(recall_module, "SHORTLIST_PER_POOL", 0)
        monkeypatch.setattr(recall_module, "SHORTLIST_SHARE", 2)
    depths: list[int] = []
    kept: list[int] = []
    original = vectors.candidates

    def spy(conn, query, depth, agent, workspace, keep):  # type: ignore[no-untyped-def]
        depths.append(depth)
        ranking, complete = original(conn, query, depth, agent, workspace, keep)
        kept.append(len(ranking))
        return ranking, complete

    monkeypatch.setattr(vectors, "candidates", spy)
    for i in range(60):
        e = dense_vault.remember("note", f"k{i}", f"ledger entry {i} about billing and invoices {i % 7}")
        if i % 3:
            dense_vault.forget(e.id)  # two in three are archived: the view rejects them
    dense_vault.engine.reset_indexes()  # remember's similar-memory look-ups warmed them: SQL answers first
    depths.clear()  # and those look-ups searched too: count the recalls below only
    kept.clear()
    query = dict(mode="dense", limit=4, reinforce=False)
    sql_answer = dense_vault.recall("billing invoices ledger", **query).model_dump_json()
    assert depths[0] == 16 and len(depths) > 1  # the pool is 16; two in three rejected: it looked deeper
    assert kept[0] == (8 if shortlisted else 16)
    assert dense_vault.wait_for_vector_index()
    memory_answer = dense_vault.recall("billing invoices ledger", **query).model_dump_json()
    assert memory_answer == sql_answer
    assert len(dense_vault.recall("billing invoices ledger", **query).items) == 4


class RandomEmbedder(FakeEmbedder):
    """Dense random-ish vectors (a hash of the whole text): near-ties everywhere, like a real model's."""

    identity = "random-embedder@1"
    dimension = 48

    def embed(self, texts):  # type: ignore[no-untyped-def]
        import hashlib as _h

        import numpy as _np

        out = _np.zeros((len(texts), self.dimension), dtype=_np.float32)
        for i, text in enumerate(texts):
            seed = int.from_bytes(_h.blake2b(text.encode(), digest_size=8).digest(), "little")
            out[i] = _np.random.default_rng(seed).standard_normal(self.dimension)
        return out / _np.linalg.norm(out, axis=1, keepdims=True)


def test_warm_and_cold_answer_alike_with_identical_vectors(db_path) -> None:  # type: ignore[no-untyped-def]
    with Vault(db_path, embedder=RandomEmbedder()) as vault:
        for i in range(100):
            vault.remember("note", f"r{i}", f"random memory {i}")
        for i in range(106):
            vault.remember("note", f"dup{i}", "the very same words", verified=i == 105, keep_duplicate=True)
        calls = [
            dict(query=q, mode=m, limit=10, reinforce=False, query_time_unix_ms=1)
            for q in ("the very same words", "random memory 3", "something else")
            for m in ("dense", "hybrid")
        ]
        cold = [vault.recall(**c).model_dump_json() for c in calls]
        assert vault.wait_for_vector_index() and vault.wait_for_keyword_index()
        warm = [vault.recall(**c).model_dump_json() for c in calls]
        assert warm == cold


def test_a_reembed_elsewhere_reaches_a_warm_vault(db_path, fake_embedder: FakeEmbedder) -> None:  # type: ignore[no-untyped-def]
    with Vault(db_path, embedder=fake_embedder) as first:
        for i in range(20):
            first.remember("note", f"k{i}", f"note about billing {i}")
        assert first.wait_for_vector_index()
        with Vault(db_path, embedder=RandomEmbedder()) as second:
            second.embed(reembed=True)
            assert second.recall("billing", mode="dense").items
        with pytest.raises(Conflict):  # the first vault's model is no longer the vault's
            first.recall("billing", mode="dense")
        assert first.recall("billing", mode="fts5").items
