"""The few SQL forms the backends' dialects write differently, for the SQL the layers above share.

The shared SQL is written in the subset both databases take (docs/architecture.md). Three things do not
fit it:

- a list of values passed as one parameter (a JSON array, so that the statement's text is the same
  however many ids it carries, and SQLite's statement cache keeps it): SQLite reads it with
  ``json_each``, Postgres ids as an array (:meth:`Dialect.ids`) and texts with ``json_array_elements_text``;
- reading one field of a JSON column: ``json_extract`` on SQLite, ``->>`` on Postgres; and several as one
  JSON array, each field's type kept (:meth:`Dialect.fields_json`: SQLite's many-path ``json_extract``,
  Postgres's ``json_build_array``);
- a where filter's tests on a body field (:mod:`.where_sql` writes them): SQLite's ``json_type``/``json_extract``/``json_each``
  over the text, Postgres's ``jsonb`` operators, with its strings ordered by code point (``COLLATE "C"``,
  as SQLite's BINARY orders UTF-8) and its numbers compared as ``jsonb`` (exact, as SQLite compares).

Each is a method of :class:`Dialect`, and :func:`dialect` gives the one a connection speaks: a
backend's connection that is not SQLite's carries its own as ``conn.dialect``. What differs only in
spelling (SQLite's ``CROSS JOIN ... ON``, its parameter styles) the Postgres connection rewrites itself
(storage/postgres/connection.py). Like :mod:`.dbapi` it is a primitive, beneath the storage package
(which imports it) as much as beneath the features that write the shared SQL.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class JsonNode:
    """A JSON value inside a row, for :mod:`where`'s tests: ``type``, an expression of its JSON type (NULL
    when absent; ``'array'`` and ``'null'`` are spelled alike in both dialects); ``value``, the value itself
    (SQLite: an SQL value; Postgres: ``jsonb``); ``source``, what :meth:`Dialect.json_elements` walks."""

    type: str
    value: str
    source: str = ""


@dataclass(frozen=True)
class Dialect:
    """SQL fragments in one database's dialect (see the module docstring)."""

    name: str

    def ids(self, array: str) -> str:
        """A table of one integer column ``value``: the elements of ``array`` (a JSON array of ints:
        a parameter such as ``:vids`` or a column). Use it with an alias: ``{ids(':vids')} j``.

        On Postgres the JSON array is read as a ``bigint[]`` (its brackets made braces) and unnested: the planner
        then knows how many ids there are, where it took any JSON array for 100. A row-level security policy adds
        its scope to every statement of a bound role, and with 100 ids guessed and no statistics yet, PostgreSQL
        read the whole scope to join it with a few ids (a bound role's ``remember`` took twice the owner's)."""
        if self.name == "sqlite":
            return f"json_each({array})"
        return f"(SELECT value FROM unnest(CAST(translate(CAST({array} AS text), '[]', '{{}}') AS bigint[])) AS value)"

    def texts(self, array: str) -> str:
        """A table of one text column ``value``: the elements of a JSON array of strings."""
        if self.name == "sqlite":
            return f"json_each({array})"
        return f"json_array_elements_text(CAST({array} AS json))"

    def items(self, array: str) -> str:
        """A table of one JSON column ``value``: the elements of a JSON array, each read with ``->>``."""
        if self.name == "sqlite":
            return f"json_each({array})"
        return f"json_array_elements(CAST({array} AS json))"

    def field(self, document: str, name: str) -> str:
        """The top-level field ``name`` of a JSON text column, as text (null when absent)."""
        if self.name == "sqlite":
            return f"json_extract({document}, '$.{name}')"
        return f"(CAST({document} AS json) ->> '{name}')"

    def fields_json(self, document: str, names: tuple[str, ...]) -> str:
        """The top-level fields ``names`` (two or more; one is :meth:`field`) of a JSON text column as one
        JSON array's text, each field as JSON (a string quoted, ``true`` not ``1``; null when absent): a
        reader tells each field's type the same on both backends, and one column carries them all, never
        the whole document. Names are plain words (letters, digits, underscores)."""
        if len(names) < 2 or any(not n.replace("_", "").isalnum() or not n.isascii() for n in names):
            raise ValueError(f"names: give two or more plain words, not {names!r}")
        if self.name == "sqlite":  # json_extract of several paths is an array of the values as JSON
            paths = ", ".join(f"'$.{n}'" for n in names)
            return f"json_extract({document}, {paths})"
        parts = ", ".join(f"CAST({document} AS json) -> '{n}'" for n in names)
        return f"CAST(json_build_array({parts}) AS text)"

    def integer_field(self, document: str, name: str) -> str:
        """True where the top-level field ``name`` of a JSON text column is an integer (not a string,
        not a fraction)."""
        if self.name == "sqlite":
            return f"json_type({document}, '$.{name}') = 'integer'"
        return (
            f"(json_typeof(CAST({document} AS json) -> '{name}') = 'number' "
            f"AND (CAST({document} AS json) ->> '{name}') ~ '^-?[0-9]+$')"
        )

    # --- a where filter's body tests (where.py) ---

    def json_path(self, keys: tuple[str, ...]) -> str:
        """The parameter naming a nested field (keys hold no quote or backslash: where.field checks)."""
        if self.name == "sqlite":
            return "$" + "".join(f'."{k}"' for k in keys)
        return "{" + ",".join(f'"{k}"' for k in keys) + "}"

    def json_node(self, document: str, path: str) -> JsonNode:
        """The value at ``path`` (a :meth:`json_path` parameter) in a JSON text column."""
        if self.name == "sqlite":
            return JsonNode(
                f"json_type({document}, {path})", f"json_extract({document}, {path})", f"{document}, {path}"
            )
        at = f"(CAST({document} AS jsonb) #> CAST({path} AS text[]))"
        return JsonNode(f"jsonb_typeof({at})", at, at)

    def json_elements(self, node: JsonNode, alias: str) -> str:
        """A table of the elements of the list ``node`` holds, as ``alias`` (see :meth:`json_element`)."""
        if self.name == "sqlite":
            return f"json_each({node.source}) {alias}"
        return f"jsonb_array_elements({node.source}) {alias}(value)"

    def json_element(self, alias: str) -> JsonNode:
        if self.name == "sqlite":
            return JsonNode(f"{alias}.type", f"{alias}.value")
        return JsonNode(f"jsonb_typeof({alias}.value)", f"{alias}.value")

    def json_is(self, node: JsonNode, kind: str) -> str:
        """True where ``node`` is of ``kind``: text, number, true or false."""
        if self.name == "sqlite":
            return {"text": f"{node.type} = 'text'", "number": f"{node.type} IN ('integer', 'real')"}.get(
                kind, f"{node.type} = '{kind}'"
            )
        if kind in ("true", "false"):
            return f"{node.value} = CAST('{kind}' AS jsonb)"
        return f"{node.type} = '{'string' if kind == 'text' else 'number'}'"

    def json_types(self, kind: str) -> tuple[str, ...]:
        """The JSON type names (``node.type``'s values) of ``kind``: text or number."""
        if self.name == "sqlite":
            return ("text",) if kind == "text" else ("integer", "real")
        return ("string",) if kind == "text" else ("number",)

    def json_truth(self, node: JsonNode, truth: bool) -> tuple[str, str]:
        """(the type name of ``true`` / ``false``, what else holds of ``node`` when it is that value)."""
        if self.name == "sqlite":
            return ("true" if truth else "false"), "TRUE"
        return "boolean", f"{node.value} = CAST('{'true' if truth else 'false'}' AS jsonb)"

    def json_value(self, node: JsonNode, kind: str) -> str:
        """``node``'s value where it is of ``kind`` (text or number), in a form ordered as its kind is."""
        if self.name == "sqlite" or kind == "number":
            return node.value
        return f"({node.value} #>> '{{}}') COLLATE \"C\""

    def json_operand(self, param: str, kind: str) -> str:
        """A parameter (made by :meth:`json_param`) compared with a :meth:`json_value` of ``kind``."""
        return f"CAST({param} AS jsonb)" if self.name != "sqlite" and kind == "number" else param

    def json_param(self, value: str | int | float) -> Any:
        """A value bound for :meth:`json_operand` (Postgres compares numbers as ``jsonb``)."""
        if self.name != "sqlite" and not isinstance(value, str):
            return json.dumps(value)
        return value

    def any_of(self, array: str, kind: str, column: bool) -> str:
        """A subquery of the values in ``array`` (a JSON array of text or of numbers, as ``kind`` says), for
        ``x IN (...)``: compared with a column of that kind when ``column``, else with :meth:`json_value`
        (Postgres compares a body field's numbers as ``jsonb``, its text by code point)."""
        if self.name == "sqlite":
            return f"SELECT value FROM json_each({array})"
        if kind == "text":
            collate = "" if column else ' COLLATE "C"'
            return f"SELECT value{collate} FROM json_array_elements_text(CAST({array} AS json))"
        if column:
            return f"SELECT CAST(value AS numeric) FROM json_array_elements_text(CAST({array} AS json))"
        return f"SELECT value FROM jsonb_array_elements(CAST({array} AS jsonb))"

    def substring(self, text: str, part: str, fold: bool) -> str:
        """True where the text ``text`` holds ``part`` (both SQL expressions of text); ``fold``: ASCII letters
        compared without their case. Only ASCII letters fold, the same on both backends: SQLite's own
        ``lower()`` folds more or less depending on how it was built, Postgres's depends on the locale."""
        if fold:
            text, part = self.ascii_lower(text), self.ascii_lower(part)
        return f"instr({text}, {part}) > 0" if self.name == "sqlite" else f"strpos({text}, {part}) > 0"

    def ascii_lower(self, text: str) -> str:
        """``text`` with ASCII capitals made small, nothing else changed."""
        if self.name != "sqlite":
            return f"translate({text}, 'ABCDEFGHIJKLMNOPQRSTUVWXYZ', 'abcdefghijklmnopqrstuvwxyz')"
        return f"pv_ascii_lower({text})"  # registered on every connection (storage/sqlite/connection.py)

    def ordered(self, column: str) -> str:
        """A text column ordered by code point, as SQLite's BINARY collation orders UTF-8."""
        return column if self.name == "sqlite" else f'{column} COLLATE "C"'

    @property
    def routes_by_scope(self) -> bool:
        """Whether a query naming a whole scope also tests its key (:func:`filters.scope_clauses`): on
        Postgres, so that a distributed database sends it to the scope's shard alone; not in a SQLite file,
        which is never sharded and would pay for the extra test on every row."""
        return self.name != "sqlite"

    def scope_key(self, agent_id: str, workspace_hash: str) -> str:
        """The scope key (:func:`scopes.scope_key`) of two text columns or parameters: the agent id's length
        in UTF-8 bytes, ``:``, the agent id, the workspace hash."""
        size = f"length(CAST({agent_id} AS BLOB))" if self.name == "sqlite" else f"octet_length({agent_id})"
        return f"(CAST({size} AS TEXT) || ':' || {agent_id} || {workspace_hash})"


SQLITE = Dialect("sqlite")
POSTGRES = Dialect("postgres")


def dialect(conn: Any) -> Dialect:
    """The dialect ``conn`` speaks: its own ``dialect``, or SQLite's (whose driver connections carry none)."""
    found: Dialect = getattr(conn, "dialect", SQLITE)
    return found
