"""benchmarks/agent_text.py: what an agent reads of a 5-hit recall and a prepare block, and its section."""

from __future__ import annotations

from benchmarks import agent_text
from benchmarks.report import replace_section


def test_a_recall_costs_at_most_160_characters_a_hit_beyond_its_text_and_prepare_is_dated() -> None:
    result = agent_text.run()
    recall, prepare = result["recall"], result["prepare"]
    assert recall["hits"] == 5 and recall["per_hit_overhead"] <= 160
    assert recall["chars"] < agent_text.BEFORE["recall"]["chars"] / 4
    assert prepare["memories"] and prepare["dated"] == prepare["memories"]
    section = agent_text.render(result)
    assert section[0] == agent_text.SECTION and not any(line.startswith("## ") for line in section[1:])
    report = replace_section(replace_section("# Benchmarks\n", section), section)  # rewritten in place
    assert report.count(agent_text.SECTION) == 1 and report.count("## Memory for this turn") == 1
