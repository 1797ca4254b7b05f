"""The seam storage/base.py draws: each backend provides every method of each protocol (KeywordStore,
VectorStore, ChangeLog, Backend) with the protocol's parameters (names, kinds, defaults), so the layers
above call either backend alike."""

from __future__ import annotations

import inspect
from types import ModuleType
from typing import Any

import pytest

from perseus_vault_core.storage import base
from perseus_vault_core.storage.postgres.backend import PostgresBackend
from perseus_vault_core.storage.sqlite.backend import SQLiteBackend

BACKENDS = [SQLiteBackend, PostgresBackend]
MISSING = object()
PARTS = {"keyword": base.KeywordStore, "vectors": base.VectorStore, "changes": base.ChangeLog}


def members(protocol: type) -> dict[str, Any]:
    """The protocol's own methods and properties, by name."""
    return {
        name: value
        for name, value in vars(protocol).items()
        if not name.startswith("_") and (inspect.isfunction(value) or isinstance(value, property))
    }


def parameters(fn: Any, bound: bool) -> list[tuple[str, Any, Any]]:
    """Name, kind and default of each parameter, ``self`` left out where ``bound``."""
    found = list(inspect.signature(fn).parameters.values())
    return [(p.name, p.kind, p.default) for p in (found[1:] if bound else found)]


def set_in_init(impl: type | ModuleType, name: str) -> bool:
    """Whether ``impl``'s ``__init__`` sets the attribute ``name`` on each instance."""
    init = vars(impl).get("__init__") if isinstance(impl, type) else None
    return init is not None and f"self.{name} =" in inspect.getsource(init)


def mismatches(protocol: type, impl: type | ModuleType) -> list[str]:
    """Where ``impl`` (a class, or a module of functions taking the connection first) departs from ``protocol``."""
    bound = isinstance(impl, type)
    out = []
    for name, wanted in members(protocol).items():
        got = inspect.getattr_static(impl, name, MISSING)
        if got is MISSING and isinstance(wanted, property) and set_in_init(impl, name):
            continue
        if got is MISSING:
            out.append(f"{name}: missing")
        elif isinstance(wanted, property):  # read-only: a property, or a value the class sets
            if not isinstance(got, property) and callable(got):
                out.append(f"{name}: not an attribute")
        elif isinstance(got, property) or not callable(got):
            out.append(f"{name}: not a method")
        elif parameters(wanted, True) != parameters(got, bound):
            out.append(f"{name}: {inspect.signature(got)} is not {inspect.signature(wanted)}")
    return out


@pytest.mark.parametrize("backend", BACKENDS, ids=lambda b: b.__name__)
def test_each_backend_class_is_a_backend(backend: type) -> None:
    assert mismatches(base.Backend, backend) == []
    for attribute in inspect.get_annotations(base.Backend):
        assert hasattr(backend, attribute) or set_in_init(backend, attribute), attribute


@pytest.mark.parametrize("backend", BACKENDS, ids=lambda b: b.__name__)
@pytest.mark.parametrize("part", list(PARTS))
def test_each_backends_keyword_vector_and_change_stores_keep_their_protocol(backend: type, part: str) -> None:
    impl = getattr(backend, part)
    assert impl.__name__.startswith(
        backend.__module__.rsplit(".", 1)[0]
    )  # its own backend's, not the other's
    assert mismatches(PARTS[part], impl) == []


def test_a_departure_from_a_protocol_is_named() -> None:
    class Partial:
        def position(self, conn: Any) -> int:
            return 0

        def first(self, connection: Any) -> None:  # another parameter name
            return None

        def pending(self, conn: Any, after: int, upto: int, vectors: bool = False) -> int:  # a default added
            return 0

        marker = None  # a value where a method belongs

    bad = mismatches(base.ChangeLog, Partial)
    assert (
        bad[0]
        == "first: (self, connection: 'Any') -> 'None' is not (self, conn: 'Connection') -> 'int | None'"
    )
    assert [b.split(":")[0] for b in bad] == [
        "first",
        "pending",
        "entries",
        "rebuilt_since",
        "marker",
        "heads",
        "rows",
    ]
    assert "marker: not a method" in bad and "entries: missing" in bad

    class Settings:
        def encrypted(self) -> bool:  # a method where a read-only attribute belongs
            return False

        read_only = False  # a value: a read-only attribute

        def __init__(self) -> None:
            self.clock = None  # set on each instance: an attribute too

    assert [
        b for b in mismatches(base.Backend, Settings) if b.startswith(("encrypted", "read_only", "clock"))
    ] == ["encrypted: not an attribute"]


def test_the_change_log_operations_are_distinct() -> None:
    ops = [base.OP_HEAD, base.OP_GONE, base.OP_REBUILT, base.OP_VECTOR, base.OP_VECTORS_RESET]
    assert len(set(ops)) == len(ops)
