"""contract/params/opening.py: what ``Vault(...)`` takes: a file path or a postgresql:// URL (never an
in-memory database or another URL taken for folders), and the durability, index and thread options."""

from __future__ import annotations

from typing import Any

import pytest

from perseus_vault_core import InvalidInput, Vault
from perseus_vault_core.contract.params.base import validate
from perseus_vault_core.contract.params.opening import OpenParams


@pytest.mark.parametrize(
    "path",
    ["vault.db", "/tmp/x/vault.db", "postgresql://u@h:5432/db", "postgres://h/db", "a b/ü.db", "c:/v.db"],
)
def test_a_file_path_or_a_postgres_url_is_taken(path: str) -> None:
    params = validate(OpenParams, {"path": path})
    assert params.path == path
    assert params.create is True and params.synchronous == "FULL"
    assert params.keyword_index is True and params.vector_index is True
    assert params.threads is None and params.key is None


@pytest.mark.parametrize(
    ("path", "says"),
    [
        (":memory:", "must be a file path"),
        ("file:vault.db?mode=memory", "must be a file path"),
        ("sqlite:///vault.db", "is a URL (sqlite://...)"),
        ("mysql://h/db", "is a URL (mysql://...)"),
    ],
)
def test_an_in_memory_database_or_another_url_is_refused(path: str, says: str) -> None:
    with pytest.raises(InvalidInput) as raised:
        validate(OpenParams, {"path": path})
    assert raised.value.field == "path" and says in raised.value.message


@pytest.mark.parametrize(
    ("data", "field", "says"),
    [
        ({}, "path", "is required"),
        ({"path": 3}, "path", "must be a string"),
        ({"path": "v.db", "synchronous": "off"}, "synchronous", "must be 'OFF', 'NORMAL', 'FULL' or 'EXTRA'"),
        ({"path": "v.db", "keyword_index": "yes"}, "keyword_index", "must be"),
        ({"path": "v.db", "threads": 0}, "threads", "must be at least 1"),
        ({"path": "v.db", "create": 1}, "create", "must be true or false"),
        ({"path": "v.db", "embeder": None}, "embeder", "unknown argument"),
    ],
)
def test_bad_options_are_refused_by_name(data: dict[str, Any], field: str, says: str) -> None:
    with pytest.raises(InvalidInput) as raised:
        validate(OpenParams, data)
    assert raised.value.field == field
    assert says in raised.value.message


def test_the_saved_indexes_and_a_key_are_taken() -> None:
    params = validate(
        OpenParams, {"path": "v.db", "keyword_index": "saved", "vector_index": False, "key": b"k"}
    )
    assert params.keyword_index == "saved" and params.vector_index is False
    assert "b'k'" not in repr(params) and "key=" not in repr(params)  # the key is never shown


def test_opening_a_vault_checks_its_path_first(tmp_path: Any) -> None:
    with pytest.raises(InvalidInput, match="^path: must be a file path"):
        Vault(":memory:")
    assert not any(tmp_path.iterdir())
