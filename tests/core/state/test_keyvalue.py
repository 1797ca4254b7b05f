"""Key-value collections (keyvalue.py), on both backends: put, get, get many, get all, delete, by scope and
collection; a batch in one transaction; values are JSON objects, refused by name otherwise."""

from __future__ import annotations

import pytest

from perseus_vault_core import InvalidInput, KeyValues, Vault

pytestmark = pytest.mark.both_backends


def test_values_by_collection_and_key(vault: Vault) -> None:
    kv = KeyValues(vault)
    assert kv.get("docs", "a") is None and kv.get_all("docs") == {}
    kv.put_many(
        "docs", [("a", {"n": 1}), ("b", {"n": 2, "text": "ключ"}), ("a", {"n": 3})]
    )  # the last a wins
    kv.put("other", "a", {"elsewhere": True})
    assert kv.get("docs", "a") == {"n": 3}
    assert kv.get_all("docs") == {"a": {"n": 3}, "b": {"n": 2, "text": "ключ"}}
    assert kv.get_many("docs", ["b", "missing", "a"]) == {"a": {"n": 3}, "b": {"n": 2, "text": "ключ"}}
    assert kv.get_many("docs", []) == {}
    assert kv.delete("docs", "a") is True and kv.delete("docs", "a") is False
    assert kv.get_all("docs") == {"b": {"n": 2, "text": "ключ"}} and kv.get("other", "a") == {
        "elsewhere": True
    }
    assert vault.stats().entities == 0  # bookkeeping, not memories


def test_scopes_are_apart(vault: Vault) -> None:
    KeyValues(vault, agent_id="alice").put("docs", "k", {"who": "alice"})
    KeyValues(vault, agent_id="bob").put("docs", "k", {"who": "bob"})
    assert KeyValues(vault, agent_id="alice").get("docs", "k") == {"who": "alice"}
    assert KeyValues(vault).get_all("docs") == {}


def test_bad_input_is_refused_by_name_and_writes_nothing(vault: Vault) -> None:
    kv = KeyValues(vault)
    with pytest.raises(InvalidInput, match=r"items\[1\].value: must be JSON"):
        kv.put_many("docs", [("ok", {"n": 1}), ("bad", {"x": {1, 2}})])
    with pytest.raises(InvalidInput, match=r"items\[0\].value: must be a dict"):
        kv.put_many("docs", [("k", [1, 2])])  # type: ignore[list-item]
    with pytest.raises(InvalidInput, match=r"items\[0\]: must be a \(key, value\) pair"):
        kv.put_many("docs", ["k"])  # type: ignore[list-item]
    with pytest.raises(InvalidInput, match="collection: must be a string"):
        kv.get(None, "k")  # type: ignore[arg-type]
    with pytest.raises(InvalidInput, match="keys: must be a list"):
        kv.get_many("docs", "k")
    assert kv.get_all("docs") == {}


def test_nul_or_an_unpaired_surrogate_in_a_name_is_refused_alike_on_both_backends(vault: Vault) -> None:
    """PostgreSQL stores no NUL in text and neither driver sends an unpaired surrogate: each is refused by
    name before the database sees it, on SQLite too, so a vault holds nothing ``migrate`` cannot copy."""
    kv = KeyValues(vault)
    for bad in ("a\x00b", "a\ud800b"):
        with pytest.raises(InvalidInput, match=r"^items\[0\].key: contains"):
            kv.put_many("docs", [(bad, {"n": 1})])
        for call, field in (
            (lambda: kv.put(bad, "k", {}), "collection"),
            (lambda: kv.get("docs", bad), "key"),
            (lambda: kv.get_many("docs", ["k", bad]), r"keys\[1\]"),
            (lambda: kv.delete("docs", bad), "key"),
            (lambda: KeyValues(vault, agent_id=bad), "agent_id"),
        ):
            with pytest.raises(InvalidInput, match=f"^{field}: contains"):
                call()
    with pytest.raises(InvalidInput, match=r"^items\[0\].value: contains an unpaired surrogate"):
        kv.put("docs", "k", {"text": "a\udfffb"})
    assert kv.get_all("docs") == {}
    kv.put(
        "docs", "k", {"text": "a\x00b"}
    )  # inside a JSON value, a NUL is its escape: stored alike, read back
    assert kv.get("docs", "k") == {"text": "a\x00b"}
