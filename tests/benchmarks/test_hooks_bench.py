"""The hooks benchmark (benchmarks/hooks.py): a small run times every case, the helper's answers equal the
CLI's alone, and its section renders them with their ratio to the bare interpreter."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks import hooks
from benchmarks.synthetic import memories
from perseus_vault_core import Vault


@pytest.mark.slow
def test_a_small_run_times_every_case_and_renders_them(tmp_path: Path) -> None:
    db = str(tmp_path / "v.db")
    with Vault(db, embedder=False) as vault:
        vault.import_jsonl(json.dumps(m) for m in memories(200))
    result = hooks.new_processes(db, db, lambda _: None, runs=1)
    assert set(result["cases"]) == {"bare interpreter"} | {
        f"{verb}, {label}, {how}"
        for verb in ("prepare", "recall")
        for label in ("keyword-only", "with the model")
        for how in ("alone", "resident helper")
    }
    assert all(result["same_output"].values()), result["same_output"]
    assert all(c["p50_ms"] > 0 and c["peak_mb"] > 0 for c in result["cases"].values())
    text = "\n".join(
        hooks.render({"imports": hooks.imports(), "sizes": [{"entities": 200, "processes": result}]})
    )
    assert text.startswith(hooks.SECTION)
    for name in result["cases"]:
        assert f"| {name} |" in text
    assert "import perseus_vault_core" in text
