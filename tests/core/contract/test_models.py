"""contract/models.py: the returned values' own behaviour. A memory's body fields are attributes at top level
unless named like a result field (which they can never forge); on the wire each field appears once and a
dump reads back whole, also into the richer item models the verbs build from it; the flags an item carries
only when they say something are left out otherwise; and every model gives the serialization schema the MCP
server publishes as a tool's output."""

from __future__ import annotations

import inspect
import json
from typing import Any

import pytest
from pydantic import BaseModel

from perseus_vault_core.contract import models
from perseus_vault_core.contract.models import (
    RESULT_FIELDS,
    Entity,
    EvidenceItem,
    RecallItem,
    RecallResult,
    Remembered,
    SimilarMemory,
    Validity,
)


def stored(**changes: Any) -> dict[str, Any]:
    """An entity's fields as the store reads them back (all of them, ``body`` whole)."""
    return {
        "id": 7,
        "category": "decision",
        "key": "db",
        "type": "memory",
        "topic_path": None,
        "content": "We chose SQLite in WAL mode.",
        "summary": None,
        "body": {"ticket": "ENG-12", "nested": {"a": [1, 2]}},
        "agent_id": None,
        "workspace_hash": None,
        "source": None,
        "verified": False,
        "certainty": None,
        "provenance_class": None,
        "recall_when": [],
        "created_at_ms": 1,
        "updated_at_ms": 2,
        "last_accessed_ms": None,
        "retrieval_count": 0,
        "decay": 1.0,
        "status": "active",
        "valid_from_ms": None,
        "valid_to_ms": None,
        "expires_at_ms": None,
        "supersedes": None,
        "superseded_by": None,
        "version": 1,
        "change": "created",
        "recorded_from_ms": 2,
        "recorded_to_ms": None,
        **changes,
    }


def test_body_fields_are_attributes_at_top_level() -> None:
    entity = Entity.model_validate(stored())
    assert entity.model_extra == {"ticket": "ENG-12", "nested": {"a": [1, 2]}}
    assert entity.ticket == "ENG-12"  # type: ignore[attr-defined]
    assert entity.body == {"ticket": "ENG-12", "nested": {"a": [1, 2]}}  # the body itself stays whole


def test_a_body_field_named_like_a_result_field_forges_nothing() -> None:
    body = {"score": 99.0, "validity": "forged", "similar": "x", "repeated": True, "id": 1, "colour": "red"}
    item = RecallItem.model_validate({**stored(body=body), "score": 0.25, "ranks": {"fts5": 1}})
    assert item.score == 0.25 and item.validity is None and item.id == 7
    assert item.model_extra == {"colour": "red"}  # only the field no item model defines is lifted
    made = Remembered.model_validate(stored(body=body))
    assert made.similar == [] and made.repeated is False  # Remembered's own fields, not the body's
    wire = made.model_dump()
    assert wire["colour"] == "red" and "colour" not in wire["body"]  # shown once, at top level
    assert wire["body"] == {k: v for k, v in body.items() if k != "colour"}  # kept where they cannot forge
    assert {
        "id",
        "score",
        "validity",
        "similar",
        "repeated",
        "via",
        "trigger",
        "outdated_by",
    } <= RESULT_FIELDS


def test_each_field_is_on_the_wire_once_and_a_dump_reads_back_whole() -> None:
    entity = Entity.model_validate(stored())
    wire = entity.model_dump()
    assert wire["ticket"] == "ENG-12" and wire["nested"] == {"a": [1, 2]} and wire["body"] == {}
    assert Entity.model_validate(wire) == entity
    assert Entity.model_validate(wire).body == {"ticket": "ENG-12", "nested": {"a": [1, 2]}}
    text = entity.model_dump_json()
    assert json.loads(text)["body"] == {} and text.count("ENG-12") == 1
    assert Entity.model_validate_json(text) == entity
    # a body field given both ways: the one inside body wins, as a dump never holds two
    both = Entity.model_validate({**stored(), "ticket": "ENG-99"})
    assert both.body["ticket"] == "ENG-12" and both.ticket == "ENG-12"  # type: ignore[attr-defined]


def test_a_dump_becomes_the_richer_item_the_verbs_build_from_it() -> None:
    """remember answers Remembered from an Entity's dump, global_recall an EvidenceItem from a RecallItem's:
    the body comes through whole and the new fields are the model's own."""
    entity = Entity.model_validate(stored())
    similar = SimilarMemory(id=3, category="decision", key="db-old", similarity=0.9, relation="update")
    made = Remembered.model_validate({**entity.model_dump(), "repeated": True, "similar": [similar]})
    assert made.body == entity.body and made.model_extra == entity.model_extra
    assert made.similar == [similar] and made.written is True
    hit = RecallItem.model_validate({**stored(), "score": 0.5, "ranks": {"dense": 2}})
    evidence = EvidenceItem.model_validate({**hit.model_dump(), "via": "link", "hops": 2})
    assert (evidence.via, evidence.hops, evidence.score, evidence.ranks) == ("link", 2, 0.5, {"dense": 2})
    assert evidence.body == hit.body and evidence.model_extra == {"ticket": "ENG-12", "nested": {"a": [1, 2]}}
    with pytest.raises(ValueError):
        EvidenceItem.model_validate({**hit.model_dump(), "via": "guess"})


def test_an_items_flags_are_on_the_wire_only_when_they_say_something() -> None:
    plain = RecallItem.model_validate({**stored(), "score": 0.5, "ranks": {}})
    wire = plain.model_dump()
    assert not {"actionability", "validity", "duplicates", "outdated_by"} & wire.keys()
    assert not {"validity", "outdated_by"} & json.loads(plain.model_dump_json()).keys()
    validity = Validity(
        multiplier=0.5,
        grade="stale",
        freshness=0.4,
        scope_match=True,
        corroborated=False,
        superseded=False,
        expired=False,
        expiring_soon=True,
    )
    flagged = RecallItem.model_validate(
        {**stored(), "score": 0.5, "ranks": {}, "actionability": 0.0, "validity": validity, "duplicates": []}
    )
    wire = flagged.model_dump()
    assert wire["actionability"] == 0.0 and wire["duplicates"] == []  # falsy but said: kept
    assert wire["validity"]["grade"] == "stale" and "outdated_by" not in wire
    assert RecallItem.model_validate(wire) == flagged


def test_every_model_gives_the_output_schema_the_mcp_server_publishes() -> None:
    """The MCP tools' output schemas are the models' serialization schemas: each builds (the models defer
    building); a memory's is an open object, as its wire shape holds its own body fields at top level, and
    every other model names its properties; Validity carries no description (a docstring would become one
    in every output schema)."""
    returned = [
        m
        for _, m in inspect.getmembers(models, inspect.isclass)
        if issubclass(m, BaseModel) and m.__module__ == models.__name__ and not m.__name__.startswith("_")
    ]
    assert len(returned) > 40
    for model in returned:
        schema = model.model_json_schema(mode="serialization")
        if issubclass(model, Entity):
            assert schema == {"type": "object", "additionalProperties": True}, model.__name__
        else:
            assert schema["type"] == "object" and schema["properties"], model.__name__
    recall = RecallResult.model_json_schema(mode="serialization")
    assert recall["properties"]["items"]["items"] == {"$ref": "#/$defs/RecallItem"}
    assert recall["$defs"]["RecallItem"] == {"type": "object", "additionalProperties": True}
    assert set(recall["required"]) == {"items", "total", "variants", "search_mode"}
    validity = Validity.model_json_schema(mode="serialization")
    assert "description" not in validity and set(validity["properties"]) == set(Validity.model_fields)
