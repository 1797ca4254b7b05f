"""contract/params/writing.py: what a memory to remember may be (an address of one-line names, content that
says something, a body that is a bounded JSON object agreeing with the arguments, one-line triggers, a
validity window in order, all within the size limit) and the arguments of link, unlink and remember_many,
each refusal naming its field."""

from __future__ import annotations

from typing import Any

import pytest

from perseus_vault_core import InvalidInput
from perseus_vault_core.contract.params.base import (
    MAX_BODY_BYTES,
    MAX_BODY_DEPTH,
    MAX_TRIGGER_CHARS,
    validate,
)
from perseus_vault_core.contract.params.writing import (
    FileText,
    LinkParams,
    RememberManyParams,
    RememberParams,
    UnlinkParams,
)

MEMORY = {"category": "decision", "key": "db", "content": "We chose SQLite."}


def refused(model: Any, data: dict[str, Any]) -> InvalidInput:
    with pytest.raises(InvalidInput) as raised:
        validate(model, data)
    return raised.value


def test_a_memory_takes_its_defaults_and_cleans_its_topic_and_triggers() -> None:
    m = validate(
        RememberParams,
        {**MEMORY, "topic_path": " /architecture/storage/ ", "recall_when": [" db choice ", "  "]},
    )
    assert m.type == "note" and m.body is None and m.verified is False and m.keep_duplicate is False
    assert m.topic_path == "architecture/storage"
    assert m.recall_when == ["db choice"]  # trimmed; a blank phrase dropped
    assert validate(RememberParams, {**MEMORY, "topic_path": "/"}).topic_path is None
    stored = validate(RememberParams, {**MEMORY, "keep_duplicate": True}).memory()
    assert "keep_duplicate" not in type(stored).model_fields and stored.content == MEMORY["content"]


@pytest.mark.parametrize(
    ("change", "field", "says"),
    [
        ({"content": ""}, "content", "must hold some text"),
        ({"content": " \n "}, "content", "must hold some text"),
        ({"category": " "}, "category", "must not be blank"),
        ({"key": ""}, "key", "must be at least 1 character"),
        ({"key": "a\nb"}, "key", "must be one line"),
        ({"type": "  "}, "type", "must not be blank"),
        ({"certainty": 1.5}, "certainty", "must be at most 1.0"),
        ({"recall_when": ["x" * (MAX_TRIGGER_CHARS + 1)]}, "recall_when", f"longer than {MAX_TRIGGER_CHARS}"),
        ({"recall_when": ["two\nlines"]}, "recall_when", "each must be one line"),
        ({"valid_from_ms": 2000, "valid_to_ms": 2000}, "valid_to_ms", "must be later than valid_from_ms"),
        ({"body": {"content": "another text"}}, "body", "body.content conflicts with the content argument"),
        ({"summary": "s", "body": {"summary": "t"}}, "body", "body.summary conflicts"),
        ({"body": {"x": float("nan")}}, "body", "finite numbers"),
        ({"content": "x" * (MAX_BODY_BYTES + 1)}, "content", f"the limit is {MAX_BODY_BYTES}"),
        ({"body": {"blob": "x" * MAX_BODY_BYTES}}, "body", f"the limit is {MAX_BODY_BYTES}"),
        ({"contents": "typo"}, "contents", "unknown"),
    ],
)
def test_a_bad_memory_is_refused_naming_its_field(change: dict[str, Any], field: str, says: str) -> None:
    error = refused(RememberParams, {**MEMORY, **change})
    assert error.field == field and says in error.message


def test_a_body_may_repeat_content_and_summary_and_nests_only_so_deep() -> None:
    m = validate(
        RememberParams,
        {**MEMORY, "summary": "s", "body": {"content": MEMORY["content"], "summary": "s", "n": 1}},
    )
    assert m.extra_body() == {"n": 1}
    deep: dict[str, Any] = {}
    node = deep
    for _ in range(MAX_BODY_DEPTH + 1):
        node["x"] = {}
        node = node["x"]
    error = refused(RememberParams, {**MEMORY, "body": deep})
    assert error.field == "body" and f"nested deeper than {MAX_BODY_DEPTH}" in error.message


def test_a_file_s_text_may_be_empty_but_a_remembered_memory_may_not() -> None:
    assert validate(FileText, {**MEMORY, "content": ""}).content == ""
    assert refused(RememberParams, {**MEMORY, "content": ""}).field == "content"


def test_a_batch_names_the_item_and_field_that_is_wrong() -> None:
    batch = validate(RememberManyParams, {"items": [MEMORY, {**MEMORY, "key": "db2"}]})
    assert [i.key for i in batch.items] == ["db", "db2"] and batch.similar is False
    error = refused(RememberManyParams, {"items": [MEMORY, {**MEMORY, "content": " "}]})
    assert error.field == "items.1.content" and "must hold some text" in error.message
    error = refused(RememberManyParams, {"items": [{**MEMORY, "content": "x" * (MAX_BODY_BYTES + 1)}]})
    assert error.field == "items.0.content"  # the size check names the item too


def test_a_link_has_a_relation_and_a_bounded_weight() -> None:
    link = validate(LinkParams, {"from_id": 1, "to_id": 2})
    assert (link.relation, link.weight, link.source) == ("related", 1.0, None)
    for data, field in (
        ({"relation": " "}, "relation"),
        ({"relation": "a\nb"}, "relation"),
        ({"weight": 1e300}, "weight"),
        ({"weight": float("inf")}, "weight"),
        ({"from_id": 0}, "from_id"),
        ({"to_id": "2"}, "to_id"),
    ):
        assert refused(LinkParams, {"from_id": 1, "to_id": 2, **data}).field == field, data
    assert validate(UnlinkParams, {"from_id": 1, "to_id": 2}).relation is None
