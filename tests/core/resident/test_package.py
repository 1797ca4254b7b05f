"""What the resident helper and the CLI share (resident/__init__.py): the private folder of the sockets,
refused unless this user alone can reach it, and one socket name per vault, scope and setting."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from perseus_vault_core import resident


@pytest.fixture(autouse=True)
def settings(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in (resident.RUNTIME_ENV, "XDG_RUNTIME_DIR", "TMPDIR", *resident.IDENTITY_ENV):
        monkeypatch.delenv(name, raising=False)


def test_the_private_folder_is_created_for_this_user_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "runtime"
    monkeypatch.setenv(resident.RUNTIME_ENV, str(folder))
    assert resident.private_dir(create=False) is None  # not there, and not asked to make it
    assert resident.private_dir(create=True) == str(folder)
    assert folder.stat().st_mode & 0o777 == 0o700
    assert resident.private_dir(create=True) == str(folder)  # already there: the same


def test_a_folder_others_can_reach_or_a_link_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    open_folder = tmp_path / "open"
    open_folder.mkdir(mode=0o700)
    open_folder.chmod(0o750)
    monkeypatch.setenv(resident.RUNTIME_ENV, str(open_folder))
    assert resident.private_dir(create=True) is None
    private = tmp_path / "private"
    private.mkdir(mode=0o700)
    link = tmp_path / "link"
    link.symlink_to(private)
    monkeypatch.setenv(resident.RUNTIME_ENV, str(link))
    assert resident.private_dir(create=False) is None
    a_file = tmp_path / "file"
    a_file.write_text("")
    monkeypatch.setenv(resident.RUNTIME_ENV, str(a_file))
    assert resident.private_dir(create=True) is None
    monkeypatch.setenv(resident.RUNTIME_ENV, str(tmp_path / "missing" / "deeper"))
    assert resident.private_dir(create=True) is None  # cannot be made


def test_without_a_setting_the_folder_is_under_the_runtime_or_temporary_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))
    assert resident.private_dir(create=True) == str(tmp_path / "perseus-vault")
    monkeypatch.setenv("XDG_RUNTIME_DIR", "relative/runtime")  # not absolute: not used
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    assert resident.private_dir(create=True) == str(tmp_path / f"perseus-vault-{os.geteuid()}")


def test_each_vault_scope_and_setting_has_a_socket_of_its_own(monkeypatch: pytest.MonkeyPatch) -> None:
    base = resident.identity("/data/v.db", "a1", None)
    assert base == {"db": "/data/v.db", "scope": ["a1", None], "env": {"PERSEUS_VAULT_EMBEDDER": ""}}
    path = resident.socket_path("/run/pv", base)
    assert path == resident.socket_path("/run/pv", resident.identity("/data/v.db", "a1", None))  # stable
    assert path.startswith("/run/pv/") and path.endswith(".sock") and len(os.path.basename(path)) == 29
    others = [
        resident.identity("/data/w.db", "a1", None),
        resident.identity("/data/v.db", None, "a1"),
        resident.identity("/data/v.db", "a1", "ws"),
    ]
    monkeypatch.setenv("PERSEUS_VAULT_EMBEDDER", "none")
    others.append(resident.identity("/data/v.db", "a1", None))
    assert others[-1]["env"] == {"PERSEUS_VAULT_EMBEDDER": "none"}
    assert len({path, *(resident.socket_path("/run/pv", i) for i in others)}) == 5
    assert resident.socket_path("/run/pv", resident.identity("/data/\udcff.db", None, None)).endswith(".sock")


def test_refused_passes_through_the_clis_error_handling() -> None:
    assert issubclass(resident.Refused, BaseException) and not issubclass(resident.Refused, Exception)
