"""Dense and hybrid recall: modes, fusion, filters inside the vector arm, knobs in every mode."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from perseus_vault_core import Conflict, InvalidInput, NotSupported, Vault
from perseus_vault_core.storage.sqlite import vectors

from ...conftest import DAY_MS, Clock, FakeEmbedder

pytestmark = pytest.mark.both_backends  # the contract suite: SQLite and PostgreSQL (tests/conftest.py)


def ids(result) -> list[int]:  # type: ignore[no-untyped-def]
    return [item.id for item in result.items]


@pytest.fixture
def notes(dense_vault: Vault, clock: Clock) -> dict[str, int]:
    texts = {
        "db": "The billing ledger runs on postgres with nightly backups",
        "cache": "Redis caches session tokens for the login service",
        "deploy": "Deploys go through the canary stage before production",
        "queue": "Kafka carries billing events to the ledger workers",
    }
    out = {}
    for key, text in texts.items():
        out[key] = dense_vault.remember("note", key, text).id
        clock.advance(1000)
    for i in range(12):
        dense_vault.remember("filler", f"f{i}", f"Lunch menu {i}: soup, bread and seasonal fruit")
    return out


def test_auto_mode_is_hybrid_when_vectors_exist(dense_vault: Vault, notes: dict[str, int]) -> None:
    r = dense_vault.recall("billing ledger", reinforce=False)
    assert r.search_mode == "hybrid"
    assert r.items[0].id in (notes["db"], notes["queue"])
    assert all(set(i.ranks) <= {"fts5", "dense"} and i.ranks for i in r.items)
    both = [i for i in r.items if set(i.ranks) == {"fts5", "dense"}]
    assert both, "items found by both arms carry both ranks"
    assert dense_vault.stats().embedding_coverage == 1.0


def test_dense_mode_never_falls_back_to_keywords(dense_vault: Vault, notes: dict[str, int]) -> None:
    r = dense_vault.recall("billing ledger", mode="dense", reinforce=False)
    assert r.search_mode == "dense" and r.items
    assert all(set(i.ranks) == {"dense"} for i in r.items)
    assert (
        r.items[0].ranks == {"dense": 1} and -1.0 <= r.items[-1].score <= r.items[0].score <= 1.0
    )  # cosines


def test_hybrid_with_an_empty_keyword_arm_is_the_dense_arm(dense_vault: Vault, notes: dict[str, int]) -> None:
    # Only stopwords: the keyword arm finds nothing and is dropped; dense still answers.
    hybrid = dense_vault.recall("what is it about", mode="hybrid", reinforce=False)
    dense = dense_vault.recall("what is it about", mode="dense", reinforce=False)
    assert ids(hybrid) == ids(dense)
    assert all("fts5" not in i.ranks for i in hybrid.items)
    assert dense_vault.recall("*", mode="dense").items == []  # no word at all: nothing, in every mode


def test_same_call_same_bytes_in_every_mode(dense_vault: Vault, notes: dict[str, int]) -> None:
    for mode in ("fts5", "dense", "hybrid"):
        a = dense_vault.recall("billing events ledger", mode=mode, reinforce=False).model_dump_json()
        assert a == dense_vault.recall("billing events ledger", mode=mode, reinforce=False).model_dump_json()


def test_the_vector_arm_filters_inside_its_query(dense_vault: Vault) -> None:
    """The nearest vectors belong to another tenant: the vector arm must still return this tenant's."""
    for i in range(40):
        dense_vault.remember(
            "note", f"other{i}", "billing ledger postgres backups", agent_id="other", keep_duplicate=True
        )
    mine = dense_vault.remember("note", "mine", "an unrelated sentence about gardening", agent_id="me")
    for mode in ("dense", "hybrid"):
        r = dense_vault.recall(
            "billing ledger postgres backups", mode=mode, agent_id="me", limit=5, reinforce=False
        )
        assert ids(r) == [mine.id], mode
    assert dense_vault.wait_for_vector_index()
    r = dense_vault.recall(
        "billing ledger postgres backups", mode="dense", agent_id="me", limit=5, reinforce=False
    )
    assert ids(r) == [mine.id]
    archived = dense_vault.remember("note", "gone", "billing ledger postgres backups", agent_id="me")
    dense_vault.forget(archived.id)
    r = dense_vault.recall("billing ledger postgres backups", mode="dense", agent_id="me", reinforce=False)
    assert archived.id not in ids(r)


