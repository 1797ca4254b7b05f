"""cli/format.py: what a person reads of each command's result (a memory on one line, a recall, a page, the
counts, check and reindex, the stats' sizes), and ``emit``, which prints it or its JSON with no control
character a terminal would act on."""

from __future__ import annotations

import argparse
import json
from types import SimpleNamespace
from typing import Any

import pytest

from perseus_vault_core import Vault
from perseus_vault_core.cli import format as fmt
from perseus_vault_core.contract.models import CheckReport, ReindexReport

NO_ARGS = argparse.Namespace()


@pytest.mark.parametrize(
    ("n", "said"),
    [
        (0, "0 bytes"),
        (999, "999 bytes"),
        (1_000, "1.0 KB"),
        (156_000, "156 KB"),
        (99_949_999, "99.9 MB"),
        (2_700_000_000, "2.7 GB"),
        (512_000_000_000, "512 GB"),
    ],
)
def test_size_counts_in_powers_of_a_thousand(n: int, said: str) -> None:
    assert fmt.size(n) == said


def test_a_memory_is_one_line_whatever_its_names_hold(vault: Vault) -> None:
    stored = vault.remember("note", "k", "a first line\nand a second " + "long " * 40)
    e = stored.model_copy(update={"key": "two\nlines"})  # an older vault may hold a line break in a key
    line = fmt.entity_line(e)
    assert "\n" not in line
    assert line.startswith(f"#{e.id} [note/two\\nlines] ")
    assert line.endswith("…") and len(line.split(": ", 1)[1]) == 100


def test_an_entity_shows_its_version_status_times_and_text(vault: Vault) -> None:
    e = vault.remember("note", "k", "the body", summary="the summary")
    lines = fmt.entity(e).splitlines()
    assert lines[0] == f"#{e.id} [note/k] {e.type}, version 1, active"
    assert lines[1].startswith("true from ") and "created " in lines[1] and "expires" not in lines[1]
    assert lines[2:] == ["the summary", "the body"]


def test_a_recall_lists_its_matches_or_says_there_are_none(vault: Vault) -> None:
    assert fmt.recall(vault.recall("quokka"), NO_ARGS).startswith("no matches (")
    vault.remember("note", "q", "the quokka lives on Rottnest")
    vault.remember("note", "w", "the wombat digs burrows")
    result = vault.recall("quokka")
    lines = fmt.recall(result, NO_ARGS).splitlines()
    assert lines[0] == f"{len(result.items)} result(s), {result.search_mode}:"
    assert "[note/q]" in lines[1] and "quokka lives" in lines[1]
    assert not any("wombat" in line for line in lines)


def test_a_page_ends_with_its_cursor_or_its_end(vault: Vault) -> None:
    for i in range(3):
        vault.remember("note", f"k{i}", f"memory {i}")
    first = vault.scan(limit=2)
    shown = fmt.scan(first, NO_ARGS).splitlines()
    assert len(shown) == 3 and shown[-1] == f"next cursor: {first.next_cursor}"
    last = vault.scan(cursor=first.next_cursor, limit=2)
    assert fmt.scan(last, NO_ARGS).splitlines()[-1] == "(end)"


def test_counts_list_each_grouping(vault: Vault) -> None:
    vault.remember("note", "a", "one")
    vault.remember("fact", "b", "two", agent_id="ann")
    lines = fmt.counts(vault.counts(), NO_ARGS).splitlines()
    assert lines[0] == "2 memories"
    assert lines[1].startswith("status: ") and "active 2" in lines[1]
    assert (
        lines[2] == "scope (agent/workspace): -/- 1, ann/- 1"
        or lines[2] == "scope (agent/workspace): ann/- 1, -/- 1"
    )
    assert "note 1" in lines[4] and "fact 1" in lines[4]


def test_check_and_reindex_say_ok_or_list_the_problems() -> None:
    assert fmt.check(CheckReport(ok=True, problems=[]), NO_ARGS) == "ok"
    assert fmt.check(CheckReport(ok=False, problems=["a", "b"]), NO_ARGS) == "problems:\n- a\n- b"
    assert fmt.reindex(ReindexReport(ok=True, problems=[]), NO_ARGS) == "reindexed; check ok"
    judged = ReindexReport(ok=False, problems=["x"], relations_judged=1234)
    assert (
        fmt.reindex(judged, NO_ARGS)
        == "reindexed; relations judged for 1,234 memories; problems remain:\n- x"
    )


def test_a_line_template_takes_a_dict_or_a_model_and_keeps_names_on_one_line() -> None:
    show = fmt.line("forgot {category}/{key} (#{id})")
    assert show({"category": "note", "key": "a\nb", "id": 3}, NO_ARGS) == "forgot note/a\\nb (#3)"
    assert show(SimpleNamespace(category="c", key="k", id=4), NO_ARGS) == "forgot c/k (#4)"


def test_memory_files_are_listed_or_said_to_be_none() -> None:
    assert fmt.memory_files(SimpleNamespace(files=[]), NO_ARGS) == "no memory files"
    files = [SimpleNamespace(file="people", entries=2, sections=["Ann", "Bob"])]
    assert fmt.memory_files(SimpleNamespace(files=files), NO_ARGS) == "people  2 entries  [Ann, Bob]"


def test_emit_prints_the_text_without_terminal_controls(capsys: pytest.CaptureFixture[str]) -> None:
    fmt.emit(argparse.Namespace(json=False), "red \x1b[31m\r\nnext", lambda v, a: str(v))
    assert capsys.readouterr().out == "red \\x1b[31m\nnext\n"


def test_emit_prints_nothing_for_nothing(capsys: pytest.CaptureFixture[str]) -> None:
    fmt.emit(argparse.Namespace(json=False), "", lambda v, a: "")
    assert capsys.readouterr().out == ""


def test_emit_prints_a_model_or_a_value_as_json(capsys: pytest.CaptureFixture[str]) -> None:
    args = argparse.Namespace(json=True)
    fmt.emit(args, CheckReport(ok=False, problems=["bell\x07 \x85"]), fmt.check)
    assert json.loads(capsys.readouterr().out) == {"ok": False, "problems": ["bell\x07 \x85"]}
    value: Any = {"n": 1, "text": "ключ"}
    fmt.emit(args, value, fmt.check)
    out = capsys.readouterr().out
    assert "ключ" in out and json.loads(out) == value


def test_prepare_with_nothing_to_inject_says_why_on_stderr(capsys: pytest.CaptureFixture[str]) -> None:
    assert fmt.prepare(SimpleNamespace(markdown=""), NO_ARGS) == ""
    assert capsys.readouterr().err.strip() == fmt.NOTHING_FOR_THIS_TURN
    assert fmt.prepare(SimpleNamespace(markdown="## Memory\n- a"), NO_ARGS) == "## Memory\n- a"
    assert capsys.readouterr().err == ""
