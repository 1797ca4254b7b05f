"""storage/trigger_terms.py: the trigger-phrase index, its rows, and how it is kept in step with the versions."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from perseus_vault_core import Vault
from perseus_vault_core.storage import trigger_terms
from perseus_vault_core.storage.sqlite.connection import connect

pytestmark = pytest.mark.both_backends


def _index(vault: Vault) -> list[tuple[Any, ...]]:
    return sorted(
        map(
            tuple,
            vault.engine.conn()
            .execute("SELECT term, vid, phrase, need, scope FROM trigger_terms")
            .fetchall(),
        )
    )


def _rebuilt(vault: Vault) -> list[tuple[Any, ...]]:
    conn = vault.engine.conn()
    versions = conn.execute("SELECT vid, scope, recall_when FROM entity_versions ORDER BY vid").fetchall()
    return sorted(row for vid, scope, text in versions for row in trigger_terms.rows(int(vid), scope, text))


def test_a_phrase_needs_the_fewest_stems_its_words_can_match_by() -> None:
    """``needed`` is the smallest count that proactive.lexical accepts as a ``terms`` match (and ``phrase`` needs
    all): a context holding fewer of a phrase's content stems cannot match it by words."""
    from perseus_vault_core.features.proactive import Context, lexical

    for n in range(1, 40):
        stems = [f"w{i}x" for i in range(n)]  # tokens that are their own stems
        assert [stem for stem in stems if trigger_terms.analysed(" ".join(stems))[1]] == stems
        phrase = " ".join(stems)
        k = trigger_terms.needed(n)
        assert lexical(phrase, Context.of("zzz " + " ".join(reversed(stems[:k])))) is not None
        assert lexical(phrase, Context.of("zzz " + " ".join(reversed(stems[: k - 1])))) is None


def test_terms_are_content_stems_or_the_empty_term() -> None:
    assert trigger_terms.terms("Editing the audit-chain modules") == ("edit", "audit", "chain", "modul")
    assert trigger_terms.terms("before you do it") == (
        trigger_terms.NO_CONTENT,
    )  # stopwords only: meaning alone
    assert trigger_terms.terms("!!!") == (trigger_terms.NO_CONTENT,)
    assert trigger_terms.rows(
        7, "s", '["audit chain", "the audit", "it", "chains of audits", "deploy the billing window cache"]'
    ) == [
        ("audit", 7, 0, 2, "s"),
        ("chain", 7, 0, 2, "s"),  # each phrase by its place in the list
        ("audit", 7, 1, 1, "s"),
        ("", 7, 2, 1, "s"),
        ("chain", 7, 3, 2, "s"),
        ("audit", 7, 3, 2, "s"),  # "chains of audits": the same stems, its own place
        *((term, 7, 4, 3, "s") for term in ("deploi", "bill", "window", "cach")),
    ]  # 3 of 4 stems: 2/3, and 2
    assert trigger_terms.rows(7, "s", "[]") == []


def test_every_write_files_its_version_and_a_purge_removes_them(vault: Vault) -> None:
    a = vault.remember("note", "a", "first", recall_when=["choosing a database"], agent_id="alice").id
    vault.remember("note", "a", "first, changed", recall_when=["deploy window"], agent_id="alice")
    vault.remember_many(
        [
            {"category": "note", "key": f"k{i}", "content": "x", "recall_when": [f"topic {i}"]}
            for i in range(3)
        ]
    )
    b = vault.remember("note", "b", "other", recall_when=["choosing a database"]).id
    vault.supersede(b, vault.recall_when("topic 1").items[0].id)
    assert _index(vault) == _rebuilt(vault) and len(_index(vault)) > 8
    vault.forget(a, agent_id="alice")
    gone = {
        vid
        for (vid,) in vault.engine.conn().execute("SELECT vid FROM entity_versions WHERE entity_id = ?", (a,))
    }
    vault.purge(a, agent_id="alice")
    assert _index(vault) == _rebuilt(vault) and len(gone) == 3
    assert not gone & {r[1] for r in _index(vault)}
    vault.engine.conn().execute("DELETE FROM trigger_terms")  # lost: reindex builds it again
    vault.reindex()
    assert _index(vault) == _rebuilt(vault)


def test_a_file_of_version_7_gets_its_index_on_open(db_path: Path) -> None:
    with Vault(db_path, embedder=False) as vault:
        vault.remember("note", "a", "alice's", recall_when=["choosing a database"], agent_id="alice")
        vault.remember("note", "a", "alice's, later", recall_when=["deploy window"], agent_id="alice")
        expected = _index(vault)
    conn = connect(str(db_path))
    conn.execute("BEGIN IMMEDIATE")
    conn.execute("DROP TABLE trigger_terms")
    conn.execute("DELETE FROM _migrations WHERE version > 7")
    conn.execute("PRAGMA user_version = 7")
    conn.execute("COMMIT")
    conn.close()
    with Vault(db_path, embedder=False) as vault:
        assert _index(vault) == expected and {r[0] for r in expected} == {
            "choos",
            "databas",
            "deploi",
            "window",
        }
        assert [
            i.key
            for i in vault.recall_when(
                "we are choosing a database", agent_id="alice", query_time_unix_ms=None
            ).items
        ] == []  # the current one says "deploy"
        assert [i.key for i in vault.recall_when("the deploy window", agent_id="alice").items] == ["a"]