def test_mirror_and_sql_paths_agree(dense_vault: Vault, notes: dict[str, int], clock: Clock) -> None:
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


def test_knobs_work_in_every_mode(dense_vault: Vault, clock: Clock) -> None:
    old = dense_vault.remember("note", "old", "rotation policy for secrets")
    clock.advance(20 * DAY_MS)
    new = dense_vault.remember("note", "new", "rotation policy for keys", verified=True)
    for i in range(10):
        dense_vault.remember("filler", f"f{i}", f"unrelated filler {i}")
    for mode in ("fts5", "dense", "hybrid"):
        plain = dense_vault.recall("rotation policy", mode=mode, trust_weight=0, reinforce=False)
        trusted = dense_vault.recall("rotation policy", mode=mode, trust_weight=2.0, reinforce=False)
        assert trusted.items[0].id == new.id, mode
        timed = dense_vault.recall(
            "rotation policy", mode=mode, trust_weight=0, recency_half_life_secs=86_400, reinforce=False
        )
        assert timed.items[0].id == new.id, mode
        capped = dense_vault.recall("rotation policy", mode=mode, preview_cap=8, reinforce=False)
        assert all(
            len(i.content) < 250 and "get_entity" in i.content
            for i in capped.items
            if len(dense_vault.get_entity(i.id).content) > 8
        )
        assert plain.items and old.id in ids(plain)


def test_startup_reranks_by_actionability_and_is_off_by_default(dense_vault: Vault) -> None:
    vague = dense_vault.remember("note", "vague", "billing stuff, maybe")
    concrete = dense_vault.remember(
        "note", "concrete", "Billing: decided to retry failed charges, see ENG-41 and src/billing/retry.py"
    )
    for mode in ("fts5", "dense", "hybrid"):
        base = dense_vault.recall("billing", mode=mode, reinforce=False)
        again = dense_vault.recall("billing", mode=mode, reinforce=False, startup=False)
        assert base.model_dump_json() == again.model_dump_json()
        assert "actionability" not in base.model_dump()["items"][0]
        started = dense_vault.recall("billing", mode=mode, startup=True, reinforce=False)
        assert started.items[0].id == concrete.id, mode
        by_id = {i.id: i.actionability for i in started.items}
        assert by_id[concrete.id] > by_id[vague.id]


def test_validity_profile_annotates_and_reranks_hybrid(dense_vault: Vault, clock: Clock) -> None:
    stale = dense_vault.remember("note", "stale", "incident runbook for the payment gateway")
    clock.advance(100 * DAY_MS)  # over three half-lives: freshness below 1/8
    fresh = dense_vault.remember("note", "fresh", "incident runbook for the payment gateway, revised")
    for i in range(10):
        dense_vault.remember("filler", f"f{i}", f"unrelated filler {i}")
    plain = dense_vault.recall("incident runbook payment gateway", mode="hybrid", reinforce=False)
    assert "validity" not in plain.model_dump()["items"][0]
    annotated = dense_vault.recall(
        "incident runbook payment gateway", mode="fts5", validity_annotate=True, reinforce=False, curate=False
    )
    grades = {i.id: i.validity.grade for i in annotated.items if i.validity}
    assert grades[stale.id] == "context_invalid" and grades[fresh.id] == "valid"
    ranked = dense_vault.recall(
        "incident runbook payment gateway",
        mode="hybrid",
        profile="validity",
        limit=50,
        reinforce=False,
        curate=False,
    )  # the validity multiplier alone
    assert ranked.items[0].id == fresh.id
    assert {i.id for i in ranked.items} >= {stale.id, fresh.id}  # re-ranks, never excludes


