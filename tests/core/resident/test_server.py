"""The resident helper (resident/, docs/hooks.md): the CLI's answers are the same whether the helper gave
them or the CLI worked alone, and the CLI works alone, correctly, whenever the helper is absent, dies or
hangs mid-call, or serves another vault or scope. The helper listens only where its owner can reach it
and exits when idle.

Everything here runs as real processes: the CLI as a hook runs it, the helper as ``perseus-vault resident``.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from perseus_vault_core import Vault, __version__, resident
from perseus_vault_core.resident import client

ROOT = Path(__file__).resolve().parents[3]
CONTEXT = "I am working on the billing pipeline: why is the invoices queue slow?"
WORDS = [
    "billing",
    "ledger",
    "deploy",
    "invoices",
    "incident",
    "queue",
    "postgres",
    "pipeline",
    "slow",
    "pager",
]


@pytest.fixture
def env(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, str]]:
    """A private folder short enough for socket paths, keyword-only (fast; the model is not the point),
    and no setting that makes the CLI work alone. This process computes socket names with the same."""
    folder = tempfile.mkdtemp(prefix="pv-", dir="/tmp")
    os.chmod(folder, 0o700)
    monkeypatch.setenv(resident.RUNTIME_ENV, folder)
    monkeypatch.setenv("PERSEUS_VAULT_EMBEDDER", "none")
    for name in (resident.ENV, *resident.ALONE_ENV, "PERSEUS_VAULT_DB", resident.IDLE_ENV):
        monkeypatch.delenv(name, raising=False)
    yield dict(os.environ)
    shutil.rmtree(folder, ignore_errors=True)


def fill(path: Path, topic: str, n: int = 300) -> Path:
    with Vault(path, embedder=False) as vault:
        vault.remember_many(
            [
                {
                    "category": "note",
                    "key": f"{topic}-{i}",
                    "content": f"{topic} {WORDS[i % 10]} {WORDS[(i * 7) % 10]} note {i} {WORDS[(i * 3) % 10]}",
                    "agent_id": "a1" if i % 2 else None,
                    "recall_when": [f"working on the {WORDS[i % 10]} pipeline"] if i % 50 < 2 else [],
                }
                for i in range(n)
            ]
        )
    return path


@pytest.fixture
def vault_a(tmp_path: Path) -> Path:
    return fill(tmp_path / "a.db", "alpha")


@pytest.fixture
def vault_b(tmp_path: Path) -> Path:
    return fill(tmp_path / "b.db", "beta")


def cli(env: dict[str, str], *argv: str, **more: str) -> tuple[int, str, str]:
    done = subprocess.run(
        [sys.executable, "-m", "perseus_vault_core.cli", *argv],
        capture_output=True,
        text=True,
        env={**env, **more},
        cwd=ROOT,
        timeout=120,
    )
    return done.returncode, done.stdout, done.stderr


def socket_of(db: Path, agent: str | None = None, workspace: str | None = None) -> Path:
    folder = resident.private_dir(create=False)
    assert folder is not None
    return Path(resident.socket_path(folder, resident.identity(os.path.realpath(db), agent, workspace)))


class Helper:
    """``perseus-vault resident`` as a process of its own, its stderr (the log) in a file."""

    def __init__(self, env: dict[str, str], db: Path, *flags: str, idle: float = 60) -> None:
        self.log = Path(tempfile.mkstemp(prefix="pv-log-")[1])
        with open(self.log, "w") as log:
            self.proc = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "perseus_vault_core.cli",
                    "resident",
                    "--db",
                    str(db),
                    *flags,
                    "--idle",
                    str(idle),
                ],
                env=env,
                cwd=ROOT,
                stdout=subprocess.DEVNULL,
                stderr=log,
            )
        agent = flags[flags.index("--agent-id") + 1] if "--agent-id" in flags else None
        self.socket = socket_of(db, agent)
        deadline = time.monotonic() + 60
        while not self.socket.exists():
            assert self.proc.poll() is None and time.monotonic() < deadline, self.log.read_text()
            time.sleep(0.02)

    def answered(self) -> int:
        return self.log.read_text().count("answered ")

    def refused(self) -> list[str]:
        return [line for line in self.log.read_text().splitlines() if "refused:" in line]

    def end(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGCONT)
            self.proc.terminate()
            self.proc.wait(30)
        self.log.unlink(missing_ok=True)


@pytest.fixture
def helpers() -> Iterator[list[Helper]]:
    started: list[Helper] = []
    yield started
    for helper in started:
        helper.end()


def without_decay(out: str) -> str:
    """A --json answer without the one field that moves with the clock between two calls."""
    data = json.loads(out)
    for item in data.get("items", []):
        item.pop("decay", None)
        item["score"] = round(item["score"], 6)
    return json.dumps(data, sort_keys=True)


CALLS: list[list[str]] = [
    ["prepare", CONTEXT],
    ["context", CONTEXT, "--json"],
    ["prepare", CONTEXT, "--related", "2", "--max-chars", "400"],
    ["recall", "billing queue", "--no-reinforce"],
    ["recall", "postgres pager", "--limit", "3", "--json", "--no-reinforce"],
    ["recall-when", CONTEXT],
    ["recall", "billing", "--limit", "0"],  # refused by the params model: one line, exit 1
    ["recall", "billing", "--bogus"],  # refused by the parser
    ["recall", "--help"],  # not sent to the helper at all
]


def test_the_cli_answers_the_same_with_the_helper_as_alone(
    env: dict[str, str], vault_a: Path, helpers: list[Helper]
) -> None:
    alone = [cli(env, "--db", str(vault_a), *argv, PERSEUS_VAULT_RESIDENT="0") for argv in CALLS]
    assert alone[0][0] == 0 and "## Memory for this turn" in alone[0][1]
    assert alone[6][0] == 1 and alone[6][2].startswith("error: limit") and alone[7][0] == 1
    helpers.append(helper := Helper(env, vault_a))
    for argv, expected in zip(CALLS, alone):
        got = cli(env, *argv, "--db", str(vault_a))  # --db after the command, as the parser allows too
        if "--json" in argv:
            assert (got[0], without_decay(got[1]), got[2]) == (
                expected[0],
                without_decay(expected[1]),
                expected[2],
            )
        else:
            assert got == expected, argv
    assert helper.answered() == len(CALLS) - 1  # every call but --help went to the helper
    relative = cli(env, "--db", os.path.relpath(vault_a, ROOT), *CALLS[0])  # resolved in the caller's folder
    assert relative == alone[0] and helper.answered() == len(CALLS)


def test_the_cli_answers_alone_when_the_helper_dies_or_hangs_mid_call(
    env: dict[str, str], vault_a: Path, helpers: list[Helper]
) -> None:
    expected = cli(env, "--db", str(vault_a), "prepare", CONTEXT, PERSEUS_VAULT_RESIDENT="0")
    helpers.append(helper := Helper(env, vault_a))
    helper.proc.send_signal(signal.SIGSTOP)  # the call connects and sends, and then nothing answers
    call = subprocess.Popen(
        [sys.executable, "-m", "perseus_vault_core.cli", "--db", str(vault_a), "prepare", CONTEXT],
        env=env,
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    time.sleep(1.0)
    assert call.poll() is None  # waiting for the helper
    helper.proc.send_signal(signal.SIGKILL)  # dies mid-call
    out, err = call.communicate(timeout=120)
    assert (call.returncode, out, err) == expected
    assert (
        helper.socket.exists()
    )  # left behind by the killed helper: refused connections, so the CLI works alone
    assert cli(env, "--db", str(vault_a), "prepare", CONTEXT) == expected
    helpers.append(stuck := Helper(env, vault_a))
    stuck.proc.send_signal(signal.SIGSTOP)
    started = time.monotonic()
    assert cli(env, "--db", str(vault_a), "prepare", CONTEXT, PERSEUS_VAULT_RESIDENT_TIMEOUT="1") == expected
    assert time.monotonic() - started < 30  # waited a second for it, not for ever


def test_a_helper_serves_only_its_vault_and_scope(
    env: dict[str, str], vault_a: Path, vault_b: Path, helpers: list[Helper]
) -> None:
    scoped = ["prepare", CONTEXT, "--agent-id", "a1"]
    expected = {
        (db, tuple(argv)): cli(env, "--db", str(db), *argv, PERSEUS_VAULT_RESIDENT="0")
        for db in (vault_a, vault_b)
        for argv in (["prepare", CONTEXT], scoped)
    }
    assert expected[(vault_a, tuple(scoped))] != expected[(vault_a, ("prepare", CONTEXT))]
    assert expected[(vault_a, tuple(scoped))] != expected[(vault_b, tuple(scoped))]
    helpers.append(helper := Helper(env, vault_a, "--agent-id", "a1"))
    assert cli(env, "--db", str(vault_a), *scoped) == expected[(vault_a, tuple(scoped))]
    assert helper.answered() == 1
    assert (
        cli(env, "--db", str(vault_a), "prepare", CONTEXT) == expected[(vault_a, ("prepare", CONTEXT))]
    )  # unscoped
    assert (
        cli(env, "--db", str(vault_a), *scoped[:2], "--agent-id", "a2") != expected[(vault_a, tuple(scoped))]
    )
    assert helper.answered() == 1
    # Its socket where vault B's calls look: it refuses them, and the CLI answers from B alone.
    os.replace(helper.socket, socket_of(vault_b, "a1"))
    assert cli(env, "--db", str(vault_b), *scoped) == expected[(vault_b, tuple(scoped))]
    assert helper.answered() == 1 and "another db" in helper.refused()[-1]
    # A request naming its vault but parsed to another scope is refused too (the helper parses the call).
    forged = {
        "protocol": resident.PROTOCOL,
        "version": __version__,
        **resident.identity(os.path.realpath(vault_a), "a1", None),
        "command": "prepare",
        "argv": ["prepare", CONTEXT, "--agent-id", "a2"],
        "cwd": str(ROOT),
    }
    assert client.ask(str(socket_of(vault_b, "a1")), forged) == {"refused": "another scope: ['a2', None]"}
    # Another vault file put in place of its own: refused, and the helper exits (a new one opens the new file).
    shutil.copy(vault_b, vault_a.with_suffix(".new"))
    os.replace(vault_a.with_suffix(".new"), vault_a)
    assert client.ask(str(socket_of(vault_b, "a1")), {**forged, "argv": scoped}) is not None
    assert helper.proc.wait(30) == 0


def test_the_helper_listens_only_where_its_owner_can_reach_it(
    env: dict[str, str], vault_a: Path, helpers: list[Helper]
) -> None:
    helpers.append(helper := Helper(env, vault_a))
    assert stat.S_IMODE(helper.socket.stat().st_mode) == 0o600
    assert stat.S_ISSOCK(helper.socket.stat().st_mode)
    folder = helper.socket.parent
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700 and folder.stat().st_uid == os.geteuid()
    if os.geteuid() == 0:  # another user cannot reach it (root can become one to try)
        probe = (
            "import os, socket, sys\nos.setgid(65534); os.setuid(65534)\n"
            "s = socket.socket(socket.AF_UNIX)\ntry:\n    s.connect(sys.argv[1])\nexcept PermissionError:\n"
            "    print('refused')\nelse:\n    print('connected')"
        )
        done = subprocess.run(
            [sys.executable, "-c", probe, str(helper.socket)], capture_output=True, text=True, timeout=60
        )
        assert done.stdout.strip() == "refused", done.stderr
    # A folder others can reach is not used, by the CLI or by a helper.
    os.chmod(folder, 0o755)
    try:
        assert resident.private_dir(create=False) is None
        code, out, err = cli(env, "--db", str(vault_a), "resident", "--idle", "5")
        assert code == 1 and err.startswith("error: no private folder") and out == ""
        assert cli(env, "--db", str(vault_a), "prepare", CONTEXT)[0] == 0
        assert helper.answered() == 0
    finally:
        os.chmod(folder, 0o700)


@pytest.mark.parametrize("idle", ["0", "-5", "nan", "inf"])
def test_an_idle_time_that_is_no_positive_number_is_refused(
    env: dict[str, str], vault_a: Path, idle: str
) -> None:
    code, out, err = cli(env, "--db", str(vault_a), "resident", "--idle", idle)
    assert (code, out, err) == (1, "", "error: --idle must be a positive number of seconds\n")


def test_the_helper_exits_when_idle_or_stopped(
    env: dict[str, str], vault_a: Path, helpers: list[Helper]
) -> None:
    helpers.append(idle := Helper(env, vault_a, idle=1))
    assert idle.proc.wait(30) == 0
    assert not idle.socket.exists() and "idle for 1 s" in idle.log.read_text()
    helpers.append(helper := Helper(env, vault_a))
    assert cli(env, "--db", str(vault_a), "resident", "--stop") == (0, "stopped\n", "")
    assert helper.proc.wait(30) == 0 and not helper.socket.exists()
    assert cli(env, "--db", str(vault_a), "resident", "--stop") == (
        0,
        "no helper runs for this vault and scope\n",
        "",
    )


def test_a_call_starts_a_helper_only_when_allowed(env: dict[str, str], vault_a: Path) -> None:
    path = socket_of(vault_a)
    expected = cli(env, "--db", str(vault_a), "prepare", CONTEXT)
    assert not path.exists()  # not allowed: none started
    try:
        assert (
            cli(
                env,
                "--db",
                str(vault_a),
                "prepare",
                CONTEXT,
                PERSEUS_VAULT_RESIDENT="1",
                PERSEUS_VAULT_RESIDENT_IDLE="30",
            )
            == expected
        )
        assert path.exists()
        assert (
            cli(env, "--db", str(vault_a), "prepare", CONTEXT) == expected
        )  # found and used without the setting
        log = Path(str(path) + ".log").read_text()
        assert log.count("answered prepare") == 2, log
    finally:
        assert cli(env, "--db", str(vault_a), "resident", "--stop")[1] == "stopped\n"


def test_calls_the_helper_cannot_serve_are_answered_alone(
    env: dict[str, str], vault_a: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    served: list[Any] = []
    monkeypatch.setattr(client, "ask", lambda path, request, stdin=None: served.append(request))
    monkeypatch.chdir(vault_a.parent)
    assert client.answer(["prepare", CONTEXT, "--db", str(vault_a)]) is None and len(served) == 1
    for argv in (
        ["remember", "note", "k", "text", "--db", str(vault_a)],  # a write
        ["prepare", CONTEXT, "--db", "postgresql://u@h/db"],  # not a file
        ["prepare", CONTEXT, "--db", str(vault_a.parent / "missing.db")],
        ["prepare", "-h", "--db", str(vault_a)],
    ):
        assert client.answer(argv) is None
    for name, value in (
        ("PERSEUS_VAULT_KEY", "secret passphrase"),
        ("PERSEUS_VAULT_DEBUG", "1"),
        (resident.ENV, "0"),
    ):
        monkeypatch.setenv(name, value)
        assert client.answer(["prepare", CONTEXT, "--db", str(vault_a)]) is None
        monkeypatch.delenv(name)
    assert len(served) == 1
    monkeypatch.setenv("PERSEUS_VAULT_DB", "a.db")  # the environment's vault, relative to the caller's folder
    assert client.answer(["prepare", CONTEXT]) is None and served[-1]["db"] == os.path.realpath(vault_a)


def test_the_client_knows_the_served_commands_and_the_default_vault() -> None:
    from perseus_vault_core.cli.commands import COMMANDS
    from perseus_vault_core.facade.vault import DEFAULT_PATH

    words = {
        word
        for command in COMMANDS
        if command.verb in ("prepare", "recall", "recall_when", "search")
        for word in command.called
    }
    assert resident.SERVED == words
    assert resident.DEFAULT_PATH == DEFAULT_PATH
    assert client.scan(
        ["--db", "x.db", "recall", "--agent-id=a", "q", "--workspace-hash", "w", "--db", "y.db"]
    ) == ("recall", {"--db": "y.db", "--agent-id": "a", "--workspace-hash": "w"})
    assert client.scan(["prepare", "--", "--db"]) == ("prepare", {})


def test_a_reader_that_stops_early_gets_the_answer_once(
    env: dict[str, str], vault_a: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An answer printed into a closed pipe (``| head``) ends the call as the CLI alone ends it, with
    status 0: it is not taken for a helper that failed, which would run the command again alone."""

    class Closed:
        def write(self, text: str) -> int:
            raise BrokenPipeError(32, "Broken pipe")

        def flush(self) -> None:
            raise BrokenPipeError(32, "Broken pipe")

    monkeypatch.setattr(
        client, "ask", lambda path, request, stdin=None: {"code": 0, "stdout": "an answer\n", "stderr": ""}
    )
    monkeypatch.setattr(sys, "stdout", Closed())
    assert client.answer(["recall", "billing", "--db", str(vault_a)]) == 0


