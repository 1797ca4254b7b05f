"""contract/params/base.py: the value types and checks every params model shares (times, text, nested
texts, scope and filters), and ``validate``, which refuses bad input as one InvalidInput naming the field."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
from pydantic import BaseModel, Field

from perseus_vault_core import InvalidInput
from perseus_vault_core.contract.params.base import (
    MAX_SCOPE_CHARS,
    Filters,
    ScopeParams,
    check_line,
    check_text,
    is_advanced,
    texts_problem,
    to_unix_ms,
    validate,
)


@pytest.mark.parametrize(
    ("value", "ms"),
    [
        ("1970-01-01T00:00:00Z", 0),
        ("2026-01-01", 1_767_225_600_000),
        (" 2026-01-01T00:00:01+00:00 ", 1_767_225_601_000),
        ("2026-01-01T02:00:00+02:00", 1_767_225_600_000),
        ("2026-01-01T00:00:00", 1_767_225_600_000),  # no offset: UTC
        (dt.datetime(2026, 1, 1, tzinfo=dt.UTC), 1_767_225_600_000),
        (123, 123),  # left for the integer check
    ],
)
def test_times_are_unix_milliseconds(value: Any, ms: int) -> None:
    assert to_unix_ms(value) == ms


def test_a_time_that_is_no_time_says_the_forms_it_may_take() -> None:
    with pytest.raises(ValueError, match="unix milliseconds, or an ISO 8601 time"):
        to_unix_ms("last tuesday")
    with pytest.raises(ValueError, match="ISO 8601"):
        to_unix_ms("2026-02-30")


def test_text_a_vault_cannot_store_is_refused() -> None:
    assert check_text("ключ\nzwei") == "ключ\nzwei"
    with pytest.raises(ValueError, match="contains"):
        check_text("a\x00b")
    with pytest.raises(ValueError, match="unpaired surrogate"):
        check_text("a\ud800b")


def test_a_line_holds_no_line_break() -> None:
    assert check_line("one line") == "one line"
    with pytest.raises(ValueError, match=r"must be one line: it holds a line break \(U\+000A\)"):
        check_line("two\nlines")
    with pytest.raises(ValueError, match="must be one line"):
        check_line("para\u2029graph")


def test_texts_problem_finds_a_bad_text_at_any_depth_and_says_where() -> None:
    assert texts_problem({"a": ["fine", {"b": "also fine"}], "n": 1}) is None
    said = texts_problem({"a": ["fine", {"b": "bad\x00"}]})
    assert said is not None and said.startswith("the text at a.1.b ")
    said = texts_problem({"a": {"bad\x00name": 1}})
    assert said is not None and said.startswith("a field name under a ")
    said = texts_problem("top\x00")
    assert said is not None and said.startswith("the text at the top ")


def test_texts_problem_takes_very_deep_nesting() -> None:
    deep: Any = "bad\x00"
    for _ in range(5_000):  # deeper than Python's recursion limit
        deep = [deep]
    assert texts_problem(deep) is not None


def test_a_scope_is_text_of_bounded_length() -> None:
    assert validate(ScopeParams, {"agent_id": "ann"}).agent_id == "ann"
    with pytest.raises(InvalidInput, match=f"^agent_id: must be at most {MAX_SCOPE_CHARS} characters$"):
        validate(ScopeParams, {"agent_id": "a" * (MAX_SCOPE_CHARS + 1)})
    with pytest.raises(InvalidInput, match="^workspace_hash: must be a string$"):
        validate(ScopeParams, {"workspace_hash": 7})
    with pytest.raises(InvalidInput, match="^workspace_hash: contains"):
        validate(ScopeParams, {"workspace_hash": "w\x00"})


def test_filters_take_times_as_iso_text_and_say_when_they_travel_in_time() -> None:
    plain = validate(Filters, {})
    assert not plain.time_travel and not plain.include_archived
    then = validate(Filters, {"as_of_unix_ms": "2026-01-01"})
    assert then.as_of_unix_ms == 1_767_225_600_000 and then.time_travel
    assert validate(Filters, {"valid_at_unix_ms": 5}).time_travel
    assert is_advanced(Filters.model_fields["as_of_unix_ms"]) and not is_advanced(
        Filters.model_fields["category"]
    )


@pytest.mark.parametrize(
    ("data", "field", "says"),
    [
        ({"min_decay": 1.5}, "min_decay", "must be at most 1.0"),
        ({"min_decay": float("nan")}, "min_decay", "must be a finite number"),
        ({"as_of_unix_ms": -1}, "as_of_unix_ms", "must be at least 0"),
        ({"as_of_unix_ms": "soon"}, "as_of_unix_ms", "must be unix milliseconds"),
        ({"include_archived": "yes"}, "include_archived", "must be true or false"),
        ({"category": 3}, "category", "must be a string"),
        ({"where": {"prio": {"$bogus": 1}}}, "where", ""),
        ({"categroy": "note"}, "categroy", "unknown argument (did you mean category?)"),
        ({"colour": "red"}, "colour", "unknown argument"),
    ],
)
def test_validate_names_the_field_and_says_what_is_wrong(data: dict[str, Any], field: str, says: str) -> None:
    with pytest.raises(InvalidInput) as raised:
        validate(Filters, data)
    assert raised.value.field.startswith(field)
    assert says in raised.value.message


class Query(BaseModel):
    model_config = Filters.model_config

    query: str = Field(min_length=1)
    limit: int = Field(default=10, ge=1)


def test_a_misspelled_argument_is_named_before_the_missing_one() -> None:
    with pytest.raises(InvalidInput) as raised:
        validate(Query, {"qury": "x"})
    assert raised.value.field == "qury" and "did you mean query?" in raised.value.message
    with pytest.raises(InvalidInput, match="^query: is required$"):
        validate(Query, {})


def test_validate_passes_a_model_through_and_prefixes_nested_fields() -> None:
    model = Query(query="x")
    assert validate(Query, model) is model
    with pytest.raises(InvalidInput, match=r"^items\[2\]\.limit: must be at least 1$"):
        validate(Query, {"query": "x", "limit": 0}, prefix="items[2]")
    with pytest.raises(InvalidInput, match="^query: must be at least 1 character"):
        validate(Query, {"query": ""})
