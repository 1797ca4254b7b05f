"""``where``: a filter over what memories hold, in the operators of Chroma, LangGraph and MongoDB
(docs/filters.md).

A where is a JSON object. Each key names a field and gives its condition; keys ``$and``, ``$or`` and
``$not`` combine whole filters; several keys in one object must all hold::

    {"project": "apollo", "prio": {"$gte": 2}, "$or": [{"type": "decision"}, {"tags": {"$in": ["urgent"]}}]}

- A field is one of the memory's own fields (:data:`COLUMNS`: ``category``, ``type``, ``topic_path``,
  ``status``, ``source``, ``verified``, ``certainty``, ...) or else a field of its ``body``; dots name
  nested body fields (``"meta.author"``) and ``body.`` reaches a body field whose name is also a
  memory field (``"body.status"``).
- A condition is a value (``$eq``) or an object of operators: ``$eq $ne $gt $gte $lt $lte $in $nin
  $exists $not``, all of which must hold; and, beyond the usual set, the text tests ``$contains``
  (text holding the given text; ``$substring`` is its other name), ``$not_contains`` and
  ``$isubstring`` (holding it, ASCII letters in either case), which Chroma's document filters and
  LlamaIndex's ``text_match`` need.
- A memory's text, ``content`` and ``summary``, takes only the text tests (and ``$not`` of them): its
  words are what the query searches, and a filter on its text narrows what the query finds.

Values compare within their kind, as in MongoDB: numbers with numbers (``1 == 1.0``), strings with
strings (by code point), ``true``/``false`` with themselves; ``"5"`` never equals ``5``, and ``true``
never equals ``1``. A field that is absent or ``null`` is *missing*: ``{"f": null}`` and ``{"f":
{"$exists": false}}`` select it, every comparison fails on it, and so ``$ne``/``$nin`` (which are
``$not`` of ``$eq``/``$in``) hold for it. A list holds a comparison when one of its elements does
(``{"tags": "urgent"}`` matches ``["urgent", "ops"]``), so ``$ne``/``$nin`` hold when none does. An
object equals no value. Anything else (an unknown operator, a list or object to compare with, ``$gt``
on ``true``) is refused with :class:`InvalidInput` naming where it is; nothing is quietly read as
"matches nothing".

This module is the language: it parses a where into a small tree (:func:`parse`, which the params
models call to validate). :mod:`perseus_vault_core.primitives.where_sql` writes the tree as SQL in a
connection's dialect, and tests it in Python over a row's columns.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from .errors import InvalidInput
from .text import problem

# The memory's own fields a where may name: their column, and the kind of value they hold. (An entity's
# empty scope is stored as '': missing here, as it is null on the wire.)
COLUMNS: dict[str, tuple[str, str]] = {
    "id": ("e.id", "number"),
    "category": ("e.category", "text"),
    "key": ("e.key", "text"),
    "agent_id": ("e.agent_id", "scope"),
    "workspace_hash": ("e.workspace_hash", "scope"),
    "created_at_ms": ("e.created_at_ms", "number"),
    "type": ("v.type", "text"),
    "topic_path": ("v.topic_path", "text"),
    "status": ("v.status", "text"),
    "source": ("v.source", "text"),
    "verified": ("v.verified", "bool"),
    "certainty": ("v.certainty", "number"),
    "provenance_class": ("v.provenance_class", "text"),
    "valid_from_ms": ("v.valid_from_ms", "number"),
    "valid_to_ms": ("v.valid_to_ms", "number"),
    "expires_at_ms": ("v.expires_at_ms", "number"),
    "updated_at_ms": ("v.updated_at_ms", "number"),
    "version": ("v.version", "number"),
    "supersedes": ("v.supersedes", "number"),
    "superseded_by": ("v.superseded_by", "number"),
}
# Memory fields a where does not take, and what to use instead: a name that looked like a body field
# would silently match nothing.
# The memory's text: only the text tests (TEXT_TESTS) filter it; its words are what the query searches.
TEXTS: dict[str, str] = {"content": "v.content", "summary": "v.summary"}
TEXT_TESTS = ("$contains", "$not_contains", "$substring", "$isubstring", "$not")
NOT_FILTERED = {
    "body": "is not a field; name its fields ('project' or 'body.project')",
    "recall_when": "is matched by recall_when and prepare, not filtered",
    "decay": "changes with every read; use min_decay",
    "retrieval_count": "changes with every read",
    "last_accessed_ms": "changes with every read",
}
COMPARISONS = (
    "$eq",
    "$ne",
    "$gt",
    "$gte",
    "$lt",
    "$lte",
    "$in",
    "$nin",
    "$exists",
    "$not",
    "$contains",
    "$not_contains",
    "$substring",
    "$isubstring",
)
# The text tests and the test each makes ($not_contains: not $contains).
_SUBSTRING = {
    "$contains": "substring",
    "$not_contains": "substring",
    "$substring": "substring",
    "$isubstring": "isubstring",
}
COMBINATIONS = ("$and", "$or", "$not")
# What one where may ask (docs/limits.md gives each with what it costs at its maximum). A filter is
# checked inside every query a recall runs, on every memory a scan or a walk meets, so its size is the
# work per memory: these caps keep a call within the limits from costing more than a plain recall does.
MAX_CONDITIONS = 256  # field conditions in one where
MAX_VALUES = 1_000  # values of one $in / $nin
MAX_ALL_VALUES = 10_000  # values of every condition together
MAX_CHARS = 262_144  # characters of every value together (a where is cached, and kept per answer)
MAX_NESTING = 16  # $and / $or / $not inside one another
MAX_FIELD_CHARS = 256
MAX_VALUE_CHARS = 4_096
MAX_SUBSTRINGS = 16  # text tests ($contains, ...): each reads the whole field of every memory it meets
MAX_NEEDLE_CHARS = 256  # the text one of them looks for
_INT_RANGE = 2**63  # what both databases hold as an integer

Scalar = str | int | float | bool
ORDER = {"$gt": ">", "$gte": ">=", "$lt": "<", "$lte": "<="}


@dataclass(frozen=True)
class Field:
    """What a where's key names: a column (``column`` and its ``kind``) or a path into the body."""

    name: str
    column: str | None = None
    kind: str = "body"  # text, number, bool, scope (text, '' missing), document (a memory's text) or body
    path: tuple[str, ...] = ()