def _frame(helper: Helper, payload: bytes) -> dict[str, Any] | None:
    """Send raw bytes as a request; the helper's reply (None when it closed without one)."""
    import socket

    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(30)
    try:
        sock.connect(str(helper.socket))
        sock.sendall(payload)
        sock.shutdown(socket.SHUT_WR)
        data = b"".join(iter(lambda: sock.recv(1 << 16), b""))
    finally:
        sock.close()
    reply: dict[str, Any] | None = json.loads(data) if data else None
    return reply


def test_a_request_whose_command_line_runs_another_command_is_refused(
    env: dict[str, str], vault_a: Path, helpers: list[Helper]
) -> None:
    """The request names a command the helper answers (recall) and a command line that runs another (forget,
    export): refused, nothing done, whether the command word leads or an option comes first."""
    helpers.append(helper := Helper(env, vault_a))
    base = {
        "protocol": resident.PROTOCOL,
        "version": __version__,
        **resident.identity(os.path.realpath(vault_a), None, None),
        "command": "recall",
        "cwd": str(ROOT),
    }
    export = vault_a.parent / "stolen.jsonl"
    for argv in (["forget", "1"], ["--json", "forget", "1"], ["export", str(export)], ["recall-when", "x"]):
        reply = client.ask(str(helper.socket), {**base, "argv": argv})
        assert reply is not None and "refused" in reply and "does not run 'recall'" in reply["refused"], reply
    for forged in (
        {**base, "argv": "recall x"},
        {**base, "argv": ["recall", 1]},
        {**base, "argv": ["recall", "x"], "cwd": 5},
    ):
        reply = client.ask(str(helper.socket), forged)
        assert reply is not None and "refused" in reply
    assert not export.exists() and helper.answered() == 0
    with Vault(vault_a, embedder=False) as vault:
        assert vault.get_entity(1).status == "active"
    assert cli(env, "--db", str(vault_a), "recall", "billing")[0] == 0 and helper.answered() == 1


