"""The facade: lifecycle, default path, threads, and the core's independence from frameworks."""

from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

import perseus_vault_core
from perseus_vault_core import InvalidInput, NotSupported, StorageError, Vault

from ...conftest import FakeEmbedder

pytestmark = pytest.mark.both_backends  # the contract suite: SQLite and PostgreSQL (tests/conftest.py)


def test_public_names() -> None:
    assert "Vault" in perseus_vault_core.__all__
    assert all(hasattr(perseus_vault_core, name) for name in perseus_vault_core.__all__)


def test_context_manager_closes(db_path: Path) -> None:
    with Vault(db_path) as vault:
        vault.remember("fact", "k", "x")
    with pytest.raises(StorageError, match="closed"):
        vault.recall("x")


def test_default_path_from_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("PERSEUS_VAULT_DB", raising=False)
    with Vault() as vault:
        assert vault.path == "perseus_vault.db"
    assert (tmp_path / "perseus_vault.db").exists()
    monkeypatch.setenv("PERSEUS_VAULT_DB", str(tmp_path / "sub" / "env.db"))
    with Vault() as vault:
        vault.remember("fact", "k", "x")
    assert (tmp_path / "sub" / "env.db").exists()


def test_threads_share_one_vault(db_path: Path) -> None:
    errors: list[BaseException] = []
    with Vault(db_path) as vault:

        def work(n: int) -> None:
            try:
                for i in range(40):
                    vault.remember("fact", f"t{n}-{i}", f"thread {n} note {i} shared words")
                    vault.recall("shared words", limit=5)
                    vault.scan(limit=10)
            except BaseException as exc:  # surfaced below
                errors.append(exc)

        threads = [threading.Thread(target=work, args=(n,)) for n in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert errors == []
        assert vault.stats().entities == 160
        assert vault.check().ok


def test_importing_the_core_loads_no_framework() -> None:
    code = (
        "import sys, perseus_vault_core\n"
        "heavy = [m for m in ('langchain_core', 'langgraph', 'llama_index', 'mcp', 'torch', "
        "'sentence_transformers') if m in sys.modules]\n"
        "print(','.join(heavy))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


def test_in_memory_paths_are_refused() -> None:
    from perseus_vault_core import InvalidInput

    with pytest.raises(InvalidInput) as err:
        Vault(":memory:")
    assert err.value.field == "path"


@pytest.mark.parametrize("url", ["sqlite:///tmp/v.db", "s3://bucket/v.db", "mysql://user@localhost/db"])
def test_a_url_of_another_kind_is_refused_not_made_into_folders(
    url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from perseus_vault_core import InvalidInput

    monkeypatch.chdir(tmp_path)
    with pytest.raises(InvalidInput, match="is a URL") as err:
        Vault(url)
    assert err.value.field == "path"
    assert list(tmp_path.iterdir()) == []  # nothing created, relative to where a path would have gone


def test_a_postgres_url_is_a_database_never_a_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(
        StorageError, match=r"cannot connect to postgresql://user:\*\*\*@127.0.0.1:9/db"
    ) as err:
        Vault("postgresql://user:secret@127.0.0.1:9/db", embedder=False)  # nothing listens on port 9
    assert "secret" not in str(err.value)  # the password never reaches a message
    assert list(tmp_path.iterdir()) == []


def test_bad_arguments_never_escape_as_other_errors(db_path: Path, tmp_path: Path) -> None:
    from perseus_vault_core import InvalidInput, VaultError

    deep: dict = {}
    cursor = deep
    for _ in range(5000):
        cursor["x"] = {}
        cursor = cursor["x"]
    deep_line = '{"category": "c", "key": "k", "content": "x", "body": ' + "[" * 5000 + "]" * 5000 + "}"
    with Vault(db_path) as vault:
        e = vault.remember("fact", "k", "x")
        calls = [
            lambda: vault.get_entity(2**64),
            lambda: vault.forget(2**63),
            lambda: vault.remember("fact", "k", "x", expires_at_ms=2**64),
            lambda: vault.recall("x", as_of_unix_ms=2**64),
            lambda: vault.scan(valid_at_unix_ms=2**70),
            lambda: vault.history("fact", "k", offset=2**64),
            lambda: vault.as_of("fact", "k", 2**64),
            lambda: vault.link(e.id, e.id + 1, source=[1]),  # type: ignore[arg-type]
            lambda: vault.unlink(e.id, e.id + 1, relation=[1]),  # type: ignore[arg-type]
            lambda: vault.remember("fact", "deep", "x", body=deep),
            lambda: vault.import_jsonl([deep_line]),
            lambda: vault.import_jsonl([1, 2]),  # type: ignore[list-item]
            lambda: vault.backup(tmp_path / "missing" / "x.db"),
            lambda: vault.export_jsonl(tmp_path / "missing" / "x.jsonl"),
            lambda: vault.remember_many(None),  # type: ignore[arg-type]
        ]
        for call in calls:
            with pytest.raises(VaultError):
                call()
        with pytest.raises(InvalidInput):
            Vault(db_path, synchronous="ful")
        assert vault.check().ok and vault.stats().entities == 1


def test_connections_of_finished_threads_are_released(db_path: Path) -> None:
    import gc

    with Vault(db_path) as vault:
        vault.remember("fact", "k", "x")
        for _ in range(30):
            t = threading.Thread(target=lambda: vault.recall("x", reinforce=False))
            t.start()
            t.join()
        gc.collect()
        assert vault.engine.backend.pool.open_connections <= 3


def test_create_false_never_makes_a_vault(tmp_path: Path) -> None:
    from perseus_vault_core import NotFound

    path = tmp_path / "missing" / "x.db"
    with pytest.raises(NotFound, match="no vault at"):
        Vault(path, create=False, embedder=False)
    assert not (tmp_path / "missing").exists()
    with Vault(path, embedder=False):
        pass
    with Vault(path, create=False, embedder=False) as vault:
        assert vault.stats().entities == 0
    empty = tmp_path / "empty.db"
    empty.touch()
    with pytest.raises(NotFound):  # an empty file is no vault, and a read does not make it one
        Vault(empty, create=False, embedder=False)
    assert empty.stat().st_size == 0


def test_the_version_is_the_package_version() -> None:
    from importlib.metadata import version

    assert perseus_vault_core.__version__ == version("perseus-vault")


def test_any_other_exception_beneath_a_verb_leaves_as_a_vault_error(
    vault: Vault, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pydantic import BaseModel, ValidationError

    from perseus_vault_core import InvalidInput
    from perseus_vault_core.features import temporal

    class Strict(BaseModel):
        n: int

    def invalid(*args: object) -> None:
        Strict.model_validate({"n": "x"})

    def overflow(*args: object) -> None:
        raise OverflowError("int too large to convert")

    vault.remember("note", "k", "x")
    for broken, field in ((invalid, "n"), (overflow, "argument")):
        monkeypatch.setattr(temporal, "versions", broken)
        with pytest.raises(InvalidInput) as err:
            vault.history("note", "k")
        assert err.value.field == field and "\n" not in str(err.value)
    assert issubclass(InvalidInput, perseus_vault_core.VaultError) and ValidationError is not None


# --- recall_by_vector, the embedder adapters see, and settings refused ---


def ids(result) -> list[int]:  # type: ignore[no-untyped-def]
    return [item.id for item in result.items]


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


def test_the_embedder_is_visible_to_adapters(
    dense_vault: Vault, fake_embedder: FakeEmbedder, tmp_path: Path
) -> None:
    # Adapters that embed on their side (query vectors, MMR candidates) must use the vault's own model.
    assert dense_vault.embedder is fake_embedder
    with Vault(tmp_path / "keyword-only.db", embedder=False) as keyword_only:
        assert keyword_only.embedder is None


def test_recall_by_vector_matches_dense_recall_of_the_same_embedding(
    dense_vault: Vault, dense_notes: dict[str, int], fake_embedder: FakeEmbedder
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
    dense_vault: Vault, dense_notes: dict[str, int], bad: Any, field: str
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


def test_recall_by_vector_has_no_query_words_for_the_knobs(
    dense_vault: Vault, dense_notes: dict[str, int], fake_embedder: FakeEmbedder
) -> None:
    dense_vault.remember(
        "note", "word", "A vector of billing ledger numbers"
    )  # a literal word no query holds
    vector = fake_embedder.embed(["billing ledger"])[0]
    plain = dense_vault.recall_by_vector(vector, limit=5, reinforce=False)
    boosted = dense_vault.recall_by_vector(vector, limit=5, reinforce=False, content_weight=5.0)
    assert ids(boosted) == ids(plain)
    assert [i.score for i in boosted.items] == pytest.approx([i.score for i in plain.items])
