"""A parsed ``where`` (:mod:`..contract.where`, the filter language) as one SQL condition in a connection's
dialect, and as the same test in Python.

:func:`sql` writes a where as one condition over ``v``/``e`` (the aliases of :mod:`.filters`) in a
connection's dialect (:mod:`.dialect`); :func:`.filters.view` ANDs it with the scope and time rules, so
it applies inside every query of every mode. Every part is definite (never NULL), so ``NOT`` of a part is
its complement; a memory missing a field fails every comparison on it, as the language says. The
statements are cached by the characters they hold. :func:`evaluate` is the same test in Python over a
row's columns, for the in-memory walk of a filter on columns only (:mod:`.hits`).
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ..contract.where import ORDER, Group, Node, Not, Scalar, Test, by_kind, kind_of, parse
from .dialect import Dialect, JsonNode


def sql(where: Mapping[str, Any], d: Dialect) -> tuple[str, dict[str, Any]]:
    """A validated where as one SQL condition over ``v``/``e`` in dialect ``d``, with its parameters
    (named ``w0``, ``w1``, ...). Every part is definite (never NULL), so ``NOT`` of it is its complement.
    The statement's size follows the where's conditions, not its values: the values of an ``$in`` travel
    as one JSON array parameter (binding each as a parameter of its own costs SQLite time in the square
    of their number)."""
    canonical = json.dumps(where, sort_keys=True)
    found = _CACHE.get((canonical, d))
    if found is None:
        writer = _Writer(d)
        found = writer.node(parse(json.loads(canonical))), writer.params
        _CACHE.put((canonical, d), found, len(canonical) + len(found[0]) + sum(map(_size, found[1].values())))
    return found


def _size(value: Any) -> int:
    return len(value) if isinstance(value, str) else 8


class _Cache:
    """The SQL of the wheres asked most recently, bounded by the characters they hold (keys, statements,
    parameters), not by their number: a few large filters cannot fill the memory."""

    def __init__(self, chars: int) -> None:
        self.chars, self.held = chars, 0
        self._lock = threading.Lock()
        self._items: OrderedDict[tuple[str, Dialect], tuple[tuple[str, dict[str, Any]], int]] = OrderedDict()

    def get(self, key: tuple[str, Dialect]) -> tuple[str, dict[str, Any]] | None:
        with self._lock:
            found = self._items.get(key)
            if found is None:
                return None
            self._items.move_to_end(key)
            return found[0]

    def put(self, key: tuple[str, Dialect], value: tuple[str, dict[str, Any]], size: int) -> None:
        if size > self.chars // 4:
            return  # one filter this large is not worth evicting a quarter of the others for
        with self._lock:
            if key in self._items:
                return
            self._items[key] = value, size
            self.held += size
            while self.held > self.chars:
                _, (_, dropped) = self._items.popitem(last=False)
                self.held -= dropped


_CACHE = _Cache(8_000_000)


class _Writer:
    def __init__(self, d: Dialect) -> None:
        self.d = d
        self.params: dict[str, Any] = {}

    def param(self, value: Any) -> str:
        name = f"w{len(self.params)}"
        self.params[name] = value
        return f":{name}"

    def any_of(self, values: Sequence[Scalar], kind: str, col: bool = False) -> str:
        """What ``IN (...)`` takes for ``values`` (all of ``kind``, text or number): one parameter for a
        single value, else one JSON array parameter read as a table (compared as a column of that kind
        when ``col``, else as :meth:`Dialect.json_value` gives a body field's value)."""
        if len(values) == 1:
            return self.param(values[0])
        return self.d.any_of(self.param(json.dumps(list(values))), kind, col)

    def node(self, node: Node) -> str:
        if isinstance(node, Not):
            return f"NOT {self.node(node.node)}"
        if isinstance(node, Group):
            if not node.nodes:
                return "TRUE" if node.kind == "and" else "FALSE"
            return "(" + f" {node.kind.upper()} ".join(self.node(n) for n in node.nodes) + ")"
        if node.field.column is not None:
            return self.column(node)
        return self.body(node)

    def column(self, t: Test) -> str:
        col, kind = t.field.column, t.field.kind
        assert col is not None
        if t.op == "exists":
            return {"scope": f"({col} <> '')", "bool": "TRUE"}.get(kind, f"({col} IS NOT NULL)")
        values = [v for v in t.values if kind_of(v) == ("text" if kind in ("scope", "document") else kind)]
        if not values:  # another kind of value: never equal, never ordered
            return "FALSE"
        if kind == "bool":
            return f"({col} IN ({', '.join('1' if v else '0' for v in values)}))"
        if t.op in ("substring", "isubstring"):
            return f"coalesce({self.d.substring(col, self.param(values[0]), t.op == 'isubstring')}, FALSE)"
        if t.op in ORDER:
            left = self.d.ordered(col) if kind in ("text", "scope") else col
            return f"coalesce({left} {ORDER[t.op]} {self.param(values[0])}, FALSE)"
        return f"coalesce({col} IN ({self.any_of(values, 'text' if kind == 'scope' else kind, col=True)}), FALSE)"

    def body(self, t: Test) -> str:
        """One test of a body field, by the field's JSON type, read once: a list holds it when an element
        does; a value of the test's kinds, by comparison; anything else (missing, null, an object) never."""
        node = self.d.json_node("v.body", self.param(self.d.json_path(t.field.path)))
        if t.op == "exists":
            return f"({node.type} IS NOT NULL AND {node.type} <> 'null')"
        if not t.values:  # $in []
            return "FALSE"
        alias = f"j{len(self.params)}"
        element = self.d.json_element(alias)
        branches = [
            f"WHEN 'array' THEN EXISTS (SELECT 1 FROM {self.d.json_elements(node, alias)} "
            f"WHERE {self.scalar(element, t)})"
        ]
        for name, holds in self.by_type(node, t).items():
            branches.append(f"WHEN '{name}' THEN {holds}")
        return f"(CASE {node.type} {' '.join(branches)} ELSE FALSE END)"

    def by_type(self, node: JsonNode, t: Test) -> dict[str, str]:
        """What ``t`` asks of a value of each JSON type it can hold for (the type already known)."""
        asks: dict[str, list[str]] = {}
        for kind, values in by_kind(t.values).items():
            if kind == "bool":
                for v in values:
                    name, holds = self.d.json_truth(node, bool(v))
                    asks.setdefault(name, []).append(holds)
                continue
            value = self.d.json_value(node, kind)
            operands = (
                []
                if t.op == "in" and len(values) > 1
                else [self.d.json_operand(self.param(self.d.json_param(v)), kind) for v in values]
            )
            holds = (
                self.d.substring(value, operands[0], t.op == "isubstring")
                if t.op in ("substring", "isubstring")
                else f"{value} {ORDER[t.op]} {operands[0]}"
                if t.op in ORDER
                else f"{value} IN ({self.any_of(values, kind) if len(values) > 1 else operands[0]})"
            )
            for name in self.d.json_types(kind):
                asks.setdefault(name, []).append(holds)
        return {
            name: parts[0] if len(parts) == 1 else "(" + " OR ".join(parts) + ")"
            for name, parts in asks.items()
        }

    def scalar(self, node: JsonNode, t: Test) -> str:
        """``t`` on one element of a list, its type checked beside it."""
        parts: list[str] = []
        for kind, values in by_kind(t.values).items():
            if kind == "bool":
                parts.extend(self.d.json_is(node, "true" if v else "false") for v in values)
                continue
            value = self.d.json_value(node, kind)
            if t.op in ("substring", "isubstring"):
                rhs = self.d.json_operand(self.param(self.d.json_param(values[0])), kind)
                parts.append(
                    f"({self.d.json_is(node, kind)} AND {self.d.substring(value, rhs, t.op == 'isubstring')})"
                )
            elif t.op in ORDER:
                rhs = self.d.json_operand(self.param(self.d.json_param(values[0])), kind)
                parts.append(f"({self.d.json_is(node, kind)} AND {value} {ORDER[t.op]} {rhs})")
            else:
                rhs = (
                    self.any_of(values, kind)
                    if len(values) > 1
                    else self.d.json_operand(self.param(self.d.json_param(values[0])), kind)
                )
                parts.append(f"({self.d.json_is(node, kind)} AND {value} IN ({rhs}))")
        return "(" + " OR ".join(parts) + ")" if len(parts) > 1 else parts[0]


# --- the same test in Python (a filter on columns only) --------------------------------------------


Getter = Callable[[str], Any]


def evaluate(node: Node, get: Getter) -> bool:
    """``node`` on one memory whose column fields ``get`` reads by name (as stored: ``verified`` 0/1, an
    empty scope ''), with the SQL's semantics. Body fields are not read here (:func:`columns_only`)."""
    if isinstance(node, Not):
        return not evaluate(node.node, get)
    if isinstance(node, Group):
        return (all if node.kind == "and" else any)(evaluate(n, get) for n in node.nodes)
    kind = node.field.kind
    stored = get(node.field.name)
    if kind == "scope" and stored == "":
        stored = None
    if node.op == "exists":
        return stored is not None
    if stored is None:
        return False
    if kind == "bool":
        return any(isinstance(v, bool) and v == bool(stored) for v in node.values)
    want = "text" if kind == "scope" else kind
    if node.op == "in" or node.op == "eq":  # number sets match 1 with 1.0, as == does; kinds never mix
        return stored in node.kinds.get(want, ())
    values = [v for v in node.values if kind_of(v) == want]
    if node.op in ("substring", "isubstring"):
        if not values:
            return False
        if node.op == "isubstring":
            return str(values[0]).translate(_ASCII_LOWER) in str(stored).translate(_ASCII_LOWER)
        return str(values[0]) in str(stored)
    if node.op in ORDER:
        return bool(values) and _compare(stored, node.op, values[0])
    return any(stored == v for v in values)


_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


def _compare(stored: Any, op: str, value: Any) -> bool:
    if op == "$gt":
        return bool(stored > value)
    if op == "$gte":
        return bool(stored >= value)
    if op == "$lt":
        return bool(stored < value)
    return bool(stored <= value)
