"""Small edges of what a person or an agent meets first: a misspelled argument named with its near name
(required ones too, and the CLI's options), the help of a --no-x switch, empty content, a --db that is not
a vault, and prepare when nothing applies."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from perseus_vault_core import InvalidInput, Vault
from perseus_vault_integrations.mcp import build_server

from .test_main import _clean_env, assert_one_line_error, cli, keyword_only  # noqa: F401  (fixtures)


def test_a_misspelled_required_argument_is_named_with_its_near_name(tmp_path: Path) -> None:
    with Vault(tmp_path / "v.db", embedder=False) as vault:
        for call, says in [
            (lambda: vault.recall(qury="x"), "qury: unknown argument (did you mean query?)"),  # type: ignore[call-arg]
            (
                lambda: vault.remember(category="a", key="b", contnet="x"),  # type: ignore[call-arg]
                "contnet: unknown argument (did you mean content?)",
            ),
            (
                lambda: vault.history(catgory="a", key="b"),  # type: ignore[call-arg]
                "catgory: unknown argument (did you mean category?)",
            ),
            (lambda: vault.get_entity(), "id: is required"),
        ]:  # type: ignore[call-arg]
            with pytest.raises(InvalidInput) as caught:
                call()
            assert str(caught.value) == says

        async def over_mcp() -> Any:
            async with Client(build_server(vault)) as client:
                return await client.call_tool("perseus_vault_recall", {"qury": "x"})

        answer = anyio.run(over_mcp)
        assert answer.is_error and answer.content[0].text == "qury: unknown argument (did you mean query?)"


def test_empty_content_is_refused_and_writes_nothing(tmp_path: Path) -> None:
    with Vault(tmp_path / "v.db", embedder=False) as vault:
        for content in ("", "  \n\t"):
            with pytest.raises(InvalidInput, match="^content: must hold some text"):
                vault.remember("note", "empty", content)
        with pytest.raises(InvalidInput, match=r"^items\.1\.content: must hold some text"):
            vault.remember_many(
                [
                    {"category": "n", "key": "a", "content": "fine"},
                    {"category": "n", "key": "b", "content": " "},
                ]
            )
        assert vault.scan().items == []
        folder = tmp_path / "obsidian"  # an imported memory file or note may be empty: kept, byte for byte
        (folder / "About Me").mkdir(parents=True)
        (folder / "About Me" / "Empty.md").write_text("", encoding="utf-8")
        (folder / "blank.md").write_text("", encoding="utf-8")
        report = vault.memory_import(str(folder))
        assert (report.files, report.notes) == (1, 1), report


def test_cli_names_a_misspelled_option_and_says_what_no_x_does(cli: Any, tmp_path: Path) -> None:  # noqa: F811
    db = str(tmp_path / "v.db")
    assert cli("--db", db, "remember", "note", "k", "a memory").code == 0
    said = assert_one_line_error(cli("--db", db, "recall", "memory", "--limt", "3"))
    assert (
        said == "error: unrecognized arguments: --limt 3 (did you mean --limit?) (see perseus-vault --help)"
    )
    said = assert_one_line_error(cli("--db", db, "recall", "memory", "--lim=3", "--mdoe", "fts5"))
    assert "(did you mean --limit for --lim=3, --mode for --mdoe?)" in said
    helped = cli("recall", "--help").out
    line = " ".join(helped[helped.index("--no-reinforce ") :].split("--fusion")[0].split())
    assert line.startswith("--no-reinforce Turns off (on by default): Count this retrieval")
    assert "on unless" not in line


def test_a_db_that_is_not_a_vault_says_so(cli: Any, tmp_path: Path) -> None:  # noqa: F811
    notes = tmp_path / "notes.json"
    notes.write_text('{"not": "a vault"}\n' * 100, encoding="utf-8")
    said = assert_one_line_error(cli("--db", str(notes), "stats"))
    assert (
        "is not a vault: it is neither a SQLite file nor an encrypted one" in said
        and "encrypted (or" not in said
    )
    random = (
        tmp_path / "random.db"
    )  # whole pages of noise: what an encrypted vault looks like without its key
    random.write_bytes(bytes((i * 7919 + 13) % 251 for i in range(4096)))
    assert "is encrypted" in assert_one_line_error(cli("--db", str(random), "stats"))


def test_prepare_prints_nothing_when_nothing_applies_and_says_why_on_stderr(cli: Any, tmp_path: Path) -> None:  # noqa: F811
    db = str(tmp_path / "v.db")
    assert (
        cli(
            "--db", db, "remember", "note", "k", "We chose SQLite.", "--recall-when", "choosing a database"
        ).code
        == 0
    )
    nothing = cli("--db", db, "prepare", "zzz qqq")
    assert (nothing.code, nothing.out, nothing.err) == (0, "", "No stored memory matches this turn.\n")
    something = cli("--db", db, "prepare", "we are choosing a database")
    assert something.out.startswith("## Memory for this turn") and something.err == ""


def test_another_applications_sqlite_file_is_not_a_vault(cli: Any, tmp_path: Path) -> None:  # noqa: F811
    import sqlite3

    path = tmp_path / "app.db"
    with sqlite3.connect(path) as other:
        other.execute("CREATE TABLE orders (id INTEGER PRIMARY KEY)")
    other.close()
    before = path.read_bytes()
    said = assert_one_line_error(cli("--db", str(path), "remember", "note", "k", "a memory"))
    assert "is not a vault: it is a SQLite database of another application (tables 'orders')" in said
    assert path.read_bytes() == before
