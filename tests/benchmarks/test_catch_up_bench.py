"""The catch-up benchmark (benchmarks/catch_up.py): another process's writes, then the holder's first recall in
each mode, answered by the index brought up to them; the section renders a row per write count and mode."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from benchmarks import catch_up
from benchmarks.vector_cache import CachingEmbedder


def test_a_small_run_catches_up_in_every_mode(
    tmp_path: Path, real_embedder: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(catch_up, "TRIALS", {1: 2, 20: 1})
    result = catch_up.run(
        300, CachingEmbedder(real_embedder, tmp_path / "vectors.sqlite"), log=lambda _: None
    )
    assert [(r["writes"], r["mode"]) for r in result["rows"]] == [
        (n, mode) for n in (1, 20) for mode in catch_up.MODES
    ]
    for row in result["rows"]:
        assert row["by_index"] == ("2 of 2" if row["writes"] == 1 else "1 of 1"), row
        assert 0 < row["first"]["p50"] <= row["first"]["p95"] and 0 < row["quiet"]["p50"]
    text = "\n".join(catch_up.render([result]))
    assert text.startswith(catch_up.SECTION) and "| 300 | 20 | hybrid |" in text
