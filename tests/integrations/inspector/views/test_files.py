"""``/files`` (views/files.py): the memory files, a file's entries by date and a section of it."""

from __future__ import annotations

import re

from ..conftest import Server, get


def test_memory_files_list_their_entries_by_date(server: Server) -> None:
    listing = get(server, "/files?agent_id=ops")
    assert "Opinions" in listing and "Preferences" in listing
    page = get(server, "/files?agent_id=ops&file=Opinions")
    dates = re.findall(r"<td>(\d{4}-\d{2}(?:-\d{2})?)</td>", page)
    assert dates and dates == sorted(dates, reverse=True) and "2026-01-05" == dates[0]
    section = get(server, "/files?agent_id=ops&file=Opinions&section=Work+pace")
    assert "2018-11-20" in section and "2026-01-05" not in section
