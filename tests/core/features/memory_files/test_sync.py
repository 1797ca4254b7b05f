"""features/memory_files/sync.py: a re-import reconciles by content (an unchanged folder writes and
embeds nothing, an edit archives and creates), notes that leave are pruned, a binding is its scope's,
and the vault's write and the file rewrite succeed or fail together."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from perseus_vault_core import InvalidInput, NotFound, Vault

from ....conftest import Clock, FakeEmbedder


def test_reimport_of_an_unchanged_folder_writes_and_embeds_nothing(
    db_path: Path, clock: Clock, folder: Path
) -> None:
    embedder = FakeEmbedder()
    with Vault(db_path, clock=clock, embedder=embedder) as v:
        v.memory_import(folder)
        versions, texts = v.stats().versions, embedder.texts
        report = v.memory_import(folder)
        assert (report.entries_created, report.entries_unchanged, report.entries_archived) == (0, 15, 0)
        assert v.stats().versions == versions and embedder.texts == texts


def test_reimport_reconciles_edits_by_content(vault: Vault, folder: Path) -> None:
    vault.memory_import(folder)
    path = folder / "About Me" / "Preferences.md"
    text = path.read_text()
    text = text.replace("- 2021-04-12: No meetings before 10am.\n", "")
    text = text.replace("## Meetings\n", "## Meetings\n- 2025-03-03: Meetings end at 4pm on Fridays.\n")
    path.write_text(text)
    report = vault.memory_import(folder)
    assert (report.entries_created, report.entries_archived, report.entries_unchanged) == (1, 1, 14)
    gone = vault.recall("No meetings before 10am", type="memory_entry", include_archived=True).items[0]
    assert gone.status == "archived"  # the removed entry stays in the vault's history
    assert vault.recall("meetings Fridays", type="memory_entry").items[0].body["date"] == "2025-03-03"


def test_a_binding_belongs_to_the_scope_that_made_it(vault: Vault, folder: Path) -> None:
    vault.memory_import(folder, bind=True, agent_id="alice")
    path = folder / "About Me" / "Opinions.md"
    original = path.read_bytes()
    with pytest.raises(NotFound):
        vault.get_memory("Opinions", agent_id="bob")  # bob never imported anything
    out = vault.add_memory("Opinions", "Testing", "Bob's own note.", date="2026-01-02", agent_id="bob")
    assert out.written is None and path.read_bytes() == original  # alice's file is untouched
    assert vault.get_memory("Opinions", agent_id="bob").text == "## Testing\n- 2026-01-02: Bob's own note.\n"
    assert all("Bob" not in e.text for e in vault.memory_recall("Bob's own note", agent_id="alice").entries)
    assert [e.text for e in vault.memory_recall("Bob's own note", agent_id="bob").entries] == [
        "- 2026-01-02: Bob's own note."
    ]
    assert vault.memory_unbind(agent_id="alice") is True and vault.memory_unbind(agent_id="alice") is False
    assert (
        vault.add_memory("Opinions", "Testing", "Unbound now.", date="2026-01-03", agent_id="alice").written
        is None
    )
    assert path.read_bytes() == original


def test_a_failed_vault_write_leaves_the_file_as_it_was(
    vault: Vault, folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from perseus_vault_core.records import store

    vault.memory_import(folder, bind=True)
    path = folder / "About Me" / "Opinions.md"
    original = path.read_bytes()

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(store, "remember_batch", broken)
    with pytest.raises(RuntimeError):
        vault.add_memory("Opinions", "Testing", "This must not reach the file.", date="2026-01-04")
    assert path.read_bytes() == original


def test_relative_folders_and_notes_that_leave(
    vault: Vault, folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(folder.parent)
    report = vault.memory_import(Path(folder.name))
    assert report.files == 3 and report.notes == 3
    (folder / "Helix.md").unlink()
    vault.memory_import(Path(folder.name))
    assert [i.key for i in vault.search("modal editor").items] == []
    with pytest.raises(InvalidInput) as err:
        vault.delete_memory("Opinions", "Testing", text="  ")
    assert err.value.field == "text"
