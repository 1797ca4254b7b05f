"""What a new process pays before its first answer: the modules it loads (a hook starts one before every
agent turn; docs/hooks.md), measured by what ends up in ``sys.modules``, in a fresh interpreter each."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def loaded(code: str) -> set[str]:
    """The top-level packages loaded once ``code`` has run in a new interpreter."""
    probe = code + "\nimport sys, json\nprint(json.dumps(sorted({m.split('.')[0] for m in sys.modules})))"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert done.returncode == 0, done.stderr
    return set(json.loads(done.stdout.strip().splitlines()[-1]))


def test_a_sqlite_vault_loads_no_postgres_driver(tmp_path: Path) -> None:
    code = (f"from perseus_vault_core import Vault\nwith Vault({str(tmp_path / 'v.db')!r}, embedder=False) as v:\n"
            "    v.remember('note', 'a', 'billing ledger')\n    v.recall('billing')")
    found = loaded(code)
    assert "perseus_vault_core" in found
    assert not {"psycopg", "psycopg_pool", "psycopg_binary"} & found
