"""The CLI with the bundled model: writes embed, recall defaults to hybrid, embed backfills."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from perseus_vault_core.cli.main import main


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_cli_remembers_with_vectors_and_recalls_hybrid(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    db = str(tmp_path / "cli.db")
    monkeypatch.delenv("PERSEUS_VAULT_EMBEDDER", raising=False)
    assert run(capsys, "remember", "decision", "storage", "We chose SQLite in WAL mode.", "--db", db)[0] == 0
    code, out, _ = run(capsys, "recall", "which database engine did we pick", "--db", db, "--json")
    result = json.loads(out)
    assert code == 0 and result["search_mode"] == "hybrid" and result["items"][0]["key"] == "storage"
    code, out, _ = run(capsys, "recall", "which database engine did we pick", "--mode", "dense", "--startup",
                       "--profile", "validity", "--db", db)
    assert code == 0 and "dense" in out and "actionability" in out and "valid" in out
    code, out, _ = run(capsys, "stats", "--db", db, "--json")
    assert json.loads(out)["embedding_coverage"] == 1.0


def test_cli_embed_backfills_a_keyword_only_vault(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    db = str(tmp_path / "cli.db")
    monkeypatch.setenv("PERSEUS_VAULT_EMBEDDER", "none")
    for i in range(3):
        assert run(capsys, "remember", "note", f"k{i}", f"note {i} about backups", "--db", db)[0] == 0
    assert json.loads(run(capsys, "stats", "--db", db, "--json")[1])["embedding_coverage"] == 0.0
    code, _, err = run(capsys, "embed", "--db", db)
    assert code == 1 and err.startswith("error:") and "without an embedder" in err
    monkeypatch.delenv("PERSEUS_VAULT_EMBEDDER")
    code, out, _ = run(capsys, "embed", "--db", db)
    assert code == 0 and "embedded 3 version(s)" in out
    assert json.loads(run(capsys, "stats", "--db", db, "--json")[1])["embedding_coverage"] == 1.0
