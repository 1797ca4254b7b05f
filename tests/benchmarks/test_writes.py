"""The write-cost benchmark's pieces (benchmarks/speed.py write_cost, benchmarks/run.py render_writes)."""

from __future__ import annotations

import numpy as np
import pytest

from benchmarks.run import render_writes
from benchmarks.speed import GivenVectors, fresh_memories
from benchmarks.synthetic import memories


def _figures(write: float, after: float) -> dict[str, object]:
    return {
        "write": {"p50": write, "p95": write * 2},
        "recall_after": {"p50": after, "p95": after * 2},
        "from_index": True,
    }


def test_the_written_memories_are_new_to_every_benchmark_vault() -> None:
    held = {m["key"] for m in memories(20_000)}
    fresh = fresh_memories()
    assert len({m["key"] for m in fresh}) == len(fresh) == 200
    assert not held & {m["key"] for m in fresh}


def test_given_vectors_refuse_a_text_they_were_not_given() -> None:
    class Model:
        identity, dimension = "m", 2

    given = GivenVectors(Model(), {"a": np.ones(2, dtype=np.float32)})
    assert given.embed(["a"]).shape == (1, 2)
    with pytest.raises(KeyError):
        given.embed(["b"])  # the model is never asked: a write's figure holds the vault's work alone


def test_the_report_sets_every_size_beside_the_smallest() -> None:
    sizes = [
        {"entities": 10_000, "writes": _figures(2.0, 4.0)},
        {"entities": 100_000, "writes": _figures(2.2, 5.0)},
    ]
    big = {"entities": 1_000_000, "reader": {"writes": _figures(3.0, 8.0)}}
    text = "\n".join(render_writes(sizes, big))
    assert "| 1,000,000 | 3.00 / 6.00 ms | 8.00 / 16.00 ms | yes |" in text
    assert (
        "a write's p50 is 1.50x its p50 at 10,000, and the recall right after it 2.00x (100x the memories)"
        in text
    )
    assert render_writes([{"entities": 10_000}], None) == []
