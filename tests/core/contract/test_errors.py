"""contract/errors.py: the one error tree, each error also the builtin a Python caller would catch, and
InvalidInput naming the field to fix."""

from __future__ import annotations

import pytest

from perseus_vault_core.contract import errors
from perseus_vault_core.contract.errors import (
    Conflict,
    InvalidInput,
    NotFound,
    NotSupported,
    SetupError,
    StorageError,
    VaultError,
)


def test_invalid_input_names_the_field_and_the_message() -> None:
    error = InvalidInput("limit", "must be at least 1")
    assert error.field == "limit"
    assert error.message == "must be at least 1"
    assert str(error) == "limit: must be at least 1"
    assert error.args == ("limit: must be at least 1",)


def test_invalid_input_needs_a_field_and_a_message() -> None:
    with pytest.raises(TypeError):
        InvalidInput("limit")  # type: ignore[call-arg]


@pytest.mark.parametrize(
    ("error", "builtin"),
    [
        (InvalidInput("f", "m"), ValueError),
        (NotFound("no entity 7"), LookupError),
        (NotSupported("no such mode"), NotImplementedError),
        (SetupError("no extension loading"), RuntimeError),
    ],
)
def test_each_error_is_also_the_builtin_a_caller_would_catch(error: VaultError, builtin: type) -> None:
    with pytest.raises(builtin):
        raise error


@pytest.mark.parametrize("kind", [InvalidInput, NotFound, Conflict, NotSupported, StorageError, SetupError])
def test_every_error_is_a_vault_error(kind: type[VaultError]) -> None:
    error = kind("f", "m") if kind is InvalidInput else kind("what happened")
    with pytest.raises(VaultError):
        raise error
    assert not isinstance(error, KeyError)


def test_conflict_and_storage_errors_are_no_builtin_errors() -> None:
    # a caller catching ValueError or LookupError must not swallow a failed database or a refused state
    for kind in (Conflict, StorageError):
        assert not issubclass(kind, (ValueError, LookupError, RuntimeError, NotImplementedError))


def test_the_tree_exports_exactly_its_errors() -> None:
    assert sorted(errors.__all__) == sorted(
        ["Conflict", "InvalidInput", "NotFound", "NotSupported", "SetupError", "StorageError", "VaultError"]
    )
    for name in errors.__all__:
        kind = getattr(errors, name)
        assert issubclass(kind, VaultError)
    assert VaultError.__bases__ == (Exception,)
