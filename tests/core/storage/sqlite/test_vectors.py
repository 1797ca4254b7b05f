"""storage/sqlite/vectors.py on a real SQLite vault: the model claimed once and forgotten with every
vector, vectors written, copied, deleted and read back (cosines, heads), the current view's candidates
in scope with whether they were all, and trigger-phrase vectors per scope, forgotten only when unused."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from perseus_vault_core import Conflict, Vault
from perseus_vault_core.primitives.dense import cosine
from perseus_vault_core.storage.base import OP_VECTORS_RESET
from perseus_vault_core.storage.sqlite import vectors

from ....conftest import Clock, FakeEmbedder


def _vid(vault: Vault, entity_id: int) -> int:
    return int(
        vault.engine.conn()
        .execute(
            "SELECT vid FROM entity_versions WHERE entity_id = ? AND recorded_to_ms IS NULL", (entity_id,)
        )
        .fetchone()[0]
    )


def test_the_model_is_claimed_once_and_forgotten_with_every_vector(tmp_path: Path, clock: Clock) -> None:
    with Vault(tmp_path / "v.db", clock=clock, embedder=False) as vault:
        vault.remember("fact", "a", "alpha", recall_when=["the alpha phrase"])
        assert vault.engine.write(lambda c: vectors.claim(c, "model@1", 4)) is True
        assert vault.engine.write(lambda c: vectors.claim(c, "model@1", 4)) is False  # already recorded
        with pytest.raises(Conflict):
            vault.engine.write(lambda c: vectors.claim(c, "model@2", 4))
        vid = _vid(vault, 1)
        vault.engine.write(lambda c: vectors.write(c, [(vid, np.ones(4, dtype=np.float32) / 2)]))
        vault.engine.write(
            lambda c: vectors.write_phrase_vectors(c, "model@1", {("s", "the alpha phrase"): np.ones(4)})
        )
        conn = vault.engine.conn()
        before = vault.engine.backend.changes.position(conn)
        vault.engine.write(vectors.forget_model)
        assert vectors.model(conn) is None and not vectors.index_missing(conn)
        assert conn.execute("SELECT count(*) FROM version_vectors").fetchone()[0] == 0
        assert conn.execute("SELECT count(*) FROM trigger_vectors").fetchone()[0] == 0
        logged = vault.engine.backend.changes.entries(
            conn, before, vault.engine.backend.changes.position(conn), True
        )
        assert [op for _, op in logged] == [OP_VECTORS_RESET]
        assert vault.engine.write(lambda c: vectors.claim(c, "model@2", 8)) is True  # another model now


def test_vectors_are_written_copied_deleted_and_read_back(tmp_path: Path, clock: Clock) -> None:
    embedder = FakeEmbedder()
    with Vault(tmp_path / "v.db", clock=clock, embedder=embedder) as vault:
        a = vault.remember("fact", "a", "postgres replication lag").id
        b = vault.remember("fact", "b", "gardening tips for spring").id
        conn = vault.engine.conn()
        va, vb = _vid(vault, a), _vid(vault, b)
        query = embedder.embed(["postgres replication"])[0]
        scores = vectors.cosines(conn, [va, vb, 999], query)  # a version without a vector is absent
        stored = vectors.head_vectors(conn, [a, b, 999])
        assert set(scores) == {va, vb} and set(stored) == {a, b}
        assert scores[va] == pytest.approx(float(cosine(stored[a][None, :], query)[0]))
        assert scores[va] > scores[vb]
        vault.engine.write(lambda c: vectors.copy(c, va, vb))  # b's version now carries a's vector
        assert np.array_equal(vectors.head_vectors(conn, [b])[b], stored[a])
        vault.engine.write(lambda c: vectors.delete(c, [va]))
        assert set(vectors.cosines(conn, [va, vb], query)) == {vb}
        assert vectors.existing(conn, [va, vb, 999]) == {va, vb}  # the versions stay, 999 never was


def test_candidates_are_the_scopes_current_versions_nearest_first(tmp_path: Path, clock: Clock) -> None:
    embedder = FakeEmbedder()
    with Vault(tmp_path / "v.db", clock=clock, embedder=embedder) as vault:
        mine = [
            vault.remember("note", f"m{i}", f"billing ledger entry {i}", agent_id="me").id for i in range(5)
        ]
        vault.remember("note", "o", "billing ledger entry for another", agent_id="other")
        vault.remember("note", "m0", "gardening tips for spring", agent_id="me")  # m0's head moves away
        conn = vault.engine.conn()
        query = embedder.embed(["billing ledger entry"])[0]
        ranking, complete = vectors.candidates(conn, query, 50, "me", None)
        assert complete and sorted(ranking.entity_ids.tolist()) == sorted(mine)  # one current version each
        assert set(ranking.vids.tolist()) == {_vid(vault, e) for e in mine}
        assert ranking.scores.tolist() == pytest.approx(
            cosine(
                np.stack([vectors.head_vectors(conn, [int(e)])[int(e)] for e in ranking.entity_ids]), query
            ).tolist()
        )
        cut, complete = vectors.candidates(conn, query, 3, "me", None)
        assert not complete and len(cut) == 3  # as deep as asked: perhaps not all there is
        short, _ = vectors.candidates(conn, query, 4, "me", None, keep=2)
        assert len(short) == 2
        empty, complete = vectors.candidates(conn, query, 5, "nobody", None)
        assert len(empty) == 0 and complete


def test_phrase_vectors_are_each_scopes_and_a_purge_forgets_only_unused_ones(
    tmp_path: Path, clock: Clock
) -> None:
    with Vault(tmp_path / "v.db", clock=clock, embedder=False) as vault:
        vault.remember("fact", "a", "alpha", recall_when=["kept phrase"], agent_id="me")
        scope = vault.engine.conn().execute("SELECT scope FROM entity_versions").fetchone()[0]
        one, two = np.full(4, 0.5, dtype=np.float32), np.asarray([1, 0, 0, 0], dtype=np.float32)
        written = {
            (scope, "kept phrase"): one,
            (scope, "gone phrase"): two,
            ("elsewhere", "kept phrase"): two,
        }
        vault.engine.write(lambda c: vectors.write_phrase_vectors(c, "m@1", written))
        conn = vault.engine.conn()
        found = vectors.phrase_vectors(
            conn, "m@1", [(scope, "kept phrase"), ("elsewhere", "kept phrase"), (scope, "never")]
        )
        assert set(found) == {(scope, "kept phrase"), ("elsewhere", "kept phrase")}
        assert np.array_equal(found[(scope, "kept phrase")], one) and np.array_equal(
            found[("elsewhere", "kept phrase")], two
        )
        assert vectors.phrase_vectors(conn, "m@2", [(scope, "kept phrase")]) == {}  # another model's: none
        vault.engine.write(lambda c: vectors.forget_phrases(c, scope, ["kept phrase", "gone phrase"]))
        left = vectors.phrase_vectors(conn, "m@1", list(written))
        assert set(left) == {
            (scope, "kept phrase"),
            ("elsewhere", "kept phrase"),
        }  # still used; another scope's
