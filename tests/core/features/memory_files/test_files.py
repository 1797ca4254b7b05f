"""features/memory_files/files.py: a bound folder is a jail (symlinks that lead out are not read or
written, a memory_dir or export that leads out is refused, only imported files are served), file names
with control characters are refused or skipped, bytes are kept as they are, and files are written
atomically, private, keeping a rewritten file's mode."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from perseus_vault_core import InvalidInput, NotFound, Vault
from perseus_vault_core.contract.errors import Conflict

from ....conftest import modes


def test_non_utf8_files_are_kept_byte_for_byte(vault: Vault, tmp_path: Path) -> None:
    raw = b"## Food\n- 2020-01-01: caf\xe9 au lait\n- 2020-02-02: green tea\n"
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "Latin.md").write_bytes(raw)
    report = vault.memory_import(tmp_path / "in")
    assert [(s.line, s.reason) for s in report.skipped] == [(2, "not valid UTF-8")]
    vault.memory_export(tmp_path / "out")
    assert (tmp_path / "out" / "Latin.md").read_bytes() == raw


SECRET = "zanzibarsecretword"


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A folder beside the imported one, with a file the vault must never read or write."""
    target = tmp_path / "outside"
    target.mkdir()
    (target / "Secret.md").write_text(f"## Keys\n- 2024-01-01: {SECRET}\n")
    return target


def test_import_skips_files_that_lead_outside_the_folder(vault: Vault, folder: Path, outside: Path) -> None:
    (folder / "About Me" / "Leak.md").symlink_to(outside / "Secret.md")
    (folder / "Projects" / "Leak note.md").symlink_to(outside / "Secret.md")
    (folder / "About Me" / "Gone.md").symlink_to(outside / "Missing.md")  # dangling, and outside
    report = vault.memory_import(folder)
    assert [(s.file, s.line, s.reason) for s in report.skipped] == [
        ("Gone", 0, "a symlink that leads outside the folder: not read"),
        ("Leak", 0, "a symlink that leads outside the folder: not read"),
        ("Projects/Leak note", 0, "a symlink that leads outside the folder: not read"),
    ]
    assert (report.files, report.notes) == (3, 3)
    assert vault.search(SECRET).items == [] and vault.recall(SECRET).items == []


def test_a_memory_dir_that_leads_outside_the_folder_is_refused(
    vault: Vault, folder: Path, outside: Path
) -> None:
    (folder / "Elsewhere").symlink_to(outside, target_is_directory=True)
    for memory_dir in ("Elsewhere", "../outside"):
        with pytest.raises(InvalidInput) as err:
            vault.memory_import(folder, memory_dir=memory_dir, bind=True)
        assert err.value.field == "memory_dir"
    assert vault.list_memory_files().files == [] and vault.list_memory_files().bound_folder is None


def test_bound_verbs_refuse_symlinks_that_lead_outside(vault: Vault, folder: Path, outside: Path) -> None:
    vault.memory_import(folder, bind=True)
    memory = folder / "About Me"
    secret = (outside / "Secret.md").read_bytes()
    (memory / "Opinions.md").unlink()
    (memory / "Opinions.md").symlink_to(outside / "Secret.md")  # an imported file, replaced by a link out
    (memory / "New.md").symlink_to(outside / "New.md")  # dangling: add_memory would create through it
    calls = [
        lambda: vault.get_memory("Opinions"),
        lambda: vault.add_memory("Opinions", "Keys", "more", date="2026-01-02"),
        lambda: vault.delete_memory("Opinions", "Keys", date="2024-01-01"),
        lambda: vault.add_memory("New", "Keys", "planted", date="2026-01-02"),
        lambda: vault.get_memory("New"),
    ]
    for call in calls:
        with pytest.raises(InvalidInput, match="leads outside") as err:
            call()
        assert err.value.field == "file"
    assert (outside / "Secret.md").read_bytes() == secret and not (outside / "New.md").exists()
    assert [f.file for f in vault.list_memory_files().files] == ["Opinions", "People", "Preferences"]


def test_a_bound_folder_replaced_by_a_symlink_is_refused(vault: Vault, folder: Path, outside: Path) -> None:
    vault.memory_import(folder, bind=True)
    (folder / "About Me").rename(folder / "About Me (moved)")
    (outside / "Opinions.md").write_text("## Testing\n- 2024-01-01: planted\n")
    (folder / "About Me").symlink_to(outside, target_is_directory=True)
    with pytest.raises(InvalidInput, match="leads outside"):
        vault.add_memory("Opinions", "Testing", "must not land outside", date="2026-01-02")
    assert (outside / "Opinions.md").read_text() == "## Testing\n- 2024-01-01: planted\n"


def test_a_symlink_inside_the_folder_is_followed(vault: Vault, tmp_path: Path) -> None:
    folder = tmp_path / "notes"
    (folder / "real").mkdir(parents=True)
    (folder / "real" / "Work.md").write_text("## Pace\n- 2024-01-01: steady\n")
    (folder / "Work.md").symlink_to(folder / "real" / "Work.md")
    assert vault.memory_import(folder, memory_dir="", bind=True).files == 1
    vault.add_memory("Work", "Pace", "still steady", date="2026-01-02")
    assert (folder / "Work.md").is_symlink()  # the link stays; its target is rewritten
    assert (
        folder / "real" / "Work.md"
    ).read_text() == "## Pace\n- 2024-01-01: steady\n- 2026-01-02: still steady\n"


