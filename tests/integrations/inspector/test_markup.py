"""Markup: stored text can only ever become text in a page."""

from __future__ import annotations

import pytest

from perseus_vault_integrations.inspector.markup import Markup, el, escape, join, url


def test_text_and_attributes_are_escaped() -> None:
    page = el("p", '<script>alert("x")</script> & more', title='" onmouseover="alert(1)')
    assert page == (
        '<p title="&quot; onmouseover=&quot;alert(1)">&lt;script&gt;alert(&quot;x&quot;)'
        "&lt;/script&gt; &amp; more</p>"
    )


def test_markup_is_kept_and_nested_children_flatten() -> None:
    inner = el("b", "<i>")
    assert el("p", inner, [" ", ["a", None, 1]], None, False) == "<p><b>&lt;i&gt;</b> a1</p>"
    assert join("<", inner) == "&lt;<b>&lt;i&gt;</b>"
    assert escape(inner) is inner and isinstance(join(), Markup)


def test_attribute_names_come_from_code_and_flags_have_no_value() -> None:
    assert (
        el("input", type="checkbox", checked=True, disabled=False, value=None)
        == '<input type="checkbox" checked>'
    )
    assert el("a", "x", href="/p", class_="c", data_node=3, aria_current="page") == (
        '<a href="/p" class="c" data-node="3" aria-current="page">x</a>'
    )
    assert 'viewBox="0 0 1 1"' in el("svg", viewBox="0 0 1 1")
    with pytest.raises(ValueError):
        el("p", **{"onclick x": "1"})
    with pytest.raises(ValueError):
        el("scr ipt")


@pytest.mark.parametrize(
    "target",
    [
        "javascript:alert(1)",
        "https://evil.example/",
        "//evil.example/x",
        " /p",
        "data:text/html,x",
        "JaVaScRiPt:alert(1)",
    ],
)
def test_a_link_can_only_point_at_this_server(target: str) -> None:
    with pytest.raises(ValueError):
        el("a", "x", href=target)
    with pytest.raises(ValueError):
        el("form", action=target)


def test_urls_carry_their_query_escaped_and_leave_out_empty_values() -> None:
    assert (
        url("/browse", q='a&b "c"', status=None, cursor="", full=True, n=3)
        == "/browse?q=a%26b+%22c%22&full=1&n=3"
    )
    assert url("/") == "/"
