"""The page around every view, and the small pieces views share: times, sizes, memory links, pagers.

A page is server-rendered HTML: one stylesheet and one small script from this package (``static/``),
nothing from the network, no inline script or style (the Content-Security-Policy forbids both).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from perseus_vault_core import iso_time, true_from

from .markup import Child, Markup, el, join, url

NAV = (
    ("/", "Overview"),
    ("/browse", "Browse"),
    ("/recall", "Recall"),
    ("/graph", "Graph"),
    ("/time", "Time travel"),
    ("/hygiene", "Hygiene"),
    ("/files", "Memory files"),
)
PREVIEW_CHARS = 160


@dataclass(frozen=True)
class Page:
    """A view's answer: its title, its body, and the HTTP status it goes out with."""

    title: str
    body: Markup
    status: int = 200


@dataclass(frozen=True)
class Scope:
    """The agent and workspace a page looks at (``None``: no filter), and whether the server binds them."""

    agent_id: str | None = None
    workspace_hash: str | None = None
    bound: bool = False

    def args(self) -> dict[str, Any]:
        """As the vault's verbs and this inspector's links take it."""
        return {"agent_id": self.agent_id, "workspace_hash": self.workspace_hash}

    def link(self, path: str, **query: Any) -> str:
        """A link to ``path`` in this scope (a bound scope needs no parameters: the server fills it in)."""
        return url(path, **({} if self.bound else self.args()), **query)


def document(
    page: Page, scope: Scope, *, path: str, edits: bool, where: str, sign_out: str | None = None
) -> Markup:
    """The whole HTML document: head, navigation, the view's body, and a footer saying what this is; with
    ``sign_out`` (the page's CSRF token, for a browser signed in), a button that ends its session."""
    nav = el(
        "nav",
        el("a", "Perseus Vault", href=scope.link("/"), class_="brand"),
        [
            el("a", label, href=scope.link(target), aria_current="page" if target == path else None)
            for target, label in NAV
        ],
    )
    shown = " / ".join(f"{k.split('_')[0]} {v}" for k, v in scope.args().items() if v is not None)
    badge = el("span", ("bound to " if scope.bound else "scope: ") + shown, class_="scope") if shown else None
    mode = "edits allowed (forget, restore, verify)" if edits else "read-only"
    leave = (
        None
        if sign_out is None
        else el(
            "form",
            el("input", type="hidden", name="csrf", value=sign_out),
            el("button", "Sign out", type="submit"),
            method="post",
            action="/logout",
            class_="signout",
        )
    )
    return join(
        Markup("<!doctype html>\n"),
        el(
            "html",
            el(
                "head",
                el("meta", charset="utf-8"),
                el("meta", name="viewport", content="width=device-width, initial-scale=1"),
                el("title", f"{page.title} · Perseus Vault"),
                el("link", rel="stylesheet", href="/static/app.css"),
                el("link", rel="icon", href="/static/icon.svg", type="image/svg+xml"),
                el("script", src="/static/app.js", defer=True),
            ),
            el(
                "body",
                el("header", nav, badge, leave),
                el("main", el("h1", page.title), page.body),
                el("footer", f"{where} · {mode} · memory content is shown as text, never run"),
            ),
            lang="en",
        ),
    )


# --- pieces ---------------------------------------------------------------------------------------


def when(ms: int | None) -> Markup:
    """A unix-millisecond time as ISO 8601 (UTC), in a ``<time>`` element; a dash for none."""
    if ms is None:
        return el("span", "—", class_="none")
    text = iso_time(ms, "seconds") or str(ms)
    return el("time", text, datetime=text)


def true_dates(entity: Any) -> Markup:
    """When what a memory says became true (its valid_from, else when the version was written) and, once it
    stopped, until when: the dates a reader judges it by (perseus_vault_core.truth, as the agents read it)."""
    start = when(true_from(entity))
    return start if entity.valid_to_ms is None else join(start, " to ", when(entity.valid_to_ms))


def size(n: int) -> str:
    for unit in ("bytes", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n} {unit}" if unit == "bytes" else f"{n:.1f} {unit}"
        n /= 1024  # type: ignore[assignment]
    return str(n)


def preview(text: str | None, chars: int = PREVIEW_CHARS) -> str:
    """One line of ``text``, cut to about ``chars`` characters."""
    line = " ".join((text or "").split())
    return line if len(line) <= chars else line[: chars - 1] + "…"


def memory_link(scope: Scope, entity_id: int, label: Child = None, **query: Any) -> Markup:
    return el(
        "a", label if label is not None else f"#{entity_id}", href=scope.link(f"/memory/{entity_id}", **query)
    )


def address(e: Any) -> str:
    """A memory's address as a person reads it: ``category/key``."""
    return f"{e.category}/{e.key}"


def status_badge(status: str) -> Markup:
    return el("span", status, class_=f"badge status-{status}")


def table(
    head: Iterable[Child],
    rows: Iterable[Iterable[Child]],
    *,
    class_: str | None = None,
    empty: str = "nothing here",
) -> Markup:
    body = [el("tr", [el("td", cell) for cell in row]) for row in rows]
    if not body:
        return el("p", empty, class_="empty")
    return el("table", el("thead", el("tr", [el("th", h) for h in head])), el("tbody", body), class_=class_)


def facts(pairs: Iterable[tuple[str, Child]]) -> Markup:
    """A definition list of (label, value) pairs; a ``None`` value is shown as a dash."""
    return el("dl", [[el("dt", k), el("dd", v if v is not None else "—")] for k, v in pairs], class_="facts")


def text_block(text: str, class_: str = "content") -> Markup:
    """Stored text, whole, as text (white space kept)."""
    return el("pre", text, class_=class_)


def json_block(value: Mapping[str, Any] | list[Any]) -> Markup:
    return el("pre", json.dumps(value, ensure_ascii=False, indent=2, sort_keys=True), class_="json")


def message(text: Child, kind: str = "note") -> Markup:
    return el("p", text, class_=f"message {kind}")


def field(label: str, control: Markup) -> Markup:
    return el("label", el("span", label), control)


def text_input(name: str, value: Any, *, placeholder: str | None = None, size_: int | None = None) -> Markup:
    return el(
        "input",
        type="text",
        name=name,
        value="" if value is None else str(value),
        placeholder=placeholder,
        size=size_,
    )


def choice(name: str, options: Iterable[tuple[str, str]], chosen: str | None) -> Markup:
    return el(
        "select",
        [el("option", label, value=value, selected=value == (chosen or "")) for value, label in options],
        name=name,
        data_submit="change",
    )


def checkbox(name: str, on: bool, label: str) -> Markup:
    return el(
        "label", el("input", type="checkbox", name=name, value="1", checked=on), " ", label, class_="check"
    )


def scope_fields(scope: Scope) -> list[Markup]:
    """The scope inputs of a filter form (none when the server binds the scope)."""
    if scope.bound:
        return []
    return [
        field("agent", text_input("agent_id", scope.agent_id, size_=12)),
        field("workspace", text_input("workspace_hash", scope.workspace_hash, size_=12)),
    ]


def form(*controls: Child, path: str, submit: str = "Show") -> Markup:
    return el(
        "form", controls, el("button", submit, type="submit"), method="get", action=path, class_="filters"
    )
