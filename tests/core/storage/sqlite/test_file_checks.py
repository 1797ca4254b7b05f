"""Encryption at rest (SQLCipher), and the checks of storage/sqlite/file_checks.py: no readable body or
index text in any file on disk, recall unchanged, clear errors for a wrong, missing or superfluous key
(told before SQLite opens the file), ``rekey`` without loss, encrypted backups, and the MCP server over an
encrypted vault with the key from the environment."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest

from perseus_vault_core import InvalidInput, SetupError, Vault, VaultError
from perseus_vault_core.cli.main import main
from perseus_vault_core.primitives import keys
from perseus_vault_core.storage.sqlite import connection, file_checks

from ....conftest import Clock, FakeEmbedder, modes

pytest.importorskip("sqlcipher3")

KEY = "correct horse battery staple"
RAW_KEY = "x'" + "2d" * 32 + "'"
# Distinctive lowercase words (FTS5 stores tokens lowercased), one per place text is kept.
MARKERS = {
    "content": "zebracontentword",
    "summary": "quokkasummaryword",
    "body": "narwhalbodyword",
    "topic_path": "xylophonetopicword",
    "recall_when": "pangolintriggerword",
    "memory_entry": "axolotlentryword",
}


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in (keys.KEY_ENV, keys.KEY_FILE_ENV, "PERSEUS_VAULT_NEW_KEY", "PERSEUS_VAULT_SQLITE"):
        monkeypatch.delenv(name, raising=False)


def fill(vault: Vault) -> None:
    """Every marker in the place it names, plus enough ordinary memories for rankings to mean something."""
    m = MARKERS
    vault.remember(
        "decision",
        "db",
        f"We chose SQLite for the {m['content']} service",
        summary=f"SQLite {m['summary']}",
        topic_path=f"architecture/{m['topic_path']}",
        body={"why": f"one file {m['body']}"},
        recall_when=[f"choosing a {m['recall_when']} store"],
    )
    vault.add_memory(
        "Opinions", "Testing", f"Integration tests catch what matters {m['memory_entry']}", date="2024-05-02"
    )
    words = ["ledger", "backup", "schema", "latency", "deploy", "cache", "index", "queue", "token", "shard"]
    vault.remember_many(
        {
            "category": "note",
            "key": f"n{i}",
            "content": f"{words[i % 10]} {words[(i * 3) % 10]} note number {i}",
            "recall_when": [f"touching the {words[(i * 7) % 10]}"],
        }
        for i in range(40)
    )


def found(folder: Path) -> dict[str, list[str]]:
    """Which markers appear in the raw bytes of which file under ``folder``."""
    hits: dict[str, list[str]] = {}
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        data = path.read_bytes().lower()
        for name, word in MARKERS.items():
            if word.encode() in data:
                hits.setdefault(name, []).append(path.name)
    return hits


def open_vault(path: Path, clock: Clock, key: str | None, **kw: Any) -> Vault:
    return Vault(path, clock=clock, embedder=FakeEmbedder(), key=key, **kw)


# --- nothing readable on disk -------------------------------------------------------------------


@pytest.mark.parametrize("key", [None, KEY], ids=["plaintext", "encrypted"])
def test_no_body_or_index_text_in_any_file(tmp_path: Path, clock: Clock, key: str | None) -> None:
    folder = tmp_path / "vault"
    with open_vault(folder / "v.db", clock, key) as vault:
        fill(vault)
        vault.recall("ledger", mode="hybrid")
        assert vault.wait_for_keyword_index(30) and vault.wait_for_vector_index(30)
        open_files = {p.name for p in folder.iterdir()}
        assert {"v.db-wal", "v.db-shm"} <= open_files  # the WAL holds the writes, not yet checkpointed
        # The indexes' snapshots are saved beside a plaintext vault only: an encrypted one keeps them in memory.
        assert {p for p in open_files if p.endswith(".pvidx")} == (
            set() if key else {"v.db-keyword-index.pvidx", "v.db-vector-index.pvidx"}
        )
        while_open = found(folder)
        assert vault.stats().encrypted is (key is not None)
    after_close = found(folder)
    if key is None:  # the grep itself works: every marker is readable in a plaintext vault
        assert set(while_open) == set(MARKERS) and set(after_close) == set(MARKERS), (while_open, after_close)
    else:
        assert while_open == {} and after_close == {}


def test_every_connection_is_keyed_and_keeps_temp_data_in_memory(tmp_path: Path, clock: Clock) -> None:
    """Pool connections on other threads and the background index builders all use the key."""
    with open_vault(tmp_path / "v.db", clock, KEY) as vault:
        fill(vault)
        assert vault.wait_for_keyword_index() and vault.wait_for_vector_index()
        stats = vault.stats()
        assert stats.keyword_index.startswith("ready") and stats.vector_index.startswith("ready")
        seen: list[Any] = []

        def other_thread() -> None:
            conn = vault.engine.conn()
            seen.append((conn.execute("PRAGMA temp_store").fetchone()[0], vault.recall("ledger").total))

        worker = threading.Thread(target=other_thread)
        worker.start()
        worker.join()
        assert seen and seen[0][0] == 2 and seen[0][1] > 0  # 2 = MEMORY: no temp files at all
        assert vault.check().ok


# --- recall is unchanged ------------------------------------------------------------------------


def answers(vault: Vault) -> list[Any]:
    out: list[Any] = []
    for query in ("ledger backup", "schema latency", "SQLite service", "deploy cache note"):
        for mode in ("fts5", "dense", "hybrid"):
            result = vault.recall(query, mode=mode, limit=20, reinforce=False)
            out.append((query, mode, [(i.id, round(i.score, 9)) for i in result.items]))
    out.append([(i.id, i.trigger) for i in vault.recall_when("touching the ledger", limit=20).items])
    out.append([e.text for e in vault.memory_recall("integration tests").entries])
    return out


def test_recall_in_every_mode_matches_an_unencrypted_twin(tmp_path: Path, clock: Clock) -> None:
    results = {}
    for name, key in (("plain", None), ("encrypted", KEY)):
        with open_vault(
            tmp_path / f"{name}.db", clock, key, keyword_index=False, vector_index=False
        ) as vault:
            fill(vault)
            sql_path = answers(vault)
        with open_vault(tmp_path / f"{name}.db", clock, key) as vault:  # the in-memory indexes' path
            assert vault.wait_for_keyword_index() and vault.wait_for_vector_index()
            results[name] = (sql_path, answers(vault))
    assert results["plain"] == results["encrypted"]
    assert all(r[2] for r in results["plain"][0][:12])  # every query found something


# --- keys: where they come from, and clear errors ----------------------------------------------


def test_wrong_missing_and_superfluous_keys_fail_clearly(tmp_path: Path, clock: Clock) -> None:
    secret, plain = tmp_path / "secret.db", tmp_path / "plain.db"
    with open_vault(secret, clock, KEY) as vault:
        fill(vault)
    with open_vault(plain, clock, None) as vault:
        vault.remember("note", "n", "plain text")
    before = secret.read_bytes()
    with pytest.raises(SetupError, match="wrong encryption key"):
        open_vault(secret, clock, "not the key")
    with pytest.raises(SetupError, match="is encrypted.*PERSEUS_VAULT_KEY"):
        open_vault(secret, clock, None)
    with pytest.raises(SetupError, match="is not encrypted, but an encryption key is set"):
        open_vault(plain, clock, KEY)
    assert secret.read_bytes() == before  # a failed open wrote nothing
    with open_vault(secret, clock, KEY) as vault:
        assert vault.get_entity(1).content.startswith("We chose SQLite")


def test_key_from_the_environment_or_a_key_file(
    tmp_path: Path, clock: Clock, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "v.db"
    monkeypatch.setenv(keys.KEY_ENV, RAW_KEY)  # a raw 256-bit key skips the passphrase derivation
    with Vault(db, clock=clock, embedder=False) as vault:
        vault.remember("note", "n", "from the environment")
        assert vault.encrypted and vault.stats().sqlite_driver == "sqlcipher"
    key_file = tmp_path / "vault.key"
    key_file.write_text(RAW_KEY + "\n")  # editors add a newline: it is not part of the key
    key_file.chmod(0o600)
    monkeypatch.delenv(keys.KEY_ENV)
    monkeypatch.setenv(keys.KEY_FILE_ENV, str(key_file))
    with Vault(db, clock=clock, embedder=False) as vault:
        assert vault.get_entity(1).content == "from the environment"
    monkeypatch.setenv(keys.KEY_ENV, RAW_KEY)
    with pytest.raises(SetupError, match="set only one"):
        Vault(db, clock=clock, embedder=False)
    monkeypatch.delenv(keys.KEY_ENV)
    if os.name == "posix":
        key_file.chmod(0o644)
        with pytest.raises(SetupError, match="accessible to other users.*chmod 600"):
            Vault(db, clock=clock, embedder=False)
        key_file.chmod(0o600)
    key_file.write_text("\n")
    with pytest.raises(InvalidInput, match="non-empty"):
        Vault(db, clock=clock, embedder=False)
    monkeypatch.setenv(keys.KEY_FILE_ENV, str(tmp_path / "missing.key"))
    with pytest.raises(SetupError, match="cannot read the key file"):
        Vault(db, clock=clock, embedder=False)


@pytest.mark.parametrize("bad", ["", "x'abc'", "x'" + "zz" * 32 + "'", "nul\x00inside", 42])
def test_a_malformed_key_is_refused(tmp_path: Path, bad: Any) -> None:
    with pytest.raises(InvalidInput, match="key"):
        Vault(tmp_path / "v.db", embedder=False, key=bad)
    assert not (tmp_path / "v.db").exists()


def test_a_key_needs_the_sqlcipher_driver(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PERSEUS_VAULT_SQLITE", "stdlib")
    with pytest.raises(SetupError, match="needs the sqlcipher driver"):
        Vault(tmp_path / "v.db", embedder=False, key=KEY)
    monkeypatch.setenv("PERSEUS_VAULT_SQLITE", "sqlcipher")  # pinned, and no key: a plaintext vault
    with Vault(tmp_path / "v.db", embedder=False) as vault:
        assert vault.stats().sqlite_driver == "sqlcipher" and not vault.encrypted
    assert (tmp_path / "v.db").read_bytes()[:16] == b"SQLite format 3\x00"


# --- rekey and backup ---------------------------------------------------------------------------


def test_rekey_keeps_everything_and_retires_the_old_key(tmp_path: Path, clock: Clock) -> None:
    db = tmp_path / "v.db"
    with open_vault(db, clock, KEY) as vault:
        fill(vault)
        before = answers(vault)
        other = threading.Thread(target=lambda: vault.recall("ledger"))  # a pool connection on another thread
        other.start()
        other.join()
        vault.export_jsonl(str(tmp_path / "before.jsonl"))  # every memory, version, link and counter
        vault.rekey(RAW_KEY)
        vault.export_jsonl(str(tmp_path / "after.jsonl"))
        assert answers(vault) == before  # the open vault goes on, now under the new key
    assert (tmp_path / "after.jsonl").read_bytes() == (tmp_path / "before.jsonl").read_bytes()  # nothing lost
    with pytest.raises(SetupError, match="wrong encryption key"):
        open_vault(db, clock, KEY)
    with open_vault(db, clock, RAW_KEY) as vault:
        assert answers(vault) == before
        assert vault.check().ok
        vault.remember("note", "after", "written after the rekey")
    with open_vault(db, clock, RAW_KEY) as vault:
        assert vault.recall("written after the rekey").items[0].key == "after"
    assert found_in(db) == {}


def found_in(db: Path) -> dict[str, list[str]]:
    hits: dict[str, list[str]] = {}
    for path in (db, Path(f"{db}-wal"), Path(f"{db}-shm")):
        if path.exists():
            data = path.read_bytes().lower()
            for name, word in MARKERS.items():
                if word.encode() in data:
                    hits.setdefault(name, []).append(path.name)
    return hits


def test_rekey_refuses_a_plaintext_vault_and_a_bad_new_key(tmp_path: Path, clock: Clock) -> None:
    with open_vault(tmp_path / "p.db", clock, None) as vault:
        with pytest.raises(VaultError, match="not encrypted"):
            vault.rekey(KEY)
    with open_vault(tmp_path / "e.db", clock, KEY) as vault:
        vault.remember("note", "n", "kept")
        with pytest.raises(InvalidInput, match="new_key: must be at least 1 character"):
            vault.rekey("")
        assert vault.get_entity(1).content == "kept"
    with open_vault(tmp_path / "e.db", clock, KEY) as vault:  # the old key still works: nothing changed
        assert vault.get_entity(1).content == "kept"


def test_rekey_is_refused_while_another_process_uses_the_vault(tmp_path: Path, clock: Clock) -> None:
    """Another vault on the same file stands for another process: it would keep the old key."""
    db = tmp_path / "v.db"
    with open_vault(db, clock, KEY) as vault, open_vault(db, clock, KEY) as other:
        vault.remember("note", "n", "kept")
        assert other.get_entity(1).content == "kept"
        with pytest.raises(VaultError, match="another connection is using the vault"):
            vault.rekey(RAW_KEY)
        assert vault.get_entity(1).content == "kept" and other.get_entity(1).content == "kept"
    with open_vault(db, clock, KEY) as vault:  # nothing changed: the old key still opens it, in WAL mode
        assert vault.get_entity(1).content == "kept"
        assert vault.engine.conn().execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_a_backup_of_an_encrypted_vault_is_encrypted(tmp_path: Path, clock: Clock) -> None:
    with open_vault(tmp_path / "v.db", clock, KEY) as vault:
        fill(vault)
        before = answers(vault)
        target = vault.backup(tmp_path / "copy.db")
    copy = Path(target)
    assert copy.read_bytes()[:16] != b"SQLite format 3\x00"
    assert found_in(copy) == {}
    with pytest.raises(SetupError, match="is encrypted"):
        open_vault(copy, clock, None)
    with open_vault(copy, clock, KEY) as restored:
        assert answers(restored) == before and restored.check().ok


def test_a_plaintext_export_of_an_encrypted_vault_is_never_readable_by_others(
    tmp_path: Path, clock: Clock
) -> None:
    folder = tmp_path / "exports"
    folder.mkdir()
    (folder / "shared.jsonl").write_text("")
    (folder / "shared.jsonl").chmod(0o644)
    (folder / "group.jsonl").write_text("")
    (folder / "group.jsonl").chmod(0o640)
    with open_vault(tmp_path / "v.db", clock, RAW_KEY) as vault:
        fill(vault)
        for name in ("new.jsonl", "shared.jsonl", "group.jsonl"):
            vault.export_jsonl(folder / name)
    assert modes(folder) == {"group.jsonl": 0o600, "new.jsonl": 0o600, "shared.jsonl": 0o600}
    assert {name for names in found(folder).values() for name in names} == {
        "group.jsonl",
        "new.jsonl",
        "shared.jsonl",
    }


HOLDER = """
import sys
from perseus_vault_core import Vault
vault = Vault(sys.argv[1], key=sys.argv[2], embedder=False)
vault.remember("decision", "db", "We chose SQLite for the ledger")
print("ready", flush=True)
sys.stdin.readline()
vault.close()
"""


@contextmanager
def held_elsewhere(db: Path, key: str) -> Iterator[None]:
    """The vault open with ``key`` in another process (its -wal and -shm beside the file) until the block ends:
    this process holds no connection to it, so it may read its bytes without dropping anyone's locks."""
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(db), key], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "ready"
        yield
    finally:
        assert holder.stdin is not None
        holder.stdin.close()
        assert holder.wait(60) == 0


