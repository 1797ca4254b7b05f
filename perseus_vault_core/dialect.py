"""The few SQL forms the backends' dialects write differently, for the services' shared SQL.

The shared SQL is written in the subset both databases take (docs/architecture.md). Two things do not
fit it:

- a list of values passed as one parameter (a JSON array, so that the statement's text is the same
  however many ids it carries, and SQLite's statement cache keeps it): SQLite reads it with
  ``json_each``, Postgres with ``json_array_elements_text``, which gives text that must be cast;
- reading one field of a JSON column: ``json_extract`` on SQLite, ``->>`` on Postgres.

Each is a method of :class:`Dialect`, and :func:`dialect` gives the one a connection speaks: a
backend's connection that is not SQLite's carries its own as ``conn.dialect``. What differs only in
spelling (SQLite's ``CROSS JOIN ... ON``, its parameter styles) the Postgres connection rewrites itself
(storage/postgres/connection.py). Like :mod:`.dbapi` it sits beside the
services rather than in :mod:`.storage`, which imports them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Dialect:
    """SQL fragments in one database's dialect (see the module docstring)."""

    name: str

    def ids(self, array: str) -> str:
        """A table of one integer column ``value``: the elements of ``array`` (a JSON array of ints:
        a parameter such as ``:vids`` or a column). Use it with an alias: ``{ids(':vids')} j``."""
        if self.name == "sqlite":
            return f"json_each({array})"
        return f"(SELECT CAST(value AS bigint) AS value FROM json_array_elements_text(CAST({array} AS json)))"

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

    def integer_field(self, document: str, name: str) -> str:
        """True where the top-level field ``name`` of a JSON text column is an integer (not a string,
        not a fraction)."""
        if self.name == "sqlite":
            return f"json_type({document}, '$.{name}') = 'integer'"
        return (f"(json_typeof(CAST({document} AS json) -> '{name}') = 'number' "
                f"AND (CAST({document} AS json) ->> '{name}') ~ '^-?[0-9]+$')")


SQLITE = Dialect("sqlite")
POSTGRES = Dialect("postgres")


def dialect(conn: Any) -> Dialect:
    """The dialect ``conn`` speaks: its own ``dialect``, or SQLite's (whose driver connections carry none)."""
    found: Dialect = getattr(conn, "dialect", SQLITE)
    return found
