"""primitives/keys.py: the encryption key, given or from the environment or a file that others cannot read."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from perseus_vault_core import InvalidInput, SetupError
from perseus_vault_core.primitives.keys import KEY_ENV, KEY_FILE_ENV, check_key, read_secret_file, resolve_key

RAW = "x'" + "0123456789abcdef" * 4 + "'"


@pytest.fixture(autouse=True)
def no_key_in_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(KEY_ENV, raising=False)
    monkeypatch.delenv(KEY_FILE_ENV, raising=False)


def _secret(tmp_path: Path, text: str, mode: int = 0o600) -> str:
    path = tmp_path / "key.txt"
    path.write_text(text, encoding="utf-8")
    path.chmod(mode)
    return str(path)


@pytest.mark.parametrize(
    "key", ["correct horse", RAW, RAW.upper().replace("X'", "x'"), "x'" + "ab" * 48 + "'"]
)
def test_a_passphrase_or_a_raw_key_is_taken(key: str) -> None:
    assert check_key(key, "key") == key
    assert check_key(key.encode(), "key") == key


@pytest.mark.parametrize(
    ("key", "said"),
    [
        ("", "non-empty"),
        (None, "non-empty"),
        (b"\xff\xfe", "UTF-8"),
        ("a\x00b", "NUL"),
        ("x'abc'", "64 hex digits"),
        (RAW[:-1], "64 hex digits"),
        ("x'" + "g" * 64 + "'", "64 hex digits"),
    ],
)
def test_a_key_that_cannot_be_used_is_refused_by_name(key: object, said: str) -> None:
    with pytest.raises(InvalidInput, match=said) as raised:
        check_key(key, "key")
    assert raised.value.field == "key"


def test_a_secret_file_loses_one_trailing_newline(tmp_path: Path) -> None:
    assert read_secret_file(_secret(tmp_path, "pass\n\n"), "test") == "pass\n"
    assert read_secret_file(_secret(tmp_path, "pass\r\n"), "test") == "pass"


@pytest.mark.skipif(os.name != "posix", reason="file modes are POSIX's")
def test_a_secret_file_others_can_read_is_refused(tmp_path: Path) -> None:
    with pytest.raises(SetupError, match="accessible to other users; restrict it with `chmod 600"):
        read_secret_file(_secret(tmp_path, "pass", 0o644), "test")
    assert read_secret_file(_secret(tmp_path, "pass", 0o640), "test") == "pass"


def test_a_missing_secret_file_says_which(tmp_path: Path) -> None:
    with pytest.raises(SetupError, match="test: cannot read the key file"):
        read_secret_file(str(tmp_path / "nope"), "test")


def test_the_key_given_then_the_environment_then_none(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert resolve_key() is None
    monkeypatch.setenv(KEY_ENV, "from env")
    assert resolve_key() == "from env" and resolve_key("given") == "given"
    monkeypatch.setenv(KEY_FILE_ENV, _secret(tmp_path, "from file\n"))
    with pytest.raises(SetupError, match="set only one"):
        resolve_key()
    monkeypatch.delenv(KEY_ENV)
    assert resolve_key() == "from file"
