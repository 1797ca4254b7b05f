"""The registry of verbs (perseus_vault_core/verbs.py): each verb is a ``Vault`` method taking its
params model's fields, and the operator's verbs are offered by no MCP tool profile."""

from __future__ import annotations

import inspect

import pytest

from perseus_vault_core import Vault
from perseus_vault_core.verbs import ADMIN_VERBS, BY_NAME, PROFILES, VERBS, Verb, fields


@pytest.mark.parametrize("verb", VERBS + ADMIN_VERBS, ids=lambda v: v.name)
def test_every_verb_is_a_vault_method_taking_its_fields(verb: Verb) -> None:
    method = getattr(Vault, verb.name)
    parameters = dict(inspect.signature(method).parameters)
    parameters.pop("self")
    takes_more = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values())
    named = {n for n, p in parameters.items() if p.kind is not inspect.Parameter.VAR_KEYWORD}
    wanted = set(fields(verb))
    assert takes_more or wanted <= named, wanted - named
    # Anything else it takes is optional, and for Python callers only (a progress callback).
    required = {n for n, p in parameters.items() if p.default is inspect.Parameter.empty
                and p.kind not in (inspect.Parameter.VAR_KEYWORD, inspect.Parameter.VAR_POSITIONAL)}
    assert required <= wanted, required - wanted


def test_the_operators_verbs_are_in_no_tool_profile() -> None:
    admin = {v.name for v in ADMIN_VERBS}
    assert not admin & set(BY_NAME)
    assert all(not admin & names for names in PROFILES.values())
    assert len({v.name for v in VERBS + ADMIN_VERBS}) == len(VERBS) + len(ADMIN_VERBS)