@dataclass(frozen=True)
class Test:
    """A positive condition on one field: ``op`` is eq, in (any of ``values``), one of > >= < <= (against
    ``values[0]``), exists, or substring / isubstring (text holding ``values[0]``; isubstring: ASCII letters
    in either case)."""

    field: Field
    op: str
    values: tuple[Scalar, ...] = ()

    @cached_property
    def kinds(self) -> dict[str, frozenset[Scalar]]:
        """The values by kind, as sets: :func:`evaluate` tests a memory against a long ``$in`` at once."""
        return {kind: frozenset(values) for kind, values in by_kind(self.values).items()}


@dataclass(frozen=True)
class Not:
    node: Node


@dataclass(frozen=True)
class Group:
    """All (``and``) or any (``or``) of ``nodes``; an empty ``and`` holds for every memory."""

    kind: str
    nodes: tuple[Node, ...]


Node = Test | Not | Group
EVERYTHING = Group("and", ())


# --- parsing -------------------------------------------------------------------------------------


def parse(where: Any) -> Node:
    """The tree of a where, or :class:`InvalidInput` naming the first part it does not take (its field
    is the path inside the where: ``prio.$gtx``, ``$or.1``)."""
    return _Parser().object(where, "", 0)


class _Parser:
    """Reads a where into its tree, counting its work (conditions, values, characters, substring tests)
    against the caps above as it goes, so an oversized filter is refused before any of it is written."""

    def __init__(self) -> None:
        self.conditions = 0
        self.values = 0
        self.chars = 0
        self.substrings = 0

    def object(self, where: Any, at: str, depth: int) -> Node:
        if not isinstance(where, Mapping):
            raise InvalidInput(at or "where", "must be a JSON object of fields and their conditions")
        if depth > MAX_NESTING:
            raise InvalidInput(at, f"nests $and/$or/$not deeper than {MAX_NESTING} levels")
        nodes: list[Node] = []
        for key, value in where.items():
            here = _join(at, _key(key, at))
            if key in ("$and", "$or"):
                if not isinstance(value, (list, tuple)) or not value:
                    raise InvalidInput(here, "must be a non-empty list of filters")
                nodes.append(
                    Group(
                        key[1:],
                        tuple(self.object(w, _join(here, str(i)), depth + 1) for i, w in enumerate(value)),
                    )
                )
            elif key == "$not":
                nodes.append(Not(self.object(value, here, depth + 1)))
            elif key.startswith("$"):
                raise InvalidInput(
                    here,
                    _unknown(key, COMBINATIONS)
                    if key not in COMPARISONS
                    else f'applies to a field: {{"field": {{"{key}": ...}}}}',
                )
            else:
                nodes.append(self.condition(field(key), value, here, depth))
        return nodes[0] if len(nodes) == 1 else Group("and", tuple(nodes))

    def condition(self, f: Field, value: Any, at: str, depth: int) -> Node:
        if f.kind == "document" and (
            not isinstance(value, Mapping) or any(k not in TEXT_TESTS for k in value)
        ):
            raise InvalidInput(
                at,
                f"takes only {', '.join(TEXT_TESTS[:-1])} (or $not of them): the query searches "
                "its words, and these filter its text",
            )
        if not isinstance(value, Mapping):
            return self.equal(f, value, at)
        if not value:
            raise InvalidInput(at, 'is an empty condition: give a value, or operators such as {"$gt": 1}')
        if not all(isinstance(k, str) and _key(k, at).startswith("$") for k in value):
            raise InvalidInput(
                at,
                "is an object: a condition is a value or operators ($eq, $gt, ...); name a nested "
                "field with dots ('a.b')",
            )
        nodes: list[Node] = []
        for op, operand in value.items():
            here = _join(at, _key(op, at))
            if op == "$eq":
                nodes.append(self.equal(f, operand, here))
            elif op == "$ne":
                nodes.append(Not(self.equal(f, operand, here)))
            elif op in ORDER:
                if isinstance(operand, bool) or not isinstance(operand, (str, int, float)):
                    raise InvalidInput(here, "compares with a number or a string")
                nodes.append(self.test(f, op, (_scalar(operand, here),)))
            elif op in ("$in", "$nin"):
                node = self.any_of(f, operand, here)
                nodes.append(node if op == "$in" else Not(node))
            elif op in _SUBSTRING:
                if not isinstance(operand, str) or not operand:
                    raise InvalidInput(here, "must be a non-empty string to look for in the text")
                if len(operand) > MAX_NEEDLE_CHARS:
                    raise InvalidInput(
                        here, f"looks for {len(operand)} characters; the limit is {MAX_NEEDLE_CHARS}"
                    )
                self.substrings += 1
                if self.substrings > MAX_SUBSTRINGS:
                    raise InvalidInput("where", f"has more than {MAX_SUBSTRINGS} text tests ($contains, ...)")
                node = self.test(f, _SUBSTRING[op], (_scalar(operand, here),))
                nodes.append(Not(node) if op == "$not_contains" else node)
            elif op == "$exists":
                if not isinstance(operand, bool):
                    raise InvalidInput(here, "must be true or false")
                node = self.test(f, "exists")
                nodes.append(node if operand else Not(node))
            elif op == "$not":
                if not isinstance(operand, Mapping):
                    raise InvalidInput(here, 'takes operators, e.g. {"$not": {"$gt": 1}}')
                if depth >= MAX_NESTING:
                    raise InvalidInput(here, f"nests $not deeper than {MAX_NESTING} levels")
                nodes.append(Not(self.condition(f, operand, here, depth + 1)))
            else:
                raise InvalidInput(here, _unknown(op, COMPARISONS))
        return nodes[0] if len(nodes) == 1 else Group("and", tuple(nodes))

    def equal(self, f: Field, value: Any, at: str) -> Node:
        if value is None:  # null is missing: {"f": null} selects memories without f
            return Not(self.test(f, "exists"))
        if isinstance(value, (list, tuple)):
            raise InvalidInput(at, 'is a list: to match any of several values use {"$in": [...]}')
        return self.test(f, "eq", (_scalar(value, at),))

    def any_of(self, f: Field, values: Any, at: str) -> Node:
        if not isinstance(values, (list, tuple)):
            raise InvalidInput(at, "must be a list of values")
        if len(values) > MAX_VALUES:
            raise InvalidInput(at, f"has {len(values)} values; the limit is {MAX_VALUES}")
        checked = [_scalar(v, _join(at, str(i))) for i, v in enumerate(values) if v is not None]
        kept = tuple(v for _, v in dict.fromkeys((type(v), v) for v in checked))  # 1 and True stay apart
        node = self.test(f, "in", kept)
        if any(v is None for v in values):  # null among them: a missing field is one of them
            return Group("or", (node, Not(self.test(f, "exists"))))
        return node

    def test(self, f: Field, op: str, values: tuple[Scalar, ...] = ()) -> Test:
        self.conditions += 1
        if self.conditions > MAX_CONDITIONS:
            raise InvalidInput("where", f"has more than {MAX_CONDITIONS} conditions")
        self.values += len(values)
        if self.values > MAX_ALL_VALUES:
            raise InvalidInput("where", f"has more than {MAX_ALL_VALUES} values in all")
        self.chars += sum(len(v) for v in values if isinstance(v, str))
        if self.chars > MAX_CHARS:
            raise InvalidInput("where", f"has more than {MAX_CHARS} characters of values in all")
        return Test(f, op, values)


