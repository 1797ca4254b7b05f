"""What a view is asked: its URL's query parameters, read with the types the view needs, and what it may use.

Every view is a URL that can be shared and reloaded: all it shows follows from the path and these
parameters. A parameter that cannot be read (``limit=abc``) is :class:`InvalidInput` naming it, as the
vault names a bad argument, and the page says so with status 400. The scope comes from the parameters,
unless the server is bound to one: then asking for another is refused, as the bound MCP server refuses it.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from dataclasses import dataclass
from typing import Any

from perseus_vault_core import Counts, InvalidInput, Stats, Vault

from .layout import Scope
from .reports import Busy, Kept, Reports


@dataclass(frozen=True)
class Context:
    """What every view may use: the vault, the scope the server binds (if any), whether edits are
    allowed, this client's CSRF token, the reports computed in the background and the answers kept."""

    vault: Vault
    bound: Scope
    edits: bool
    csrf: str
    reports: Reports
    kept: Kept
    clusters: (
        Reports  # the link graph's communities, clustered in the background (a report queue of their own)
    )

    def stamp(self, scope: Scope) -> Hashable:
        """The scope's latest write (what a kept answer or report was computed after)."""
        latest = self.vault.recent(limit=1, **scope.args()).items
        return (latest[0].id, latest[0].version) if latest else None

    def clustered(self, scope: Scope) -> tuple[bool, float]:
        """Whether the link graph of ``scope`` is clustered since its latest write (and for how long it has been
        clustering when it is not): clustering 100,000 memories takes seconds, so a page that colours by
        community starts it in the background and shows its graph without colours until it is done."""
        try:
            job = self.clusters.job(
                ("communities", *scope.args().items()),
                self.stamp(scope),
                lambda: self.vault.communities(limit=1, central=0, **scope.args()),
            )
        except Busy:  # other scopes' graphs wait their turn: shown uncoloured, as while clustering
            return False, 0.0
        return self.clusters.wait(job), job.seconds()

    def counts(self, scope: Scope, **filters: Any) -> Counts:
        """``counts`` for ``scope`` and ``filters``, read once per write (a tenth of a second at 100,000 memories)."""
        asked = {k: v for k, v in {**scope.args(), **filters}.items() if v is not None}
        answer: Counts = self.kept.get(
            ("counts", tuple(sorted(asked.items()))), self.stamp(scope), lambda: self.vault.counts(**asked)
        )
        return answer

    def stats(self) -> Stats:
        """``stats`` (every scope's), read once per write: its counts take a few tenths of a second at 100,000."""
        answer: Stats = self.kept.get("stats", self.stamp(Scope()), self.vault.stats)
        return answer


class Ask:
    """A view's query parameters (the first value of each)."""

    def __init__(self, params: Mapping[str, str], bound: Scope) -> None:
        self.params = params
        self.scope = self._scope(bound)

    def _scope(self, bound: Scope) -> Scope:
        if not bound.bound:
            return Scope(self.text("agent_id"), self.text("workspace_hash"))
        for name, fixed in bound.args().items():
            asked = self.text(name)
            if asked is not None and asked != fixed:
                raise InvalidInput(name, f"this inspector is bound to {name}={fixed!r}")
        return bound

    def text(self, name: str) -> str | None:
        """The parameter's text, ``None`` when absent or blank."""
        value = self.params.get(name)
        return value if value is not None and value.strip() else None

    def instant(self, name: str) -> int | str | None:
        """A time as the vault takes it: unix milliseconds (digits), else ISO 8601 text for the vault to read."""
        text = self.text(name)
        return int(text) if text is not None and text.strip().isdigit() else text

    def number(self, name: str, default: int, low: int, high: int) -> int:
        text = self.text(name)
        if text is None:
            return default
        try:
            value = int(text)
        except ValueError:
            raise InvalidInput(name, f"must be a whole number, got {text[:40]!r}") from None
        if not low <= value <= high:
            raise InvalidInput(name, f"must be from {low} to {high}")
        return value

    def real(self, name: str) -> float | None:
        text = self.text(name)
        if text is None:
            return None
        try:
            return float(text)
        except ValueError:
            raise InvalidInput(name, f"must be a number, got {text[:40]!r}") from None

    def flag(self, name: str) -> bool:
        return self.text(name) not in (None, "0", "false", "off")

    def pick(self, name: str, allowed: tuple[str, ...], default: str) -> str:
        text = self.text(name) or default
        if text not in allowed:
            raise InvalidInput(name, f"must be one of {', '.join(allowed)}")
        return text

    def filters(self) -> dict[str, Any]:
        """The scope and the attribute filters every listing takes (type, category, topic path)."""
        return {
            **self.scope.args(),
            "type": self.text("type"),
            "category": self.text("category"),
            "topic_path": self.text("topic_path"),
        }
