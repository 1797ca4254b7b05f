"""``/recall`` (views/playground.py): a recall with each arm's rank, the fused score and what the knobs moved."""

from __future__ import annotations

import re

from perseus_vault_core import Vault

from ..conftest import Sample, Server, get


def test_the_playground_shows_each_arm_the_fused_score_and_the_knobs_effect(
    server: Server, store: tuple[Vault, Sample]
) -> None:
    vault, sample = store
    page = get(server, "/recall?q=storage+sqlite&mode=hybrid&startup=1&validity=1&agent_id=ops")
    assert "by hybrid" in page and "fts5 #" in page and "dense #" in page
    assert "without knobs" in page and "validity valid" in page and "actionability" in page
    assert re.search(r"<td>[↑↓]\d+</td>", page), "the knobs moved something in this store"
    plain = get(server, "/recall?q=storage+sqlite&mode=fts5")
    assert "dense #" not in plain and "by fts5" in plain
    assert (
        vault.get_entity(sample.themes["storage"][0]).retrieval_count == 0
    )  # the playground reinforces nothing
    as_of = get(server, "/recall?q=invoices&mode=fts5&as_of=2026-01-01T12:00:00Z")
    assert "no memory matches" in as_of  # the billing memories were written the next day
    assert "Type a query" in get(server, "/recall")
