"""Key-value collections (keyvalue.py), on both backends: put, get, get many, get all, delete, by scope and
collection; a batch in one transaction; values are JSON objects, refused by name otherwise."""

from __future__ import annotations

import pytest

from perseus_vault_core import InvalidInput, KeyValues, Vault

pytestmark = pytest.mark.both_backends


def test_values_by_collection_and_key(vault: Vault) -> None:
    kv = KeyValues(vault)
    assert kv.get("docs", "a") is None and kv.get_all("docs") == {}
    kv.put_many("docs", [("a", {"n": 1}), ("b", {"n": 2, "text": "ключ"}), ("a", {"n": 3})])  # the last a wins
    kv.put("other", "a", {"elsewhere": True})
    assert kv.get("docs", "a") == {"n": 3}
    assert kv.get_all("docs") == {"a": {"n": 3}, "b": {"n": 2, "text": "ключ"}}
    assert kv.get_many("docs", ["b", "missing", "a"]) == {"a": {"n": 3}, "b": {"n": 2, "text": "ключ"}}
    assert kv.get_many("docs", []) == {}
    assert kv.delete("docs", "a") is True and kv.delete("docs", "a") is False
    assert kv.get_all("docs") == {"b": {"n": 2, "text": "ключ"}} and kv.get("other", "a") == {"elsewhere": True}
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
