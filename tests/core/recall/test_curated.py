"""recall/curated.py: what curation reads of the file: the open links among a window's memories that it
acts on (duplicates, updates, same_subject; never related ones, closed ones or links leaving the window),
in the order kept relations give them."""

from __future__ import annotations

import pytest

from perseus_vault_core import Vault
from perseus_vault_core.recall import curation
from perseus_vault_core.recall.curated import KEPT, kept, order

pytestmark = pytest.mark.both_backends


def four(vault: Vault) -> list[int]:
    texts = [
        "the quokka lives on Rottnest",
        "harbour cranes unload at dawn",
        "violin strings are gut",
        "tax is due",
    ]
    return [vault.remember("note", f"k{i}", text).id for i, text in enumerate(texts)]


def test_curation_acts_on_duplicates_and_the_newer_first_relations() -> None:
    assert KEPT == ("duplicates", *curation.NEWER_FIRST)
    assert "related" not in KEPT


def test_no_link_among_the_window_reads_nothing(vault: Vault) -> None:
    a, b, c, _ = four(vault)
    assert vault.engine.read(lambda conn: kept(conn, [a, b, c])) == []


def test_the_open_kept_links_among_the_window_in_order(vault: Vault) -> None:
    a, b, c, d = four(vault)
    vault.link(c, a, "updates", source="agent")
    vault.link(b, a, "duplicates")
    vault.link(a, b, "related")  # orders nothing: not read
    vault.link(a, d, "same_subject")  # d is outside the window
    vault.link(c, b, "same_subject")
    vault.unlink(c, b, "same_subject")  # closed: not read
    found = vault.engine.read(lambda conn: kept(conn, [a, b, c]))
    assert found == [(b, a, "duplicates", None), (c, a, "updates", "agent")]
    assert found == sorted(found, key=order)
    with_d = vault.engine.read(lambda conn: kept(conn, [d, c, b, a]))
    assert (a, d, "same_subject", None) in with_d and len(with_d) == 3


def test_order_is_by_ends_then_relation_then_source_with_none_first() -> None:
    rows = [
        (2, 1, "updates", "judge"),
        (1, 3, "duplicates", "inferred"),
        (2, 1, "updates", None),
        (1, 2, "x", None),
    ]
    assert sorted(rows, key=order) == [
        (1, 2, "x", None),
        (1, 3, "duplicates", "inferred"),
        (2, 1, "updates", None),
        (2, 1, "updates", "judge"),
    ]


def test_a_turn_of_any_shape_is_never_collapsed_even_when_linked_as_a_duplicate(vault: Vault) -> None:
    """What is a turn here is what recall/turns.py says, the body read in SQL: a chat message whose body names
    its session and role is one, as a numbered turn is; a note saying the same is not."""
    session = {"session_id": "s1", "role": "human", "message": {"type": "human"}}
    said = [
        vault.remember("chat", f"m{i}", "ok, sounds good", type="chat_message", body=session).id
        for i in range(2)
    ]
    notes = [vault.remember("note", f"n{i}", "ok, sounds good", keep_duplicate=True).id for i in range(2)]
    vault.link(said[1], said[0], "duplicates")
    vault.link(notes[1], notes[0], "duplicates")
    items = vault.recall("ok sounds good", reinforce=False).items
    shown = {i.id: i for i in items}
    assert said[0] in shown and said[1] in shown and not shown[said[0]].duplicates
    assert len([i for i in notes if i in shown]) == 1  # the notes collapse into one
