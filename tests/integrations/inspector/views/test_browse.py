"""``/browse`` (views/browse.py): a listing filtered by scope, attributes and status and paged by cursor, or keyword recall on a text."""

from __future__ import annotations

import re

from perseus_vault_core import Vault

from ..conftest import Sample, Server, get


def test_browse_filters_and_pages_by_cursor(server: Server, store: tuple[Vault, Sample]) -> None:
    vault, sample = store
    page = get(server, "/browse?agent_id=ops&type=decision&limit=25")
    shown = {int(i) for i in re.findall(r'href="/memory/(\d+)\?agent_id=ops"', page)}
    decisions = {e.id for e in vault.scan(agent_id="ops", type="decision", limit=1000).items}
    assert shown == decisions
    first = get(server, "/browse?limit=25")
    next_link = re.search(r'href="(/browse\?[^"]*cursor=[^"]+)" rel="next"', first)
    assert next_link is not None
    second = get(server, next_link.group(1).replace("&amp;", "&"))
    firsts = set(re.findall(r'href="/memory/(\d+)"', first))
    assert firsts and not firsts & set(
        re.findall(r'href="/memory/(\d+)"', second)
    )  # the next page, not the same
    assert "<th>true from</th>" in page and page.count("<time datetime=") >= len(decisions)  # each row dated
    archived = get(server, "/browse?status=archived")
    assert f'/memory/{sample.ids["gone"]}"' in archived and f'/memory/{sample.ids["queue2"]}"' not in archived
    superseded = get(server, "/browse?status=superseded")
    assert f'/memory/{sample.ids["queue"]}"' in superseded


def test_browse_by_text_is_keyword_recall_and_reinforces_nothing(
    server: Server, store: tuple[Vault, Sample]
) -> None:
    vault, sample = store
    before = vault.get_entity(sample.themes["billing"][0]).retrieval_count
    page = get(server, "/browse?q=invoices")
    assert f'/memory/{sample.themes["billing"][0]}"' in page and "keyword recall" in page
    assert vault.get_entity(sample.themes["billing"][0]).retrieval_count == before
