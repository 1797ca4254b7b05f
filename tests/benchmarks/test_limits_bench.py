"""The per-call limits benchmark (benchmarks/limits.py): each filter it times is at its cap, is accepted,
and one step past it is refused; its section renders every case."""

from __future__ import annotations

import pytest

from benchmarks import limits
from perseus_vault_core import InvalidInput
from perseus_vault_core.contract import where


def test_every_filter_sits_at_a_cap_and_is_taken() -> None:
    for w in limits._wheres().values():
        where.parse(w)  # taken: the benchmark times what a caller may send
    stretched = {
        "team": {
            "$in": [
                f"{i:04d}" + "x" * (where.MAX_VALUE_CHARS - 4)
                for i in range(where.MAX_CHARS // where.MAX_VALUE_CHARS + 1)
            ]
        }
    }
    with pytest.raises(InvalidInput):
        where.parse(stretched)


def test_a_small_run_renders_every_case() -> None:
    result = limits.run(n=500, log=lambda _: None)
    text = "\n".join(limits.render(result))
    assert text.startswith(limits.SECTION)
    assert len(result["rows"]) == len(limits._wheres()) + 5
    for row in result["rows"]:
        assert row["case"] in text
