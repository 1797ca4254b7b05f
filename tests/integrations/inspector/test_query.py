"""What a view is asked (inspector/query.py): the query parameters read with the types a view needs, each
unreadable one refused as InvalidInput naming it; the scope, fixed when the server is bound; and the
context's answers kept until the next write."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from perseus_vault_core import InvalidInput, Vault
from perseus_vault_integrations.inspector.layout import Scope
from perseus_vault_integrations.inspector.query import Ask, Context
from perseus_vault_integrations.inspector.reports import Kept, Reports

UNBOUND = Scope()


def refused(params: dict[str, str], read: str, *args: object, bound: Scope = UNBOUND) -> InvalidInput:
    with pytest.raises(InvalidInput) as caught:
        getattr(Ask(params, bound), read)(*args)
    return caught.value


def test_a_blank_parameter_is_absent() -> None:
    ask = Ask({"q": "  ", "type": "fact", "category": ""}, UNBOUND)
    assert ask.text("q") is None and ask.text("category") is None and ask.text("nope") is None
    assert ask.text("type") == "fact"
    assert ask.filters() == {
        "agent_id": None,
        "workspace_hash": None,
        "type": "fact",
        "category": None,
        "topic_path": None,
    }


def test_a_whole_number_is_read_within_its_bounds_and_refused_otherwise() -> None:
    ask = Ask({"limit": "25", "depth": " 3 "}, UNBOUND)
    assert ask.number("limit", 10, 1, 100) == 25 and ask.number("depth", 2, 1, 4) == 3
    assert ask.number("offset", 7, 0, 100) == 7  # absent: the default, even outside no bound
    assert ask.number("limit", 10, 25, 25) == 25  # the bounds are included
    error = refused({"limit": "abc"}, "number", "limit", 10, 1, 100)
    assert error.field == "limit" and "whole number" in error.message and "'abc'" in error.message
    error = refused({"depth": "5"}, "number", "depth", 2, 1, 4)
    assert error.field == "depth" and error.message == "must be from 1 to 4"
    assert refused({"depth": "0"}, "number", "depth", 2, 1, 4).field == "depth"
    assert refused({"limit": "2.5"}, "number", "limit", 10, 1, 100).field == "limit"
    long = refused({"limit": "x" * 500}, "number", "limit", 10, 1, 100)
    assert len(long.message) < 100  # what was sent is quoted cut short


def test_a_real_number_and_a_choice() -> None:
    assert Ask({"w": "0.25"}, UNBOUND).real("w") == 0.25 and Ask({}, UNBOUND).real("w") is None
    error = refused({"w": "heavy"}, "real", "w")
    assert error.field == "w" and "must be a number" in error.message
    assert Ask({}, UNBOUND).pick("mode", ("auto", "fts5"), "auto") == "auto"
    assert Ask({"mode": "fts5"}, UNBOUND).pick("mode", ("auto", "fts5"), "auto") == "fts5"
    error = refused({"mode": "FTS5"}, "pick", "mode", ("auto", "fts5"), "auto")
    assert error.field == "mode" and error.message == "must be one of auto, fts5"


@pytest.mark.parametrize(
    ("value", "on"),
    [(None, False), ("", False), ("0", False), ("false", False), ("off", False), ("1", True), ("yes", True)],
)
def test_a_flag_is_on_unless_absent_or_said_off(value: str | None, on: bool) -> None:
    assert Ask({} if value is None else {"full": value}, UNBOUND).flag("full") is on


def test_an_instant_is_milliseconds_when_digits_else_text_for_the_vault() -> None:
    ask = Ask({"at": "1767225600000", "iso": "2026-01-01T12:00:00Z", "blank": " "}, UNBOUND)
    assert ask.instant("at") == 1_767_225_600_000
    assert ask.instant("iso") == "2026-01-01T12:00:00Z" and ask.instant("blank") is None


def test_the_scope_comes_from_the_parameters_unless_the_server_is_bound() -> None:
    assert Ask({"agent_id": "ops", "workspace_hash": "crm"}, UNBOUND).scope == Scope("ops", "crm")
    assert Ask({"agent_id": " "}, UNBOUND).scope == Scope()
    bound = Scope("sales", "crm", bound=True)
    assert Ask({}, bound).scope is bound
    assert Ask({"agent_id": "sales", "workspace_hash": "crm"}, bound).scope is bound  # the same: fine
    for name, other in (("agent_id", "ops"), ("workspace_hash", "other")):
        with pytest.raises(InvalidInput) as caught:
            Ask({name: other}, bound)
        assert caught.value.field == name and "bound to" in caught.value.message


@pytest.fixture
def context(tmp_path: Path) -> Iterator[Context]:
    reports, clusters = Reports(), Reports()
    with Vault(tmp_path / "q.db", embedder=False) as vault:
        yield Context(vault, UNBOUND, False, "csrf", reports, Kept(), clusters)
    reports.close()
    clusters.close()


def test_counts_and_stats_are_read_again_after_a_write_only(context: Context) -> None:
    vault = context.vault
    assert context.stamp(UNBOUND) is None  # nothing written yet
    first = vault.remember("fact", "a", "Alpha", agent_id="ops")
    assert context.stamp(UNBOUND) == (first.id, first.version)
    assert context.stamp(Scope("sales")) is None  # the stamp is the scope's own latest write
    calls = []
    real = vault.counts

    def counted(**kw: object) -> object:
        calls.append(kw)
        return real(**kw)

    vault.counts = counted  # type: ignore[method-assign]
    assert context.counts(Scope("ops"), top=5).total == 1
    assert context.counts(Scope("ops"), top=5).total == 1
    assert calls == [{"agent_id": "ops", "top": 5}]  # kept, and None filters are not passed
    vault.remember("fact", "b", "Beta", agent_id="ops")
    assert context.counts(Scope("ops"), top=5).total == 2 and len(calls) == 2
    assert context.stats().entities == 2