def test_malformed_and_deeply_nested_frames_get_an_error_and_the_helper_lives(
    env: dict[str, str], vault_a: Path, helpers: list[Helper]
) -> None:
    helpers.append(helper := Helper(env, vault_a))
    for payload in (b"[" * 400_000, b"{" * 1000, b"not json", b"\xff\xfe", b"[1, 2]", b'"text"', b""):
        reply = _frame(helper, payload)
        assert payload == b"" or (reply is not None and reply["refused"].startswith("malformed request")), (
            reply
        )
        assert helper.proc.poll() is None
    expected = cli(env, "--db", str(vault_a), "prepare", CONTEXT, PERSEUS_VAULT_RESIDENT="0")
    assert cli(env, "--db", str(vault_a), "prepare", CONTEXT) == expected and helper.answered() == 1


def test_a_slow_caller_holds_no_other(env: dict[str, str], vault_a: Path, helpers: list[Helper]) -> None:
    """One caller sends a byte every two seconds (each within a socket read's timeout, so a helper that waited
    for it byte by byte would wait for ever); another call is answered by the helper meanwhile, not after the
    slow one (nor by the CLI alone once its wait ran out), and the slow caller is dropped."""
    import socket
    import threading

    helpers.append(helper := Helper(env, vault_a))
    slow = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    slow.connect(str(helper.socket))
    stop, dropped = threading.Event(), threading.Event()

    def trickle() -> None:
        slow.sendall(b"{")
        while not stop.wait(2):
            try:
                slow.sendall(b" ")
            except OSError:
                dropped.set()
                return

    feeder = threading.Thread(target=trickle)
    feeder.start()
    try:
        time.sleep(0.5)
        started = time.monotonic()
        done = cli(env, "--db", str(vault_a), "recall", "billing queue", PERSEUS_VAULT_RESIDENT_TIMEOUT="20")
        assert done[0] == 0 and helper.answered() == 1  # the helper's answer, not the CLI's own after a wait
        assert time.monotonic() - started < 20
        assert dropped.wait(30)  # its whole request overdue: the helper closed it
    finally:
        stop.set()
        feeder.join()
        slow.close()
    assert helper.proc.poll() is None and cli(env, "--db", str(vault_a), "recall", "billing")[0] == 0