def field(name: str) -> Field:
    """What a where's key names (see the module docstring), or :class:`InvalidInput`."""
    if len(name) > MAX_FIELD_CHARS:
        raise InvalidInput(name[:40] + "...", f"is longer than {MAX_FIELD_CHARS} characters")
    if name in COLUMNS:
        column, kind = COLUMNS[name]
        return Field(name, column, kind)
    if name in TEXTS:
        return Field(name, TEXTS[name], "document")
    if name in NOT_FILTERED:
        raise InvalidInput(name, NOT_FILTERED[name])
    path = tuple(name.removeprefix("body.").split("."))
    for part in path:
        if not part or part.startswith("$") or any(c in part for c in '"\\') or not part.isprintable():
            raise InvalidInput(
                name,
                "is not a field name: dot-separated names, none empty, starting with $, or "
                "holding a quote, a backslash or a control character",
            )
    return Field(name, path=path)


def _scalar(value: Any, at: str) -> Scalar:
    if isinstance(value, bool):
        return value
    if isinstance(value, int):
        if not -_INT_RANGE <= value < _INT_RANGE:
            raise InvalidInput(at, "is an integer beyond 64 bits")
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise InvalidInput(at, "must be a finite number")
        return value
    if isinstance(value, str):
        if len(value) > MAX_VALUE_CHARS:
            raise InvalidInput(at, f"is longer than {MAX_VALUE_CHARS} characters")
        why = problem(value)  # no value a vault stores holds NUL, and PostgreSQL takes none as a parameter
        if why is not None:
            raise InvalidInput(at, why)
        return value
    if isinstance(value, (list, tuple, Mapping)):
        raise InvalidInput(
            at, "must be a single value (a string, number or true/false), not a list or object"
        )
    raise InvalidInput(at, f"must be a string, number, true/false or null, not {type(value).__name__}")


