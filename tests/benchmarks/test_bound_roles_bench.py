"""The bound-role benchmark (benchmarks/bound_roles.py) end to end on a few hundred memories with stand-in vectors, on
the test server: both vaults write in both phases, the role it binds is gone afterwards, the section renders a verdict
per phase, and ``--only bound-roles`` runs this part alone."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import psycopg
import pytest

from benchmarks import bound_roles, postgres

from .test_postgres_bench import StandIn


@pytest.fixture(scope="module")
def result(pg_server: str) -> dict[str, Any]:
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(postgres.SERVER_VARIABLE, pg_server)
        return bound_roles.run([300], StandIn(), log=lambda _: None, count=20)


def test_both_vaults_write_in_both_phases_and_the_role_is_dropped(
    result: dict[str, Any], pg_server: str
) -> None:
    assert result["server"]["server_version"] and result["server"]["pgvector"]
    (size,) = result["sizes"]
    assert size["entities"] == 300 and size["writes"] == 20
    for phase in bound_roles.PHASES:
        for who in ("owner", "bound"):
            figures = size[phase][who]
            assert figures["n"] == 20 and 0 < figures["p50"] <= figures["p95"]
    with psycopg.connect(pg_server, autocommit=True) as admin:
        assert admin.execute("SELECT count(*) FROM pg_roles WHERE rolname LIKE 'pv_bench_%'").fetchone() == (
            0,
        )


def test_the_section_renders_a_verdict_per_phase(result: dict[str, Any]) -> None:
    lines = bound_roles.render(result)
    assert lines[0] == bound_roles.SECTION
    rows = [line for line in lines if line.startswith("| 300 |")]
    assert len(rows) == 2 and all(line.endswith("x |") for line in rows)
    verdicts = [line for line in lines if line.startswith("| a bound role's `remember` p50")]
    assert len(verdicts) == 2 and all(line.endswith(("| met |", "| **MISSED** |")) for line in verdicts)


def test_run_only_bound_roles_runs_this_part_alone(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from benchmarks import run

    called: list[tuple[Path, list[int]]] = []
    monkeypatch.setattr(bound_roles, "main", lambda output, sizes: called.append((output, sizes)))
    monkeypatch.setenv(
        "PERSEUS_VAULT_DATA", str(tmp_path)
    )  # no collections there: this part does not need them
    run.main(["--only", "bound-roles", "--quick", "--output", str(tmp_path / "b.md")])
    assert called == [(tmp_path / "b.md", [10_000])]
