"""Many processes, one file (docs/operations.md "Many processes, one file"): a process that holds the vault
keeps its SQLite locks through every verb, whatever thread runs it, so no other process takes itself for
the file's last user and deletes the ``-wal`` under it; acknowledged writes of CLI processes beside a
long-lived holder are never lost and the file stays whole; a holder whose file was replaced leaves the new
file's ``-wal`` and ``-shm`` alone.

The locks are read from ``/proc/locks`` (Linux): the shared lock SQLite keeps on the database file in WAL
mode for as long as a connection is open, and its lock on the ``-shm`` file's dead-man byte.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from perseus_vault_core import StorageError, Vault
from perseus_vault_core.contract import verbs

from ..conftest import Clock, FakeEmbedder
from ._checks import integrity

CLI = [sys.executable, "-m", "perseus_vault_core.cli"]
SHARED_FIRST = 0x40000002  # SQLite's shared-lock range on the database file: PENDING + 2 ...
SHM_DEAD_MAN = 128  # ... and the -shm byte every process holding the WAL index keeps a read lock on

linux_only = pytest.mark.skipif(
    not os.path.exists("/proc/locks"), reason="reads the locks from /proc/locks (Linux)"
)


def locks_of(pid: int, db: Path) -> set[str]:
    """Which of SQLite's standing locks process ``pid`` holds on ``db``: ``"db"`` (the shared lock on the file)
    and ``"shm"`` (the dead-man byte of its ``-shm``)."""
    inodes = {}
    for name, path in (("db", db), ("shm", Path(f"{db}-shm"))):
        try:
            inodes[os.stat(path).st_ino] = name
        except FileNotFoundError:
            pass
    held = set()
    with open("/proc/locks") as table:  # the kernel's table, not the vault's file
        for line in table:
            fields = [f for f in line.split() if f != "->"]
            owner, device, start = int(fields[4]), fields[5], fields[6]
            name = inodes.get(int(device.rsplit(":", 1)[1]))
            if (
                owner == pid
                and name is not None
                and int(start) == (SHARED_FIRST if name == "db" else SHM_DEAD_MAN)
            ):
                held.add(name)
    return held


def _calls(tmp: Path) -> dict[str, Callable[[Vault], Any]]:
    """One call of every verb of the registry, each valid on the vault :func:`_filled` makes."""
    notes = tmp / "notes"
    notes.mkdir(exist_ok=True)
    (notes / "Preferences.md").write_text("# Preferences\n\n## Editors\n\n- 2024-05-02: Vim over Emacs\n")
    jsonl = tmp / "in.jsonl"
    jsonl.write_text(
        json.dumps({"category": "fact", "key": "imported", "content": "an imported fact"}) + "\n"
    )
    counter = iter(range(1_000_000))

    def fresh(stem: str) -> str:
        return str(tmp / f"{stem}-{next(counter)}")

    def summary(v: Vault) -> Any:
        found = v.communities().communities
        return v.community_summary(found[0].id) if found else None

    return {
        "recall": lambda v: v.recall("alpha ledger"),
        "prepare": lambda v: v.prepare("what about the alpha ledger"),
        "remember": lambda v: v.remember("fact", f"k{next(counter)}", "a new fact about the ledger"),
        "get_entity": lambda v: v.get_entity(1),
        "forget": lambda v: v.forget(3),
        "scan": lambda v: v.scan(),
        "history": lambda v: v.history("fact", "alpha"),
        "link": lambda v: v.link(1, 2, "relates_to"),
        "traverse": lambda v: v.traverse(1),
        "memory_recall": lambda v: v.memory_recall("editors"),
        "add_memory": lambda v: v.add_memory(
            "Preferences", "Editors", "Neovim for large files", date="2024-06-01"
        ),
        "remember_many": lambda v: v.remember_many(
            [{"category": "fact", "key": f"m{next(counter)}", "content": "many"}]
        ),
        "purge": lambda v: v.purge(3) if v.get_entity(3).status == "archived" else None,
        "supersede": lambda v: v.supersede(1, 2),
        "unlink": lambda v: v.unlink(1, 2),
        "as_of": lambda v: v.as_of("fact", "alpha", "2030-01-01T00:00:00Z"),
        "valid_at": lambda v: v.valid_at("fact", "alpha", "2030-01-01T00:00:00Z"),
        "bitemporal": lambda v: v.bitemporal("fact", "alpha", "2030-01-01T00:00:00Z", "2030-01-01T00:00:00Z"),
        "global_recall": lambda v: v.global_recall("ledger themes"),
        "communities": lambda v: v.communities(),
        "community_summary": summary,
        "recall_when": lambda v: v.recall_when("touching the ledger"),
        "hygiene": lambda v: v.hygiene(),
        "counts": lambda v: v.counts(),
        "recent": lambda v: v.recent(),
        "search": lambda v: v.search("vim"),
        "get_memory": lambda v: v.get_memory("Preferences"),
        "list_memory_files": lambda v: v.list_memory_files(),
        "delete_memory": lambda v: v.delete_memory("Preferences", "Editors", text="Neovim for large files"),
        "remember_conversation": lambda v: v.remember_conversation(
            "s1", [{"speaker": "user", "text": f"hello {next(counter)}"}]
        ),
        "conversation": lambda v: v.conversation("s1"),
        "embed": lambda v: v.embed(),
        "stats": lambda v: v.stats(),
        "import_jsonl": lambda v: v.import_jsonl(str(jsonl)),
        "export_jsonl": lambda v: v.export_jsonl(fresh("out") + ".jsonl"),
        "memory_import": lambda v: v.memory_import(str(notes)),
        "memory_export": lambda v: v.memory_export(fresh("exported")),
        "check": lambda v: v.check(),
        "reindex": lambda v: v.reindex(),
        "backup": lambda v: v.backup(fresh("copy") + ".db"),
    }


# rekey needs an encrypted vault and the file to itself: it closes every connection of the vault by design.
NOT_HERE = {"rekey"}


def _filled(db: Path, clock: Clock, **kw: Any) -> Vault:
    vault = Vault(db, clock=clock, embedder=FakeEmbedder(), **kw)
    vault.remember(
        "fact", "alpha", "the alpha ledger keeps every payment", recall_when=["touching the ledger"]
    )
    vault.remember("fact", "beta", "the beta ledger replaced the alpha ledger")
    vault.remember("note", "gamma", "an old note to archive")
    vault.link(1, 2, "relates_to")
    return vault


def test_every_verb_of_the_registry_has_a_call_here(tmp_path: Path) -> None:
    assert set(_calls(tmp_path)) | NOT_HERE == {v.name for v in (*verbs.VERBS, *verbs.ADMIN_VERBS)}


@linux_only
@pytest.mark.parametrize("where", ["same thread", "new thread"])
def test_a_holder_keeps_its_locks_through_every_verb(tmp_path: Path, clock: Clock, where: str) -> None:
    """Each verb, on the holder's own thread or on a new one (a server answers each request on a thread of
    its own, and every new thread opens a connection), leaves the holder's locks in place. Before the fix,
    every new connection read the file's header with ``open()`` and its close dropped them all."""
    db = tmp_path / "v.db"
    with _filled(db, clock) as vault:
        vault.recall("alpha")
        assert locks_of(os.getpid(), db) == {"db", "shm"}
        for name, call in _calls(tmp_path).items():
            if where == "same thread":
                call(vault)
            else:
                failed: list[BaseException] = []
                worker = threading.Thread(target=lambda: _run(call, vault, failed))
                worker.start()
                worker.join()
                assert not failed, f"{name}: {failed[0]!r}"
            vault.recall("alpha")  # the holder's own thread reads again
            assert locks_of(os.getpid(), db) == {"db", "shm"}, f"{name} ({where}) dropped the holder's locks"


