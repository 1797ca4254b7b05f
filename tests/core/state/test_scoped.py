"""state/scoped.py: the checks the framework-state modules share (text both databases store, JSON objects),
each refused by the argument's name, and the view of one scope of a vault."""

from __future__ import annotations

import json
from typing import Any

import pytest

from perseus_vault_core import InvalidInput, Vault
from perseus_vault_core.primitives.scopes import scope_key
from perseus_vault_core.state.scoped import Scoped, json_object, optional_text, text


@pytest.mark.parametrize("value", ["", "plain", "ключ ✓", "line\nbreak"])
def test_text_is_taken_as_it_is(value: str) -> None:
    assert text("thread_id", value) == value
    assert optional_text("thread_id", value) == value


def test_no_text_is_none_where_it_is_optional() -> None:
    assert optional_text("thread_id", None) is None
    with pytest.raises(InvalidInput, match="^thread_id: must be a string, not NoneType"):
        text("thread_id", None)


@pytest.mark.parametrize(
    ("value", "says"),
    [
        (3, "must be a string, not int"),
        (b"bytes", "must be a string, not bytes"),
        ("nul\x00inside", "contains"),
        ("half \ud800 a pair", "unpaired surrogate"),
    ],
)
def test_text_that_a_database_cannot_store_is_refused_by_name(value: Any, says: str) -> None:
    with pytest.raises(InvalidInput, match=says) as raised:
        text("checkpoint_ns", value)
    assert raised.value.field == "checkpoint_ns"
    with pytest.raises(InvalidInput, match=says):
        optional_text("checkpoint_ns", value)


def test_a_json_object_is_compact_text_that_reads_back() -> None:
    value = {"n": 1, "nested": {"list": [1, 2.5, True, None]}, "text": "ключ"}
    dumped = json_object("value", value)
    assert dumped == '{"n":1,"nested":{"list":[1,2.5,true,null]},"text":"ключ"}'
    assert json.loads(dumped) == value
    assert json_object("value", {}) == "{}"


def test_a_nul_in_a_json_object_is_written_as_its_escape() -> None:
    dumped = json_object("value", {"text": "a\x00b"})
    assert "\x00" not in dumped and json.loads(dumped) == {"text": "a\x00b"}


@pytest.mark.parametrize(
    ("value", "says"),
    [
        ([1, 2], "must be a dict, not list"),
        ("{}", "must be a dict, not str"),
        (None, "must be a dict, not NoneType"),
        ({"when": object()}, "must be JSON"),
        ({"n": float("nan")}, "must be JSON"),
        ({"text": "\udc00"}, "unpaired surrogate"),
    ],
)
def test_a_value_that_is_no_json_object_is_refused_by_name(value: Any, says: str) -> None:
    with pytest.raises(InvalidInput, match=f"^metadata: .*{says}"):
        json_object("metadata", value)


def test_a_scoped_view_holds_its_scope_as_parameters(vault: Vault) -> None:
    unscoped = Scoped(vault)
    assert unscoped.scope == {"a": "", "w": "", "s": scope_key("", "")}
    scoped = Scoped(vault, agent_id="ann", workspace_hash="w1")
    assert scoped.scope == {"a": "ann", "w": "w1", "s": scope_key("ann", "w1")}
    assert scoped.scope["s"] != unscoped.scope["s"]


def test_a_scoped_view_refuses_what_is_no_vault_or_a_bad_scope(vault: Vault, tmp_path: Any) -> None:
    with pytest.raises(InvalidInput, match="^vault: must be a Vault, not str"):
        Scoped(str(tmp_path / "vault.db"))  # type: ignore[arg-type]
    with pytest.raises(InvalidInput, match="^agent_id: must be a string, not int"):
        Scoped(vault, agent_id=7)  # type: ignore[arg-type]
    with pytest.raises(InvalidInput, match="^workspace_hash: contains"):
        Scoped(vault, workspace_hash="w\x00")
