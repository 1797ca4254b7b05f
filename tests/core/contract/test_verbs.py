"""The verb registry against the Python API: one params model per verb, and every signature agrees with it."""

from __future__ import annotations

import inspect
from typing import Any

import pytest
from pydantic import BaseModel
from pydantic_core import PydanticUndefined

from perseus_vault_core import Vault
from perseus_vault_core.contract.params import signatures
from perseus_vault_core.contract.verbs import ADMIN_VERBS, BY_NAME, PROFILES, VERBS, Verb, fields

# Arguments only Python can pass (functions), which no params model describes.
PYTHON_ONLY = {
    "community_summary": {"polish"},
    "embed": {"progress"},
    "import_jsonl": {"progress"},
    "reindex": {"progress"},
}
# Methods that are not verbs of the registry: the lifecycle, and what only Python callers use.
NOT_VERBS = {
    "close",
    "call",
    "recall_by_vector",
    "wait_for_keyword_index",
    "wait_for_vector_index",
    "memory_unbind",
}


def _method(verb: Verb) -> Any:
    return getattr(Vault, verb.name)


@pytest.mark.parametrize("verb", VERBS + ADMIN_VERBS, ids=lambda v: v.name)
def test_each_verb_takes_exactly_its_models_fields(verb: Verb) -> None:
    named, options = signatures.signature_fields(_method(verb))
    taken = set(named) | options
    expected = set(fields(verb)) | PYTHON_ONLY.get(verb.name, set())
    assert taken == expected, f"{verb.name}: missing {expected - taken}, not in the model {taken - expected}"
    assert not set(named) & options, f"{verb.name}: {set(named) & options} both named and in **options"


@pytest.mark.parametrize("verb", VERBS + ADMIN_VERBS, ids=lambda v: v.name)
def test_named_defaults_are_the_models(verb: Verb) -> None:
    """A default written in a signature must be the model's (None means 'not given': the model decides)."""
    named, _ = signatures.signature_fields(_method(verb))
    model: type[BaseModel] = verb.params
    for name, default in named.items():
        if name in PYTHON_ONLY.get(verb.name, set()) or default is inspect.Parameter.empty or default is None:
            continue
        field = model.model_fields[name]
        assert field.default is not PydanticUndefined, f"{verb.name}({name}=...) defaults a required field"
        assert default == field.default, (
            f"{verb.name}({name}={default!r}) but the model says {field.default!r}"
        )


def test_every_public_method_is_a_verb_or_known() -> None:
    public = {name for name, _ in inspect.getmembers(Vault, inspect.isfunction) if not name.startswith("_")}
    verbs = {v.name for v in VERBS + ADMIN_VERBS}
    assert public - verbs == NOT_VERBS, f"unlisted: {public - verbs - NOT_VERBS}; gone: {NOT_VERBS - public}"


def test_the_operators_verbs_are_in_no_tool_profile() -> None:
    admin = {v.name for v in ADMIN_VERBS}
    assert not admin & set(BY_NAME)
    assert all(not admin & names for names in PROFILES.values())
    assert len({v.name for v in VERBS + ADMIN_VERBS}) == len(VERBS) + len(ADMIN_VERBS)


# Named arguments Python may pass in more shapes than the wire (a path object, an open file, any iterable),
# which the facade turns into the model's type before validating.
WIDER = {
    ("import_jsonl", "source"),
    ("export_jsonl", "target"),
    ("memory_import", "folder"),
    ("memory_export", "folder"),
    ("backup", "target"),
    ("rekey", "new_key"),
    ("remember_many", "items"),
    ("remember_conversation", "messages"),
}


@pytest.mark.parametrize("verb", VERBS + ADMIN_VERBS, ids=lambda v: v.name)
def test_named_arguments_have_their_models_types(verb: Verb) -> None:
    """A time is annotated as the model takes it (unix ms, ISO text or a datetime), a mode as its Literal..."""
    import typing

    method = _method(verb)
    hints = typing.get_type_hints(method)
    named, _ = signatures.signature_fields(method)
    for name in named:
        if name in PYTHON_ONLY.get(verb.name, set()) or (verb.name, name) in WIDER:
            continue
        field = verb.params.model_fields[name]
        want = set(signatures.field_text(field, set()).split(" | "))
        have = set(signatures.type_text(hints[name], set()).split(" | "))
        # None in the signature may only mean "not given" (its default), and the model's own None must be there
        assert "None" in have or "None" not in want, (
            f"{verb.name}({name}) refuses None, which the model takes"
        )
        have.discard("None"), want.discard("None")
        assert have == want, (
            f"{verb.name}({name}: {' | '.join(sorted(have))}) but the model takes {' | '.join(sorted(want))}"
        )
