"""primitives/where_sql.py: a parsed where written as one SQL condition in each dialect (every value bound,
the statement sized by its conditions, the cache bounded), and :func:`evaluate`, the same test in Python,
agreeing with the SQL on the columns of stored memories on both backends."""

from __future__ import annotations

import json
from typing import Any

import pytest

from perseus_vault_core import Vault
from perseus_vault_core.contract.where import COLUMNS, parse
from perseus_vault_core.primitives.dialect import POSTGRES, SQLITE, dialect
from perseus_vault_core.primitives.filters import FROM
from perseus_vault_core.primitives.where_sql import evaluate, sql


def test_the_sql_binds_every_value_and_names_no_field_in_its_text() -> None:
    """A field name or value never becomes SQL text: both go in as parameters."""
    for d in (SQLITE, POSTGRES):
        text, params = sql({"x'; DROP TABLE entities; --": "y'); --", "n": {"$in": [1, "a"]}}, d)
        assert "DROP" not in text and "y')" not in text
        assert "y'); --" in params.values()


def test_the_statement_grows_with_conditions_not_values() -> None:
    """An $in's values travel as one JSON array parameter: SQLite binds named parameters in time that grows
    with the square of their number (40 lists of 1,000 took half a minute), and each statement was cached."""
    from perseus_vault_core.contract.where import MAX_VALUES

    for d in (SQLITE, POSTGRES):
        text, params = sql(
            {
                "tags": {"$in": [f"t{i}" for i in range(MAX_VALUES)]},
                "category": {"$nin": list(map(str, range(MAX_VALUES)))},
            },
            d,
        )
        assert len(params) <= 4 and len(text) < 2_000, (len(params), len(text))


def test_the_sql_cache_is_bounded_by_characters() -> None:
    from perseus_vault_core.primitives import where_sql as where_module

    for i in range(60):  # 60 distinct filters of about 250,000 characters each: 15 MB if all were kept
        sql({"f": {"$in": [f"{i}-{j}-" + "v" * 240 for j in range(1_000)]}}, SQLITE)
    cache = where_module._CACHE
    assert cache.held <= cache.chars
    assert sum(size for _, size in cache._items.values()) == cache.held


def test_the_same_where_gives_the_same_statement_from_the_cache() -> None:
    first = sql({"category": "note", "prio": {"$gt": 2}}, SQLITE)
    assert sql({"prio": {"$gt": 2}, "category": "note"}, SQLITE) == first  # the order of keys is no matter
    assert sql({"category": "note", "prio": {"$gt": 2}}, POSTGRES) != first


def test_evaluate_reads_no_body_field() -> None:
    asked: list[str] = []

    def get(name: str) -> Any:
        asked.append(name)
        return {"category": "note", "verified": 1, "agent_id": ""}[name]

    assert evaluate(parse({"category": "note", "verified": True}), get)
    assert not evaluate(parse({"$not": {"category": "note"}}), get)
    assert not evaluate(parse({"agent_id": {"$exists": True}}), get)  # the unscoped vault's '' is missing
    assert evaluate(parse({"agent_id": {"$exists": False}}), get)
    assert set(asked) == {"category", "verified", "agent_id"}


MEMORIES: list[dict[str, Any]] = [
    {
        "category": "note",
        "key": "a",
        "content": "first",
        "verified": True,
        "certainty": 0.9,
        "source": "wiki",
    },
    {"category": "note", "key": "b", "content": "second", "type": "decision", "topic_path": "ops/db"},
    {"category": "fact", "key": "c", "content": "third", "certainty": 0.2, "agent_id": "ann"},
    {"category": "Fact", "key": "d", "content": "fourth", "source": "Wikipedia", "workspace_hash": "w1"},
]

WHERES: list[dict[str, Any]] = [
    {},
    {"category": "note"},
    {"category": {"$in": ["fact", "Fact"]}},
    {"category": {"$nin": ["note"]}},
    {"verified": True},
    {"verified": {"$ne": True}},
    {"certainty": {"$gte": 0.5}},
    {"certainty": {"$lt": 0.5}},
    {"certainty": {"$exists": False}},
    {"source": {"$isubstring": "WIKI"}},
    {"source": {"$substring": "Wiki"}},
    {"agent_id": "ann"},
    {"agent_id": {"$exists": True}},
    {"workspace_hash": {"$exists": False}},
    {"$or": [{"type": "decision"}, {"certainty": {"$gt": 0.5}}]},
    {"$and": [{"category": {"$gt": "a"}}, {"$not": {"key": "a"}}]},
    {"category": {"$lte": "Fact"}},  # by code point: "Fact" < "fact" < "note"
    {"topic_path": {"$in": ["ops/db", 3]}},
    {"certainty": "0.9"},  # a string never equals a number
]


@pytest.mark.both_backends
def test_the_sql_and_evaluate_keep_the_same_memories(vault: Vault) -> None:
    for memory in MEMORIES:
        vault.remember(**memory)
    names = list(COLUMNS)
    columns = ", ".join(COLUMNS[name][0] for name in names)
    rows = vault.engine.read(
        lambda c: c.execute(f"SELECT e.key, {columns} FROM {FROM} WHERE v.recorded_to_ms IS NULL").fetchall()
    )
    assert len(rows) == len(MEMORIES)
    d = vault.engine.read(dialect)
    kept: dict[str, list[str]] = {}
    for where in WHERES:
        condition, params = sql(where, d)
        by_sql = vault.engine.read(
            lambda c, condition=condition, params=params: sorted(
                row[0]
                for row in c.execute(
                    f"SELECT e.key FROM {FROM} WHERE v.recorded_to_ms IS NULL AND {condition}", params
                ).fetchall()
            )
        )
        node = parse(where)
        by_python = sorted(
            row[0] for row in rows if evaluate(node, lambda name, row=row: row[1 + names.index(name)])
        )
        assert by_sql == by_python, where
        kept[json.dumps(where)] = by_sql
    assert kept['{"category": "note"}'] == ["a", "b"]
    assert kept['{"source": {"$isubstring": "WIKI"}}'] == ["a", "d"]
    assert kept['{"agent_id": {"$exists": true}}'] == ["c"]
    assert kept['{"certainty": "0.9"}'] == []
