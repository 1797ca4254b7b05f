"""PerseusVaultKVStore: op for op against LlamaIndex's SimpleKVStore on seeded random sequences (sync and
async), then what the vault adds: persistence, one transaction per batch, scopes, bad input, a URL."""

from __future__ import annotations

import asyncio
import random
from pathlib import Path
from typing import Any

import pytest
from llama_index.core.storage.kvstore import SimpleKVStore

from perseus_vault_core import InvalidInput, Vault
from perseus_vault_integrations.llama_index import PerseusVaultKVStore

KEYS = ["a", "b", "doc/1", "ключ", ""]
COLLECTIONS = ["data", "docstore/ref_doc_info", "other"]


def random_value(rng: random.Random) -> dict[str, Any]:
    return {"n": rng.randint(0, 9), "text": rng.choice(["x", "ключ", ""]), "nested": {"l": [rng.random()]}}


def run(store: Any, ops: list[tuple[str, Any]], use_async: bool) -> list[Any]:
    async def call(name: str, *args: Any) -> Any:
        return await getattr(store, f"a{name}")(*args) if use_async else getattr(store, name)(*args)

    async def main() -> list[Any]:
        out = []
        for name, args in ops:
            out.append(await call(name, *args))
        return out

    return asyncio.run(main())


def random_ops(rng: random.Random, n: int) -> list[tuple[str, Any]]:
    ops: list[tuple[str, Any]] = []
    for _ in range(n):
        kind = rng.choice(["put", "put", "put_all", "get", "get_all", "delete"])
        collection = rng.choice(COLLECTIONS)
        if kind == "put":
            ops.append(("put", (rng.choice(KEYS), random_value(rng), collection)))
        elif kind == "put_all":
            ops.append(("put_all", ([(rng.choice(KEYS), random_value(rng)) for _ in range(3)], collection)))
        elif kind in ("get", "delete"):
            ops.append((kind, (rng.choice(KEYS), collection)))
        else:
            ops.append(("get_all", (collection,)))
    return ops


@pytest.mark.parametrize("seed", range(6))
def test_it_answers_as_simple_kv_store_does(tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    ops = random_ops(rng, 60)
    use_async = seed % 2 == 1
    with Vault(tmp_path / "kv.db", embedder=False) as vault:
        assert run(PerseusVaultKVStore(vault), ops, use_async) == run(SimpleKVStore(), ops, use_async)


def test_values_outlive_the_process_and_stay_out_of_recall(tmp_path: Path) -> None:
    store = PerseusVaultKVStore(tmp_path / "kv.db")
    store.put_all([(f"k{i}", {"i": i, "text": "sqlite"}) for i in range(50)], collection="docs", batch_size=7)
    store.close()
    again = PerseusVaultKVStore.from_uri(str(tmp_path / "kv.db"))
    assert (
        again.get("k7", collection="docs") == {"i": 7, "text": "sqlite"} and len(again.get_all("docs")) == 50
    )
    assert (
        again.vault.stats().entities == 0 and again.vault.recall("sqlite").items == []
    )  # bookkeeping, not memory
    again.close()


def test_scopes_keep_their_values_apart(vault: Vault) -> None:
    PerseusVaultKVStore(vault, agent_id="alice").put("k", {"who": "alice"})
    assert PerseusVaultKVStore(vault, agent_id="bob").get("k") is None
    assert PerseusVaultKVStore(vault).get_all() == {}


def test_a_bad_batch_is_refused_whole(vault: Vault) -> None:
    store = PerseusVaultKVStore(vault)
    with pytest.raises(InvalidInput, match=r"items\[1\].value: must be JSON"):
        store.put_all([("ok", {"n": 1}), ("bad", {"n": float("nan")})])
    assert store.get_all() == {}
    with pytest.raises(InvalidInput, match="did you mean 'agent_id'"):
        PerseusVaultKVStore(vault, agent="x")  # type: ignore[call-arg]


def test_on_postgres(pg_url: str) -> None:
    store = PerseusVaultKVStore.from_uri(pg_url)
    store.put_all([("a", {"n": 1}), ("b", {"n": 2})], collection="c")
    assert (
        store.get_all("c") == {"a": {"n": 1}, "b": {"n": 2}}
        and store.delete("a", "c")
        and not store.delete("a", "c")
    )
    store.close()
