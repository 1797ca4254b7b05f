"""The API's edge: one error tree out, whatever broke beneath a verb; and the argument helpers."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, ConfigDict

from perseus_vault_core import InvalidInput, NotFound, StorageError
from perseus_vault_core.facade.edge import edge, given, listed, path_text
from perseus_vault_core.storage import driver_errors

pytestmark = pytest.mark.both_backends  # the contract suite: SQLite and PostgreSQL (tests/conftest.py)


class _Strict(BaseModel):
    model_config = ConfigDict(strict=True)
    n: int


def _raising(exc: BaseException) -> Any:
    @edge
    def verb() -> None:
        raise exc

    return verb


def test_a_driver_error_leaves_as_a_storage_error() -> None:
    error = next(e for e in driver_errors() if issubclass(e, Exception))
    with pytest.raises(StorageError, match="the database failed: disk I/O"):
        _raising(error("disk I/O error"))()


def test_a_postgres_driver_error_leaves_as_a_storage_error_once_the_driver_is_loaded() -> None:
    psycopg = pytest.importorskip("psycopg")  # a PostgreSQL vault loads it; a SQLite one never does
    with pytest.raises(StorageError, match="the database failed: server closed"):
        _raising(psycopg.OperationalError("server closed the connection"))()


@pytest.mark.parametrize(
    ("raised", "field"),
    [
        (RecursionError(), "argument: is nested too deeply"),
        (OverflowError("int too large"), "argument: a number is out of range"),
    ],
)
def test_runtime_errors_on_bad_input_leave_as_invalid_input(raised: BaseException, field: str) -> None:
    with pytest.raises(InvalidInput, match=field):
        _raising(raised)()


def test_a_model_refusing_a_value_beneath_a_verb_names_the_field() -> None:
    @edge
    def verb() -> None:
        _Strict.model_validate({"n": "5"})

    with pytest.raises(InvalidInput, match="^n: "):
        verb()


def test_the_vaults_own_errors_and_other_bugs_pass_through_unchanged() -> None:
    with pytest.raises(NotFound, match="no such"):
        _raising(NotFound("no such memory"))()
    with pytest.raises(KeyError):  # a bug stays a bug: it is not dressed up as a vault error
        _raising(KeyError("k"))()


def test_given_leaves_out_what_was_not_given() -> None:
    assert given(a=1, b=None, c=0, d="") == {"a": 1, "c": 0, "d": ""}


@pytest.mark.parametrize("value", ["text", b"bytes", {"a": 1}, 5])
def test_listed_refuses_what_is_not_a_list(value: Any) -> None:
    with pytest.raises(InvalidInput, match="^items: must be a list of memories"):
        listed("items", value, "memories")


def test_listed_takes_any_iterable_and_path_text_any_path() -> None:
    assert listed("items", (x for x in [1, 2]), "numbers") == [1, 2]
    assert path_text("folder", Path("/tmp/x")) == "/tmp/x"
    assert path_text("folder", 7) == 7  # left for the params model to refuse, naming the field
