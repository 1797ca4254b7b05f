"""Which search a recall runs, and what its model allows (recall/modes.py): the mode asked for or the default,
refused with a clear error when the vault cannot run it; a caller's query vector checked."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from perseus_vault_core import Conflict, InvalidInput, NotSupported, Vault
from perseus_vault_core.contract.params import RecallParams
from perseus_vault_core.embeddings import BUNDLED_IDENTITY
from perseus_vault_core.recall.modes import bundled, check_vector, choose, query_vector

from ...conftest import FakeEmbedder


def _choose(vault: Vault, **params: Any) -> str:
    engine = vault.engine
    with engine.reading() as conn:
        return choose(conn, RecallParams(query="billing", **params), engine.arms())


def test_the_default_is_hybrid_with_vectors_and_an_embedder_else_keywords(tmp_path: Any) -> None:
    with Vault(tmp_path / "v.db", embedder=FakeEmbedder()) as vault:
        assert _choose(vault) == "fts5"  # no vectors yet
        vault.remember("note", "n", "billing runs nightly")
        assert _choose(vault) == "hybrid" and _choose(vault, mode="dense") == "dense"
        assert _choose(vault, mode="fts5") == "fts5"
    with Vault(tmp_path / "v.db", embedder=False) as vault:  # the same file without an embedder
        assert _choose(vault) == "fts5"
        with pytest.raises(NotSupported, match="needs an embedding model"):
            _choose(vault, mode="hybrid")


def test_a_mode_that_cannot_run_is_refused(tmp_path: Any) -> None:
    with Vault(tmp_path / "v.db", embedder=FakeEmbedder()) as vault:
        with pytest.raises(NotSupported, match="needs stored vectors"):
            _choose(vault, mode="dense")
        vault.remember("note", "n", "billing runs nightly")

    class Other(FakeEmbedder):
        identity = "another-model@1"

    with Vault(tmp_path / "v.db", embedder=Other()) as vault:  # another model's query against these vectors
        with pytest.raises(Conflict, match="vectors come from"):
            _choose(vault)
        assert _choose(vault, mode="fts5") == "fts5"  # keywords need no model


@pytest.mark.parametrize("bad", [[0.0, 0.0], [1.0, float("nan")], [[1.0, 2.0]], "text", [1.0, None]])
def test_a_query_vector_is_one_non_zero_row_of_finite_numbers(bad: Any) -> None:
    with pytest.raises(InvalidInput, match="vector"):
        query_vector(bad)


def test_a_query_vector_is_made_unit_length() -> None:
    unit = query_vector([3, 4])
    assert unit.dtype == np.float32 and np.allclose(unit, [0.6, 0.8])


def test_bundled_is_the_bundled_model_only(tmp_path: Any) -> None:
    with Vault(tmp_path / "v.db", embedder=FakeEmbedder()) as vault:
        assert not bundled(vault.engine.arms())
    with Vault(tmp_path / "w.db", embedder=False) as vault:
        assert not bundled(vault.engine.arms())

    class Bundled(FakeEmbedder):
        identity = BUNDLED_IDENTITY

    with Vault(tmp_path / "x.db", embedder=Bundled()) as vault:
        assert bundled(vault.engine.arms())
    with Vault(tmp_path / "y.db") as vault:  # the default: the bundled model
        assert bundled(vault.engine.arms())


def test_a_caller_s_vector_must_match_the_stored_vectors(tmp_path: Any) -> None:
    with Vault(tmp_path / "v.db", embedder=FakeEmbedder()) as vault:
        engine = vault.engine
        with engine.reading() as conn, pytest.raises(NotSupported, match="no stored vectors|none yet"):
            check_vector(conn, np.ones(64, dtype=np.float32), engine.arms())
        vault.remember("note", "n", "billing runs nightly")
        with engine.reading() as conn:
            check_vector(conn, np.ones(64, dtype=np.float32), engine.arms())  # the stored vectors' dimensions
            with pytest.raises(InvalidInput, match="64 dimensions"):
                check_vector(conn, np.ones(3, dtype=np.float32), engine.arms())
