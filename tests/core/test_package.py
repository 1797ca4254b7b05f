"""The core package's face (perseus_vault_core/__init__.py, whose public names load when first used): what a
new process pays before its first answer, the modules it loads (a hook starts one before every
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
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, cwd=ROOT, timeout=120
    )
    assert done.returncode == 0, done.stderr
    return set(json.loads(done.stdout.strip().splitlines()[-1]))


def test_a_sqlite_vault_loads_no_postgres_driver(tmp_path: Path) -> None:
    code = (
        f"from perseus_vault_core import Vault\nwith Vault({str(tmp_path / 'v.db')!r}, embedder=False) as v:\n"
        "    v.remember('note', 'a', 'billing ledger')\n    v.recall('billing')"
    )
    found = loaded(code)
    assert "perseus_vault_core" in found
    assert not {"psycopg", "psycopg_pool", "psycopg_binary"} & found


def test_importing_the_package_loads_none_of_its_modules() -> None:
    found = loaded("import perseus_vault_core\nassert perseus_vault_core.__version__")
    assert not {"pydantic", "numpy", "sqlite_vec", "onnxruntime", "psycopg"} & found


def test_the_cli_loads_only_what_asking_a_resident_helper_needs() -> None:
    # What every CLI process imports before it knows whether a helper will answer (cli.run).
    found = loaded("import perseus_vault_core.cli.main\nimport perseus_vault_core.resident.client")
    assert (
        not {"pydantic", "numpy", "sqlite_vec", "onnxruntime", "psycopg", "argparse", "importlib_metadata"}
        & found
    )
    assert "perseus_vault_core" in found


def test_a_public_name_is_the_same_object_however_it_is_reached() -> None:
    import importlib

    import perseus_vault_core
    import perseus_vault_core.facade.migrate  # noqa: F401 - the module of the public name migrate
    from perseus_vault_core import Vault, migrate
    from perseus_vault_core.facade.vault import Vault as direct

    assert Vault is direct and callable(migrate) and perseus_vault_core.migrate is migrate
    assert migrate is importlib.import_module("perseus_vault_core.facade.migrate").migrate
    assert set(perseus_vault_core.__all__) <= set(dir(perseus_vault_core))
    for name in perseus_vault_core.__all__:
        assert getattr(perseus_vault_core, name) is not None, name
