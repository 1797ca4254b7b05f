"""The commands that do more than hand their flags to the vault (perseus_vault_core/cli/admin.py): the
conversation commands, remember-conversation and conversation (keyword-only, like tests/core/cli/test_main.py),
and embed with the bundled model (writes embed, recall defaults to hybrid, embed backfills)."""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from perseus_vault_core.cli.main import main

from .test_main import _clean_env, assert_ok, assert_one_line_error, cli, db, keyword_only  # noqa: F401

CHAT = [
    {
        "speaker": "Caroline",
        "text": "I went to the LGBTQ support group yesterday.",
        "time": "2023-05-08T13:56:00Z",
    },
    {"speaker": "Melanie", "text": "That sounds great!\nHow did it go?", "time": 1_683_554_220_000},
    {"role": "user", "text": "What did Caroline do yesterday?", "id": "q1"},
]


def test_remember_a_jsonl_file_then_read_it_back(cli: Any, db: str, tmp_path: Path) -> None:  # noqa: F811
    source = tmp_path / "chat.jsonl"
    source.write_text(
        "\n".join(json.dumps(m) for m in CHAT[:2]) + "\n\n", encoding="utf-8"
    )  # blank lines are skipped
    out = assert_ok(cli("--db", db, "remember-conversation", "locomo-1", str(source))).lines()
    assert out == ["conversation locomo-1: 2 new, 0 updated, 0 unchanged turn(s); last turn 2"]
    lines = assert_ok(cli("--db", db, "conversation", "locomo-1")).lines()
    assert lines == [
        "#1 1 Caroline (2023-05-08T13:56Z): I went to the LGBTQ support group yesterday.",
        "#2 2 Melanie (2023-05-08T13:57Z): That sounds great! How did it go?",
    ]
    found = assert_ok(cli("--db", db, "--json", "recall", "support group")).json()
    assert found["items"][0]["summary"] == "Caroline" and found["items"][0]["key"] == "locomo-1#000001"


def test_a_json_array_from_stdin_and_the_turns_around_a_hit(
    cli: Any,
    db: str,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO(json.dumps(CHAT)))
    made = assert_ok(cli("--db", db, "--json", "remember_conversation", "s", "-")).json()
    assert [t["turn"] for t in made["turns"]] == [1, 2, 3] and made["created"] == 3
    monkeypatch.setattr(sys, "stdin", io.StringIO(json.dumps(CHAT[2:])))
    again = assert_ok(cli("--db", db, "remember-conversation", "s", "-")).lines()
    assert again == [
        "conversation s: 0 new, 0 updated, 1 unchanged turn(s); last turn 3"
    ]  # message id q1: no new turn
    around = assert_ok(
        cli("--db", db, "conversation", "s", "--around", "2", "--before", "1", "--after", "0")
    ).lines()
    assert around == [
        "  #1 1 Caroline (2023-05-08T13:56Z): I went to the LGBTQ support group yesterday.",
        "> #2 2 Melanie (2023-05-08T13:57Z): That sounds great! How did it go?",
        "(more from turn 3; 3 turns in all)",
    ]
    page = assert_ok(
        cli("--db", db, "--json", "conversation", "s", "--from-turn", "2", "--limit", "1")
    ).json()
    assert [t["turn"] for t in page["turns"]] == [2] and page["next_turn"] == 3 and page["total"] == 3
    assert (
        page["turns"][0]["entity"]["content"] == "That sounds great!\nHow did it go?"
    )  # JSON keeps the text as it is
    assert_ok(cli("--db", db, "forget", "3"))
    monkeypatch.setattr(sys, "stdin", io.StringIO(json.dumps(CHAT[2:])))
    kept = assert_ok(cli("--db", db, "remember-conversation", "s", "-")).lines()
    assert kept == [
        "conversation s: 0 new, 0 updated, 0 unchanged, 1 forgotten (left so) turn(s); last turn 3"
    ]


def test_scope_and_errors_are_one_line(cli: Any, db: str, tmp_path: Path) -> None:  # noqa: F811
    source = tmp_path / "chat.json"
    source.write_text(json.dumps(CHAT[:1]), encoding="utf-8")
    assert_ok(cli("--db", db, "remember-conversation", "s", str(source), "--agent-id", "alice"))
    assert assert_ok(cli("--db", db, "conversation", "s")).lines() == ["no turns in conversation 's'"]
    assert len(assert_ok(cli("--db", db, "conversation", "s", "--agent-id", "alice")).lines()) == 1
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"speaker": "a", "text": "fine"}\n{"speaker": "b", "text": ""}\n', encoding="utf-8")
    assert "messages.1.text: must not be empty" in assert_one_line_error(
        cli("--db", db, "remember-conversation", "s", str(bad))
    )
    bad.write_text('{"speaker": "a", "text": "fine"}\n{"speaker": \n', encoding="utf-8")
    assert "messages: line 2 is not valid JSON" in assert_one_line_error(
        cli("--db", db, "remember-conversation", "s", str(bad))
    )
    bad.write_text('[{"speaker": "a"', encoding="utf-8")
    assert "messages: is not a valid JSON array" in assert_one_line_error(
        cli("--db", db, "remember-conversation", "s", str(bad))
    )
    assert "file: cannot read" in assert_one_line_error(
        cli("--db", db, "remember-conversation", "s", str(tmp_path / "no"))
    )
    assert "session: must not contain '#'" in assert_one_line_error(
        cli("--db", db, "remember-conversation", "a#b", str(source))
    )
    assert "before: applies only with around" in assert_one_line_error(
        cli("--db", db, "conversation", "s", "--before", "2")
    )
    assert "around: no entity with id 99" in assert_one_line_error(
        cli("--db", db, "conversation", "s", "--around", "99")
    )
    assert "no vault" in assert_one_line_error(cli("--db", str(tmp_path / "none.db"), "conversation", "s"))
    assert not (tmp_path / "none.db").exists()  # reading never creates a vault


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_cli_remembers_with_vectors_and_recalls_hybrid(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    db = str(tmp_path / "cli.db")
    monkeypatch.delenv("PERSEUS_VAULT_EMBEDDER", raising=False)
    assert run(capsys, "remember", "decision", "storage", "We chose SQLite in WAL mode.", "--db", db)[0] == 0
    code, out, _ = run(capsys, "recall", "which database engine did we pick", "--db", db, "--json")
    result = json.loads(out)
    assert code == 0 and result["search_mode"] == "hybrid" and result["items"][0]["key"] == "storage"
    code, out, _ = run(
        capsys,
        "recall",
        "which database engine did we pick",
        "--mode",
        "dense",
        "--startup",
        "--profile",
        "validity",
        "--db",
        db,
    )
    assert code == 0 and "dense" in out and "actionability" in out and "valid" in out
    code, out, _ = run(capsys, "stats", "--db", db, "--json")
    assert json.loads(out)["embedding_coverage"] == 1.0


def test_cli_embed_backfills_a_keyword_only_vault(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
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
