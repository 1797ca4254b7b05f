"""HTML built so that memory content can only ever be text.

Everything a page shows goes through :func:`el`: a child that is not already :class:`Markup` is escaped
(``html.escape`` with quotes), and so is every attribute value; tag and attribute names come from this
package's code and are checked against a pattern, never taken from data. A URL attribute (``href``,
``action``, ``src``) must be a path of this server (it starts with one ``/``), so no stored text can
become a ``javascript:`` link or point elsewhere. :class:`Markup` is made here only, from escaped text,
so a stored ``<script>`` reaches the browser as ``&lt;script&gt;``.
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterable
from typing import Any
from urllib.parse import urlencode

_NAME = re.compile(r"^[a-z][a-z0-9-]*$")
_ATTRIBUTE = re.compile(r"^[a-zA-Z][a-zA-Z0-9-]*$")  # SVG's are case-sensitive (viewBox, refX)
_URL_ATTRIBUTES = frozenset({"href", "action", "src", "xlink:href"})
_VOID = frozenset({"br", "hr", "input", "link", "meta", "img"})
Child = Any  # text, a number, Markup, None (nothing), or an iterable of those


class Markup(str):
    """Text that is already HTML: made by this module only (escaped text, or elements built from it)."""


def escape(value: Any) -> Markup:
    """``value`` as HTML text: markup stays as it is, anything else is escaped."""
    if isinstance(value, Markup):
        return value
    return Markup(html.escape(str(value), quote=True))


def join(*children: Child) -> Markup:
    """The children, each escaped unless already markup, one after another (``None`` is nothing)."""
    return Markup("".join(_flat(children)))


def _flat(children: Iterable[Child]) -> Iterable[str]:
    for child in children:
        if child is None or child is False:
            continue
        if isinstance(child, (str, int, float)):
            yield escape(child)
        else:
            yield from _flat(child)


def _attribute(name: str, value: Any) -> str:
    name = name.rstrip("_").replace("_", "-")
    if name.startswith("xlink-"):
        name = "xlink:" + name[6:]
    if not _ATTRIBUTE.match(name.replace("xlink:", "")):
        raise ValueError(f"not an attribute name: {name!r}")
    if value is True:
        return f" {name}"
    text = str(value)
    if name in _URL_ATTRIBUTES and not (text.startswith("/") and not text.startswith("//")):
        raise ValueError(f"{name} must be a path on this server, got {text[:40]!r}")
    return f' {name}="{escape(text)}"'


def el(tag: str, *children: Child, **attributes: Any) -> Markup:
    """``<tag attributes>children</tag>``: ``class_`` is ``class``, ``data_x`` is ``data-x``; an
    attribute that is ``None`` or ``False`` is left out, ``True`` is written without a value."""
    if not _NAME.match(tag):
        raise ValueError(f"not a tag name: {tag!r}")
    attrs = "".join(_attribute(k, v) for k, v in attributes.items() if v is not None and v is not False)
    if tag in _VOID:
        return Markup(f"<{tag}{attrs}>")
    return Markup(f"<{tag}{attrs}>{join(*children)}</{tag}>")


def url(path: str, **query: Any) -> str:
    """A path of this server with its query (empty and ``None`` values left out, so shared links stay short)."""
    pairs = [
        (k, "1" if v is True else str(v))
        for k, v in query.items()
        if v is not None and v is not False and v != ""
    ]
    return path + ("?" + urlencode(pairs) if pairs else "")
