"""The web inspector's benchmark (benchmarks/inspector.py) end to end on 400 memories with stand-in vectors:
every page is served by a real ``perseus-vault ui`` process and timed, the section renders with its verdict,
and ``--only inspector`` replaces that section alone."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from benchmarks import inspector

from .test_postgres_bench import StandIn


@pytest.fixture(scope="module")
def result() -> dict[str, Any]:
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(inspector, "REQUESTS", 3)
        return inspector.run([400], StandIn(), log=lambda _: None)


def test_every_page_is_timed_by_the_server(result: dict[str, Any]) -> None:
    (size,) = result["sizes"]
    assert size["entities"] == 400 and size["hygiene_scanned"] > 0 and size["hygiene_report_s"] > 0
    assert set(size["pages"]) == {
        "overview",
        "browse, first page",
        "browse, a page near the end",
        "browse, scope + type + category",
        "browse, archived",
        "browse, text",
        "memory",
        "recall playground, hybrid + knobs",
        "graph, 2 hops",
        "communities",
        "time travel",
        "latest writes",
        "hygiene (report ready)",
        "memory files",
        "a memory file by date",
    }
    for page in size["pages"].values():
        server, wall = page["server"], page["wall"]
        assert 0 < server["p50"] <= server["p95"] <= server["max"] and page["first_ms"] > 0
        assert wall["p50"] >= server["p50"]  # the client waits at least as long as the server works


def test_the_section_renders_with_its_verdict(result: dict[str, Any]) -> None:
    lines = inspector.render(result)
    assert lines[0] == inspector.SECTION
    assert sum(line.startswith("| ") for line in lines) == 1 + 15  # the header and a row per page
    assert any("every page's server time at most 300 ms: met" in line for line in lines)


def test_only_inspector_replaces_its_section_and_keeps_the_rest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from benchmarks import run

    report = tmp_path / "benchmarks.md"
    report.write_text(
        "# Benchmarks\n\n## Speed\n\nfast\n\n## Web inspector\n\nold\n\n## One million memories\n\nbig\n",
        encoding="utf-8",
    )
    monkeypatch.setattr(inspector, "run", lambda sizes, cached, log: {"sizes": sizes})
    monkeypatch.setattr(inspector, "render", lambda r: [inspector.SECTION, "", f"new {r['sizes']}", ""])
    monkeypatch.setenv(
        "PERSEUS_VAULT_DATA", str(tmp_path)
    )  # no collections there: this part does not need them
    monkeypatch.setattr("perseus_vault_core.embeddings.load", lambda: StandIn())
    run.main(["--only", "inspector", "--sizes", "7", "--output", str(report)])
    assert report.read_text(encoding="utf-8") == (
        "# Benchmarks\n\n## Speed\n\nfast\n\n## Web inspector\n\nnew [7]\n\n## One million memories\n\nbig\n"
    )