def _run(call: Callable[[Vault], Any], vault: Vault, failed: list[BaseException]) -> None:
    try:
        call(vault)
    except BaseException as exc:  # reported by the test's thread
        failed.append(exc)


@linux_only
def test_an_encrypted_holder_keeps_its_locks_while_other_vaults_open_the_file(
    tmp_path: Path, clock: Clock
) -> None:
    """The key proof reads the file's first page outside SQLite: only ever while no connection here holds it."""
    pytest.importorskip("sqlcipher3")
    db = tmp_path / "v.db"
    key = "x'" + "2d" * 32 + "'"
    with _filled(db, clock, key=key) as vault:
        vault.recall("alpha")
        for _ in range(2):
            with Vault(db, clock=clock, embedder=FakeEmbedder(), key=key) as twin:
                assert twin.get_entity(1).content.startswith("the alpha ledger")
            worker = threading.Thread(target=lambda: vault.recall("ledger"))
            worker.start()
            worker.join()
            vault.recall("alpha")
            assert locks_of(os.getpid(), db) == {"db", "shm"}


def _cli(db: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PERSEUS_VAULT_EMBEDDER": "none", "PERSEUS_VAULT_RESIDENT": "0"}
    return subprocess.run(
        [*CLI, "--db", str(db), *argv], capture_output=True, text=True, env=env, timeout=120
    )


def test_cli_writes_beside_a_long_lived_holder_are_never_lost(tmp_path: Path) -> None:
    """The case that lost writes: a holder (as ``serve`` and the helper hold a vault) answers from a new thread
    between its own writes, and ``perseus-vault remember`` runs in another process each time. Every
    acknowledged write is in the file afterwards and the file is whole."""
    db = tmp_path / "v.db"
    acknowledged = []
    with Vault(db, embedder=False) as holder:  # the real clock, as the CLI writes with
        for i in range(4):
            holder.remember("fact", f"holder{i}", f"holder memory {i} alpha")
            acknowledged.append(f"holder{i}")
            worker = threading.Thread(target=lambda: holder.recall("alpha", mode="fts5"))
            worker.start()
            worker.join()
            done = _cli(db, "remember", "fact", f"cli{i}", f"cli memory {i} zebra")
            assert done.returncode == 0 and done.stdout.startswith("stored as #"), done.stderr
            acknowledged.append(f"cli{i}")
            assert {e.key for e in holder.recall("zebra", mode="fts5", limit=20).items} == {
                f"cli{j}" for j in range(i + 1)
            }
    with Vault(db, embedder=False) as after:
        assert {e.key for e in after.scan(limit=100).items} >= set(acknowledged)
        assert after.check().ok
    assert integrity(db) == "ok"


WRITER = """
import sys, threading
from perseus_vault_core import StorageError, Vault
vault = Vault(sys.argv[1], embedder=False)
n = 0
for line in sys.stdin:
    if line.strip() == "stop":
        break
    for _ in range(int(line)):
        vault.remember("fact", f"new{n}", f"new memory {n} about the replaced vault")
        print(f"ack new{n}", flush=True)
        n += 1
        reader = threading.Thread(target=lambda: vault.recall("replaced vault"))  # as a server answers
        reader.start()
        reader.join()
vault.close()
"""


@pytest.mark.parametrize("leaves_by", ["a refused call", "idling out"])
def test_a_helper_whose_vault_was_replaced_leaves_the_new_files_alone(tmp_path: Path, leaves_by: str) -> None:
    """The vault is removed and a new one made at its path by a process that goes on writing; the helper that
    held the old one exits (told at its next call that its file was replaced, or idle). SQLite's ``-wal`` and
    ``-shm`` of the new vault stay (the helper closed only what it had opened: before the fix its closing
    saved its indexes through a new connection to the new file and deleted them), and no write is lost."""
    runtime = Path(
        tempfile.mkdtemp(prefix="pv-", dir="/tmp")
    )  # short enough for a socket path, however deep tmp_path
    env = {**os.environ, "PERSEUS_VAULT_EMBEDDER": "none", "PERSEUS_VAULT_RUNTIME_DIR": str(runtime)}
    db = tmp_path / "v.db"
    for i in range(3):
        assert _cli(db, "remember", "fact", f"old{i}", f"old memory {i} zebra").returncode == 0
    idle = "2" if leaves_by == "idling out" else "60"
    helper = subprocess.Popen(
        [*CLI, "--db", str(db), "resident", "--idle", idle], env=env, stderr=subprocess.PIPE, text=True
    )
    writer = None
    try:
        assert helper.stderr is not None and "serving" in helper.stderr.readline()
        served = subprocess.run(
            [*CLI, "--db", str(db), "recall", "zebra", "--mode", "fts5"],
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
        )  # a recall counts its hits: the helper wrote
        assert "old memory" in served.stdout and "answered recall" in helper.stderr.readline()
        for suffix in ("", "-wal", "-shm"):
            Path(f"{db}{suffix}").unlink()
        writer = subprocess.Popen(
            [sys.executable, "-c", WRITER, str(db)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=env,
        )
        assert writer.stdin is not None and writer.stdout is not None
        acknowledged = [_write(writer, 5)]
        if leaves_by == "a refused call":
            called = subprocess.run(
                [*CLI, "--db", str(db), "recall", "new memory", "--mode", "fts5"],
                capture_output=True,
                text=True,
                env=env,
                timeout=120,
            )
            assert (
                called.returncode == 0 and "new memory" in called.stdout
            )  # answered alone, from the new vault
        assert helper.wait(60) == 0
        assert Path(f"{db}-wal").exists() and Path(f"{db}-shm").exists()  # the writer's, still in use
        acknowledged.append(_write(writer, 5))
        writer.stdin.write("stop\n")
        writer.stdin.close()
        assert writer.wait(60) == 0
    finally:
        for process in (helper, writer):
            if process is not None and process.poll() is None:
                process.kill()
        shutil.rmtree(runtime, ignore_errors=True)
    assert integrity(db) == "ok"
    with Vault(db, embedder=False) as after:
        assert {e.key for e in after.scan(limit=100).items} == {k for batch in acknowledged for k in batch}


def _write(writer: subprocess.Popen[str], n: int) -> list[str]:
    assert writer.stdin is not None and writer.stdout is not None
    writer.stdin.write(f"{n}\n")
    writer.stdin.flush()
    return [writer.stdout.readline().split()[1] for _ in range(n)]


@linux_only
def test_a_forked_child_holds_its_own_locks_on_the_parents_vault_and_a_new_one(
    tmp_path: Path, clock: Clock
) -> None:
    """SQLite's record of the locks a process holds is copied into a forked child, which POSIX gave none of
    them: the child closes its inherited connections, so that its own take real locks."""
    db = tmp_path / "v.db"
    with _filled(db, clock) as vault:
        vault.recall("alpha")
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child: report its locks through the pipe, then leave at once
            try:
                vault.remember("fact", "from-child", "written by the child")
                held = sorted(locks_of(os.getpid(), db))
                with Vault(db, clock=clock, embedder=FakeEmbedder()) as own:
                    own.recall("alpha")
                    held_new = sorted(locks_of(os.getpid(), db))
                os.write(write, json.dumps([held, held_new]).encode())
            finally:
                os._exit(0)
        os.close(write)
        with os.fdopen(read) as answer:
            reported = json.loads(answer.read() or "null")
        os.waitpid(pid, 0)
        assert reported == [["db", "shm"], ["db", "shm"]]
        assert locks_of(os.getpid(), db) == {"db", "shm"}  # the parent's are untouched
        assert vault.recall("written by the child", mode="fts5").items[0].key == "from-child"


DAEMON = """
import os, subprocess, sys
from perseus_vault_core import StorageError, Vault
db = sys.argv[1]
vault = Vault(db, embedder=False)
vault.remember("fact", "before", "opened before the fork")
if os.fork():
    os._exit(0)  # the parent leaves (its locks go with it), as a daemonizing server's does
acked = []
for i in range(4):
    vault.remember("fact", f"d{i}", f"the daemon's write {i}")
    acked.append(f"d{i}")
    done = subprocess.run([sys.executable, "-m", "perseus_vault_core.cli", "--db", db, "remember", "fact", f"c{i}",
                           f"a command's write {i}"], capture_output=True, text=True)
    if done.returncode == 0:
        acked.append(f"c{i}")
vault.close()
with open(db + ".acked", "w") as out:
    out.write(" ".join(acked))
"""


def test_a_vault_opened_before_a_daemon_forks_loses_nothing(tmp_path: Path) -> None:
    """A process opens its vault, forks and exits (a server becoming a daemon); the child writes between CLI
    writes. Before the fix each CLI process took itself for the last user and deleted the -wal under the
    child, whose inherited record said it held locks it did not."""
    db = tmp_path / "v.db"
    env = {**os.environ, "PERSEUS_VAULT_EMBEDDER": "none", "PERSEUS_VAULT_RESIDENT": "0"}
    subprocess.run([sys.executable, "-c", DAEMON, str(db)], env=env, check=True, timeout=120)
    marker = Path(f"{db}.acked")
    deadline = time.monotonic() + 120
    while not marker.exists():
        assert time.monotonic() < deadline
        time.sleep(0.05)
    acked = set(marker.read_text().split())
    assert len(acked) == 8
    time.sleep(0.2)  # the daemon's last close
    assert integrity(db) == "ok"
    with Vault(db, embedder=False) as after:
        assert acked <= {e.key for e in after.scan(limit=100).items}
        assert after.check().ok


def test_a_backup_moved_over_a_vault_in_use_is_what_comes_back(tmp_path: Path) -> None:
    """Restoring a backup by moving it over the vault while a holder has it open: the holder refuses to read
    or write the file now there (its writes would go to the old one and be lost), and when it closes it takes
    its -wal away from under the vault's name (the next process would have read the old file's pages from it
    over the restored ones)."""
    db = tmp_path / "v.db"
    holder = Vault(db, embedder=False)
    for i in range(3):
        holder.remember("fact", f"old{i}", f"before the backup {i}")
    backup = holder.backup(tmp_path / "backup.db")
    with Vault(backup, embedder=False) as edited:
        edited.remember("fact", "restored-only", "written into the backup")
    for i in range(3, 30):
        holder.remember("fact", f"old{i}", f"after the backup {i}")
    os.replace(backup, db)
    with pytest.raises(StorageError, match="was replaced or removed since this vault opened it"):
        holder.remember("fact", "lost", "would go to the old file")
    with pytest.raises(StorageError, match="was replaced or removed"):
        holder.recall("backup")
    holder.close()
    assert not Path(f"{db}-wal").exists()
    assert integrity(db) == "ok"
    with Vault(db, embedder=False) as restored:
        assert {e.key for e in restored.scan(limit=100).items} == {"old0", "old1", "old2", "restored-only"}
