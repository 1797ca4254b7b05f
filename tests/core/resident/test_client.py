"""The CLI's side of the resident helper (resident/client.py), without a helper process: what it reads of
a command line, when it asks a helper and what it does with the reply, and how it talks over the socket."""

from __future__ import annotations

import json
import os
import shutil
import socket
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from perseus_vault_core import __version__, resident
from perseus_vault_core.resident import client


@pytest.fixture
def folder(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A private folder short enough for socket paths, and no setting that makes the CLI answer alone."""
    path = Path(tempfile.mkdtemp(prefix="pv-", dir="/tmp"))
    os.chmod(path, 0o700)
    monkeypatch.setenv(resident.RUNTIME_ENV, str(path))
    for name in (resident.ENV, *resident.ALONE_ENV, "PERSEUS_VAULT_DB", *resident.IDENTITY_ENV):
        monkeypatch.delenv(name, raising=False)
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.mark.parametrize(
    "argv, found",
    [
        (["recall", "q", "--db=a.db", "--agent-id", "x"], ("recall", {"--db": "a.db", "--agent-id": "x"})),
        (["--json", "prepare", "context words"], ("prepare", {})),  # the first word that is no option
        (["recall", "q", "--db"], (None, {})),  # a value missing: the parser will say so
        (["recall", "--", "--workspace-hash", "w"], ("recall", {})),  # after --, only arguments
        ([], (None, {})),
    ],
)
def test_scan_reads_the_command_and_the_options_a_helper_is_chosen_by(
    argv: list[str], found: tuple[str | None, dict[str, str]]
) -> None:
    assert client.scan(argv) == found


def test_an_answered_call_prints_the_helpers_output_and_returns_its_status(
    folder: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "v.db"
    db.write_bytes(b"")  # the client only needs a file there
    asked: list[tuple[str, dict[str, Any]]] = []

    def ask(path: str, request: dict[str, Any], stdin: int | None = None) -> dict[str, Any]:
        asked.append((path, request))
        return {"code": 3, "stdout": "printed\n", "stderr": "warned\n"}

    monkeypatch.setattr(client, "ask", ask)
    argv = ["recall", "billing", "--db", str(db), "--agent-id", "a1"]
    assert client.answer(argv) == 3
    assert capsys.readouterr() == ("printed\n", "warned\n")
    ((path, request),) = asked
    ident = resident.identity(os.path.realpath(db), "a1", None)
    assert path == resident.socket_path(str(folder), ident)
    assert request == {
        "protocol": resident.PROTOCOL,
        "version": __version__,
        **ident,
        "command": "recall",
        "argv": argv,
        "cwd": os.getcwd(),
    }


@pytest.mark.parametrize("reply", [None, {"refused": "another scope"}, client.Failed("reset")])
def test_a_call_no_helper_answers_is_answered_alone_and_starts_none_unless_allowed(
    folder: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, reply: Any
) -> None:
    db = tmp_path / "v.db"
    db.write_bytes(b"")
    started: list[str] = []

    def ask(path: str, request: dict[str, Any], stdin: int | None = None) -> Any:
        if isinstance(reply, Exception):
            raise reply
        return reply

    monkeypatch.setattr(client, "ask", ask)
    monkeypatch.setattr(client, "start", lambda path, ident: started.append(path) or False)
    assert client.answer(["prepare", "words", "--db", str(db)]) is None
    assert started == []
    monkeypatch.setenv(resident.ENV, "1")  # allowed: a helper is started when none listens
    assert client.answer(["prepare", "words", "--db", str(db)]) is None
    assert len(started) == (1 if reply is None else 0)


def test_a_helper_started_for_the_call_answers_it(
    folder: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "v.db"
    db.write_bytes(b"")
    listening: list[str] = []
    monkeypatch.setenv(resident.ENV, "1")
    monkeypatch.setattr(client, "start", lambda path, ident: listening.append(path) or True)
    monkeypatch.setattr(
        client, "ask", lambda path, request, stdin=None: {"code": 0, "stdout": "ok\n"} if listening else None
    )
    assert client.answer(["recall", "q", "--db", str(db)]) == 0 and capsys.readouterr().out == "ok\n"


def serve_once(path: str, reply: bytes, seen: list[bytes]) -> threading.Thread:
    """A one-call listener at ``path`` that records the request and sends ``reply``."""
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(path)
    server.listen(1)

    def run() -> None:
        conn, _ = server.accept()
        with conn, server:
            data = b""
            while chunk := conn.recv(1 << 16):
                data += chunk
            seen.append(data)
            conn.sendall(reply)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


def test_ask_sends_one_line_and_reads_the_whole_reply(folder: Path) -> None:
    path, seen = str(folder / "h.sock"), []
    thread = serve_once(path, json.dumps({"code": 0, "stdout": "é"}).encode(), seen)
    assert client.ask(path, {"argv": ["recall", "é"]}) == {"code": 0, "stdout": "é"}
    thread.join(10)
    assert seen == [json.dumps({"argv": ["recall", "é"]}).encode() + b"\n"]


@pytest.mark.parametrize("reply", [b"[1, 2]", b'{"code": 0', b""])
def test_ask_fails_on_a_reply_that_is_no_whole_object(folder: Path, reply: bytes) -> None:
    path = str(folder / "h.sock")
    thread = serve_once(path, reply, [])
    with pytest.raises(client.Failed):
        client.ask(path, {"argv": []})
    thread.join(10)


def test_ask_finds_no_helper_where_none_listens(folder: Path) -> None:
    assert client.ask(str(folder / "absent.sock"), {}) is None
    stale = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    stale.bind(str(folder / "stale.sock"))  # a socket left by a helper that exited: nobody listens
    stale.close()
    assert client.ask(str(folder / "stale.sock"), {}) is None