def _key(key: Any, at: str) -> str:
    """A key of the filter, refused unless it is text that can be named in an error (valid Unicode)."""
    if not isinstance(key, str):
        raise InvalidInput(at, f"has a key that is not a string ({key!r})")
    try:
        key.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidInput(at, f"has a key that is not valid Unicode text ({ascii(key)})") from None
    return key


def _join(at: str, key: str) -> str:
    return f"{at}.{key}" if at else key


def _unknown(op: str, known: Sequence[str]) -> str:
    return f"is not an operator the vault takes (it takes {', '.join(known)})"


def columns_only(node: Node) -> bool:
    """Whether ``node`` reads the memory's own fields only (no body field, and not its text: the heads
    kept in memory hold neither)."""
    if isinstance(node, Test):
        return node.field.column is not None and node.field.kind != "document"
    if isinstance(node, Not):
        return columns_only(node.node)
    return all(columns_only(n) for n in node.nodes)


def fields(node: Node) -> set[str]:
    """The column fields ``node`` reads."""
    if isinstance(node, Test):
        return {node.field.name} if node.field.column is not None else set()
    if isinstance(node, Not):
        return fields(node.node)
    return set().union(*(fields(n) for n in node.nodes)) if node.nodes else set()


def by_kind(values: tuple[Scalar, ...]) -> dict[str, list[Scalar]]:
    """``values`` by their kind (:func:`kind_of`): values compare only within their kind."""
    out: dict[str, list[Scalar]] = {}
    for v in values:
        out.setdefault(kind_of(v), []).append(v)
    return out


def kind_of(value: Scalar) -> str:
    """``bool``, ``text`` or ``number`` (``1`` and ``1.0`` are one kind; ``true`` is not a number)."""
    if isinstance(value, bool):
        return "bool"
    return "text" if isinstance(value, str) else "number"
