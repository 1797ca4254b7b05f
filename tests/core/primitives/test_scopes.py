"""primitives/scopes.py: the scope key names exactly one (agent, workspace) pair."""

from __future__ import annotations

import pytest

from perseus_vault_core.primitives.scopes import scope_key


def test_the_key_is_the_agent_s_length_then_both_ids() -> None:
    assert scope_key("alice", "ws-1") == "5:alicews-1"
    assert scope_key(None, None) == scope_key("", "") == "0:"  # the unscoped vault's rows
    assert scope_key("alice", None) == "5:alice"


def test_the_length_counts_utf8_bytes() -> None:
    assert scope_key("zoë", "w") == "4:zoëw"


@pytest.mark.parametrize(
    ("one", "other"),
    [
        (("ab", "c"), ("a", "bc")),  # the same characters, split otherwise
        (("5:a", "b"), ("", "5:ab")),  # an id that looks like a key
        (("a", ""), ("", "a")),
    ],
)
def test_two_pairs_never_share_a_key(one: tuple[str, str], other: tuple[str, str]) -> None:
    assert scope_key(*one) != scope_key(*other)
