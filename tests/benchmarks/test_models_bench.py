"""benchmarks/models.py: the optional model beside the bundled one, rendered as one table of every collection,
one of locomo-dev's categories and one of warm recall's latency (the run itself needs the evaluation data and
e5's embeddings: `python -m benchmarks.run --only models`)."""

from __future__ import annotations

from typing import Any

from benchmarks import conversation, models, quality
from benchmarks.report import replace_section


def _result(label: str, score: float) -> dict[str, Any]:
    cells = {"all": (score, score + 0.1, 71)}
    categories = {name: {"r@10": score, "questions": 10} for name in conversation.CATEGORIES.values()}
    took = {"p50": 10.0 if label == "a" else 15.0, "p95": 20.0, "n": 300.0}
    return {
        "identity": f"{label}@1",
        "quality": [
            {"collection": name, "mode": mode, "ndcg@10": score}
            for name in quality.COLLECTIONS
            for mode in models.MODES
        ],
        "conversation": {
            "paths": {
                path: {mode: {"r@10": score, "categories": categories} for mode in models.MODES}
                for path in ("turns", "langchain")
            }
        },
        "team": {"runs": {"hybrid": cells, "dense": cells}},
        "query_ms": 7.0 if label == "a" else 16.0,
        "latency": {n: {mode: took for mode in models.MODES} for n in models.SIZES},
        "cpu": "1 core, 1 embedding thread",
    }


def test_each_collection_and_mode_is_a_row_with_the_better_model_in_bold() -> None:
    section = models.render({"a": _result("a", 0.7), "b": _result("b", 0.6)})
    assert section[0] == models.SECTION and not any(line.startswith("## ") for line in section[1:])
    table = section[section.index("| collection | measure | mode | a | b |") + 2 :]
    rows = table[: table.index("")]
    assert len(rows) == len(quality.COLLECTIONS) * len(models.MODES) + 2 * len(models.MODES) + 2 * 2
    assert all(
        row.endswith("| **0.7000** | 0.6000 |")
        or row.endswith("| **0.700** | 0.600 |")
        or row.endswith("| **0.800** | 0.700 |")
        for row in rows
    )
    assert "(1 core, 1 embedding thread): a 7.0 ms, b 16.0 ms" in "\n".join(section)
    tied = models.render({"a": _result("a", 0.7), "b": _result("b", 0.7)})
    assert not any("**" in line for line in tied)  # a tie has no winner
    report = replace_section(replace_section("# Benchmarks\n", section), section)
    assert report.count(models.SECTION) == 1


def test_each_path_and_mode_has_a_row_of_categories_with_both_models_in_each_cell() -> None:
    section = models.by_category({"a": _result("a", 0.7), "b": _result("b", 0.6)})
    head = next(line for line in section if line.startswith("| path | mode |"))
    assert all(f"{name} (10)" in head for name in conversation.CATEGORIES.values())
    rows = [line for line in section if line.startswith("| turns |") or line.startswith("| langchain |")]
    assert len(rows) == 2 * len(models.MODES)
    assert all(row.count("**0.700** / 0.600") == len(conversation.CATEGORIES) for row in rows)


def test_latency_is_a_row_per_size_and_mode_with_the_ratio_of_the_models_p50() -> None:
    section = models.recall_latency({"a": _result("a", 0.7), "b": _result("b", 0.6)})
    rows = [line for line in section if line.startswith("| 10,000 |") or line.startswith("| 100,000 |")]
    assert len(rows) == len(models.SIZES) * len(models.MODES)
    assert all(row.endswith("| 10.00 / 20.00 | 15.00 / 20.00 | 1.50x |") for row in rows)
    assert "1 core, 1 embedding thread" in "\n".join(section)