def test_a_dash_reads_standard_input_through_the_helper_and_alone(
    env: dict[str, str], vault_a: Path, helpers: list[Helper]
) -> None:
    """A hook pipes the prompt: ``prepare -`` reads it from standard input, whatever its size (an argument is
    capped by the operating system), with the same answer through the helper as alone; ``remember ... -``
    stores standard input as the content."""

    def piped(text: str, *argv: str, **more: str) -> tuple[int, str, str]:
        done = subprocess.run(
            [sys.executable, "-m", "perseus_vault_core.cli", "--db", str(vault_a), *argv],
            input=text,
            capture_output=True,
            text=True,
            env={**env, **more},
            cwd=ROOT,
            timeout=120,
        )
        return done.returncode, done.stdout, done.stderr

    expected = cli(env, "--db", str(vault_a), "prepare", CONTEXT, PERSEUS_VAULT_RESIDENT="0")
    assert piped(CONTEXT + "\n", "prepare", "-", PERSEUS_VAULT_RESIDENT="0") == expected
    long_prompt = (
        "a long pasted log line " * 17_000 + CONTEXT
    )  # ~400 KB, past one argument's cap; read from its end
    alone = piped(long_prompt, "prepare", "-", PERSEUS_VAULT_RESIDENT="0")
    assert alone[0] == 0 and "## Memory for this turn" in alone[1]
    helpers.append(helper := Helper(env, vault_a))
    assert piped(CONTEXT + "\n", "prepare", "-") == expected and helper.answered() == 1
    assert piped(long_prompt, "prepare", "-") == alone and helper.answered() == 2
    assert (
        piped("billing queue", "recall", "-", "--no-reinforce")
        == cli(env, "--db", str(vault_a), "recall", "billing queue", "--no-reinforce")
        and helper.answered() == 4
    )
    assert piped("", "prepare", "-") == cli(
        env, "--db", str(vault_a), "prepare", ""
    )  # nothing piped: as "" is
    code, out, _ = piped("a fact piped in\nover two lines\n", "remember", "note", "piped", "-", "--json")
    assert code == 0 and json.loads(out)["content"] == "a fact piped in\nover two lines"
    answered = helper.answered()
    for setting in ({"PERSEUS_VAULT_RESIDENT": "0"}, {}):  # alone, then through the helper
        bad = subprocess.run(
            [sys.executable, "-m", "perseus_vault_core.cli", "--db", str(vault_a), "recall", "-"],
            input=b"caf\xe9 \xff",
            capture_output=True,
            env={**env, **setting},
            cwd=ROOT,
            timeout=120,
        )
        assert (
            bad.returncode == 1 and bad.stderr.decode() == "error: query: standard input is not UTF-8 text\n"
        )
    assert helper.answered() == answered + 1


