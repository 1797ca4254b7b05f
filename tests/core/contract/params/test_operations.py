"""contract/params/operations.py: the operator's verbs' arguments (import, export, backup, rekey), each
refused by name when missing, of the wrong type or unknown."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel

from perseus_vault_core import InvalidInput
from perseus_vault_core.contract.params.base import validate
from perseus_vault_core.contract.params.operations import (
    BackupParams,
    ExportParams,
    ImportParams,
    RekeyParams,
)


def test_each_takes_its_path_or_key() -> None:
    assert validate(ImportParams, {"source": "in.jsonl"}).source == "in.jsonl"
    export = validate(ExportParams, {"target": "out.jsonl", "agent_id": "ann"})
    assert (export.target, export.agent_id, export.workspace_hash) == ("out.jsonl", "ann", None)
    assert validate(BackupParams, {"target": "copy.db"}).target == "copy.db"
    assert validate(RekeyParams, {"new_key": "horse"}).new_key == "horse"


@pytest.mark.parametrize(
    ("model", "data", "field", "says"),
    [
        (ImportParams, {}, "source", "is required"),
        (ImportParams, {"source": 1}, "source", "must be a string"),
        (ImportParams, {"source": "a", "target": "b"}, "target", "unknown argument"),
        (ExportParams, {}, "target", "is required"),
        (ExportParams, {"target": "t", "agent": "ann"}, "agent", "unknown argument (did you mean agent_id?)"),
        (ExportParams, {"target": "t", "workspace_hash": "w\x00"}, "workspace_hash", "contains"),
        (BackupParams, {"target": None}, "target", "must be a string"),
        (BackupParams, {"source": "v.db"}, "target", "is required"),  # the missing one, not the stray
        (RekeyParams, {"new_key": ""}, "new_key", "must be at least 1 character"),
        (RekeyParams, {"new_key": b"k"}, "new_key", "must be a string"),
    ],
)
def test_bad_arguments_are_refused_by_name(
    model: type[BaseModel], data: dict[str, Any], field: str, says: str
) -> None:
    with pytest.raises(InvalidInput) as raised:
        validate(model, data)
    assert raised.value.field == field
    assert says in raised.value.message