def test_point_in_time_dense_recall_uses_the_vectors_of_that_time(dense_vault: Vault, clock: Clock) -> None:
    e = dense_vault.remember("note", "k", "postgres replication lag")
    before = clock.now
    clock.advance(1000)
    dense_vault.remember("note", "k", "gardening tips for spring")
    for i in range(5):
        dense_vault.remember("filler", f"f{i}", f"other words {i}")
    now = dense_vault.recall("postgres replication", mode="dense", limit=1, reinforce=False)
    then = dense_vault.recall("postgres replication", mode="dense", limit=1, as_of_unix_ms=before)
    assert then.items[0].id == e.id and then.items[0].content == "postgres replication lag"
    assert now.items[0].content != "postgres replication lag"


def test_another_model_is_refused_and_nothing_is_written(
    db_path, clock: Clock, fake_embedder: FakeEmbedder
) -> None:  # type: ignore[no-untyped-def]
    class Other(FakeEmbedder):
        identity = "another-model@2"

    with Vault(db_path, clock=clock, embedder=fake_embedder) as first:
        first.remember("note", "k", "first model wrote this")
    with Vault(db_path, clock=clock, embedder=Other()) as second:
        before = second.stats()
        with pytest.raises(Conflict, match="embed --reembed"):
            second.remember("note", "k2", "second model")
        with pytest.raises(Conflict):
            second.recall("first model", mode="dense")
        with pytest.raises(Conflict):
            second.recall("first model")  # auto mode would be hybrid: refused, not silently mixed
        assert second.stats().entities == before.entities
        report = second.embed(reembed=True)
        assert report.reembedded and report.model == "another-model@2" and report.embedded == 1
        second.remember("note", "k2", "second model")
        assert second.stats().embedding_model == "another-model@2"
        assert second.recall("first model", mode="dense").items


def test_embed_backfills_a_keyword_only_store(db_path, clock: Clock, fake_embedder: FakeEmbedder) -> None:  # type: ignore[no-untyped-def]
    with Vault(db_path, clock=clock, embedder=False) as plain:
        for i in range(30):
            plain.remember("note", f"k{i}", f"note number {i} about billing")
        plain.remember("note", "k0", "note zero, rewritten")
        assert plain.stats().embedding_coverage == 0.0
        with pytest.raises(NotSupported):
            plain.embed()
    with Vault(db_path, clock=clock, embedder=fake_embedder) as vault:
        assert vault.recall("billing").search_mode == "fts5"  # no vectors yet
        seen: list[tuple[int, int]] = []
        report = vault.embed(progress=lambda done, total: seen.append((done, total)))
        assert report.embedded == 31 and seen[-1] == (31, 31)  # 30 heads and one older version
        stats = vault.stats()
        assert stats.embedding_coverage == 1.0 and stats.embedded == 30
        assert vault.recall("billing").search_mode == "hybrid"
        assert vault.embed().embedded == 0  # nothing left to do
        assert vault.check().ok


def test_unchanged_text_keeps_its_vector(dense_vault: Vault, fake_embedder: FakeEmbedder) -> None:
    e = dense_vault.remember("note", "k", "same words")
    calls = fake_embedder.texts
    dense_vault.remember("note", "k", "same words", certainty=0.9)  # a new version, same text
    dense_vault.forget(e.id)
    dense_vault.remember("note", "k", "same words")  # restored
    assert fake_embedder.texts == calls
    assert dense_vault.stats().embedding_coverage == 1.0
    dense_vault.forget(e.id)
    dense_vault.purge(e.id)
    conn = dense_vault.engine.conn()
    assert conn.execute("SELECT count(*) FROM version_vectors").fetchone()[0] == 0


def test_a_vault_without_an_embedder_refuses_meaning_modes(
    db_path, clock: Clock, fake_embedder: FakeEmbedder
) -> None:  # type: ignore[no-untyped-def]
    with Vault(db_path, clock=clock, embedder=fake_embedder) as vault:
        vault.remember("note", "k", "vectors exist")
    with Vault(db_path, clock=clock, embedder=False) as keyword_only:
        assert keyword_only.recall("vectors").search_mode == "fts5"
        with pytest.raises(NotSupported, match="embedding model"):
            keyword_only.recall("vectors", mode="dense")


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


# --- review regressions ----------------------------------------------------------------------


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


