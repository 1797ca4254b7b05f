"""Ctrl-C on each long-running command stops it in one line, without a traceback (the CLI's promise):
``serve`` over stdio and over HTTP, ``ui``, and ``make demo``'s script. A terminal's Ctrl-C sends SIGINT
to the whole foreground process group, as these tests do."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from perseus_vault_core.cli.main import main

from .conftest import wait_for_port

ROOT = Path(__file__).resolve().parents[1]
ENV = {"PERSEUS_VAULT_EMBEDDER": "none"}

pytestmark = pytest.mark.usefixtures("ctrl_c_reaches_children")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _interrupt(proc: subprocess.Popen[bytes]) -> tuple[int, str]:
    os.killpg(proc.pid, signal.SIGINT)
    try:
        _, err = proc.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        raise
    return proc.returncode, err.decode("utf-8", "replace")


def _start(argv: list[str], env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        argv,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, **ENV, **(env or {})},
        start_new_session=True,
        cwd=ROOT,
    )


@pytest.mark.parametrize("command", [["serve", "--http"], ["serve", "--no-ui", "--http"], ["ui", "--http"]])
def test_a_server_over_http_stops_on_ctrl_c_in_one_line(tmp_path: Path, command: list[str]) -> None:
    port, db = _free_port(), str(tmp_path / "v.db")
    assert main(["--db", db, "remember", "note", "k", "a memory to serve"]) == 0
    proc = _start([sys.executable, "-m", "perseus_vault_core.cli", "--db", db, *command, f"127.0.0.1:{port}"])
    wait_for_port(port, proc)
    code, err = _interrupt(proc)
    assert "Traceback" not in err and err.splitlines()[-1] == "perseus-vault: stopped", err
    assert code == 0


def test_serve_over_stdio_stops_on_ctrl_c_in_one_line(tmp_path: Path) -> None:
    db = tmp_path / "v.db"
    proc = _start([sys.executable, "-m", "perseus_vault_core.cli", "--db", str(db), "serve"])
    deadline = time.monotonic() + 60
    while not db.exists() and time.monotonic() < deadline:  # the server made its vault: it is serving
        time.sleep(0.1)
    time.sleep(1)
    code, err = _interrupt(proc)
    assert (code, err) == (0, "perseus-vault: stopped\n")


def test_make_demo_stops_on_ctrl_c_without_a_traceback(tmp_path: Path) -> None:
    if not (ROOT / ".venv" / "bin" / "perseus-vault").exists():
        pytest.skip("make demo runs the checkout's .venv (make setup makes it)")
    port = _free_port()
    proc = _start(
        ["bash", "scripts/demo.sh"],
        {"PERSEUS_VAULT_DB": str(tmp_path / "demo.db"), "PERSEUS_VAULT_HTTP": f"127.0.0.1:{port}"},
    )
    wait_for_port(port, proc, timeout=180)
    code, err = _interrupt(proc)
    assert "Traceback" not in err and err.splitlines()[-1] == "perseus-vault: stopped", err
    assert code == 0


def test_a_one_shot_command_interrupted_says_so_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from perseus_vault_core import Vault

    call = Vault.call

    def interrupted(self: Vault, verb: str, *args: Any, **kwargs: Any) -> Any:
        if verb == "recall":  # the command line calls each verb through Vault.call
            raise KeyboardInterrupt
        return call(self, verb, *args, **kwargs)

    monkeypatch.setattr(Vault, "call", interrupted)
    assert main(["--db", str(tmp_path / "v.db"), "remember", "note", "k", "some text"]) == 0
    assert main(["--db", str(tmp_path / "v.db"), "recall", "text"]) == 130
    assert capsys.readouterr().err == "perseus-vault: interrupted\n"