def test_standard_input_is_handed_over_unread_and_read_only_by_a_dash(
    env: dict[str, str], vault_a: Path, helpers: list[Helper]
) -> None:
    """The client hands its standard input to the helper with the request, unread: a "-" that is an option's
    value reads nothing (a hook's stdin left open does not hold the call), a closed stdin is no input at all,
    alone as through the helper, and a caller that left before its turn is not answered twice."""
    helpers.append(helper := Helper(env, vault_a))
    reader, writer = os.pipe()  # standard input that never ends
    try:
        started = time.monotonic()
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "perseus_vault_core.cli",
                "--db",
                str(vault_a),
                "recall",
                "billing",
                "--category",
                "-",
            ],
            stdin=reader,
            capture_output=True,
            text=True,
            env=env,
            cwd=ROOT,
            timeout=60,
        )
        assert done.returncode == 0 and time.monotonic() - started < 20 and helper.answered() == 1
    finally:
        os.close(reader)
        os.close(writer)
    for setting in ({"PERSEUS_VAULT_RESIDENT": "0"}, {}):
        closed = subprocess.run(
            f'"{sys.executable}" -m perseus_vault_core.cli --db "{vault_a}" prepare - <&-',
            shell=True,
            capture_output=True,
            text=True,
            env={**env, **setting},
            cwd=ROOT,
            timeout=60,
        )
        assert (closed.returncode, closed.stdout, closed.stderr) == (
            0,
            "",
            "No stored memory matches this turn.\n",
        )
    assert helper.answered() == 2


def test_a_call_whose_caller_gave_up_is_not_run_again(
    env: dict[str, str], vault_a: Path, helpers: list[Helper]
) -> None:
    """A stuck helper's caller answers alone after its wait; when the helper comes back it finds that caller
    gone and drops the call, which would otherwise run twice (a recall counts its hits)."""
    helpers.append(helper := Helper(env, vault_a))
    helper.proc.send_signal(signal.SIGSTOP)
    try:
        done = cli(env, "--db", str(vault_a), "recall", "billing queue", PERSEUS_VAULT_RESIDENT_TIMEOUT="1")
        assert done[0] == 0 and "billing" in done[1]  # answered alone
    finally:
        helper.proc.send_signal(signal.SIGCONT)
    deadline = time.monotonic() + 30
    while "dropped recall: its caller left" not in helper.log.read_text():
        assert time.monotonic() < deadline, helper.log.read_text()
        time.sleep(0.05)
    assert helper.answered() == 0