def test_a_broken_embedder_cannot_start_a_reembed(dense_vault: Vault) -> None:
    from perseus_vault_core import InvalidInput

    for i in range(5):
        dense_vault.remember("note", f"k{i}", f"kept vector {i}")

    class Broken(FakeEmbedder):
        identity = "broken@1"

        def embed(self, texts):  # type: ignore[no-untyped-def]
            return super().embed(texts)[:, :10]  # the wrong width

    dense_vault.engine.embedder = Broken()
    with pytest.raises(InvalidInput, match="embedder"):
        dense_vault.embed(reembed=True)
    assert dense_vault.stats().embedded == 5 and dense_vault.stats().embedding_model == FakeEmbedder.identity


def test_no_version_goes_without_its_vector(dense_vault: Vault) -> None:
    dense_vault.remember("note", "k", "alpha")
    dense_vault.remember_many(
        [
            {"category": "note", "key": "k", "content": "beta"},
            {"category": "note", "key": "k", "content": "alpha"},
        ]
    )
    dense_vault.remember_many(
        [
            {"category": "note", "key": "s", "content": "one", "summary": "S"},
            {"category": "note", "key": "s", "content": "two"},
        ]
    )
    import json as _json

    dense_vault.import_jsonl([_json.dumps({"category": "note", "key": "s", "content": "three"})])
    conn = dense_vault.engine.conn()
    unvectored = conn.execute(
        "SELECT count(*) FROM entity_versions v WHERE NOT EXISTS (SELECT 1 FROM version_vectors x WHERE x.vid = v.vid)"
    ).fetchone()[0]
    assert unvectored == 0


@pytest.mark.parametrize("fault", ["width", "rows", "nan", "zero"])
def test_an_embedder_breaking_its_contract_is_refused(db_path, clock: Clock, fault: str) -> None:  # type: ignore[no-untyped-def]
    from perseus_vault_core import InvalidInput

    class Faulty(FakeEmbedder):
        def embed(self, texts):  # type: ignore[no-untyped-def]
            out = super().embed(texts)
            if fault == "width":
                return out[:, :5]
            if fault == "rows":
                return out[:-1]
            out[0, 0] = float("nan") if fault == "nan" else out[0, 0]
            return out * 0 if fault == "zero" else out

    with Vault(db_path, clock=clock, embedder=Faulty()) as vault:
        with pytest.raises(InvalidInput, match="embedder"):
            vault.remember_many(
                [
                    {"category": "note", "key": "a", "content": "x"},
                    {"category": "note", "key": "b", "content": "y"},
                ]
            )
        assert vault.stats().entities == 0


