"""benchmarks/models.py: the optional model beside the bundled one, rendered as one table of every collection
(the run itself needs the evaluation data and e5's embeddings: `python -m benchmarks.run --only models`)."""

from __future__ import annotations

from typing import Any

from benchmarks import models, quality
from benchmarks.report import replace_section


def _result(label: str, score: float) -> dict[str, Any]:
    cells = {"all": (score, score + 0.1, 71)}
    return {
        "identity": f"{label}@1",
        "quality": [
            {"collection": name, "mode": mode, "ndcg@10": score}
            for name in quality.COLLECTIONS
            for mode in models.MODES
        ],
        "conversation": {"paths": {"turns": {mode: {"r@10": score} for mode in models.MODES}}},
        "team": {"runs": {"hybrid": cells, "dense": cells}},
        "query_ms": 7.0 if label == "a" else 16.0,
    }


def test_each_collection_and_mode_is_a_row_with_the_better_model_in_bold() -> None:
    section = models.render({"a": _result("a", 0.7), "b": _result("b", 0.6)})
    assert section[0] == models.SECTION and not any(line.startswith("## ") for line in section[1:])
    rows = [line for line in section if line.startswith("| ") and "---" not in line][1:]
    assert len(rows) == len(quality.COLLECTIONS) * len(models.MODES) + len(models.MODES) + 2 * 2
    assert all(
        row.endswith("| **0.7000** | 0.6000 |")
        or row.endswith("| **0.700** | 0.600 |")
        or row.endswith("| **0.800** | 0.700 |")
        for row in rows
    )
    assert "a 7.0 ms, b 16.0 ms" in "\n".join(section)
    tied = models.render({"a": _result("a", 0.7), "b": _result("b", 0.7)})
    assert not any("**" in line for line in tied)  # a tie has no winner
    report = replace_section(replace_section("# Benchmarks\n", section), section)
    assert report.count(models.SECTION) == 1
