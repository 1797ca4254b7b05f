"""``/`` (views/overview.py): the store at a glance, counts by scope, type and category and the latest writes."""

from __future__ import annotations

from perseus_vault_core import Vault

from ..conftest import Sample, Server, get


def test_the_overview_counts_by_scope_type_and_category_and_lists_the_latest_writes(
    server: Server, store: tuple[Vault, Sample]
) -> None:
    page = get(server, "/")
    counts = store[0].counts()
    assert (
        f"{counts.total:,}" in page and "By scope (2)" in page and "By type" in page and "By category" in page
    )
    assert 'href="/browse?agent_id=sales&amp;workspace_hash=crm"' in page  # a scope's link opens it
    assert "Latest writes" in page and "Opinions" in page  # the memory files were written last
    assert "keyword index" in page and "sqlite" in page