def test_keyword_recall_does_not_need_a_reachable_provider(db_path, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    with Vault(db_path, embedder=False) as vault:
        vault.remember("note", "k", "alpha beta")
    monkeypatch.setenv("PERSEUS_VAULT_EMBEDDER", "ollama:x@http://127.0.0.1:9")
    with Vault(db_path) as vault:
        assert vault.recall("alpha", mode="fts5").items
        assert vault.recall("alpha").search_mode == "fts5"  # no vectors: auto never asks the provider


def test_bad_settings_are_refused(
    db_path, monkeypatch: pytest.MonkeyPatch, fake_embedder: FakeEmbedder
) -> None:  # type: ignore[no-untyped-def]
    from perseus_vault_core import InvalidInput, SetupError

    for kwargs, field in (
        ({"threads": "x"}, "threads"),
        ({"threads": 0}, "threads"),
        ({"vector_index": "no"}, "vector_index"),
        ({"fusion": {"k": 0}}, "fusion.k"),
    ):
        with pytest.raises(InvalidInput) as err:
            Vault(db_path, **kwargs)
        assert err.value.field == field
    with Vault(db_path, embedder=fake_embedder) as vault:
        vault.remember("note", "k", "x")
        with pytest.raises(InvalidInput):
            vault.embed(progress=5)  # type: ignore[arg-type]
    monkeypatch.setenv("PERSEUS_VAULT_THREADS", "abc")
    from perseus_vault_core.embeddings.minilm import _threads

    with pytest.raises(SetupError, match="PERSEUS_VAULT_THREADS"):
        _threads(None)


def test_the_vector_index_waits_for_the_first_vector(db_path, fake_embedder: FakeEmbedder) -> None:  # type: ignore[no-untyped-def]
    with Vault(db_path, embedder=fake_embedder) as vault:
        assert not vault.wait_for_vector_index(timeout=5)
        assert vault.engine.vector_index is not None and not vault.engine.vector_index.disabled
        vault.remember("note", "k", "now there is a vector")
        assert vault.wait_for_vector_index()


def test_a_vector_backfill_does_not_rebuild_the_keyword_index(
    db_path, clock: Clock, fake_embedder: FakeEmbedder
) -> None:  # type: ignore[no-untyped-def]
    with Vault(db_path, clock=clock, embedder=False) as plain:
        plain.remember_many(
            {"category": "note", "key": f"k{i}", "content": f"billing note {i}"} for i in range(50)
        )
    with Vault(db_path, clock=clock, embedder=fake_embedder) as vault:
        assert vault.wait_for_keyword_index()
        index = vault.engine.keyword_index
        assert index is not None
        rows_before = index.rows
        vault.embed()
        assert vault.recall("billing", mode="fts5").items
        assert index.ready and index.rows is rows_before  # followed the log, no rebuild


def _child_recall(path: str, out: Any) -> None:
    from tests.conftest import FakeEmbedder as _Fake

    with Vault(path, embedder=_Fake()) as vault:
        out.put(len(vault.recall("billing", mode="hybrid").items))


def test_hybrid_recall_works_in_a_forked_child(db_path, fake_embedder: FakeEmbedder) -> None:  # type: ignore[no-untyped-def]
    import multiprocessing

    with Vault(db_path, embedder=fake_embedder) as vault:
        vault.remember("note", "k", "billing ledger")
        assert vault.recall("billing", mode="hybrid").items  # the parent starts its embedding pool
        # and its index builds, which may still run as it forks (tests/core/primitives/test_forking.py)
    ctx = multiprocessing.get_context("fork")
    out = ctx.Queue()
    child = ctx.Process(target=_child_recall, args=(str(db_path), out))
    child.start()
    child.join(60)
    assert child.exitcode == 0 and out.get(timeout=5) == 1


def test_canonical_cosine_does_not_depend_on_row_position() -> None:
    import numpy as np

    from perseus_vault_core.primitives.dense import cosine

    rng = np.random.default_rng(3)
    rows = rng.standard_normal((500, 384)).astype(np.float32)
    query = rng.standard_normal(384).astype(np.float32)
    order = rng.permutation(500)
    assert np.array_equal(cosine(rows, query)[order], cosine(rows[order], query))
    assert np.array_equal(cosine(rows[:3], query), cosine(rows, query)[:3])
    for shift in (
        1,
        2,
        3,
        5,
    ):  # rows that start at any 4-byte boundary, as a blob or a mapped file gives them
        buffer = np.zeros(rows.size + 16, dtype=np.float32)
        moved = buffer[shift : shift + rows.size].reshape(rows.shape)
        moved[:] = rows
        assert np.array_equal(cosine(moved, query), cosine(rows, query))
        held = np.zeros(400, dtype=np.float32)
        held[shift : shift + 384] = query
        assert np.array_equal(cosine(rows, held[shift : shift + 384]), cosine(rows, query))


def test_recall_by_vector_matches_dense_recall_of_the_same_embedding(
    dense_vault: Vault, notes: dict[str, int], fake_embedder: FakeEmbedder
) -> None:
    query = "billing ledger"
    by_text = dense_vault.recall(query, mode="dense", limit=5, reinforce=False)
    vector = fake_embedder.embed([query])[0]
    by_vector = dense_vault.recall_by_vector(list(3.0 * vector), limit=5, reinforce=False)  # any length
    assert by_vector.search_mode == "dense"
    assert ids(by_vector) == ids(by_text)
    assert [i.score for i in by_vector.items] == pytest.approx([i.score for i in by_text.items])
    scoped = dense_vault.recall_by_vector(vector, category="filler", limit=3, reinforce=False)
    assert scoped.items and all(i.category == "filler" for i in scoped.items)


@pytest.mark.parametrize(
    "bad, field",
    [([1.0, 2.0], "vector"), ([[0.1] * 8], "vector"), ([float("nan")] * 8, "vector"), ("text", "vector")],
)
def test_recall_by_vector_names_a_bad_vector(
    dense_vault: Vault, notes: dict[str, int], bad: Any, field: str
) -> None:
    with pytest.raises(InvalidInput) as err:
        dense_vault.recall_by_vector(bad)
    assert err.value.field == field
    with pytest.raises(InvalidInput) as err:
        dense_vault.recall_by_vector([0.1] * 8, mode="fts5")
    assert err.value.field == "mode"


def test_recall_by_vector_needs_stored_vectors(vault: Vault) -> None:
    vault.remember("note", "a", "plain words")
    with pytest.raises(NotSupported):
        vault.recall_by_vector([0.5, 0.5])


def test_the_embedder_is_visible_to_adapters(
    dense_vault: Vault, fake_embedder: FakeEmbedder, tmp_path: Path
) -> None:
    # Adapters that embed on their side (query vectors, MMR candidates) must use the vault's own model.
    assert dense_vault.embedder is fake_embedder
    with Vault(tmp_path / "keyword-only.db", embedder=False) as keyword_only:
        assert keyword_only.embedder is None


def test_recall_by_vector_has_no_query_words_for_the_knobs(
    dense_vault: Vault, notes: dict[str, int], fake_embedder: FakeEmbedder
) -> None:
    dense_vault.remember(
        "note", "word", "A vector of billing ledger numbers"
    )  # a literal word no query holds
    vector = fake_embedder.embed(["billing ledger"])[0]
    plain = dense_vault.recall_by_vector(vector, limit=5, reinforce=False)
    boosted = dense_vault.recall_by_vector(vector, limit=5, reinforce=False, content_weight=5.0)
    assert ids(boosted) == ids(plain)
    assert [i.score for i in boosted.items] == pytest.approx([i.score for i in plain.items])


def test_absolute_scores_leave_unrelated_memories_out_with_the_bundled_model(
    tmp_path: Any, real_embedder: Any
) -> None:
    with Vault(tmp_path / "real.db", embedder=real_embedder) as vault:
        deploys = vault.remember(
            "ops", "deploys", "Deploys go out on Tuesdays after the standup.", verified=True
        )
        db = vault.remember("decision", "db-engine", "We chose Postgres for multi-writer scaling.")
        vault.remember("note", "lunch", "Team lunch is on Fridays at the Thai place.")
        # A boost never outranks meaning: the verified deploy note stays below the answer.
        assert [i.id for i in vault.recall("which database did we pick", reinforce=False).items][0] == db.id
        # A nonsense query over an unrelated store: nothing above the threshold prepare uses.
        assert vault.recall("kubernetes helm chart", min_score="auto", reinforce=False).items == []
        assert vault.prepare("kubernetes helm chart").related == []
        # Scores mean the same in every query: a real answer scores above the best of nonsense.
        answer = vault.recall("which database did we pick", reinforce=False).items[0].score
        nonsense = vault.recall("kubernetes helm chart", reinforce=False, min_score=None).items[0].score
        assert answer > 2 * nonsense and deploys.id != db.id


def test_a_recall_reads_the_stored_model_once_and_a_keyword_recall_not_at_all(
    dense_vault: Vault, notes: dict[str, int], backend: str
) -> None:
    if backend == "postgres":
        pytest.skip("counts SQLite's statements (a Postgres snapshot reads the model with its BEGIN)")
    dense_vault.recall("billing ledger", mode="dense", reinforce=False)  # the indexes warm first
    statements: list[str] = []
    conn = dense_vault.engine.conn()
    conn.set_trace_callback(statements.append)
    try:
        reads = {}
        for mode in ("dense", "hybrid", None, "fts5"):
            statements.clear()
            assert dense_vault.recall("billing ledger", mode=mode, reinforce=False).items
            reads[mode] = sum("embedding_model" in s for s in statements)
    finally:
        conn.set_trace_callback(None)
    assert reads == {"dense": 1, "hybrid": 1, None: 1, "fts5": 0}
