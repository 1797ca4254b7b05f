"""The in-memory indexes of a PostgreSQL vault, saved in the host's cache folder and opened by the next
process (storage/postgres/__init__.py: mirror_file, cache_folder)."""

from __future__ import annotations

from pathlib import Path

import pytest

from perseus_vault_core import Vault

from ....conftest import Clock, FakeEmbedder
from ...indexes.test_snapshot import answers, built, fill


def _saved(folder: Path) -> list[str]:
    return sorted(p.name.split("-", 1)[1] for p in folder.glob("*.pvidx"))


def test_a_new_process_answers_its_first_recall_from_the_cached_snapshot(
        pg_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, clock: Clock) -> None:
    monkeypatch.setenv("PERSEUS_VAULT_CACHE", str(tmp_path / "cache"))
    embedder = FakeEmbedder()
    with Vault(pg_url, embedder=embedder, clock=clock) as vault:
        fill(vault, 300)
    built(pg_url, embedder)  # type: ignore[arg-type]
    assert _saved(tmp_path / "cache") == ["keyword-index.pvidx", "vector-index.pvidx"]
    assert oct((tmp_path / "cache").stat().st_mode & 0o777) == "0o700"
    with Vault(pg_url, embedder=embedder, clock=clock, keyword_index=False, vector_index=False) as writer:
        fill(writer, 40, start=300)  # written after the snapshot: replayed from the change log
        writer.forget(1)
        expected = {mode: answers(writer, mode) for mode in ("fts5", "dense", "hybrid")}
    with Vault(pg_url, embedder=embedder, clock=clock, keyword_index="saved", vector_index="saved") as one_shot:
        assert answers(one_shot, "fts5") == expected["fts5"]
        assert one_shot.stats().keyword_index.endswith("from a snapshot)")
        assert answers(one_shot, "dense") == expected["dense"] and answers(one_shot, "hybrid") == expected["hybrid"]


def test_another_database_never_takes_its_snapshot(pg_server: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                    clock: Clock) -> None:
    from ....conftest import new_database

    monkeypatch.setenv("PERSEUS_VAULT_CACHE", str(tmp_path / "cache"))
    with new_database(pg_server) as first, new_database(pg_server) as second:
        for url in (first, second):  # the same memories, so the same change log positions
            with Vault(url, embedder=False, clock=clock) as vault:
                fill(vault, 50)
                vault.recall("billing")
                assert vault.wait_for_keyword_index(30)
        assert len(list((tmp_path / "cache").glob("*-keyword-index.pvidx"))) == 2  # one per database


def test_an_empty_cache_variable_keeps_the_indexes_in_memory(pg_url: str, tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PERSEUS_VAULT_CACHE", "")
    with Vault(pg_url, embedder=False) as vault:
        fill(vault, 20)
        assert vault.recall("billing").items and vault.wait_for_keyword_index(30)
        assert "snapshot" not in vault.stats().keyword_index
