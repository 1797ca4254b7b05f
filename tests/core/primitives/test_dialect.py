"""primitives/dialect.py: the SQL forms the backends write differently, each run on both backends' own
connections and giving the same answer there."""

from __future__ import annotations

import json
import sqlite3
from typing import Any

import pytest

from perseus_vault_core import Vault
from perseus_vault_core.primitives.dialect import POSTGRES, SQLITE, Dialect, dialect
from perseus_vault_core.primitives.scopes import scope_key

pytestmark = pytest.mark.both_backends

BODY = '{"name": "quokka", "n": 3, "x": 3.5, "s": "3", "t": true, "deep": {"list": [1, "two"]}}'


def one(vault: Vault, sql: str, *params: Any) -> Any:
    return vault.engine.read(lambda c: c.execute(sql, params).fetchone()[0])


def column(vault: Vault, sql: str, *params: Any) -> list[Any]:
    return vault.engine.read(lambda c: [row[0] for row in c.execute(sql, params).fetchall()])


def speaks(vault: Vault) -> Dialect:
    return vault.engine.read(dialect)


def test_a_connection_speaks_its_backends_dialect(vault: Vault, backend: str) -> None:
    assert speaks(vault) == (SQLITE if backend == "sqlite" else POSTGRES)
    assert speaks(vault).routes_by_scope is (backend != "sqlite")


def test_a_driver_connection_without_a_dialect_is_sqlite() -> None:
    conn = sqlite3.connect(":memory:")
    try:
        assert dialect(conn) is SQLITE
    finally:
        conn.close()


def test_ids_and_texts_are_the_elements_of_one_json_parameter(vault: Vault) -> None:
    d = speaks(vault)
    assert column(vault, f"SELECT j.value FROM {d.ids('?')} j ORDER BY j.value", "[3, 1, 20]") == [1, 3, 20]
    assert column(vault, f"SELECT j.value FROM {d.ids('?')} j", "[]") == []
    texts = column(
        vault, f"SELECT j.value FROM {d.texts('?')} j ORDER BY {d.ordered('j.value')}", '["b", "a", "B"]'
    )
    assert texts == ["B", "a", "b"]  # by code point on both


def test_a_field_of_a_json_column(vault: Vault) -> None:
    d = speaks(vault)
    assert one(vault, f"SELECT {d.field('?', 'name')}", BODY) == "quokka"
    assert one(vault, f"SELECT {d.field('?', 'missing')}", BODY) is None


def test_several_fields_as_one_json_array_each_of_its_own_type(vault: Vault) -> None:
    d = speaks(vault)
    fields = d.fields_json("s.b", ("name", "n", "x", "s", "t", "deep", "missing"))
    sql = f"SELECT {fields} FROM (SELECT CAST(? AS TEXT) AS b) s"
    assert json.loads(one(vault, sql, BODY)) == ["quokka", 3, 3.5, "3", True, {"list": [1, "two"]}, None]
    assert json.loads(one(vault, sql, BODY))[4] is True  # true, not 1
    for names in (("name",), (), ("a", "b'c"), ("a", "b.c")):
        with pytest.raises(ValueError, match="^names: give two or more plain words"):
            d.fields_json("b", names)


@pytest.mark.parametrize(("name", "integer"), [("n", True), ("x", False), ("s", False), ("missing", False)])
def test_an_integer_field_is_a_whole_number_not_a_string(vault: Vault, name: str, integer: bool) -> None:
    d = speaks(vault)
    sql = f"SELECT CASE WHEN {d.integer_field('s.b', name)} THEN 1 ELSE 0 END FROM (SELECT CAST(? AS TEXT) AS b) s"
    found = one(vault, sql, BODY)
    assert found == int(integer)


def test_a_nested_value_and_its_type(vault: Vault) -> None:
    d = speaks(vault)
    path = d.json_path(("deep", "list"))
    node = d.json_node("CAST(? AS TEXT)", "?")
    assert one(vault, f"SELECT {node.type}", BODY, path) == "array"
    absent = d.json_node("CAST(? AS TEXT)", "?")
    assert one(vault, f"SELECT {absent.type}", BODY, d.json_path(("deep", "nothing"))) is None
    n = d.json_node("CAST(? AS TEXT)", "?")
    assert (
        one(vault, f"SELECT CASE WHEN {d.json_is(n, 'number')} THEN 1 ELSE 0 END", BODY, d.json_path(("n",)))
        == 1
    )
    assert (
        one(vault, f"SELECT CASE WHEN {d.json_is(n, 'text')} THEN 1 ELSE 0 END", BODY, d.json_path(("n",)))
        == 0
    )
    t = d.json_node("CAST(? AS TEXT)", "?")
    true = one(vault, f"SELECT CASE WHEN {d.json_is(t, 'true')} THEN 1 ELSE 0 END", BODY, d.json_path(("t",)))
    assert true == 1


def test_the_elements_of_a_nested_list(vault: Vault) -> None:
    d = speaks(vault)
    node = d.json_node("CAST(? AS TEXT)", "?")
    element = d.json_element("e")
    found = column(
        vault, f"SELECT {element.type} FROM {d.json_elements(node, 'e')}", BODY, d.json_path(("deep", "list"))
    )
    assert found == [d.json_types("number")[0], d.json_types("text")[0]]


@pytest.mark.parametrize(
    ("text", "part", "fold", "holds"),
    [
        ("The Quokka", "quokka", True, True),
        ("The Quokka", "quokka", False, False),
        ("The Quokka", "Quokka", False, True),
        ("ÉCOLE", "école", True, False),  # only ASCII letters fold, alike on both backends
        ("école", "cole", True, True),
        ("abc", "abd", True, False),
    ],
)
def test_substring_folds_ascii_letters_only(
    vault: Vault, text: str, part: str, fold: bool, holds: bool
) -> None:
    d = speaks(vault)
    sql = f"SELECT CASE WHEN {d.substring('s.t', 's.p', fold)} THEN 1 ELSE 0 END FROM (SELECT CAST(? AS TEXT) AS t, CAST(? AS TEXT) AS p) s"
    assert one(vault, sql, text, part) == int(holds)


@pytest.mark.parametrize(("agent", "workspace"), [("", ""), ("agent", "ws"), ("äg:ent", "w✓"), ("a", "1:b")])
def test_the_scope_key_in_sql_is_the_one_python_computes(vault: Vault, agent: str, workspace: str) -> None:
    d = speaks(vault)
    sql = f"SELECT {d.scope_key('s.a', 's.w')} FROM (SELECT CAST(? AS TEXT) AS a, CAST(? AS TEXT) AS w) s"
    assert one(vault, sql, agent, workspace) == scope_key(agent, workspace)


def test_numbers_are_bound_as_json_on_postgres_only() -> None:
    assert SQLITE.json_param(3) == 3
    assert POSTGRES.json_param(3) == "3"
    assert POSTGRES.json_param(2.5) == "2.5"
    assert POSTGRES.json_param("text") == "text"
    assert SQLITE.json_operand(":p", "number") == ":p"
    assert POSTGRES.json_operand(":p", "number") == "CAST(:p AS jsonb)"
    assert POSTGRES.json_operand(":p", "text") == ":p"