def test_a_wrong_key_never_touches_a_vault_that_is_open_elsewhere(tmp_path: Path, clock: Clock) -> None:
    """With a -wal file present SQLite would open the WAL before it checks the key; the key is proven first."""
    db = tmp_path / "v.db"
    with held_elsewhere(db, RAW_KEY):
        before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
        assert {"v.db-wal", "v.db-shm"} <= set(before)
        for wrong in ("not the key", "x'" + "11" * 32 + "'"):
            with pytest.raises(SetupError, match="wrong encryption key"):
                open_vault(db, clock, wrong)
            assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before
        with open_vault(db, clock, RAW_KEY) as vault:
            assert vault.get_entity(1).content.startswith("We chose SQLite")


def test_a_wrong_key_beside_an_open_vault_of_this_process_is_refused_by_sqlcipher(
    tmp_path: Path, clock: Clock
) -> None:
    """The file is held here: its bytes are never read outside SQLite (that would drop the open vault's locks),
    and the held connection keeps the wrong one from checkpointing, so SQLCipher's own refusal is safe."""
    db = tmp_path / "v.db"
    with open_vault(db, clock, RAW_KEY) as vault:
        fill(vault)
        for wrong in ("not the key", "x'" + "11" * 32 + "'"):
            with pytest.raises(SetupError, match="wrong encryption key"):
                open_vault(db, clock, wrong)
        with pytest.raises(SetupError, match="is encrypted"):
            open_vault(db, clock, None)
        assert vault.get_entity(1).content.startswith("We chose SQLite") and vault.check().ok