def test_a_bound_scope_serves_only_imported_files(vault: Vault, folder: Path) -> None:
    vault.memory_import(folder, bind=True)
    planted = folder / "About Me" / "Planted.md"
    planted.write_text("## Notes\n- 2024-01-01: never imported\n")
    with pytest.raises(NotFound):
        vault.get_memory("Planted")
    with pytest.raises(NotFound):
        vault.delete_memory("Planted", "Notes", date="2024-01-01")
    with pytest.raises(Conflict, match="never imported"):
        vault.add_memory("Planted", "Notes", "would overwrite the file", date="2026-01-02")
    assert planted.read_text() == "## Notes\n- 2024-01-01: never imported\n"
    made = vault.add_memory("Brand New", "Notes", "a new file inside the folder", date="2026-01-02")
    assert made.written == str(folder.resolve() / "About Me" / "Brand New.md")
    vault.memory_import(folder, bind=True)  # imported now: served
    assert "never imported" in vault.get_memory("Planted").text


@pytest.mark.parametrize("bad", ["Line\nbreak", "Car\rriage", "Tab\there", "Bell\x07", "Del\x7f", "Nul\x00"])
def test_file_names_with_control_characters_are_refused(vault: Vault, bad: str) -> None:
    for call in (
        lambda: vault.add_memory(bad, "S", "text", date="2026-01-02"),
        lambda: vault.get_memory(bad),
        lambda: vault.delete_memory(bad, "S", date="2026-01-02"),
    ):
        with pytest.raises(InvalidInput) as err:
            call()
        assert err.value.field == "file" and "\n" not in str(err.value)
    assert vault.list_memory_files().files == []


def test_import_skips_files_with_control_characters_in_their_names(vault: Vault, folder: Path) -> None:
    (folder / "About Me" / "Forged\nline.md").write_text("## S\n- 2024-01-01: x\n")
    (folder / "Projects" / "Tab\tnote.md").write_text("a note\n")
    report = vault.memory_import(folder)
    assert [(s.file, s.line, s.reason) for s in report.skipped] == [
        ("Forged\\x0aline", 0, "file name must not contain control characters (line breaks, tabs, ...)"),
        ("Projects/Tab\\x09note", 0, "control character in the path"),
    ]
    assert (report.files, report.notes) == (3, 3)


def test_memory_export_refuses_a_symlink_out_of_the_folder(
    imported: Vault, tmp_path: Path, outside: Path
) -> None:
    target = tmp_path / "export"
    target.mkdir()
    (target / "People.md").symlink_to(outside / "Secret.md")
    secret = (outside / "Secret.md").read_bytes()
    with pytest.raises(InvalidInput, match="leads outside") as err:
        imported.memory_export(target)
    assert err.value.field == "folder"
    assert (outside / "Secret.md").read_bytes() == secret and sorted(p.name for p in target.iterdir()) == [
        "People.md"
    ]


def test_memory_files_are_private_and_rewrites_keep_the_mode(
    vault: Vault, folder: Path, tmp_path: Path, umask: int
) -> None:
    memory = folder / "About Me"
    (memory / "Opinions.md").chmod(0o644)
    (memory / "People.md").chmod(0o640)
    vault.memory_import(folder, bind=True)
    vault.add_memory("Opinions", "Testing", "kept readable", date="2026-01-02")
    vault.add_memory("People", "Mentors", "kept for the group", date="2026-01-02")
    vault.add_memory("Health", "Sleep", "a new file", date="2026-01-02")
    assert {name: mode for name, mode in modes(memory).items() if name != "Preferences.md"} == {
        "Health.md": 0o600,
        "Opinions.md": 0o644,
        "People.md": 0o640,
    }
    out = tmp_path / "out"
    out.mkdir()
    (out / "People.md").write_text("old")
    (out / "People.md").chmod(0o644)
    assert vault.memory_export(out).files == 4
    assert modes(out) == {
        "Health.md": 0o600,
        "Opinions.md": 0o600,
        "People.md": 0o644,
        "Preferences.md": 0o600,
    }


def test_a_file_that_cannot_be_written_is_a_storage_error_and_changes_nothing(
    vault: Vault, folder: Path
) -> None:
    from perseus_vault_core import StorageError

    vault.memory_import(folder, bind=True)
    shutil.rmtree(folder / "About Me")  # the bound folder is gone (an unmounted drive, a deleted sync folder)
    with pytest.raises(StorageError, match="cannot write"):
        vault.add_memory("Opinions", "Testing", "nowhere to go", date="2026-01-02")
    assert "nowhere to go" not in vault.get_memory("Opinions").text  # the vault's write rolled back


def test_file_names_refuse_every_control_and_format_character(vault: Vault) -> None:
    for name in ("a\x85b", "a\u2028b", "a\u2029b", "a\u202eb", "a\tb"):  # NEL, line/paragraph separators, RLO
        with pytest.raises(InvalidInput) as err:
            vault.add_memory(name, "S", "text")
        assert err.value.field == "file"
    assert vault.add_memory("Café", "S", "text").file == "Café"
