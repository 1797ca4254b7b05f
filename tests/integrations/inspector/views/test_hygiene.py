"""``/hygiene`` (views/hygiene.py): the hygiene report, computed in the background."""

from __future__ import annotations

from ..conftest import Server, get


def test_hygiene_reports_its_reasons(server: Server) -> None:
    page = get(server, "/hygiene?agent_id=ops&min_age_days=0")
    for _ in range(100):  # computed in the background: the page reloads until it is ready
        if "Computing the report" not in page:
            break
        page = get(server, "/hygiene?agent_id=ops&min_age_days=0")
    assert "active memories flagged" in page and "never retrieved" in page