def test_a_key_that_cannot_be_checked_is_refused_not_trusted(
    tmp_path: Path, clock: Clock, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "v.db"
    with held_elsewhere(db, RAW_KEY):
        before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}

        def no_temporary_folder(*args: Any, **kwargs: Any) -> Any:
            raise PermissionError(13, "Permission denied")

        monkeypatch.setattr(file_checks.tempfile, "TemporaryDirectory", no_temporary_folder)
        with pytest.raises(VaultError, match="cannot check the key.*Permission denied"):
            open_vault(db, clock, "x'" + "11" * 32 + "'")
        assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before


def test_connections_after_the_first_need_no_private_key_check(
    tmp_path: Path, clock: Clock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The open connection proves the key: threads and index builds do not derive it twice."""
    proofs: list[str] = []
    prove = file_checks.prove_key
    monkeypatch.setattr(
        connection, "prove_key", lambda path, *key: (proofs.append(path), prove(path, *key))[1]
    )
    with open_vault(tmp_path / "v.db", clock, KEY) as vault:
        fill(vault)
        assert vault.wait_for_keyword_index() and vault.wait_for_vector_index()
        worker = threading.Thread(target=lambda: vault.recall("ledger"))
        worker.start()
        worker.join()
        with open_vault(tmp_path / "v.db", clock, KEY) as twin:  # another Vault object, the same file and key
            assert twin.get_entity(1).content.startswith("We chose SQLite")
    assert len(proofs) == 1  # the vault's first connection, before any -wal file existed


# --- the command line and the MCP server --------------------------------------------------------


def cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_cli_rekey(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("PERSEUS_VAULT_EMBEDDER", "none")
    db = str(tmp_path / "v.db")
    monkeypatch.setenv(keys.KEY_ENV, KEY)
    assert cli(capsys, "--db", db, "remember", "decision", "db", f"SQLite {MARKERS['content']}")[0] == 0
    code, _, err = cli(capsys, "--db", db, "rekey")
    assert code == 1 and err.count("\n") == 1 and "PERSEUS_VAULT_NEW_KEY or pass --new-key-file" in err
    new_key = tmp_path / "new.key"
    new_key.write_text("the new passphrase\n")
    new_key.chmod(0o600)
    code, out, err = cli(capsys, "--db", db, "rekey", "--new-key-file", str(new_key))
    assert code == 0 and "rekeyed" in out, err
    code, _, err = cli(capsys, "--db", db, "stats")
    assert code == 1 and err.startswith("error: wrong encryption key") and err.count("\n") == 1
    monkeypatch.delenv(keys.KEY_ENV)
    monkeypatch.setenv(keys.KEY_FILE_ENV, str(new_key))
    code, out, _ = cli(capsys, "--db", db, "--json", "stats")
    assert code == 0 and '"encrypted":true' in out
    monkeypatch.setenv("PERSEUS_VAULT_NEW_KEY", RAW_KEY)  # the other source of the new key
    assert cli(capsys, "--db", db, "rekey")[0] == 0
    monkeypatch.delenv(keys.KEY_FILE_ENV)
    monkeypatch.setenv(keys.KEY_ENV, RAW_KEY)
    code, out, _ = cli(capsys, "--db", db, "recall", MARKERS["content"])
    assert code == 0 and MARKERS["content"] in out
    monkeypatch.delenv(keys.KEY_ENV)
    code, _, err = cli(capsys, "--db", db, "recall", "SQLite")
    assert code == 1 and "is encrypted" in err
    plain = str(tmp_path / "plain.db")
    assert cli(capsys, "--db", plain, "remember", "note", "n", "plain")[0] == 0
    code, _, err = cli(capsys, "--db", plain, "rekey")
    assert code == 1 and "not encrypted" in err
    assert found_in(Path(db)) == {}


def test_cli_in_a_real_process_reads_the_key_file(tmp_path: Path) -> None:
    key_file = tmp_path / "vault.key"
    key_file.write_text(KEY)
    key_file.chmod(0o600)
    env = {**os.environ, keys.KEY_FILE_ENV: str(key_file), "PERSEUS_VAULT_EMBEDDER": "none"}
    env.pop(keys.KEY_ENV, None)
    db = str(tmp_path / "v.db")

    def run(*argv: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "perseus_vault_core.cli", "--db", db, *argv],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )

    assert run("remember", "note", "n", f"kept in a {MARKERS['content']}").returncode == 0
    result = run("recall", MARKERS["content"])
    assert result.returncode == 0 and MARKERS["content"] in result.stdout, result.stderr
    assert found_in(Path(db)) == {}


@pytest.mark.slow  # starts the MCP server twice (about 5 s on a loaded machine)
def test_mcp_server_over_an_encrypted_vault_takes_the_key_from_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mcp import Client

    from perseus_vault_integrations.mcp import VaultClient, build_server

    monkeypatch.setenv("PERSEUS_VAULT_EMBEDDER", "none")
    monkeypatch.setenv(keys.KEY_ENV, KEY)
    db = tmp_path / "mcp.db"

    async def session() -> None:
        async with Client(build_server(str(db))) as client:
            tools = (await client.list_tools()).tools
            # No tool takes a key, and none changes it: keys come from the environment only.
            assert not [t.name for t in tools if "rekey" in t.name or "encrypt" in t.name]
            for tool in tools:
                names = set(tool.input_schema.get("properties", {}))
                assert not names & {"new_key", "passphrase", "encryption_key", "key_file", "cipher"}, (
                    tool.name
                )
        async with VaultClient(build_server(str(db))) as vault:
            await vault.remember("decision", "db", f"SQLite in one {MARKERS['content']} file")
            result = await vault.recall(MARKERS["content"])
            assert [i.key for i in result.items] == ["db"]

    anyio.run(session)
    assert found_in(db) == {}
    monkeypatch.delenv(keys.KEY_ENV)
    with pytest.raises(SetupError, match="is encrypted"):
        Vault(db, embedder=False)
