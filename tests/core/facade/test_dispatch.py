"""``Vault.call`` and facade/dispatch.py: every verb has its one function below, and a call takes the model its
caller validated (the MCP server and the CLI validate once), refusing another verb's model or an unknown extra."""

from __future__ import annotations

import io

import pytest

from perseus_vault_core import InvalidInput, Vault
from perseus_vault_core.contract.params import (
    EntityParams,
    ExportParams,
    PrepareParams,
    RecallParams,
    validate,
)
from perseus_vault_core.contract.verbs import ADMIN_VERBS, VERBS
from perseus_vault_core.facade import dispatch


def test_every_verb_has_its_one_function_below_and_its_model() -> None:
    names = {v.name for v in VERBS + ADMIN_VERBS} | {"memory_unbind"}
    assert set(dispatch.WORK) == names == set(dispatch.MODELS)
    assert dispatch.EXTRAS["community_summary"] == {"polish"} and dispatch.EXTRAS["recall"] == {
        "only",
        "vector",
    }
    assert dispatch.EXTRAS["import_jsonl"] == {"progress", "lines"} and not dispatch.EXTRAS["get_entity"]


def test_a_call_with_a_validated_model_answers_as_the_verb_method_does(vault: Vault) -> None:
    made = vault.remember("note", "db", "We chose SQLite for the vault.")
    assert vault.call("get_entity", EntityParams(id=made.id)) == vault.get_entity(made.id)
    asked = validate(RecallParams, {"query": "sqlite", "reinforce": False})
    assert vault.call("recall", asked) == vault.recall("sqlite", reinforce=False)
    block = vault.call(
        "context", validate(PrepareParams, {"context": "which database?"})
    )  # an alias of prepare
    assert block == vault.prepare("which database?")
    out = io.StringIO()
    lines = vault.call(
        "export_jsonl", validate(ExportParams, {"target": "-"}), stream=out
    )  # "-": the stream given
    assert lines == len(out.getvalue().splitlines()) and "We chose SQLite" in out.getvalue()


def test_a_call_refuses_an_unknown_verb_another_verb_s_model_and_an_unknown_extra(vault: Vault) -> None:
    made = vault.remember("note", "k", "text")
    p = EntityParams(id=made.id)
    for verb, params, extras, field in (
        ("nothing", p, {}, "verb"),
        (None, p, {}, "verb"),
        ("recall", p, {}, "params"),
        ("get_entity", {"id": 1}, {}, "params"),
        ("get_entity", p, {"progress": print}, "progress"),
    ):
        with pytest.raises(InvalidInput) as caught:
            vault.call(verb, params, **extras)  # type: ignore[arg-type]
        assert caught.value.field == field
    assert vault.get_entity(made.id).status == "active"


def test_a_call_checks_what_the_verb_method_checks_of_its_extras(vault: Vault) -> None:
    """An extra is checked in dispatch.run, for the verb method and a direct call alike; a subclass of the
    verb's model (which may carry more than it) is refused; nothing is written by a refused call."""
    vault.remember(category="fact", key="db", content="We use Postgres.")

    class Wider(RecallParams):
        pass

    with pytest.raises(InvalidInput, match="takes its validated RecallParams"):
        vault.call("recall", Wider(query="postgres"))
    with pytest.raises(InvalidInput, match="progress"):
        vault.call("reindex", validate(dispatch.MODELS["reindex"], {}), progress=5)
    with pytest.raises(InvalidInput, match="progress"):
        vault.embed(progress=5)  # type: ignore[arg-type]
    with pytest.raises(InvalidInput, match="vector"):
        vault.call("recall", validate(RecallParams, {"query": ""}), vector=[0.0, 0.0])
    assert vault.stats().entities == 1
