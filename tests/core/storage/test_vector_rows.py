"""storage/vector_rows.py: the vector store's shared SQL on a real SQLite vault (the model recorded and a
different one refused, coverage of the current versions, the versions still waiting for a vector with
the current ones first) and the canonical rescoring of an exact scan's hits."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from perseus_vault_core import Conflict, Vault
from perseus_vault_core.primitives.hits import Hit
from perseus_vault_core.storage import vector_rows

from ...conftest import Clock, FakeEmbedder


def test_the_model_is_recorded_with_the_first_vector_and_another_is_refused(
    tmp_path: Path, clock: Clock
) -> None:
    with Vault(tmp_path / "v.db", clock=clock, embedder=FakeEmbedder()) as vault:
        conn = vault.engine.conn()
        vault.remember("fact", "a", "alpha beta")
        vault.wait_for_vector_index(timeout=30)
        assert vector_rows.model(conn) == (FakeEmbedder.identity, FakeEmbedder.dimension)
        vector_rows.check_model(conn, FakeEmbedder.identity, FakeEmbedder.dimension)  # the same: fine
        for identity, dimension in ((FakeEmbedder.identity, 128), ("other-model@2", 64)):
            with pytest.raises(Conflict) as raised:
                vector_rows.check_model(conn, identity, dimension)
            said = str(raised.value)
            assert f"come from {FakeEmbedder.identity} (64 dimensions)" in said
            assert f"the embedder is {identity} ({dimension} dimensions)" in said and "--reembed" in said


def test_without_vectors_there_is_no_model_and_every_version_waits(tmp_path: Path, clock: Clock) -> None:
    with Vault(tmp_path / "n.db", clock=clock, embedder=False) as vault:
        conn = vault.engine.conn()
        assert vector_rows.model(conn) is None
        vector_rows.check_model(conn, "any@1", 3)  # nothing recorded: anything goes
        vault.remember("fact", "city", "Paris")
        vault.remember("fact", "city", "Berlin", summary="moved")
        vault.remember("note", "n", "a note")
        assert vector_rows.coverage(conn) == (0, 2)  # (embedded, current versions)
        assert vector_rows.missing_count(conn) == 3  # the closed Paris version too
        waiting = vector_rows.missing(conn, 10)
        assert [(content, head) for _, content, _, head in waiting] == [
            ("Berlin", True),
            ("a note", True),
            ("Paris", False),
        ]  # current ones first, then by vid
        assert waiting[0][2] == "moved" and len(vector_rows.missing(conn, 1)) == 1


def test_coverage_counts_the_current_versions_with_a_vector(tmp_path: Path, clock: Clock) -> None:
    with Vault(tmp_path / "c.db", clock=clock, embedder=FakeEmbedder()) as vault:
        conn = vault.engine.conn()
        for i in range(3):
            vault.remember("note", f"k{i}", f"memory number {i}")
        vault.wait_for_vector_index(timeout=30)
        assert vector_rows.coverage(conn) == (3, 3) and vector_rows.missing_count(conn) == 0
        assert vector_rows.missing(conn, 10) == []


def test_rescoring_is_the_canonical_cosine_best_first_ties_by_entity() -> None:
    query = np.array([1.0, 0.0], dtype=np.float32)
    found = {
        10: np.array([0.6, 0.8], dtype=np.float32),
        11: np.array([1.0, 0.0], dtype=np.float32),
        12: np.array([0.6, -0.8], dtype=np.float32),
    }
    hits = [Hit(3, 10, 0.0), Hit(2, 11, 0.5), Hit(1, 12, 0.9)]  # the scan's own scores are replaced
    rescored = vector_rows.rescore(hits, found, query)
    assert [(h.entity_id, h.vid) for h in rescored] == [(2, 11), (1, 12), (3, 10)]  # 0.6 tie: entity 1 first
    assert rescored[0].score == pytest.approx(1.0) and rescored[1].score == pytest.approx(0.6)
    assert vector_rows.rescore([], found, query) == []
    assert vector_rows.blob(np.array([1.0, 0.5])) == np.array([1.0, 0.5], dtype=np.float32).tobytes()
